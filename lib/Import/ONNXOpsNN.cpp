//===- ONNXOpsNN.cpp - Neural-network ONNX operators ----------------------===//
//
// Conv (2-D, NCHW/OIHW, groups, pads, strides, dilations, auto_pad on
// static sizes) -> nn.conv2d, its bias added as a [1,C,1,1] tensor; 1-D
// Conv and pools (NCL) run as the 2-D ones over a unit height (expand_dims
// at 2, the attributes lifted, squeeze after); Gemm ->
// permute_dims (transA/transB), matmul, alpha and beta as multiplications,
// C added; MatMul -> matmul; BatchNormalization (inference) -> x * s + t per
// channel, s and t folded from constant statistics (in double, then
// rounded) or computed by ops when the statistics are not constants;
// MaxPool/AveragePool -> nn.max_pool2d/nn.avg_pool2d (fusec's average
// excludes padding: count_include_pad = 1 with padding is rejected);
// GlobalAveragePool/GlobalMaxPool -> mean/max over the spatial axes with
// keepdims; Softmax/LogSoftmax (opset 13: one axis); LayerNormalization ->
// nn.layer_norm over the axes from `axis` on (a missing bias is zeros);
// InstanceNormalization -> mean, variance and rsqrt over the spatial axes.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include <cmath>

using namespace fusec;
using namespace fusec::onnximport;

/// A [C] vector as a tensor broadcasting against [N, C, spatial...]:
/// reshaped if constant, else expand_dims.
Value *onnximport::perChannel(NodeContext &c, size_t i, int64_t rank, llvm::StringRef hint) {
  if (const TensorData *data = c.constant(i)) {
    if (data->getShape().size() != 1)
      return c.fail("input " + std::to_string(i) + " must be a vector"), nullptr;
    std::vector<int64_t> shape(size_t(rank), 1);
    shape[1] = data->getShape()[0];
    TensorData reshaped(data->getDType(), shape);
    for (int64_t k = 0; k < data->getNumElements(); ++k)
      reshaped.set(k, data->get(k));
    return c.emitConstant(std::move(reshaped), hint);
  }
  std::vector<int64_t> axes{0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  Attrs attrs;
  attrs.set("axis", makeIntList(axes));
  return c.emit("expand_dims", {Operand::of(c.input(i))}, attrs, hint);
}

/// Pool/conv window attributes: pads [top, left, bottom, right] from
/// `pads` or `auto_pad`, strides, dilations.
struct Window {
  std::vector<int64_t> kernel, strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};
};

std::vector<int64_t> onnximport::liftWindowList(std::vector<int64_t> values, int64_t neutral) {
  if (values.size() == 1)
    return {neutral, values[0]};
  if (values.size() == 2 && neutral == 0) // pads [begin, end]
    return {0, values[0], 0, values[1]};
  return values;
}

Value *onnximport::withUnitHeight(NodeContext &c, size_t i, llvm::StringRef hint) {
  if (const TensorData *data = c.constant(i)) {
    std::vector<int64_t> shape = data->getShape();
    shape.insert(shape.begin() + 2, 1);
    TensorData lifted(data->getDType(), shape);
    for (int64_t k = 0; k < data->getNumElements(); ++k)
      lifted.set(k, data->get(k));
    return c.emitConstant(std::move(lifted), hint);
  }
  Value *v = c.input(i);
  Attrs attrs;
  attrs.set("axis", Attr::makeInt(2));
  return v ? c.emit("expand_dims", {Operand::of(v)}, attrs, hint) : nullptr;
}

Value *onnximport::dropUnitHeight(NodeContext &c, Value *v, llvm::StringRef name) {
  Attrs attrs;
  attrs.set("axis", makeIntList({2}));
  return v ? c.emit("squeeze", {Operand::of(v)}, attrs, name) : nullptr;
}

