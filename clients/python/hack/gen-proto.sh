#!/usr/bin/env bash
# Generates the Python stubs of the arbiter.v1 API (proto/arbiter/v1) into src/arbiter/v1/.
#
#   clients/python/hack/gen-proto.sh [OUT_ROOT]
#
# OUT_ROOT is the source root to write into (default: clients/python/src); the files land in
# OUT_ROOT/arbiter/v1/, so that the gRPC module imports its messages as arbiter.v1.arbiter_pb2.
# grpcio-tools (protoc and the Python and gRPC generators) and mypy-protobuf (the .pyi files)
# must be installed at the versions pinned in requirements-dev.txt, so every machine generates
# identical code. The Python used is $ARBITER_PYTHON, else the one of the virtual environment
# that hack/test.sh sets up (${ARBITER_PY_VENV:-<repo>/build/python-venv}), else python3.
set -euo pipefail

pkg_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(cd "${pkg_dir}/../.." && pwd)"
out_root="${1:-${pkg_dir}/src}"
venv="${ARBITER_PY_VENV:-${repo_root}/build/python-venv}"

python="${ARBITER_PYTHON:-}"
if [[ -z "${python}" ]]; then
  if [[ -x "${venv}/bin/python" ]]; then python="${venv}/bin/python"; else python=python3; fi
fi

# The installed version of each generator must be the pinned one.
for tool in grpcio-tools mypy-protobuf; do
  pinned="$(sed -n "s/^${tool}==\([^[:space:]]*\).*/\1/p" "${pkg_dir}/requirements-dev.txt")"
  installed="$("${python}" -c "import importlib.metadata as m; print(m.version('${tool}'))" \
    2>/dev/null || true)"
  if [[ -z "${pinned}" || "${installed}" != "${pinned}" ]]; then
    echo "gen-proto.sh: ${python} has ${tool} ${installed:-(not installed)}, requirements-dev.txt" \
      "pins ${pinned:-nothing}; run clients/python/hack/test.sh once (it sets up ${venv})" \
      "or pip install -r clients/python/requirements-dev.txt" >&2
    exit 3
  fi
done
scripts="$("${python}" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"

out_dir="${out_root}/arbiter/v1"
mkdir -p "${out_dir}"
rm -f "${out_dir}"/*_pb2.py "${out_dir}"/*_pb2.pyi "${out_dir}"/*_pb2_grpc.py \
  "${out_dir}"/*_pb2_grpc.pyi
(
  cd "${repo_root}/proto"
  "${python}" -m grpc_tools.protoc \
    --proto_path=. \
    --plugin=protoc-gen-mypy="${scripts}/protoc-gen-mypy" \
    --plugin=protoc-gen-mypy_grpc="${scripts}/protoc-gen-mypy_grpc" \
    --python_out="${out_root}" \
    --grpc_python_out="${out_root}" \
    --mypy_out="${out_root}" \
    --mypy_grpc_out="${out_root}" \
    arbiter/v1/*.proto
)
cat >"${out_dir}/__init__.py" <<'PY'
"""Generated stubs of the arbiter.v1 API (clients/python/hack/gen-proto.sh); do not edit."""
PY
