//===- Complex.cpp - matmul, conv2d and pooling ---------------------------===//
//
// Spec §4 row "complex". matmul follows NumPy (1-D operands are promoted and
// the added axis removed; batch dims broadcast). conv2d and the pools are
// NCHW (weights OIHW); `padding` is [top, left, bottom, right], and also
// accepts one value or [vertical, horizontal], as in TVM. A spatial output
// size is (in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1,
// rounded down, or up with `ceil_mode` (as TVM Relax computes it).
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Ops.h"

#include <limits>

using namespace fusec;

static std::optional<Type> inferMatmul(InferContext &ctx) {
  const Type &a = ctx.operand(0), &b = ctx.operand(1);
  // As TVM's InferStructInfoMatmul: operands of two dtypes need an
  // out_dtype, which each is cast to.
  if (a.getDType() != b.getDType() && !ctx.attr("out_dtype"))
    return ctx.errorAtOperand(1, "matmul operands have different dtypes " +
                                     dtypeName(a.getDType()) + " and " +
                                     dtypeName(b.getDType()) + "; give an out_dtype");
  for (int k = 0; k < 2; ++k)
    if (ctx.operand(k).getDType() == DType::boolean)
      return ctx.errorAtOperand(k, "matmul requires numeric operands");
  if (a.getRank() == 0 || b.getRank() == 0)
    return ctx.error("matmul operands must have rank >= 1, got " + a.str() +
                     " and " + b.str());
  Shape left = a.getShape(), right = b.getShape();
  bool leftVector = left.size() == 1, rightVector = right.size() == 1;
  if (leftVector)
    left.insert(left.begin(), Dim::of(1));
  if (rightVector)
    right.push_back(Dim::of(1));
  const Dim &k1 = left.back(), &k2 = right[right.size() - 2];
  if (k1 != k2)
    return ctx.error("matmul reduction dimensions differ: " + a.str() + " x " +
                     b.str() + " (" + k1.str() + " vs " + k2.str() + ")");
  std::string problem;
  auto batch = broadcastShapes(Shape(left.begin(), left.end() - 2),
                               Shape(right.begin(), right.end() - 2), problem);
  if (!batch)
    return ctx.error("matmul batch dimensions do not broadcast: " + a.str() +
                     " x " + b.str() + ": " + problem);
  Shape shape = *batch;
  if (!leftVector)
    shape.push_back(left[left.size() - 2]);
  if (!rightVector)
    shape.push_back(right.back());
  DType outDType = a.getDType();
  if (const Attr *out = ctx.attr("out_dtype"))
    outDType = *parseDType(out->text);
  return Type::tensor(outDType, shape);
}

/// The `padding` attribute as [top, left, bottom, right] (from 1, 2 or 4
/// values), and the two values of `name` (from 1 or 2). Inference checks
/// the counts; legalization reads the same normalized values.
std::vector<int64_t> fusec::windowPaddingAttr(const Attr *value) {
  std::vector<int64_t> padding = intListAttr(value, 4, {0, 0, 0, 0});
  if (padding.size() == 1)
    padding.assign(4, padding[0]);
  else if (padding.size() == 2)
    padding = {padding[0], padding[1], padding[0], padding[1]};
  return padding;
}

std::vector<int64_t> fusec::windowPairAttr(const Attr *value, int64_t defaultValue) {
  std::vector<int64_t> values = intListAttr(value, 2, {defaultValue, defaultValue});
  if (values.size() == 1)
    values.assign(2, values[0]);
  return values;
}

/// [top, left, bottom, right]; empty after an error.
static std::vector<int64_t> paddingOf(InferContext &ctx) {
  std::vector<int64_t> padding = windowPaddingAttr(ctx.attr("padding"));
  if (padding.size() != 4) {
    ctx.errorAtAttr("padding", "padding takes 1, 2 or 4 values");
    return {};
  }
  for (int64_t pad : padding)
    if (pad < 0 || pad > kMaxDimSize) {
      ctx.errorAtAttr("padding", pad < 0 ? "padding must be non-negative"
                                         : "padding must be at most 2^40, as a dimension");
      return {};
    }
  return padding;
}

