#!/usr/bin/env python3
"""check-ops.py BIN WORK: operators whose ONNX node tests give their shape
inputs at run time (Pad, Tile, Range) checked with the same inputs made
constant (initializers): each small model is built with onnx.helper,
imported and run by fusec-run, and compared with NumPy (np.pad, np.tile,
np.arange). Prints `NAME: ok` or `NAME: FAIL ...`; exits 1 on a failure."""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

bin_dir, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(7)
failures = 0


def check(name, op, x, consts, attrs, expected, opset=13, extra_inputs=()):
    global failures
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in consts]
    node = helper.make_node(op, ["x"] + [n for n, _ in consts] + list(extra_inputs), ["y"],
                            **attrs)
    inputs = [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype)
                                            if hasattr(helper, "np_dtype_to_tensor_dtype")
                                            else TensorProto.FLOAT, list(x.shape))]
    graph = helper.make_graph([node], name, inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = os.path.join(work, name + ".onnx")
    open(path, "wb").write(model.SerializeToString())
    np.save(os.path.join(work, name + ".x.npy"), x)
    fir, out = os.path.join(work, name + ".fir"), os.path.join(work, name + ".out")
    for level in ([], ["-O2"]):
        r = subprocess.run([os.path.join(bin_dir, "fusec"), path, "-o", fir] + level,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if r.returncode == 0:
            r = subprocess.run([os.path.join(bin_dir, "fusec-run"), fir,
                                "--inputs=" + os.path.join(work, name + ".x.npy"),
                                "--outputs=" + out], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True)
        if r.returncode != 0:
            print("%s%s: FAIL %s" % (name, " -O2" if level else "", r.stdout.strip()[:300]))
            failures += 1
            continue
        got = np.load(os.path.join(out, "out0.npy"))
        ok = got.shape == expected.shape and np.allclose(got, expected, rtol=1e-6, atol=1e-6)
        print("%s%s: %s" % (name, " -O2" if level else "",
                            "ok" if ok else "FAIL got %s expected %s" % (got, expected)))
        failures += not ok


x = rng.standard_normal((2, 3, 4)).astype(np.float32)
pads = [(1, 0, 2), (0, 2, 1)]  # begins, ends per axis
flat = np.array([1, 0, 2, 0, 2, 1], np.int64)
check("pad_constant", "Pad", x, [("pads", flat), ("value", np.array(1.5, np.float32))], {},
      np.pad(x, [(1, 0), (0, 2), (2, 1)], constant_values=1.5))
check("pad_edge", "Pad", x, [("pads", flat)], {"mode": "edge"},
      np.pad(x, [(1, 0), (0, 2), (2, 1)], mode="edge"))
check("pad_reflect", "Pad", x, [("pads", flat)], {"mode": "reflect"},
      np.pad(x, [(1, 0), (0, 2), (2, 1)], mode="reflect"))
crop = np.array([0, -1, 1, -1, 0, -2], np.int64)
check("pad_negative", "Pad", x, [("pads", crop)], {},
      np.pad(x, [(0, 0), (0, 0), (1, 0)])[:-1, 1:, :-2])
check("pad_edge_negative", "Pad", x, [("pads", crop)], {"mode": "edge"},
      np.pad(x, [(0, 0), (0, 0), (1, 0)], mode="edge")[:-1, 1:, :-2])
check("pad_opset2", "Pad", x, [], {"pads": [0, 1, 0, 0, 1, 3], "value": -2.0},
      np.pad(x, [(0, 0), (1, 1), (0, 3)], constant_values=-2.0), opset=2)
check("tile", "Tile", x, [("repeats", np.array([2, 1, 3], np.int64))], {},
      np.tile(x, (2, 1, 3)))
check("tile_zero", "Tile", x, [("repeats", np.array([1, 0, 1], np.int64))], {},
      np.tile(x, (1, 0, 1)))
# PyTorch's F.pad exports its pads as a computation on constants:
# Concat -> Reshape [-1, 2] -> Slice (reversed) -> Transpose -> Reshape [-1]
# -> Cast, folded at import by running it on the interpreter.
const = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
inits = [const("p", [1, 2, 0, 0, 0, 0]), const("pairs", [-1, 2]), const("flat", [-1]),
         const("s0", [-1]), const("e0", [-9223372036854775807]), const("ax", [0]),
         const("st", [-1])]
nodes = [helper.make_node("Reshape", ["p", "pairs"], ["p2"]),
         helper.make_node("Slice", ["p2", "s0", "e0", "ax", "st"], ["p3"]),
         helper.make_node("Transpose", ["p3"], ["p4"], perm=[1, 0]),
         helper.make_node("Reshape", ["p4", "flat"], ["p5"]),
         helper.make_node("Cast", ["p5"], ["pads"], to=TensorProto.INT64),
         helper.make_node("Pad", ["x", "pads"], ["y"])]
graph = helper.make_graph(nodes, "torch_pad", [helper.make_tensor_value_info(
    "x", TensorProto.FLOAT, [2, 3, 4])], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)], initializer=inits)
path = os.path.join(work, "torch_pad.onnx")
open(path, "wb").write(helper.make_model(
    graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
np.save(os.path.join(work, "torch_pad.x.npy"), x)
subprocess.run([os.path.join(bin_dir, "fusec"), path, "-o", os.path.join(work, "torch_pad.fir")],
               check=True)
subprocess.run([os.path.join(bin_dir, "fusec-run"), os.path.join(work, "torch_pad.fir"),
                "--inputs=" + os.path.join(work, "torch_pad.x.npy"),
                "--outputs=" + os.path.join(work, "torch_pad.out")], check=True)
got = np.load(os.path.join(work, "torch_pad.out", "out0.npy"))
# F.pad(x, (1, 2)): pairs from the last dim first, [[1,2],[0,0],[0,0]],
# reversed and transposed -> ONNX begins [0, 0, 1], ends [0, 0, 2].
expected = np.pad(x, [(0, 0), (0, 0), (1, 2)])
ok = got.shape == expected.shape and np.allclose(got, expected)
bindings = open(os.path.join(work, "torch_pad.fir")).read().count(" = ")
print("torch_pad: %s (%d bindings)" % ("ok" if ok else "FAIL", bindings))
failures += not ok

# Range feeding an Add: y = x + arange(0.5, 4.5, 1.0) over the last axis.
r = np.arange(0.5, 4.5, 1.0, dtype=np.float32)
inits = [numpy_helper.from_array(np.array(v, np.float32), n)
         for n, v in (("start", 0.5), ("limit", 4.5), ("delta", 1.0))]
nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
         helper.make_node("Add", ["x", "r"], ["y"])]
graph = helper.make_graph(nodes, "range", [helper.make_tensor_value_info(
    "x", TensorProto.FLOAT, [2, 3, 4])], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)], initializer=inits)
path = os.path.join(work, "range.onnx")
open(path, "wb").write(helper.make_model(
    graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
np.save(os.path.join(work, "range.x.npy"), x)
subprocess.run([os.path.join(bin_dir, "fusec"), path, "-o", os.path.join(work, "range.fir")],
               check=True)
subprocess.run([os.path.join(bin_dir, "fusec-run"), os.path.join(work, "range.fir"),
                "--inputs=" + os.path.join(work, "range.x.npy"),
                "--outputs=" + os.path.join(work, "range.out")], check=True)
got = np.load(os.path.join(work, "range.out", "out0.npy"))
ok = np.allclose(got, x + r)
print("range: %s" % ("ok" if ok else "FAIL"))
failures += not ok
print("ops: %d failed" % failures)
sys.exit(1 if failures else 0)