/// `x` is the (lifted) rank-4 input; `oneD` lifts the 1-D attributes.
static bool readWindow(NodeContext &c, const Type &x, Window &w, bool oneD) {
  if (x.getRank() != 4)
    return c.fail("only 1-D and 2-D windows (rank-3 NCL and rank-4 NCHW inputs) are "
                  "supported, not rank " + std::to_string(x.getRank()));
  auto list = [&](const char *name, int64_t neutral) -> std::optional<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> values = c.attrInts(name);
    if (values && oneD && values->size() == (neutral == 0 ? 2u : 1u))
      values = liftWindowList(*values, neutral);
    return values;
  };
  if (oneD && w.kernel.size() == 1)
    w.kernel = liftWindowList(w.kernel, 1);
  if (auto strides = list("strides", 1))
    w.strides = *strides;
  if (auto dilations = list("dilations", 1))
    w.dilations = *dilations;
  if (auto pads = list("pads", 0))
    w.pads = *pads;
  if (w.kernel.size() != 2 || w.strides.size() != 2 || w.dilations.size() != 2 ||
      w.pads.size() != 4)
    return c.fail("kernel_shape, strides and dilations need 2 values and pads 4");
  // Bounded so that no window arithmetic below (or in the op's inference)
  // can overflow.
  const std::pair<const char *, const std::vector<int64_t> *> bounded[] = {
      {"strides", &w.strides}, {"dilations", &w.dilations}, {"kernel sizes", &w.kernel},
      {"pads", &w.pads}};
  for (const auto &[what, values] : bounded) {
    int64_t lowest = values == &w.pads ? 0 : 1;
    for (int64_t v : *values)
      if (v < lowest || v > kMaxDimSize)
        return c.fail(std::string(what) + " must be in [" + std::to_string(lowest) + ", 2^40]");
  }
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.pads = {0, 0, 0, 0};
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int d = 0; d < 2; ++d) {
      const Dim &in = x.getShape()[2 + d];
      if (in.isSymbolic())
        return c.fail("auto_pad " + autoPad + " on the symbolic dim '" + in.symbol +
                      "' is not supported");
      __int128 out = (in.size + w.strides[d] - 1) / w.strides[d];
      __int128 needed =
          (out - 1) * w.strides[d] + __int128(w.kernel[d] - 1) * w.dilations[d] + 1 - in.size;
      if (needed > kMaxDimSize)
        return c.fail("auto_pad " + autoPad + " would need more than 2^40 of padding");
      int64_t total = std::max<int64_t>(0, int64_t(needed));
      int64_t small = total / 2, large = total - small;
      w.pads[d] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[2 + d] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return c.fail("auto_pad '" + autoPad + "' is not supported");
  }
  return true;
}

static bool convertConv(NodeContext &c) {
  Value *x = c.input(0), *w = c.input(1);
  if (!x || !w)
    return false;
  std::string name = c.node.output(0);
  // A 1-D convolution is the 2-D one over a unit height.
  bool oneD = x->type.getRank() == 3 && w->type.getRank() == 3;
  if (oneD) {
    x = withUnitHeight(c, 0, name + "_input");
    w = withUnitHeight(c, 1, name + "_weights");
    if (!x || !w)
      return false;
  }
  if (w->type.getRank() != 4)
    return c.fail("only 1-D and 2-D convolutions (rank-3 and rank-4 weights) are supported");
  Window window;
  for (int d = 0; d < 2; ++d)
    window.kernel.push_back(w->type.getShape()[2 + d].size);
  if (auto kernel = c.attrInts("kernel_shape");
      kernel && (oneD ? liftWindowList(*kernel, 1) : *kernel) != window.kernel)
    return c.fail("kernel_shape does not match the weights' spatial dims");
  if (!readWindow(c, x->type, window, oneD))
    return false;
  Attrs attrs;
  attrs.set("strides", makeIntList(window.strides));
  attrs.set("padding", makeIntList(window.pads));
  attrs.set("dilation", makeIntList(window.dilations));
  attrs.set("groups", Attr::makeInt(c.attrInt("group", 1)));
  bool last = !c.hasInput(2) && !oneD;
  Value *conv = c.emit("nn.conv2d", {Operand::of(x), Operand::of(w)}, attrs,
                       last ? name : name + "_conv");
  if (conv && c.hasInput(2)) {
    Value *bias = perChannel(c, 2, 4, name + "_bias");
    conv = bias ? c.emit("add", {Operand::of(conv), Operand::of(bias)}, {},
                         oneD ? name + "_biased" : name)
                : nullptr;
  }
  c.define(0, oneD ? dropUnitHeight(c, conv, name) : conv);
  return true;
}

