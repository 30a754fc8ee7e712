#!/usr/bin/env bash
# Fails, listing the files, when a tracked C++ file (*.cc, *.h) differs from what clang-format
# makes of it with the repository's .clang-format (Debian's clang-format 14).
# Fix with: clang-format -i FILE...
# Usage: tests/style/check-format.sh   (from anywhere in the repository)
set -euo pipefail

cd "$(git rev-parse --show-toplevel)"
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is not installed (make deps)" >&2
  exit 2
fi

rc=0
output=$(git ls-files -z -- '*.cc' '*.h' | xargs -0 clang-format --dry-run -Werror 2>&1) || rc=$?
bad=$(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
  <<<"$output" | sort -u)
if [ -n "$bad" ]; then
  echo "check-format: these files differ from clang-format; fix with clang-format -i FILE...:" >&2
  sed 's/^/  /' <<<"$bad" >&2
  exit 1
fi
if [ "$rc" -ne 0 ]; then  # clang-format failed for another reason: show it
  echo "$output" >&2
  exit "$rc"
fi
echo "check-format: $(git ls-files -- '*.cc' '*.h' | wc -l) tracked C++ files are formatted"
