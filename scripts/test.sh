#!/usr/bin/env bash
# Builds everything and runs the whole test suite through ctest:
#   - build/: the release build (Catch2 unit tests, lit suite);
#   - build-asan/: fusec and the two fuzzers with AddressSanitizer and
#     UBSan, built with clang; ctest runs the lit suite against it too and
#     fuzzes the parser and the pipeline for a bounded time.
# Debug info is line tables only (-g1, clang's -gline-tables-only): enough for
# backtraces and sanitizer reports, and about a quarter less compile time
# (ExecSupport.cpp: 8.7 s with -g, 6.4 s with -g1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# ONNX Runtime for Node (the model tests' second reference); never fails:
# without it those tests are UNSUPPORTED.
test/Import/ort/install.sh build/ort
jobs=$(nproc)
CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" -DFUSEC_SANITIZE=ON -DFUSEC_ENABLE_FUZZER=ON \
  -DFUSEC_BUILD_TESTS=OFF >/dev/null
ninja -C build-asan -j "$jobs" fusec fusec-run fusec-parser-fuzzer fusec-pipeline-fuzzer
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DFUSEC_ASAN_BIN_DIR="$PWD/build-asan/bin" >/dev/null
ninja -C build -j "$jobs"
cd build
# One more than the cores: the unit tests end at once, and the bounded fuzzing
# runs (parser, then pipeline) then run beside the two lit runs instead of
# after them, where they left a core idle.
ctest --output-on-failure -j "$((jobs + 1))"
