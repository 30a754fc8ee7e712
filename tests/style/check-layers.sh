#!/usr/bin/env bash
# Every include points down (core/README.md, edge/README.md):
# - core/ includes nothing outside core/ but Abseil and the standard library;
# - the ground floor (core/*.h, core/*.cc) includes neither model nor core/api/;
# - a model (core/kai/, core/kueue/) includes neither core/api/ nor the other model;
# - edge/ includes nothing from server/ or clients/;
# - the wire code (edge/ but edge/rpc/) includes nothing from the RPC plumbing (edge/rpc/);
# - clients/ includes nothing from server/.
# Prints each offending include and fails when there is one.
set -euo pipefail
cd "$(dirname "$0")/../.."

failed=0
# check DESCRIPTION FILES... -- PATTERN: fails on any include of FILES that matches PATTERN.
check() {
  local description=$1 pattern=$2
  shift 2
  local hits
  hits=$(grep -nE "^#include \"($pattern)" "$@" 2>/dev/null || true)
  if [ -n "$hits" ]; then
    echo "check-layers: $description:" >&2
    echo "$hits" | sed 's/^/  /' >&2
    failed=1
  fi
}

files() { git ls-files "$@" | grep -E '\.(h|cc)$' || true; }

mapfile -t core_all < <(files core)
mapfile -t ground < <(git ls-files 'core/*.h' 'core/*.cc' | grep -v '/.*/' || true)
mapfile -t kai < <(files core/kai)
mapfile -t kueue < <(files core/kueue)
mapfile -t edge < <(files edge)
mapfile -t wire < <(files edge | grep -v '^edge/rpc/' || true)
mapfile -t clients < <(files clients)

check "core/ includes only core/, Abseil and the standard library" \
  'server/|edge/|clients/|tests/|proto/|arbiter/v1|grpc|google/' "${core_all[@]}"
check "the ground floor of core/ includes no model and not core/api/" \
  'core/(api|kai|kueue)/' "${ground[@]}"
check "core/kai/ includes neither core/api/ nor core/kueue/" 'core/(api|kueue)/' "${kai[@]}"
check "core/kueue/ includes neither core/api/ nor core/kai/" 'core/(api|kai)/' "${kueue[@]}"
check "edge/ includes nothing from server/ or clients/" 'server/|clients/' "${edge[@]}"
check "the wire code includes nothing from the RPC plumbing" 'edge/rpc/' "${wire[@]}"
check "clients/ includes nothing from server/" 'server/' "${clients[@]}"

if [ "$failed" -ne 0 ]; then
  exit 1
fi
echo "check-layers: every include points down"
