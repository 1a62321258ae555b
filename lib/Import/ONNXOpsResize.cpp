//===- ONNXOpsResize.cpp - Resize and Upsample ----------------------------===//
//
// Resize (opsets 10-17) and Upsample (1-9) on static shapes, nearest and
// linear modes, as gathers with constant indices (FIR has no resize op):
//   1. the output size of each axis: from `sizes`, or floor(in * scale);
//      the scale of an axis is `scales[d]`, or out / in when `sizes` is
//      given;
//   2. for each output index i of a resized axis, the source coordinate x
//      by coordinate_transformation_mode (half_pixel, pytorch_half_pixel,
//      align_corners, asymmetric, tf_half_pixel_for_nn; Resize-10 and
//      Upsample are asymmetric), with the output length as the resized
//      length where the formula uses it (align_corners,
//      pytorch_half_pixel), as PyTorch and ONNX Runtime do; ONNX's reference
//      takes in * scale unrounded, which no exporter means;
//      all of it in float32, as ONNX Runtime computes it (scales are
//      float32 tensors): 0.7 * 10 is 7 there, and 6 in double;
//   3. nearest: x rounded by nearest_mode (round_prefer_floor,
//      round_prefer_ceil, floor, ceil), clamped into the axis: one `take`;
//      linear: the neighbours floor(x) and floor(x) + 1 (clamped) and the
//      weight x - floor(x): take(lo) * (1 - w) + take(hi) * w, w a constant
//      broadcast along the axis; cubic: the four neighbours floor(x) - 1 ..
//      floor(x) + 2 weighted by Keys' cubic (cubic_coeff_a; exclude_outside
//      renormalizes). Axes are resized one after another (both are
//      separable).
// tf_crop_and_resize (which needs roi) is rejected.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include <cmath>

using namespace fusec;
using namespace fusec::onnximport;

namespace {
struct ResizeAxis {
  int64_t in = 0, out = 0;
  float scale = 1;
  bool identity = false; // scale 1 (or the size unchanged by `sizes`)
};
} // namespace

/// The source coordinate of output index `i` (step 2).
static float sourceCoordinate(const std::string &mode, int64_t i, const ResizeAxis &axis) {
  float x = float(i);
  if (mode == "half_pixel")
    return (x + 0.5f) / axis.scale - 0.5f;
  if (mode == "pytorch_half_pixel")
    return axis.out > 1 ? (x + 0.5f) / axis.scale - 0.5f : 0.0f;
  if (mode == "align_corners")
    return axis.out == 1 ? 0.0f : x * float(axis.in - 1) / float(axis.out - 1);
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5f) / axis.scale;
  return x / axis.scale; // asymmetric
}

static int64_t nearestIndex(const std::string &mode, float x, int64_t length) {
  float rounded;
  if (mode == "floor")
    rounded = std::floor(x);
  else if (mode == "ceil")
    rounded = std::ceil(x);
  else if (x == std::floor(x) + 0.5f) // a tie
    rounded = mode == "round_prefer_ceil" ? std::ceil(x) : std::floor(x);
  else
    rounded = std::round(x);
  return std::clamp<int64_t>(int64_t(rounded), 0, length - 1);
}

static Value *takeAlong(NodeContext &c, Value *x, int64_t d, const std::vector<int64_t> &indices,
                        const std::string &name) {
  TensorData data(DType::i64, {int64_t(indices.size())});
  for (size_t k = 0; k < indices.size(); ++k)
    data.setInt(int64_t(k), indices[k]);
  Value *index = c.emitConstant(std::move(data), name + "_indices");
  Attrs attrs;
  attrs.set("axis", Attr::makeInt(d));
  return x && index ? c.emit("take", {Operand::of(x), Operand::of(index)}, attrs, name) : nullptr;
}