static bool convertMatMul(NodeContext &c) {
  c.define(0, c.emit("matmul", {Operand::of(c.input(0)), Operand::of(c.input(1))}));
  return true;
}

static bool convertGemm(NodeContext &c) {
  std::string name = c.node.output(0);
  Value *a = c.input(0), *b = c.input(1);
  if (!a || !b)
    return false;
  if (a->type.getRank() != 2 || b->type.getRank() != 2)
    return c.fail("A and B must be matrices");
  if (c.attrInt("transA", 0))
    a = c.emit("permute_dims", {Operand::of(a)}, {}, name + "_at");
  if (c.attrInt("transB", 0))
    b = c.emit("permute_dims", {Operand::of(b)}, {}, name + "_bt");
  double alpha = c.attrFloat("alpha", 1.0), beta = c.attrFloat("beta", 1.0);
  if (!isFloatDType(a->type.getDType()) &&
      (!isInt64Value(alpha) || !isInt64Value(beta)))
    return c.fail("alpha and beta must be integers for " + dtypeName(a->type.getDType()).str() +
                  " operands");
  bool hasC = c.hasInput(2) && beta != 0;
  Value *product = c.emit("matmul", {Operand::of(a), Operand::of(b)}, {},
                          alpha != 1 || hasC ? name + "_mm" : name);
  if (product && alpha != 1)
    product = c.emit("multiply",
                     {Operand::of(product), NodeContext::literal(alpha, product->type.getDType())},
                     {}, hasC ? name + "_scaled" : name);
  if (product && hasC) {
    Value *bias = c.input(2);
    if (bias && beta != 1)
      bias = c.emit("multiply", {Operand::of(bias), NodeContext::literal(beta, bias->type.getDType())},
                    {}, name + "_c");
    product = c.emit("add", {Operand::of(product), Operand::of(bias)});
  }
  c.define(0, product);
  return true;
}

static bool convertBatchNorm(NodeContext &c) {
  double epsilon = c.attrFloat("epsilon", 1e-5);
  c.ignoreAttr("momentum");
  if (c.attrInt("spatial", 1) != 1) // opsets 7-8
    return c.fail("spatial = 0 is not supported");
  if (c.attrInt("training_mode", 0))
    return c.fail("training_mode = 1 is not supported (inference only)");
  Value *x = c.input(0);
  if (!x)
    return false;
  if (x->type.getRank() < 2 || !isFloatDType(x->type.getDType()))
    return c.fail("the input must be a float tensor with a channel dim, not " + x->type.str());
  std::string name = c.node.output(0);
  int64_t rank = x->type.getRank();
  const TensorData *scale = c.constant(1), *bias = c.constant(2), *mean = c.constant(3),
                   *var = c.constant(4);
  Value *s = nullptr, *t = nullptr;
  if (scale && bias && mean && var) {
    int64_t channels = scale->getNumElements();
    for (const TensorData *v : {bias, mean, var})
      if (v->getNumElements() != channels || v->getShape().size() != 1)
        return c.fail("scale, B, mean and var must be vectors of one length");
    std::vector<int64_t> shape(size_t(rank), 1);
    shape[1] = channels;
    TensorData sData(x->type.getDType(), shape), tData(x->type.getDType(), shape);
    for (int64_t k = 0; k < channels; ++k) {
      double factor = scale->get(k) / std::sqrt(var->get(k) + epsilon);
      sData.set(k, factor);
      tData.set(k, bias->get(k) - mean->get(k) * factor);
    }
    s = c.emitConstant(std::move(sData), name + "_scale");
    t = c.emitConstant(std::move(tData), name + "_shift");
  } else {
    Value *scaleV = perChannel(c, 1, rank, name + "_gamma");
    Value *biasV = perChannel(c, 2, rank, name + "_beta");
    Value *meanV = perChannel(c, 3, rank, name + "_mean");
    Value *varV = perChannel(c, 4, rank, name + "_var");
    if (!scaleV || !biasV || !meanV || !varV)
      return false;
    DType dtype = x->type.getDType();
    Value *shifted = c.emit("add", {Operand::of(varV), NodeContext::literal(epsilon, dtype)}, {},
                            name + "_var_eps");
    Value *root = c.emit("sqrt", {Operand::of(shifted)}, {}, name + "_std");
    s = c.emit("divide", {Operand::of(scaleV), Operand::of(root)}, {}, name + "_scale");
    Value *meanScaled = c.emit("multiply", {Operand::of(meanV), Operand::of(s)}, {},
                               name + "_mean_scaled");
    t = c.emit("subtract", {Operand::of(biasV), Operand::of(meanScaled)}, {}, name + "_shift");
  }
  Value *scaled = c.emit("multiply", {Operand::of(x), Operand::of(s)}, {}, name + "_scaled");
  c.define(0, c.emit("add", {Operand::of(scaled), Operand::of(t)}));
  return true;
}

