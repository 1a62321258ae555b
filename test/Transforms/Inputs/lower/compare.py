#!/usr/bin/env python3
"""compare.py REF_DIR OUT_DIR COUNT: the COUNT outputs (out0.npy ...) of a
lowered module equal the reference's: exactly for integer and bool arrays
(and for float arrays with --exact), else within the dtype's tolerance
(numpy.allclose; f16 1e-2, f32 1e-5 relative; bf16 is stored as float32
holding bf16 values, so float32 arrays get --bf16=K,... indices with 2e-2).
Fails on a NaN anywhere, on a missing or extra output, and on a shape or
dtype that differs."""
import os
import sys

import numpy as np

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "") for a in sys.argv[1:]
             if a.startswith("--"))
ref_dir, out_dir, count = args[0], args[1], int(args[2])
exact = "exact" in flags
bf16 = {int(k) for k in flags.get("bf16", "").split(",") if k}

names = sorted(os.listdir(out_dir))
expected = ["out%d.npy" % k for k in range(count)]
if sorted(names) != sorted(expected) or sorted(os.listdir(ref_dir)) != sorted(expected):
    sys.exit("expected %s, found %s and %s" % (expected, sorted(os.listdir(ref_dir)), names))
failures = []
for k in range(count):
    ref = np.load(os.path.join(ref_dir, "out%d.npy" % k))
    out = np.load(os.path.join(out_dir, "out%d.npy" % k))
    where = "out%d (%s%s)" % (k, ref.dtype, list(ref.shape))
    if ref.dtype != out.dtype or ref.shape != out.shape:
        failures.append("%s: got %s%s" % (where, out.dtype, list(out.shape)))
        continue
    if ref.dtype.kind == "f" and (np.isnan(ref).any() or np.isnan(out).any()):
        failures.append("%s: NaN in the %s" % (where, "reference" if np.isnan(ref).any() else "result"))
        continue
    if ref.dtype.kind != "f" or exact:
        ok = np.array_equal(ref, out)
    else:
        rtol = 2e-2 if k in bf16 else 1e-2 if ref.dtype == np.float16 else 1e-5
        atol = 1e-2 if k in bf16 else 1e-3 if ref.dtype == np.float16 else 1e-6
        ok = np.allclose(out.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol)
    if not ok:
        diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        failures.append("%s: max abs difference %g" % (where, diff.max()))
for failure in failures:
    print("MISMATCH " + failure)
print("compared %d outputs, %d mismatches" % (count, len(failures)))
sys.exit(1 if failures else 0)
