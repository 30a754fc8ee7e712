#!/usr/bin/env bash
# Starts arbiter-server on 127.0.0.1 (free ports), asks it for the fair shares and one scheduling
# cycle of the bundled example cluster with the CLI, and stops the server.
#
#   bash examples/demo.sh BIN_DIR      (BIN_DIR holds arbiter-server and arbiter; make demo)
set -euo pipefail

bin_dir="${1:?usage: demo.sh BIN_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
request="${here}/demo.json"

log="$(mktemp -t arbiter-demo.XXXXXX)"
"${bin_dir}/arbiter-server" --host 127.0.0.1 --port 0 --metrics-port 0 >"${log}" 2>&1 &
server_pid=$!
cleanup() {
  kill -TERM "${server_pid}" 2>/dev/null || true
  wait "${server_pid}" 2>/dev/null || true
  rm -f "${log}"
}
trap cleanup EXIT

# The server prints `listening on HOST:PORT` once it serves; wait for that line (or its exit).
address=""
for _ in $(seq 1 200); do
  address="$(sed -n 's/^listening on //p' "${log}" | head -n 1)"
  [[ -n "${address}" ]] && break
  if ! kill -0 "${server_pid}" 2>/dev/null; then
    echo "arbiter-server exited:" >&2
    cat "${log}" >&2
    exit 1
  fi
  sleep 0.05
done
if [[ -z "${address}" ]]; then
  echo "arbiter-server did not start listening; its output:" >&2
  cat "${log}" >&2
  exit 1
fi
echo "arbiter-server $(head -n 2 "${log}" | paste -sd ' ' -)"
echo

echo "\$ arbiter fairshare examples/demo.json --server ${address}"
"${bin_dir}/arbiter" fairshare "${request}" --server "${address}"
echo
echo "\$ arbiter schedule examples/demo.json --server ${address}"
"${bin_dir}/arbiter" schedule "${request}" --server "${address}"