/// A two-element positive attribute (strides, dilation, pool_size).
static std::optional<std::vector<int64_t>> pairOf(InferContext &ctx,
                                                  llvm::StringRef name,
                                                  int64_t defaultValue) {
  std::vector<int64_t> values = windowPairAttr(ctx.attr(name), defaultValue);
  if (values.size() != 2)
    return ctx.errorAtAttr(name, name + " takes 1 or 2 values");
  if (values[0] <= 0 || values[1] <= 0)
    return ctx.errorAtAttr(name, name + " must be positive");
  if (values[0] > kMaxDimSize || values[1] > kMaxDimSize)
    return ctx.errorAtAttr(name, name + " must be at most 2^40, as a dimension");
  return values;
}

/// One spatial output dim; nullopt (after an error) if not expressible.
static std::optional<Dim> windowOutput(InferContext &ctx, const Dim &in,
                                       int64_t kernel, int64_t stride,
                                       int64_t dilation, int64_t padBegin,
                                       int64_t padEnd, bool ceilMode,
                                       const char *axisName) {
  // Every factor is at most 2^40 (a dim, or a checked attribute): in 128
  // bits nothing overflows.
  __int128 reach = __int128(dilation) * (kernel - 1) + 1;
  if (in.isSymbolic()) {
    if (stride == 1 && padBegin + padEnd == reach - 1)
      return in;
    return ctx.error(std::string("the ") + axisName +
                     " output size over the symbolic dimension '" + in.symbol +
                     "' is not expressible; only size-preserving windows are "
                     "supported on symbolic dims");
  }
  __int128 padded = __int128(in.size) + padBegin + padEnd;
  __int128 span = padded - reach;
  if (span < 0)
    return ctx.error(std::string("the window (") +
                     (reach > std::numeric_limits<int64_t>::max() ? std::string("above 2^63")
                                                        : std::to_string(int64_t(reach))) +
                     ") is larger than the padded " + axisName + " (" +
                     std::to_string(int64_t(padded)) + ")");
  // TVM Relax's rule (InferStructInfoPool2D): ceil mode rounds up, and a
  // last window that starts in the padding is kept.
  __int128 out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  if (out > kMaxDimSize)
    return ctx.error(std::string("the ") + axisName + " output size exceeds 2^40");
  return Dim::of(int64_t(out));
}

static std::optional<Type> inferConv2d(InferContext &ctx) {
  const Type &x = ctx.operand(0), &w = ctx.operand(1);
  if (x.getRank() != 4 || w.getRank() != 4)
    return ctx.error("nn.conv2d takes NCHW data and OIHW weights (rank 4), "
                     "got " + x.str() + " and " + w.str());
  // As matmul (TVM's InferStructInfoConv2d): operands of two dtypes need
  // an out_dtype, which each is cast to.
  if (x.getDType() == DType::boolean || w.getDType() == DType::boolean ||
      (x.getDType() != w.getDType() && !ctx.attr("out_dtype")))
    return ctx.errorAtOperand(1, "nn.conv2d operands need one numeric dtype (or an "
                                 "out_dtype), got " + x.str() + " and " + w.str());
  auto strides = pairOf(ctx, "strides", 1);
  auto dilation = pairOf(ctx, "dilation", 1);
  std::vector<int64_t> padding = paddingOf(ctx);
  if (!strides || !dilation || padding.empty())
    return std::nullopt;
  int64_t groups = *ctx.intAttr("groups", 1);
  if (groups <= 0)
    return ctx.errorAtAttr("groups", "groups must be positive");
  const Shape &xs = x.getShape(), &ws = w.getShape();
  if (ws[2].isSymbolic() || ws[3].isSymbolic())
    return ctx.errorAtOperand(1, "nn.conv2d kernel sizes must be static");
  int64_t groupChannels = 0;
  bool channelsMatch =
      xs[1].isStatic() && ws[1].isStatic()
          ? !__builtin_mul_overflow(ws[1].size, groups, &groupChannels) &&
                xs[1].size == groupChannels
          : groups == 1 && xs[1] == ws[1];
  if (!channelsMatch)
    return ctx.error("nn.conv2d input channels " + xs[1].str() + " != " +
                     ws[1].str() + " (weight channels) x " +
                     std::to_string(groups) + " (groups)");
  if (ws[0].isStatic() && ws[0].size % groups != 0)
    return ctx.error("nn.conv2d output channels " + ws[0].str() +
                     " are not divisible by groups " + std::to_string(groups));
  auto height = windowOutput(ctx, xs[2], ws[2].size, (*strides)[0],
                             (*dilation)[0], padding[0], padding[2], false,
                             "height");
  if (!height)
    return std::nullopt;
  auto width = windowOutput(ctx, xs[3], ws[3].size, (*strides)[1],
                            (*dilation)[1], padding[1], padding[3], false,
                            "width");
  if (!width)
    return std::nullopt;
  DType outDType = x.getDType();
  if (const Attr *out = ctx.attr("out_dtype"))
    outDType = *parseDType(out->text);
  return Type::tensor(outDType, {xs[0], ws[0], *height, *width});
}

