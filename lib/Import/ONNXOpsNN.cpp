//===- ONNXOpsNN.cpp - Neural-network ONNX operators ----------------------===//
//
// Gemm -> permute_dims (transA/transB), matmul, alpha and beta as
// multiplications, C added; MatMul -> matmul; BatchNormalization
// (inference) -> x * s + t per channel, s and t folded from constant
// statistics (in double, then rounded) or computed by ops when the
// statistics are not constants (per element with spatial = 0, opsets 1-8);
// ImageScaler -> x * scale + a constant [1, C, 1, 1] bias;
// Softmax/LogSoftmax (opset 13: one axis);
// LayerNormalization ->
// nn.layer_norm over the axes from `axis` on (a missing bias is zeros);
// InstanceNormalization -> mean, variance and rsqrt over the spatial axes;
// LRN -> x / (bias + alpha / size * window sum of x^2)^beta, the window sum
// over channels an nn.conv2d with a column of ones.
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

static bool convertMatMul(NodeContext &c) {
  c.define(0, c.emit("matmul", {Operand::of(c.input(0)), Operand::of(c.input(1))}));
  return true;
}

static bool convertGemm(NodeContext &c) {
  std::string name = c.node.output(0);
  Value *a = c.input(0), *b = c.input(1);
  if (!a || !b)
    return false;
  // A grouped A (ONNXGrouped.cpp) has its rows split into several axes.
  if ((a->type.getRank() != 2 && !c.runsOf(0)) || b->type.getRank() != 2)
    return c.fail("A and B must be matrices");
  if (c.attrInt("transA", 0))
    a = c.emit("permute_dims", {Operand::of(a)}, {}, name + "_at");
  if (c.attrInt("transB", 0))
    b = c.emit("permute_dims", {Operand::of(b)}, {}, name + "_bt");
  double alpha = c.attrFloat("alpha", 1.0), beta = c.attrFloat("beta", 1.0);
  // Gemm before opset 7 says whether C broadcasts; NumPy's rule covers
  // both answers.
  if (c.opset < 7)
    c.attrInt("broadcast", 0);
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
  // spatial = 0 (opsets 1-8): one statistic per element of a sample, the
  // statistics shaped [C, D1, ..., Dn] as the input's dims after the batch.
  bool spatial = c.attrInt("spatial", 1) != 0;
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
  if (!spatial) {
    Shape sample(x->type.getShape().begin() + 1, x->type.getShape().end());
    for (size_t i = 1; i <= 4; ++i)
      if (c.inputShape(i) != sample)
        return c.fail("with spatial = 0, scale, B, mean and var must have the input's dims "
                      "after the batch");
  }
  if (scale && bias && mean && var) {
    int64_t channels = scale->getNumElements();
    for (const TensorData *v : {bias, mean, var})
      if (v->getNumElements() != channels || (spatial && v->getShape().size() != 1))
        return c.fail("scale, B, mean and var must be vectors of one length");
    std::vector<int64_t> shape(size_t(rank), 1);
    shape[1] = channels;
    if (!spatial) {
      shape = scale->getShape();
      shape.insert(shape.begin(), 1);
    }
    TensorData sData(x->type.getDType(), shape), tData(x->type.getDType(), shape);
    for (int64_t k = 0; k < channels; ++k) {
      double factor = scale->get(k) / std::sqrt(var->get(k) + epsilon);
      sData.set(k, factor);
      tData.set(k, bias->get(k) - mean->get(k) * factor);
    }
    s = c.emitConstant(std::move(sData), name + "_scale");
    t = c.emitConstant(std::move(tData), name + "_shift");
  } else {
    // Per element (spatial = 0), the statistics broadcast as they are.
    auto statistic = [&](size_t i, const char *suffix) {
      return spatial ? perChannel(c, i, rank, name + suffix) : c.input(i);
    };
    Value *scaleV = statistic(1, "_gamma"), *biasV = statistic(2, "_beta"),
          *meanV = statistic(3, "_mean"), *varV = statistic(4, "_var");
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

/// ImageScaler (an experimental operator of opsets 1 to 9, in the first
/// model zoo's Tiny YOLOv2): scale x + bias[c] over NCHW.
static bool convertImageScaler(NodeContext &c) {
  // An experimental operator (no schema in ONNX's tables) that ONNX 1.5
  // removed, with opset 10; ONNX Runtime keeps it until then as well.
  if (c.opset >= 10)
    return c.fail("ImageScaler is an experimental operator that ONNX removed in opset 10");
  Value *x = c.input(0);
  if (!x)
    return false;
  const Type &type = x->type;
  if (type.getRank() < 2 || !isFloatDType(type.getDType()) || type.getShape()[1].isSymbolic())
    return c.fail("the input must be a float tensor with static channels, not " + type.str());
  double scale = c.attrFloat("scale", 1.0);
  std::vector<double> bias = c.attrFloats("bias");
  int64_t channels = type.getShape()[1].size;
  if (!bias.empty() && int64_t(bias.size()) != channels)
    return c.fail("bias has " + std::to_string(bias.size()) + " values for " +
                  std::to_string(channels) + " channels");
  std::string name = c.node.output(0);
  Value *scaled = x;
  if (scale != 1)
    scaled = c.emit("multiply", {Operand::of(x), NodeContext::literal(scale, type.getDType())}, {},
                    bias.empty() ? name : name + "_scaled");
  if (!scaled || bias.empty())
    return c.define(0, scaled), scaled != nullptr;
  std::vector<int64_t> shape(size_t(type.getRank()), 1);
  shape[1] = channels;
  TensorData values(type.getDType(), shape);
  for (int64_t k = 0; k < channels; ++k)
    values.set(k, bias[size_t(k)]);
  Value *offsets = c.emitConstant(std::move(values), name + "_bias");
  c.define(0, c.emit("add", {Operand::of(scaled), Operand::of(offsets)}, {}, name));
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
  // over all the dims from `axis` on (merged into one, the leading dims
  // kept as they are, so that they may be symbolic).
  int64_t inner = 1;
  for (int64_t d = *axis; d < rank; ++d) {
    const Dim &dim = x->type.getShape()[d];
    if (dim.isSymbolic())
      return c.fail("a softmax over the symbolic dim '" + dim.symbol + "' before opset 13 (--dim " +
                    dim.symbol + "=SIZE fixes its size)");
    if (__builtin_mul_overflow(inner, dim.size, &inner))
      return c.fail("more elements than fit in i64");
  }
  std::string name = c.node.output(0);
  Shape rowsShape(x->type.getShape().begin(), x->type.getShape().begin() + *axis);
  rowsShape.push_back(Dim::of(inner));
  Value *rows = reshapeTo(c, x, rowsShape, name + "_rows");
  attrs.set("axis", Attr::makeInt(*axis));
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

/// Scale or B of LayerNormalization as nn.layer_norm takes it: the
/// normalized shape. ONNX only asks that they broadcast to it (its function
/// body multiplies and adds): leading unit dims are dropped, unit dims
/// broadcast.
static Value *fitToNormalized(NodeContext &c, Value *value, const Shape &normalized,
                              const char *what) {
  if (!value || value->type.getShape() == normalized)
    return value;
  Shape shape = value->type.getShape();
  auto fail = [&] {
    c.fail(std::string(what) + " " + value->type.str() +
           " does not broadcast to the normalized shape " +
           Type::tensor(value->type.getDType(), normalized).str());
    return nullptr;
  };
  while (shape.size() > normalized.size()) {
    if (shape.front() != Dim::of(1))
      return fail();
    shape.erase(shape.begin());
  }
  for (size_t k = 0; k < shape.size(); ++k) {
    const Dim &dim = shape[shape.size() - 1 - k], &target = normalized[normalized.size() - 1 - k];
    if (dim != target && dim != Dim::of(1))
      return fail();
  }
  std::string name = c.node.output(0) + "_" + llvm::StringRef(what).lower();
  if (shape != value->type.getShape())
    value = reshapeTo(c, value, shape, name + "_fitted");
  if (!value || shape == normalized)
    return value;
  Attrs attrs;
  attrs.set("shape", makeShapeList(normalized));
  return c.emit("broadcast_to", {Operand::of(value)}, attrs, name + "_broadcast");
}

static bool convertLayerNorm(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  int64_t rank = x->type.getRank();
  std::optional<int64_t> axis = normalizeAxis(c.attrInt("axis", -1), rank);
  if (!axis)
    return c.fail("axis is out of range for rank " + std::to_string(rank));
  c.attrInt("stash_type", 1);
  std::vector<int64_t> axes;
  Shape normalized;
  for (int64_t d = *axis; d < rank; ++d) {
    axes.push_back(d);
    normalized.push_back(x->type.getShape()[d]);
  }
  Value *scale = fitToNormalized(c, c.input(1), normalized, "Scale");
  if (!scale)
    return false;
  Value *bias = c.hasInput(2)
                    ? fitToNormalized(c, c.input(2), normalized, "B")
                    : c.emitSplat(0, x->type.getDType(), normalized, c.node.output(0) + "_bias");
  if (!bias)
    return false;
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

static const char kSoftmax[] = "nn.softmax", kLogSoftmax[] = "nn.log_softmax";

/// LRN (AlexNet, GoogLeNet): y = x / (bias + alpha / size * s)^beta, with s
/// the sum of x^2 over a window of `size` channels (floor((size - 1) / 2)
/// before, ceil after). The window sum is an nn.conv2d of x^2, seen as
/// [N, 1, C, rest], with a [1, 1, size, 1] kernel of ones and zero padding.
static bool convertLRN(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  double alpha = c.attrFloat("alpha", 1e-4), beta = c.attrFloat("beta", 0.75),
         bias = c.attrFloat("bias", 1.0);
  int64_t size = c.attrInt("size", 0), rank = x->type.getRank();
  if (size < 1 || size > (int64_t(1) << 20))
    return c.fail("size must be a positive window, not " + std::to_string(size));
  if (rank < 3 || !isFloatDType(x->type.getDType()))
    return c.fail("the input must be a float tensor [N, C, ...], not " + x->type.str());
  int64_t rest = 1;
  for (int64_t d = 2; d < rank; ++d) {
    const Dim &dim = x->type.getShape()[d];
    if (dim.isSymbolic())
      return c.fail("the spatial dims must be static, not " + x->type.str() + " (--dim " +
                    dim.symbol + "=SIZE fixes '" + dim.symbol + "')");
    rest *= dim.size;
  }
  std::string name = c.node.output(0);
  DType dtype = x->type.getDType();
  const Shape &shape = x->type.getShape();
  Value *square = c.emit("multiply", {Operand::of(x), Operand::of(x)}, {}, name + "_square");
  Attrs planes;
  planes.set("shape", makeShapeList({shape[0], Dim::of(1), shape[1], Dim::of(rest)}));
  Value *stacked = square ? c.emit("reshape", {Operand::of(square)}, planes, name + "_planes")
                          : nullptr;
  TensorData ones(dtype, {1, 1, size, 1});
  for (int64_t k = 0; k < size; ++k)
    ones.set(k, 1.0);
  Value *window = c.emitConstant(std::move(ones), name + "_window");
  Attrs conv;
  conv.set("padding", makeIntList({(size - 1) / 2, 0, size / 2, 0}));
  Value *sums = stacked ? c.emit("nn.conv2d", {Operand::of(stacked), Operand::of(window)}, conv,
                                 name + "_window_sum")
                        : nullptr;
  Attrs back;
  back.set("shape", makeShapeList(shape));
  Value *sum = sums ? c.emit("reshape", {Operand::of(sums)}, back, name + "_sum") : nullptr;
  Value *scaled = sum ? c.emit("multiply", {Operand::of(sum), NodeContext::literal(alpha / double(size), dtype)},
                               {}, name + "_scaled")
                      : nullptr;
  Value *base = scaled ? c.emit("add", {Operand::of(scaled), NodeContext::literal(bias, dtype)}, {},
                                name + "_base")
                       : nullptr;
  Value *denominator =
      base ? c.emit("power", {Operand::of(base), NodeContext::literal(beta, dtype)}, {},
                    name + "_denominator")
           : nullptr;
  if (!denominator)
    return false;
  c.define(0, c.emit("divide", {Operand::of(x), Operand::of(denominator)}));
  return true;
}

void onnximport::registerNNOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"MatMul", convertMatMul},
      {"Gemm", convertGemm},
      {"BatchNormalization", convertBatchNorm},
      {"ImageScaler", convertImageScaler},
      {"Softmax", convertSoftmax<kSoftmax>},
      {"LogSoftmax", convertSoftmax<kLogSoftmax>},
      {"LayerNormalization", convertLayerNorm},
      {"InstanceNormalization", convertInstanceNorm},
      {"LRN", convertLRN},
  });
}
