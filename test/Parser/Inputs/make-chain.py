"""Writes a FIR function applying `op` `n` times in one dataflow block:
python make-chain.py OP N DTYPE > chain.fir"""
import sys

op, n, dtype = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(f"func @main(%x: {dtype}[64]) -> {dtype}[64] {{\n  dataflow {{")
previous = "%x"
for i in range(n):
    print(f"    %e{i} = {op}({previous})")
    previous = f"%e{i}"
print(f"    output {previous}\n  }}\n  return {previous}\n}}")
