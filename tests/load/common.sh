# Shared by ghz.sh and soak.sh: pinned tools, the server under test, generated requests.
# Sourced, not run.

GHZ_VERSION="v0.120.0"
GRPCURL_VERSION="v1.9.3"

load_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${load_here}/../.." && pwd)"

# Puts the pinned ghz and grpcurl on PATH, installing them with `go install` into a directory
# per version ($ARBITER_TOOLS_DIR, default ~/.cache/arbiter/tools) when missing: builds made by
# `go install` carry no version of their own to check.
install_tools() {
  local tools="${ARBITER_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/arbiter/tools}"
  local ghz_dir="${tools}/ghz-${GHZ_VERSION}" grpcurl_dir="${tools}/grpcurl-${GRPCURL_VERSION}"
  if [[ ! -x "${ghz_dir}/ghz" ]]; then
    echo "installing ghz ${GHZ_VERSION} into ${ghz_dir}" >&2
    GOBIN="${ghz_dir}" go install "github.com/bojand/ghz/cmd/ghz@${GHZ_VERSION}"
  fi
  if [[ ! -x "${grpcurl_dir}/grpcurl" ]]; then
    echo "installing grpcurl ${GRPCURL_VERSION} into ${grpcurl_dir}" >&2
    GOBIN="${grpcurl_dir}" go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@${GRPCURL_VERSION}"
  fi
  export PATH="${ghz_dir}:${grpcurl_dir}:${PATH}"
  # jq reads ghz's JSON summaries; it is one of the Debian packages the repository installs.
  command -v jq >/dev/null 2>&1 || bash "${repo_root}/.ci/install-deps.sh"
}

# Starts arbiter-server from ${bin_dir} on 127.0.0.1, a free port; sets server_pid and
# server_address. Extra arguments are passed to the server.
start_server() {
  server_log="$(mktemp -t arbiter-load.XXXXXX)"
  "${bin_dir}/arbiter-server" --host 127.0.0.1 --port 0 --metrics-port -1 "$@" \
    >"${server_log}" 2>&1 &
  server_pid=$!
  server_address=""
  for _ in $(seq 1 300); do
    server_address="$(sed -n 's/^listening on //p' "${server_log}" | head -n 1)"
    [[ -n "${server_address}" ]] && break
    if ! kill -0 "${server_pid}" 2>/dev/null; then
      echo "arbiter-server exited:" >&2
      cat "${server_log}" >&2
      return 1
    fi
    sleep 0.1
  done
  [[ -n "${server_address}" ]] || { echo "arbiter-server did not announce its port" >&2; return 1; }
  # grpcurl asks the health service the way an operator would.
  grpcurl -plaintext -import-path "${load_here}" -proto health.proto \
    "${server_address}" grpc.health.v1.Health/Check >/dev/null
}

stop_server() {
  if [[ -n "${server_pid:-}" ]]; then
    kill -TERM "${server_pid}" 2>/dev/null || true
    wait "${server_pid}" 2>/dev/null || true
    server_pid=""
  fi
  rm -f "${server_log:-}"
}

# Resident memory of `pid` in KiB, from /proc/PID/status.
rss_kib() {
  awk '/^VmRSS:/ {print $2}' "/proc/$1/status"
}

# CPU time, in milliseconds, used so far by process `pid` (user + system, from /proc/PID/stat).
process_cpu_ms() {
  awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat"
}

# Sets the variable named $1 to the CPU time, in milliseconds, used so far by this shell's
# finished children (ghz runs as one), from the second line of the `times` builtin
# ("XmY.YYYs XmY.YYYs": user and system). `times` must run in this shell, not in a
# substitution's subshell, hence the variable.
children_cpu_ms() {
  local file
  file="$(mktemp -t arbiter-times.XXXXXX)"
  times >"${file}"
  printf -v "$1" '%s' "$(awk 'NR == 2 {
    total = 0
    for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); total += t[1] * 60 + t[2] }
    print int(total * 1000) }' "${file}")"
  rm -f "${file}"
}

# ghz against ${server_address}: ghz_run NAME CALL [ghz flags...]; the JSON summary goes to
# ${out_dir}/NAME.json. Binary request data comes from --binary-file in the flags. A run is
# stopped (and fails) after ${ghz_max_seconds} seconds.
ghz_run() {
  local name="$1" call="$2"
  shift 2
  local proto_flags=(--proto "${repo_root}/proto/arbiter/v1/arbiter.proto"
                     --import-paths "${repo_root}/proto")
  if [[ "${call}" == grpc.health.v1.* ]]; then
    proto_flags=(--proto "${load_here}/health.proto" --import-paths "${load_here}")
  fi
  local file="${out_dir}/${name}.json"
  timeout "${ghz_max_seconds:-600}" ghz --insecure "${proto_flags[@]}" --call "${call}" \
    --max-send-message-size=1073741824 --max-recv-message-size=1073741824 \
    --format json --output "${file}" "$@" "${server_address}" || return
  # ghz lists every call under "details"; the summary is what is kept.
  jq 'del(.details)' "${file}" >"${file}.tmp" && mv "${file}.tmp" "${file}"
}

# Fields of a ghz JSON summary: rps, count, p50/p99 and average in milliseconds, errors.
ghz_rps() { jq -r '.rps' "$1"; }
ghz_count() { jq -r '.count' "$1"; }
ghz_ms() {  # ghz_ms FILE PERCENTILE  (latencies are in nanoseconds)
  jq -r --argjson p "$2" '.latencyDistribution[] | select(.percentage == $p) | .latency / 1e6' "$1"
}
ghz_average_ms() { jq -r '.average / 1e6' "$1"; }
ghz_errors() {  # calls not answered OK
  jq -r '[.statusCodeDistribution // {} | to_entries[] | select(.key != "OK") | .value] | add // 0' "$1"
}

# Replaces the lines between "<!-- NAME:begin -->" and "<!-- NAME:end -->" in docs/benchmarks.md
# (or $BENCHMARKS_MD) with the file CONTENT: update_benchmarks NAME CONTENT. The markers stay.
update_benchmarks() {
  local name="$1" content="$2" target="${BENCHMARKS_MD:-${repo_root}/docs/benchmarks.md}"
  if ! grep -q "^<!-- ${name}:begin -->$" "${target}" 2>/dev/null; then
    echo "no <!-- ${name}:begin --> marker in ${target}; not updated" >&2
    return 0
  fi
  awk -v begin="<!-- ${name}:begin -->" -v end="<!-- ${name}:end -->" -v content="${content}" '
    $0 == begin { print; while ((getline line < content) > 0) print line; skipping = 1; next }
    $0 == end { skipping = 0 }
    !skipping { print }' "${target}" >"${target}.tmp"
  mv "${target}.tmp" "${target}"
}
