#!/usr/bin/env bash
# Rewrites the request fuzzer's seed corpus (tests/fuzz/corpus/) as binary ScheduleRequests:
# the examples, the scenario requests, and small generated KAI and Kueue snapshots (one KAI
# snapshot with GPU sharing). The regression-*.pb seeds, kept by hand, are left as they are.
#
#   tests/fuzz/make_corpus.sh BUILD_DIR     (any configured build; builds the two tools it needs)
set -euo pipefail

build="${1:?usage: make_corpus.sh BUILD_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
corpus="${here}/corpus"

cmake --build "${build}" -j "${JOBS:-$(nproc)}" --target fuzz_corpus_writer arbiter
writer="${build}/bin/fuzz_corpus_writer"
arbiter="${build}/bin/arbiter"

rm -f "${corpus}"/example-*.pb "${corpus}"/scenario-*.pb "${corpus}"/generated-*.pb
mkdir -p "${corpus}"
for json in "${root}"/examples/*.json; do
  # examples/what-if-*.json are pod groups for `arbiter what-if --add`, not requests.
  [[ "$(basename "${json}")" == what-if-* ]] && continue
  "${writer}" "${json}" "${corpus}/example-$(basename "${json}" .json).pb"
done
for json in "${root}"/tests/scenarios/*/*/request.json; do
  scenario="$(basename "$(dirname "${json}")")"
  model="$(basename "$(dirname "$(dirname "${json}")")")"
  "${writer}" "${json}" "${corpus}/scenario-${model}-${scenario}.pb"
done
for seed in 1 2 3; do
  "${arbiter}" generate --size S --seed "${seed}" --out "${corpus}/generated-kai-s-${seed}.pb"
  "${arbiter}" generate --size S --model kueue --seed "${seed}" \
    --out "${corpus}/generated-kueue-s-${seed}.pb"
done
"${arbiter}" generate --nodes 3 --queues 4 --depth 3 --pods 12 --reclaim-groups 1 --seed 4 \
  --out "${corpus}/generated-kai-tiny-reclaim.pb"
"${arbiter}" generate --model kueue --queues 3 --cohorts 1 --pods 8 --seed 5 \
  --out "${corpus}/generated-kueue-tiny.pb"
"${arbiter}" generate --size S --seed 6 --gpu-sharing 60 \
  --out "${corpus}/generated-kai-s-gpu-sharing.pb"
ls -l "${corpus}"
