#!/usr/bin/python3
"""Generate the reference ONNX models used by the fusec ONNX importer tests.

For every model NAME below this script writes, next to itself:

  NAME.onnx      the exported model (torch.onnx.export, do_constant_folding=True)
  NAME.in0.npy   a fixed random float32 input (seeded)
  NAME.ref0.npy  PyTorch's float32 output for that input
  NAME.ops.txt   opset, graph input/output shapes and ONNX op types with counts

Models:
  resnet_mini         torchvision BasicBlock ResNet [1,1,1,1], widths 8/16/32/64,
                      10 classes, input f32[1,3,32,32], opset 17
  resnet_mini_op13    the same model (same weights) exported at opset 13
  mobilenetv2_mini    torchvision mobilenet_v2(width_mult=0.35, num_classes=10),
                      input f32[1,3,32,32], opset 17
  transformer_mini    2-layer nn.TransformerEncoder (d_model=64, nhead=4, ff=128,
                      batch_first, no mask), input f32[2,8,64], opset 17.
                      Exported through the plain (non fast-path) PyTorch code, so
                      the graph contains standard ONNX ops only.
  mlp_ln_gelu         Linear(32,64) -> LayerNorm(64) -> GELU(erf) -> Linear(64,10),
                      input f32[4,32], opset 17
  mlp_dynamic_batch   Conv2d(3,8,3,p=1) -> ReLU -> reshape(x.shape[0], -1) ->
                      Linear(512,10); input f32[batch,3,8,8] with dynamic dim
                      "batch"; the reference input/output use batch=3. Opset 17.
  transformer_dynamic transformer_mini's model (same weights) exported with the
                      dynamic dims "batch" and "seq" (traced at [2,8,64]): its
                      attention views [seq, batch * heads, 16]; the reference
                      input/output use [3,5,64]. Opset 17.
  gpt_mini_dynamic    two GPT-2 blocks (d_model 32, 4 heads, a fused q/k/v
                      projection, tanh GELU) over embedded inputs, with the
                      dynamic dims "batch" and "seq" (traced at [2,7,32]):
                      positions from arange(seq), the causal mask sliced from
                      a [1,1,64,64] buffer to [seq, seq]; the reference
                      input/output use [3,11,32]. Opset 17.
  transformer_functions transformer_mini (same weights and input) exported
                      with each TransformerEncoderLayer and MultiheadAttention
                      as a model-local function (IR version 8) that the graph
                      calls. Opset 17.
  inception_mini      a 3x3 conv stem, GoogLeNet's ceil_mode max pool,
                      torchvision's InceptionA (whose 3x3 average pool counts
                      its padding: PyTorch exports a Pad and an AveragePool)
                      and a GoogLeNet Inception block, global pool,
                      Linear(40,10); input f32[1,3,17,17], opset 13

Every model is in eval mode and seeded with torch.manual_seed, so rerunning
regenerates identical files (given the same torch/onnx versions).  Needs torch
1.13, torchvision 0.14, onnx 1.12 and numpy; on this machine that is Debian's
python, so rerun with:

  /usr/bin/python3 test/Import/models/generate.py [NAME ...]
"""

import collections
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision
from torchvision.models.resnet import BasicBlock, ResNet

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BYTES = 2 * 1024 * 1024


