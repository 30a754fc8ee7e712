#!/usr/bin/env bash
# Generates the Go stubs of the arbiter.v1 API (proto/arbiter/v1) into arbiterv1/.
#
#   hack/gen-proto.sh [OUT_ROOT]
#
# OUT_ROOT is the module root to write into (default: this module, clients/go); the files land
# in OUT_ROOT/arbiterv1/. The protoc plugins are installed with `go install` at the versions
# pinned below, into a cache directory, so every machine generates identical code. protoc itself
# comes from the system (Debian's protobuf-compiler).
set -euo pipefail

# Pinned plugin versions. protoc-gen-go matches the google.golang.org/protobuf runtime in go.mod.
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

module_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(cd "${module_dir}/../.." && pwd)"
out_root="${1:-${module_dir}}"

if ! command -v protoc >/dev/null 2>&1; then
  echo "gen-proto.sh: protoc not found (apt-get install protobuf-compiler)" >&2
  exit 3
fi

cache="${ARBITER_TOOLS_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/arbiter/go-tools}"
bin="${cache}/protoc-gen-go-${PROTOC_GEN_GO_VERSION}_grpc-${PROTOC_GEN_GO_GRPC_VERSION}"
if [[ ! -x "${bin}/protoc-gen-go" || ! -x "${bin}/protoc-gen-go-grpc" ]]; then
  mkdir -p "${bin}"
  GOBIN="${bin}" GOFLAGS=-mod=mod go install \
    "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
  GOBIN="${bin}" GOFLAGS=-mod=mod go install \
    "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"
fi

mkdir -p "${out_root}"
protoc \
  --plugin=protoc-gen-go="${bin}/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="${bin}/protoc-gen-go-grpc" \
  --proto_path="${repo_root}/proto" \
  --go_out="${out_root}" --go_opt=module=arbiter.dev/clients/go \
  --go-grpc_out="${out_root}" --go-grpc_opt=module=arbiter.dev/clients/go \
  "${repo_root}/proto/arbiter/v1/"*.proto
