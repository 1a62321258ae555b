#!/usr/bin/env bash
# Builds fusec and compiles a sample, printing what it did: the pipeline,
# the IR after each pass, and the time each pass took.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
sample=${1:-samples/exp_chain_depth8_on.fir}
pipeline=${FUSEC_DEMO_PIPELINE:-legalize,annotate-pattern,fuse-ops,fuse-tir}
echo "== fusec $sample --passes=$pipeline --print-after-all --time-passes --fusion-report=build/demo-report.json -o build/demo.fir"
build/bin/fusec "$sample" --passes="$pipeline" --dump-pass-pipeline \
  --print-after-all --time-passes --fusion-report=build/demo-report.json -o build/demo.fir
echo "== wrote build/demo.fir ($(wc -l < build/demo.fir) lines); it parses back:"
build/bin/fusec build/demo.fir -o /dev/null && echo "== ok"
