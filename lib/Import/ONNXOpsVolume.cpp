//===- ONNXOpsVolume.cpp - 3-D convolutions and pools ---------------------===//
//
// FIR's windows are 2-D; a 3-D one (NCDHW) is a 2-D one over depth slices.
// With the depth window (kd kernel, sd stride, dd dilation, pads pb, pe)
// and Do output depths, slice k (k < kd) is the padded input's depths
// k dd, k dd + sd, ..., a strided_slice of shape [N, C, Do, H, W]:
//
//   Conv: 1. slices reshaped to [N, g, 1, C/g, Do, H, W] and concatenated
//            at axis 2 (g groups), permuted to [N, Do, g, kd, C/g, H, W]
//            and reshaped to [N Do, kd C, H, W]: the depth taps become
//            input channels, group by group;
//         2. weights [O, C/g, kd, kh, kw] -> [O, kd C/g, kh, kw] in the
//            same order (folded at import when constant);
//         3. one nn.conv2d over the H and W window with g groups, reshaped
//            to [N, Do, O, Ho, Wo] and permuted to [N, O, Do, Ho, Wo]; the
//            bias added per channel.
//         One convolution, not kd, so the tensor-core schedule sees one
//         implicit GEMM whose reduction covers the whole window. A
//         symbolic batch N cannot take the depth (N Do is no FIR dim):
//         then each output depth's [N, kd C, H, W] is convolved on its own
//         and the Do results are concatenated along the depth.
//   Pools: the slices combined elementwise first (max, or the sum), then
//         one 2-D pool over [N, C Do, H, W] (max and sum commute with the
//         H, W window), reshaped back; the average divides by the number
//         of depth taps inside the input at each output depth (padding
//         never counts, as in the 2-D pool). Depth padding is the dtype's
//         lowest finite value for max and 0 for the average, so that a
//         window wholly in padding gives what the 2-D pool gives; ceil_mode's
//         last depth window reaches past the padding by more of it.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

namespace {
/// The depth part of a 3-D window and the 2-D window over H and W.
struct DepthSplit {
  int64_t kernel, stride, dilation, padBegin, padEnd, outputs;
  Window plane;
};
} // namespace

/// Splits `w` (3 dims) for input `x`; the depth output count follows
/// ceil_mode (already matched to ONNX's rule by matchONNXCeilMode).
static std::optional<DepthSplit> splitDepth(NodeContext &c, const Type &x, const Window &w,
                                            bool ceilMode) {
  const Dim &depth = x.getShape()[2];
  if (depth.isSymbolic()) {
    c.fail("the depth of " + x.str() + " must be static, not '" + depth.symbol + "' (--dim " +
           depth.symbol + "=SIZE fixes its size)");
    return std::nullopt;
  }
  if (w.kernel[0] > kMaxDepthTaps) {
    c.fail("a depth window of " + std::to_string(w.kernel[0]) +
           " taps: fusec unrolls a 3-D window's depth taps, at most " +
           std::to_string(kMaxDepthTaps));
    return std::nullopt;
  }
  DepthSplit split{w.kernel[0], w.strides[0], w.dilations[0], w.pads[0], w.pads[3], 0, {}};
  split.plane = {{w.kernel[1], w.kernel[2]},
                 {w.strides[1], w.strides[2]},
                 {w.dilations[1], w.dilations[2]},
                 {w.pads[1], w.pads[2], w.pads[4], w.pads[5]}};
  int64_t extent = (split.kernel - 1) * split.dilation + 1;
  int64_t span = depth.size + split.padBegin + split.padEnd - extent;
  if (span < 0) {
    c.fail("the depth window (" + std::to_string(extent) + ") is larger than the padded depth (" +
           std::to_string(depth.size + split.padBegin + split.padEnd) + ")");
    return std::nullopt;
  }
  split.outputs = (ceilMode ? (span + split.stride - 1) / split.stride : span / split.stride) + 1;
  // A ceil window past the end reads more padding.
  split.padEnd += std::max<int64_t>(
      0, (split.outputs - 1) * split.stride + extent - (depth.size + split.padBegin + split.padEnd));
  return split;
}

/// The depth slices of `x` padded with `fill`: each [N, C, Do, H, W].
static std::vector<Value *> depthSlices(NodeContext &c, Value *x, const DepthSplit &split,
                                        double fill, const std::string &name) {
  Value *padded = padWithConstant(c, x, 2, split.padBegin, split.padEnd, fill, name + "_depth");
  std::vector<Value *> slices;
  for (int64_t k = 0; k < split.kernel && padded; ++k) {
    int64_t begin = k * split.dilation;
    Attrs attrs;
    attrs.set("axes", makeIntList({2}));
    attrs.set("begin", makeIntList({begin}));
    attrs.set("end", makeIntList({begin + (split.outputs - 1) * split.stride + 1}));
    attrs.set("strides", makeIntList({split.stride}));
    slices.push_back(
        c.emit("strided_slice", {Operand::of(padded)}, attrs, name + "_tap" + std::to_string(k)));
    if (!slices.back())
      return {};
  }
  return slices;
}

