#!/usr/bin/env python3
"""check-ops.py BIN WORK: operators whose ONNX node tests give their shape
inputs at run time (Pad, Tile, Range) checked with the same inputs made
constant (initializers): each small model is built with onnx.helper,
imported and run by fusec-run, and compared with NumPy (np.pad, np.tile,
np.arange); pools with ceil_mode and Resize with fractional scales,
against NumPy references of ONNX's rules; Trilu (np.triu, np.tril). Prints `NAME: ok` or `NAME: FAIL ...`; exits 1 on a failure.
check-ops.py BIN WORK K/N runs only the models whose name hashes (CRC-32) to
K modulo N (the sanitizer build runs a shard; the others are still written)."""
import itertools
import os
import subprocess
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

bin_dir, work = sys.argv[1], sys.argv[2]
shard, shards = (int(part) for part in (sys.argv[3] if len(sys.argv) > 3 else "0/1").split("/"))
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(7)
failures = 0


def run_model(name, nodes, x, inits, expected, opset=13, levels=([], ["-O2"]), external=False,
              suffix="", x_dims=None, tolerance=1e-6, functions=(), more_inputs=()):
    """Builds the graph `nodes` (input x, declared with `x_dims` or x's shape,
    then `more_inputs`, each (name, array, dims); output y; `functions`,
    model-local functions it calls), imports it at each level, runs it on
    the inputs and compares y with `expected`; `suffix` is printed after the
    result (`ok`, or `FAIL ...`)."""
    global failures
    inputs = [("x", x, x_dims)] + list(more_inputs)
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(
        n, helper.np_dtype_to_tensor_dtype(a.dtype) if hasattr(helper, "np_dtype_to_tensor_dtype")
        else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], d or list(a.shape))
        for n, a, d in inputs], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], initializer=inits)
    domains = sorted({f.domain for f in functions})
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] +
                              [helper.make_opsetid(d, 1) for d in domains],
                              functions=list(functions))
    path = os.path.join(work, name + ".onnx")
    if external:  # the initializers in a file beside the model
        onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=name + ".data", size_threshold=0)
    else:
        open(path, "wb").write(model.SerializeToString())
    input_files = [os.path.join(work, "%s.%s.npy" % (name, n)) for n, _, _ in inputs]
    for f, (_, a, _) in zip(input_files, inputs):
        np.save(f, a)
    fir, out = os.path.join(work, name + ".fir"), os.path.join(work, name + ".out")
    if zlib.crc32(name.encode()) % shards != shard:
        return
    for level in levels:
        label = name + (" -O2" if level else "")
        r = subprocess.run([os.path.join(bin_dir, "fusec"), path, "-o", fir] + level,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if r.returncode == 0:
            r = subprocess.run([os.path.join(bin_dir, "fusec-run"), fir,
                                "--inputs=" + ",".join(input_files),
                                "--outputs=" + out], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True)
        if r.returncode != 0:
            print("%s: FAIL %s" % (label, r.stdout.strip()[:300]))
            failures += 1
            continue
        got = np.load(os.path.join(out, "out0.npy"))
        ok = got.shape == expected.shape and np.allclose(got, expected, rtol=tolerance,
                                                          atol=tolerance, equal_nan=True)
        problem = ("FAIL got %s expected %s" % (got, expected) if got.shape != expected.shape or
                   got.size <= 32 else "FAIL max error %g" % np.nanmax(np.abs(got - expected)))
        print("%s: %s%s" % (label, "ok" if ok else problem,
                            suffix(fir) if callable(suffix) else suffix))
        failures += not ok


def check(name, op, x, consts, attrs, expected, opset=13, tolerance=1e-6):
    """One `op` node reading x and the constants `consts` (as initializers)."""
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in consts]
    node = helper.make_node(op, ["x"] + [n for n, _ in consts], ["y"], **attrs)
    run_model(name, [node], x, inits, expected, opset, tolerance=tolerance)


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
# F.pad(x, (1, 2)): pairs from the last dim first, [[1,2],[0,0],[0,0]],
# reversed and transposed -> ONNX begins [0, 0, 1], ends [0, 0, 2]. Only the
# padding itself may be left in the program.
run_model("torch_pad", nodes, x, inits, np.pad(x, [(0, 0), (0, 0), (1, 2)]), levels=([],),
          suffix=lambda fir: " (%d bindings)" % open(fir).read().count(" = "))

# Range feeding an Add: y = x + arange(0.5, 4.5, 1.0) over the last axis.
inits = [numpy_helper.from_array(np.array(v, np.float32), n)
         for n, v in (("start", 0.5), ("limit", 4.5), ("delta", 1.0))]
nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
         helper.make_node("Add", ["x", "r"], ["y"])]
run_model("range", nodes, x, inits, x + np.arange(0.5, 4.5, 1.0, dtype=np.float32),
          levels=([],))
# Initializers as external data (a file beside the model), read in place.
w = rng.standard_normal((4, 5)).astype(np.float32)
run_model("external_data", [helper.make_node("MatMul", ["x", "w"], ["y"])], x,
          [numpy_helper.from_array(w, "w")], x @ w, levels=([],), external=True)
