#!/usr/bin/env bash
# Fuzzes "bytes -> ScheduleRequest -> validate -> decide" (request_fuzzer.cc) for SECONDS
# (default 600), starting from the seed corpus in tests/fuzz/corpus/.
#
#   tests/fuzz/run.sh [SECONDS]
#
# Builds the fuzzer first in $FUZZ_BUILD (default build-fuzz; clang, ARBITER_FUZZ=ON) unless
# ARBITER_FUZZER names one already built (ctest's fuzz_request_bounded does). Inputs that add
# coverage go to $ARBITER_FUZZ_WORK/corpus, so later runs continue from them. A crash, a
# sanitizer report, a leak or an input slower than $FUZZ_TIMEOUT seconds (default 20) fails the
# run and leaves the input in $ARBITER_FUZZ_WORK/artifacts/; replay it with
#   $FUZZ_BUILD/bin/request_fuzzer ARTIFACT
set -euo pipefail

seconds="${1:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"

fuzzer="${ARBITER_FUZZER:-}"
if [[ -z "${fuzzer}" ]]; then
  build="${FUZZ_BUILD:-${root}/build-fuzz}"
  if [[ ! -f "${build}/CMakeCache.txt" ]]; then
    CC=clang CXX=clang++ cmake -S "${root}" -B "${build}" -G Ninja \
      -DARBITER_FUZZ=ON -DARBITER_BENCHMARKS=OFF >/dev/null
  fi
  cmake --build "${build}" -j "${JOBS:-$(nproc)}" --target request_fuzzer
  fuzzer="${build}/bin/request_fuzzer"
  work="${ARBITER_FUZZ_WORK:-${build}/fuzz-work}"
else
  work="${ARBITER_FUZZ_WORK:-$(dirname "${fuzzer}")/fuzz-work}"
fi

mkdir -p "${work}/corpus" "${work}/artifacts"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# -max_len holds the largest seed (a generated Kueue snapshot, about 15 KB); -timeout catches
# hangs; -rss_limit_mb catches runaway memory; -dict offers whole field tokens (request.dict).
"${fuzzer}" \
  -dict="${here}/request.dict" \
  -max_total_time="${seconds}" \
  -max_len="${FUZZ_MAX_LEN:-16384}" \
  -timeout="${FUZZ_TIMEOUT:-20}" \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="${work}/artifacts/" \
  "${work}/corpus" "${here}/corpus"
