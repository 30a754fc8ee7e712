#!/usr/bin/env bash
# Installs the Debian packages of one set of .ci/packages.txt, when they are missing:
#
#   bash .ci/install-deps.sh build   what `make build` and `make demo` need: the C++ toolchain,
#                                    CMake and the libraries the build finds (yaml-cpp among them)
#   bash .ci/install-deps.sh [test]  all of them: the build set, and what `make test` needs on top
#                                    (clang-format and clang-tidy, clang for the fuzz run, Python's
#                                    venv, Slurm with munge, slurmdbd and MariaDB for arbiter-slurm's
#                                    end-to-end tests, gnuplot, jq, openssl)
#
#   bash .ci/install-deps.sh --list SET   prints the set's packages, one a line, and installs nothing
#
# Runs apt-get when it can (root, or sudo without a password); otherwise prints the exact command
# and fails.
set -euo pipefail

list=false
if [[ "${1:-}" == "--list" ]]; then
  list=true
  shift
fi
set_name="${1:-test}"
case "${set_name}" in
  build) sets=(build) ;;
  test) sets=(build test) ;;
  *)
    echo "usage: install-deps.sh [--list] [build|test]" >&2
    exit 2
    ;;
esac

packages=()
while read -r set pkg _; do
  [[ -z "${set}" || "${set}" == \#* ]] && continue
  for wanted in "${sets[@]}"; do
    [[ "${set}" == "${wanted}" ]] && packages+=("${pkg}")
  done
done <"$(dirname "${BASH_SOURCE[0]}")/packages.txt"
if [[ "${list}" == true ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "cannot install packages as $(id -un); run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