/// ONNX (like PyTorch) drops a ceil_mode window that would start in the end
/// padding; TVM's pools, and so fusec's, keep it. Where the two rules give
/// different output sizes the window is rewritten without ceil_mode: the
/// end padding becomes exactly what ONNX's last window reaches. Padding never
/// counts (max pads with the lowest value, the average excludes it), so the
/// values are unchanged.
static bool matchONNXCeilMode(NodeContext &c, const Type &x, Window &w, bool &ceilMode) {
  int64_t ends[2] = {0, 0};
  bool differs = false;
  for (int d = 0; d < 2; ++d) {
    int64_t stride = w.strides[d], begin = w.pads[d], end = w.pads[2 + d];
    int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    const Dim &in = x.getShape()[2 + d];
    if (in.isSymbolic()) {
      // The last ceil window starts before end - extent + stride past the
      // input's end, so it cannot start in the padding when that is <= 0.
      if (end - extent + stride > 0)
        return c.fail("ceil_mode = 1 on the symbolic dim '" + in.symbol +
                      "': whether ONNX drops the last window depends on its size");
      continue;
    }
    int64_t span = in.size + begin + end - extent;
    if (span < 0)
      return c.fail("the window (" + std::to_string(extent) + ") is larger than the padded input (" +
                    std::to_string(in.size + begin + end) + ")");
    int64_t out = (span + stride - 1) / stride + 1;
    int64_t onnxOut = (out - 1) * stride >= in.size + begin ? out - 1 : out;
    differs |= onnxOut != out;
    ends[d] = std::max<int64_t>(0, (onnxOut - 1) * stride + extent - in.size - begin);
  }
  if (!differs)
    return true;
  // ceil_mode covers both dims, and a symbolic one cannot be given floor's
  // answer by its padding.
  for (int d = 0; d < 2; ++d)
    if (x.getShape()[2 + d].isSymbolic())
      return c.fail("ceil_mode = 1 with a symbolic spatial dim where ONNX drops the last "
                    "window of the other dim");
  ceilMode = false;
  w.pads[2] = ends[0];
  w.pads[3] = ends[1];
  return true;
}

template <bool IsMax>
static bool convertPool(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  std::string name = c.node.output(0);
  bool oneD = x->type.getRank() == 3; // the 2-D pool over a unit height
  if (oneD && !(x = withUnitHeight(c, 0, name + "_input")))
    return false;
  Window window;
  if (auto kernel = c.attrInts("kernel_shape"))
    window.kernel = *kernel;
  if (!readWindow(c, x->type, window, oneD))
    return false;
  Attrs attrs;
  attrs.set("pool_size", makeIntList(window.kernel));
  attrs.set("strides", makeIntList(window.strides));
  attrs.set("dilation", makeIntList(window.dilations));
  bool ceilMode = c.attrInt("ceil_mode", 0) != 0;
  if (ceilMode && !matchONNXCeilMode(c, x->type, window, ceilMode))
    return false;
  attrs.set("padding", makeIntList(window.pads));
  attrs.set("ceil_mode", Attr::makeBool(ceilMode));
  if (IsMax && c.attrInt("storage_order", 0) != 0)
    return c.fail("storage_order = 1 is not supported");
  if (!IsMax && c.attrInt("count_include_pad", 0) != 0 &&
      llvm::any_of(window.pads, [](int64_t p) { return p != 0; }))
    return c.fail("count_include_pad = 1 with padding is not supported (fusec's average "
                  "pool excludes the padding, as TVM's does by default)");
  Value *pooled = c.emit(IsMax ? "nn.max_pool2d" : "nn.avg_pool2d", {Operand::of(x)}, attrs,
                         oneD ? name + "_2d" : name);
  c.define(0, oneD ? dropUnitHeight(c, pooled, name) : pooled);
  return true;
}