def onnx_pool(x, kernel, strides, pads, is_max):
    """ONNX's (and PyTorch's) ceil_mode pool: a last window starting in the
    end padding is dropped; padding never counts."""
    n, ch, h, w = x.shape
    outs = []
    for d, size in enumerate((h, w)):
        span = size + pads[d] + pads[2 + d] - kernel[d]
        out = -(-span // strides[d]) + 1
        outs.append(out - 1 if (out - 1) * strides[d] >= size + pads[d] else out)
    y = np.zeros((n, ch, outs[0], outs[1]), np.float32)
    for i in range(outs[0]):
        for j in range(outs[1]):
            r0, c0 = i * strides[0] - pads[0], j * strides[1] - pads[1]
            win = x[:, :, max(r0, 0):min(r0 + kernel[0], h), max(c0, 0):min(c0 + kernel[1], w)]
            y[:, :, i, j] = win.max(axis=(2, 3)) if is_max else win.mean(axis=(2, 3))
    return y


# ceil_mode: where TVM's rule keeps a last window that starts in the end
# padding, ONNX drops it (3x4 vs 2x3 below); the import trims the padding.
img = rng.standard_normal((1, 2, 5, 7)).astype(np.float32)
for op, is_max in (("MaxPool", True), ("AveragePool", False)):
    for label, kernel, strides, pads in (("drop", [2, 2], [2, 2], [1, 1, 1, 1]),
                                         ("k1s3", [1, 1], [3, 2], [0, 0, 0, 0]),
                                         ("keep", [3, 3], [2, 2], [0, 0, 0, 0])):
        check("%s_ceil_%s" % (op.lower(), label), op, img, [],
              {"kernel_shape": kernel, "strides": strides, "pads": pads, "ceil_mode": 1},
              onnx_pool(img, kernel, strides, pads, is_max))


def avg_pool_include_pad(x, kernel, strides, pads, ceil):
    """AveragePool with count_include_pad = 1 (ONNX Runtime's and PyTorch's
    rule, checked against torch's avg_pool2d): a window is clipped to the
    padded input, the padding counts as zeros, and with ceil_mode a last
    window that would start in the end padding is dropped."""
    s = len(kernel)
    shape = x.shape[2:]
    outs = []
    for d in range(s):
        span = shape[d] + pads[d] + pads[s + d] - kernel[d]
        o = (-(-span // strides[d]) if ceil else span // strides[d]) + 1
        if ceil and (o - 1) * strides[d] >= shape[d] + pads[d]:
            o -= 1
        outs.append(o)
    y = np.zeros(x.shape[:2] + tuple(outs), np.float32)
    for idx in itertools.product(*[range(o) for o in outs]):
        sl, count = [], 1
        for d, i in enumerate(idx):
            start = i * strides[d] - pads[d]
            end = min(start + kernel[d], shape[d] + pads[s + d])
            count *= end - start
            sl.append(slice(max(start, 0), min(end, shape[d])))
        y[(slice(None), slice(None)) + idx] = x[(slice(None), slice(None)) + tuple(sl)].sum(
            axis=tuple(range(2, 2 + s)), dtype=np.float64) / count
    return y


# count_include_pad = 1 (PyTorch's AvgPool default, so torchvision's
# Inception exports it): the padding is made explicit zeros.
img = rng.standard_normal((1, 2, 5, 7)).astype(np.float32)
for label, kernel, strides, pads, ceil in (
        ("same", [3, 3], [1, 1], [1, 1, 1, 1], 0),
        ("asymmetric", [3, 2], [2, 3], [1, 0, 2, 1], 0),
        ("ceil", [2, 2], [2, 2], [1, 1, 1, 1], 1),
        ("ceil_clip", [3, 2], [2, 3], [1, 1, 1, 1], 1)):
    check("averagepool_include_pad_" + label, "AveragePool", img, [],
          {"kernel_shape": kernel, "strides": strides, "pads": pads, "ceil_mode": ceil,
           "count_include_pad": 1}, avg_pool_include_pad(img, kernel, strides, pads, ceil))
row = rng.standard_normal((2, 3, 6)).astype(np.float32)
check("averagepool_include_pad_1d", "AveragePool", row, [],
      {"kernel_shape": [3], "strides": [2], "pads": [1, 2], "count_include_pad": 1},
      avg_pool_include_pad(row, [3], [2], [1, 2], 0))
cube = rng.standard_normal((1, 2, 4, 5, 3)).astype(np.float32)
check("averagepool_include_pad_3d", "AveragePool", cube, [],
      {"kernel_shape": [2, 3, 2], "strides": [2, 2, 1], "pads": [1, 1, 0, 0, 1, 1],
       "ceil_mode": 1, "count_include_pad": 1},
      avg_pool_include_pad(cube, [2, 3, 2], [2, 2, 1], [1, 1, 0, 0, 1, 1], 1))


def resize_nearest_asymmetric(x, scales):
    """Resize, nearest (floor), asymmetric, in float32 as ONNX Runtime
    computes it: 0.7 * 10 is 7 there (6 in double), and 3 / 0.6 is 5."""
    y = x
    for d, scale in enumerate(np.asarray(scales, np.float32)):
        out = int(np.floor(np.float32(x.shape[d]) * scale))
        src = [min(int(np.floor(np.float32(i) / scale)), x.shape[d] - 1) for i in range(out)]
        y = np.take(y, src, axis=d)
    return y


img = rng.standard_normal((1, 1, 10, 10)).astype(np.float32)
scales = np.array([1, 1, 0.7, 0.6], np.float32)
check("resize_fractional", "Resize", img,
      [("roi", np.array([], np.float32)), ("scales", scales)],
      {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
      resize_nearest_asymmetric(img, scales))

# Resize linear with align_corners where in * scale is no integer (5 * 1.5):
# the source coordinate uses the output length, as PyTorch (whose
# F.interpolate(scale_factor=1.5, align_corners=True) exports exactly this)
# and ONNX Runtime compute it: the last output is the last input.
row = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 1, 5)
src = np.arange(7, dtype=np.float32) * 4 / 6
lo = np.floor(src).astype(int)
hi = np.minimum(lo + 1, 4)
check("resize_align_corners", "Resize", row,
      [("roi", np.array([], np.float32)), ("scales", np.array([1, 1, 1, 1.5], np.float32))],
      {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
      (row[..., lo] * (1 - (src - lo)) + row[..., hi] * (src - lo)).astype(np.float32))

# A scale that keeps the size (1.3 on 3 elements) still maps the indices.
row3 = np.array([[[[10, 20, 30]]]], np.float32)
check("resize_same_size", "Resize", row3,
      [("roi", np.array([], np.float32)), ("scales", np.array([1, 1, 1, 1.3], np.float32))],
      {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
      np.array([[[[10, 10, 20]]]], np.float32))

# Resize-10 (and Upsample): nearest takes the floor of i / scale on an
# enlarged axis and the ceiling on a reduced one: ONNX's opset-10 node test
# test_resize_downsample_nearest ([[1, 2, 3, 4], [5, 6, 7, 8]] at 0.6 is
# [[1, 3]]), and ONNX Runtime on a mixed case (rows 1.5, columns 0.6).
grid = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], np.float32)
check("resize10_nearest_reduce", "Resize", grid, [("scales", np.array([1, 1, 0.6, 0.6], np.float32))],
      {"mode": "nearest"}, np.array([[[[1, 3]]]], np.float32), opset=10)
grid2 = np.arange(45, dtype=np.float32).reshape(1, 1, 5, 9)
check("resize10_nearest_mixed", "Resize", grid2, [("scales", np.array([1, 1, 1.5, 0.6], np.float32))],
      {"mode": "nearest"}, grid2[:, :, [0, 0, 1, 2, 2, 3, 4]][..., [0, 2, 4, 5, 7]], opset=10)

# Model-zoo-era forms ONNX Runtime runs: Clip-11 with a constant min above
# max (max everywhere); MaxPool-8's storage_order, which orders only the
# Indices output; BatchNormalization declaring its running statistics,
# which nothing reads; an unused node without a kernel in fusec
# (NonMaxSuppression) and an unused DOUBLE weight: values no output needs
# are not imported.
v = rng.standard_normal((2, 3)).astype(np.float32)
check("clip11_min_above_max", "Clip", v, [("lo", np.array(2.0, np.float32)),
                                          ("hi", np.array(1.0, np.float32))], {},
      np.ones_like(v), opset=11)
check("maxpool_storage_order", "MaxPool", img, [],
      {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1},
      img.reshape(1, 1, 5, 2, 5, 2).max(axis=(3, 5)), opset=8)
bn_x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
bn_scale, bn_bias = np.array([1.5, 0.5, 2.0], np.float32), np.array([0.1, -0.2, 0.3], np.float32)
bn_mean, bn_var = np.array([0.2, -0.1, 0.0], np.float32), np.array([1.0, 0.5, 2.0], np.float32)
bn_ref = ((bn_x - bn_mean[:, None, None]) / np.sqrt(bn_var[:, None, None] + 1e-5) *
          bn_scale[:, None, None] + bn_bias[:, None, None]).astype(np.float32)
run_model("batchnorm_unread_statistics", [
    helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                     ["y", "running_mean", "running_var", "saved_mean", "saved_var"])],
    bn_x, [numpy_helper.from_array(a, n) for n, a in
           [("s", bn_scale), ("b", bn_bias), ("m", bn_mean), ("v", bn_var)]],
    bn_ref, opset=7, tolerance=1e-5)
run_model("unused_values", [
    helper.make_node("Relu", ["x"], ["y"]),
    helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["selected"]),
    helper.make_node("Identity", ["weights64"], ["spare"])],
    v, [numpy_helper.from_array(rng.random((1, 3, 4)).astype(np.float32), "boxes"),
        numpy_helper.from_array(rng.random((1, 1, 3)).astype(np.float32), "scores"),
        numpy_helper.from_array(np.ones(3, np.float64), "weights64")],
    np.maximum(v, 0))

# Forms of TensorFlow/Keras exports (tf2onnx), against NumPy: LayerNorm-17
# whose Scale and B only broadcast to the normalized shape ([1, 1, H],
# [1, H]; [H] over axes 1 and 2); a constant Cast of -inf, NaN and
# out-of-range values to int64, folded as astype converts them at run time
# (T5's bucketed positions discard such values); Conv1D with SAME_UPPER and
# stride 1 on a symbolic length (the padding, (k - 1) d, needs no size); a
# Slice of a whole symbolic dim (a no-op); int32 shape arithmetic on a
# symbolic batch and sequence (tf.shape is int32) and ReduceProd of shape
# dims (tf.tensordot).
lx = rng.standard_normal((2, 3, 8)).astype(np.float32)
ln_scale, ln_bias = rng.standard_normal((1, 1, 8)).astype(np.float32), rng.standard_normal((1, 8)).astype(np.float32)
def layer_norm(v, axes, gamma, beta):
    mean = v.mean(axis=axes, keepdims=True)
    return ((v - mean) / np.sqrt(((v - mean) ** 2).mean(axis=axes, keepdims=True) + 1e-5) * gamma + beta).astype(np.float32)
check("layernorm17_broadcast_scale", "LayerNormalization", lx, [("s", ln_scale), ("b", ln_bias)],
      {"axis": -1}, layer_norm(lx, (2,), ln_scale, ln_bias), opset=17, tolerance=1e-5)
ln_h = rng.standard_normal(8).astype(np.float32)
check("layernorm17_axis1_row", "LayerNormalization", lx, [("s", ln_h), ("b", ln_h)],
      {"axis": 1}, layer_norm(lx, (1, 2), ln_h, ln_h), opset=17, tolerance=1e-5)
run_model("cast_constant_out_of_range", [
    helper.make_node("Cast", ["odd"], ["odd64"], to=TensorProto.INT64),
    helper.make_node("Cast", ["odd64"], ["oddf"], to=TensorProto.FLOAT),
    helper.make_node("Add", ["x", "oddf"], ["y"])], v[0],
    [numpy_helper.from_array(np.array([-np.inf, np.nan, -2.7], np.float32), "odd")],
    v[0] + np.array([0, 0, -2], np.float32))
seq_x = rng.standard_normal((2, 3, 7)).astype(np.float32)
seq_w = rng.standard_normal((4, 3, 4)).astype(np.float32)
seq_padded = np.pad(seq_x, [(0, 0), (0, 0), (1, 2)])
seq_ref = np.stack([np.einsum("ncw,ocw->no", seq_padded[:, :, i:i + 4], seq_w)
                    for i in range(7)], axis=-1).astype(np.float32)
run_model("conv1d_same_symbolic_length", [
    helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER")], seq_x,
    [numpy_helper.from_array(seq_w, "w")], seq_ref, x_dims=["batch", 3, "length"], tolerance=1e-5)
run_model("slice_whole_symbolic_dim", [
    helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"])], seq_x,
    [numpy_helper.from_array(np.array([0, 1], np.int64), "starts"),
     numpy_helper.from_array(np.array([2**62, 3], np.int64), "ends"),
     numpy_helper.from_array(np.array([2, 1], np.int64), "axes")],
    seq_x[:, 1:3, :], x_dims=["batch", 3, "length"])
tf_w = rng.standard_normal((7, 5)).astype(np.float32)
run_model("tf_int32_shape_arithmetic", [
    helper.make_node("Shape", ["x"], ["shape64"]),
    helper.make_node("Cast", ["shape64"], ["shape32"], to=TensorProto.INT32),
    helper.make_node("Gather", ["shape32", "zero"], ["b"]),
    helper.make_node("Gather", ["shape32", "one"], ["s"]),
    helper.make_node("Mul", ["b", "s"], ["rows"]),
    helper.make_node("Unsqueeze", ["rows", "axis0"], ["rows1"]),
    helper.make_node("Concat", ["rows1", "cols"], ["flat32"], axis=0),
    helper.make_node("Cast", ["flat32"], ["flat"], to=TensorProto.INT64),
    helper.make_node("Reshape", ["x", "flat"], ["x2"]),
    helper.make_node("MatMul", ["x2", "w"], ["y2"]),
    helper.make_node("Slice", ["shape64", "zero1", "two1"], ["free"]),
    helper.make_node("ReduceProd", ["free"], ["count"], keepdims=1),
    helper.make_node("Concat", ["count", "out5"], ["flat5"], axis=0),
    helper.make_node("Reshape", ["y2", "flat5"], ["y2again"]),
    helper.make_node("Concat", ["free", "out5"], ["shape3"], axis=0),
    helper.make_node("Reshape", ["y2again", "shape3"], ["y"])], seq_x,
    [numpy_helper.from_array(v_, n) for n, v_ in (
        ("zero", np.int32(0)), ("one", np.int32(1)), ("axis0", np.array([0], np.int64)),
        ("cols", np.array([7], np.int32)), ("w", tf_w), ("zero1", np.array([0], np.int64)),
        ("two1", np.array([2], np.int64)), ("out5", np.array([5], np.int64)))],
    (seq_x @ tf_w).astype(np.float32), x_dims=["batch", "seq", 7], tolerance=1e-5)

# Trilu on the input (a where with a constant mask), and on a constant (a
# causal mask, folded: only the add is left).
sq = rng.standard_normal((2, 5, 6)).astype(np.float32)
check("trilu_lower", "Trilu", sq, [("k", np.array(-1, np.int64))], {"upper": 0},
      np.tril(sq, -1), opset=14)
check("trilu_upper", "Trilu", sq, [("k", np.array(2, np.int64))], {}, np.triu(sq, 2), opset=14)
ones = numpy_helper.from_array(np.ones((5, 6), np.float32), "ones")
run_model("trilu_causal_mask", [helper.make_node("Trilu", ["ones"], ["mask"], upper=1),
                                helper.make_node("Add", ["x", "mask"], ["y"])],
          sq, [ones], sq + np.triu(np.ones((5, 6), np.float32)), opset=14, levels=([],),
          suffix=lambda fir: " (%d bindings)" % open(fir).read().count(" = "))
# A constant (beyond the inline size) that a no-op node returns as it is,
# read again afterwards: the fold once freed the value the constant's name
# still pointed to (an LSTM's shared zero state, expanded twice).
c32 = rng.standard_normal((1, 2, 16)).astype(np.float32)
x16 = rng.standard_normal((1, 2, 16)).astype(np.float32)
inits = [numpy_helper.from_array(c32, "c"), const("shape", [1, 2, 16]),
         const("reps", [1, 1, 1]), const("zpads", [0] * 6)]
nodes = [helper.make_node("Expand", ["c", "shape"], ["e1"]),
         helper.make_node("Max", ["c"], ["e2"]),
         helper.make_node("Tile", ["c", "reps"], ["e3"]),
         helper.make_node("Pad", ["c", "zpads"], ["e4"]),
         helper.make_node("Expand", ["c", "shape"], ["e5"]),
         helper.make_node("Sum", ["x", "e1", "e2", "e3", "e4", "e5"], ["y"])]
run_model("constant_passed_through", nodes, x16, inits, x16 + 5 * c32, levels=([],))


def conv_transpose_ref(x, w, stride, pads, dilation, groups, output_padding=(0, 0)):
    """ONNX ConvTranspose, 2-D, by scattering each input element."""
    n, cin, h, wd = x.shape
    mg, kh, kw = w.shape[1:]
    cg = cin // groups
    full = [(h - 1) * stride[0] + (kh - 1) * dilation[0] + 1 + output_padding[0],
            (wd - 1) * stride[1] + (kw - 1) * dilation[1] + 1 + output_padding[1]]
    y = np.zeros((n, mg * groups, full[0], full[1]), np.float64)
    for g in range(groups):
        for c in range(cg):
            for i in range(h):
                for j in range(wd):
                    for a in range(kh):
                        for b in range(kw):
                            y[:, g * mg:(g + 1) * mg, i * stride[0] + a * dilation[0],
                              j * stride[1] + b * dilation[1]] += \
                                x[:, g * cg + c, i, j, None] * w[g * cg + c, :, a, b]
    return y[:, :, pads[0]:full[0] - pads[2], pads[1]:full[1] - pads[3]].astype(np.float32)


# ConvTranspose with weights computed at run time (not folded at import:
# reshape, permute_dims and a reversed strided_slice flip them), 2 groups,
# stride (2, 3), dilation (1, 2), asymmetric pads, output_padding; and 1-D.
xt = rng.standard_normal((1, 4, 3, 4)).astype(np.float32)
wt = rng.standard_normal((4, 3, 2, 3)).astype(np.float32)
attrs = {"strides": [2, 3], "dilations": [1, 2], "pads": [1, 0, 0, 2], "group": 2,
         "output_padding": [1, 0]}
nodes = [helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0),
         helper.make_node("Mul", ["m", "zero"], ["m0"]),
         helper.make_node("Add", ["w0", "m0"], ["w"]),
         helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)]
run_model("convtranspose_runtime_weights", nodes, xt,
          [numpy_helper.from_array(wt, "w0"), numpy_helper.from_array(np.float32(0), "zero")],
          conv_transpose_ref(xt, wt, [2, 3], [1, 0, 0, 2], [1, 2], 2, (1, 0)))
x1 = rng.standard_normal((2, 3, 7)).astype(np.float32)
w1 = rng.standard_normal((3, 2, 3)).astype(np.float32)
check("convtranspose_1d", "ConvTranspose", x1, [("w", w1)],
      {"strides": [2], "pads": [1, 0]},
      conv_transpose_ref(x1[:, :, None], w1[:, :, None], [1, 2], [0, 1, 0, 0], [1, 1], 1)[:, :, 0])
# Conv and pools over 1-D (NCL) inputs: the 2-D forms over a unit height.
wc = rng.standard_normal((4, 3, 3)).astype(np.float32)
bc = rng.standard_normal(4).astype(np.float32)
xp = np.pad(x1, [(0, 0), (0, 0), (2, 1)])
conv1 = np.stack([sum(np.einsum("nc,oc->no", xp[:, :, 2 * i + 2 * k], wc[:, :, k])
                      for k in range(3)) for i in range(3)], -1) + bc[:, None]
check("conv_1d", "Conv", x1, [("w", wc), ("b", bc)],
      {"strides": [2], "pads": [2, 1], "dilations": [2]}, conv1.astype(np.float32))
check("maxpool_1d_ceil", "MaxPool", x1, [], {"kernel_shape": [2], "strides": [2],
                                              "ceil_mode": 1},
      onnx_pool(x1[:, :, None], [1, 2], [1, 2], [0, 0, 0, 0], True)[:, :, 0])
check("averagepool_1d", "AveragePool", x1, [], {"kernel_shape": [3], "pads": [1, 1]},
      onnx_pool(x1[:, :, None], [1, 3], [1, 1], [0, 1, 0, 1], False)[:, :, 0])
# ReduceLogSumExp of values whose exp overflows f32 (the max is subtracted).
big = (rng.standard_normal((2, 3, 4)) * 5 + 100).astype(np.float32)
lse = np.log(np.exp(big.astype(np.float64) - 100).sum(axis=1)) + 100
check("reducelogsumexp_large", "ReduceLogSumExp", big, [], {"axes": [1], "keepdims": 0},
      lse.astype(np.float32))
# ... and of rows holding infinities: a row of -inf (a fully masked row)
# gives -inf, one with +inf gives +inf, not NaN (as PyTorch).
inf = np.float32(np.inf)
rows = np.array([[-inf, -inf, -inf], [inf, 1, 2], [1, 2, 3], [inf, inf, 0]], np.float32)
check("reducelogsumexp_inf", "ReduceLogSumExp", rows, [], {"axes": [1], "keepdims": 0},
      np.array([-inf, inf, np.log(np.exp([1, 2, 3]).sum()), inf], np.float32))
# If on a condition that folds at import: PyTorch's `x.squeeze(1)` from
# opset 11 on a dim whose size it did not know at export (squeeze only when
# the dim is 1), the branch taken imported in place; with a nested If in the
# taken branch.
def squeeze_if(name, inner=None):
    then_nodes = [helper.make_node("Constant", [], [name + "_axes"],
                                   value=numpy_helper.from_array(np.int64([1]))),
                  helper.make_node("Squeeze", ["x", name + "_axes"], [name + "_sq"])]
    then_out = name + "_sq"
    if inner:
        then_nodes.append(inner)
        then_out = inner.output[0]
    branch = lambda nodes, out: helper.make_graph(
        nodes, name + "_branch", [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
    return [helper.make_node("Shape", ["x"], [name + "_shape"]),
            helper.make_node("Constant", [], [name + "_one"],
                             value=numpy_helper.from_array(np.int64(1))),
            helper.make_node("Gather", [name + "_shape", name + "_one"], [name + "_dim"], axis=0),
            helper.make_node("Equal", [name + "_dim", name + "_one"], [name + "_cond"]),
            helper.make_node("If", [name + "_cond"], ["y"],
                             then_branch=branch(then_nodes, then_out),
                             else_branch=branch([helper.make_node("Identity", ["x"],
                                                                  [name + "_id"])],
                                                name + "_id"))]


x213 = rng.standard_normal((2, 1, 3)).astype(np.float32)
x243 = rng.standard_normal((2, 4, 3)).astype(np.float32)
run_model("if_squeeze_taken", squeeze_if("a"), x213, [], x213.squeeze(1))
run_model("if_squeeze_else", squeeze_if("b"), x243, [], x243)
relu_if = helper.make_node("If", ["c_cond"], ["c_out"], then_branch=helper.make_graph(
    [helper.make_node("Relu", ["c_sq"], ["c_relu"])], "inner_then", [],
    [helper.make_tensor_value_info("c_relu", TensorProto.FLOAT, None)]),
    else_branch=helper.make_graph([], "inner_else", [],
                                  [helper.make_tensor_value_info("c_sq", TensorProto.FLOAT, None)]))
run_model("if_nested", squeeze_if("c", relu_if), x213, [], np.maximum(x213.squeeze(1), 0))
# A branch's names are its own: its initializer `bw` shadows the outer `bw`
# inside the branch only, and two Ifs may take branches that define the same
# names (one graph used twice).
shadow_then = helper.make_graph(
    [helper.make_node("Mul", ["x", "bw"], ["t"])], "shadow_then", [],
    [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
    initializer=[numpy_helper.from_array(np.full([3], 3, np.float32), "bw")])
shadow_else = helper.make_graph(
    [helper.make_node("Neg", ["x"], ["t"])], "shadow_else", [],
    [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
run_model("if_branch_scope", [
    helper.make_node("If", ["cond"], ["y0"], then_branch=shadow_then, else_branch=shadow_else),
    helper.make_node("If", ["cond"], ["y1"], then_branch=shadow_then, else_branch=shadow_else),
    helper.make_node("Add", ["y0", "y1"], ["sum"]),
    helper.make_node("Mul", ["sum", "bw"], ["y"])], x213.reshape(2, 3),
    [numpy_helper.from_array(np.array(True), "cond"),
     numpy_helper.from_array(np.full([3], 5, np.float32), "bw")],
    (x213.reshape(2, 3) * 3 * 2) * 5)


# Scatters with constant indices (FIR has none: take + where at import).
# PyTorch's slice assignment y[..., 0:2] = v exports full-coordinate
# ScatterND indices; a ScatterND of whole rows (k < rank); ScatterElements
# with negative indices and duplicates (the last wins); reduction add and
# mul over duplicates (every update, in order).
def scatter_nd_ref(data, indices, updates, reduction="none"):
    out = data.copy()
    k = indices.shape[-1]
    for u, index in enumerate(indices.reshape(-1, k)):
        row = updates.reshape((-1,) + data.shape[k:])[u]
        key = tuple(int(i) for i in index)
        out[key] = row if reduction == "none" else (
            out[key] + row if reduction == "add" else out[key] * row)
    return out


box = rng.standard_normal((1, 3, 4, 6)).astype(np.float32)
slice_idx = np.stack(np.meshgrid(*[np.arange(n) for n in (1, 3, 4, 2)], indexing="ij"), -1)
slice_upd = (rng.standard_normal((1, 3, 4, 2))).astype(np.float32)
run_model("scatternd_slice_assign", [helper.make_node("ScatterND", ["x", "i", "u"], ["y"])], box,
          [numpy_helper.from_array(slice_idx.astype(np.int64), "i"),
           numpy_helper.from_array(slice_upd, "u")],
          scatter_nd_ref(box, slice_idx, slice_upd),
          suffix=lambda fir: " (%d launches)" % open(fir).read().count("launch grid"))
rows_idx = np.int64([[2], [-3]])
rows_upd = rng.standard_normal((2, 6)).astype(np.float32)
grid = rng.standard_normal((4, 6)).astype(np.float32)
check("scatternd_rows", "ScatterND", grid, [("i", rows_idx), ("u", rows_upd)], {},
      scatter_nd_ref(grid, np.int64([[2], [1]]), rows_upd))
dup_idx = np.int64([[1], [3], [1], [1]])
dup_upd = rng.standard_normal((4, 6)).astype(np.float32)
for reduction in ("add", "mul"):
    check("scatternd_" + reduction, "ScatterND", grid, [("i", dup_idx), ("u", dup_upd)],
          {"reduction": reduction}, scatter_nd_ref(grid, dup_idx, dup_upd, reduction),
          opset=16)
# No updates at all (empty indices): the data as it is.
check("scatternd_no_updates", "ScatterND", grid,
      [("i", np.zeros((0, 1), np.int64)), ("u", np.zeros((0, 6), np.float32))], {}, grid)
# Softplus far from 0: relu(x) + log(1 + exp(-|x|)) never overflows (the
# literal log(exp(x) + 1) gave inf at x = 100).
wide = np.float32([[-100, -5, 0, 5, 30, 88.5, 100]])
check("softplus_wide", "Softplus", wide, [], {}, np.logaddexp(0, wide.astype(np.float64)).astype(np.float32))
# Swin's shifted-window mask: a ScatterND on constants only folds to a
# constant at import.
mask_idx = np.int64([[0], [2]])
mask_upd = np.float32([[1, 1, 1, 1, 1, 1], [2, 2, 2, 2, 2, 2]])
run_model("scatternd_constant_fold", [
    helper.make_node("ConstantOfShape", ["shape"], ["zeros"],
                     value=numpy_helper.from_array(np.float32([0]))),
    helper.make_node("ScatterND", ["zeros", "i", "u"], ["mask"]),
    helper.make_node("Add", ["x", "mask"], ["y"])], grid,
    [numpy_helper.from_array(np.int64([4, 6]), "shape"),
     numpy_helper.from_array(mask_idx, "i"), numpy_helper.from_array(mask_upd, "u")],
    grid + scatter_nd_ref(np.zeros((4, 6), np.float32), mask_idx, mask_upd),
    suffix=lambda fir: " (%d scatter ops left)" % (open(fir).read().count("take(") +
                                                   open(fir).read().count("where(")))
elem_idx = np.int64([[1, -1, 0], [2, 2, 0]])
elem_upd = rng.standard_normal((2, 3)).astype(np.float32)
elem_ref = grid.copy()
for r in range(2):
    for col in range(3):
        elem_ref[r, int(elem_idx[r, col]) % 6] = elem_upd[r, col]
check("scatterelements_axis1", "ScatterElements", grid, [("i", elem_idx), ("u", elem_upd)],
      {"axis": 1}, elem_ref)


# EyeLike: a constant from the input's shape (SimCLR's torch.eye mask).
sq2 = rng.standard_normal((4, 6)).astype(np.float32)
run_model("eyelike", [helper.make_node("EyeLike", ["x"], ["e"], k=1),
                      helper.make_node("Add", ["x", "e"], ["y"])],
          sq2, [], sq2 + np.eye(4, 6, 1, dtype=np.float32), levels=([],),
          suffix=lambda fir: " (%d bindings)" % open(fir).read().count(" = "))


def onnx_recurrent(kind, x, w, r, b, direction, act="Tanh", lbr=0, clip=None,
                   input_forget=0, p=None, h0=None):
    """ONNX's RNN/GRU/LSTM equations in float64: (Y [T,D,B,H], Y_h [D,B,H])."""
    sig = lambda v: 1 / (1 + np.exp(-v))
    f_act = {"Tanh": np.tanh, "Relu": lambda v: np.maximum(v, 0)}[act]
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    steps, batch = x.shape[:2]
    hidden = r.shape[2]
    ys, hs = [], []
    for d in range(w.shape[0]):
        wb, rb = np.split(b[d], 2)
        h = np.zeros((batch, hidden)) if h0 is None else h0[d].astype(np.float64)
        cst = np.zeros((batch, hidden))
        out = [None] * steps
        order = range(steps - 1, -1, -1) if d == 1 or direction == "reverse" else range(steps)
        for t in order:
            xt = x[t].astype(np.float64)
            if kind == "RNN":
                h = f_act(cl(xt @ w[d].T + h @ r[d].T + wb + rb))
            elif kind == "GRU":
                W3, R3, wb3, rb3 = np.split(w[d], 3), np.split(r[d], 3), np.split(wb, 3), \
                    np.split(rb, 3)
                z = sig(cl(xt @ W3[0].T + h @ R3[0].T + wb3[0] + rb3[0]))
                rr = sig(cl(xt @ W3[1].T + h @ R3[1].T + wb3[1] + rb3[1]))
                if lbr:
                    hh = np.tanh(cl(xt @ W3[2].T + rr * (h @ R3[2].T + rb3[2]) + wb3[2]))
                else:
                    hh = np.tanh(cl(xt @ W3[2].T + (rr * h) @ R3[2].T + rb3[2] + wb3[2]))
                h = (1 - z) * hh + z * h
            else:
                g = xt @ w[d].T + h @ r[d].T + wb + rb
                gi, go, gf, gc = np.split(g, 4, axis=1)
                pi, po, pf = np.split(p[d], 3) if p is not None else (0, 0, 0)
                i = sig(cl(gi + pi * cst))
                f = 1 - i if input_forget else sig(cl(gf + pf * cst))
                cst = f * cst + i * np.tanh(cl(gc))
                o = sig(cl(go + po * cst))
                h = o * np.tanh(cst)
            out[t] = h
        ys.append(np.stack(out))
        hs.append(h)
    return (np.stack(ys, 1).astype(np.float32), np.stack(hs).astype(np.float32))


# RNN, GRU and LSTM unrolled (the weights constant): bidirectional, reverse,
# GRU's linear_before_reset, LSTM's clip, peepholes and input_forget, an
# initial state, and a layer whose Y is omitted (only Y_h asked).
def recurrent_case(name, kind, gates, direction, attrs, h0=False, peep=False, y_h_only=False,
                   **ref):
    dirs, hidden, inputs = (2 if direction == "bidirectional" else 1), 4, 3
    xs = rng.standard_normal((5, 2, inputs)).astype(np.float32)
    w = (rng.standard_normal((dirs, gates * hidden, inputs)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((dirs, gates * hidden, hidden)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((dirs, 2 * gates * hidden)) * 0.5).astype(np.float32)
    init = (rng.standard_normal((dirs, 2, hidden))).astype(np.float32) if h0 else None
    p = (rng.standard_normal((dirs, 3 * hidden)) * 0.5).astype(np.float32) if peep else None
    names = ["x", "w", "r", "b", "", "h0" if h0 else ""] + (["", "p"] if peep else [])
    while names[-1] == "":
        names.pop()
    inits = [numpy_helper.from_array(v, n) for n, v in
             (("w", w), ("r", r), ("b", b), ("h0", init), ("p", p)) if v is not None]
    node = helper.make_node(kind, names, ["", "y"] if y_h_only else ["y"], hidden_size=hidden,
                            direction=direction, **attrs)
    y, y_h = onnx_recurrent(kind, xs, w, r, b, direction, h0=init, p=p, **ref)
    run_model(name, [node], xs, inits, y_h if y_h_only else y)


recurrent_case("rnn_relu_reverse", "RNN", 1, "reverse", {"activations": ["Relu"]}, h0=True,
               act="Relu")
# RNN's schema default activations ["Tanh", "Tanh"] written out on a
# one-directional layer: the first applies (ONNX Runtime's reading).
recurrent_case("rnn_default_activations", "RNN", 1, "forward",
               {"activations": ["Tanh", "Tanh"]})
recurrent_case("gru_bidirectional_lbr", "GRU", 3, "bidirectional", {"linear_before_reset": 1},
               lbr=1)
recurrent_case("gru_initial_state", "GRU", 3, "forward", {}, h0=True)
# From the zero state, a GRU's first reset gate multiplies zeros: it is not
# emitted (it used to be, dead, and fuse-ops warned about it at -O2).
recurrent_case("gru_zero_state_bidirectional", "GRU", 3, "bidirectional", {})
# PyTorch's zero state for a dynamic batch: initial_h is ConstantOfShape of
# [1, batch, hidden], batch taken from the input's shape (a broadcast_to
# that adds the symbolic dim); run at batch 3.
seq_x = rng.standard_normal((5, 3, 3)).astype(np.float32)
gru_w = (rng.standard_normal((1, 12, 3)) * 0.5).astype(np.float32)
gru_r = (rng.standard_normal((1, 12, 4)) * 0.5).astype(np.float32)
gru_b = (rng.standard_normal((1, 24)) * 0.5).astype(np.float32)
run_model("gru_dynamic_batch_zero_state", [
    helper.make_node("Shape", ["x"], ["s"]),
    helper.make_node("Gather", ["s", "one"], ["b"], axis=0),
    helper.make_node("Concat", ["one", "b", "hidden"], ["h_shape"], axis=0),
    helper.make_node("ConstantOfShape", ["h_shape"], ["h0"]),
    helper.make_node("GRU", ["x", "w", "r", "b_", "", "h0"], ["y"], hidden_size=4)], seq_x,
    [numpy_helper.from_array(np.array([1], np.int64), "one"),
     numpy_helper.from_array(np.array([4], np.int64), "hidden"),
     numpy_helper.from_array(gru_w, "w"), numpy_helper.from_array(gru_r, "r"),
     numpy_helper.from_array(gru_b, "b_")],
    onnx_recurrent("GRU", seq_x, gru_w, gru_r, gru_b, "forward")[0].astype(np.float32),
    x_dims=[5, "batch", 3])
quiet = subprocess.run([os.path.join(bin_dir, "fusec"),
                        os.path.join(work, "gru_zero_state_bidirectional.onnx"), "-O2", "-o",
                        os.devnull], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True).stdout
print("gru_zero_state_bidirectional -O2 messages: %s" % (quiet.strip() or "none"))
recurrent_case("lstm_bidirectional_clip_peepholes", "LSTM", 4, "bidirectional",
               {"clip": 0.7}, peep=True, clip=0.7)
recurrent_case("lstm_input_forget_y_h", "LSTM", 4, "forward", {"input_forget": 1}, h0=True,
               y_h_only=True, input_forget=1)
# A dynamic batch: Expand and ConstantOfShape to a shape computed from the
# input's (Shape -> Gather -> Concat), as PyTorch exports an LSTM's zero
# state or a mask: the result has the symbolic dim its operand lacks.
batch_x = rng.standard_normal((3, 4)).astype(np.float32)
row = rng.standard_normal((1, 4)).astype(np.float32)
batch_shape = [helper.make_node("Shape", ["x"], ["s"]),
               helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
               helper.make_node("Concat", ["b", "four"], ["bs"], axis=0)]
batch_inits = [numpy_helper.from_array(np.array([0], np.int64), "zero"),
               numpy_helper.from_array(np.array([4], np.int64), "four"),
               numpy_helper.from_array(row, "row")]
run_model("expand_dynamic_batch", batch_shape + [
    helper.make_node("Expand", ["row", "bs"], ["y"])], batch_x, batch_inits,
    np.broadcast_to(row, (3, 4)), x_dims=["batch", 4])
run_model("constant_of_shape_dynamic_batch", batch_shape + [
    helper.make_node("ConstantOfShape", ["bs"], ["c"],
                     value=numpy_helper.from_array(np.array([2.5], np.float32))),
    helper.make_node("Sub", ["c", "x"], ["y"])], batch_x, batch_inits[:2], 2.5 - batch_x,
    x_dims=["batch", 4])
# PyTorch's export of x.expand(b, 4): the target shape goes through
# Reshape([-1]), Shape, ConstantOfShape, Mul(-1), Equal and Where (a -1
# keeps the dim): all fold, the symbolic batch included.
int64_one = numpy_helper.from_array(np.array([1], np.int64))
run_model("expand_torch_dynamic_batch", batch_shape + [
    helper.make_node("Reshape", ["bs", "minus_one"], ["flat"]),
    helper.make_node("Shape", ["flat"], ["flat_shape"]),
    helper.make_node("ConstantOfShape", ["flat_shape"], ["ones"], value=int64_one),
    helper.make_node("Mul", ["ones", "minus_one"], ["negated"]),
    helper.make_node("Equal", ["flat", "negated"], ["keep"]),
    helper.make_node("Where", ["keep", "ones", "flat"], ["target"]),
    helper.make_node("Expand", ["row", "target"], ["y"])], batch_x,
    batch_inits + [numpy_helper.from_array(np.array([-1], np.int64), "minus_one")],
    np.broadcast_to(row, (3, 4)), x_dims=["batch", 4],
    suffix=lambda fir: " (shape folded)" if not any(
        op in open(fir).read() for op in ("equal", "where", "multiply")) else " (not folded)")
# F.interpolate(x, size=skip.shape[2:]) on a dynamic batch: Resize's sizes
# are [batch, C, 16, 16], the batch the input's own symbolic dim (kept).
image = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
run_model("resize_sizes_dynamic_batch", [
    helper.make_node("Shape", ["x"], ["s"]),
    helper.make_node("Slice", ["s", "zero", "two"], ["bc"]),
    helper.make_node("Concat", ["bc", "hw"], ["sizes"], axis=0),
    helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest")], image,
    [numpy_helper.from_array(np.array([0], np.int64), "zero"),
     numpy_helper.from_array(np.array([2], np.int64), "two"),
     numpy_helper.from_array(np.array([16, 16], np.int64), "hw")],
    image.repeat(2, axis=2).repeat(2, axis=3), x_dims=["batch", 3, 8, 8])
# Einsum as products and sums (np.einsum): batched matmul, an inner
# product and a trace in implicit mode, a transpose, a total, a batch
# diagonal, attention scores, and an ellipsis broadcast against a matrix.
for name, equation, x_shape, w_shape in (
        ("einsum_batch_matmul", "bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
        ("einsum_inner_implicit", "i,i", (5,), (5,)),
        ("einsum_matmul_implicit", "ij,jk", (3, 4), (4, 2)),
        ("einsum_trace_implicit", "ii", (3, 3), None),
        ("einsum_transpose", "ij->ji", (3, 4), None),
        ("einsum_sum", "ij->", (3, 4), None),
        ("einsum_batch_diagonal", "...ii->...i", (2, 3, 3), None),
        ("einsum_attention", "bhid,bhjd->bhij", (1, 2, 3, 4), (1, 2, 5, 4)),
        ("einsum_ellipsis_broadcast", "...ij,jk->...ik", (2, 3, 4), (4, 5)),
        ("einsum_two_summed", "abc,cbd->ad", (2, 3, 4), (4, 3, 5)),
        ("einsum_frobenius", "ij,ij->", (3, 4), (3, 4)),
        ("einsum_transposed_rhs", "ik,jk->ij", (3, 4), (5, 4)),
        ("einsum_outer", "i,j->ij", (3,), (4,)),
        ("einsum_summed_alone", "ijk,jl->il", (2, 3, 4), (3, 5)),
        ("einsum_output_permuted", "bij,bjk->kbi", (2, 3, 4), (2, 4, 5)),
        # A size-1 dim broadcasts against its label's other size, lettered or
        # not, as in NumPy (a broadcast contraction is products and sums).
        ("einsum_broadcast_summed", "ij,jk->ik", (2, 1), (3, 4)),
        ("einsum_broadcast_batch", "bij,bjk->bik", (1, 2, 3), (4, 3, 5))):
    x = rng.standard_normal(x_shape).astype(np.float32)
    inputs, inits, operands = ["x"], [], [x]
    if w_shape:
        w = rng.standard_normal(w_shape).astype(np.float32)
        inputs.append("w")
        inits.append(numpy_helper.from_array(w, "w"))
        operands.append(w)
    # A contraction of two inputs is one matmul (tensor cores for f16).
    run_model(name, [helper.make_node("Einsum", inputs, ["y"], equation=equation)], x, inits,
              np.einsum(equation, *operands).astype(np.float32), opset=12,
              suffix=lambda fir: " (matmul)" if "matmul(" in open(fir).read() else "")
# CumSum (np.cumsum), exclusive and reversed, with an infinity that must
# reach only the sums that include it; ArgMax/ArgMin (np.argmax/np.argmin)
# with a tie and a NaN (the first NaN wins, as in NumPy).
scan = rng.standard_normal((3, 5)).astype(np.float32)
scan[1, 2] = np.inf
for name, axis, exclusive, reverse in (("cumsum_axis1", 1, 0, 0), ("cumsum_exclusive", 1, 1, 0),
                                       ("cumsum_reverse", -1, 0, 1),
                                       ("cumsum_reverse_exclusive", 1, 1, 1),
                                       ("cumsum_axis0", 0, 0, 0)):
    flipped = np.flip(scan, axis) if reverse else scan
    expected = np.cumsum(flipped, axis)
    if exclusive:
        expected = np.concatenate([np.zeros_like(np.take(expected, [0], axis)),
                                   np.delete(expected, -1, axis)], axis)
    expected = np.flip(expected, axis) if reverse else expected
    run_model(name, [helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive,
                                      reverse=reverse)], scan,
              [numpy_helper.from_array(np.array(axis, np.int64), "axis")],
              expected.astype(np.float32))
ties = np.array([[1, 3, 3, 0], [np.nan, 2, np.nan, 5], [-1, -1, -2, -2]], np.float32)
for op, reference in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
    run_model(op.lower() + "_ties_nan", [
        helper.make_node(op, ["x"], ["i"], axis=1, keepdims=0),
        helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)], ties, [],
        reference(ties, axis=1).astype(np.float32))
# LpNormalization (p = 1 and 2; ONNX 1.12 has no node test for it) and
# Hardmax before opset 13 (the input seen as 2-D from the axis on).
norm_x = rng.standard_normal((3, 4, 5)).astype(np.float32)
for p_norm, axis in ((1, 1), (2, -1)):
    reference = np.abs(norm_x).sum(axis, keepdims=True) if p_norm == 1 else \
        np.sqrt((norm_x * norm_x).sum(axis, keepdims=True))
    run_model("lpnormalization_p%d" % p_norm, [
        helper.make_node("LpNormalization", ["x"], ["y"], p=p_norm, axis=axis)], norm_x, [],
        norm_x / reference)
flat = norm_x.reshape(3, 20)
run_model("hardmax_opset11", [helper.make_node("Hardmax", ["x"], ["y"], axis=1)], norm_x, [],
          (flat == flat.max(1, keepdims=True)).astype(np.float32).reshape(3, 4, 5), opset=11)
# TopK from k rounds: ties keep the lower index first (ONNX), a row whose
# remaining values equal the mask value (-inf) still yields the untaken
# indices, and NaN ranks above every number (first when largest, last when
# smallest, as PyTorch).
ranked = np.array([[1, -np.inf, -np.inf, 3], [2, 2, 0, 2], [-1, 5, -1, 5],
                   [np.nan, 1, np.nan, -np.inf]], np.float32)


def topk_order(row, largest):
    """PyTorch's order: NaN above every number; equal values by index."""
    def key(i):
        if np.isnan(row[i]):
            return (0 if largest else 1, 0.0, i)
        return (1 if largest else 0, -row[i] if largest else row[i], i)
    return sorted(range(len(row)), key=key)


for largest in (1, 0):
    order = np.array([topk_order(row, largest)[:3] for row in ranked])
    for output, expected in (("values", np.take_along_axis(ranked, order, 1)),
                             ("indices", order.astype(np.float32))):
        nodes = [helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1,
                                  largest=largest)]
        if output == "indices":
            nodes.append(helper.make_node("Cast", ["indices"], ["y"], to=TensorProto.FLOAT))
        else:
            nodes.append(helper.make_node("Identity", ["values"], ["y"]))
        run_model("topk_%s_%s" % ("largest" if largest else "smallest", output), nodes, ranked,
                  [numpy_helper.from_array(np.array([3], np.int64), "k")], expected)
# Along a symbolic axis (the index vector a range kernel): the same order.
for largest in (1, 0):
    order = np.array([topk_order(row, largest)[:3] for row in ranked])
    run_model("topk_symbolic_axis_%s" % ("largest" if largest else "smallest"), [
        helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1, largest=largest),
        helper.make_node("Cast", ["indices"], ["fi"], to=TensorProto.FLOAT),
        helper.make_node("Concat", ["values", "fi"], ["y"], axis=1)], ranked,
        [numpy_helper.from_array(np.array([3], np.int64), "k")],
        np.concatenate([np.take_along_axis(ranked, order, 1), order.astype(np.float32)], 1),
        x_dims=[4, "n"])
# A run with fewer elements than k along the symbolic axis (invalid ONNX,
# which the import cannot check): the rounds past them give the index 2^62.
short = np.ascontiguousarray(ranked[:, :2])
order = np.array([topk_order(row, 1)[:2] for row in short], np.float32)
run_model("topk_symbolic_axis_short", [
    helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1),
    helper.make_node("Cast", ["indices"], ["y"], to=TensorProto.FLOAT)], short,
    [numpy_helper.from_array(np.array([3], np.int64), "k")],
    np.concatenate([order, np.full((4, 1), 2.0 ** 62, np.float32)], 1), x_dims=[4, "n"])
# k = 0: empty values and indices (concatenated to x, which they leave as is).
run_model("topk_k0", [
    helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1),
    helper.make_node("Cast", ["indices"], ["fi"], to=TensorProto.FLOAT),
    helper.make_node("Concat", ["x", "values", "fi"], ["y"], axis=1)], ranked,
    [numpy_helper.from_array(np.array([0], np.int64), "k")], ranked)
# TopK above k = 64 (a sort), built from ranks instead of rounds: the same
# order on 150 values with many ties, NaNs and an infinity, along the last
# axis and axis 0, as f32, f16 (x cast first) and int64 (no NaN there).
sort_rng = np.random.default_rng(3)  # apart: the cases after keep their data
wide = sort_rng.integers(-20, 20, (3, 150)).astype(np.float32)
wide[0, [5, 70, 149]] = np.nan
wide[2, 10] = np.inf
integral = sort_rng.integers(-5, 5, (2, 90)).astype(np.float32)
for label, data, dtype, k, axis, largest in (
        ("f32_largest", wide, TensorProto.FLOAT, 100, 1, 1),
        ("f32_smallest", wide, TensorProto.FLOAT, 120, 1, 0),
        ("f32_largest_axis0", np.ascontiguousarray(wide.T), TensorProto.FLOAT, 150, 0, 1),
        ("f16_smallest", wide, TensorProto.FLOAT16, 65, 1, 0),
        ("i64_largest", integral, TensorProto.INT64, 90, 1, 1)):
    rows = np.moveaxis(data, axis, -1)
    order = np.moveaxis(np.array([topk_order(row, largest)[:k] for row in rows]), -1, axis)
    for output, expected in (("values", np.take_along_axis(data, order, axis)),
                             ("indices", order.astype(np.float32))):
        nodes = [helper.make_node("Cast", ["x"], ["typed"], to=dtype),
                 helper.make_node("TopK", ["typed", "k"], ["values", "indices"], axis=axis,
                                  largest=largest),
                 helper.make_node("Cast", [output], ["y"], to=TensorProto.FLOAT)]
        run_model("topk_sort_%s_%s" % (label, output), nodes, data,
                  [numpy_helper.from_array(np.array([k], np.int64), "k")], expected)
# An index out of range along its own dim is a run-time error, never a
# read of the neighbouring row (the flat index used to land there).
table = np.arange(12, dtype=np.float32).reshape(3, 4)
for name, node, inits in (
        ("gather_elements_out_of_range",
         helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1),
         [numpy_helper.from_array(np.array([[4], [0], [0]], np.int64), "i")]),
        ("gathernd_out_of_range", helper.make_node("GatherND", ["x", "i"], ["y"]),
         [numpy_helper.from_array(np.array([[0, 4]], np.int64), "i")])):
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [3, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], initializer=inits)
    path = os.path.join(work, name + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    np.save(os.path.join(work, name + ".x.npy"), table)
    for level in ([], ["-O2"]):
        fir = os.path.join(work, name + ".fir")
        subprocess.run([os.path.join(bin_dir, "fusec"), path, "-o", fir] + level, check=True)
        r = subprocess.run([os.path.join(bin_dir, "fusec-run"), fir,
                            "--inputs=" + os.path.join(work, name + ".x.npy")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        ok = r.returncode == 1 and "out of range" in r.stdout
        print("%s%s: %s" % (name, " -O2" if level else "",
                            "run-time error" if ok else "FAIL " + r.stdout.strip()[:200]))
        failures += not ok
# Sinh and Cosh halve inside exp: finite where the result is (sinh(89) in
# f32 is 2.2e38; exp(89) alone overflows). Within 1e-5: x - ln 2 rounds.
wide_x = np.array([88.0, 89.0, -89.0, 0.5, -3.0], np.float32)
for op, reference in (("Sinh", np.sinh), ("Cosh", np.cosh)):
    name = op.lower() + "_near_overflow"
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], name, [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = os.path.join(work, name + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    np.save(os.path.join(work, name + ".x.npy"), wide_x)
    fir, out = os.path.join(work, name + ".fir"), os.path.join(work, name + ".out")
    subprocess.run([os.path.join(bin_dir, "fusec"), path, "-O2", "-o", fir], check=True)
    subprocess.run([os.path.join(bin_dir, "fusec-run"), fir, "--inputs=" +
                    os.path.join(work, name + ".x.npy"), "--outputs=" + out], check=True)
    got = np.load(os.path.join(out, "out0.npy"))
    ok = bool(np.all(np.isfinite(got))) and np.allclose(got, reference(wide_x.astype(np.float64)),
                                                       rtol=1e-5)
    print("%s: %s" % (name, "ok" if ok else "FAIL got %s" % got))
    failures += not ok
# Integer constants keep their dtype through folding: i8 wraps (127 + 1 is
# -128) and i32 stays i32; only int64 values fold as shape arithmetic.
for dtype, onnx_type, fir_type, a, b in ((np.int8, TensorProto.INT8, "i8", 127, 1),
                                         (np.int32, TensorProto.INT32, "i32", 1, 2)):
    name = "fold_add_%s" % fir_type
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])], name, [],
        [helper.make_tensor_value_info("y", onnx_type, [1])],
        initializer=[numpy_helper.from_array(np.array([a], dtype), "a"),
                     numpy_helper.from_array(np.array([b], dtype), "b")])
    path = os.path.join(work, name + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    text = subprocess.run([os.path.join(bin_dir, "fusec"), path], stdout=subprocess.PIPE,
                          universal_newlines=True).stdout
    want = "dense<[%d]> : %s[1]" % (int((np.array([a], dtype) + np.array([b], dtype))[0]),
                                    fir_type)
    ok = want in text
    print("%s: %s" % (name, "ok" if ok else "FAIL " + text.strip()[:200]))
    failures += not ok


def window_outputs(size, kernel, stride, pad_begin, pad_end, dilation, ceil):
    """ONNX's output count along one dim (ceil_mode drops a last window
    that starts in the end padding)."""
    span = size + pad_begin + pad_end - ((kernel - 1) * dilation + 1)
    out = (-(-span // stride) if ceil else span // stride) + 1
    return out - 1 if ceil and (out - 1) * stride >= size + pad_begin else out


def onnx_pool_3d(x, kernel, strides, pads, dilations, ceil, is_max):
    """A 3-D pool by its definition: padding never counts."""
    dims = x.shape[2:]
    outs = [window_outputs(dims[d], kernel[d], strides[d], pads[d], pads[3 + d], dilations[d],
                           ceil) for d in range(3)]
    y = np.zeros(x.shape[:2] + tuple(outs), np.float32)
    for o in np.ndindex(*outs):
        taps = [[o[d] * strides[d] - pads[d] + k * dilations[d] for k in range(kernel[d])
                 if 0 <= o[d] * strides[d] - pads[d] + k * dilations[d] < dims[d]]
                for d in range(3)]
        win = x[:, :, taps[0]][:, :, :, taps[1]][:, :, :, :, taps[2]]
        y[(slice(None), slice(None)) + o] = (win.max(axis=(2, 3, 4)) if is_max
                                              else win.mean(axis=(2, 3, 4)))
    return y


def conv_3d_ref(x, w, bias, strides, pads, dilations, groups):
    """A 3-D convolution by its definition, one kernel tap at a time."""
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[d], pads[3 + d])
                                                         for d in range(3)])
    outs = [window_outputs(x.shape[2 + d], w.shape[2 + d], strides[d], pads[d], pads[3 + d],
                           dilations[d], False) for d in range(3)]
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    y = np.zeros((x.shape[0], w.shape[0]) + tuple(outs))
    for k in np.ndindex(*w.shape[2:]):
        tap = xp[(slice(None), slice(None)) + tuple(
            slice(k[d] * dilations[d], k[d] * dilations[d] + (outs[d] - 1) * strides[d] + 1,
                  strides[d]) for d in range(3))]
        for g in range(groups):
            y[:, g * og:(g + 1) * og] += np.einsum(
                "ncdhw,oc->nodhw", tap[:, g * cg:(g + 1) * cg],
                w[g * og:(g + 1) * og, :, k[0], k[1], k[2]])
    if bias is not None:
        y += bias.reshape(1, -1, 1, 1, 1)
    return y.astype(np.float32)


# 3-D convolutions (as one 2-D convolution over depth taps folded into the
# channels) and pools (the taps combined, one 2-D pool): strides,
# dilations, asymmetric pads, groups, depthwise, auto_pad, ceil_mode.
vol = rng.standard_normal((2, 4, 5, 6, 7)).astype(np.float32)
for label, w_shape, attrs in (
        ("plain", (3, 4, 3, 3, 3), {}),
        ("strided_dilated", (6, 4, 2, 3, 2),
         {"strides": [2, 1, 2], "dilations": [2, 1, 2], "pads": [1, 0, 2, 0, 1, 1]}),
        ("groups", (4, 2, 3, 1, 2), {"group": 2, "pads": [1, 1, 0, 1, 0, 1]}),
        ("depthwise", (4, 1, 3, 3, 3), {"group": 4, "auto_pad": "SAME_UPPER"})):
    wv = rng.standard_normal(w_shape).astype(np.float32)
    bv = rng.standard_normal(w_shape[0]).astype(np.float32)
    pads = attrs.get("pads", [0] * 6)
    if attrs.get("auto_pad") == "SAME_UPPER":  # stride 1: kernel - 1, the extra one after
        pads = [(k - 1) // 2 for k in w_shape[2:]] + [k // 2 for k in w_shape[2:]]
    ref = conv_3d_ref(vol, wv, bv, attrs.get("strides", [1] * 3), pads,
                      attrs.get("dilations", [1] * 3), attrs.get("group", 1))
    check("conv3d_" + label, "Conv", vol, [("w", wv), ("b", bv)], attrs, ref,
          tolerance=1e-5)  # sums of up to 108 f32 products
    # A symbolic batch: one 2-D convolution per output depth.
    run_model("conv3d_dynamic_batch_" + label,
              [helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)], vol,
              [numpy_helper.from_array(wv, "w"), numpy_helper.from_array(bv, "b")], ref,
              x_dims=["batch", 4, 5, 6, 7], tolerance=1e-5)
for op, is_max in (("MaxPool", True), ("AveragePool", False)):
    for label, kernel, strides, pads, dilations, ceil in (
            ("plain", [2, 2, 2], [2, 2, 2], [0] * 6, [1] * 3, 0),
            ("padded", [3, 2, 3], [2, 1, 2], [1, 0, 1, 1, 1, 0], [1] * 3, 0),
            ("ceil_drop", [2, 2, 2], [2, 2, 2], [1, 1, 1, 1, 1, 1], [1] * 3, 1),
            ("ceil_depth", [2, 3, 3], [2, 3, 3], [0] * 6, [1] * 3, 1),
            ("dilated", [2, 2, 2], [1, 2, 1], [0] * 6, [2, 1, 2], 0)):
        if not is_max and dilations != [1] * 3:
            continue  # AveragePool takes dilations from opset 19
        attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads, "ceil_mode": ceil}
        if is_max:
            attrs["dilations"] = dilations
        check("%s_3d_%s" % (op.lower(), label), op, vol, [], attrs,
              onnx_pool_3d(vol, kernel, strides, pads, dilations, ceil, is_max))
# A dynamic batch: the pool keeps it (the convolutions are above).
run_model("maxpool_3d_dynamic_batch", [helper.make_node(
    "MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2], strides=[1, 2, 2])], vol, [],
    onnx_pool_3d(vol, [2, 2, 2], [1, 2, 2], [0] * 6, [1] * 3, 0, True),
    x_dims=["batch", 4, 5, 6, 7])

# Opsets 1 to 6: a binary op's `broadcast` with an `axis` lines B up with A
# from that axis (NumPy's rule: from the end); Gemm's and BatchNormalization's
# hints; consumed_inputs; Cast naming its type; Reshape's shape attribute;
# Concat's default axis 1; PRelu's slope per channel.
b34 = rng.standard_normal((3, 4)).astype(np.float32)
x2345 = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
check("legacy_add_axis", "Add", x2345, [("b", b34)], {"broadcast": 1, "axis": 1},
      x2345 + b34.reshape(1, 3, 4, 1), opset=6)
b45 = rng.standard_normal((4, 5)).astype(np.float32)
check("legacy_mul_trailing", "Mul", x2345, [("b", b45)], {"broadcast": 1}, x2345 * b45, opset=6)
check("legacy_sub_negative_axis", "Sub", x2345, [("b", b34)], {"broadcast": 1, "axis": -3},
      x2345 - b34.reshape(1, 3, 4, 1), opset=6)
check("legacy_relu_consumed_inputs", "Relu", x2345, [], {"consumed_inputs": [0]},
      np.maximum(x2345, 0), opset=5)
check("legacy_reshape_attribute", "Reshape", x2345, [], {"shape": [6, -1]},
      x2345.reshape(6, -1), opset=4)
run_model("legacy_concat_default_axis", [helper.make_node("Concat", ["x", "x"], ["y"])],
          x2345, [], np.concatenate([x2345, x2345], axis=1), opset=3)
run_model("legacy_cast_named_type", [
    helper.make_node("Cast", ["x"], ["i"], to="INT32"),
    helper.make_node("Cast", ["i"], ["y"], to="FLOAT")], x2345 * 4, [],
    np.trunc(x2345 * 4), opset=5)
scale, bias, mean, var = (rng.uniform(0.5, 1.5, 3).astype(np.float32) for _ in range(4))
check("legacy_batchnorm", "BatchNormalization", x2345,
      [("s", scale), ("bias", bias), ("mean", mean), ("var", var)],
      {"is_test": 1, "spatial": 1, "consumed_inputs": [0, 0, 0, 1, 1], "epsilon": 1e-5},
      ((x2345 - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5) *
       scale.reshape(1, 3, 1, 1) + bias.reshape(1, 3, 1, 1)).astype(np.float32), opset=5)
slope = rng.standard_normal(3).astype(np.float32)
check("legacy_prelu_channels", "PRelu", x2345, [("slope", slope)], {},
      np.where(x2345 < 0, x2345 * slope.reshape(1, 3, 1, 1), x2345), opset=6)
# Pad-1's `paddings` attribute; Upsample-1's height_scale and width_scale
# (nearest; `bilinear` is its name for linear, asymmetric as Upsample-7).
check("legacy_pad_paddings", "Pad", x2345, [], {"paddings": [0, 1, 0, 2, 0, 0, 1, 1],
                                                "value": 1.5},
      np.pad(x2345, [(0, 0), (1, 0), (0, 1), (2, 1)], constant_values=1.5), opset=1)
check("legacy_upsample_nearest", "Upsample", x2345, [], {"height_scale": 2.0,
                                                         "width_scale": 3.0},
      x2345.repeat(2, axis=2).repeat(3, axis=3), opset=1)
row4 = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
check("legacy_upsample_bilinear", "Upsample", row4, [], {"height_scale": 1.0,
                                                         "width_scale": 2.0,
                                                         "mode": "bilinear"},
      np.float32([0, 0.5, 1, 1.5, 2, 2.5, 3, 3]).reshape(1, 1, 1, 8), opset=1)
# BatchNormalization with spatial = 0 (opsets 1 to 8): statistics per
# element of a sample, shaped as the input's dims after the batch; and
# ImageScaler (opsets 1 to 9, Tiny YOLOv2's first node).
stats = [rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32) for _ in range(4)]
check("batchnorm_per_element", "BatchNormalization", x2345,
      list(zip(("s", "bias", "mean", "var"), stats)), {"spatial": 0, "epsilon": 1e-3},
      ((x2345 - stats[2]) / np.sqrt(stats[3] + 1e-3) * stats[0] + stats[1]).astype(np.float32),
      opset=7, tolerance=1e-5)
check("image_scaler", "ImageScaler", x2345, [], {"scale": 0.5, "bias": [1.0, -2.0, 3.0]},
      x2345 * 0.5 + np.float32([1, -2, 3]).reshape(1, 3, 1, 1), opset=8)


def conv_transpose_3d_ref(x, w, strides, pads, dilations, groups, output_padding):
    """ONNX ConvTranspose, 3-D, by scattering each kernel tap."""
    n, cin, d, h, wd = x.shape
    mg, kernel = w.shape[1], w.shape[2:]
    cg = cin // groups
    full = [(x.shape[2 + a] - 1) * strides[a] + (kernel[a] - 1) * dilations[a] + 1 +
            output_padding[a] for a in range(3)]
    y = np.zeros((n, mg * groups) + tuple(full))
    for k in np.ndindex(*kernel):
        at = tuple(slice(k[a] * dilations[a], k[a] * dilations[a] +
                         (x.shape[2 + a] - 1) * strides[a] + 1, strides[a]) for a in range(3))
        for g in range(groups):
            y[(slice(None), slice(g * mg, (g + 1) * mg)) + at] += np.einsum(
                "ncdhw,cm->nmdhw", x[:, g * cg:(g + 1) * cg],
                w[g * cg:(g + 1) * cg, :, k[0], k[1], k[2]])
    return y[(slice(None), slice(None)) + tuple(
        slice(pads[a], full[a] - pads[3 + a]) for a in range(3))].astype(np.float32)


# 3-D ConvTranspose (a 3-D convolution of the zero-inserted input): constant
# weights with groups, strides, dilations, asymmetric pads and
# output_padding; weights computed at run time; auto_pad SAME_UPPER.
xv = rng.standard_normal((1, 4, 3, 4, 3)).astype(np.float32)
wv = rng.standard_normal((4, 3, 2, 3, 2)).astype(np.float32)
bv = rng.standard_normal(6).astype(np.float32)
ct_attrs = {"strides": [2, 1, 3], "dilations": [1, 2, 1], "pads": [1, 0, 0, 0, 2, 1],
            "group": 2, "output_padding": [1, 0, 2]}
check("convtranspose_3d", "ConvTranspose", xv, [("w", wv), ("b", bv)], ct_attrs,
      conv_transpose_3d_ref(xv, wv, [2, 1, 3], [1, 0, 0, 0, 2, 1], [1, 2, 1], 2, [1, 0, 2]) +
      bv.reshape(1, -1, 1, 1, 1), tolerance=1e-5)
run_model("convtranspose_3d_runtime_weights", [
    helper.make_node("Add", ["w0", "zero"], ["w"]),
    helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2, 1])], xv,
    [numpy_helper.from_array(wv[:, :2], "w0"), numpy_helper.from_array(np.float32(0), "zero")],
    conv_transpose_3d_ref(xv, wv[:, :2], [2, 2, 1], [0] * 6, [1] * 3, 1, [0] * 3),
    tolerance=1e-5)