static std::optional<Type> inferPool2d(InferContext &ctx) {
  const Type &x = ctx.operand(0);
  if (x.getRank() != 4 || x.getDType() == DType::boolean)
    return ctx.errorAtOperand(0, "'" + ctx.binding.callee +
                                     "' takes numeric NCHW data, got " + x.str());
  auto poolSize = pairOf(ctx, "pool_size", 1);
  auto strides = pairOf(ctx, "strides", 1);
  auto dilation = pairOf(ctx, "dilation", 1);
  std::vector<int64_t> padding = paddingOf(ctx);
  if (!poolSize || !strides || !dilation || padding.empty())
    return std::nullopt;
  const Attr *ceilAttr = ctx.attr("ceil_mode");
  bool ceilMode = ceilAttr && ceilAttr->boolValue;
  const Shape &xs = x.getShape();
  auto height = windowOutput(ctx, xs[2], (*poolSize)[0], (*strides)[0],
                             (*dilation)[0], padding[0], padding[2], ceilMode,
                             "height");
  if (!height)
    return std::nullopt;
  auto width = windowOutput(ctx, xs[3], (*poolSize)[1], (*strides)[1],
                            (*dilation)[1], padding[1], padding[3], ceilMode,
                            "width");
  if (!width)
    return std::nullopt;
  return Type::tensor(x.getDType(), {xs[0], xs[1], *height, *width});
}

static std::optional<Type> inferAdaptivePool2d(InferContext &ctx) {
  const Type &x = ctx.operand(0);
  if (x.getRank() != 4 || x.getDType() == DType::boolean)
    return ctx.errorAtOperand(0, "nn.adaptive_avg_pool2d takes numeric NCHW data, got " +
                                     x.str());
  Shape shape = x.getShape();
  if (ctx.attr("output_size")) {
    auto size = pairOf(ctx, "output_size", 1);
    if (!size)
      return std::nullopt;
    shape[2] = Dim::of((*size)[0]);
    shape[3] = Dim::of((*size)[1]);
  }
  return Type::tensor(x.getDType(), shape);
}

//===----------------------------------------------------------------------===//
// Legalization. matmul and conv2d are one multiply-accumulate reduction
// (the FMA shape the analysis calls out_ewise_fusable); padding is a
// bounds predicate inside the body rather than a padded copy. Pools reduce
// a window; average pools divide by the number of in-bounds elements
// (TVM's count_include_pad = false), at least 1.
//===----------------------------------------------------------------------===//

static KExprPtr dimValue(const Dim &dim) {
  return dim.isSymbolic() ? KExpr::var(dim.symbol) : KExpr::intConst(dim.size);
}

static KExprPtr plus(KExprPtr a, int64_t constant) {
  if (constant == 0)
    return a;
  return constant > 0 ? KExpr::binary(KExpr::Add, a, KExpr::intConst(constant))
                      : KExpr::binary(KExpr::Sub, a, KExpr::intConst(-constant));
}

static KExprPtr times(KExprPtr a, int64_t constant) {
  return constant == 1 ? a : KExpr::binary(KExpr::Mul, a, KExpr::intConst(constant));
}

static KExprPtr both(KExprPtr a, KExprPtr b) {
  return a ? (b ? KExpr::binary(KExpr::And, a, b) : a) : b;
}

/// Whether every value of `from` is a value of `to`.
static bool castKeepsValues(DType from, DType to) {
  auto intBits = [](DType t) {
    return t == DType::i8 ? 8 : t == DType::i32 ? 32 : t == DType::i64 ? 64 : 0;
  };
  if (from == to)
    return true;
  if (intBits(from) && intBits(to))
    return intBits(from) < intBits(to);
  if (from == DType::i8)
    return isFloatDType(to);
  return (from == DType::f16 || from == DType::bf16) && to == DType::f32;
}

