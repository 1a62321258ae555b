#!/usr/bin/env bash
# Installs the Debian packages fusec builds and tests with, if any is missing.
# Safe to run repeatedly; runs `apt-get update` before installing.
set -euo pipefail
packages=(cmake ninja-build g++ python3 python3-numpy llvm-14-dev llvm-14-tools clang-14
          libclang-rt-14-dev nlohmann-json3-dev libspdlog-dev libfmt-dev catch2
          zlib1g-dev libncurses-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