same = conv_transpose_3d_ref(xv, wv, [2, 2, 2], [0] * 6, [1] * 3, 2, [0] * 3)
excess = [same.shape[2 + a] - 2 * xv.shape[2 + a] for a in range(3)]  # SAME_UPPER: rest after
check("convtranspose_3d_same_upper", "ConvTranspose", xv, [("w", wv)],
      {"strides": [2, 2, 2], "group": 2, "auto_pad": "SAME_UPPER"},
      same[:, :, excess[0] // 2:excess[0] // 2 + 6, excess[1] // 2:excess[1] // 2 + 8,
           excess[2] // 2:excess[2] // 2 + 6], tolerance=1e-5)
# Found by an adversarial sweep: padding beside a symbolic dim (a splat
# over [batch, ...] is a 0-d splat broadcast: a constant's shape is static),
# in Pad and in a 3-D pool's depth padding; a window wholly in padding gives
# the 2-D pool's answer in 3-D too (the lowest finite value, 0); Dropout's
# mask before opset 10 has the input's type.
x23 = rng.standard_normal((2, 3)).astype(np.float32)
check_pads = np.array([0, 1, 0, 2], np.int64)
run_model("pad_dynamic_batch", [helper.make_node("Pad", ["x", "pads"], ["y"])], x23,
          [numpy_helper.from_array(check_pads, "pads")], np.pad(x23, [(0, 0), (1, 2)]),
          x_dims=["batch", 3])
small = rng.standard_normal((2, 1, 2, 2, 2)).astype(np.float32)
run_model("maxpool_3d_dynamic_batch_depth_pads", [helper.make_node(
    "MaxPool", ["x"], ["y"], kernel_shape=[2, 1, 1], pads=[1, 0, 0, 0, 0, 0])], small, [],
    onnx_pool_3d(small, [2, 1, 1], [1, 1, 1], [1, 0, 0, 0, 0, 0], [1] * 3, 0, True),
    x_dims=["batch", 1, 2, 2, 2])
column = np.float32([1, 2, 3]).reshape(1, 1, 3, 1, 1)
for op, first in (("MaxPool", np.finfo(np.float32).min), ("AveragePool", 0)):
    check("%s_3d_window_in_padding" % op.lower(), op, column, [],
          {"kernel_shape": [2, 1, 1], "pads": [2, 0, 0, 0, 0, 0]},
          np.float32([first, 1, 1.5 if op == "AveragePool" else 2,
                      2.5 if op == "AveragePool" else 3]).reshape(1, 1, 4, 1, 1), opset=11)
run_model("dropout_mask_opset7", [helper.make_node("Dropout", ["x"], ["kept", "mask"]),
                                  helper.make_node("Mul", ["kept", "mask"], ["y"])],
          x23, [], x23, opset=7)


def quantize(x, scale, zero, lo, hi, axis=1):
    """ONNX's QuantizeLinear (round half to even, saturate), per tensor or
    per slice along `axis`, in float32."""
    shape = [1] * x.ndim
    if np.ndim(scale):
        shape[axis] = -1
    scale = np.float32(scale).reshape(shape) if np.ndim(scale) else np.float32(scale)
    zero = np.float32(zero).reshape(shape) if np.ndim(zero) else np.float32(zero)
    return np.clip(np.rint(x / scale) + zero, lo, hi).astype(np.float32)


def dequantize(q, scale, zero, axis=1):
    shape = [1] * q.ndim
    if np.ndim(scale):
        shape[axis] = -1
    scale = np.float32(scale).reshape(shape) if np.ndim(scale) else np.float32(scale)
    zero = np.float32(zero).reshape(shape) if np.ndim(zero) else np.float32(zero)
    return ((q.astype(np.float32) - zero) * scale).astype(np.float32)


# QDQ (QuantizeLinear -> DequantizeLinear): fake quantization in f32, equal
# to ONNX's definition. Per tensor with a uint8 zero point, per channel with
# int8 ones, and a quantized convolution as ONNX Runtime's quantizer writes
# it: int8 weights per output channel, an int32 bias, uint8 activations.
qx = (rng.standard_normal((2, 3, 4, 5)) * 4).astype(np.float32)
run_model("qdq_uint8", [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], qx,
          [numpy_helper.from_array(np.float32(0.05), "s"),
           numpy_helper.from_array(np.uint8(128), "z")],
          dequantize(quantize(qx, 0.05, 128, 0, 255), 0.05, 128))
cs, cz = np.float32([0.02, 0.05, 0.1]), np.int8([-3, 0, 5])
run_model("qdq_int8_per_channel", [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                                   helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
          qx, [numpy_helper.from_array(cs, "s"), numpy_helper.from_array(cz, "z")],
          dequantize(quantize(qx, cs, cz, -128, 127), cs, cz))
w_q = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
w_s = np.float32([0.01, 0.02, 0.015, 0.03])
x_s, x_z = np.float32(0.04), np.uint8(120)
b_q = rng.integers(-500, 500, 4).astype(np.int32)
b_s = (x_s * w_s).astype(np.float32)
xq = dequantize(quantize(qx, x_s, x_z, 0, 255), x_s, x_z)
wf = dequantize(w_q, w_s, np.zeros(4), axis=0)
bf = (b_q.astype(np.float32) * b_s).astype(np.float32)
conv = conv_3d_ref(xq[:, :, None], wf[:, :, None], bf, [1, 1, 1], [0, 1, 1, 0, 1, 1], [1] * 3,
                   1)[:, :, 0]
relu = np.maximum(conv, 0)
run_model("qdq_conv_relu", [
    helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
    helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
    helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"], axis=0),
    helper.make_node("DequantizeLinear", ["bq", "bs"], ["bd"], axis=0),
    helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c"], ["r"]),
    helper.make_node("QuantizeLinear", ["r", "rs", "rz"], ["rq"]),
    helper.make_node("DequantizeLinear", ["rq", "rs", "rz"], ["y"])], qx,
    [numpy_helper.from_array(v, n) for n, v in (
        ("xs", x_s), ("xz", x_z), ("wq", w_q), ("ws", w_s), ("bq", b_q), ("bs", b_s),
        ("rs", np.float32(0.1)), ("rz", np.uint8(0)))],
    dequantize(quantize(relu, 0.1, 0, 0, 255), 0.1, 0), tolerance=1e-5)
mw = rng.integers(0, 256, (5, 3)).astype(np.uint8)
run_model("dequantize_uint8_weights", [
    helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
    helper.make_node("MatMul", ["x", "wd"], ["y"])], qx,
    [numpy_helper.from_array(mw, "w"), numpy_helper.from_array(np.float32(0.5), "ws"),
     numpy_helper.from_array(np.uint8(100), "wz")],
    qx @ dequantize(mw, 0.5, 100), tolerance=1e-5)

# Products of symbolic dims (ONNXGrouped.cpp): multi-head attention's
# view(batch * heads, seq, head_dim) on a dynamic batch, a linear layer on
# x.view(-1, features), reductions and normalizations of grouped values.
# Each model is declared with symbolic dims and run at other sizes.
def shape_of(prefix, source, picks):
    """Nodes giving `prefix`_i = Unsqueeze(Gather(Shape(source), i)) for i in picks."""
    nodes = [helper.make_node("Shape", [source], [prefix + "_s"])]
    for i in picks:
        nodes += [helper.make_node("Gather", [prefix + "_s", "i%d" % i], [prefix + "_g%d" % i]),
                  helper.make_node("Unsqueeze", [prefix + "_g%d" % i, "axis0"],
                                   [prefix + "_u%d" % i])]
    return nodes


index_inits = [numpy_helper.from_array(np.int64(i), "i%d" % i) for i in range(3)] + [
    numpy_helper.from_array(np.int64([0]), "axis0"),
    numpy_helper.from_array(np.int64(4), "heads")]
ga = rng.standard_normal((3, 5, 32)).astype(np.float32)
mask = np.triu(np.full((5, 5), -1e4, np.float32), 1)
q = ga.reshape(3 * 4, 5, 8)
scores = q @ q.transpose(0, 2, 1) / np.float32(2) + mask
probs = np.exp(scores - scores.max(-1, keepdims=True))
probs /= probs.sum(-1, keepdims=True)
attention = (probs @ q).reshape(3, 5, 32)
run_model("grouped_attention", shape_of("x", "x", [0, 1]) + [
    helper.make_node("Mul", ["x_g0", "heads"], ["bh"]),
    helper.make_node("Unsqueeze", ["bh", "axis0"], ["bh1"]),
    helper.make_node("Concat", ["bh1", "x_u1", "hd"], ["qshape"], axis=0),
    helper.make_node("Reshape", ["x", "qshape"], ["q"]),
    helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
    helper.make_node("MatMul", ["q", "qt"], ["qk"]),
    helper.make_node("Div", ["qk", "two"], ["scaled"]),
    helper.make_node("Add", ["scaled", "mask"], ["masked"]),
    helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
    helper.make_node("MatMul", ["p", "q"], ["o"]),
    helper.make_node("Concat", ["x_u0", "x_u1", "e"], ["oshape"], axis=0),
    helper.make_node("Reshape", ["o", "oshape"], ["y"])], ga,
    index_inits + [numpy_helper.from_array(v, n) for n, v in (
        ("hd", np.int64([8])), ("e", np.int64([32])), ("two", np.float32(2)),
        ("mask", mask))],
    attention, x_dims=["batch", 5, 32], tolerance=1e-5)
gw = rng.standard_normal((8, 32)).astype(np.float32)
gb = rng.standard_normal(8).astype(np.float32)
rows = ga.reshape(-1, 32)
linear = np.maximum(rows @ gw.T + gb, 0)
run_model("grouped_linear", shape_of("x", "x", [0, 1]) + [
    helper.make_node("Reshape", ["x", "flat"], ["rows"]),
    helper.make_node("Gemm", ["rows", "w", "b"], ["lin"], transB=1),
    helper.make_node("Relu", ["lin"], ["act"]),
    helper.make_node("ReduceMean", ["act"], ["mean"], axes=[1]),
    helper.make_node("Sub", ["act", "mean"], ["centered"]),
    helper.make_node("Concat", ["x_u0", "x_u1", "eight"], ["oshape"], axis=0),
    helper.make_node("Reshape", ["centered", "oshape"], ["y"])], ga,
    index_inits + [numpy_helper.from_array(v, n) for n, v in (
        ("flat", np.int64([-1, 32])), ("w", gw), ("b", gb), ("eight", np.int64([8])))],
    (linear - linear.mean(1, keepdims=True)).reshape(3, 5, 8), x_dims=["batch", "seq", 32],
    tolerance=1e-5)
# A reduction over the grouped dim reduces all its factors; LayerNormalization
# over a plain dim; Flatten to a product.
flat = ga.reshape(3 * 5, 32)
norm = (flat - flat.mean(-1, keepdims=True)) / np.sqrt(flat.var(-1, keepdims=True) + 1e-5)
run_model("grouped_reduce", [
    helper.make_node("Flatten", ["x"], ["rows"], axis=2),
    helper.make_node("LayerNormalization", ["rows", "gamma"], ["n"], axis=-1),
    helper.make_node("ReduceSum", ["n", "axes"], ["y"], keepdims=0)], ga,
    [numpy_helper.from_array(np.ones(32, np.float32), "gamma"),
     numpy_helper.from_array(np.int64([0]), "axes")],
    norm.sum(0), x_dims=["batch", "seq", 32], opset=17, tolerance=1e-4)
# keepdims over a grouped dim: its unit axes are one plain dim again, which
# broadcasts against the grouped value (as unit axes) and may be an output.
rows4 = ga.reshape(3 * 4, 40)
centered4 = rows4 - rows4.max(0, keepdims=True)
run_model("grouped_keepdims", shape_of("x", "x", [0]) + [
    helper.make_node("Mul", ["x_g0", "heads"], ["b4"]),
    helper.make_node("Unsqueeze", ["b4", "axis0"], ["b41"]),
    helper.make_node("Concat", ["b41", "forty"], ["shape"], axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["r"]),
    helper.make_node("ReduceMax", ["r"], ["m"], axes=[0], keepdims=1),
    helper.make_node("Sub", ["r", "m"], ["d"]),
    helper.make_node("ReduceSum", ["d", "axis0"], ["y"], keepdims=1)], ga,
    index_inits + [numpy_helper.from_array(np.int64([40]), "forty")],
    centered4.sum(0, keepdims=True), x_dims=["batch", 5, 32], tolerance=1e-5)
# Operators with axes along the plain dims of a grouped value, ones that
# broadcast to a product (Expand, ConstantOfShape: zeros_like), the same
# product factored two ways ([batch, 5] and [5, batch] rows), a matrix-vector
# product, and ReduceSum-13 with empty axes (all of them).
r4 = ga.reshape(12, 5, 8)
gv = rng.standard_normal(8).astype(np.float32)
pieces = np.split(r4, [3], axis=2)
joined = np.concatenate([pieces[1], pieces[0]], axis=2)        # [12, 5, 8]
picked = joined[:, 1:4, :][:, :, [0, 2]]                        # [12, 3, 2]
unsq = np.expand_dims(picked, 1)                                # [12, 1, 3, 2]
arg = np.argmax(r4, axis=2)                                     # [12, 5]
combined = (np.squeeze(unsq, 1).sum(-1) + np.zeros_like(arg, np.float32)[:, :3] +
            (r4 @ gv)[:, :3] + arg[:, :3].astype(np.float32))
rows_bt = ga.reshape(15, 32)
rows_tb = ga.transpose(1, 0, 2).reshape(15, 32)
run_model("grouped_axes", shape_of("x", "x", [0]) + [
    helper.make_node("Mul", ["x_g0", "heads"], ["b4"]),
    helper.make_node("Unsqueeze", ["b4", "axis0"], ["b41"]),
    helper.make_node("Concat", ["b41", "five_eight"], ["shape"], axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["r"]),
    helper.make_node("Split", ["r", "split"], ["p0", "p1"], axis=2),
    helper.make_node("Concat", ["p1", "p0"], ["joined"], axis=-1),
    helper.make_node("Slice", ["joined", "one", "four", "axis1"], ["sliced"]),
    helper.make_node("Gather", ["sliced", "pick"], ["picked"], axis=2),
    helper.make_node("Unsqueeze", ["picked", "axis1"], ["unsq"]),
    helper.make_node("Squeeze", ["unsq", "axis1"], ["sq"]),
    helper.make_node("ReduceSum", ["sq", "minus1"], ["sums"], keepdims=0),
    helper.make_node("ArgMax", ["r"], ["argi"], axis=2, keepdims=0),
    helper.make_node("Cast", ["argi"], ["argf"], to=TensorProto.FLOAT),
    helper.make_node("Shape", ["argf"], ["arg_shape"]),
    helper.make_node("ConstantOfShape", ["arg_shape"], ["zeros"]),
    helper.make_node("MatMul", ["r", "v"], ["rv"]),
    helper.make_node("Add", ["argf", "zeros"], ["a0"]),
    helper.make_node("Add", ["a0", "rv"], ["a1"]),
    helper.make_node("Slice", ["a1", "zero", "three", "axis1"], ["a2"]),
    helper.make_node("Add", ["sums", "a2"], ["total"]),
    helper.make_node("ReduceSum", ["total", "empty"], ["y"], keepdims=0)], ga,
    index_inits + [numpy_helper.from_array(v, n) for n, v in (
        ("five_eight", np.int64([5, 8])), ("split", np.int64([3, 5])),
        ("one", np.int64([1])), ("four", np.int64([4])), ("axis1", np.int64([1])),
        ("pick", np.int64([0, 2])), ("minus1", np.int64([-1])), ("v", gv),
        ("zero", np.int64([0])), ("three", np.int64([3])), ("empty", np.zeros(0, np.int64)))],
    np.float32(combined.sum()), x_dims=["batch", 5, 32], tolerance=1e-4)
grow = rng.standard_normal((1, 32)).astype(np.float32)
refactored = ((rows_bt + rows_tb) * grow).reshape(3, 5, 32)
run_model("grouped_refactor", shape_of("x", "x", [0, 1]) + [
    helper.make_node("Reshape", ["x", "flat"], ["bt"]),
    helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
    helper.make_node("Reshape", ["xt", "flat"], ["tb"]),
    helper.make_node("Add", ["bt", "tb"], ["both"]),
    helper.make_node("Shape", ["both"], ["both_shape"]),
    helper.make_node("Expand", ["row", "both_shape"], ["rows"]),
    helper.make_node("Mul", ["both", "rows"], ["scaled"]),
    helper.make_node("Concat", ["x_u0", "x_u1", "e"], ["oshape"], axis=0),
    helper.make_node("Reshape", ["scaled", "oshape"], ["y"])], ga,
    index_inits + [numpy_helper.from_array(v, n) for n, v in (
        ("flat", np.int64([-1, 32])), ("e", np.int64([32])),
        ("row", grow))],
    refactored, x_dims=["batch", "seq", 32], tolerance=1e-5)
# Opset 11: Softmax over the dims from axis 1 on of a [batch * seq, 2, 4]
# (its leading dims kept, not merged by a -1), joined with rows grouped
# [seq, batch] (reshaped to [batch, seq] first).
rows_soft = ga[:, :, :8].reshape(-1, 2, 4)
soft = np.exp(rows_soft - rows_soft.max((1, 2), keepdims=True))
soft = (soft / soft.sum((1, 2), keepdims=True)).reshape(-1, 8)
run_model("grouped_opset11", [
    helper.make_node("Reshape", ["x", "rows_2_4"], ["r"]),
    helper.make_node("Softmax", ["r"], ["s"], axis=1),
    helper.make_node("Reshape", ["s", "rows_8"], ["bt"]),
    helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
    helper.make_node("Reshape", ["xt", "rows_8"], ["tb"]),
    helper.make_node("Concat", ["bt", "tb"], ["joined"], axis=1),
    helper.make_node("ReduceSum", ["joined"], ["y"], axes=[0], keepdims=0)],
    ga[:, :, :8].copy(),
    [numpy_helper.from_array(np.int64([-1, 2, 4]), "rows_2_4"),
     numpy_helper.from_array(np.int64([-1, 8]), "rows_8")],
    np.concatenate([soft, ga[:, :, :8].transpose(1, 0, 2).reshape(-1, 8)], 1).sum(0),
    x_dims=["batch", "seq", 8], opset=11, tolerance=1e-5)
# Shape arithmetic on symbolic dims: (batch * 4) / 4 is batch, seq + seq is
# seq * 2 (a grouped dim), (seq + seq) - seq is seq.
run_model("symbolic_arithmetic", shape_of("x", "x", [0, 1]) + [
    helper.make_node("Mul", ["x_g0", "heads"], ["b4"]),
    helper.make_node("Div", ["b4", "heads"], ["b"]),
    helper.make_node("Add", ["x_g1", "x_g1"], ["t2"]),
    helper.make_node("Sub", ["t2", "x_g1"], ["t"]),
    helper.make_node("Unsqueeze", ["b", "axis0"], ["b1"]),
    helper.make_node("Unsqueeze", ["t2", "axis0"], ["t21"]),
    helper.make_node("Unsqueeze", ["t", "axis0"], ["t1"]),
    helper.make_node("Concat", ["b1", "t21", "sixteen"], ["doubled"], axis=0),
    helper.make_node("Reshape", ["x", "doubled"], ["halves"]),
    helper.make_node("Neg", ["halves"], ["negated"]),
    helper.make_node("Concat", ["b1", "t1", "e"], ["back"], axis=0),
    helper.make_node("Reshape", ["negated", "back"], ["y"])], ga,
    index_inits + [numpy_helper.from_array(v, n) for n, v in (
        ("sixteen", np.int64([16])), ("e", np.int64([32])))],
    -ga, x_dims=["batch", "seq", 32])
# Tile by a symbolic repeat of a size-1 dim (nn.MultiheadAttention's bias_k
# tiled to the batch): a broadcast.
trow = rng.standard_normal((1, 32)).astype(np.float32)
run_model("tile_symbolic", shape_of("x", "x", [0]) + [
    helper.make_node("Concat", ["x_u0", "one_one"], ["reps"], axis=0),
    helper.make_node("Tile", ["row", "reps"], ["tiled"]),
    helper.make_node("Unsqueeze", ["tiled", "axis1"], ["tiled3"]),
    helper.make_node("Add", ["x", "tiled3"], ["y"])], ga,
    index_inits + [numpy_helper.from_array(v, n) for n, v in (
        ("one_one", np.int64([1])), ("row", trow), ("axis1", np.int64([1])))],
    ga + trow[:, None, :], x_dims=["batch", 5, 32])
# A uint8 constant moved, compared and cast (an older GPT-2's causal mask
# buffer: tril of ones as uint8, sliced to the sequence, cast to bool; 200
# stays 200, not -56).
tril = np.tril(np.ones((8, 8), np.uint8))[None, None]
tril[0, 0, 4, 0] = 200
scores = rng.standard_normal((1, 1, 5, 5)).astype(np.float32)
sliced = tril[:, :, :5, :5]
run_model("uint8_mask", [
    helper.make_node("Slice", ["bias", "zeros2", "five2", "axes23"], ["window"]),
    helper.make_node("Cast", ["window"], ["mask"], to=TensorProto.BOOL),
    helper.make_node("Where", ["mask", "x", "minus"], ["masked"]),
    helper.make_node("Equal", ["window", "big"], ["is_big"]),
    helper.make_node("Cast", ["window"], ["wf"], to=TensorProto.FLOAT),
    helper.make_node("Where", ["is_big", "wf", "masked"], ["y"])], scores,
    [numpy_helper.from_array(v, n) for n, v in (
        ("bias", tril), ("zeros2", np.int64([0, 0])), ("five2", np.int64([5, 5])),
        ("axes23", np.int64([2, 3])), ("minus", np.float32(-1e4)), ("big", np.uint8(200)))],
    np.where(sliced == 200, sliced.astype(np.float32),
             np.where(sliced != 0, scores, np.float32(-1e4))))
# Pow of an integer base and a float exponent that is no integer: raised in
# floating point and truncated, as ONNX Runtime does (5 ^ 0.5 = 2, not the
# 5 ^ 0 = 1 of converting the exponent to the base's type); an integral
# float exponent stays exact.
ints = np.array([[2, -3, 5, 4, 9, 7]], np.float32)
for label, exponent in (("pow_int_float_exponent", [3.0, 2.0, 0.5, 0.5, 1.5, 0.25]),
                        ("pow_int_integral_exponent", [3.0, 2.0, 1.0, 0.0, 2.0, 3.0])):
    e = np.array(exponent, np.float32)
    run_model(label, [
        helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT32),
        helper.make_node("Pow", ["xi", "e"], ["p"]),
        helper.make_node("Cast", ["p"], ["y"], to=TensorProto.FLOAT)], ints,
        [numpy_helper.from_array(e, "e")],
        np.trunc(np.power(ints, e)).astype(np.float32))
# LeakyRelu with alpha outside [0, 1], where max(x, alpha x) is wrong.
for label, alpha in (("leakyrelu_alpha_above_1", 1.5), ("leakyrelu_alpha_negative", -0.5)):
    check(label, "LeakyRelu", x, [], {"alpha": alpha},
          np.where(x < 0, np.float32(alpha) * x, x))

# A symbolic sequence length as a Range's limit and a Slice's end (dynamic
# GPT-2 and BERT exports): x is [seq, 3], declared with a symbolic seq.
def seq_length(name, axis=0):
    return [helper.make_node("Shape", ["x"], [name + "_shape"]),
            helper.make_node("Slice", [name + "_shape", name + "_at", name + "_after"],
                             [name + "_len"])], [
        numpy_helper.from_array(np.int64([axis]), name + "_at"),
        numpy_helper.from_array(np.int64([axis + 1]), name + "_after")]


xs = rng.standard_normal((5, 3)).astype(np.float32)
table = rng.standard_normal((16, 3)).astype(np.float32)
length, length_inits = seq_length("n")
scalar_length = [helper.make_node("Squeeze", ["n_len"], ["n_scalar"])]
run_model("range_symbolic_limit", length + scalar_length + [
    helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.int64(0))),
    helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.int64(1))),
    helper.make_node("Range", ["zero", "n_scalar", "one"], ["positions"]),
    helper.make_node("Gather", ["table", "positions"], ["rows"], axis=0),
    helper.make_node("Add", ["x", "rows"], ["y"])], xs,
    length_inits + [numpy_helper.from_array(table, "table")], xs + table[:5],
    x_dims=["seq", 3])
