#!/usr/bin/env python3
"""ldmatrix-expected.py DIR: the outputs of test/Exec/ldmatrix.fir (out0.npy
... out3.npy in DIR) against ldmatrix's layout as the PTX ISA describes it
(written here independently of LoweredExec.cpp): lane 8m + r names the start
of row r of matrix m; lane 4g + q receives, per matrix m, elements
(g, 2q), (g, 2q + 1) (with .trans: (2q, g), (2q + 1, g)). The shared tile
holds 0, 1, 2, ..."""
import os
import sys

import numpy as np


def expected(matrices, transpose, row_of_lane):
    out = []
    for lane in range(32):
        g, q = lane // 4, lane % 4
        for m in range(matrices):
            for half in range(2):
                if transpose:
                    out.append(row_of_lane(8 * m + 2 * q + half) + g)
                else:
                    out.append(row_of_lane(8 * m + g) + 2 * q + half)
    return np.array(out, dtype=np.float16)


cases = [
    expected(1, False, lambda lane: (lane % 8) * 8),
    expected(1, True, lambda lane: (lane % 8) * 8),
    expected(4, False, lambda lane: (31 - lane) * 8),
    expected(2, True, lambda lane: (lane % 16) * 8),
]
bad = 0
for k, want in enumerate(cases):
    got = np.load(os.path.join(sys.argv[1], "out%d.npy" % k))
    if got.dtype != want.dtype or not np.array_equal(got, want):
        print("MISMATCH out%d: %s" % (k, got))
        bad += 1
print("ldmatrix: %d outputs, %d mismatches" % (len(cases), bad))
sys.exit(1 if bad else 0)
