//===- ONNXOpsQuantize.cpp - QuantizeLinear, DequantizeLinear -------------===//
//
// ONNX's QDQ format: QuantizeLinear(x, scale, zero_point) rounds x / scale
// half to even, adds the zero point and saturates to the zero point's type
// (uint8 when it is absent, or int8); DequantizeLinear(q, scale,
// zero_point) is (q - zero_point) * scale. Scales and zero points are
// constants, one per tensor or one per slice along `axis` (opset 13).
// fusec has no uint8, and a quantized tensor in a QDQ model exists only to
// be dequantized, so:
//   - quantized constants (int8, uint8 read widened, int32 biases) that a
//     DequantizeLinear reads fold to f32 constants at import;
//   - QuantizeLinear of a value computes the quantized integers in the
//     input's float type (exact: they lie in [-128, 255]): divide, round,
//     add, clip; the result is marked quantized, and the importer lets no
//     operator but DequantizeLinear read it (nor return it): a
//     DequantizeLinear of it subtracts the zero point and multiplies;
//   - DequantizeLinear of an int8 or int32 graph input converts it first.
// The pair Q -> DQ is thus fake quantization in f32, bit-exact with ONNX's
// definition; fusion puts both into the surrounding kernels.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include <cmath>

using namespace fusec;
using namespace fusec::onnximport;

namespace {
/// A scale and zero point, per tensor (one value each) or per slice along
/// `axis` of a rank-`rank` tensor.
struct Quantization {
  std::vector<double> scales;
  std::vector<int64_t> zeroPoints;
  bool isUnsigned = true; // the zero point's type (uint8 when absent)
  int64_t axis = 0;       // normalized; meaningful when per slice
  bool perSlice() const { return scales.size() > 1; }
};
} // namespace

/// Reads inputs 1 (scale) and 2 (zero point) for a tensor of shape `shape`.
static std::optional<Quantization> readQuantization(NodeContext &c, const Shape &shape) {
  int64_t rank = int64_t(shape.size());
  Quantization q;
  int64_t axis = c.opset >= 13 ? c.attrInt("axis", 1) : 1;
  const TensorData *scale = c.constant(1);
  if (!scale || !isFloatDType(scale->getDType()) || scale->getShape().size() > 1)
    return c.fail("the scale (input 1) must be a constant float scalar or vector"), std::nullopt;
  for (int64_t i = 0; i < scale->getNumElements(); ++i) {
    q.scales.push_back(scale->get(i));
    if (!(q.scales.back() > 0) || !std::isfinite(q.scales.back()))
      return c.fail("the scale must be positive and finite"), std::nullopt;
  }
  if (c.hasInput(2)) {
    const TensorData *zero = c.constant(2);
    if (!zero || zero->getShape() != scale->getShape())
      return c.fail("the zero point (input 2) must be a constant of the scale's shape"),
             std::nullopt;
    bool isUint8 = c.importer.unsignedBytes.count(c.node.input(2)) != 0;
    if (!isUint8 && zero->getDType() != DType::i8 &&
        !(zero->getDType() == DType::i32 && c.node.op_type() == "DequantizeLinear"))
      return c.fail("the zero point must be uint8 or int8"), std::nullopt;
    q.isUnsigned = isUint8;
    for (int64_t i = 0; i < zero->getNumElements(); ++i)
      q.zeroPoints.push_back(zero->getInt(i));
  } else {
    q.zeroPoints.assign(q.scales.size(), 0);
  }
  if (q.perSlice()) {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized)
      return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                    std::to_string(rank)),
             std::nullopt;
    q.axis = *normalized;
    const Dim &dim = shape[size_t(q.axis)];
    if (dim.isSymbolic() || dim.size != int64_t(q.scales.size()))
      return c.fail("the scale has " + std::to_string(q.scales.size()) + " values for dim " +
                    std::to_string(q.axis) + " (" + dim.str() + ")"),
             std::nullopt;
  }
  return q;
}

/// Values of `q` as a constant broadcasting along its axis of a rank-`rank`
/// tensor (a 0-d one per tensor).
static Value *perSliceConstant(NodeContext &c, const Quantization &q,
                               const std::vector<double> &values, int64_t rank, DType dtype,
                               const std::string &hint) {
  std::vector<int64_t> shape;
  if (q.perSlice()) {
    shape.assign(size_t(rank), 1);
    shape[size_t(q.axis)] = int64_t(values.size());
  }
  TensorData data(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i)
    data.set(int64_t(i), values[i]);
  return c.emitConstant(std::move(data), hint);
}