# BERT's position_ids[:, :seq] of a static buffer, and a causal mask cut to
# [seq, seq] along two axes of a [16, 16] one (the second axis also seq).
run_model("slice_symbolic_end", length + [
    helper.make_node("Slice", ["table", "zero1", "n_len", "axis0"], ["cut"]),
    helper.make_node("Add", ["x", "cut"], ["y"])], xs,
    length_inits + [numpy_helper.from_array(table, "table"),
                    numpy_helper.from_array(np.int64([0]), "zero1"),
                    numpy_helper.from_array(np.int64([0]), "axis0")], xs + table[:5],
    x_dims=["seq", 3])
square = rng.standard_normal((4, 4)).astype(np.float32)
causal = np.tril(np.ones((16, 16), np.bool_))
run_model("slice_symbolic_mask", length + [
    helper.make_node("Concat", ["n_len", "n_len"], ["ends"], axis=0),
    helper.make_node("Slice", ["causal", "zeros2", "ends", "axes01"], ["mask"]),
    helper.make_node("Where", ["mask", "x", "minus"], ["y"])], square,
    length_inits + [numpy_helper.from_array(causal, "causal"),
                    numpy_helper.from_array(np.int64([0, 0]), "zeros2"),
                    numpy_helper.from_array(np.int64([0, 1]), "axes01"),
                    numpy_helper.from_array(np.float32(-1e9), "minus")],
    np.where(np.tril(np.ones((4, 4), np.bool_)), square, np.float32(-1e9)),
    x_dims=["seq", "seq"])
