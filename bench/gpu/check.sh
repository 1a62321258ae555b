#!/usr/bin/env bash
# Runs every sample (and docs/examples/vector_norm.fir, whose -O2 splits a
# reduction over one row that -O1 gives one block) on the GPU and checks it
# against the CPU interpreter (issues 5, 7, 8): for each sample and pipeline (-O0: one kernel per op;
# -O1: TVM's fusion; -O2: cuBLASLt calls and the cost model), compile to the
# lowered form, run it with
#   fusec-run --device=cuda --bench
# which compiles for the GPU's own architecture, runs through the launcher
# engine, compares every output with the interpreter (exit 1 on a
# difference) and times the model with CUDA events (median of N runs after
# warm-up, inputs rotated between runs).
#
# Usage: bench/gpu/check.sh [RUNS]   (on a machine with an NVIDIA GPU)
# Prints a Markdown table; the interpreter dominates the run time of the
# large samples (minutes for the 4096x4096 exp chains at -O1).
source "$(dirname "$0")/setup.sh"
echo "| sample | pipeline | launch statements | result | median ms | min ms |"
echo "| --- | --- | --- | --- | --- | --- |"
status=0
for sample in samples/*.fir docs/examples/vector_norm.fir; do
  name=$(basename "$sample" .fir)
  for level in O0 O1 O2; do
    lowered="$work/$name.$level.fir"
    if ! build/bin/fusec "$sample" -$level -o "$lowered" 2>"$work/err"; then
      echo "| $name | -$level | | compile failed: $(head -1 "$work/err") | | |"
      status=1
      continue
    fi
    kernels=$(grep -c "^  launch " "$lowered")
    if build/bin/fusec-run "$lowered" --random-inputs --device=cuda --bench \
        --bench-runs="$runs" >"$work/out" 2>"$work/err"; then
      median=$(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$work/out")
      min=$(sed -n 's/.*min \([0-9.]*\) ms.*/\1/p' "$work/out")
      echo "| $name | -$level | $kernels | matches | $median | $min |"
    else
      echo "| $name | -$level | $kernels | FAILED: $(tail -1 "$work/err") | | |"
      status=1
    fi
  done
done
exit $status
