#!/usr/bin/env bash
# Differential test: arbiter's fair shares against KAI Scheduler's and Kueue's own Go code, its
# KAI decisions (Schedule) against KAI's actions, and its Kueue flavor assignment and whole-cycle
# decisions against Kueue's, on random trees and clusters generated from seeds
# (docs/conformance.md).
#
#   tests/differential/run.sh ARBITER_CLI [SEEDS] [FIRST_SEED] [EVICTION_SEEDS]
#
# ARBITER_CLI (the argument, else the environment variable) is the arbiter command-line binary,
# e.g. build/bin/arbiter, run in-process. SEEDS trees of each model and comparison (default 300)
# are compared, from FIRST_SEED (default 1); the KAI decisions are compared once more on
# EVICTION_SEEDS clusters (default half of SEEDS) with the eviction features (quotas,
# priorities, non-preemptible jobs and min-runtimes, so that reclaim and preempt evict). The harness's own tests and go vet run first. Needs Go; KAI
# (github.com/NVIDIA/KAI-scheduler) and Kueue (sigs.k8s.io/kueue) come from the Go module proxy.
# Requests that fail, or agree only under an exclusion rule, are written to
# $ARBITER_DIFFERENTIAL_KEEP (default: a temporary directory, kept when something fails); replay
# one with
#   ARBITER_CLI fairshare FILE      (kai-seed-*.json, kueue-seed-*.json)
#   ARBITER_CLI schedule FILE       (kueue-assign-seed-*.json, kueue-decision-seed-*.json,
#                                    kai-decisions-seed-*.json)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cli="${1:-${ARBITER_CLI:-}}"
seeds="${2:-300}"
first="${3:-1}"
eviction_seeds="${4:-$((seeds / 2))}"

if ! command -v go >/dev/null 2>&1; then
  echo "run.sh: go is not installed" >&2
  exit 1
fi
if [[ -z "${cli}" || ! -x "${cli}" ]]; then
  echo "run.sh: '${cli}' is not an executable arbiter CLI; usage: run.sh ARBITER_CLI [SEEDS] [FIRST_SEED]" >&2
  exit 1
fi
cli="$(cd "$(dirname "${cli}")" && pwd)/$(basename "${cli}")"

# The features of the eviction decision runs (docs/conformance.md, "Decisions: KAI").
kai_eviction_features=gangs,elastic,running,releasing,minruntime,quotas,priorities,nonpreemptible

work="$(mktemp -d "${TMPDIR:-/tmp}/arbiter-differential.XXXXXX")"
keep="${ARBITER_DIFFERENTIAL_KEEP:-${work}/requests}"
start=${SECONDS}
failed=()

echo "== differential: go vet and go test of the shared packages"
(cd "${here}" && go vet ./... && go test -vet=off -count=1 ./...) || failed+=("shared packages: go vet, go test")
# go test's own vet pass would analyse every dependency again with another set of analysers
# (half a minute per module on a cold cache); go vet has just run the full set. The programs
# are throwaway builds: no version-control stamp (which also fails on a checkout owned by
# another user).
for model in kai kueue; do
  echo "== differential/${model}: go vet, go test, go build"
  if ! (cd "${here}/${model}" && go vet ./... && go test -vet=off -count=1 ./... && go build -buildvcs=false -o "${work}/${model}" .); then
    failed+=("${model}: the harness")
    continue
  fi
  echo "== differential/${model}: seeds ${first}..$((first + seeds - 1))"
  "${work}/${model}" -cli "${cli}" -first "${first}" -seeds "${seeds}" -keep "${keep}" ||
    failed+=("${model}: arbiter differs")
  if [[ "${model}" == kai ]] && ((eviction_seeds > 0)); then
    echo "== differential/kai: decisions with the eviction features, seeds ${first}..$((first + eviction_seeds - 1))"
    "${work}/kai" -cli "${cli}" -decisions-only -features "${kai_eviction_features}" -first "${first}" \
      -seeds "${eviction_seeds}" -keep "${keep}" || failed+=("kai: arbiter's eviction decisions differ")
  fi
done
echo "== differential done in $((SECONDS - start))s"

if ((${#failed[@]} > 0)); then
  printf 'run.sh: FAILED: %s\n' "${failed[@]}" >&2
  [[ -d "${keep}" ]] && echo "run.sh: the requests are in ${keep}" >&2
  exit 1
fi
rm -rf "${work}"
if [[ -n "${ARBITER_DIFFERENTIAL_KEEP:-}" && -d "${keep}" ]]; then
  echo "requests that agree only under an exclusion rule are in ${keep}"
fi