# Over a symbolic axis: a causal mask (Trilu of a [seq, seq] input, as
# torch.triu), CumSum and ArgMax (their index vectors are range kernels), and
# a shape value read as data (x / x.shape[0]: a kernel computes seq).
run_model("trilu_symbolic", [helper.make_node("Trilu", ["x", "one1"], ["y"], upper=1)], square,
          [numpy_helper.from_array(np.int64(1), "one1")], np.triu(square, 1),
          x_dims=["seq", "seq"], opset=14)
run_model("cumsum_symbolic", [helper.make_node("CumSum", ["x", "axis0"], ["y"])], xs,
          [numpy_helper.from_array(np.int64(0), "axis0")], np.cumsum(xs, 0), x_dims=["seq", 3])
run_model("argmax_symbolic", [
    helper.make_node("ArgMax", ["x"], ["i"], axis=0, keepdims=0),
    helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)], xs, [],
    np.argmax(xs, 0).astype(np.float32), x_dims=["seq", 3])
# Static stretches of a symbolic dim: the first token (BERT's pooler), the
# last one, two before the last, every second of the first five; and the
# whole dim reversed, as torch.flip exports it (a strided_slice, n - 1 - i).
for label, start, end, step, expected in (("first", 0, 1, 1, xs[0:1]),
                                          ("last", -1, 2 ** 62, 1, xs[-1:]),
                                          ("before_last", -3, -1, 1, xs[-3:-1]),
                                          ("stride", 0, 5, 2, xs[0:5:2]),
                                          ("huge_step", 0, 5, 2 ** 62, xs[0:1]),
                                          ("reversed", -1, -2 ** 63 + 1, -1, xs[::-1])):
    run_model("slice_symbolic_dim_" + label, [
        helper.make_node("Slice", ["x", "s0", "s1", "s_axes", "s_steps"], ["y"])], xs,
        [numpy_helper.from_array(np.int64([start]), "s0"),
         numpy_helper.from_array(np.int64([end]), "s1"),
         numpy_helper.from_array(np.int64([0]), "s_axes"),
         numpy_helper.from_array(np.int64([step]), "s_steps")], expected, x_dims=["seq", 3])