def randomize_bn(model, seed):
    """Give BatchNorm layers non-trivial affine params and running stats so
    that the (folded) normalization actually matters in the reference."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(1.0 + 0.2 * torch.randn(n, generator=g))
                m.bias.copy_(0.1 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + torch.rand(n, generator=g))


class MiniResNet(ResNet):
    """torchvision ResNet(BasicBlock, layers) with configurable (small) widths."""

    def __init__(self, layers=(1, 1, 1, 1), widths=(8, 16, 32, 64), num_classes=10):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = widths[0]
        self.dilation = 1
        self.groups = 1
        self.base_width = 64  # BasicBlock requires base_width == 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(BasicBlock, widths[0], layers[0])
        self.layer2 = self._make_layer(BasicBlock, widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(BasicBlock, widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(BasicBlock, widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3] * BasicBlock.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


def make_resnet():
    torch.manual_seed(0)
    m = MiniResNet()
    randomize_bn(m, 100)
    return m


def make_mobilenet():
    torch.manual_seed(1)
    m = torchvision.models.mobilenet_v2(width_mult=0.35, num_classes=10)
    randomize_bn(m, 101)
    return m


def make_transformer():
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    # TransformerEncoder deep-copies `layer`, so both layers start with identical
    # weights (and zero biases / unit LayerNorm scales), which the exporter would
    # deduplicate into shared initializers + Identity nodes.  Re-randomize every
    # parameter so each layer is distinct and every bias/affine term matters.
    g = torch.Generator().manual_seed(102)
    with torch.no_grad():
        for pname, p in enc.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
            elif "norm" in pname and pname.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    return enc


class MlpLnGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.ln = nn.LayerNorm(64)
        self.act = nn.GELU(approximate="none")
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(self.act(self.ln(self.fc1(x))))


def make_mlp_ln_gelu():
    torch.manual_seed(3)
    m = MlpLnGelu()
    with torch.no_grad():  # non-trivial LayerNorm affine params
        m.ln.weight.copy_(1.0 + 0.2 * torch.randn(64))
        m.ln.bias.copy_(0.1 * torch.randn(64))
    return m


class DynBatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = self.relu(self.conv(x))
        x = x.reshape(x.shape[0], -1)
        return self.fc(x)


def make_dyn_batch():
    torch.manual_seed(4)
    return DynBatch()


class MiniInception(nn.Module):
    def __init__(self):
        super().__init__()
        from torchvision.models.googlenet import Inception
        from torchvision.models.inception import BasicConv2d, InceptionA
        self.stem = BasicConv2d(3, 16, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.mixed = InceptionA(16, pool_features=8)  # 64 + 64 + 96 + 8 channels
        self.block = Inception(232, 8, 8, 16, 4, 8, 8)  # 8 + 16 + 8 + 8 channels
        self.fc = nn.Linear(40, 10)

    def forward(self, x):
        x = self.block(self.mixed(self.pool(self.stem(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class CausalSelfAttention(nn.Module):
    """GPT-2's attention: one fused q/k/v projection, a causal mask sliced
    from a [1, 1, 64, 64] buffer to the sequence's length."""

    def __init__(self, d=32, heads=4, max_positions=64):
        super().__init__()
        self.c_attn, self.c_proj, self.heads = nn.Linear(d, 3 * d), nn.Linear(d, d), heads
        self.register_buffer("bias", torch.tril(torch.ones(max_positions, max_positions,
                                                           dtype=torch.bool)).view(
            1, 1, max_positions, max_positions))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        split = lambda t: t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / (C // self.heads) ** 0.5
        query_length, key_length = q.size(-2), k.size(-2)
        mask = self.bias[:, :, key_length - query_length:key_length, :key_length]
        w = torch.where(mask, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        y = torch.matmul(w.softmax(-1), v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class GptMini(nn.Module):
    """Two GPT-2 blocks over embedded inputs, positions from arange(seq)."""

    def __init__(self, d=32, max_positions=64):
        super().__init__()
        torch.manual_seed(5)
        self.wpe = nn.Embedding(max_positions, d)
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "ln_1": nn.LayerNorm(d), "attn": CausalSelfAttention(d),
            "ln_2": nn.LayerNorm(d), "mlp": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU("tanh"),
                                                          nn.Linear(4 * d, d))})
            for _ in range(2))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, x):
        positions = torch.arange(0, x.size(1), dtype=torch.long).unsqueeze(0)
        h = x + self.wpe(positions)
        for block in self.blocks:
            h = h + block["attn"](block["ln_1"](h))
            h = h + block["mlp"](block["ln_2"](h))
        return self.ln_f(h)


def make_gpt():
    return GptMini()


def make_inception():
    torch.manual_seed(5)
    m = MiniInception()
    randomize_bn(m, 105)
    return m


# name, factory, input seed, input shape for the reference, opset,
# extra export kwargs, input shape used for tracing (None: the reference shape)
MODELS = [
    ("resnet_mini", make_resnet, 10, (1, 3, 32, 32), 17, {}, None),
    # same weights and same input as resnet_mini, so the same reference output
    ("resnet_mini_op13", make_resnet, 10, (1, 3, 32, 32), 13, {}, None),
    ("mobilenetv2_mini", make_mobilenet, 11, (1, 3, 32, 32), 17, {}, None),
    ("transformer_mini", make_transformer, 12, (2, 8, 64), 17, {}, None),
    ("mlp_ln_gelu", make_mlp_ln_gelu, 13, (4, 32), 17, {}, None),
    ("mlp_dynamic_batch", make_dyn_batch, 14, (3, 3, 8, 8), 17,
     {"dynamic_axes": {"input": {0: "batch"}, "output": {0: "batch"}}}, (2, 3, 8, 8)),
    ("inception_mini", make_inception, 15, (1, 3, 17, 17), 13, {}, None),
    ("transformer_dynamic", make_transformer, 16, (3, 5, 64), 17,
     {"dynamic_axes": {"input": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}}},
     (2, 8, 64)),
    ("gpt_mini_dynamic", make_gpt, 18, (3, 11, 32), 17,
     {"dynamic_axes": {"input": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}}},
     (2, 7, 32)),
    # transformer_mini's model, weights and input, each encoder layer (and the
    # attention in it) exported as a model-local function that the graph calls
    ("transformer_functions", make_transformer, 12, (2, 8, 64), 17,
     {"export_modules_as_functions": {nn.TransformerEncoderLayer, nn.MultiheadAttention}}, None),
]


