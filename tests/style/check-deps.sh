#!/usr/bin/env bash
# `make demo` installs what building and running the demo needs, and nothing more
# (.ci/packages.txt, .ci/install-deps.sh):
# - every package of .ci/packages.txt names a file of the repository and the text in it that
#   needs the package (a package of the build set must), and the file still holds that text;
# - every find_package() of the CMake build is what some package of the build set is there for,
#   so the build set misses nothing the build finds;
# - the build set holds none of the test set's kinds: Slurm, munge, MariaDB, clang, gnuplot,
#   Python;
# - `make demo` installs the build set alone, and `make test` and the targets that build or check
#   beyond the plain build (check-format, check-tidy, fuzz-short, test-sanitize, bench) install
#   everything (`make -n`, which runs nothing).
# Prints each problem and fails when there is one.
set -euo pipefail
cd "$(dirname "$0")/../.."

failed=0
fail() {
  echo "check-deps: $*" >&2
  failed=1
}

# 1. Each line's reason holds.
declare -A set_of=()
declare -a build_reasons=()
line_no=0
while IFS= read -r line; do
  line_no=$((line_no + 1))
  [[ -z "${line}" || "${line}" == \#* ]] && continue
  read -r set pkg file text <<<"${line}"
  where=".ci/packages.txt:${line_no}"
  if [[ "${set}" != build && "${set}" != test ]] || [[ -z "${text}" ]]; then
    fail "${where}: want \"SET PACKAGE FILE TEXT\" with SET build or test, got \"${line}\""
    continue
  fi
  if [[ -n "${set_of[${pkg}]:-}" ]]; then
    fail "${where}: ${pkg} is listed twice"
  fi
  set_of["${pkg}"]="${set}"
  if [[ "${file}" == - ]]; then
    [[ "${set}" == build ]] && fail "${where}: ${pkg} is in the build set without a reason"
    continue
  fi
  if ! git ls-files --error-unmatch "${file}" >/dev/null 2>&1; then
    fail "${where}: ${pkg}: ${file} is not a file of the repository"
  elif ! grep -qF -- "${text}" "${file}"; then
    fail "${where}: ${pkg}: ${file} no longer holds \"${text}\"; if nothing needs ${pkg} any" \
      "more, remove it (or move it to the test set)"
  fi
  [[ "${set}" == build ]] && build_reasons+=("${text}")
done <.ci/packages.txt

# 2. The installer's build set is the file's, and holds none of the test set's kinds.
mapfile -t build_set < <(bash .ci/install-deps.sh --list build)
mapfile -t all_set < <(bash .ci/install-deps.sh --list test)
if [[ ${#build_set[@]} -eq 0 ]]; then
  fail "install-deps.sh --list build printed no package"
fi
for pkg in "${build_set[@]}"; do
  [[ "${set_of[${pkg}]:-}" == build ]] || fail "install-deps.sh build installs ${pkg}," \
    "which .ci/packages.txt does not put in the build set"
  case "${pkg}" in
    slurm* | munge* | mariadb* | mysql* | clang* | libclang* | llvm* | gnuplot* | python3* | jq)
      fail "the build set (make demo) holds ${pkg}, which only the tests need" ;;
  esac
done
declare -A installed=()
for pkg in "${all_set[@]}"; do installed["${pkg}"]=1; done
for pkg in "${!set_of[@]}"; do
  [[ -n "${installed[${pkg}]:-}" ]] || fail "install-deps.sh test does not install ${pkg}"
done

# 3. Every package the CMake build finds has its package in the build set.
while IFS= read -r hit; do
  name="$(sed -E 's/.*find_package\(([A-Za-z0-9_+-]+).*/\1/' <<<"${hit}")"
  [[ "${name}" == Threads ]] && continue  # the C library's
  found=0
  for reason in "${build_reasons[@]}"; do
    [[ "${reason}" == "find_package(${name}" ]] && found=1
  done
  [[ ${found} -eq 1 ]] || fail "${hit%%:*}: find_package(${name}) has no package in the build" \
    "set of .ci/packages.txt (one whose reason is \"find_package(${name}\")"
done < <(git ls-files 'CMakeLists.txt' '*/CMakeLists.txt' '*.cmake' |
  xargs grep -nE '^[[:space:]]*find_package\(' || true)

# 4. What each make target installs (make -n prints the commands and runs none).
make_n() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -n "$1" 2>&1; }
installs() { grep -oE 'install-deps\.sh( [a-z-]+)*' <<<"$1" | sort -u | paste -sd ' ' -; }
demo="$(make_n demo)"
if [[ "$(installs "${demo}")" != "install-deps.sh build" ]]; then
  fail "make demo runs \"$(installs "${demo}")\", want \"install-deps.sh build\" alone"
fi
grep -q 'examples/demo.sh' <<<"${demo}" || fail "make demo no longer runs examples/demo.sh"
for target in test check-format check-tidy fuzz-short test-sanitize bench; do
  out="$(make_n "${target}")"
  grep -q 'install-deps\.sh test$' <<<"${out}" ||
    fail "make ${target} does not run \"install-deps.sh test\" (it runs \"$(installs "${out}")\")"
done

if [[ ${failed} -ne 0 ]]; then
  exit 1
fi
echo "check-deps: make demo installs the ${#build_set[@]} packages of the build set, each needed;" \
  "make test installs all ${#all_set[@]}"