template <const char *Op>
static bool convertGlobalPool(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  if (x->type.getRank() < 3)
    return c.fail("the input needs spatial dims");
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < x->type.getRank(); ++d)
    axes.push_back(d);
  Attrs attrs;
  attrs.set("axis", makeIntList(axes));
  attrs.set("keepdims", Attr::makeBool(true));
  c.define(0, c.emit(Op, {Operand::of(x)}, attrs));
  return true;
}

template <const char *Op>
static bool convertSoftmax(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  int64_t rank = x->type.getRank();
  std::optional<int64_t> axis = normalizeAxis(c.attrInt("axis", c.opset < 13 ? 1 : -1), rank);
  if (!axis)
    return c.fail("axis is out of range for rank " + std::to_string(rank));
  Attrs attrs;
  if (c.opset >= 13 || *axis == rank - 1) {
    attrs.set("axis", Attr::makeInt(*axis));
    c.define(0, c.emit(Op, {Operand::of(x)}, attrs));
    return true;
  }
  // Before opset 13 the input is coerced to 2-D at `axis`: one softmax
  // over all the dims from `axis` on.
  int64_t inner = 1;
  for (int64_t d = *axis; d < rank; ++d) {
    const Dim &dim = x->type.getShape()[d];
    if (dim.isSymbolic())
      return c.fail("a softmax over the symbolic dim '" + dim.symbol + "' before opset 13");
    if (__builtin_mul_overflow(inner, dim.size, &inner))
      return c.fail("more elements than fit in i64");
  }
  std::string name = c.node.output(0);
  Attrs flat;
  flat.set("shape", Attr::makeList({Attr::makeInt(-1), Attr::makeInt(inner)}));
  Value *rows = c.emit("reshape", {Operand::of(x)}, flat, name + "_rows");
  attrs.set("axis", Attr::makeInt(1));
  Value *result = c.emit(Op, {Operand::of(rows)}, attrs, name + "_2d");
  Attrs back;
  back.set("shape", makeShapeList(x->type.getShape()));
  c.define(0, c.emit("reshape", {Operand::of(result)}, back));
  return true;
}

namespace {
struct Statistics {
  Value *mean = nullptr, *centered = nullptr, *invStd = nullptr;
};
} // namespace

/// mean(x), x - mean and rsqrt(mean((x - mean)^2) + epsilon) over `axes`
/// (keepdims), as ONNX's normalizations define them; the mean and the
/// inverse deviation take the given names (else ones after the output's).
static Statistics emitStatistics(NodeContext &c, Value *x, const std::vector<int64_t> &axes,
                                 double epsilon, const std::string &meanName,
                                 const std::string &invStdName) {
  std::string name = c.node.output(0);
  Attrs reduce;
  reduce.set("axis", makeIntList(axes));
  reduce.set("keepdims", Attr::makeBool(true));
  Statistics stats;
  stats.mean = c.emit("mean", {Operand::of(x)}, reduce,
                      meanName.empty() ? name + "_mean" : meanName);
  stats.centered = c.emit("subtract", {Operand::of(x), Operand::of(stats.mean)}, {},
                          name + "_centered");
  Value *squared = c.emit("multiply", {Operand::of(stats.centered), Operand::of(stats.centered)},
                          {}, name + "_squared");
  Value *variance = c.emit("mean", {Operand::of(squared)}, reduce, name + "_variance");
  Value *shifted = variance ? c.emit("add", {Operand::of(variance),
                                             NodeContext::literal(epsilon, variance->type.getDType())},
                                     {}, name + "_variance_eps")
                            : nullptr;
  stats.invStd = c.emit("rsqrt", {Operand::of(shifted)}, {},
                        invStdName.empty() ? name + "_inv_std" : invStdName);
  return stats;
}

