#!/usr/bin/env bash
# Load test of arbiter-server with ghz, on loopback:
#   1. grpc.health.v1.Health/Check, the baseline: the same server and client doing no work;
#   2. ComputeFairShares on a small generated snapshot (10 nodes, 5 queues, 50 pods);
#   3. Schedule on the generator's sizes S, M and L (binary protobuf requests), with all four
#      actions and with [ALLOCATE] only.
# Writes one ghz JSON summary per run under docs/load/, the table docs/load/ghz.md, and the same
# table between the ghz markers of docs/benchmarks.md.
# Target: ComputeFairShares small at >= 60% of the baseline's requests per second, with
# p99 <= 10 ms, at 50 concurrent calls. Exits 1 when the target is missed.
#
#   tests/load/ghz.sh [BIN_DIR]     (BIN_DIR holds arbiter-server and arbiter; default build/bin)
#
# Every run is bounded by its count of calls and by MAX_SECONDS (a run still going then is
# stopped and reported as unfinished). Knobs (environment): CONCURRENCY (50), CALLS (20000 per
# fast run), MAX_SECONDS (120), OUT_DIR (docs/load).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bin_dir="$(cd "${1:-${repo_root}/build/bin}" && pwd)"
out_dir="${OUT_DIR:-${repo_root}/docs/load}"
concurrency="${CONCURRENCY:-50}"
calls="${CALLS:-20000}"
ghz_max_seconds="${MAX_SECONDS:-120}"

install_tools
mkdir -p "${out_dir}"
work="$(mktemp -d -t arbiter-ghz.XXXXXX)"
trap 'stop_server; rm -rf "${work}"' EXIT

# The small snapshot is the S preset: 10 nodes, 5 queues, 42 running + 8 pending pods.
"${bin_dir}/arbiter" generate --size S --seed 1 --out "${work}/small.pb"
# Schedule requests at each size twice: with the generator's policy (no actions listed: all
# four), and with actions [ALLOCATE], the cycle of the scheduling-cycle issue. The second is the
# first with a Policy holding `actions: [ACTION_ALLOCATE]` appended: protobuf merges a repeated
# embedded message field, and the generated policy lists no actions.
allocate_only=$'\x12\x03\x2a\x01\x01'  # ScheduleRequest.policy {actions: [1]} (packed)
for size in S M L; do
  "${bin_dir}/arbiter" generate --size "${size}" --seed 1 --out "${work}/schedule-${size}.pb"
  { cat "${work}/schedule-${size}.pb"; printf '%s' "${allocate_only}"; } \
    >"${work}/schedule-${size}-allocate.pb"
done

start_server
echo "arbiter-server on ${server_address} (pid ${server_pid})"

# A short warm-up so that connections, threads and allocator pools exist before measuring.
ghz_run warmup grpc.health.v1.Health/Check -d '{}' -c "${concurrency}" -n 2000
rm -f "${out_dir}/warmup.json"

declare -a rows=()
declare -A client_ms_per_call=() server_ms_per_call=()
measure() {  # measure NAME CALL LABEL CONCURRENCY CALLS [ghz flags...]
  local name="$1" call="$2" label="$3" c="$4" n="$5"
  shift 5
  local file="${out_dir}/${name}.json"
  rm -f "${file}"
  local server_before client_before client_after
  server_before="$(process_cpu_ms "${server_pid}")"
  children_cpu_ms client_before
  if ! ghz_run "${name}" "${call}" -c "${c}" -n "${n}" "$@" || [[ ! -s "${file}" ]]; then
    rows+=("| ${label} | ${c} | ${n} asked | did not finish within ${ghz_max_seconds} s | | | | | | | |")
    rm -f "${file}"
    echo "${rows[-1]}"
    return 0
  fi
  # CPU per call, server and ghz apart: on a machine they share, ghz's own cost bounds the rate.
  local server_ms client_ms count rss
  server_ms=$(($(process_cpu_ms "${server_pid}") - server_before))
  children_cpu_ms client_after
  client_ms=$((client_after - client_before))
  count="$(ghz_count "${file}")"
  rss="$(rss_kib "${server_pid}")"
  client_ms_per_call["${name}"]="$(jq -n "${client_ms} / ${count}")"
  server_ms_per_call["${name}"]="$(jq -n "${server_ms} / ${count}")"
  rows+=("$(printf '| %s | %s | %s | %.1f | %.2f | %.2f | %.2f | %s | %.3f | %.3f | %.0f |' \
    "${label}" "${c}" "${count}" "$(ghz_rps "${file}")" \
    "$(ghz_average_ms "${file}")" "$(ghz_ms "${file}" 50)" "$(ghz_ms "${file}" 99)" \
    "$(ghz_errors "${file}")" "$(jq -n "${server_ms} / ${count}")" \
    "$(jq -n "${client_ms} / ${count}")" "$((rss / 1024))")")
  echo "${rows[-1]}"
}

