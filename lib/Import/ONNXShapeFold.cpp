//===- ONNXShapeFold.cpp - Shape values: Shape, Size and their arithmetic -===//
//
// Exporters compute shapes at run time (Shape -> Gather -> Mul -> Concat ->
// Reshape). A shape value is an int tensor of rank <= 1 whose elements are
// sizes or symbolic dims; these fold at import so that the shapes reach
// FIR's static types:
//   Shape, Size        of a typed tensor, a constant or another shape value;
//   Add/Sub/Mul/Div    on static elements (int64, overflow an error, ONNX's
//                      truncating division); on symbolic ones, products
//                      (`batch * 4`), exact quotients, and sums of multiples
//                      of the same names;
//   Equal, Where       PyTorch's `expand` export: a symbolic dim differs
//                      from a negative constant and equals itself, and a
//                      constant condition selects between shape values.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

/// Folds `op` over two static int shape values (rank <= 1, NumPy
/// broadcasting of a one-element side). Returns false when not applicable.
bool onnximport::foldShapeArithmetic(NodeContext &c, llvm::StringRef op) {
  std::optional<ShapeValue> a = c.shapeValue(0), b = c.shapeValue(1);
  // Shape arithmetic is int64's, with overflow an error, or int32's where a
  // symbolic dim takes part (TensorFlow's shapes, as tf2onnx casts them);
  // other int constants wrap, and fold elementwise.
  if (!a || !b || a->dtype != b->dtype ||
      !(a->dtype == DType::i64 ||
        (a->dtype == DType::i32 && !(a->isStatic() && b->isStatic()))))
    return false;
  const char *overflowMessage = a->dtype == DType::i64 ? "int64 overflow in integer arithmetic folded at import"
                                                       : "int32 overflow in integer arithmetic folded at import";
  size_t n = std::max(a->elements.size(), b->elements.size());
  if ((a->elements.size() != n && a->elements.size() != 1) ||
      (b->elements.size() != n && b->elements.size() != 1))
    return false;
  ShapeValue result;
  result.scalar = a->scalar && b->scalar;
  result.dtype = a->dtype;
  for (size_t k = 0; k < n; ++k) {
    const SymbolicSize &x = a->elements[a->elements.size() == 1 ? 0 : k];
    const SymbolicSize &y = b->elements[b->elements.size() == 1 ? 0 : k];
    if (x.isSymbolic() || y.isSymbolic()) {
      // Products of symbolic dims: x * y, an exact x / y, and sums of
      // multiples of the same names (seq + seq); x + 0 and x - 0.
      std::optional<SymbolicSize> value;
      if (op == "Mul")
        value = productOf({x, y});
      else if (op == "Div")
        value = quotientOf(x, y);
      else if (y == SymbolicSize::of(0) || (op == "Add" && x == SymbolicSize::of(0)))
        value = y == SymbolicSize::of(0) ? x : y;
      else if (x.symbols == y.symbols) {
        value = x;
        if (op == "Add" ? __builtin_add_overflow(x.size, y.size, &value->size)
                        : __builtin_sub_overflow(x.size, y.size, &value->size))
          return c.fail(overflowMessage);
        if (value->size == 0)
          value = SymbolicSize::of(0);
      }
      if (!value)
        return false;
      result.elements.push_back(*value);
      continue;
    }
    int64_t value = 0;
    bool overflow = false;
    if (op == "Add")
      overflow = __builtin_add_overflow(x.size, y.size, &value);
    else if (op == "Sub")
      overflow = __builtin_sub_overflow(x.size, y.size, &value);
    else if (op == "Mul")
      overflow = __builtin_mul_overflow(x.size, y.size, &value);
    else if (y.size == 0)
      return c.fail("integer division by zero in a shape computation");
    else if (x.size == INT64_MIN && y.size == -1)
      overflow = true;
    else
      value = x.size / y.size; // ONNX: integer division truncates
    if (overflow || (a->dtype == DType::i32 && value != int64_t(int32_t(value))))
      return c.fail(overflowMessage);
    result.elements.push_back(SymbolicSize::of(value));
  }
  c.defineShape(0, result);
  return true;
}

/// Input `i` as a shape value holding a symbolic dim, or nullopt.
static std::optional<ShapeValue> symbolicShape(NodeContext &c, size_t i) {
  std::optional<ShapeValue> shape = c.shapeValue(i);
  if (!shape || shape->isStatic())
    return std::nullopt;
  return shape;
}