# h[arange(batch), seq - 1] as PyTorch exports it (sequence classification's
# pooling): a Gather from the [batch * seq, 3] flattening at the flat index
# arange(batch) * seq + seq - 1, over symbolic batch and seq.
x243_tokens = rng.standard_normal((2, 4, 3)).astype(np.float32)
run_model("gather_flattened_last_token", [
    helper.make_node("Shape", ["x"], ["t_shape"]),
    helper.make_node("Gather", ["t_shape", "t_zero"], ["t_batch"], axis=0),
    helper.make_node("Gather", ["t_shape", "t_one"], ["t_seq"], axis=0),
    helper.make_node("Range", ["t_zero", "t_batch", "t_one"], ["t_rows"]),
    helper.make_node("Mul", ["t_rows", "t_seq"], ["t_row_start"]),
    helper.make_node("Sub", ["t_seq", "t_one"], ["t_last"]),
    helper.make_node("Add", ["t_row_start", "t_last"], ["t_flat_index"]),
    helper.make_node("Flatten", ["x"], ["t_flat"], axis=2),
    helper.make_node("Gather", ["t_flat", "t_flat_index"], ["y"], axis=0)], x243_tokens,
    [numpy_helper.from_array(np.int64(0), "t_zero"),
     numpy_helper.from_array(np.int64(1), "t_one")], x243_tokens[:, -1, :],
    x_dims=["batch", "seq", 3])
