#!/usr/bin/env bash
# Issue 6's measurement: fusec's tiled matmul (the `matmul` schedule rule:
# cp.async stages, ldmatrix, mma.sync) against cuBLASLt.
#   1. correctness at 1024 x 1024 x 1024 for f16 and bf16 and at 256^3 for
#      f32 (the interpreter runs lowered SIMT tiles some 50 times slower than
#      mma ones: 512^3 f32 takes a minute) — fusec's tiles (-O1) and the
#      cuBLASLt call (-O2, f16) — each checked against the interpreter by
#      `fusec-run --device=cuda`;
#   2. 4096 x 4096 x 4096 f16 (f32 accumulation): cuBLASLt (-O2) run with
#      --unchecked (the interpreter would take minutes), its outputs the
#      reference; fusec's tiles (-O1) checked against them (--expect, the
#      f16 tolerance) and both timed with CUDA events (median of RUNS runs
#      after warm-up, inputs rotated). Prints the ratio tiles / cuBLASLt.
#
# Usage: bench/gpu/matmul.sh [RUNS]   (on a machine with an NVIDIA GPU)
# Prints a Markdown table for docs/performance.md; exits 1 on a mismatch.
source "$(dirname "$0")/setup.sh"
status=0
module() { # name dtype size
  cat >"$work/$1.fir" <<FIR
func @main(%a: $2[$3,$3], %b: $2[$3,$3]) -> $2[$3,$3] {
  dataflow {
    %c = matmul(%a, %b)
    output %c
  }
  return %c
}
FIR
}
median() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$1"; }
run() { # label lowered-file [fusec-run args...]
  local label=$1 file=$2
  shift 2
  if build/bin/fusec-run "$file" --random-inputs --seed=1 --device=cuda --bench \
      --bench-runs="$runs" "$@" >"$work/out" 2>"$work/err"; then
    echo "| $label | $(sed -n 's/^fusec-run: .*: \(results .*\)$/\1/p' "$work/err") | $(median "$work/out") |"
  else
    echo "| $label | FAILED: $(tail -1 "$work/err") | |"
    status=1
  fi
}
echo "| case | check | median ms |"
echo "| --- | --- | --- |"
for case in f16:1024 bf16:1024 f32:256; do
  dtype=${case%:*} size=${case#*:}
  module "mm_$dtype" "$dtype" "$size"
  build/bin/fusec "$work/mm_$dtype.fir" -O1 -o "$work/mm_$dtype.O1.fir"
  run "$size^3 $dtype, fusec tiles (-O1)" "$work/mm_$dtype.O1.fir"
done
build/bin/fusec "$work/mm_f16.fir" -O2 -o "$work/mm_f16.O2.fir"
run "1024^3 f16, cuBLASLt (-O2)" "$work/mm_f16.O2.fir"

module mm4096 f16 4096
build/bin/fusec "$work/mm4096.fir" -O1 -o "$work/mm4096.O1.fir"
build/bin/fusec "$work/mm4096.fir" -O1 -o "$work/mm4096.ptx" --stats 2>"$work/stats"
build/bin/fusec "$work/mm4096.fir" -O2 -o "$work/mm4096.O2.fir"
grep -q 'call @fused_matmul_cublaslt' "$work/mm4096.O2.fir" || { echo "-O2 did not call cuBLASLt"; exit 1; }
run "4096^3 f16, cuBLASLt (-O2)" "$work/mm4096.O2.fir" --unchecked --outputs="$work/cublas"
cublas=$(median "$work/out")
if [ -f "$work/cublas/out0.npy" ]; then
  run "4096^3 f16, fusec tiles (-O1)" "$work/mm4096.O1.fir" --expect="$work/cublas"
else # no reference: still time the tiles
  run "4096^3 f16, fusec tiles (-O1)" "$work/mm4096.O1.fir" --unchecked
fi
tiles=$(median "$work/out")
echo
grep -E 'matmul_kernel\.(tile|pipeline|tensor|async|registers|spill)' "$work/stats" | sed 's/^ */    /'
if [ -n "$cublas" ] && [ -n "$tiles" ]; then
  awk -v t="$tiles" -v c="$cublas" 'BEGIN { printf "\nfusec tiles / cuBLASLt at 4096^3 f16: %.2fx (%.1f vs %.1f TFLOP/s)\n", t / c, 2 * 4096^3 / t / 1e9, 2 * 4096^3 / c / 1e9 }'
fi
exit $status
