#!/usr/bin/env bash
# Soak test of arbiter-server: ComputeFairShares on the small generated snapshot (10 nodes,
# 5 queues, 50 pods) at 80% of the maximum rate measured at the start of the same run, for a
# bounded time, sampling the server's resident memory from /proc/PID/status.
# Pass: zero errors, and resident memory after the warm-up grows by at most 10%.
# Writes docs/load/soak.md (also between the soak markers of docs/benchmarks.md),
# docs/load/soak.json (ghz) and docs/load/soak-rss.csv; exits 1 on a
# failure.
#
#   tests/load/soak.sh [BIN_DIR]    (BIN_DIR holds arbiter-server and arbiter; default build/bin)
#
# Knobs (environment): SOAK_SECONDS (240; the whole run stays under 5 minutes), WARMUP_SECONDS
# (60), SAMPLE_SECONDS (5), CONCURRENCY (50), OUT_DIR (docs/load).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bin_dir="$(cd "${1:-${repo_root}/build/bin}" && pwd)"
out_dir="${OUT_DIR:-${repo_root}/docs/load}"
soak_seconds="${SOAK_SECONDS:-240}"
warmup_seconds="${WARMUP_SECONDS:-60}"
sample_seconds="${SAMPLE_SECONDS:-5}"
concurrency="${CONCURRENCY:-50}"
if (( soak_seconds + 30 > 300 || warmup_seconds >= soak_seconds )); then
  echo "SOAK_SECONDS + 30 must stay within 5 minutes, WARMUP_SECONDS below SOAK_SECONDS" >&2
  exit 2
fi

install_tools
mkdir -p "${out_dir}"
work="$(mktemp -d -t arbiter-soak.XXXXXX)"
sampler_pid=""
cleanup() {
  [[ -n "${sampler_pid}" ]] && kill "${sampler_pid}" 2>/dev/null || true
  stop_server
  rm -rf "${work}"
}
trap cleanup EXIT

"${bin_dir}/arbiter" generate --size S --seed 1 --out "${work}/small.pb"
start_server
echo "arbiter-server on ${server_address} (pid ${server_pid})"

# 1. The maximum rate: unthrottled for up to 15 s.
ghz_max_seconds=60
ghz_run soak-max arbiter.v1.Arbiter/ComputeFairShares --binary-file "${work}/small.pb" \
  -c "${concurrency}" -z 15s --duration-stop wait
max_rps="$(ghz_rps "${out_dir}/soak-max.json")"
rate="$(jq -n --argjson m "${max_rps}" '($m * 0.8) | floor')"
echo "maximum rate ${max_rps} requests/s; soaking at ${rate} requests/s for ${soak_seconds} s"

# 2. The soak, with resident memory sampled every few seconds.
rss_csv="${out_dir}/soak-rss.csv"
echo "seconds,rss_kib" >"${rss_csv}"
(
  start=${SECONDS}
  while kill -0 "${server_pid}" 2>/dev/null; do
    echo "$((SECONDS - start)),$(rss_kib "${server_pid}")" >>"${rss_csv}"
    sleep "${sample_seconds}"
  done
) &
sampler_pid=$!
ghz_max_seconds=$((soak_seconds + 30))
ghz_run soak arbiter.v1.Arbiter/ComputeFairShares --binary-file "${work}/small.pb" \
  -c "${concurrency}" --rps "${rate}" -z "${soak_seconds}s" --duration-stop wait
kill "${sampler_pid}" 2>/dev/null || true
wait "${sampler_pid}" 2>/dev/null || true
sampler_pid=""

# 3. The verdict.
soak_json="${out_dir}/soak.json"
count="$(ghz_count "${soak_json}")"
errors="$(ghz_errors "${soak_json}")"
achieved="$(ghz_rps "${soak_json}")"
p99="$(ghz_ms "${soak_json}" 99)"
# Memory after the warm-up: the first sample at or after it, and the largest one.
read -r base_kib peak_kib last_kib < <(awk -F, -v w="${warmup_seconds}" \
  'NR > 1 && $1 >= w { if (base == "") base = $2; if ($2 > peak) peak = $2; last = $2 }
   END { print base, peak, last }' "${rss_csv}")
first_kib="$(awk -F, 'NR == 2 {print $2}' "${rss_csv}")"
growth="$(jq -n --argjson b "${base_kib}" --argjson p "${peak_kib}" '100 * ($p - $b) / $b')"
verdict="$(jq -n -r --argjson e "${errors}" --argjson g "${growth}" --argjson c "${count}" \
  'if $e == 0 and $g <= 10 and $c > 0 then "passed" else "failed" end')"

{
  echo "# Soak test"
  echo
  echo "Written by \`tests/load/soak.sh\` on $(date -u +%Y-%m-%d): ComputeFairShares on the small"
  echo "generated snapshot (10 nodes, 5 queues, 50 pods; \`arbiter generate --size S --seed 1\`) at"
  echo "80% of the maximum rate measured just before, ${concurrency} concurrent calls, ghz ${GHZ_VERSION}"
  echo "on the same machine ($(nproc) cores). Resident memory from /proc/PID/status every"
  echo "${sample_seconds} s (\`soak-rss.csv\`); growth is measured from the first sample after the"
  echo "${warmup_seconds} s warm-up to the largest sample after it."
  echo
  echo "| Figure | Value |"
  echo "|---|---|"
  printf '| Maximum rate (unthrottled, 15 s) | %.0f requests/s |\n' "${max_rps}"
  printf '| Soak rate asked (80%%) | %s requests/s |\n' "${rate}"
  printf '| Soak rate achieved | %.0f requests/s |\n' "${achieved}"
  printf '| Duration | %s s |\n' "${soak_seconds}"
  printf '| Calls | %s |\n' "${count}"
  printf '| Errors | %s |\n' "${errors}"
  printf '| p99 latency | %.2f ms |\n' "${p99}"
  printf '| RSS at start | %.1f MiB |\n' "$(jq -n "${first_kib} / 1024")"
  printf '| RSS after warm-up | %.1f MiB |\n' "$(jq -n "${base_kib} / 1024")"
  printf '| RSS peak after warm-up | %.1f MiB |\n' "$(jq -n "${peak_kib} / 1024")"
  printf '| RSS at the end | %.1f MiB |\n' "$(jq -n "${last_kib} / 1024")"
  printf '| Growth after warm-up | %.2f%% (limit 10%%) |\n' "${growth}"
  echo
  echo "Verdict: **${verdict}** (zero errors and at most 10% growth after warm-up)."
} >"${out_dir}/soak.md"


# The same, without its title, in docs/benchmarks.md.
tail -n +3 "${out_dir}/soak.md" >"${work}/section.md"
update_benchmarks soak "${work}/section.md"
cat "${out_dir}/soak.md"
[[ "${verdict}" == "passed" ]]
