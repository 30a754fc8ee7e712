#!/usr/bin/env bash
# Runs arbiter on a local Kubernetes control plane (deploy/README.md, "Try it on a local control
# plane"): builds the control plane from the module proxy into its cache (once), builds
# arbiter-k8s and arbiter-local-cluster, then starts etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok nodes, the chart's queues and RBAC,
# arbiter-server and arbiter-k8s. Ctrl-C stops everything.
#
#   tests/k8s/local-cluster.sh [--nodes N] [--dir DIR] [--check examples/k8s/two-teams.yaml]
#
# ARBITER_SERVER_BIN: the arbiter-server to run (default build/bin/arbiter-server; `make build`).
# With --check it applies the manifests, waits until their arbiter pods run, and exits.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
server="${ARBITER_SERVER_BIN:-${repo_root}/build/bin/arbiter-server}"
[[ -x "${server}" ]] || { echo "local-cluster.sh: ${server} is missing: run make build" >&2; exit 1; }

ARBITER_K8S_BIN_DIR="${ARBITER_K8S_BIN_DIR:-$(bash "${repo_root}/tests/k8s/control-plane/build.sh")}"
export ARBITER_K8S_BIN_DIR
bin="${repo_root}/build/go-bin"
mkdir -p "${bin}"
(cd "${repo_root}/clients/go" &&
  go build -o "${bin}/arbiter-k8s" ./cmd/arbiter-k8s &&
  go build -o "${bin}/arbiter-local-cluster" ./test/cmd/arbiter-local-cluster)
cd "${repo_root}"
exec "${bin}/arbiter-local-cluster" --repo "${repo_root}" --arbiter-server "${server}" \
  --arbiter-k8s "${bin}/arbiter-k8s" "$@"