run_model("range_symbolic_float", length + scalar_length + [
    helper.make_node("Cast", ["n_scalar"], ["n_float"], to=TensorProto.FLOAT),
    helper.make_node("Range", ["zero_f", "n_float", "one_f"], ["positions"]),
    helper.make_node("Unsqueeze", ["positions", "axis1"], ["column"]),
    helper.make_node("Add", ["x", "column"], ["y"])], xs,
    length_inits + [numpy_helper.from_array(np.float32(0), "zero_f"),
                    numpy_helper.from_array(np.float32(1), "one_f"),
                    numpy_helper.from_array(np.int64([1]), "axis1")],
    xs + np.arange(5, dtype=np.float32)[:, None], x_dims=["seq", 3])
run_model("shape_as_data", length + [
    helper.make_node("Cast", ["n_len"], ["n_float"], to=TensorProto.FLOAT),
    helper.make_node("Div", ["x", "n_float"], ["y"])], xs, length_inits,
    xs / np.float32(5), x_dims=["seq", 3])

# Model-local functions (IR version 8), inlined at import.
def local_function(name, inputs, outputs, nodes, attributes=(), opset=13):
    return helper.make_function("local", name, inputs, outputs, nodes,
                                [helper.make_opsetid("", opset), helper.make_opsetid("local", 1)],
                                list(attributes))


