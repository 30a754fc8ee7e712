#!/usr/bin/env bash
# Runs arbiter on a local Kubernetes control plane (deploy/README.md, "Try it on a local control
# plane"): builds the control plane from the module proxy into its cache (once), builds
# arbiter-k8s (or arbiter-extender) and arbiter-local-cluster, then starts etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok nodes, the chart's queues (with the trial's
# 5 s reclaim min-runtime, tests/k8s/local-queues.yaml) and RBAC, arbiter-server and arbiter-k8s.
# Ctrl-C stops everything.
#
#   tests/k8s/local-cluster.sh [--extender] [--nodes N] [--dir DIR] [--check examples/k8s/two-teams.yaml]
#
# --extender: arbiter runs as kube-scheduler's extender instead of arbiter-k8s. The trial's
#   kube-scheduler gets the chart's extender configuration with its profile named "arbiter" (so
#   the same examples work), and arbiter-extender runs as the chart's ServiceAccount with the
#   extender overlay's RBAC.
# Other flags: --node-cpu, --node-memory, --node-gpus, --check-timeout (arbiter-local-cluster).
# --help: this text, at once (nothing is built).
# ARBITER_SERVER_BIN: the arbiter-server to run (default build/bin/arbiter-server; `make build`).
# With --check it applies the manifests, waits until their arbiter pods run, and exits.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

extender=false
for arg in "$@"; do
  case "${arg}" in
    -h | -help | --help)
      usage
      exit 0
      ;;
    --extender | --extender=true) extender=true ;;
    --extender=false) extender=false ;;
  esac
done

server="${ARBITER_SERVER_BIN:-${repo_root}/build/bin/arbiter-server}"
[[ -x "${server}" ]] || { echo "local-cluster.sh: ${server} is missing: run make build" >&2; exit 1; }

ARBITER_K8S_BIN_DIR="${ARBITER_K8S_BIN_DIR:-$(bash "${repo_root}/tests/k8s/control-plane/build.sh")}"
export ARBITER_K8S_BIN_DIR
bin="${repo_root}/build/go-bin"
mkdir -p "${bin}"
scheduler=(--arbiter-k8s "${bin}/arbiter-k8s")
command=arbiter-k8s
if [[ "${extender}" == true ]]; then
  scheduler=(--arbiter-extender "${bin}/arbiter-extender")
  command=arbiter-extender
fi
(cd "${repo_root}/clients/go" &&
  go build -o "${bin}/${command}" "./cmd/${command}" &&
  go build -o "${bin}/arbiter-local-cluster" ./test/cmd/arbiter-local-cluster)
cd "${repo_root}"
exec "${bin}/arbiter-local-cluster" --repo "${repo_root}" --arbiter-server "${server}" \
  "${scheduler[@]}" "$@"