# ---------------------------------------------------------------------------
# Minimal ONNX evaluator (onnx 1.12 has no onnx.reference and onnxruntime is
# not installed).  It runs the *exported graph* node by node, so agreement with
# the PyTorch reference shows the .onnx file and the .ref0.npy are consistent.
# Supports exactly the ops/attributes these models use.
# ---------------------------------------------------------------------------

def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _conv_pads(pads, nd):
    begin, end = list(pads[:nd]), list(pads[nd:])
    if begin != end:
        raise NotImplementedError("asymmetric pads")
    return begin


def run_onnx(model, feeds):
    from onnx import numpy_helper
    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env.update(feeds)
    functions = {(f.domain, f.name): f for f in model.functions}
    run_nodes(model.graph.node, env, functions)
    return [env[o.name] for o in model.graph.output]


def call_function(function, node, x, functions):
    """A call of a model-local function: its body in a scope of its own, each
    attribute that refers to the call's (ref_attr_name) replaced by it."""
    given = {a.name: a for a in node.attribute}
    body = []
    for inner in function.node:
        inner = onnx.NodeProto.FromString(inner.SerializeToString())
        attrs = []
        for attr in inner.attribute:
            if attr.ref_attr_name:
                if attr.ref_attr_name not in given:
                    continue
                bound = onnx.AttributeProto.FromString(given[attr.ref_attr_name].SerializeToString())
                bound.name = attr.name
                attr = bound
            attrs.append(attr)
        del inner.attribute[:]
        inner.attribute.extend(attrs)
        body.append(inner)
    scope = {formal: value for formal, value in zip(function.input, x)}
    run_nodes(body, scope, functions)
    return [scope[name] for name in function.output]


