#!/usr/bin/env bash
# Installs the Debian packages fusec builds and tests with, if any is missing.
# Safe to run repeatedly; runs `apt-get update` before installing.
set -euo pipefail
packages=(cmake ninja-build g++ python3 python3-numpy llvm-14-dev llvm-14-tools clang-14
          libclang-rt-14-dev nlohmann-json3-dev libspdlog-dev libfmt-dev catch2
          zlib1g-dev libncurses-dev
          # ONNX import: protoc and libprotobuf-lite.a, ONNX 1.12's onnx.proto,
          # ONNX's node tests and python3-onnx to read them.
          libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata python3-onnx)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Node.js and npm run ONNX Runtime, an optional second reference for the
# model tests: a machine without them skips those checks.
# (NodeSource's nodejs bundles npm and conflicts with Debian's npm package:
# each is installed only if still missing.)
for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 && continue
  package=$([ "$tool" = node ] && echo nodejs || echo npm)
  { $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends "$package"; } \
    || echo "install-deps: $package unavailable; the ONNX Runtime checks will be skipped"
done