/// A contraction's operand load cast to the result's dtype `dtype` (TVM's
/// te_matmul and conv2d cast to out_dtype), then to its accumulation dtype
/// `acc`. A cast that keeps every value is left out, so that a tiled
/// schedule still stages the operand as stored (i8 tiles for an i8 x i8 ->
/// i32 matmul).
static KExprPtr castOperand(KExprPtr load, DType dtype, DType acc) {
  if (!castKeepsValues(load->dtype, dtype))
    load = castTo(load, dtype);
  return castTo(load, acc);
}

static void legalizeMatmul(KernelBuilder &b) {
  Shape left = b.operandType(0).getShape(), right = b.operandType(1).getShape();
  bool leftVector = left.size() == 1, rightVector = right.size() == 1;
  const Shape &out = b.resultType.getShape();
  auto vars = KernelBuilder::varNames("i", out.size());
  std::vector<KExprPtr> outVars = KernelBuilder::vars(vars);
  size_t batch = out.size() - (leftVector ? 0 : 1) - (rightVector ? 0 : 1);
  std::string reduceVar = KernelBuilder::freshName("r0");
  KExprPtr r = KExpr::var(reduceVar);
  auto batchIndices = [&](const Shape &operand, size_t matrixDims) {
    std::vector<KExprPtr> indices;
    size_t operandBatch = operand.size() - matrixDims;
    for (size_t d = 0; d < operandBatch; ++d) {
      size_t outDim = batch - operandBatch + d;
      bool broadcast = operand[d] == Dim::of(1) && out[outDim] != Dim::of(1);
      indices.push_back(broadcast ? KExpr::intConst(0) : outVars[outDim]);
    }
    return indices;
  };
  std::vector<KExprPtr> a = batchIndices(left, leftVector ? 1 : 2);
  if (!leftVector)
    a.push_back(outVars[batch]);
  a.push_back(r);
  std::vector<KExprPtr> w = batchIndices(right, rightVector ? 1 : 2);
  w.push_back(r);
  if (!rightVector)
    w.push_back(outVars.back());
  DType dtype = b.resultType.getDType(), acc = computeDType(dtype);
  KExprPtr product = KExpr::call(
      "multiply", {castOperand(b.load(0, a), dtype, acc), castOperand(b.load(1, w), dtype, acc)},
      acc);
  b.addReduction(b.outputName(0), vars, "add", {{reduceVar, left.back()}}, 0.0, acc,
                 product);
}

/// An input read through a padded window: the load, guarded by a bounds
/// predicate when the window can leave the input.
struct WindowRead {
  std::vector<KExprPtr> indices;
  KExprPtr inBounds; // null when always in bounds
};

static WindowRead windowRead(KernelBuilder &b, const std::vector<KExprPtr> &outVars,
                             KExprPtr channel, const std::vector<int64_t> &strides,
                             const std::vector<int64_t> &dilation,
                             const std::vector<int64_t> &padding, bool ceilMode) {
  const Shape &in = b.operandType(0).getShape();
  WindowRead read{{outVars[0], channel}, nullptr};
  for (int d = 0; d < 2; ++d) {
    KExprPtr position = plus(KExpr::binary(KExpr::Add, times(outVars[2 + d], strides[d]),
                                           times(KExpr::var(KernelBuilder::freshName(
                                                     d ? "rw" : "rh")),
                                                 dilation[d])),
                             -padding[d]);
    read.indices.push_back(position);
    if (padding[d] > 0)
      read.inBounds = both(read.inBounds, KExpr::binary(KExpr::Ge, position, KExpr::intConst(0)));
    if (padding[d + 2] > 0 || ceilMode)
      read.inBounds = both(read.inBounds,
                           KExpr::binary(KExpr::Lt, position, dimValue(in[2 + d])));
  }
  return read;
}

