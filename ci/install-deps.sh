#!/usr/bin/env bash
# Installs, with apt, only the build and test dependencies that are missing. Idempotent; prints
# nothing when everything is already present. nvcc is not installed here: CUDA is optional.
set -euo pipefail

# libdlpack-dev: the C kernel ABI (kernels/abi); libbenchmark-dev: kvconform-bench; libeigen3-dev:
# the stacked projection oracle's fp64 mode; libssl-dev: OpenSSL's libcrypto, the golden fixtures'
# sha256s; clang-format: the formatting gate (ci/check-format.sh). Only what a build or test uses
# today. libtorch (the golden generator) is not needed here: ci/install-golden-deps.sh installs it
# for CI's regeneration check.
packages=(cmake ninja-build g++ libgtest-dev librapidcheck-dev nlohmann-json3-dev
          libcli11-dev libdlpack-dev libbenchmark-dev libeigen3-dev libssl-dev clang-format)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
