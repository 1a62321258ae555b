//===- ONNXOpsSpatial.cpp - DepthToSpace, SpaceToDepth ---------------------===//
//
// FIR has none of these operators; each becomes the layout or convolution
// ops that compute it:
//   DepthToSpace (PixelShuffle) and SpaceToDepth: reshape to rank 6,
//     permute_dims, reshape back (ONNX's DCR and CRD orders);
//   GridSample (torch's grid_sample): per output pixel the grid's (x, y)
//     unnormalized to source coordinates and padded (border: clipped;
//     reflection: reflected, then clipped), then for each tap (1 nearest,
//     2x2 bilinear, 4x4 bicubic with A = -0.75) a `take` of the flattened
//     input at n*CHW + c*HW + y*W + x (clamped into range) weighted and
//     kept only where the tap lies inside the input (zeros outside).
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

bool onnximport::staticDims(NodeContext &c, const Type &x, const std::vector<int64_t> &dims) {
  for (int d : dims)
    if (x.getShape()[size_t(d)].isSymbolic())
      return c.fail("dim " + std::to_string(d) + " of " + x.str() + " must be static, not '" +
                    x.getShape()[size_t(d)].symbol + "' (--dim " + x.getShape()[size_t(d)].symbol +
                    "=SIZE fixes its size)");
  return true;
}

Value *onnximport::reshapeTo(NodeContext &c, Value *x, const Shape &shape,
                              const std::string &hint) {
  Attrs attrs;
  attrs.set("shape", makeShapeList(shape));
  return x ? c.emit("reshape", {Operand::of(x)}, attrs, hint) : nullptr;
}

Value *onnximport::castTo(NodeContext &c, Value *x, DType dtype, const std::string &hint) {
  Attrs attrs;
  attrs.set("dtype", Attr::makeString(dtypeName(dtype).str()));
  return c.emit("astype", {Operand::of(x)}, attrs, hint);
}

Value *onnximport::permute(NodeContext &c, Value *x, const std::vector<int64_t> &axes,
                           const std::string &hint) {
  Attrs attrs;
  attrs.set("axes", makeIntList(axes));
  return x ? c.emit("permute_dims", {Operand::of(x)}, attrs, hint) : nullptr;
}