/// Cubic mode along axis `d` (step 3): four neighbours floor(x) - 1 ..
/// floor(x) + 2 (clamped into the axis: edge padding) weighted by Keys'
/// cubic with coefficient `a` at the distances (ONNX's and ONNX Runtime's
/// coefficients); with `excludeOutside`, neighbours outside the axis weigh
/// 0 and the rest are renormalized. Weights in double, then the dtype.
static Value *resizeCubic(NodeContext &c, Value *x, int64_t d, int64_t rank,
                          const std::string &transform, const ResizeAxis &axis, double a,
                          bool excludeOutside, const std::string &name) {
  std::vector<int64_t> weightShape(size_t(rank), 1);
  weightShape[d] = axis.out;
  std::vector<std::vector<int64_t>> indices(4);
  DType dtype = x->type.getDType();
  std::vector<TensorData> weights(4, TensorData(dtype, weightShape));
  for (int64_t i = 0; i < axis.out; ++i) {
    float source = sourceCoordinate(transform, i, axis);
    double base = std::floor(source), s = double(source) - base;
    auto near = [&](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // |t| <= 1
    auto far = [&](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; }; // 1 < |t| < 2
    double coeffs[4] = {far(s + 1), near(s), near(1 - s), far(2 - s)};
    double total = 0;
    for (int k = 0; k < 4; ++k) {
      int64_t j = int64_t(base) - 1 + k;
      if (excludeOutside && (j < 0 || j >= axis.in))
        coeffs[k] = 0;
      total += coeffs[k];
      indices[size_t(k)].push_back(std::clamp<int64_t>(j, 0, axis.in - 1));
    }
    for (int k = 0; k < 4; ++k)
      weights[size_t(k)].set(i, excludeOutside && total != 0 ? coeffs[k] / total : coeffs[k]);
  }
  Value *sum = nullptr;
  for (int k = 0; k < 4; ++k) {
    std::string tap = name + "_tap" + std::to_string(k);
    Value *taken = takeAlong(c, x, d, indices[size_t(k)], tap);
    Value *weight = c.emitConstant(std::move(weights[size_t(k)]), tap + "_w");
    Value *term = taken ? c.emit("multiply", {Operand::of(taken), Operand::of(weight)}, {},
                                 tap + "_weighted")
                        : nullptr;
    sum = !term ? nullptr
          : sum ? c.emit("add", {Operand::of(sum), Operand::of(term)}, {},
                         k == 3 ? name + "_resized" : name + "_sum" + std::to_string(k))
                : term;
  }
  return sum;
}

static bool convertResize(NodeContext &c) {
  bool upsample = c.node.op_type() == "Upsample";
  Value *x = c.input(0);
  if (!x)
    return false;
  std::string mode = c.attrString("mode", "nearest");
  if (upsample && c.opset < 7 && mode == "bilinear") // Upsample-1's name for it
    mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return c.fail("mode '" + mode + "' is not supported (nearest, linear and cubic are)");
  // Upsample and Resize-10: asymmetric coordinates; nearest takes the floor
  // on an enlarged axis and the ceiling on a reduced one (ONNX's opset-10
  // test_resize_downsample_nearest: [1 2 3 4] at 0.6 is [1 3]), as ONNX
  // Runtime's "simple" nearest mode does.
  bool legacy = upsample || c.opset < 11;
  std::string transform =
      legacy ? "asymmetric" : c.attrString("coordinate_transformation_mode", "half_pixel");
  std::string nearestMode = legacy ? "floor" : c.attrString("nearest_mode", "round_prefer_floor");
  double cubicA = -0.75;
  bool excludeOutside = false;
  if (!legacy) {
    cubicA = c.attrFloat("cubic_coeff_a", -0.75);
    c.attrFloat("extrapolation_value", 0);
    excludeOutside = c.attrInt("exclude_outside", 0) != 0;
    if (excludeOutside && mode != "cubic")
      return c.fail("exclude_outside = 1 applies to cubic mode only");
  }
  static const char *transforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_half_pixel_for_nn"};
  if (!llvm::is_contained(transforms, transform))
    return c.fail("coordinate_transformation_mode '" + transform + "' is not supported");
  static const char *nearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                       "ceil"};
  if (!llvm::is_contained(nearestModes, nearestMode))
    return c.fail("nearest_mode '" + nearestMode + "' is not supported");

  // Step 1: the scales or sizes (kSameSize: the input's symbolic dim).
  constexpr int64_t kSameSize = INT64_MIN;
  int64_t rank = x->type.getRank();
  size_t scalesInput = upsample || c.opset < 11 ? 1 : 2, sizesInput = 3;
  if (scalesInput == 2)
    c.ignoreInput(1); // roi: only tf_crop_and_resize, rejected above, reads it
  std::vector<float> scales;
  std::optional<std::vector<int64_t>> sizes;
  if (upsample && c.opset < 7) {
    // Upsample-1 (experimental): NCHW with height_scale and width_scale.
    if (rank != 4)
      return c.fail("Upsample-1 takes a 4-D (NCHW) input, not " + x->type.str());
    scales = {1.0f, 1.0f, float(c.attrFloat("height_scale", 1)),
              float(c.attrFloat("width_scale", 1))};
  } else if (upsample && c.opset < 9) {
    for (double scale : c.attrFloats("scales"))
      scales.push_back(float(scale));
  } else if (c.hasInput(scalesInput) && c.constant(scalesInput) &&
             c.constant(scalesInput)->getNumElements() > 0) {
    if (!legacy && c.hasInput(sizesInput))
      return c.fail("scales and sizes are both given; ONNX takes one of them");
    const TensorData *given = c.constant(scalesInput);
    for (int64_t k = 0; k < given->getNumElements(); ++k)
      scales.push_back(float(given->get(k)));
  } else if (!legacy && c.hasInput(sizesInput)) {
    // A symbolic size that is the input's own dim keeps that axis:
    // F.interpolate(x, size=skip.shape[2:]) on a dynamic batch gives
    // sizes = [batch, C, H, W].
    std::optional<ShapeValue> given = c.shapeValue(sizesInput);
    if (given && given->firstSymbol() && int64_t(given->elements.size()) == rank) {
      sizes.emplace();
      for (int64_t d = 0; d < rank; ++d) {
        const SymbolicSize &size = given->elements[d];
        if (size.isSymbolic() && size != SymbolicSize::of(x->type.getShape()[d]))
          return c.fail("sizes entry " + std::to_string(d) + " is " + size.str() +
                        ", not the input's dim " + x->type.getShape()[d].str() + " (--dim " +
                        size.symbols[0] + "=SIZE fixes its size)");
        sizes->push_back(size.isSymbolic() ? kSameSize : size.size);
      }
    } else if (!(sizes = c.ints(sizesInput, "sizes"))) {
      return false;
    }
  } else {
    return c.fail("scales or sizes must be given as constants");
  }
  if ((sizes ? int64_t(sizes->size()) : int64_t(scales.size())) != rank)
    return c.fail("scales or sizes must have one entry per dim (" + std::to_string(rank) + ")");
  std::vector<ResizeAxis> axes(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const Dim &dim = x->type.getShape()[d];
    ResizeAxis &axis = axes[d];
    bool unchanged = sizes ? (*sizes)[d] == kSameSize || (dim.isStatic() && (*sizes)[d] == dim.size)
                           : scales[d] == 1.0f;
    if (unchanged) {
      axis.in = axis.out = dim.isStatic() ? dim.size : -1;
      axis.identity = true;
      continue;
    }
    if (dim.isSymbolic())
      return c.fail("resizing the symbolic dim '" + dim.symbol + "' is not supported");
    axis.in = dim.size;
    if (sizes) {
      axis.out = (*sizes)[d];
      axis.scale = float(axis.out) / float(axis.in);
    } else {
      axis.scale = scales[d];
      float out = std::floor(float(axis.in) * axis.scale);
      if (!(axis.scale > 0) || !(out <= float(kMaxDimSize)))
        return c.fail("scale " + formatScalar(axis.scale, DType::f32) + " is invalid");
      axis.out = int64_t(out);
    }
    // The indices and weights are built here, one per output element of
    // the axis: bounded as Trilu's mask is.
    if (axis.out > (int64_t(1) << 24))
      return c.fail("resizing a dim to " + std::to_string(axis.out) +
                    " is more than fusec builds indices for at import (2^24)");
    if (axis.out < 1 || axis.out > kMaxDimSize || axis.in < 1 || !(axis.scale > 0))
      return c.fail("cannot resize a dim of " + std::to_string(axis.in) + " to " +
                    std::to_string(axis.out));
  }

  // Steps 2 and 3, one resized axis after another.
  Value *current = x;
  DType dtype = x->type.getDType();
  for (int64_t d = 0; d < rank && current; ++d) {
    const ResizeAxis &axis = axes[d];
    // Only a scale of 1 leaves an axis alone: 1.3 on 3 elements keeps the
    // size, not the values (source coordinates i / 1.3).
    if (axis.identity)
      continue;
    std::string name = c.node.output(0) + "_" + std::to_string(d);
    std::vector<int64_t> lo, hi;
    std::vector<float> weight;
    for (int64_t i = 0; i < axis.out; ++i) {
      float source = sourceCoordinate(transform, i, axis);
      if (mode == "nearest") {
        bool reduced = axis.scale < 1;
        lo.push_back(nearestIndex(legacy && reduced ? "ceil" : nearestMode, source, axis.in));
        continue;
      }
      float base = std::floor(source);
      lo.push_back(std::clamp<int64_t>(int64_t(base), 0, axis.in - 1));
      hi.push_back(std::clamp<int64_t>(int64_t(base) + 1, 0, axis.in - 1));
      weight.push_back(source < 0 ? 0.0f : source - base);
    }
    if (mode == "nearest") {
      current = takeAlong(c, current, d, lo, name + "_resized");
      continue;
    }
    if (!isFloatDType(dtype))
      return c.fail(mode + " resizing needs a float input, not " + x->type.str());
    if (mode == "cubic") {
      current = resizeCubic(c, current, d, rank, transform, axis, cubicA, excludeOutside, name);
      continue;
    }
    Value *low = takeAlong(c, current, d, lo, name + "_lo");
    Value *high = takeAlong(c, current, d, hi, name + "_hi");
    std::vector<int64_t> weightShape(size_t(rank), 1);
    weightShape[d] = axis.out;
    TensorData w(dtype, weightShape), complement(dtype, weightShape);
    for (int64_t i = 0; i < axis.out; ++i) {
      w.set(i, weight[i]);
      complement.set(i, 1.0f - weight[i]);
    }
    Value *wHigh = c.emitConstant(std::move(w), name + "_w_hi");
    Value *wLow = c.emitConstant(std::move(complement), name + "_w_lo");
    Value *a = low ? c.emit("multiply", {Operand::of(low), Operand::of(wLow)}, {}, name + "_a")
                   : nullptr;
    Value *b = high ? c.emit("multiply", {Operand::of(high), Operand::of(wHigh)}, {}, name + "_b")
                    : nullptr;
    current = a && b ? c.emit("add", {Operand::of(a), Operand::of(b)}, {}, name + "_resized")
                     : nullptr;
  }
  c.define(0, current);
  return true;
}

void onnximport::registerResizeOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Resize", convertResize},
      {"Upsample", convertResize},
  });
}
