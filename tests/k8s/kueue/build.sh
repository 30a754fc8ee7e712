#!/usr/bin/env bash
# Builds the Kueue the end-to-end tests of the Kueue adapter run against, from the Go module proxy
# only:
#   kueue        Kueue's controller manager, sigs.k8s.io/kueue/cmd/kueue (KUEUE_VERSION)
#   crds/*.yaml  Kueue's CRDs as its module ships them (config/components/crd/bases)
# into a cache folder of its own keyed by the version, once; later runs reuse it until the pin
# changes. Prints the folder on standard output. The pin matches sigs.k8s.io/kueue in
# clients/go/go.mod; the control plane it runs on comes from tests/k8s/control-plane/build.sh.
#
#   tests/k8s/kueue/build.sh            # ARBITER_K8S_CACHE: where caches go
set -euo pipefail

KUEUE_VERSION=v0.17.0

cache_root="${ARBITER_K8S_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/arbiter/k8s}"
out="${cache_root}/kueue-${KUEUE_VERSION}"

# The binary is written last, under a temporary name first: once it is there, all is.
complete() {
  [[ -x "${out}/kueue" && -s "${out}/crds/kueue.x-k8s.io_workloads.yaml" ]]
}
if complete; then
  echo "${out}"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not installed" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${out}/crds"
start=${SECONDS}
export GOFLAGS=-mod=mod

# A tool directive pins the module and keeps its requirements: a bare `go mod edit -require`
# would be dropped by `go mod tidy` (the throwaway module imports nothing), and the build would
# then resolve the newest Kueue instead of the pin.
if ! log="$(cd "${work}" && go mod init arbiter.dev/k8s-kueue 2>&1 &&
  go get -tool "sigs.k8s.io/kueue/cmd/kueue@${KUEUE_VERSION}" 2>&1)"; then
  echo "${log}" >&2
  echo "build.sh: resolving sigs.k8s.io/kueue@${KUEUE_VERSION} failed" >&2
  exit 1
fi

echo "build.sh: Kueue's CRDs ${KUEUE_VERSION}" >&2
kueue_dir="$(cd "${work}" && go mod download -json "sigs.k8s.io/kueue@${KUEUE_VERSION}" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
rm -f "${out}"/crds/*.yaml
cp "${kueue_dir}"/config/components/crd/bases/*.yaml "${out}/crds/"
chmod 644 "${out}"/crds/*.yaml

echo "build.sh: Kueue ${KUEUE_VERSION} (sigs.k8s.io/kueue/cmd/kueue)" >&2
# Without -trimpath, the packages compiled here are those tests/differential/kueue compiles
# (same module versions, same flags), so whichever runs second takes them from Go's build cache.
(cd "${work}" &&
  go build -ldflags "-X sigs.k8s.io/kueue/pkg/version.GitVersion=${KUEUE_VERSION}" \
    -o "${out}/kueue.tmp" sigs.k8s.io/kueue/cmd/kueue)
mv "${out}/kueue.tmp" "${out}/kueue"

echo "build.sh: built in $((SECONDS - start))s into ${out}" >&2
echo "${out}"