def call(name, inputs, outputs, node_name, **attrs):
    return helper.make_node(name, inputs, outputs, name=node_name, domain="local", **attrs)


def leaky_ref(v, alpha):
    return np.where(v < 0, np.float32(alpha) * v, v).astype(np.float32)


# An attribute given by the call (ref_attr_name), one the call omits (the
# body's operator takes its default, alpha 0.01), an optional output the
# call leaves out, and two calls (their inner names kept apart).
leaky_node = helper.make_node("LeakyRelu", ["a"], ["t"])
ref = onnx.AttributeProto(name="alpha", ref_attr_name="slope", type=onnx.AttributeProto.FLOAT)
leaky_node.attribute.append(ref)
leaky = local_function("ScaledLeaky", ["a", "s"], ["r", "unused"], [
    leaky_node, helper.make_node("Mul", ["t", "s"], ["r"]),
    helper.make_node("Neg", ["t"], ["unused"])], attributes=["slope"])
two = numpy_helper.from_array(np.float32(2), "two")
run_model("function_attribute_ref", [
    call("ScaledLeaky", ["x", "two"], ["h"], "first", slope=0.5),
    call("ScaledLeaky", ["h", "two"], ["y"], "second")], x, [two],
    leaky_ref(leaky_ref(x, 0.5) * 2, 0.01) * 2, functions=[leaky])
# An attribute default (FunctionProto.attribute_proto, field 11 from IR 9;
# ONNX 1.12's classes lack it, so its bytes are appended): a call that omits
# the attribute takes the function's default 0.3, not LeakyRelu's 0.01.
def with_attribute_default(function, attribute):
    data = attribute.SerializeToString()
    length, size = b"", len(data)
    while True:
        length += bytes([(size & 0x7F) | (0x80 if size > 0x7F else 0)])
        size >>= 7
        if not size:
            break
    return onnx.FunctionProto.FromString(function.SerializeToString() + b"\x5a" + length + data)


slope_node = helper.make_node("LeakyRelu", ["a"], ["r"])
slope_node.attribute.append(onnx.AttributeProto(name="alpha", ref_attr_name="slope",
                                                type=onnx.AttributeProto.FLOAT))
defaulted = with_attribute_default(local_function("Leaky", ["a"], ["r"], [slope_node]),
                                   helper.make_attribute("slope", 0.3))
run_model("function_attribute_default", [
    call("Leaky", ["x"], ["h"], "defaulted"),
    call("Leaky", ["h"], ["y"], "given", slope=0.5)], x, [],
    leaky_ref(leaky_ref(x, 0.3), 0.5), functions=[defaulted])
# A function calling a function, an If in a function body reading the
# function's input from its branch, and a formal output that is a formal
# input (the call's output is that input).
branch = lambda out, nodes: helper.make_graph(
    nodes, "branch_" + out, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])
cond_abs = local_function("CondAbs", ["v", "c"], ["w", "v"], [
    helper.make_node("If", ["c"], ["w"],
                     then_branch=branch("w_then", [helper.make_node("Abs", ["v"], ["w_then"])]),
                     else_branch=branch("w_else", [helper.make_node("Neg", ["v"], ["w_else"])]))])
outer = local_function("Outer", ["p"], ["q"], [
    helper.make_node("Constant", [], ["yes"], value=numpy_helper.from_array(np.bool_(True))),
    call("CondAbs", ["p", "yes"], ["m", "same"], "inner"),
    helper.make_node("Add", ["m", "same"], ["q"])])
run_model("function_nested_if", [call("Outer", ["x"], ["y"], "outer")], x, [],
          np.abs(x) + x, functions=[outer, cond_abs])

# Two graph inputs naming one size differently (PyTorch's list-form
# dynamic_axes, tf2onnx's unk__N): the dims an op needs equal are merged.
ua = rng.standard_normal((3, 4)).astype(np.float32)
ub = rng.standard_normal((3, 4)).astype(np.float32)
run_model("unify_broadcast", [helper.make_node("Add", ["x", "u"], ["y"])], ua, [], ua + ub,
          x_dims=["a", 4], more_inputs=[("u", ub, ["b", 4])])
np.save(os.path.join(work, "unify_broadcast.u_other.npy"), ub[:2])
table = rng.standard_normal((10, 8)).astype(np.float32)
hx = rng.standard_normal((2, 5, 8)).astype(np.float32)
ids = rng.integers(0, 10, (2, 5)).astype(np.int64)
mask = np.where(rng.random((2, 5)) < 0.3, -1e4, 0).astype(np.float32)
h = hx + table[ids]
scores = h @ h.transpose(0, 2, 1) + mask[:, None, :]
p_ = np.exp(scores - scores.max(-1, keepdims=True))
p_ /= p_.sum(-1, keepdims=True)
run_model("unify_attention_mask", [
    helper.make_node("Gather", ["table", "ids"], ["emb"]),
    helper.make_node("Add", ["x", "emb"], ["h"]),
    helper.make_node("Transpose", ["h"], ["ht"], perm=[0, 2, 1]),
    helper.make_node("MatMul", ["h", "ht"], ["scores"]),
    helper.make_node("Unsqueeze", ["mask", "one"], ["mask3"]),
    helper.make_node("Add", ["scores", "mask3"], ["masked"]),
    helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
    helper.make_node("MatMul", ["p", "h"], ["y"])], hx,
    [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array([1]), "one")],
    (p_ @ h).astype(np.float32), x_dims=["batch", "seq", 8], tolerance=1e-5,
    more_inputs=[("ids", ids, ["ids_dynamic_axes_1", "ids_dynamic_axes_2"]),
                 ("mask", mask, ["mask_dynamic_axes_1", "mask_dynamic_axes_2"])])
mk = rng.standard_normal((4, 6)).astype(np.float32)
mw = rng.standard_normal((6, 3)).astype(np.float32)
run_model("unify_matmul_contracted", [helper.make_node("MatMul", ["x", "w"], ["y"])], mk, [],
          mk @ mw, x_dims=["n", "k"], tolerance=1e-5, more_inputs=[("w", mw, ["k_w", 3])])
ca = rng.standard_normal((3, 2)).astype(np.float32)
cb = rng.standard_normal((3, 4)).astype(np.float32)
run_model("unify_concat", [helper.make_node("Concat", ["x", "c"], ["y"], axis=1)], ca, [],
          np.concatenate([ca, cb], 1), x_dims=["rows", 2], more_inputs=[("c", cb, ["rows_c", 4])])
print("ops: %d failed" % failures)
sys.exit(1 if failures else 0)