/// Weights [O, C/g, kd, kh, kw] as [O, kd C/g, kh, kw], depth tap major.
static Value *tapMajorWeights(NodeContext &c, Value *w, const TensorData *data,
                              const std::string &name) {
  const Shape &shape = w->type.getShape();
  int64_t out = shape[0].size, in = shape[1].size, kd = shape[2].size, kh = shape[3].size,
          kw = shape[4].size;
  Shape flat{shape[0], Dim::of(kd * in), shape[3], shape[4]};
  if (data) {
    std::vector<int64_t> dims;
    for (const Dim &dim : flat)
      dims.push_back(dim.size);
    TensorData folded(data->getDType(), dims);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i)
        for (int64_t d = 0; d < kd; ++d)
          for (int64_t p = 0; p < kh * kw; ++p) {
            int64_t from = ((o * in + i) * kd + d) * kh * kw + p;
            int64_t to = ((o * kd + d) * in + i) * kh * kw + p;
            isFloatDType(data->getDType()) ? folded.set(to, data->get(from))
                                           : folded.setInt(to, data->getInt(from));
          }
    return c.emitConstant(std::move(folded), name + "_weights");
  }
  return reshapeTo(c, permute(c, w, {0, 2, 1, 3, 4}, name + "_weights_taps"), flat,
                   name + "_weights");
}

bool onnximport::defineConvolution3D(NodeContext &c, Value *x, Value *w,
                                     const TensorData *weightData, const Window &window,
                                     int64_t groups, const std::string &name) {
  std::optional<DepthSplit> split = splitDepth(c, x->type, window, false);
  if (!split)
    return false;
  const Shape &xs = x->type.getShape(), &ws = w->type.getShape();
  if (xs[1].isSymbolic())
    return c.fail("the channels of " + x->type.str() + " must be static, not '" + xs[1].symbol +
                  "' (--dim " + xs[1].symbol + "=SIZE fixes its size)");
  // A symbolic batch cannot take the depth (N Do is no FIR dim): one
  // convolution per output depth instead, stacked along the depth.
  bool perDepth = xs[0].isSymbolic();
  if (perDepth && split->outputs > kMaxDepthConvolutions)
    return c.fail("a 3-D convolution over a symbolic batch is one 2-D convolution per output "
                  "depth, at most " + std::to_string(kMaxDepthConvolutions) + ", not " +
                  std::to_string(split->outputs) + " (--dim " + xs[0].symbol +
                  "=SIZE fixes the batch)");
  int64_t channels = xs[1].size;
  if (ws[0].isSymbolic() || ws[1].isSymbolic() || channels % groups != 0 ||
      ws[1].size * groups != channels || ws[0].size % groups != 0)
    return c.fail("weights " + w->type.str() + " do not fit " + x->type.str() + " in " +
                  std::to_string(groups) + " groups");
  int64_t batch = xs[0].size, outputs = split->outputs, taps = split->kernel;
  std::vector<Value *> slices = depthSlices(c, x, *split, 0, name);
  if (slices.empty())
    return false;
  std::vector<Operand> grouped;
  for (size_t k = 0; k < slices.size(); ++k)
    grouped.push_back(Operand::of(
        reshapeTo(c, slices[k], {xs[0], Dim::of(groups), Dim::of(1), Dim::of(channels / groups),
                                 Dim::of(outputs), xs[3], xs[4]},
                  name + "_tap" + std::to_string(k) + "_grouped")));
  if (llvm::any_of(grouped, [](const Operand &o) { return !o.value; }))
    return false;
  Value *stacked = grouped[0].value;
  if (grouped.size() > 1) {
    Attrs attrs;
    attrs.set("axis", Attr::makeInt(2));
    stacked = c.emit("concat", grouped, attrs, name + "_taps");
  }
  Value *weights = tapMajorWeights(c, w, weightData, name);
  if (!weights)
    return false;
  Attrs attrs;
  attrs.set("strides", makeIntList(split->plane.strides));
  attrs.set("padding", makeIntList(split->plane.pads));
  attrs.set("dilation", makeIntList(split->plane.dilations));
  attrs.set("groups", Attr::makeInt(groups));
  std::string resultName = c.hasInput(2) ? name + "_unbiased" : name;
  Value *result = nullptr;
  if (perDepth) {
    // Output depth o: the taps' [N, g, kd, C/g, 1, H, W] at depth o as
    // [N, kd C, H, W], convolved, and [N, O, 1, Ho, Wo] concatenated.
    Attrs depthAxis;
    depthAxis.set("axis", Attr::makeInt(2));
    std::vector<Operand> depths;
    for (int64_t o = 0; o < outputs; ++o) {
      std::string at = name + "_depth" + std::to_string(o);
      Attrs slice;
      slice.set("axes", makeIntList({4}));
      slice.set("begin", makeIntList({o}));
      slice.set("end", makeIntList({o + 1}));
      Value *taken = c.emit("strided_slice", {Operand::of(stacked)}, slice, at + "_taps");
      Value *plane = taken ? reshapeTo(c, taken, {xs[0], Dim::of(taps * channels), xs[3], xs[4]},
                                       at + "_planes")
                           : nullptr;
      Value *conv = plane ? c.emit("nn.conv2d", {Operand::of(plane), Operand::of(weights)},
                                   attrs, at + "_conv")
                          : nullptr;
      Value *stackable =
          conv ? c.emit("expand_dims", {Operand::of(conv)}, depthAxis, at) : nullptr;
      if (!stackable)
        return false;
      depths.push_back(Operand::of(stackable));
    }
    result =
        depths.size() == 1 ? depths[0].value : c.emit("concat", depths, depthAxis, resultName);
  } else {
    Value *planes =
        reshapeTo(c, permute(c, stacked, {0, 4, 1, 2, 3, 5, 6}, name + "_depth_major"),
                  {Dim::of(batch * outputs), Dim::of(taps * channels), xs[3], xs[4]},
                  name + "_planes");
    Value *conv = planes ? c.emit("nn.conv2d", {Operand::of(planes), Operand::of(weights)}, attrs,
                                  name + "_conv")
                         : nullptr;
    if (!conv)
      return false;
    const Shape &cs = conv->type.getShape();
    result = permute(c, reshapeTo(c, conv, {xs[0], Dim::of(outputs), ws[0], cs[2], cs[3]},
                                  name + "_by_depth"),
                     {0, 2, 1, 3, 4}, resultName);
  }
  if (result && c.hasInput(2)) {
    Value *bias = perChannel(c, 2, 5, name + "_bias");
    result = bias ? c.emit("add", {Operand::of(result), Operand::of(bias)}, {}, name) : nullptr;
  }
  c.define(0, result);
  return result != nullptr;
}

