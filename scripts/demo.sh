#!/usr/bin/env bash
# Builds fusec and compiles a sample end to end, printing what it did: the
# pipeline, the IR after each pass (down to the lowered loops), the time each
# pass took; then the CUDA C, and — where a CUDA toolkit is installed — the
# cubin with its host launcher, and the lowered module run on the CPU
# interpreter with its counters.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
sample=${1:-samples/exp_chain_depth8_on.fir}
pipeline=${FUSEC_DEMO_PIPELINE:-legalize,annotate-pattern,fuse-ops,fuse-tir,schedule,lower}
echo "== fusec $sample --passes=$pipeline --print-after-all --time-passes --fusion-report=build/demo-report.json -o build/demo.fir"
build/bin/fusec "$sample" --passes="$pipeline" --dump-pass-pipeline \
  --print-after-all --time-passes --fusion-report=build/demo-report.json -o build/demo.fir
echo "== wrote build/demo.fir ($(wc -l < build/demo.fir) lines); it parses back:"
build/bin/fusec build/demo.fir -o /dev/null && echo "== ok"
echo "== fusec $sample -O1 -o build/demo.cu"
build/bin/fusec "$sample" -O1 -o build/demo.cu
echo "== wrote build/demo.cu: $(grep -c '__global__' build/demo.cu) kernel entry point(s)"
if build/bin/fusec "$sample" -O1 -o build/demo.cubin --launcher=build/demo_launcher.cpp --stats \
    2>build/demo-stats.txt; then
  echo "== fusec $sample -O1 -o build/demo.cubin --launcher=build/demo_launcher.cpp --stats"
  grep -A12 "^cuda-" build/demo-stats.txt || true
  echo "== wrote build/demo.cubin ($(wc -c < build/demo.cubin) bytes), build/demo_launcher.{cpp,h} and a manifest"
else
  echo "== no cubin: $(head -1 build/demo-stats.txt)"
fi
echo "== the -O1 loops on the CPU interpreter (a scaled-down copy of the sample, for speed):"
sed -e 's/4096/256/g' "$sample" > build/demo-small.fir
build/bin/fusec build/demo-small.fir -O1 -o build/demo-small.O1.fir
build/bin/fusec-run build/demo-small.O1.fir --random-inputs --counters=- | head -12