static bool convertLayerNorm(NodeContext &c) {
  Value *x = c.input(0), *scale = c.input(1);
  if (!x || !scale)
    return false;
  int64_t rank = x->type.getRank();
  std::optional<int64_t> axis = normalizeAxis(c.attrInt("axis", -1), rank);
  if (!axis)
    return c.fail("axis is out of range for rank " + std::to_string(rank));
  c.attrInt("stash_type", 1);
  std::vector<int64_t> axes;
  for (int64_t d = *axis; d < rank; ++d)
    axes.push_back(d);
  Value *bias = nullptr;
  if (c.hasInput(2)) {
    bias = c.input(2);
  } else {
    Shape shape;
    for (int64_t d : axes)
      shape.push_back(x->type.getShape()[d]);
    bias = c.emitSplat(0, x->type.getDType(), shape, c.node.output(0) + "_bias");
  }
  double epsilon = c.attrFloat("epsilon", 1e-5);
  Attrs attrs;
  attrs.set("axes", makeIntList(axes));
  attrs.set("epsilon", Attr::makeFloat(epsilon));
  c.define(0, c.emit("nn.layer_norm", {Operand::of(x), Operand::of(scale), Operand::of(bias)},
                     attrs));
  if (!c.hasOutput(1) && !c.hasOutput(2))
    return true;
  // Mean and InvStdDev, requested: computed by ops (keepdims shapes).
  Statistics stats = emitStatistics(c, x, axes, epsilon,
                                    c.hasOutput(1) ? c.node.output(1) : "",
                                    c.hasOutput(2) ? c.node.output(2) : "");
  c.define(1, stats.mean);
  c.define(2, stats.invStd);
  return true;
}

/// InstanceNormalization: per (n, c) over the spatial axes,
/// (x - mean) * rsqrt(var + epsilon) * scale[c] + B[c].
static bool convertInstanceNorm(NodeContext &c) {
  double epsilon = c.attrFloat("epsilon", 1e-5);
  Value *x = c.input(0);
  if (!x)
    return false;
  int64_t rank = x->type.getRank();
  if (rank < 3 || !isFloatDType(x->type.getDType()))
    return c.fail("the input must be a float tensor with spatial dims, not " + x->type.str());
  std::string name = c.node.output(0);
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  Statistics stats = emitStatistics(c, x, axes, epsilon, "", "");
  Value *normalized =
      stats.invStd ? c.emit("multiply", {Operand::of(stats.centered), Operand::of(stats.invStd)},
                            {}, name + "_normalized")
                   : nullptr;
  Value *scale = perChannel(c, 1, rank, name + "_scale");
  Value *bias = perChannel(c, 2, rank, name + "_bias");
  Value *scaled = c.emit("multiply", {Operand::of(normalized), Operand::of(scale)}, {},
                         name + "_scaled");
  c.define(0, c.emit("add", {Operand::of(scaled), Operand::of(bias)}));
  return true;
}

static const char kSoftmax[] = "nn.softmax", kLogSoftmax[] = "nn.log_softmax",
                  kMean[] = "mean", kMax[] = "max";

void onnximport::registerNNOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Conv", convertConv},
      {"MatMul", convertMatMul},
      {"Gemm", convertGemm},
      {"BatchNormalization", convertBatchNorm},
      {"MaxPool", convertPool<true>},
      {"AveragePool", convertPool<false>},
      {"GlobalAveragePool", convertGlobalPool<kMean>},
      {"GlobalMaxPool", convertGlobalPool<kMax>},
      {"Softmax", convertSoftmax<kSoftmax>},
      {"LogSoftmax", convertSoftmax<kLogSoftmax>},
      {"LayerNormalization", convertLayerNorm},
      {"InstanceNormalization", convertInstanceNorm},
  });
}