def run_nodes(nodes, env, functions):
    import torch.nn.functional as F
    from onnx import numpy_helper
    for node in nodes:
        a = _attrs(node)
        x = [env[n] if n else None for n in node.input]
        op = node.op_type
        if (node.domain, op) in functions:
            results = call_function(functions[(node.domain, op)], node, x, functions)
            env.update(zip(node.output, results))
            continue
        if op == "Constant":
            y = numpy_helper.to_array(a["value"])
        elif op == "Identity":
            y = x[0]
        elif op in ("Add", "Sub", "Mul"):
            y = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op](x[0], x[1])
        elif op == "Div":
            if np.issubdtype(x[0].dtype, np.integer):
                y = np.trunc(x[0] / x[1]).astype(x[0].dtype)
            else:
                y = np.divide(x[0], x[1])
        elif op == "Relu":
            y = np.maximum(x[0], 0)
        elif op == "Clip":
            lo = x[1] if len(x) > 1 and x[1] is not None else -np.inf
            hi = x[2] if len(x) > 2 and x[2] is not None else np.inf
            y = np.clip(x[0], lo, hi)
        elif op == "Erf":
            y = torch.erf(torch.from_numpy(np.array(x[0]))).numpy()
        elif op == "MatMul":
            y = np.matmul(x[0], x[1])
        elif op == "Gemm":
            A = x[0].T if a.get("transA", 0) else x[0]
            B = x[1].T if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(x) > 2 and x[2] is not None:
                y = y + a.get("beta", 1.0) * x[2]
        elif op == "Conv":
            k = len(x[1].shape) - 2
            if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                raise NotImplementedError("auto_pad")
            y = F.conv2d(torch.from_numpy(np.array(x[0])), torch.from_numpy(np.array(x[1])),
                         None if len(x) < 3 else torch.from_numpy(np.array(x[2])),
                         stride=a.get("strides", [1] * k),
                         padding=_conv_pads(a.get("pads", [0] * 2 * k), k),
                         dilation=a.get("dilations", [1] * k),
                         groups=a.get("group", 1)).numpy()
        elif op == "MaxPool":
            k = len(a["kernel_shape"])
            y = F.max_pool2d(torch.from_numpy(np.array(x[0])), a["kernel_shape"],
                             stride=a.get("strides", [1] * k),
                             padding=_conv_pads(a.get("pads", [0] * 2 * k), k),
                             ceil_mode=bool(a.get("ceil_mode", 0))).numpy()
        elif op == "Pad":
            if a.get("mode", b"constant") not in (b"constant", "constant"):
                raise NotImplementedError("Pad mode")
            r = x[0].ndim
            value = x[2] if len(x) > 2 and x[2] is not None else 0
            y = np.pad(x[0], [(int(x[1][d]), int(x[1][r + d])) for d in range(r)],
                       constant_values=value)
        elif op == "AveragePool":
            k = len(a["kernel_shape"])
            y = F.avg_pool2d(torch.from_numpy(np.array(x[0])), a["kernel_shape"],
                             stride=a.get("strides", [1] * k),
                             padding=_conv_pads(a.get("pads", [0] * 2 * k), k),
                             ceil_mode=bool(a.get("ceil_mode", 0)),
                             count_include_pad=bool(a.get("count_include_pad", 0))).numpy()
        elif op == "GlobalAveragePool":
            y = x[0].mean(axis=tuple(range(2, x[0].ndim)), keepdims=True)
        elif op == "Flatten":
            ax = a.get("axis", 1)
            y = x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)
        elif op == "Reshape":
            shape = [int(d) for d in x[1]]
            if not a.get("allowzero", 0):
                shape = [x[0].shape[i] if d == 0 else d for i, d in enumerate(shape)]
            y = x[0].reshape(shape)
        elif op == "Transpose":
            y = np.transpose(x[0], a.get("perm"))
        elif op == "Shape":
            y = np.array(x[0].shape, dtype=np.int64)
        elif op == "Gather":
            y = np.take(x[0], x[1], axis=a.get("axis", 0))
        elif op == "Unsqueeze":
            y = x[0]
            r = y.ndim + len(x[1])
            for ax in sorted(int(v) % r for v in x[1]):
                y = np.expand_dims(y, ax)
        elif op == "Concat":
            y = np.concatenate(x, axis=a["axis"])
        elif op == "Slice":
            starts, ends = x[1], x[2]
            axes = x[3] if len(x) > 3 and x[3] is not None else range(len(starts))
            steps = x[4] if len(x) > 4 and x[4] is not None else [1] * len(starts)
            sl = [slice(None)] * x[0].ndim
            for s0, e0, ax, st in zip(starts, ends, axes, steps):
                sl[int(ax)] = slice(int(s0), int(e0), int(st))
            y = x[0][tuple(sl)]
        elif op == "Softmax":
            ax = a.get("axis", -1)
            e = np.exp(x[0] - x[0].max(axis=ax, keepdims=True))
            y = e / e.sum(axis=ax, keepdims=True)
        elif op == "LayerNormalization":
            ax = a.get("axis", -1) % x[0].ndim
            axes = tuple(range(ax, x[0].ndim))
            mu = x[0].mean(axis=axes, keepdims=True)
            var = ((x[0] - mu) ** 2).mean(axis=axes, keepdims=True)
            y = (x[0] - mu) / np.sqrt(var + a.get("epsilon", 1e-5)) * x[1]
            if len(x) > 2 and x[2] is not None:
                y = y + x[2]
        elif op == "Cast":
            y = np.asarray(x[0]).astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])
        elif op == "Sqrt":
            y = np.sqrt(x[0])
        elif op == "Squeeze":
            y = np.squeeze(x[0], axis=tuple(int(v) for v in x[1])) if len(x) > 1 else np.squeeze(x[0])
        elif op == "Equal":
            y = np.equal(x[0], x[1])
        elif op == "Expand":
            y = x[0] * np.ones([int(v) for v in x[1]], dtype=x[0].dtype)
        elif op == "Range":
            y = np.arange(x[0], x[1], x[2], dtype=x[0].dtype)
        elif op == "Where":
            y = np.where(x[0], x[1], x[2])
        elif op == "Tanh":
            y = np.tanh(x[0])
        elif op == "Pow":
            y = np.power(x[0], x[1]).astype(x[0].dtype)
        elif op == "Split":
            ax = a.get("axis", 0)
            sizes = x[1] if len(x) > 1 and x[1] is not None else [x[0].shape[ax] // len(node.output)] * len(node.output)
            parts = np.split(x[0], np.cumsum(sizes)[:-1], axis=ax)
            env.update(zip(node.output, parts))
            continue
        else:
            raise NotImplementedError(op)
        y = np.asarray(y)
        if y.dtype == np.float64:
            y = y.astype(np.float32)
        env[node.output[0]] = y


def shape_str(vi):
    dims = []
    for d in vi.type.tensor_type.shape.dim:
        dims.append(d.dim_param if d.HasField("dim_param") else str(d.dim_value))
    elem = onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type).lower()
    return "%s %s[%s]" % (vi.name, elem, ",".join(dims))