static void legalizeConv2d(KernelBuilder &b) {
  const Shape &weights = b.operandType(1).getShape();
  const Shape &out = b.resultType.getShape();
  int64_t groups = b.attr("groups") ? b.attr("groups")->intValue : 1;
  auto vars = KernelBuilder::varNames("i", 4);
  std::vector<KExprPtr> outVars = KernelBuilder::vars(vars);
  std::string rc = KernelBuilder::freshName("rc"), rh = KernelBuilder::freshName("rh"),
              rw = KernelBuilder::freshName("rw");
  KExprPtr c = KExpr::var(rc);
  KExprPtr channel = c;
  if (groups > 1) // input channel = group(o) * (C / groups) + c
    channel = KExpr::binary(
        KExpr::Add,
        times(KExpr::binary(KExpr::FloorDiv, outVars[1],
                            KExpr::intConst(out[1].size / groups)),
              weights[1].size),
        c);
  WindowRead read = windowRead(b, outVars, channel, windowPairAttr(b.attr("strides"), 1),
                               windowPairAttr(b.attr("dilation"), 1), windowPaddingAttr(b.attr("padding")), false);
  DType dtype = b.resultType.getDType(), acc = computeDType(dtype);
  KExprPtr x = castOperand(b.load(0, read.indices), dtype, acc);
  if (read.inBounds)
    x = KExpr::select(read.inBounds, x, KExpr::literal(0, acc));
  KExprPtr w = castOperand(b.load(1, {outVars[1], c, KExpr::var(rh), KExpr::var(rw)}), dtype, acc);
  b.addReduction(b.outputName(0), vars, "add",
                 {{rc, weights[1]}, {rh, weights[2]}, {rw, weights[3]}}, 0.0, acc,
                 KExpr::call("multiply", {x, w}, acc));
}

static void legalizePool2d(KernelBuilder &b) {
  std::vector<int64_t> poolSize = windowPairAttr(b.attr("pool_size"), 1);
  bool ceilMode = b.attr("ceil_mode") && b.attr("ceil_mode")->boolValue;
  auto vars = KernelBuilder::varNames("i", 4);
  std::vector<KExprPtr> outVars = KernelBuilder::vars(vars);
  WindowRead read = windowRead(b, outVars, outVars[1], windowPairAttr(b.attr("strides"), 1),
                               windowPairAttr(b.attr("dilation"), 1), windowPaddingAttr(b.attr("padding")), ceilMode);
  DType dtype = b.resultType.getDType(), acc = computeDType(dtype);
  std::vector<std::pair<std::string, Dim>> window = {
      {KernelBuilder::freshName("rh"), Dim::of(poolSize[0])},
      {KernelBuilder::freshName("rw"), Dim::of(poolSize[1])}};
  KExprPtr x = castTo(b.load(0, read.indices), acc);
  if (b.binding.callee == "nn.max_pool2d") {
    // The padding holds the dtype's lowest finite value, as TVM pads with
    // min_value: a window wholly in the padding gives it, not -inf.
    if (read.inBounds)
      x = KExpr::select(read.inBounds, x, KExpr::literal(lowestFiniteValue(dtype), acc));
    b.addReduction(b.outputName(0), vars, "max", window, lowestValue(dtype), acc, x);
    return;
  }
  b.addInternal("sum", Type::tensor(acc, b.resultType.getShape()));
  KExprPtr count = KExpr::literal(double(poolSize[0] * poolSize[1]), acc);
  if (read.inBounds) {
    x = KExpr::select(read.inBounds, x, KExpr::literal(0, acc));
    b.addInternal("count", Type::tensor(acc, b.resultType.getShape()));
    b.addReduction("count", vars, "add", window, 0.0, acc,
                   KExpr::select(read.inBounds, KExpr::literal(1, acc),
                                 KExpr::literal(0, acc)));
    // A window entirely in the padding has no element: TVM divides by at
    // least 1 there, so its average is 0 (not 0/0, nor an integer trap).
    count = KExpr::call("maximum", {b.loadBuffer("count", outVars), KExpr::literal(1, acc)}, acc);
  }
  b.addReduction("sum", vars, "add", window, 0.0, acc, x);
  b.addStage(b.outputName(0), vars,
             castTo(KExpr::call("divide", {b.loadBuffer("sum", outVars), count}, acc), dtype));
}

