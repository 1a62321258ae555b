#!/usr/bin/env python3
"""compare.py OUT_DIR ref.npy: outK.npy against ref[K], |out - ref| <=
1e-5 + 1e-4 |ref|; prints one line per output and exits 1 on a mismatch."""
import itertools
import sys

import numpy as np

refs = np.load(sys.argv[2])
names = ["%s_%s_%d" % c for c in itertools.product(
    ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [0, 1])]
failed = 0
for k, name in enumerate(names):
    out = np.load("%s/out%d.npy" % (sys.argv[1], k))
    error = np.abs(out - refs[k]) - (1e-5 + 1e-4 * np.abs(refs[k]))
    if out.shape != refs[k].shape or (error > 0).any():
        failed += 1
        print("%s: MISMATCH (max error %g)" % (name, np.abs(out - refs[k]).max()))
    else:
        print("%s: ok" % name)
sys.exit(1 if failed else 0)
