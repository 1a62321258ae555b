#!/usr/bin/env python3
"""Writes gridsample.onnx: one GridSample-16 node per (mode, padding_mode,
align_corners), 18 outputs of the same X [2, 3, 5, 4] and grid [2, 3, 7, 2]
(values in [-1.4, 1.4], so taps fall outside the input, plus the exact
corners), with PyTorch's F.grid_sample as the reference (ONNX's own node
tests come from it): x.npy, grid.npy, ref.npy (the outputs stacked).
Run with /usr/bin/python3 (torch, onnx, numpy); the files are committed.
"""
import itertools

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]

rng = np.random.default_rng(7)
x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
grid = rng.uniform(-1.4, 1.4, (2, 3, 7, 2)).astype(np.float32)
grid[0, 0, :4] = [[-1, -1], [1, 1], [-1, 1], [1, -1]]  # the corners exactly
grid[1, 2, :3] = [[0, 0], [0.5, -0.25], [-0.75, 1.0]]

nodes, outputs, refs = [], [], []
for k, (mode, padding, align) in enumerate(itertools.product(MODES, PADDINGS, [0, 1])):
    name = "y_%s_%s_%d" % (mode, padding, align)
    nodes.append(helper.make_node("GridSample", ["X", "grid"], [name], name="gs%d" % k,
                                  mode=mode, padding_mode=padding, align_corners=align))
    outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3, 3, 7]))
    refs.append(torch.nn.functional.grid_sample(
        torch.from_numpy(x), torch.from_numpy(grid), mode=mode, padding_mode=padding,
        align_corners=bool(align)).numpy())
graph = helper.make_graph(
    nodes, "gridsample",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 5, 4]),
     helper.make_tensor_value_info("grid", TensorProto.FLOAT, [2, 3, 7, 2])], outputs)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
model.ir_version = 8
onnx.checker.check_model(model, full_check=True)
onnx.save(model, "gridsample.onnx")
np.save("x.npy", x)
np.save("grid.npy", grid)
np.save("ref.npy", np.stack(refs))
print("outputs:", ", ".join(o.name for o in outputs))
