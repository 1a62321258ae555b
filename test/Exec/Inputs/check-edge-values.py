"""Checks the outputs of padding-windows-and-signed-zero.fir bit for bit:
an average over a window wholly in the padding is 0 (TVM divides by at
least 1), a maximum there is the dtype's lowest finite value (TVM pads with
min_value), and sign(-0.0) is +0.0 (NumPy, PyTorch, TVM)."""
import sys
import numpy as np

out = sys.argv[1]
average = np.load(f"{out}/out0.npy").astype(np.float32)
integer = np.load(f"{out}/out1.npy")
signs = np.load(f"{out}/out2.npy")
inside = np.array([[1.0, 1.5, 2.0], [2.0, 2.5, 3.0], [3.0, 3.5, 4.0]], np.float32)
expected = np.zeros((5, 5), np.float32)
expected[1:4, 1:4] = inside
assert np.array_equal(average[0, 0], expected), average
expected_int = np.zeros((5, 5), np.int32)
expected_int[1:4, 1:4] = [[1, 1, 2], [2, 2, 3], [3, 3, 4]]
assert np.array_equal(integer[0, 0], expected_int), integer
assert np.array_equal(np.signbit(signs[:3]), [False, False, True]), signs
assert list(signs[:3]) == [0.0, 0.0, -1.0] and np.isnan(signs[3]), signs
for k, dtype, lowest in [(3, np.float16, -65504.0), (4, np.float32, np.finfo(np.float32).min),
                         (5, np.int32, np.iinfo(np.int32).min)]:
    maximum = np.load(f"{out}/out{k}.npy")
    assert maximum.dtype == dtype, maximum.dtype
    expected = np.full((5, 5), lowest, dtype)
    expected[1:4, 1:4] = [[1, 2, 2], [3, 4, 4], [3, 4, 4]]
    assert np.array_equal(maximum[0, 0], expected), maximum
print("ok")
