#!/usr/bin/env bash
# Vets and tests every Go module of the repository, with the race detector.
#
#   clients/go/hack/test.sh [ARBITER_SERVER_BIN]
#
# ARBITER_SERVER_BIN (the argument, else the environment variable) is the arbiter-server binary
# the cross-language end-to-end test starts on loopback, e.g. build/bin/arbiter-server; without
# it that test is skipped (and says so). Needs only Go: modules come from the module proxy.
#
# The Kubernetes end-to-end tests run against a real control plane (kube-apiserver, etcd,
# kube-controller-manager, kube-scheduler, kwok) that tests/k8s/control-plane/build.sh builds
# from the module proxy into a cache folder (once; minutes cold) and that ARBITER_K8S_BIN_DIR
# points at. The tests of the Kueue adapter also run Kueue's own controller manager on it, which
# tests/k8s/kueue/build.sh builds the same way (once; about 6 minutes cold on two cores) into a
# folder of its own that ARBITER_KUEUE_DIR points at. With ARBITER_REQUIRE_K8S=1 (as `make test` sets it) a missing control plane or Kueue
# fails those tests instead of skipping them.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
modules=(clients/go deploy)

if ! command -v go >/dev/null 2>&1; then
  echo "test.sh: go is not installed" >&2
  exit 1
fi

server_bin="${1:-${ARBITER_SERVER_BIN:-}}"
if [[ -n "${server_bin}" ]]; then
  if [[ ! -x "${server_bin}" ]]; then
    echo "test.sh: ${server_bin} is not an executable arbiter-server" >&2
    exit 1
  fi
  ARBITER_SERVER_BIN="$(cd "$(dirname "${server_bin}")" && pwd)/$(basename "${server_bin}")"
  export ARBITER_SERVER_BIN
else
  unset ARBITER_SERVER_BIN
  echo "test.sh: no arbiter-server given: the end-to-end test will be skipped"
fi

if [[ -z "${ARBITER_K8S_BIN_DIR:-}" ]]; then
  if ARBITER_K8S_BIN_DIR="$(bash "${repo_root}/tests/k8s/control-plane/build.sh")"; then
    export ARBITER_K8S_BIN_DIR
  elif [[ -n "${ARBITER_REQUIRE_K8S:-}" ]]; then
    echo "test.sh: building the Kubernetes control plane failed" >&2
    exit 1
  else
    unset ARBITER_K8S_BIN_DIR
    echo "test.sh: no Kubernetes control plane: its end-to-end tests will be skipped"
  fi
fi

if [[ -z "${ARBITER_KUEUE_DIR:-}" ]]; then
  if ARBITER_KUEUE_DIR="$(bash "${repo_root}/tests/k8s/kueue/build.sh")"; then
    export ARBITER_KUEUE_DIR
  elif [[ -n "${ARBITER_REQUIRE_K8S:-}" ]]; then
    echo "test.sh: building Kueue failed" >&2
    exit 1
  else
    unset ARBITER_KUEUE_DIR
    echo "test.sh: no Kueue: its end-to-end tests will be skipped"
  fi
fi

start=${SECONDS}
failed=()

# The layout's arrows (README.md): no production package imports test/ (test infrastructure),
# and the Kueue translation imports neither its controller nor its reports.
echo "== clients/go: package layering"
layering="$(cd "${repo_root}/clients/go" &&
  go list -f '{{.ImportPath}}: {{join .Imports " "}}' ./client/... ./cmd/... ./internal/... ./k8s/... |
  awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^arbiter\.dev\/clients\/go\/test\//) print $1, "imports", $i }'
  go list -f '{{join .Imports "\n"}}' ./k8s/kueue | grep -E '^arbiter\.dev/clients/go/k8s/kueue/' |
  sed 's|^|arbiter.dev/clients/go/k8s/kueue: imports |')" || true
if [[ -n "${layering}" ]]; then
  echo "${layering}" >&2
  failed+=("clients/go: layering")
fi
for module in "${modules[@]}"; do
  echo "== ${module}: go vet"
  # -race makes vet compile the packages exactly as the race-enabled test build below does, so
  # that every dependency is compiled once, not twice.
  (cd "${repo_root}/${module}" && go vet -race ./...) || failed+=("${module}: go vet")
  echo "== ${module}: go test -race"
  (cd "${repo_root}/${module}" && go test -race -count=1 -timeout 30m ./...) || failed+=("${module}: go test")
done
echo "== Go modules done in $((SECONDS - start))s"
if ((${#failed[@]} > 0)); then
  printf 'test.sh: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