measure health grpc.health.v1.Health/Check "Health/Check (baseline)" \
  "${concurrency}" "${calls}" -d '{}'
measure compute_fair_shares_small arbiter.v1.Arbiter/ComputeFairShares \
  "ComputeFairShares, 10 nodes / 5 queues / 50 pods" \
  "${concurrency}" "${calls}" --binary-file "${work}/small.pb"
measure schedule_s_allocate arbiter.v1.Arbiter/Schedule "Schedule S [ALLOCATE] (10 nodes, 50 pods)" \
  "${concurrency}" "${calls}" --binary-file "${work}/schedule-S-allocate.pb"
measure schedule_s arbiter.v1.Arbiter/Schedule "Schedule S, all actions" \
  "${concurrency}" "${calls}" --binary-file "${work}/schedule-S.pb"
measure schedule_m_allocate arbiter.v1.Arbiter/Schedule \
  "Schedule M [ALLOCATE] (1,000 nodes, 12,000 pods)" \
  2 20 --binary-file "${work}/schedule-M-allocate.pb" --timeout 100s
measure schedule_m arbiter.v1.Arbiter/Schedule "Schedule M, all actions" \
  1 5 --binary-file "${work}/schedule-M.pb" --timeout 100s
measure schedule_l_allocate arbiter.v1.Arbiter/Schedule \
  "Schedule L [ALLOCATE] (5,000 nodes, 60,000 pods)" \
  1 10 --binary-file "${work}/schedule-L-allocate.pb" --timeout 100s
measure schedule_l arbiter.v1.Arbiter/Schedule "Schedule L, all actions" \
  1 3 --binary-file "${work}/schedule-L.pb" --timeout 100s

health_rps="$(ghz_rps "${out_dir}/health.json")"
small_rps="$(ghz_rps "${out_dir}/compute_fair_shares_small.json")"
small_p99="$(ghz_ms "${out_dir}/compute_fair_shares_small.json" 99)"
small_errors="$(ghz_errors "${out_dir}/compute_fair_shares_small.json")"
ratio="$(jq -n --argjson a "${small_rps}" --argjson b "${health_rps}" '100 * $a / $b')"
verdict="$(jq -n -r --argjson r "${ratio}" --argjson p "${small_p99}" --argjson e "${small_errors}" \
  'if $r >= 60 and $p <= 10 and $e == 0 then "met" else "missed" end')"

{
  echo "# ghz load test"
  echo
  echo "Written by \`tests/load/ghz.sh\` on $(date -u +%Y-%m-%d) against arbiter-server on loopback;"
  echo "ghz ${GHZ_VERSION} runs on the same machine ($(nproc) cores, $(uname -m)) and competes"
  echo "with the server for the cores. One connection per run, binary protobuf requests from"
  echo "\`arbiter generate --seed 1\`. The JSON summaries in \`docs/load/\` hold every figure."
  echo
  echo "| Call | Concurrency | Calls | Requests/s | Average ms | p50 ms | p99 ms | Errors | Server CPU ms/call | ghz CPU ms/call | Server RSS MiB |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  printf 'Target: ComputeFairShares on the small snapshot at >= 60%% of the baseline'"'"'s requests per\n'
  printf 'second with p99 <= 10 ms at %s concurrent calls: **%s** (%.0f%% of the baseline, p99 %.2f ms,\n' \
    "${concurrency}" "${verdict}" "${ratio}" "${small_p99}"
  printf '%s errors).\n' "${small_errors}"
  echo
  # What ghz alone allows: its CPU per call spread over every core, the server costing nothing.
  ceiling="$(jq -n --argjson cores "$(nproc)" --argjson c "${client_ms_per_call[compute_fair_shares_small]}" \
    '1000 * $cores / $c')"
  printf 'ghz itself spends %.3f ms of CPU per ComputeFairShares call and %.3f ms per health check;\n' \
    "${client_ms_per_call[compute_fair_shares_small]}" "${client_ms_per_call[health]}"
  printf 'the server %.3f ms and %.3f ms. On %s cores, ghz alone allows at most %.0f ComputeFairShares\n' \
    "${server_ms_per_call[compute_fair_shares_small]}" "${server_ms_per_call[health]}" "$(nproc)" \
    "${ceiling}"
  printf 'calls per second even from a server that costs nothing: %.0f%% of this run'"'"'s baseline.\n' \
    "$(jq -n --argjson a "${ceiling}" --argjson b "${health_rps}" '100 * $a / $b')"
} >"${out_dir}/ghz.md"

# The same, without its title, in docs/benchmarks.md.
tail -n +3 "${out_dir}/ghz.md" >"${work}/section.md"
update_benchmarks ghz "${work}/section.md"
cat "${out_dir}/ghz.md"
[[ "${verdict}" == "met" ]]