/// Element `k` of a rank <= 1 value of `n` elements broadcast NumPy's way.
template <typename T> static const T &elementAt(const std::vector<T> &values, size_t k) {
  return values[values.size() == 1 ? 0 : k];
}

/// Equal of shape values with a symbolic dim, as PyTorch's `expand` export
/// computes `where(shape == -1, ones, shape)`: a dim is never negative, so
/// it differs from a negative constant; one name equals itself. Returns
/// false when an element cannot be decided.
bool onnximport::foldSymbolicEqual(NodeContext &c) {
  std::optional<ShapeValue> a = c.shapeValue(0), b = c.shapeValue(1);
  if (!a || !b || (a->isStatic() && b->isStatic()))
    return false;
  size_t n = std::max(a->elements.size(), b->elements.size());
  if ((a->elements.size() != n && a->elements.size() != 1) ||
      (b->elements.size() != n && b->elements.size() != 1))
    return false;
  TensorData result(DType::boolean, a->scalar && b->scalar ? std::vector<int64_t>{}
                                                           : std::vector<int64_t>{int64_t(n)});
  for (size_t k = 0; k < n; ++k) {
    const SymbolicSize &x = elementAt(a->elements, k), &y = elementAt(b->elements, k);
    if (x.isStatic() && y.isStatic())
      result.setInt(k, x.size == y.size);
    else if (x == y)
      result.setInt(k, 1);
    else if ((x.isStatic() && x.size < 0) || (y.isStatic() && y.size < 0))
      result.setInt(k, 0);
    else
      return false;
  }
  c.defineConstant(0, std::move(result));
  return true;
}

/// Where with a constant condition choosing between shape values, one with
/// a symbolic dim (the select of PyTorch's `expand` export).
bool onnximport::foldSymbolicWhere(NodeContext &c) {
  const TensorData *condition = c.constant(0);
  std::optional<ShapeValue> a = c.shapeValue(1), b = c.shapeValue(2);
  if (!condition || !a || !b || (a->isStatic() && b->isStatic()) ||
      condition->getShape().size() > 1)
    return false;
  size_t n = std::max({size_t(condition->getNumElements()), a->elements.size(),
                       b->elements.size()});
  for (size_t size : {size_t(condition->getNumElements()), a->elements.size(),
                      b->elements.size()})
    if (size != n && size != 1)
      return false;
  ShapeValue result;
  result.scalar = a->scalar && b->scalar && condition->getShape().empty();
  result.dtype = a->dtype;
  for (size_t k = 0; k < n; ++k) {
    bool take = condition->getInt(condition->getNumElements() == 1 ? 0 : k) != 0;
    result.elements.push_back(elementAt(take ? a->elements : b->elements, k));
  }
  c.defineShape(0, result);
  return true;
}

/// The dims of input 0: a (grouped) tensor's, a constant's, or those of a
/// shape value with a symbolic dim (a 1-D tensor of its length); nullopt
/// after an error.
static std::optional<std::vector<SymbolicSize>> inputDims(NodeContext &c) {
  if (std::optional<std::vector<SymbolicSize>> dims = c.onnxDims(0))
    return dims;
  if (std::optional<ShapeValue> shape = symbolicShape(c, 0)) {
    std::vector<SymbolicSize> dims;
    if (!shape->scalar)
      dims.push_back(SymbolicSize::of(int64_t(shape->elements.size())));
    return dims;
  }
  return c.fail(c.hasInput(0) ? "the shape of input '" + c.node.input(0) + "' is not known"
                              : std::string("input 0 is missing")),
         std::nullopt;
}

static bool convertShape(NodeContext &c) {
  std::optional<std::vector<SymbolicSize>> dims = inputDims(c);
  if (!dims)
    return false;
  int64_t rank = int64_t(dims->size());
  auto clampAxis = [&](int64_t axis) {
    return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank);
  };
  int64_t start = clampAxis(c.attrInt("start", 0)), end = clampAxis(c.attrInt("end", rank));
  ShapeValue shape;
  for (int64_t d = start; d < end; ++d)
    shape.elements.push_back((*dims)[d]);
  c.defineShape(0, shape);
  return true;
}

/// Size: the element count, an int64 scalar (static, or a product of
/// symbolic dims).
static bool convertSize(NodeContext &c) {
  std::optional<std::vector<SymbolicSize>> dims = inputDims(c);
  if (!dims)
    return false;
  ShapeValue size;
  size.scalar = true;
  size.elements.push_back(*productOf(*dims)); // types fit int64
  c.defineShape(0, size);
  return true;
}

void onnximport::registerShapeOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Shape", convertShape},
      {"Size", convertSize},
  });
}
