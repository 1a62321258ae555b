//===- Complex.cpp - matmul, conv2d and pooling ---------------------------===//
//
// Spec §4 row "complex". matmul follows NumPy (1-D operands are promoted and
// the added axis removed; batch dims broadcast). conv2d and the pools are
// NCHW (weights OIHW); `padding` is [top, left, bottom, right], and also
// accepts one value or [vertical, horizontal], as in TVM. A spatial output
// size is (in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride + 1,
// rounded down, or up with `ceil_mode` (where a window must still start
// inside the padded input, as in PyTorch).
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Ops.h"

using namespace fusec;

static std::optional<Type> inferMatmul(InferContext &ctx) {
  const Type &a = ctx.operand(0), &b = ctx.operand(1);
  if (a.getDType() != b.getDType())
    return ctx.errorAtOperand(1, "matmul operands have different dtypes " +
                                     dtypeName(a.getDType()) + " and " +
                                     dtypeName(b.getDType()));
  if (a.getDType() == DType::boolean)
    return ctx.errorAtOperand(0, "matmul requires numeric operands");
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

/// [top, left, bottom, right] from 1, 2 or 4 values; empty on error.
static std::vector<int64_t> paddingOf(InferContext &ctx) {
  std::vector<int64_t> padding = ctx.intList("padding", 4, {0, 0, 0, 0});
  if (padding.size() == 1)
    padding.assign(4, padding[0]);
  else if (padding.size() == 2)
    padding = {padding[0], padding[1], padding[0], padding[1]};
  if (padding.size() != 4) {
    ctx.errorAtAttr("padding", "padding takes 1, 2 or 4 values");
    return {};
  }
  for (int64_t pad : padding)
    if (pad < 0) {
      ctx.errorAtAttr("padding", "padding must be non-negative");
      return {};
    }
  return padding;
}

/// A two-element positive attribute (strides, dilation, pool_size).
static std::optional<std::vector<int64_t>> pairOf(InferContext &ctx,
                                                  llvm::StringRef name,
                                                  int64_t defaultValue) {
  std::vector<int64_t> values =
      ctx.intList(name, 2, {defaultValue, defaultValue});
  if (values.size() == 1)
    values.assign(2, values[0]);
  if (values.size() != 2)
    return ctx.errorAtAttr(name, name + " takes 1 or 2 values");
  if (values[0] <= 0 || values[1] <= 0)
    return ctx.errorAtAttr(name, name + " must be positive");
  return values;
}

/// One spatial output dim; nullopt (after an error) if not expressible.
static std::optional<Dim> windowOutput(InferContext &ctx, const Dim &in,
                                       int64_t kernel, int64_t stride,
                                       int64_t dilation, int64_t padBegin,
                                       int64_t padEnd, bool ceilMode,
                                       const char *axisName) {
  int64_t reach = dilation * (kernel - 1) + 1;
  if (in.isSymbolic()) {
    if (stride == 1 && padBegin + padEnd == reach - 1)
      return in;
    return ctx.error(std::string("the ") + axisName +
                     " output size over the symbolic dimension '" + in.symbol +
                     "' is not expressible; only size-preserving windows are "
                     "supported on symbolic dims");
  }
  int64_t span = in.size + padBegin + padEnd - reach;
  if (span < 0)
    return ctx.error(std::string("the window (") + std::to_string(reach) +
                     ") is larger than the padded " + axisName + " (" +
                     std::to_string(in.size + padBegin + padEnd) + ")");
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceilMode && (out - 1) * stride >= in.size + padBegin)
    --out;
  return Dim::of(out);
}

static std::optional<Type> inferConv2d(InferContext &ctx) {
  const Type &x = ctx.operand(0), &w = ctx.operand(1);
  if (x.getRank() != 4 || w.getRank() != 4)
    return ctx.error("nn.conv2d takes NCHW data and OIHW weights (rank 4), "
                     "got " + x.str() + " and " + w.str());
  if (x.getDType() != w.getDType() || x.getDType() == DType::boolean)
    return ctx.errorAtOperand(1, "nn.conv2d operands need one numeric dtype, "
                                 "got " + x.str() + " and " + w.str());
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
  bool channelsMatch =
      xs[1].isStatic() && ws[1].isStatic()
          ? xs[1].size == ws[1].size * groups
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
  return Type::tensor(x.getDType(), {xs[0], ws[0], *height, *width});
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
  if (x.getRank() != 4 || !isFloatDType(x.getDType()))
    return ctx.errorAtOperand(0, "nn.adaptive_avg_pool2d takes floating-point "
                                 "NCHW data, got " + x.str());
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

void fusec::registerComplexOps(std::vector<const OpInfo *> &registry) {
  static const std::vector<AttrSpec> poolAttrs = {
      {"pool_size", AttrSchema::IntOrList}, {"strides", AttrSchema::IntOrList},
      {"padding", AttrSchema::IntOrList},   {"dilation", AttrSchema::IntOrList},
      {"ceil_mode", AttrSchema::Bool}};
  static const OpInfo ops[] = {
      {"matmul", OpClass::Complex, 2, 2,
       {{"out_dtype", AttrSchema::DTypeName}}, inferMatmul},
      {"nn.conv2d", OpClass::Complex, 2, 2,
       {{"strides", AttrSchema::IntOrList},
        {"padding", AttrSchema::IntOrList},
        {"dilation", AttrSchema::IntOrList},
        {"groups", AttrSchema::Int}},
       inferConv2d},
      {"nn.max_pool2d", OpClass::Complex, 1, 1, poolAttrs, inferPool2d},
      {"nn.avg_pool2d", OpClass::Complex, 1, 1, poolAttrs, inferPool2d},
      {"nn.adaptive_avg_pool2d", OpClass::Complex, 1, 1,
       {{"output_size", AttrSchema::IntOrList}}, inferAdaptivePool2d},
  };
  for (const OpInfo &op : ops)
    registry.push_back(&op);
}
