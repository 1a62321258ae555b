#!/bin/sh
# Installs onnxruntime-node (CPU only) into DIR for test/Import/ort/run-ort.js:
#   test/Import/ort/install.sh DIR      then   ORT_NODE_DIR=DIR node run-ort.js ...
# Never fails: if npm or the package is unavailable it prints
# "ORT is unavailable: ..." and exits 0, so tests can skip ORT checks.
# Override the version with ORT_NODE_VERSION.
DIR=${1:?usage: install.sh DIR}
# require() takes a relative path for a module name: make DIR absolute.
mkdir -p "$DIR" 2>/dev/null && DIR=$(cd "$DIR" && pwd)
VER=${ORT_NODE_VERSION:-1.30.0}
PKG="$DIR/node_modules/onnxruntime-node"

check() {
  node -e "require(process.argv[1]); " "$PKG" >/dev/null 2>&1
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "ORT is unavailable: node/npm not found"; exit 0
fi
if [ -d "$PKG" ] && check && \
   [ "$(node -p "require(process.argv[1]).version" "$PKG/package.json" 2>/dev/null)" = "$VER" ]; then
  echo "ORT onnxruntime-node@$VER already installed in $DIR"; exit 0
fi
mkdir -p "$DIR" || { echo "ORT is unavailable: cannot create $DIR"; exit 0; }
# ONNXRUNTIME_NODE_INSTALL=skip: don't download the GPU (CUDA/TensorRT) libraries;
# the CPU library ships inside the package.
if ! ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$DIR" --no-audit --no-fund \
     "onnxruntime-node@$VER" >"$DIR/npm-install.log" 2>&1; then
  echo "ORT is unavailable: npm install onnxruntime-node@$VER failed (see $DIR/npm-install.log)"
  exit 0
fi
if ! node -e "require(process.argv[1]); " "$PKG" 2>"$DIR/load-error.log"; then
  echo "ORT is unavailable: onnxruntime-node@$VER does not load with node $(node --version) (see $DIR/load-error.log)"
  exit 0
fi
echo "ORT onnxruntime-node@$VER installed in $DIR"
