#!/usr/bin/env bash
# Runs Kueue with arbiter's time-aware AdmissionCheck on a local Kubernetes control plane
# (clients/go/k8s/kueue/README.md, "Try it on a local control plane"): builds the control plane
# and Kueue from the module proxy into their caches (once), builds arbiter-kueue and
# arbiter-local-kueue, then starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kwok GPU nodes, Kueue's controller manager, arbiter-server, the queues of
# examples/kueue/queues.yaml and `arbiter-kueue check`. Ctrl-C stops everything.
#
#   tests/k8s/local-kueue.sh [--k-value K] [--usage-half-life D] [--dir DIR] [--check]
#
# ARBITER_SERVER_BIN: the arbiter-server to run (default build/bin/arbiter-server; `make build`).
# With --check it applies examples/kueue/backlog.yaml with 2 s jobs, waits until four were
# admitted, and exits non-zero unless team-a and team-b took turns.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
server="${ARBITER_SERVER_BIN:-${repo_root}/build/bin/arbiter-server}"
[[ -x "${server}" ]] || { echo "local-kueue.sh: ${server} is missing: run make build" >&2; exit 1; }

ARBITER_K8S_BIN_DIR="${ARBITER_K8S_BIN_DIR:-$(bash "${repo_root}/tests/k8s/control-plane/build.sh")}"
ARBITER_KUEUE_DIR="${ARBITER_KUEUE_DIR:-$(bash "${repo_root}/tests/k8s/kueue/build.sh")}"
export ARBITER_K8S_BIN_DIR ARBITER_KUEUE_DIR
bin="${repo_root}/build/go-bin"
mkdir -p "${bin}"
(cd "${repo_root}/clients/go" &&
  go build -o "${bin}/arbiter-kueue" ./cmd/arbiter-kueue &&
  go build -o "${bin}/arbiter-local-kueue" ./test/cmd/arbiter-local-kueue)
cd "${repo_root}"
exec "${bin}/arbiter-local-kueue" --repo "${repo_root}" --arbiter-server "${server}" \
  --arbiter-kueue "${bin}/arbiter-kueue" "$@"
