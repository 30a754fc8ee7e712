#!/usr/bin/env bash
# Runs clang-tidy (Debian's clang-tidy 14, the checks of the repository's .clang-tidy) over
# arbiter's own C++ translation units: every tracked *.cc under core/, edge/, server/, clients/
# and tests/ that BUILD_DIR/compile_commands.json compiles (so a build without benchmarks skips
# them). Diagnostics in headers are reported for the repository's own headers only: never for
# generated protobuf code (in BUILD_DIR) or system headers. The generated headers must exist, so
# build first. Fails on any finding; one clang-tidy per core in parallel.
# Usage: tests/style/check-tidy.sh BUILD_DIR
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
if [ ! -f "$build/compile_commands.json" ]; then
  echo "check-tidy: no $build/compile_commands.json (configure and build first)" >&2
  exit 2
fi
if ! command -v clang-tidy >/dev/null; then
  echo "check-tidy: clang-tidy is not installed (make deps)" >&2
  exit 2
fi

# The compiled files, then those of them that are arbiter's own.
compiled=$(python3 -c 'import json, sys
for entry in json.load(open(sys.argv[1])):
    print(entry["file"])' "$build/compile_commands.json" | sort -u)
sources=$(cd "$root" && git ls-files -- 'core/*.cc' 'edge/*.cc' 'server/*.cc' 'clients/*.cc' \
  'tests/*.cc' | sed "s|^|$root/|" | sort -u | comm -12 - <(echo "$compiled"))
if [ -z "$sources" ]; then
  echo "check-tidy: $build/compile_commands.json compiles none of arbiter's sources" >&2
  exit 2
fi

# The root as a regular expression (its path may hold dots).
root_regex=$(printf '%s' "$root" | sed 's/[].[\*^$+?(){}|]/\\&/g')
header_filter="^$root_regex/(core|edge|server|clients|tests)/"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
rc=0
# GCC's compile commands: clang does not know every warning flag GCC takes.
echo "$sources" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet \
  --header-filter="$header_filter" --extra-arg=-Wno-unknown-warning-option >"$log" 2>&1 || rc=$?
count=$(echo "$sources" | wc -l)
if [ "$rc" -ne 0 ]; then
  # clang-tidy's own "N warnings generated" lines count system headers' suppressed warnings.
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' "$log" >&2 || true
  if grep -q -E ': (error|warning):' "$log"; then
    echo "check-tidy: findings above, in $count files ($((SECONDS - start)) s)" >&2
  else
    echo "check-tidy: clang-tidy failed without a finding (xargs exit $rc)" >&2
  fi
  exit 1
fi
echo "check-tidy: $count files clean ($((SECONDS - start)) s)"
