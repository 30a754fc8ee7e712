#!/usr/bin/env bash
# Builds the Kubernetes control plane the end-to-end tests start, from the Go module proxy only:
#   kube-apiserver, kube-scheduler,    from k8s.io/kubernetes (KUBERNETES_VERSION, whose k8s.io/*
#   kube-controller-manager, kubectl   staging modules are pinned to STAGING_VERSION by `replace`)
#   etcd                               from go.etcd.io/etcd/server/v3 (ETCD_VERSION)
#   kwok                               from sigs.k8s.io/kwok (KWOK_VERSION)
#   crds/scheduling.run.ai_queues.yaml KAI Scheduler's Queue CRD, from its module (KAI_VERSION)
# into a cache folder keyed by those versions, once; later runs reuse it until a pin changes.
# Prints the folder on standard output. The pins match the client-go of clients/go/go.mod.
#
#   tests/k8s/control-plane/build.sh            # ARBITER_K8S_CACHE: where caches go
set -euo pipefail

KUBERNETES_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.3
KWOK_VERSION=v0.8.0
KAI_VERSION=v0.12.0

cache_root="${ARBITER_K8S_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/arbiter/k8s}"
out="${cache_root}/kubernetes-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_kai-${KAI_VERSION}"
binaries=(kube-apiserver kube-scheduler kube-controller-manager kubectl etcd kwok)
kai_crd=crds/scheduling.run.ai_queues.yaml

complete() {
  for b in "${binaries[@]}"; do [[ -x "${out}/${b}" ]] || return 1; done
  [[ -s "${out}/${kai_crd}" ]]
}
if complete; then
  echo "${out}"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not installed" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${out}"
start=${SECONDS}

# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with ./staging in
# its own repository; outside it, each must be replaced with its published version.
export GOFLAGS=-mod=mod
mod_file="$(cd "${work}" && go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
mapfile -t staging < <(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "${mod_file}")
if ((${#staging[@]} == 0)); then
  echo "build.sh: no staging modules found in ${mod_file}" >&2
  exit 1
fi

build_module() {  # DIR MODULE-PATH REQUIRES... : a throwaway module to build from
  local dir="$1" name="$2"
  shift 2
  mkdir -p "${dir}"
  (cd "${dir}" && go mod init "${name}" >/dev/null 2>&1)
  for requirement in "$@"; do (cd "${dir}" && go mod edit -require="${requirement}"); done
}

echo "build.sh: kube-apiserver, kube-scheduler, kube-controller-manager and kubectl ${KUBERNETES_VERSION} (${#staging[@]} staging modules at ${STAGING_VERSION})" >&2
build_module "${work}/kubernetes" arbiter.dev/k8s-control-plane "k8s.io/kubernetes@${KUBERNETES_VERSION}"
for module in "${staging[@]}"; do
  (cd "${work}/kubernetes" && go mod edit -replace="${module}=${module}@${STAGING_VERSION}")
done
(cd "${work}/kubernetes" && go mod tidy -e >/dev/null 2>&1 || true)
# The version the binaries report (/version), as Kubernetes' own release build stamps it.
minor="${KUBERNETES_VERSION#v1.}"
minor="${minor%%.*}"
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION} -X ${pkg}.gitMajor=1"
  ldflags+=" -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean"
done
(cd "${work}/kubernetes" &&
  go build -trimpath -ldflags "${ldflags}" -o "${out}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver &&
  go build -trimpath -ldflags "${ldflags}" -o "${out}/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler &&
  go build -trimpath -ldflags "${ldflags}" -o "${out}/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager &&
  go build -trimpath -ldflags "${ldflags}" -o "${out}/kubectl" k8s.io/kubernetes/cmd/kubectl)

echo "build.sh: etcd ${ETCD_VERSION}" >&2
build_module "${work}/etcd" arbiter.dev/k8s-etcd "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
(cd "${work}/etcd" && go mod tidy -e >/dev/null 2>&1 || true)
(cd "${work}/etcd" && go build -trimpath -o "${out}/etcd" go.etcd.io/etcd/server/v3)

echo "build.sh: kwok ${KWOK_VERSION}" >&2
build_module "${work}/kwok" arbiter.dev/k8s-kwok "sigs.k8s.io/kwok@${KWOK_VERSION}"
(cd "${work}/kwok" && go mod tidy -e >/dev/null 2>&1 || true)
(cd "${work}/kwok" && go build -trimpath -o "${out}/kwok" sigs.k8s.io/kwok/cmd/kwok)

echo "build.sh: KAI Scheduler's Queue CRD ${KAI_VERSION}" >&2
kai_dir="$(cd "${work}" && go mod download -json "github.com/NVIDIA/KAI-scheduler@${KAI_VERSION}" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
mkdir -p "${out}/crds"
cp "${kai_dir}/deployments/kai-scheduler/${kai_crd/crds\//crds/}" "${out}/${kai_crd}"
chmod 644 "${out}/${kai_crd}"

complete || { echo "build.sh: a binary is missing in ${out}" >&2; exit 1; }
echo "build.sh: built in $((SECONDS - start))s into ${out}" >&2
echo "${out}"
