#!/usr/bin/env bash
# Scale benchmark of arbiter-k8s against the stock kube-scheduler, each on a fresh local control
# plane (etcd, kube-apiserver, kube-controller-manager and kwok on loopback) with the same nodes
# and the same pods. Runs, one after the other:
#   1. kube-scheduler with its default client rate (QPS 50, burst 100);
#   2. kube-scheduler with its client rate raised to arbiter-k8s's (SHIM_QPS/SHIM_BURST);
#   3. arbiter-server + arbiter-k8s (SHIM_QPS/SHIM_BURST);
#   4. with GANG=N > 0, arbiter again with the pods in gangs of N (all or nothing).
# Each run measures from the first pod created to the last pod bound (clients/go/test/cmd/arbiter-k8s-bench).
# Prints every run's summary, then the runs side by side and the ratios of pods/s. Writes one
# JSON file per run into OUT_DIR and nothing anywhere else.
#
#   tests/load/k8s-scale.sh [ARBITER_SERVER]        (default build/bin/arbiter-server)
#   NODES=100 PODS=1000 tests/load/k8s-scale.sh     # a quick check, about a minute a run
#
# Knobs (environment): NODES (1000), PODS (10000), GANG (0), SHIM_QPS (200), SHIM_BURST (400),
# OUT_DIR (a new temporary folder), RUNS (all: ks,ks-fair,arbiter[,gang]; e.g. RUNS=arbiter),
# BENCH_ARGS (extra flags for every run, e.g. "--namespaces 8 --timeout 30m").
# Every run is bounded by the driver's --timeout (20 minutes) and stops what it started.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${here}/../.." && pwd)"
server="$(realpath "${1:-${repo_root}/build/bin/arbiter-server}")"
nodes="${NODES:-1000}"
pods="${PODS:-10000}"
gang="${GANG:-0}"
shim_qps="${SHIM_QPS:-200}"
shim_burst="${SHIM_BURST:-400}"
runs="${RUNS:-ks,ks-fair,arbiter,gang}"
read -r -a extra <<<"${BENCH_ARGS:-}"

if [[ ! -x "${server}" ]]; then
  echo "k8s-scale.sh: no arbiter-server at ${server}: build it (make) or pass its path" >&2
  exit 1
fi
command -v go >/dev/null 2>&1 || { echo "k8s-scale.sh: go is not installed" >&2; exit 1; }

bin_dir="$("${repo_root}/tests/k8s/control-plane/build.sh")"
export ARBITER_K8S_BIN_DIR="${bin_dir}"
out_dir="${OUT_DIR:-$(mktemp -d -t arbiter-k8s-scale.XXXXXX)}"
mkdir -p "${out_dir}"
echo "k8s-scale.sh: building arbiter-k8s and arbiter-k8s-bench into ${out_dir}" >&2
(cd "${repo_root}/clients/go" &&
  go build -o "${out_dir}/arbiter-k8s" ./cmd/arbiter-k8s &&
  go build -o "${out_dir}/arbiter-k8s-bench" ./test/cmd/arbiter-k8s-bench)

common=(--nodes "${nodes}" --pods "${pods}" "${extra[@]}")
arbiter=(--scheduler arbiter --arbiter-server "${server}" --arbiter-k8s "${out_dir}/arbiter-k8s"
  --shim-qps "${shim_qps}" --shim-burst "${shim_burst}")
results=()
status=0
bench() {  # NAME ARGS...: one run on a fresh control plane
  local name="$1"
  shift
  echo "k8s-scale.sh: run ${name}" >&2
  if "${out_dir}/arbiter-k8s-bench" "$@" "${common[@]}" --label "${name}" --out "${out_dir}/${name}.json"; then
    results+=("${out_dir}/${name}.json")
  else
    status=1
    [[ -f "${out_dir}/${name}.json" ]] && results+=("${out_dir}/${name}.json")
  fi
}

[[ ",${runs}," == *",ks,"* ]] && bench kube-scheduler --scheduler kube-scheduler
[[ ",${runs}," == *",ks-fair,"* ]] && bench "kube-scheduler-qps${shim_qps}" --scheduler kube-scheduler \
  --kube-scheduler-qps "${shim_qps}" --kube-scheduler-burst "${shim_burst}"
[[ ",${runs}," == *",arbiter,"* ]] && bench arbiter "${arbiter[@]}"
if ((gang > 0)) && [[ ",${runs}," == *",gang,"* ]]; then
  bench "arbiter-gang${gang}" "${arbiter[@]}" --gang-size "${gang}"
fi

if ((${#results[@]} > 0)); then
  echo
  echo "== ${nodes} nodes, ${pods} pods; results in ${out_dir}"
  "${out_dir}/arbiter-k8s-bench" compare "${results[@]}"
fi
exit "${status}"