def check_standard_ops(model, name):
    bad = []
    functions = {(f.domain, f.name) for f in model.functions}
    nodes = list(model.graph.node) + [n for f in model.functions for n in f.node]
    for n in nodes:
        if (n.domain, n.op_type) in functions:
            continue
        if n.domain not in ("", "ai.onnx"):
            bad.append("%s::%s" % (n.domain, n.op_type))
        elif not onnx.defs.has(n.op_type):
            bad.append(n.op_type)
    if bad:
        sys.exit("%s: non-standard ops in export: %s" % (name, sorted(set(bad))))


def generate(name, factory, in_seed, in_shape, opset, kwargs, export_shape):
    model = factory().eval()
    # Fixed input, independent of the model's init RNG consumption.
    g = torch.Generator().manual_seed(in_seed)
    x = torch.randn(*in_shape, generator=g, dtype=torch.float32)
    x_export = x if export_shape is None else torch.randn(
        *export_shape, generator=torch.Generator().manual_seed(99))

    # Keep grad enabled (parameters require grad) so that nn.TransformerEncoder
    # never takes the fused fast path (torch._transformer_encoder_layer_fwd),
    # neither for the reference nor during export.
    with torch.enable_grad():
        ref = model(x).detach()
    ref = ref.numpy().astype(np.float32)
    if not np.all(np.isfinite(ref)):
        sys.exit("%s: non-finite reference output" % name)

    path = os.path.join(HERE, name + ".onnx")
    with torch.enable_grad():
        torch.onnx.export(
            model, (x_export,), path,
            opset_version=opset,
            do_constant_folding=True,
            input_names=["input"],
            output_names=["output"],
            training=torch.onnx.TrainingMode.EVAL,
            **kwargs)

    m = onnx.load(path)
    onnx.checker.check_model(m)
    check_standard_ops(m, name)
    (got,) = run_onnx(m, {"input": x.numpy()})
    err = float(np.max(np.abs(got - ref)))
    if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-4, atol=1e-4):
        sys.exit("%s: ONNX graph disagrees with PyTorch (max abs err %g)" % (name, err))

    np.save(os.path.join(HERE, name + ".in0.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(HERE, name + ".ref0.npy"), ref)

    counts = collections.Counter(n.op_type for n in m.graph.node)
    opsets = ", ".join("%s:%d" % (o.domain or "ai.onnx", o.version) for o in m.opset_import)
    lines = ["# %s (generated by generate.py; do not edit)" % name,
             "opset: %s" % opsets]
    inits = {i.name for i in m.graph.initializer}
    for vi in m.graph.input:
        if vi.name not in inits:
            lines.append("input: " + shape_str(vi))
    for vi in m.graph.output:
        lines.append("output: " + shape_str(vi))
    lines.append("reference input shape: [%s]" % ",".join(map(str, x.shape)))
    lines.append("nodes: %d, initializers: %d" % (len(m.graph.node), len(m.graph.initializer)))
    lines.append("ops:")
    for op in sorted(counts):
        lines.append("  %s %d" % (op, counts[op]))
    for function in m.functions:
        body = collections.Counter(n.op_type for n in function.node)
        lines.append("function %s.%s:" % (function.domain, function.name))
        for op in sorted(body):
            lines.append("  %s %d" % (op, body[op]))
    with open(os.path.join(HERE, name + ".ops.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    for suffix in (".onnx", ".in0.npy", ".ref0.npy", ".ops.txt"):
        p = os.path.join(HERE, name + suffix)
        size = os.path.getsize(p)
        if size > MAX_BYTES:
            sys.exit("%s is %d bytes (> 2 MiB)" % (p, size))
    print("%-20s opset %2d  max|onnx-torch| %.1e  %s" % (name, opset, err,
          " ".join("%s:%d" % (k, counts[k]) for k in sorted(counts))))


def main():
    """Generates every model, or those named on the command line."""
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for spec in MODELS:
        if len(sys.argv) < 2 or spec[0] in sys.argv[1:]:
            generate(*spec)


if __name__ == "__main__":
    main()