static bool convertQuantizeLinear(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  DType dtype = x->type.getDType();
  if (!isFloatDType(dtype))
    return c.fail("quantizes float tensors, not " + x->type.str());
  std::optional<Quantization> q = readQuantization(c, x->type.getShape());
  if (!q)
    return false;
  std::string name = c.node.output(0);
  int64_t rank = x->type.getRank();
  std::vector<double> zeros(q->zeroPoints.begin(), q->zeroPoints.end());
  Value *scaled = c.emit("divide", {Operand::of(x), Operand::of(perSliceConstant(
                                                        c, *q, q->scales, rank, dtype,
                                                        name + "_scale"))},
                         {}, name + "_scaled");
  Value *rounded = scaled ? c.emit("round", {Operand::of(scaled)}, {}, name + "_rounded") : nullptr;
  Value *shifted =
      rounded ? c.emit("add", {Operand::of(rounded), Operand::of(perSliceConstant(
                                                          c, *q, zeros, rank, dtype,
                                                          name + "_zero_point"))},
                       {}, name + "_shifted")
              : nullptr;
  Attrs range;
  range.set("min", Attr::makeFloat(q->isUnsigned ? 0 : -128));
  range.set("max", Attr::makeFloat(q->isUnsigned ? 255 : 127));
  Value *result = shifted ? c.emit("clip", {Operand::of(shifted)}, range, name) : nullptr;
  if (!result)
    return false;
  c.define(0, result);
  c.importer.quantized.insert(name);
  return true;
}

static bool convertDequantizeLinear(NodeContext &c) {
  std::string name = c.node.output(0);
  const TensorData *data = c.constant(0);
  std::optional<Shape> shape = c.inputShape(0);
  if (!shape)
    return c.fail("input 0 is missing");
  int64_t rank = int64_t(shape->size());
  std::optional<Quantization> q = readQuantization(c, *shape);
  if (!q)
    return false;
  if (data) { // quantized weights: folded
    if (isFloatDType(data->getDType()))
      return c.fail("dequantizes integer tensors, not " + dtypeName(data->getDType()).str());
    // Element i lies in slice (i / inner) % slices along the axis.
    const std::vector<int64_t> &dims = data->getShape();
    int64_t inner = 1, slices = int64_t(q->scales.size());
    for (size_t d = size_t(q->axis) + 1; q->perSlice() && d < dims.size(); ++d)
      inner *= dims[d];
    TensorData result(DType::f32, dims);
    for (int64_t i = 0; i < data->getNumElements(); ++i) {
      size_t k = size_t((i / inner) % slices);
      // In f32, as ONNX computes it.
      result.set(i, float(float(data->getInt(i) - q->zeroPoints[k]) * float(q->scales[k])));
    }
    c.defineConstant(0, std::move(result));
    return true;
  }
  Value *x = c.input(0);
  if (!x)
    return false;
  if (!c.importer.quantized.count(c.node.input(0))) {
    if (isFloatDType(x->type.getDType()))
      return c.fail("dequantizes integer tensors or QuantizeLinear's output, not " +
                    x->type.str());
    Attrs attrs;
    attrs.set("dtype", Attr::makeString("f32"));
    x = c.emit("astype", {Operand::of(x)}, attrs, name + "_float");
    if (!x)
      return false;
  }
  DType dtype = x->type.getDType();
  Value *centered = x;
  if (llvm::any_of(q->zeroPoints, [](int64_t z) { return z != 0; })) {
    std::vector<double> zeros(q->zeroPoints.begin(), q->zeroPoints.end());
    centered = c.emit("subtract", {Operand::of(x), Operand::of(perSliceConstant(
                                                      c, *q, zeros, rank, dtype,
                                                      name + "_zero_point"))},
                      {}, name + "_centered");
  }
  c.define(0, centered ? c.emit("multiply",
                                {Operand::of(centered),
                                 Operand::of(perSliceConstant(c, *q, q->scales, rank, dtype,
                                                              name + "_scale"))},
                                {}, name)
                       : nullptr);
  return true;
}

void onnximport::registerQuantizeOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"QuantizeLinear", convertQuantizeLinear},
      {"DequantizeLinear", convertDequantizeLinear},
  });
}