template <bool ToSpace>
static bool convertDepthSpace(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  if (x->type.getRank() != 4)
    return c.fail("the input must be NCHW (rank 4), not " + x->type.str());
  if (!staticDims(c, x->type, {1, 2, 3}))
    return false;
  int64_t block = c.attrInt("blocksize", 0);
  if (block < 1 || block > 1024)
    return c.fail("blocksize must be in [1, 1024]");
  const Shape &in = x->type.getShape();
  Dim n = in[0];
  int64_t channels = in[1].size, height = in[2].size, width = in[3].size;
  std::string name = c.node.output(0);
  if (ToSpace) { // DepthToSpace
    std::string mode = c.attrString("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      return c.fail("mode must be DCR or CRD, not '" + mode + "'");
    if (channels % (block * block) != 0)
      return c.fail("the channels (" + std::to_string(channels) + ") are not a multiple of " +
                    std::to_string(block * block));
    int64_t depth = channels / (block * block);
    Dim b = Dim::of(block), d = Dim::of(depth), h = Dim::of(height), w = Dim::of(width);
    Value *split = mode == "DCR" ? reshapeTo(c, x, {n, b, b, d, h, w}, name + "_blocks")
                                 : reshapeTo(c, x, {n, d, b, b, h, w}, name + "_blocks");
    Value *moved = mode == "DCR" ? permute(c, split, {0, 3, 4, 1, 5, 2}, name + "_moved")
                                 : permute(c, split, {0, 1, 4, 2, 5, 3}, name + "_moved");
    c.define(0, reshapeTo(c, moved, {n, d, Dim::of(height * block), Dim::of(width * block)},
                          name));
    return true;
  }
  if (height % block || width % block)
    return c.fail("the spatial dims " + std::to_string(height) + "x" + std::to_string(width) +
                  " are not multiples of the blocksize " + std::to_string(block));
  Dim b = Dim::of(block);
  Value *split = reshapeTo(c, x,
                           {n, Dim::of(channels), Dim::of(height / block), b,
                            Dim::of(width / block), b},
                           name + "_blocks");
  Value *moved = permute(c, split, {0, 3, 5, 1, 2, 4}, name + "_moved");
  c.define(0, reshapeTo(c, moved,
                        {n, Dim::of(channels * block * block), Dim::of(height / block),
                         Dim::of(width / block)},
                        name));
  return true;
}

namespace {
/// The arithmetic of GridSample on FIR values of one float dtype.
struct GridMath {
  NodeContext &c;
  DType dtype;
  std::string prefix;
  int counter = 0;

  std::string hint() { return prefix + "_" + std::to_string(counter++); }
  Value *op(llvm::StringRef name, std::vector<Operand> operands, Attrs attrs = {}) {
    return c.emit(name, std::move(operands), std::move(attrs), hint());
  }
  Operand lit(double value) { return NodeContext::literal(value, dtype); }
  Value *binary(llvm::StringRef name, Value *a, Operand b) {
    return op(name, {Operand::of(a), b});
  }
  Value *binary(llvm::StringRef name, Value *a, Value *b) {
    return op(name, {Operand::of(a), Operand::of(b)});
  }
  Value *clip(Value *x, double low, double high) {
    Attrs attrs;
    attrs.set("min", Attr::makeFloat(low));
    attrs.set("max", Attr::makeFloat(high));
    return op("clip", {Operand::of(x)}, attrs);
  }
  /// torch's grid_sampler_unnormalize: [-1, 1] to pixel coordinates.
  Value *unnormalize(Value *g, int64_t size, bool alignCorners) {
    Value *shifted = binary("add", g, lit(1));
    if (alignCorners)
      return binary("multiply", shifted, lit(double(size - 1) / 2));
    return binary("divide", binary("subtract", binary("multiply", shifted, lit(double(size))),
                                   lit(1)),
                  lit(2));
  }
  /// torch's reflect_coordinates over [twiceLow/2, twiceHigh/2].
  Value *reflect(Value *x, int64_t twiceLow, int64_t twiceHigh) {
    if (twiceLow == twiceHigh)
      return binary("multiply", x, lit(0));
    double low = double(twiceLow) / 2, span = double(twiceHigh - twiceLow) / 2;
    Value *distance = op("abs", {Operand::of(binary("subtract", x, lit(low)))});
    Value *flips = op("floor", {Operand::of(binary("divide", distance, lit(span)))});
    Value *extra = binary("subtract", distance, binary("multiply", flips, lit(span)));
    Value *half = op("floor", {Operand::of(binary("divide", flips, lit(2)))});
    Value *even = binary("equal", binary("subtract", flips, binary("multiply", half, lit(2))),
                         lit(0));
    Value *forward = binary("add", extra, lit(low));
    Value *backward = binary("add", binary("multiply", extra, lit(-1)), lit(span + low));
    return op("where", {Operand::of(even), Operand::of(forward), Operand::of(backward)});
  }
  /// torch's compute_coordinates: the padding mode applied to a coordinate.
  Value *pad(Value *x, int64_t size, const std::string &mode, bool alignCorners) {
    if (mode == "border")
      return clip(x, 0, double(size - 1));
    if (mode == "reflection") {
      Value *reflected = alignCorners ? reflect(x, 0, 2 * (size - 1))
                                      : reflect(x, -1, 2 * size - 1);
      return clip(reflected, 0, double(size - 1));
    }
    return x;
  }
  Value *inside(Value *x, int64_t size) {
    return binary("logical_and", binary("greater_equal", x, lit(0)),
                  binary("less_equal", x, lit(double(size - 1))));
  }
  /// The cubic convolution weights of torch's bicubic (A = -0.75) for the
  /// taps at -1, 0, 1, 2 from floor(x), given t = x - floor(x).
  std::vector<Value *> cubicWeights(Value *t) {
    const double a = -0.75;
    auto far = [&](Value *d) { // ((A d - 5A) d + 8A) d - 4A, for 1 < d < 2
      Value *v = binary("subtract", binary("multiply", d, lit(a)), lit(5 * a));
      v = binary("add", binary("multiply", v, Operand::of(d)), lit(8 * a));
      return binary("subtract", binary("multiply", v, Operand::of(d)), lit(4 * a));
    };
    auto near = [&](Value *d) { // ((A + 2) d - (A + 3)) d d + 1, for d <= 1
      Value *v = binary("subtract", binary("multiply", d, lit(a + 2)), lit(a + 3));
      v = binary("multiply", binary("multiply", v, Operand::of(d)), Operand::of(d));
      return binary("add", v, lit(1));
    };
    Value *oneMinus = binary("subtract", binary("multiply", t, lit(-1)), lit(-1));
    return {far(binary("add", t, lit(1))), near(t), near(oneMinus),
            far(binary("add", oneMinus, lit(1)))};
  }
};
} // namespace

static bool convertGridSample(NodeContext &c) {
  Value *x = c.input(0), *grid = c.input(1);
  if (!x || !grid)
    return false;
  if (x->type.getRank() != 4 || grid->type.getRank() != 4)
    return c.fail("GridSample takes a 4-D (NCHW) input and a 4-D (N, H_out, W_out, 2) grid, "
                  "not " + x->type.str() + " and " + grid->type.str());
  if (!staticDims(c, x->type, {0, 1, 2, 3}) || !staticDims(c, grid->type, {0, 1, 2, 3}))
    return false;
  const Shape &in = x->type.getShape(), &gridShape = grid->type.getShape();
  int64_t batch = in[0].size, channels = in[1].size, height = in[2].size, width = in[3].size;
  if (gridShape[0].size != batch || gridShape[3].size != 2)
    return c.fail("the grid must be (N, H_out, W_out, 2) with the input's N = " +
                  std::to_string(batch) + ", not " + grid->type.str());
  std::string mode = c.attrString("mode", "bilinear");
  std::string padding = c.attrString("padding_mode", "zeros");
  bool alignCorners = c.attrInt("align_corners", 0) != 0;
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return c.fail("mode must be bilinear, nearest or bicubic, not '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return c.fail("padding_mode must be zeros, border or reflection, not '" + padding + "'");
  if (batch * channels * height * width > (int64_t(1) << 40))
    return c.fail("the input is too large to index");
  DType dtype = grid->type.getDType(), valueType = x->type.getDType();
  GridMath m{c, dtype, c.node.output(0)};
  Dim n = in[0], one = Dim::of(1), rows = gridShape[1], cols = gridShape[2];

  // 1. The grid's x and y as [N, 1, H_out, W_out], in pixels.
  auto component = [&](int64_t k) {
    Attrs attrs;
    attrs.set("axes", makeIntList({3}));
    attrs.set("begin", makeIntList({k}));
    attrs.set("end", makeIntList({k + 1}));
    return reshapeTo(c, m.op("strided_slice", {Operand::of(grid)}, attrs), {n, one, rows, cols},
                     m.hint());
  };
  Value *gx = m.unnormalize(component(0), width, alignCorners);
  Value *gy = m.unnormalize(component(1), height, alignCorners);
  if (mode != "bicubic") {
    gx = m.pad(gx, width, padding, alignCorners);
    gy = m.pad(gy, height, padding, alignCorners);
  }
  // 2. n*CHW + c*HW: the flattened offset of each (n, c), [N, C, 1, 1].
  TensorData offsets(DType::i64, {batch, channels, 1, 1});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t ch = 0; ch < channels; ++ch)
      offsets.setInt(b * channels + ch, (b * channels + ch) * height * width);
  Value *base = c.emitConstant(std::move(offsets), m.hint());
  // 3. One weighted tap at (ty, tx) (float coordinates holding integers).
  Value *sum = nullptr;
  auto addTap = [&](Value *ty, Value *tx, Value *weight) {
    if (mode == "bicubic") {
      tx = m.pad(tx, width, padding, alignCorners);
      ty = m.pad(ty, height, padding, alignCorners);
    }
    Value *valid = m.binary("logical_and", m.inside(tx, width), m.inside(ty, height));
    Value *xi = castTo(c, m.clip(tx, 0, double(width - 1)), DType::i64, m.hint());
    Value *yi = castTo(c, m.clip(ty, 0, double(height - 1)), DType::i64, m.hint());
    Value *pixel = m.binary("add", m.binary("multiply", yi, NodeContext::literal(double(width),
                                                                                 DType::i64)),
                            Operand::of(xi));
    Value *index = m.binary("add", base, pixel);
    Value *sample = m.op("take", {Operand::of(x), Operand::of(index)});
    if (weight) {
      if (dtype != valueType)
        weight = castTo(c, weight, valueType, m.hint());
      sample = m.binary("multiply", sample, weight);
    }
    Value *term = m.op("where", {Operand::of(valid), Operand::of(sample),
                                 NodeContext::literal(0, valueType)});
    sum = sum ? m.binary("add", sum, term) : term;
  };
  if (mode == "nearest") {
    addTap(m.op("round", {Operand::of(gy)}), m.op("round", {Operand::of(gx)}), nullptr);
  } else if (mode == "bilinear") {
    Value *x0 = m.op("floor", {Operand::of(gx)}), *y0 = m.op("floor", {Operand::of(gy)});
    Value *x1 = m.binary("add", x0, m.lit(1)), *y1 = m.binary("add", y0, m.lit(1));
    Value *wx1 = m.binary("subtract", gx, x0), *wy1 = m.binary("subtract", gy, y0);
    Value *wx0 = m.binary("subtract", m.binary("multiply", wx1, m.lit(-1)), m.lit(-1));
    Value *wy0 = m.binary("subtract", m.binary("multiply", wy1, m.lit(-1)), m.lit(-1));
    addTap(y0, x0, m.binary("multiply", wy0, wx0));
    addTap(y0, x1, m.binary("multiply", wy0, wx1));
    addTap(y1, x0, m.binary("multiply", wy1, wx0));
    addTap(y1, x1, m.binary("multiply", wy1, wx1));
  } else {
    Value *x0 = m.op("floor", {Operand::of(gx)}), *y0 = m.op("floor", {Operand::of(gy)});
    std::vector<Value *> wx = m.cubicWeights(m.binary("subtract", gx, x0));
    std::vector<Value *> wy = m.cubicWeights(m.binary("subtract", gy, y0));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        addTap(m.binary("add", y0, m.lit(i - 1)), m.binary("add", x0, m.lit(j - 1)),
               m.binary("multiply", wy[size_t(i)], wx[size_t(j)]));
  }
  if (!sum)
    return false;
  c.define(0, sum);
  return true;
}

void onnximport::registerSpatialOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"DepthToSpace", convertDepthSpace<true>},
      {"SpaceToDepth", convertDepthSpace<false>},
      {"GridSample", convertGridSample},
  });
}