static void legalizeAdaptivePool2d(KernelBuilder &b) {
  const Shape &in = b.operandType(0).getShape(), &out = b.resultType.getShape();
  auto vars = KernelBuilder::varNames("i", 4);
  std::vector<KExprPtr> outVars = KernelBuilder::vars(vars);
  DType dtype = b.resultType.getDType(), acc = computeDType(dtype);
  std::vector<KExprPtr> starts, lengths;
  std::vector<std::pair<std::string, Dim>> window;
  for (int d = 0; d < 2; ++d) {
    // Window [floor(o * I / O), ceil((o + 1) * I / O)).
    KExprPtr inSize = dimValue(in[2 + d]), outSize = dimValue(out[2 + d]);
    KExprPtr start = KExpr::binary(KExpr::FloorDiv,
                                   KExpr::binary(KExpr::Mul, outVars[2 + d], inSize), outSize);
    KExprPtr end = KExpr::binary(
        KExpr::FloorDiv,
        KExpr::binary(KExpr::Sub,
                      KExpr::binary(KExpr::Add,
                                    KExpr::binary(KExpr::Mul, plus(outVars[2 + d], 1), inSize),
                                    outSize),
                      KExpr::intConst(1)),
        outSize);
    int64_t widest = 1;
    if (in[2 + d].isStatic() && out[2 + d].isStatic() && out[2 + d].size > 0)
      for (int64_t o = 0; o < out[2 + d].size; ++o)
        widest = std::max(widest, (((o + 1) * in[2 + d].size + out[2 + d].size - 1) /
                                   out[2 + d].size) - (o * in[2 + d].size / out[2 + d].size));
    starts.push_back(start);
    lengths.push_back(KExpr::binary(KExpr::Sub, end, start));
    window.push_back({KernelBuilder::freshName(d ? "rw" : "rh"), Dim::of(widest)});
  }
  KExprPtr rh = KExpr::var(window[0].first), rw = KExpr::var(window[1].first);
  KExprPtr inside = KExpr::binary(KExpr::And, KExpr::binary(KExpr::Lt, rh, lengths[0]),
                                  KExpr::binary(KExpr::Lt, rw, lengths[1]));
  KExprPtr x = castTo(b.load(0, {outVars[0], outVars[1],
                                 KExpr::binary(KExpr::Add, starts[0], rh),
                                 KExpr::binary(KExpr::Add, starts[1], rw)}),
                      acc);
  b.addInternal("sum", Type::tensor(acc, out));
  b.addReduction("sum", vars, "add", window, 0.0, acc,
                 KExpr::select(inside, x, KExpr::literal(0, acc)));
  KExprPtr area = KExpr::cast(KExpr::binary(KExpr::Mul, lengths[0], lengths[1]), acc);
  b.addStage(b.outputName(0), vars,
             castTo(KExpr::call("divide", {b.loadBuffer("sum", outVars), area}, acc), dtype));
}

void fusec::registerComplexOps(std::vector<const OpInfo *> &registry) {
  static const std::vector<AttrSpec> poolAttrs = {
      {"pool_size", AttrSchema::IntOrList}, {"strides", AttrSchema::IntOrList},
      {"padding", AttrSchema::IntOrList},   {"dilation", AttrSchema::IntOrList},
      {"ceil_mode", AttrSchema::Bool}};
  static const OpInfo ops[] = {
      {"matmul", OpClass::Complex, 2, 2,
       {{"out_dtype", AttrSchema::DTypeName}}, inferMatmul, false, legalizeMatmul},
      {"nn.conv2d", OpClass::Complex, 2, 2,
       {{"strides", AttrSchema::IntOrList},
        {"padding", AttrSchema::IntOrList},
        {"dilation", AttrSchema::IntOrList},
        {"groups", AttrSchema::Int},
        {"out_dtype", AttrSchema::DTypeName}},
       inferConv2d, false, legalizeConv2d},
      {"nn.max_pool2d", OpClass::Complex, 1, 1, poolAttrs, inferPool2d, false,
       legalizePool2d},
      {"nn.avg_pool2d", OpClass::Complex, 1, 1, poolAttrs, inferPool2d, false,
       legalizePool2d},
      {"nn.adaptive_avg_pool2d", OpClass::Complex, 1, 1,
       {{"output_size", AttrSchema::IntOrList}}, inferAdaptivePool2d, false,
       legalizeAdaptivePool2d},
  };
  for (const OpInfo &op : ops)
    registry.push_back(&op);
}
