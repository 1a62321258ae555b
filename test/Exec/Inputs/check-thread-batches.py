"""check-thread-batches.py OUT.npy COUNTERS.json: compares the output of
lowered-thread-batches.fir's @divergent with its values computed here,
thread by thread, and prints them and the counters in one line."""
import json
import sys

import numpy as np

threads = 300
expected = []
for bx in range(2):
    acc = [(1.0 if t % 3 == 0 else 2.0) + 1000 * bx + 10 * (t // 64 + 1) for t in range(threads)]
    shared = [0.0] * threads
    for t in range(threads):
        shared[threads - 1 - t] = acc[t]
    expected += [shared[(7 * t) % threads] for t in range(threads)]
got = np.load(sys.argv[1])
bad = [i for i, (g, e) in enumerate(zip(got.tolist(), expected)) if g != e]
if got.shape != (600,) or bad:
    print("mismatch: shape %s, first bad element %s" % (got.shape, bad[:1]))
    sys.exit(1)
counters = json.load(open(sys.argv[2]))
print("%d values as expected; %d bytes written, %d read" %
      (len(expected), counters["global_bytes_written"], counters["global_bytes_read"]))
