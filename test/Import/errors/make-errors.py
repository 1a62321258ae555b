#!/usr/bin/python3
"""Generate the malformed and unsupported ONNX models of test/Import/errors.test.

Each NAME.onnx written next to this script is a few hundred bytes at most and
makes `fusec NAME.onnx` stop with exit code 1 and one message
`fusec: error: PATH: ...` (errors.test checks each message); valid.onnx is
the one model that imports. The models are built with onnx.helper; only the
ones meant to be valid ONNX (whose problem is fusec's support, not the
file) pass onnx.checker, the others are written unchecked on purpose.

Also written: not_onnx_empty.onnx (an empty file), not_onnx_text.onnx (a text
file), not_onnx_truncated.onnx (the first 1000 bytes of
../models/mlp_ln_gelu.onnx).

Needs onnx (1.12) and numpy; on this machine that is Debian's python:

  /usr/bin/python3 test/Import/errors/make-errors.py

The output is deterministic: rerunning rewrites identical files.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
F32 = TensorProto.FLOAT


def vi(name, dims, elem=F32):
    return helper.make_tensor_value_info(name, elem, dims)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(nodes, inputs, outputs, initializers=(), opset=OPSET, extra_opsets=(),
          check=True, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)] + list(extra_opsets)
    m = helper.make_model(graph, opset_imports=opsets, producer_name="make-errors")
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    return m


def external_tensor(**entries):
    """An f32[4] initializer 'w' whose data is external, with these entries
    (location, offset, length)."""
    ext = helper.make_tensor("w", F32, [4], [0, 0, 0, 0])
    ext.ClearField("float_data")
    ext.data_location = TensorProto.EXTERNAL
    for key, value in entries.items():
        entry = ext.external_data.add()
        entry.key, entry.value = key, value
    return ext


def save(name, m):
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


def write_raw(name, data):
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(data)


def main():
    # A valid tiny model: y = relu(x + b) * 2.
    save("valid", model(
        [helper.make_node("Add", ["x", "b"], ["s"], name="add"),
         helper.make_node("Relu", ["s"], ["r"], name="relu"),
         helper.make_node("Mul", ["r", "two"], ["y"], name="mul")],
        [vi("x", [2, 3])], [vi("y", [2, 3])],
        [const("b", np.arange(3, dtype=np.float32)), const("two", np.float32(2))]))

    # An operator fusec does not map (valid ONNX).
    save("unsupported_op", model(
        [helper.make_node("Det", ["x"], ["y"], name="det")],
        [vi("x", [2, 3, 3])], [vi("y", [2])]))

    # A made-up attribute on a supported operator (not valid ONNX).
    save("conv_extra_attr", model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", fusion_hint=3)],
        [vi("x", [1, 1, 3, 3])], [vi("y", [1, 1, 3, 3])],
        [const("w", np.ones([1, 1, 1, 1], np.float32))], check=False))

    # LeakyRelu's alpha above 1 (valid ONNX; it was rejected once, the
    # maximum form holds only for alpha in [0, 1]).
    save("leakyrelu_alpha", model(
        [helper.make_node("LeakyRelu", ["x"], ["y"], name="lrelu", alpha=1.5)],
        [vi("x", [4])], [vi("y", [4])]))

    # Clip-6 with min above max: ONNX Runtime refuses it (Clip-11 defines it).
    save("clip6_min_above_max", model(
        [helper.make_node("Clip", ["x"], ["y"], name="clip", min=2.0, max=1.0)],
        [vi("x", [4])], [vi("y", [4])], opset=6))

    # A node no output needs is not converted, but it is still checked as
    # onnx.checker checks it: an attribute its operator does not define, an
    # operator ONNX does not define.
    save("unused_node_bad_attr", model(
        [helper.make_node("Relu", ["x"], ["y"], name="used"),
         helper.make_node("Relu", ["x"], ["unused"], name="spare", alpha=0.5)],
        [vi("x", [4])], [vi("y", [4])], check=False))
    save("unused_node_unknown_op", model(
        [helper.make_node("Relu", ["x"], ["y"], name="used"),
         helper.make_node("Frobnicate", ["x"], ["unused"], name="spare")],
        [vi("x", [4])], [vi("y", [4])], check=False))

    # A static Reshape target from a symbolic batch (a model traced at batch
    # 1, its batch then declared symbolic): the message names the --dim.
    save("reshape_static_from_symbolic", model(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="flatten")],
        [vi("x", ["N", 16, 4, 4])], [vi("y", [1, 256])],
        [const("s", np.array([1, 256], np.int64))]))

    # Squeeze on a symbolic dim: without axes the output's rank depends on
    # whether the dim is 1; with an axis, the dim must be 1. A slice along a
    # symbolic dim names that dim's --dim, not the first symbolic dim's.
    save("squeeze_symbolic_no_axes", model(
        [helper.make_node("Squeeze", ["x"], ["y"], name="squeeze")],
        [vi("x", ["batch", 1, 3])], [vi("y", ["batch", 3])]))
    save("squeeze_symbolic_axis", model(
        [helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze")],
        [vi("x", ["batch", 3])], [vi("y", [3])],
        [const("axes", np.array([0], np.int64))]))
    # A KV cache: only the dim concatenated along needs --dim.
    save("concat_symbolic_axis", model(
        [helper.make_node("Concat", ["past", "new"], ["y"], name="cache", axis=1)],
        [vi("past", ["batch", "past", 4]), vi("new", ["batch", 1, 4])],
        [vi("y", ["batch", "total", 4])]))
    save("slice_symbolic_dim", model(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="pooler")],
        [vi("x", ["batch", "sequence", 4])], [vi("y", ["batch", 1, 4])],
        [const("starts", np.array([0], np.int64)), const("ends", np.array([1], np.int64)),
         const("axes", np.array([1], np.int64))]))
    # (The pooler's x[:, 0:1] above imports now; x[:, :-1], the shifted
    # logits, still has a size no FIR dim holds.)
    save("slice_symbolic_shift", model(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="shift")],
        [vi("x", ["batch", "sequence", 4])], [vi("y", ["batch", None, 4])],
        [const("starts", np.array([0], np.int64)), const("ends", np.array([-1], np.int64)),
         const("axes", np.array([1], np.int64))]))

    # Element types fusec has no dtype for (valid ONNX).
    save("uint8_input", model(
        [helper.make_node("Identity", ["x"], ["y"], name="id")],
        [vi("x", [4], TensorProto.UINT8)], [vi("y", [4], TensorProto.UINT8)]))
    save("float64_initializer", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [2], TensorProto.DOUBLE)], [vi("y", [2], TensorProto.DOUBLE)],
        [const("w", np.array([1.0, 2.0], dtype=np.float64))]))

    # An opset after 17 (valid ONNX for onnx >= 1.13; written unchecked).
    save("opset18", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [4])], [vi("y", [4])], opset=18, check=False))

    # A contrib operator (com.microsoft domain).
    save("ms_domain", model(
        [helper.make_node("Gelu", ["x"], ["y"], name="gelu", domain="com.microsoft")],
        [vi("x", [4])], [vi("y", [4])],
        extra_opsets=[helper.make_opsetid("com.microsoft", 1)], check=False))

    # A graph input dim with neither dim_value nor dim_param (valid ONNX).
    anonymous = vi("x", [2, None])
    save("anonymous_dim", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [anonymous], [vi("y", [2, None])]))

    # Reshape to a shape known only at run time (valid ONNX).
    save("reshape_runtime_shape", model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        [vi("x", [2, 3]), vi("shape", [2], TensorProto.INT64)], [vi("y", [3, 2])]))

    # A node reading a tensor nothing defines (not valid ONNX).
    save("undefined_input", model(
        [helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
        [vi("x", [4])], [vi("y", [4])], check=False))

    # A graph without outputs (not valid ONNX).
    save("no_outputs", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [4])], [], check=False))

    # A 3-D convolution: rank-5 input and weights (valid ONNX).
    save("conv4d", model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv4d")],
        [vi("x", [1, 2, 4, 4, 4, 4])], [vi("y", [1, 4, 2, 2, 2, 2])],
        [const("w", np.zeros([4, 2, 3, 3, 3, 3], np.float32))]))

    # An initializer whose raw_data holds 20 bytes where f32[2,3] needs 24.
    bad = helper.make_tensor("w", F32, [2, 3], b"\0" * 24, raw=True)
    bad.raw_data = b"\0" * 20
    save("raw_size_mismatch", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [2, 3])], [vi("y", [2, 3])], [bad], check=False))

    # External data in a file that is not there, and outside the model's
    # directory: up and out, absolute.
    for name, location in (("external_missing", "missing-weights.bin"),
                           ("external_escapes", "../../../../etc/passwd"),
                           ("external_absolute", "/etc/passwd")):
        save(name, model(
            [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
            [vi("x", [4])], [vi("y", [4])],
            [external_tensor(location=location, offset="0", length="16")], check=False))

    # An initializer defined twice, the default domain imported twice
    # (invalid, were read: the last won), and an output declared INT64 that
    # the graph computes as float (valid to read; a warning).
    save("initializer_twice", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [2])], [vi("y", [2])],
        [const("w", np.ones([2], np.float32)), const("w", np.zeros([2], np.float32))],
        check=False))
    save("default_domain_twice", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [2])], [vi("y", [2])], extra_opsets=[helper.make_opsetid("", 13)],
        check=False))
    save("output_declared_int64", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [2])], [vi("y", [2], TensorProto.INT64)], check=False))

    # A symbolic range or slice end not from 0 (its length, seq - 1, is no
    # FIR dim).
    seq_len = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
               helper.make_node("Gather", ["shape", "zero"], ["n"], name="n", axis=0)]
    save("range_symbolic_from_one", model(seq_len + [
        helper.make_node("Range", ["one", "n", "one"], ["r"], name="range"),
        helper.make_node("Cast", ["r"], ["y"], name="cast", to=F32)],
        [vi("x", ["seq"])], [vi("y", ["seq"])],
        [const("zero", np.int64(0)), const("one", np.int64(1))]))
    save("slice_symbolic_end_from_one", model(seq_len + [
        helper.make_node("Unsqueeze", ["n", "axes"], ["ends"], name="ends"),
        helper.make_node("Slice", ["table", "axes1", "ends"], ["y"], name="slice")],
        [vi("x", ["seq"])], [vi("y", [None])],
        [const("zero", np.int64(0)), const("axes", np.int64([0])),
         const("axes1", np.int64([1])), const("table", np.ones(8, np.float32))]))

    # Two inputs that name one dim differently (PyTorch's list-form
    # dynamic_axes names each input's dims apart): the mask reshaped to
    # [ids' batch, -1] types once the dims are merged (a warning); to
    # [ids' batch, 3] no merge makes it type, and the message names every
    # dim it involves, and the --dim that fixes them.
    for name, last in (("reshape_other_dim_name", -1),
                       ("reshape_other_dim_name_indivisible", 3)):
        save(name, model(
            [helper.make_node("Shape", ["ids"], ["ids_shape"], name="shape"),
             helper.make_node("Gather", ["ids_shape", "zero"], ["ids_batch"], name="batch",
                              axis=0),
             helper.make_node("Unsqueeze", ["ids_batch", "axes"], ["ids_batch1"], name="batch1"),
             helper.make_node("Concat", ["ids_batch1", "last"], ["target"], name="target",
                              axis=0),
             helper.make_node("Reshape", ["mask", "target"], ["y"], name="flatten")],
            [vi("ids", ["ids_dynamic_axes_1", 4]), vi("mask", ["am_dynamic_axes_1", 4])],
            [vi("y", [None, None])],
            [const("zero", np.int64(0)), const("axes", np.int64([0])),
             const("last", np.int64([last]))]))

    # A Pad of a symbolic dim (its padded size, seq + 2, is no FIR dim), and a
    # GatherElements of data with two symbolic dims: each message names every
    # dim and the --dim that fixes it.
    save("pad_symbolic_dim", model(
        [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")],
        [vi("x", ["seq", 4])], [vi("y", [None, 4])], [const("pads", np.int64([1, 0, 1, 0]))]))
    save("gather_elements_dynamic", model(
        [helper.make_node("GatherElements", ["x", "i"], ["y"], name="gather", axis=1)],
        [vi("x", ["batch", "seq"]), vi("i", ["batch", 1], TensorProto.INT64)],
        [vi("y", ["batch", 1])]))

    # Model-local functions that cannot be inlined.
    def with_functions(nodes, functions):
        m = model(nodes, [vi("x", [4])], [vi("y", [4])],
                  extra_opsets=[helper.make_opsetid("local", 1)], check=False)
        m.functions.extend(functions)
        return m

    def function(name, nodes, attributes=(), opset=OPSET, inputs=("a",), outputs=("b",)):
        return helper.make_function("local", name, list(inputs), list(outputs), nodes,
                                    [helper.make_opsetid("", opset),
                                     helper.make_opsetid("local", 1)], list(attributes))

    relu_body = [helper.make_node("Relu", ["a"], ["b"])]
    call = lambda name="F", **attrs: helper.make_node(name, ["x"], ["y"], name="call",
                                                      domain="local", **attrs)
    save("function_recursive", with_functions([call()], [function("F", [
        helper.make_node("G", ["a"], ["b"], domain="local")]), function("G", [
            helper.make_node("F", ["a"], ["b"], domain="local")])]))
    save("function_undeclared_attr", with_functions([call(alpha=0.5)],
                                                    [function("F", relu_body)]))
    save("function_extra_input", with_functions(
        [helper.make_node("F", ["x", "x"], ["y"], name="call", domain="local")],
        [function("F", relu_body)]))
    save("function_twice", with_functions([call()], [function("F", relu_body)] * 2))
    save("function_other_opset", with_functions([call()], [function("F", relu_body, opset=13)]))
    # An attribute default (attribute_proto, field 11, which ONNX 1.12's
    # classes lack: appended as bytes) that is no AttributeProto.
    bad_default = onnx.FunctionProto.FromString(
        function("F", relu_body).SerializeToString() + b"\x5a\x02\xff\xff")
    save("function_bad_default", with_functions([call()], [bad_default]))
    # Each function calls the one below twice: 2^30 Relus once expanded.
    doubling = [function("F0", relu_body)] + [function("F%d" % i, [
        helper.make_node("F%d" % (i - 1), ["a"], ["t"], domain="local"),
        helper.make_node("F%d" % (i - 1), ["t"], ["b"], domain="local")]) for i in range(1, 31)]
    save("function_doubling", with_functions([call("F30")], doubling))

    # TopK above k = 64 ranks every element against every other: not along
    # an axis longer than 4096 (16 M comparisons per row).
    save("topk_long_axis", model(
        [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk")],
        [vi("x", [5000])], [vi("v", [100]), vi("i", [100], TensorProto.INT64)],
        [const("k", np.array([100], np.int64))]))

    # A uint8 graph output (a mask kept as bytes): fusec has no uint8.
    save("uint8_output", model(
        [helper.make_node("Identity", ["bytes"], ["y"], name="id"),
         helper.make_node("Relu", ["x"], ["z"], name="relu")],
        [vi("x", [2])], [vi("y", [2], TensorProto.UINT8), vi("z", [2])],
        [const("bytes", np.array([1, 200], np.uint8))], check=False))

    # Split sizes 2 + 3 of an axis of 6 (valid ONNX structurally).
    save("split_sizes", model(
        [helper.make_node("Split", ["x", "split"], ["a", "b"], name="split", axis=1)],
        [vi("x", [2, 6])], [vi("a", [2, 2]), vi("b", [2, 3])],
        [const("split", np.array([2, 3], dtype=np.int64))]))

    # Gather with a constant index 7 into a dim of 3.
    save("gather_index", model(
        [helper.make_node("Gather", ["x", "idx"], ["y"], name="gather", axis=0)],
        [vi("x", [3, 4])], [vi("y", [1, 4])],
        [const("idx", np.array([7], dtype=np.int64))]))

    # Shapes that do not broadcast: the op registry's message, on the node.
    save("add_mismatch", model(
        [helper.make_node("Add", ["x", "z"], ["y"], name="add")],
        [vi("x", [2, 3]), vi("z", [4])], [vi("y", [2, 3])], check=False))

    # A graph output declared with another shape than the graph computes (a
    # warning: it imports with the computed shape).
    save("output_shape_mismatch", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [2, 3])], [vi("y", [2, "n", 4])], check=False))

    # ceil_mode on a symbolic dim where ONNX may drop the last window.
    save("pool_ceil_symbolic", model(
        [helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                          strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1)],
        [vi("x", [1, 1, "h", 4])], [vi("y", [1, 1, "oh", 3])]))

    # A shape computation multiplying a symbolic dim (multi-head attention's
    # batch * heads): not a dim fusec's types can hold, unless --dim fixes it.
    save("dim_product", model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
         helper.make_node("Mul", ["b", "two"], ["bh"], name="heads"),
         helper.make_node("Unsqueeze", ["bh", "ax"], ["bh1"]),
         helper.make_node("Concat", ["bh1", "rest"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [vi("x", ["batch", 4, 8])], [vi("y", ["batch2", 4, 4])],
        [const("i0", np.int64(0)), const("two", np.int64(2)), const("ax", np.int64([0])),
         const("rest", np.int64([4, 4]))]))

    # An operator that cannot take a grouped value where its dim is a
    # product (Gather along batch * 2, not the leading dim): the message
    # names the dim and the option.
    save("grouped_gather", model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i1"], ["b"], axis=0),
         helper.make_node("Mul", ["b", "two"], ["bh"]),
         helper.make_node("Unsqueeze", ["bh", "ax"], ["bh1"]),
         helper.make_node("Concat", ["four", "bh1", "four"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["r"]),
         helper.make_node("Gather", ["r", "i0"], ["y"], name="pick", axis=1)],
        [vi("x", [4, "batch", 8])], [vi("y", [4, 4])],
        [const("i0", np.int64(0)), const("i1", np.int64(1)), const("two", np.int64(2)),
         const("ax", np.int64([0])), const("four", np.int64([4]))]))

    # A shape with a symbolic dim where a constant is needed (GPT-2's
    # ConstantOfShape of a dynamic batch): the message names the option.
    save("constantofshape_symbolic", model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("ConstantOfShape", ["s"], ["z"], name="zeros"),
         helper.make_node("Add", ["x", "z"], ["y"])],
        [vi("x", ["batch", 4])], [vi("y", ["batch", 4])]))

    # Hostile attributes that once hung or overflowed (an adversarial sweep):
    # a group of 2^62 on empty channels, a window past 2^40, a resize to
    # 2^40 elements along an axis.
    save("convtranspose_huge_group", model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", group=2 ** 62)],
        [vi("x", [1, 0, 3, 3])], [vi("y", None)], [const("w", np.zeros([0, 1, 1, 1], np.float32))],
        check=False))
    save("pool_huge_window", model(
        [helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2 ** 40, 2 ** 40],
                          dilations=[2 ** 40, 2 ** 40], ceil_mode=1)],
        [vi("x", [1, 1, 3, 3])], [vi("y", None)], check=False))
    save("resize_huge", model(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize")],
        [vi("x", [1, 1, 1, 1])], [vi("y", None)], [const("sizes", np.int64([1, 1, 1, 2 ** 40]))],
        check=False))

    # Composed operators' limits: an Einsum output label in no input term,
    # a CumSum over a symbolic axis (its index constants need the size).
    save("einsum_unknown_label", model(
        [helper.make_node("Einsum", ["x", "w"], ["y"], name="einsum", equation="ij,jk->il")],
        [vi("x", [2, 3]), vi("w", [3, 4])], [vi("y", None)], check=False))
    # A CumSum over a symbolic axis (an error once: errors.test checks its import).
    save("cumsum_symbolic_axis", model(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum")],
        [vi("x", [2, "n"])], [vi("y", None)], [const("axis", np.int64(1))], check=False))

    # torch.arange(x.size(1)) on a dynamic seq: a range of symbolic length
    # (an error once, imported now: errors.test checks its kernel).
    save("range_symbolic", model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
         helper.make_node("Range", ["zero", "n", "step"], ["y"], name="range")],
        [vi("x", [2, "seq"])], [vi("y", None)],
        [const("one", np.int64(1)), const("zero", np.int64(0)), const("step", np.int64(1))],
        check=False))

    # torch.tril on a dynamic seq (an error once: errors.test checks its import).
    save("trilu_symbolic", model(
        [helper.make_node("Trilu", ["x"], ["y"], name="tril", upper=0)],
        [vi("x", ["seq", "seq"])], [vi("y", None)], check=False))

    # Invalid models that used to import: And of integers, Resize given both
    # scales and sizes.
    save("and_int64", model(
        [helper.make_node("And", ["a", "b"], ["y"], name="and")],
        [vi("a", [3], TensorProto.INT64), vi("b", [3], TensorProto.INT64)], [vi("y", None)],
        check=False))
    save("resize_scales_and_sizes", model(
        [helper.make_node("Resize", ["x", "", "scales", "sizes"], ["y"], name="resize")],
        [vi("x", [1, 1, 2, 2])], [vi("y", None)],
        [const("scales", np.float32([1, 1, 2, 2])), const("sizes", np.int64([1, 1, 4, 4]))],
        check=False))

    # An attribute of the wrong type (a float axis would read as 0).
    concat = helper.make_node("Concat", ["x", "x"], ["y"], name="concat")
    concat.attribute.append(helper.make_attribute("axis", 1.0))
    save("attr_wrong_type", model([concat], [vi("x", [2, 3])], [vi("y", None)], check=False))

    # Opset 6's broadcast with an axis that puts B past A's last dim, and
    # Cast-1 naming no element type.
    save("legacy_broadcast_axis", model(
        [helper.make_node("Add", ["x", "b"], ["y"], name="add", broadcast=1, axis=3)],
        [vi("x", [2, 3, 4, 5])], [vi("y", None)], [const("b", np.zeros([3, 4], np.float32))],
        opset=6, check=False))
    save("legacy_cast_name", model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast", to="FLOAT99")],
        [vi("x", [2])], [vi("y", None)], opset=5, check=False))

    # Malformed nodes and graphs that were once accepted silently (an
    # adversarial sweep): a third input of Add, a graph input declared
    # twice, an attribute given twice, an INT attribute whose value is in
    # `f`, a float consumed_inputs, external data at offset 'abc'.
    save("extra_input", model(
        [helper.make_node("Add", ["x", "x", "x"], ["y"], name="add")],
        [vi("x", [2])], [vi("y", None)], check=False))
    save("duplicate_graph_input", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", [2]), vi("x", [3])], [vi("y", None)], check=False))
    twice = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1)
    twice.attribute.append(helper.make_attribute("axis", 0))
    save("duplicate_attribute", model([twice], [vi("x", [2, 3])], [vi("y", None)], check=False))
    misplaced = helper.make_node("Softmax", ["x"], ["y"], name="softmax")
    attr = misplaced.attribute.add()
    attr.name, attr.type, attr.f = "axis", onnx.AttributeProto.INT, 1.0
    save("attr_value_misplaced", model([misplaced], [vi("x", [2, 3])], [vi("y", None)],
                                       check=False))
    hint = helper.make_node("Relu", ["x"], ["y"], name="relu")
    hint.attribute.append(helper.make_attribute("consumed_inputs", [0.5]))
    save("consumed_inputs_floats", model([hint], [vi("x", [2])], [vi("y", None)], opset=1,
                                         check=False))
    save("external_bad_offset", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [4])], [vi("y", [4])],
        [external_tensor(location="missing-weights.bin", offset="abc")], check=False))
    # A 3-D pool of 100000 depth taps (SAME padding makes it fit) and a 1-D
    # pool of 2^40 taps: each output would visit every tap.
    save("pool3d_huge_depth", model(
        [helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[100000, 1, 1],
                          auto_pad="SAME_UPPER")],
        [vi("x", [1, 1, 2, 2, 2])], [vi("y", None)], check=False))
    save("pool_huge_taps", model(
        [helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2 ** 40],
                          auto_pad="SAME_UPPER")],
        [vi("x", [1, 1, 4])], [vi("y", None)], check=False))
    # BatchNormalization with spatial = 0 and statistics [1, 3] for [4, 3].
    save("batchnorm_spatial0_stats", model(
        [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn",
                          spatial=0)],
        [vi("x", [4, 3])], [vi("y", None)],
        [const(n, np.ones([1, 3], np.float32)) for n in ("s", "b", "m", "v")], opset=7,
        check=False))

    # uint8 data read by an operator other than DequantizeLinear, and
    # QuantizeLinear's output returned.
    save("uint8_added", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", [2], elem=TensorProto.INT32)], [vi("y", None)],
        [const("w", np.uint8([1, 2]))], check=False))
    save("quantized_output", model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="quantize")],
        [vi("x", [2])], [vi("y", None)],
        [const("s", np.float32(0.5)), const("z", np.uint8(3))], check=False))

    # A 3-D convolution folds depth into the batch, which must be static.
    save("conv3d_dynamic_batch", model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv3d")],
        [vi("x", ["batch", 2, 4, 4, 4])], [vi("y", None)],
        [const("w", np.zeros([4, 2, 3, 3, 3], np.float32))], check=False))
    # Over a symbolic batch, one 2-D convolution per output depth: 300 are
    # more than fusec unrolls.
    save("conv3d_dynamic_batch_deep", model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv3d")],
        [vi("x", ["batch", 1, 300, 2, 2])], [vi("y", None)],
        [const("w", np.zeros([1, 1, 1, 1, 1], np.float32))], check=False))

    # A dim named like a dtype (FIR would read f32[f32] as a bad dim name).
    save("dim_named_like_dtype", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", ["f32", 4])], [vi("y", ["f32", 4])]))

    # Two dim names that sanitize alike stay two dims (a-b, a_b).
    save("dim_names_alike", model(
        [helper.make_node("Add", ["x", "y"], ["z"], name="add")],
        [vi("x", ["a-b", 4]), vi("y", ["a_b", 4])], [vi("z", None)], check=False))

    # Nodes against ONNX's schema of their operator at the model's opset:
    # an attribute of a later version, one a version removed, one that no
    # version defines (ONNX Runtime: "Unrecognized attribute"), an operator
    # before its first version, a required attribute or input missing, an
    # output too many; ImageScaler after its removal.
    save("maxpool_dilations_opset8", model(
        [helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                          dilations=[1, 1])],
        [vi("x", [1, 1, 4, 4])], [vi("y", None)], opset=8, check=False))
    save("relu_consumed_inputs_opset13", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu", consumed_inputs=[0])],
        [vi("x", [2])], [vi("y", None)], opset=13, check=False))
    save("reducel2_noop_attr", model(
        [helper.make_node("ReduceL2", ["x"], ["y"], name="norm", axes=[1], keepdims=0,
                          noop_with_empty_axes=0)],
        [vi("x", [2, 3])], [vi("y", None)], opset=13, check=False))
    save("layernorm_opset13", model(
        [helper.make_node("LayerNormalization", ["x", "s"], ["y"], name="ln")],
        [vi("x", [2, 3])], [vi("y", None)], [const("s", np.ones([3], np.float32))],
        opset=13, check=False))
    save("cast_without_to", model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast")],
        [vi("x", [2])], [vi("y", None)], check=False))
    save("conv_empty_weight", model(
        [helper.make_node("Conv", ["x", ""], ["y"], name="conv")],
        [vi("x", [1, 1, 4, 4])], [vi("y", None)], check=False))
    save("relu_two_outputs", model(
        [helper.make_node("Relu", ["x"], ["y", "z"], name="relu")],
        [vi("x", [2])], [vi("y", None)], check=False))
    save("imagescaler_opset10", model(
        [helper.make_node("ImageScaler", ["x"], ["y"], name="scale", scale=2.0)],
        [vi("x", [1, 3, 2, 2])], [vi("y", None)], opset=10, check=False))

    # An attribute with neither a type nor a value (IR versions 1 and 2 left
    # the type out; nothing says this one is 0), a required output left
    # empty, an attribute given twice with two types; and two valid forms:
    # an `__` attribute (ONNX's internal names) and an IR version 2 model
    # without opset_import (opset 1).
    untyped = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1)
    untyped.attribute[0].type = onnx.AttributeProto.UNDEFINED
    untyped.attribute[0].ClearField("i")
    untyped_model = model([untyped], [vi("x", [2, 4])], [vi("y", None)], check=False)
    untyped_model.ir_version = 2  # where a missing type is allowed
    save("untyped_empty_attr", untyped_model)
    # An untyped attribute at IR version 8 (the type is required from 3),
    # and a reference to a function's attribute in the main graph (its
    # value would read as 0).
    untyped = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1)
    untyped.attribute[0].type = onnx.AttributeProto.UNDEFINED
    save("untyped_attr_ir8", model([untyped], [vi("x", [2, 4])], [vi("y", None)],
                                   check=False))
    reference = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky")
    alpha = onnx.AttributeProto()
    alpha.name, alpha.type, alpha.ref_attr_name = "alpha", onnx.AttributeProto.FLOAT, "slope"
    reference.attribute.append(alpha)
    save("ref_attr_in_graph", model([reference], [vi("x", [2, 4])], [vi("y", None)],
                                    check=False))
    save("topk_empty_indices", model(
        [helper.make_node("TopK", ["x", "k"], ["v", ""], name="topk", axis=1)],
        [vi("x", [2, 4])], [vi("v", None)], [const("k", np.int64([2]))], check=False))
    twice = helper.make_node("Concat", ["x", "x"], ["y"], name="concat", axis=0)
    twice.attribute.append(helper.make_attribute("axis", 1.0))
    save("attr_twice_two_types", model([twice], [vi("x", [2, 4])], [vi("y", None)],
                                       check=False))
    internal = helper.make_node("Relu", ["x"], ["y"], name="relu")
    internal.attribute.append(helper.make_attribute("__internal", 1))
    save("internal_attr", model([internal], [vi("x", [2])], [vi("y", [2])]))
    ir2 = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2])],
                [vi("y", [2])], check=False)
    ir2.ir_version = 2
    del ir2.opset_import[:]
    save("ir2_no_opset", ir2)

    # If on a condition computed at run time (a graph input).
    branch = lambda out: helper.make_graph(
        [helper.make_node("Identity", ["x"], [out])], out + "_graph", [], [vi(out, None)])
    save("if_runtime_condition", model(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("t"),
                          else_branch=branch("e"))],
        [vi("x", [2]), vi("c", [], elem=TensorProto.BOOL)], [vi("y", None)], check=False))

    # A scatter whose indices are computed at run time (a graph input).
    save("scatternd_runtime_indices", model(
        [helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="scatter")],
        [vi("x", [4, 2]), vi("i", [1, 1], elem=TensorProto.INT64), vi("u", [1, 2])],
        [vi("y", None)], check=False))

    # A deprecated operator (onnx.checker and ONNX Runtime reject it), float
    # scatter indices, an If on an int64 condition, a branch with inputs.
    save("upsample_opset10", model(
        [helper.make_node("Upsample", ["x", "s"], ["y"], name="up")],
        [vi("x", [1, 1, 2, 2])], [vi("y", None)],
        [const("s", np.float32([1, 1, 2, 2]))], opset=10, check=False))
    save("scatter_float_indices", model(
        [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="scatter")],
        [vi("x", [4])], [vi("y", None)],
        [const("i", np.float32([1.7])), const("u", np.float32([5]))], check=False))
    save("if_int_condition", model(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("t"),
                          else_branch=branch("e"))],
        [vi("x", [2])], [vi("y", None)], [const("c", np.int64(1))], check=False))
    with_input = helper.make_graph([helper.make_node("Identity", ["x"], ["w"])], "w_graph",
                                   [vi("z", [2])], [vi("w", None)])
    save("if_branch_inputs", model(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=with_input,
                          else_branch=branch("e"))],
        [vi("x", [2])], [vi("y", None)], [const("c", np.bool_(True))], check=False))

    # Files that are not ONNX models at all.
    write_raw("not_onnx_empty", b"")
    write_raw("not_onnx_text", b"this is not an ONNX model, just text\n")
    with open(os.path.join(HERE, "..", "models", "mlp_ln_gelu.onnx"), "rb") as f:
        write_raw("not_onnx_truncated", f.read()[:1000])


if __name__ == "__main__":
    main()
