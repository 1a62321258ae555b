//===- ONNXShapeFold.cpp - Shape values: Shape, Size and their arithmetic -===//
//
// Exporters compute shapes at run time (Shape -> Gather -> Mul -> Concat ->
// Reshape). A shape value is an int tensor of rank <= 1 whose elements are
// sizes or symbolic dims; these fold at import so that the shapes reach
// FIR's static types:
//   Shape, Size        of a typed tensor, a constant or another shape value;
//   Add/Sub/Mul/Div    on static elements (int64, overflow an error, ONNX's
//                      truncating division); a symbolic dim survives x * 1,
//                      x + 0, x - 0 and x / 1;
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
  // Shape arithmetic is int64's, with overflow an error; other int dtypes
  // wrap, and fold elementwise.
  if (!a || !b || a->dtype != DType::i64 || b->dtype != DType::i64)
    return false;
  size_t n = std::max(a->elements.size(), b->elements.size());
  if ((a->elements.size() != n && a->elements.size() != 1) ||
      (b->elements.size() != n && b->elements.size() != 1))
    return false;
  ShapeValue result;
  result.scalar = a->scalar && b->scalar;
  for (size_t k = 0; k < n; ++k) {
    const Dim &x = a->elements[a->elements.size() == 1 ? 0 : k];
    const Dim &y = b->elements[b->elements.size() == 1 ? 0 : k];
    if (x.isSymbolic() || y.isSymbolic()) {
      const Dim &symbol = x.isSymbolic() ? x : y, &number = x.isSymbolic() ? y : x;
      bool identity = number.isStatic() &&
                      ((op == "Mul" && number.size == 1) ||
                       (op == "Add" && number.size == 0) ||
                       ((op == "Div" || op == "Sub") && &number == &y &&
                        number.size == (op == "Div" ? 1 : 0)));
      if (!identity)
        return false;
      result.elements.push_back(symbol);
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
    if (overflow)
      return c.fail("int64 overflow in a shape computation");
    result.elements.push_back(Dim::of(value));
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
    const Dim &x = elementAt(a->elements, k), &y = elementAt(b->elements, k);
    if (x.isStatic() && y.isStatic())
      result.setInt(k, x.size == y.size);
    else if (x.isSymbolic() && y.isSymbolic() && x == y)
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

/// The dims of input 0: a typed tensor's, a constant's, or those of a shape
/// value with a symbolic dim (a 1-D tensor of its length); nullopt after an
/// error.
static std::optional<std::vector<Dim>> inputDims(NodeContext &c) {
  std::vector<Dim> dims;
  if (const Type *type = c.typeOf(0)) {
    dims = type->getShape();
  } else if (const TensorData *data = c.constant(0)) {
    for (int64_t dim : data->getShape())
      dims.push_back(Dim::of(dim));
  } else if (std::optional<ShapeValue> shape = symbolicShape(c, 0)) {
    if (!shape->scalar)
      dims.push_back(Dim::of(int64_t(shape->elements.size())));
  } else {
    return c.fail(c.hasInput(0) ? "the shape of input '" + c.node.input(0) + "' is not known"
                                : std::string("input 0 is missing")),
           std::nullopt;
  }
  return dims;
}

static bool convertShape(NodeContext &c) {
  std::optional<std::vector<Dim>> given = inputDims(c);
  if (!given)
    return false;
  std::vector<Dim> dims = *given;
  int64_t rank = int64_t(dims.size());
  auto clampAxis = [&](int64_t axis) {
    return std::clamp<int64_t>(axis < 0 ? axis + rank : axis, 0, rank);
  };
  int64_t start = clampAxis(c.attrInt("start", 0)), end = clampAxis(c.attrInt("end", rank));
  ShapeValue shape;
  for (int64_t d = start; d < end; ++d)
    shape.elements.push_back(dims[d]);
  c.defineShape(0, shape);
  return true;
}

/// Size: the static element count, an int64 scalar.
static bool convertSize(NodeContext &c) {
  std::optional<std::vector<Dim>> dims = inputDims(c);
  if (!dims)
    return false;
  ShapeValue size;
  size.scalar = true;
  size.elements.push_back(Dim::of(1));
  for (const Dim &dim : *dims) {
    if (dim.isSymbolic())
      return c.fail("the element count involves the symbolic dim '" + dim.symbol +
                    "' (--dim " + dim.symbol + "=SIZE fixes its size)");
    size.elements[0].size *= dim.size; // at most 2^62: types fit int64
  }
  c.defineShape(0, size);
  return true;
}

void onnximport::registerShapeOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Shape", convertShape},
      {"Size", convertSize},
  });
}
