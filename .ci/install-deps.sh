#!/usr/bin/env bash
# Installs the Debian packages arbiter needs, when they are missing: the C++ toolchain and
# libraries, clang-format and clang-tidy (make check-style), Python's venv (the Python package's
# tests), Slurm with munge, slurmdbd and MariaDB (the real cluster that arbiter-slurm's end-to-end
# tests start on loopback), yaml-cpp and gnuplot (arbiter simulate). Runs apt-get when it can
# (root, or sudo without a password); otherwise prints the exact command and fails.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev clang-format clang-tidy openssl libssl-dev
  jq
  python3 python3-venv
  libyaml-cpp-dev gnuplot-nox
  slurmctld slurmd slurm-client munge slurmdbd mariadb-server
)

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
