#!/usr/bin/env bash
# Type-checks and tests the Python package `arbiter` (clients/python).
#
#   clients/python/hack/test.sh [ARBITER_SERVER_BIN]
#
# Creates, or reuses, a virtual environment at ${ARBITER_PY_VENV:-<repo>/build/python-venv} with
# the machine's `python3 -m venv`, installs requirements-dev.txt and the package itself
# (`pip install ./clients/python`, not editable: the tests run against the installed copy), then
# runs `mypy --strict` over src/arbiter and tests, and pytest over tests. ARBITER_SERVER_BIN (the
# argument, or the variable) is the arbiter-server binary the tests start; without it the tests
# that need a server are skipped.
#
# pip runs only when what it would install changed: the hash of requirements-dev.txt and
# pyproject.toml (all requirements), or of the package's sources (the package alone), is kept in
# a stamp file inside the environment.
set -euo pipefail

pkg_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(cd "${pkg_dir}/../.." && pwd)"
venv="${ARBITER_PY_VENV:-${repo_root}/build/python-venv}"

server_bin="${1:-${ARBITER_SERVER_BIN:-}}"
if [[ -n "${server_bin}" ]]; then
  if [[ ! -x "${server_bin}" ]]; then
    echo "test.sh: ${server_bin} is not an executable arbiter-server" >&2
    exit 2
  fi
  server_bin="$(cd "$(dirname "${server_bin}")" && pwd)/$(basename "${server_bin}")"
  export ARBITER_SERVER_BIN="${server_bin}"
else
  unset ARBITER_SERVER_BIN
  echo "test.sh: no ARBITER_SERVER_BIN given; the tests that need arbiter-server are skipped" >&2
fi

if ! command -v python3 >/dev/null 2>&1; then
  echo "test.sh: python3 not found (apt-get install python3 python3-venv)" >&2
  exit 3
fi
if ! python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "test.sh: $(python3 --version 2>&1) is too old; the package needs Python >= 3.11" >&2
  exit 3
fi

if [[ ! -x "${venv}/bin/python" ]]; then
  rm -rf "${venv}"
  if ! python3 -m venv "${venv}"; then
    rm -rf "${venv}"
    echo "test.sh: 'python3 -m venv ${venv}' failed; the venv module and ensurepip are needed" \
      "(apt-get install python3-venv)" >&2
    exit 3
  fi
fi
python="${venv}/bin/python"
pip=("${python}" -m pip --quiet --disable-pip-version-check --no-input)

hash_files() { LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -d' ' -f1; }

requirements_hash="$( { "${python}" --version; printf '%s\n' "${pkg_dir}/requirements-dev.txt" \
  "${pkg_dir}/pyproject.toml" | hash_files; } | sha256sum | cut -d' ' -f1)"
package_hash="$(cd "${pkg_dir}" && { printf '%s\n' pyproject.toml README.md; find src -type f \
  -not -path '*/__pycache__/*' -not -path '*.egg-info/*'; } | hash_files)"
requirements_stamp="${venv}/.arbiter-requirements.sha256"
package_stamp="${venv}/.arbiter-package.sha256"

if [[ "$(cat "${requirements_stamp}" 2>/dev/null)" != "${requirements_hash}" ]]; then
  echo "test.sh: installing requirements-dev.txt and ./clients/python into ${venv}" >&2
  rm -f "${requirements_stamp}" "${package_stamp}"
  "${pip[@]}" install -r "${pkg_dir}/requirements-dev.txt" "${pkg_dir}"
  echo "${requirements_hash}" >"${requirements_stamp}"
  echo "${package_hash}" >"${package_stamp}"
elif [[ "$(cat "${package_stamp}" 2>/dev/null)" != "${package_hash}" ]]; then
  echo "test.sh: reinstalling ./clients/python into ${venv}" >&2
  rm -f "${package_stamp}"
  "${pip[@]}" install --no-deps --force-reinstall "${pkg_dir}"
  echo "${package_hash}" >"${package_stamp}"
fi

cd "${pkg_dir}"
echo "test.sh: mypy --strict src/arbiter tests" >&2
"${python}" -m mypy --strict --cache-dir "${venv}/.mypy_cache" src/arbiter tests
echo "test.sh: pytest tests" >&2
"${python}" -m pytest -o cache_dir="${venv}/.pytest_cache" tests
