#!/usr/bin/env bash
# Seed 003's experiment on a GPU (issue 8): the exp chain of depth 8 and 16
# on x: f16[4096,1] added to b: f16[4096,4096], compiled as
#   OFF     -O0 of the ON sample (one kernel per op),
#   PARTIAL -O1 of the PARTIAL sample (the chain in its own dataflow block),
#   ON      -O1 of the ON sample (TVM: one kernel, the chain inlined per element),
#   default -O2 (the cost model: one kernel, the chain once per row),
# each run by `fusec-run --device=cuda --bench` (CUDA events, median of RUNS
# runs after warm-up, inputs rotated) and checked against the interpreter's
# results of the cheapest form (all forms agree bit for bit on the CPU:
# test/Exec/counters-cost-model.test). The memory floor is the time of a
# [4096,4096] f16 elementwise copy-like kernel, which moves the same bytes.
#
# Usage: bench/gpu/seed.sh [RUNS]   (on a machine with an NVIDIA GPU)
# Prints a Markdown table for docs/performance.md.
source "$(dirname "$0")/setup.sh"
time_of() { # file [extra fusec-run args...] -> median ms, or "failed"
  local file=$1
  shift
  if build/bin/fusec-run "$file" --random-inputs --seed=1 --device=cuda --bench \
      --bench-runs="$runs" "$@" >"$work/out" 2>"$work/err"; then
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$work/out"
  else
    echo "failed: $(tail -1 "$work/err")"
  fi
}
cat >"$work/copy.fir" <<'FIR'
func @main(%b: f16[4096,4096]) -> f16[4096,4096] {
  dataflow {
    %y = multiply(%b, 1.0)
    output %y
  }
  return %y
}
FIR
build/bin/fusec "$work/copy.fir" -O1 -o "$work/copy.lowered.fir"
floor=$(time_of "$work/copy.lowered.fir")
echo "memory floor (a [4096,4096] f16 read + write): $floor ms"
echo
echo "| depth | configuration | median ms | vs OFF | vs floor |"
echo "| --- | --- | --- | --- | --- |"
for depth in 8 16; do
  on=samples/exp_chain_depth${depth}_on.fir
  partial=samples/exp_chain_depth${depth}_partial.fir
  build/bin/fusec "$on" -O2 -o "$work/ref.fir"
  build/bin/fusec-run "$work/ref.fir" --random-inputs --seed=1 --outputs="$work/ref$depth"
  build/bin/fusec "$on" -O0 -o "$work/off.fir"
  build/bin/fusec "$partial" -O1 -o "$work/partial.fir"
  build/bin/fusec "$on" -O1 -o "$work/on.fir"
  build/bin/fusec "$on" -O2 -o "$work/default.fir"
  off=""
  for config in off partial on default; do
    ms=$(time_of "$work/$config.fir" --expect="$work/ref$depth")
    [ "$config" = off ] && off=$ms
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "-" }'; }
    echo "| $depth | $config | $ms | $(ratio "$ms" "$off") | $(ratio "$ms" "$floor") |"
  done
done