bool onnximport::definePool3D(NodeContext &c, Value *x, const Window &window, bool ceilMode,
                              bool isMax, const std::string &name) {
  std::optional<DepthSplit> split = splitDepth(c, x->type, window, ceilMode);
  if (!split)
    return false;
  const Shape &xs = x->type.getShape();
  if (xs[1].isSymbolic())
    return c.fail("the channels of " + x->type.str() + " must be static, not '" + xs[1].symbol +
                  "' (--dim " + xs[1].symbol + "=SIZE fixes its size)");
  DType dtype = x->type.getDType();
  std::vector<Value *> slices =
      depthSlices(c, x, *split, isMax ? lowestFiniteValue(dtype) : 0, name);
  if (slices.empty())
    return false;
  Value *combined = slices[0];
  for (size_t k = 1; k < slices.size() && combined; ++k)
    combined = c.emit(isMax ? "maximum" : "add", {Operand::of(combined), Operand::of(slices[k])},
                      {}, name + "_taps" + std::to_string(k));
  Value *planes = reshapeTo(
      c, combined, {xs[0], Dim::of(xs[1].size * split->outputs), xs[3], xs[4]}, name + "_planes");
  Value *pooled = planes ? c.emit(isMax ? "nn.max_pool2d" : "nn.avg_pool2d",
                                  {Operand::of(planes)}, poolAttrs(split->plane, ceilMode),
                                  name + "_2d")
                         : nullptr;
  if (!pooled)
    return false;
  const Shape &ps = pooled->type.getShape();
  bool divide = !isMax;
  Value *result = reshapeTo(c, pooled, {xs[0], xs[1], Dim::of(split->outputs), ps[2], ps[3]},
                            divide ? name + "_sum" : name);
  if (result && divide) { // taps inside the input at each output depth
    TensorData counts(dtype, {1, 1, split->outputs, 1, 1});
    for (int64_t o = 0; o < split->outputs; ++o) {
      int64_t inside = 0;
      for (int64_t k = 0; k < split->kernel; ++k) {
        int64_t at = o * split->stride + k * split->dilation - split->padBegin;
        inside += at >= 0 && at < xs[2].size;
      }
      counts.set(o, double(std::max<int64_t>(inside, 1))); // a window all padding: 0, as 2-D
    }
    Value *divisor = c.emitConstant(std::move(counts), name + "_taps_inside");
    result = c.emit("divide", {Operand::of(result), Operand::of(divisor)}, {}, name);
  }
  c.define(0, result);
  return result != nullptr;
}
