#!/usr/bin/env python3
"""check-topk.py BIN_DIR WORK_DIR: TopK with k above 64 (a sort), which
fusec builds from ranks, against a NumPy reference in ONNX's order: the
k largest (smallest) along the axis, equal values by index, NaN before
every number when largest and after when smallest. Values with many ties
and some NaNs; axis 0 and the last; float32, float16 and int64; the
import and -O1. Prints one line per case; exits 1 on a mismatch."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

bin_dir, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
ONNX_TYPE = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16,
             np.int64: TensorProto.INT64}


def reference(x, k, axis, largest):
    moved = np.moveaxis(x, axis, -1)
    values = np.empty(moved.shape[:-1] + (k,), x.dtype)
    indices = np.empty(moved.shape[:-1] + (k,), np.int64)
    for row in np.ndindex(moved.shape[:-1]):
        line = moved[row]
        def key(i):
            v = line[i]
            nan = isinstance(v, np.floating) and np.isnan(v)
            if largest:
                return (0 if nan else 1, 0 if nan else -float(v), i)
            return (1 if nan else 0, 0 if nan else float(v), i)
        order = sorted(range(line.shape[0]), key=key)[:k]
        values[row] = line[order]
        indices[row] = order
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


def case(name, x, k, axis, largest):
    dtype = x.dtype.type
    shape = list(x.shape)
    out_shape = list(shape)
    out_shape[axis] = k
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=axis,
                            largest=int(largest))
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("x", ONNX_TYPE[dtype], shape)],
        [helper.make_tensor_value_info("values", ONNX_TYPE[dtype], out_shape),
         helper.make_tensor_value_info("indices", TensorProto.INT64, out_shape)],
        [numpy_helper.from_array(np.array([k], np.int64), "k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(work, name)
    onnx.save(model, path + ".onnx")
    np.save(path + ".in.npy", x)
    want_values, want_indices = reference(x, k, axis, largest)
    ok = True
    for level in ([], ["-O1"]):
        fir = path + ("".join(level) or "-import") + ".fir"
        out = fir + ".out"
        subprocess.run([os.path.join(bin_dir, "fusec"), path + ".onnx", "-o", fir] + level,
                       check=True)
        subprocess.run([os.path.join(bin_dir, "fusec-run"), fir, "--inputs=" + path + ".in.npy",
                        "--outputs=" + out], check=True)
        values, indices = np.load(out + "/out0.npy"), np.load(out + "/out1.npy")
        same = np.array_equal(indices, want_indices) and (
            np.array_equal(values, want_values, equal_nan=True) if dtype != np.int64
            else np.array_equal(values, want_values))
        ok &= same
    print("%s: %s" % (name, "ok" if ok else "MISMATCH"))
    return ok


rng = np.random.default_rng(3)
base = rng.integers(-20, 20, (3, 150)).astype(np.float32)  # many ties
base[0, [5, 70, 149]] = np.nan
base[2, 10] = np.inf
results = [
    case("f32_largest_last", base, 100, 1, True),
    case("f32_smallest_last", base, 120, 1, False),
    case("f32_largest_axis0", np.ascontiguousarray(base.T), 150, 0, True),
    case("f16_smallest_last", base.astype(np.float16), 65, 1, False),
    case("i64_largest_last", rng.integers(-5, 5, (2, 90)).astype(np.int64), 90, 1, True),
]
sys.exit(0 if all(results) else 1)
