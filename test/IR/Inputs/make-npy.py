#!/usr/bin/env python3
"""Writes the tiny .npy fixtures of test/IR/constant-errors.fir.

Run from this directory: `python3 make-npy.py`. NumPy is not needed: the
files follow the .npy format 1.0 exactly as numpy.save writes it (magic,
version, little-endian header length, a header dict padded with spaces to
a multiple of 64 bytes and ending in a newline, then the C-order data).
"""
import struct


def save(path, descr, shape, data):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1") + data)


# A valid float32 [2,2] file: wrong dtype or shape for some constants.
save("f32-2x2.npy", "<f4", [2, 2], struct.pack("<4f", 1, 2, 3, 4))
# float64, which fusec does not read.
save("f64-2.npy", "<f8", [2], struct.pack("<2d", 1, 2))
# A header that promises 4 float32 values, followed by only 2.
save("f32-4-truncated.npy", "<f4", [4], struct.pack("<2f", 1, 2))
# float32 values for a bf16 constant: 1.1 is not exactly a bf16.
save("f32-2-not-bf16.npy", "<f4", [2], struct.pack("<2f", 1.0, 1.1))
# Not a .npy file at all.
with open("not-npy.npy", "wb") as f:
    f.write(b"this is a text file, not a NumPy array\n")
