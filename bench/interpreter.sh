#!/usr/bin/env bash
# Interpreter throughput: evaluations per second on the MLP sample (batch 64,
# hidden 768) and on a plain f16 matmul. Wall-clock figures belong here, not
# in tests. Usage: bench/interpreter.sh [build/bin]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin}
run() {
  local name=$1; shift
  local start end seconds evals
  start=$(date +%s.%N)
  "$bin/fusec-run" "$@" --counters=/tmp/fusec-bench-counters.json
  end=$(date +%s.%N)
  seconds=$(echo "$end - $start" | bc -l)
  evals=$(python3 -c "import json;d=json.load(open('/tmp/fusec-bench-counters.json'));print(sum(d['evaluations'].values()))")
  printf '%-28s %8.2f s  %14d evaluations  %8.1f M evaluations/s\n' \
    "$name" "$seconds" "$evals" "$(echo "$evals / $seconds / 1000000" | bc -l)"
}
run "mlp (n=64, hidden 768)" samples/mlp_layernorm_gelu.fir --random-inputs --dims=n=64
run "softmax attention" samples/softmax_attention.fir --random-inputs
run "exp chain depth 16 (ON)" samples/exp_chain_depth16_on.fir --random-inputs
# The lowered form (a launch of tiles, thread by thread): a 256^3 f32
# matmul on SIMT tiles and a 512^3 f16 one on tensor-core tiles (-O1).
lowered=$(mktemp -d)
trap 'rm -rf "$lowered"' EXIT
for case in f32:256 f16:512; do
  dtype=${case%:*} size=${case#*:}
  cat >"$lowered/mm_$dtype.fir" <<FIR
func @main(%a: $dtype[$size,$size], %b: $dtype[$size,$size]) -> $dtype[$size,$size] {
  %c = matmul(%a, %b)
  return %c
}
FIR
  "$bin/fusec" "$lowered/mm_$dtype.fir" -O1 -o "$lowered/mm_$dtype.O1.fir"
  run "lowered matmul $size^3 $dtype" "$lowered/mm_$dtype.O1.fir" --random-inputs
done
