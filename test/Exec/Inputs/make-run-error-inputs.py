#!/usr/bin/env python3
"""Writes the .npy inputs of fusec-run-errors.test into the directory argv[1]."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, array):
    np.save(os.path.join(out, name), array)


save("f32_2x3.npy", np.zeros((2, 3), np.float32))
save("f32_3.npy", np.ones(3, np.float32))
save("f32_4.npy", np.ones(4, np.float32))
save("f32_2x4.npy", np.ones((2, 4), np.float32))
save("f32_scalar.npy", np.float32(1))
save("f16_3.npy", np.ones(3, np.float16))
save("f64_3.npy", np.ones(3, np.float64))
save("i32_2.npy", np.array([7, -7], np.int32))
save("i32_zero.npy", np.array([1, 0], np.int32))
save("i32_idx.npy", np.array([0, 1], np.int32))
save("i64_idx_ok.npy", np.array([-3, 2], np.int64))
save("i64_idx_high.npy", np.array([0, 3], np.int64))
save("i64_idx_low.npy", np.array([-4, 0], np.int64))
save("f32_fortran.npy", np.asfortranarray(np.zeros((2, 3), np.float32)))
with open(os.path.join(out, "garbage.npy"), "wb") as f:
    f.write(b"this is not an npy file")
with open(os.path.join(out, "f32_3.npy"), "rb") as f:
    data = f.read()
with open(os.path.join(out, "truncated.npy"), "wb") as f:
    f.write(data[:-4])


def save_with_header(name, header):
    """An f32[3] of ones under a hand-written header dict."""
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header +
                np.ones(3, np.float32).tobytes())


# A header naming 'descr' twice (NumPy would take the last): malformed.
save_with_header("duplicate_key.npy",
                 b"{'descr': '<f4', 'descr': '<i4', 'fortran_order': False, 'shape': (3,), }")
# Headers NumPy's reader refuses: no closing brace, `(3)` (an int, not a
# tuple), a key it does not know, a missing key, text after the dict.
save_with_header("no_brace.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), ")
save_with_header("shape_not_tuple.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}")
save_with_header("extra_key.npy",
                 b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}")
save_with_header("missing_key.npy", b"{'descr': '<f4', 'shape': (3,)}")
save_with_header("after_dict.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} 0")
# Double quotes and no trailing comma are a dict all the same.
save_with_header("double_quotes.npy", b'{"descr": "<f4", "fortran_order": False, "shape": (3,)}')
