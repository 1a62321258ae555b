//===- ONNXOpsFill.cpp - Operators that build larger tensors --------------===//
//
// Expand -> broadcast_to (ONNX broadcasts both ways: the result shape is
// computed); ConstantOfShape -> a constant (a splat beyond 64 elements; a
// 0-d splat broadcast_to the shape when it names a symbolic dim);
// Range with constant inputs -> a constant; with a symbolic limit (start 0,
// delta 1: GPT-2's position ids, arange(seq)) -> a call of a kernel whose
// stage casts its index (emitSymbolicRange); Tile -> per repeated axis
// expand_dims, broadcast_to and reshape ([n] -> [1, n] -> [r, n] -> [r n],
// which repeats the whole axis); Pad (static shapes): `constant` mode
// crops negative pads with strided_slice and concatenates splats of the
// value, `edge` and `reflect` take along each axis with constant indices
// (i - begin, clamped or reflected into the axis), which crops too;
// Trilu (static last two dims) -> where(mask, x, 0) with a constant [N, M]
// mask keeping j - i >= k (upper) or j - i <= k (lower), which folds on a
// constant input (a causal attention mask); over symbolic dims the mask
// compares index vectors (range kernels); EyeLike -> a constant (ones
// on the k-th diagonal; only the input's static shape and dtype matter).
//
//===----------------------------------------------------------------------===//
#include "ONNXGrouped.h"

#include <cmath>

using namespace fusec;
using namespace fusec::onnximport;

static bool convertExpand(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  std::optional<ShapeValue> shape = c.shapeValue(1);
  if (!shape)
    return c.fail("the shape (input 1) must be a constant or a shape computation that folds");
  // A grouped x, or a size that is a product (x.expand_as(y) of a grouped
  // y), broadcasts to the factors (ONNXGrouped.cpp).
  std::optional<std::vector<Dim>> target = firDims(shape->elements);
  if (c.runsOf(0) || !target)
    return defineBroadcast(c, x, *c.onnxDims(0), runsOrOnes(c, 0, c.onnxDims(0)->size()),
                           shape->elements);
  // ONNX broadcasts both ways: the result is broadcast(x.shape, shape).
  const Shape &in = x->type.getShape();
  size_t rank = std::max(in.size(), target->size());
  std::vector<Dim> result(rank);
  for (size_t k = 0; k < rank; ++k) {
    std::optional<Dim> a, b;
    if (k + in.size() >= rank)
      a = in[k + in.size() - rank];
    if (k + target->size() >= rank)
      b = (*target)[k + target->size() - rank];
    if (!a || (b && a->isOne()))
      result[k] = *b;
    else if (!b || b->isOne() || *a == *b)
      result[k] = *a;
    else
      return c.fail("cannot broadcast " + x->type.str() + " to the given shape at dim " +
                    std::to_string(k));
  }
  if (result == std::vector<Dim>(in.begin(), in.end()))
    return c.define(0, x), true;
  Attrs attrs;
  attrs.set("shape", makeShapeList(result));
  c.define(0, c.emit("broadcast_to", {Operand::of(x)}, attrs));
  return true;
}

static bool convertConstantOfShape(NodeContext &c) {
  // A shape with a symbolic dim (a dynamic batch) broadcasts a 0-d splat.
  std::optional<ShapeValue> symbolic = c.shapeValue(0);
  if (!symbolic || !symbolic->firstSymbol())
    symbolic.reset();
  std::optional<std::vector<int64_t>> shape =
      symbolic ? std::vector<int64_t>() : c.ints(0, "shape");
  if (!shape)
    return false;
  DType dtype = DType::f32;
  double value = 0;
  if (const onnx::TensorProto *tensor = c.attrTensor("value")) {
    std::string error;
    std::shared_ptr<TensorData> data = readTensor(*tensor, c.importer.modelDirectory, error);
    if (!data || data->getNumElements() != 1)
      return c.fail(data ? "value must hold one element" : error);
    dtype = data->getDType();
    value = isFloatDType(dtype) ? data->get(0) : double(data->getInt(0));
  }
  if (symbolic) {
    std::optional<std::vector<Dim>> dims = firDims(symbolic->elements);
    if (!dims)
      return defineBroadcast(c, c.emitSplat(value, dtype, {}, c.node.output(0) + "_fill"), {},
                             {}, symbolic->elements); // zeros_like of a grouped value
    for (const Dim &dim : *dims)
      if (dim.isStatic() && (dim.size < 0 || dim.size > kMaxDimSize))
        return c.fail("invalid shape entry " + std::to_string(dim.size));
    Value *scalar = c.emitSplat(value, dtype, {}, c.node.output(0) + "_fill");
    Attrs attrs;
    attrs.set("shape", makeShapeList(*dims));
    return c.define(0, c.emit("broadcast_to", {Operand::of(scalar)}, attrs)), true;
  }
  Shape dims;
  int64_t count = 1;
  for (int64_t dim : *shape) {
    if (dim < 0 || dim > kMaxDimSize || (dim && count > kMaxDimSize / dim))
      return c.fail("invalid shape entry " + std::to_string(dim));
    count *= dim;
    dims.push_back(Dim::of(dim));
  }
  if (count > 64) // a tensor, not a shape value: a splat, nothing allocated
    return c.define(0, c.emitSplat(value, dtype, dims, c.node.output(0))), true;
  TensorData data(dtype, *shape);
  for (int64_t k = 0; k < data.getNumElements(); ++k)
    isFloatDType(dtype) ? data.set(k, value) : data.setInt(k, int64_t(value));
  c.defineConstant(0, std::move(data));
  return true;
}

/// A call of a one-stage kernel writing `type` from `body` (over `i0` when
/// 1-D), whose symbolic dims `symbols` are bound by graph inputs that have
/// them, passed and not read (as legalize passes dim carriers: TVM's
/// tir_vars). FIR has no graph-level iota, and a shape value is no tensor:
/// a kernel's stage can cast its index and its symbolic dims. Identical
/// kernels are shared, named `<base>` (made unique).
static Value *emitIndexKernel(NodeContext &c, const std::string &base, const Type &type,
                              KExprPtr body, const std::vector<std::string> &symbols,
                              const char *what, llvm::StringRef nameHint) {
  std::vector<std::string> unbound;
  std::vector<Value *> carriers = dimCarriers(*c.importer.function, symbols, &unbound);
  if (!unbound.empty())
    return c.fail("no graph input has the dim '" + unbound[0] + "' that " + what + " (--dim " +
                  unbound[0] + "=SIZE fixes its size)"),
           nullptr;
  auto kernel = std::make_unique<Kernel>();
  for (size_t k = 0; k < carriers.size(); ++k)
    kernel->inputs.push_back(
        KBuffer{k ? "n" + std::to_string(k) : "n", carriers[k]->type, KBuffer::Input, {}});
  kernel->outputs.push_back(KBuffer{"out", type, KBuffer::Output, {}});
  KStage stage;
  stage.buffer = "out";
  if (type.getRank() == 1)
    stage.spatialVars = {"i0"};
  stage.body = std::move(body);
  kernel->stages.push_back(std::move(stage));
  kernel->name = base;
  // (No structured binding: C++17 lambdas cannot capture one.)
  auto inserted = c.importer.indexKernels.try_emplace(printKernel(*kernel));
  auto named = inserted.first;
  bool added = inserted.second;
  if (added) {
    named->second = base;
    for (int suffix = 1; llvm::any_of(c.importer.module.kernels, [&](const auto &other) {
           return other->name == named->second;
         });)
      named->second = base + "_" + std::to_string(suffix++);
    kernel->name = named->second;
  }
  auto binding = std::make_unique<Binding>();
  binding->kind = ExprKind::CallKernel;
  binding->callee = named->second;
  for (Value *carrier : carriers)
    binding->operands.push_back(Operand::of(carrier));
  binding->result = std::make_unique<Value>();
  binding->result->type = kernel->getResultType();
  if (added)
    c.importer.module.kernels.push_back(std::move(kernel));
  std::string problem;
  return c.importer.addBinding(std::move(binding), nameHint, problem);
}

Value *onnximport::emitSymbolicRange(NodeContext &c, const std::string &symbol, DType dtype,
                                     llvm::StringRef nameHint) {
  return emitIndexKernel(c, "range_" + symbol, Type::tensor(dtype, {Dim::named(symbol)}),
                         KExpr::cast(KExpr::var("i0"), dtype), {symbol}, "sizes this range",
                         nameHint);
}

Value *onnximport::emitShapeValue(NodeContext &c, const ShapeValue &shape,
                                  llvm::StringRef nameHint) {
  // Element k is size * dims...; a 1-D value selects its element by index.
  std::vector<std::string> symbols;
  auto elementExpr = [&](const SymbolicSize &element) {
    KExprPtr e = KExpr::intConst(element.size);
    for (const std::string &symbol : element.symbols) {
      e = foldIndex(KExpr::Mul, e, KExpr::var(symbol));
      if (!llvm::is_contained(symbols, symbol))
        symbols.push_back(symbol);
    }
    return e;
  };
  size_t n = shape.elements.size(); // >= 1: one of them is symbolic
  KExprPtr body = elementExpr(shape.elements[n - 1]);
  for (size_t k = n - 1; k-- > 0;)
    body = KExpr::select(KExpr::binary(KExpr::Eq, KExpr::var("i0"), KExpr::intConst(int64_t(k))),
                         elementExpr(shape.elements[k]), body);
  Shape dims;
  if (!shape.scalar)
    dims.push_back(Dim::of(int64_t(n)));
  std::string base = "dims";
  for (const std::string &symbol : symbols)
    base += "_" + symbol;
  return emitIndexKernel(c, base, Type::tensor(shape.dtype, dims),
                         KExpr::cast(body, shape.dtype), symbols, "this shape value reads",
                         nameHint);
}

Value *onnximport::indexVector(NodeContext &c, const Dim &n, int64_t trailing,
                               llvm::StringRef hint) {
  if (n.isStatic()) {
    std::vector<int64_t> shape{n.size};
    shape.resize(size_t(1 + trailing), 1);
    TensorData data(DType::i64, shape);
    for (int64_t k = 0; k < n.size; ++k)
      data.setInt(k, k);
    return c.emitConstant(std::move(data), hint);
  }
  Value *range =
      emitSymbolicRange(c, n.symbol, DType::i64, trailing ? hint.str() + "_range" : hint.str());
  if (!range || !trailing)
    return range;
  std::vector<int64_t> axes;
  for (int64_t d = 1; d <= trailing; ++d)
    axes.push_back(d);
  Attrs attrs;
  attrs.set("axis", makeIntList(axes));
  return c.emit("expand_dims", {Operand::of(range)}, attrs, hint);
}

/// Range(start, limit, delta) with a symbolic dim among its inputs: a limit
/// that is one (an integer or a float one, torch.arange(T, dtype=float)),
/// with start 0 and delta 1, makes its length the dim; other forms need
/// --dim.
static bool convertSymbolicRange(NodeContext &c) {
  auto scalarOf = [&](size_t i) -> std::optional<double> {
    if (const TensorData *data = c.constant(i); data && data->getNumElements() == 1)
      return data->get(0);
    if (std::optional<ShapeValue> value = c.shapeValue(i);
        value && value->elements.size() == 1 && value->elements[0].isStatic())
      return double(value->elements[0].size);
    return std::nullopt;
  };
  std::optional<ShapeValue> limit = c.shapeValue(1);
  std::optional<Dim> length = limit && limit->elements.size() == 1
                                  ? limit->elements[0].asDim()
                                  : std::optional<Dim>();
  if (scalarOf(0) == 0.0 && scalarOf(2) == 1.0 && length && length->isSymbolic()) {
    Value *range = emitSymbolicRange(c, length->symbol, limit->dtype, c.node.output(0));
    return range && (c.define(0, range), true);
  }
  for (size_t i = 0; i < 3; ++i)
    if (std::optional<ShapeValue> value = c.shapeValue(i))
      if (const std::string *symbol = value->firstSymbol())
        return c.fail(std::string(i == 0 ? "start" : i == 1 ? "limit" : "delta") +
                      " (input " + std::to_string(i) + ") involves the symbolic dim '" +
                      *symbol + "'; a range over a symbolic dim must start at 0 with delta 1 "
                      "(--dim " + *symbol + "=SIZE fixes its size)");
  return false; // not reached: the caller saw a symbolic input
}

static bool convertRange(NodeContext &c) {
  const TensorData *start = c.constant(0), *limit = c.constant(1), *delta = c.constant(2);
  for (size_t i = 0; i < 3; ++i)
    if (std::optional<ShapeValue> value = c.shapeValue(i); value && !value->isStatic())
      return convertSymbolicRange(c);
  if (!start || !limit || !delta || start->getNumElements() != 1 ||
      limit->getNumElements() != 1 || delta->getNumElements() != 1)
    return c.fail("start, limit and delta must be one-element constants");
  DType dtype = start->getDType();
  double first = start->get(0), last = limit->get(0), step = delta->get(0);
  if (step == 0 || !std::isfinite(first) || !std::isfinite(last) || !std::isfinite(step))
    return c.fail("delta must be non-zero and the bounds finite");
  double count = std::max(std::ceil((last - first) / step), 0.0);
  if (count > double(1 << 24))
    return c.fail("a range of " + formatScalar(count, DType::f32) + " elements is too long");
  TensorData data(dtype, {int64_t(count)});
  for (int64_t k = 0; k < int64_t(count); ++k) {
    if (isFloatDType(dtype))
      data.set(k, first + double(k) * step);
    else
      data.setInt(k, start->getInt(0) + k * delta->getInt(0));
  }
  c.defineConstant(0, std::move(data));
  return true;
}

static bool failOnSymbolicTile(NodeContext &c, const std::string &symbol) {
  return c.fail("tiling the symbolic dim '" + symbol + "' is not supported (--dim " + symbol +
                "=SIZE fixes its size)");
}

static bool convertTile(NodeContext &c) {
  Value *x = c.input(0);
  // A symbolic repeat of a size-1 dim (nn.MultiheadAttention's bias_k tiled
  // to the batch) is a broadcast to that size.
  if (std::optional<ShapeValue> symbolic = c.shapeValue(1); x && symbolic && !symbolic->isStatic()) {
    const Shape &in = x->type.getShape();
    if (symbolic->elements.size() != in.size() || c.runsOf(0))
      return c.fail("repeats has " + std::to_string(symbolic->elements.size()) +
                    " entries for rank " + std::to_string(in.size()));
    std::vector<SymbolicSize> dims, target;
    for (size_t d = 0; d < in.size(); ++d) {
      const SymbolicSize &repeat = symbolic->elements[d];
      dims.push_back(SymbolicSize::of(in[d]));
      if (repeat.isSymbolic() && in[d] != Dim::of(1))
        return c.fail("repeats entry " + std::to_string(d) + " is " + repeat.str() +
                      ", which tiles a dim of size " + in[d].str() + " (" +
                      dimOptions({repeat}) + " fixes its size)");
      if (repeat.isStatic() && repeat.size != 1)
        return c.fail("repeats mixes symbolic entries with a static repeat of " +
                      std::to_string(repeat.size) + " (" + dimOptions(symbolic->elements) +
                      " fixes their sizes)");
      target.push_back(repeat.isSymbolic() ? repeat : dims.back());
    }
    return defineBroadcast(c, x, dims, AxisRuns(in.size(), 1), target);
  }
  std::optional<std::vector<int64_t>> repeats = x ? c.ints(1, "repeats") : std::nullopt;
  if (!repeats)
    return false;
  int64_t rank = x->type.getRank();
  if (int64_t(repeats->size()) != rank)
    return c.fail("repeats has " + std::to_string(repeats->size()) + " entries for rank " +
                  std::to_string(rank));
  for (int64_t r : *repeats)
    if (r < 0 || r > kMaxDimSize)
      return c.fail("repeats must be in [0, 2^40]");
  if (llvm::is_contained(*repeats, 0)) { // an empty result
    Shape shape = x->type.getShape();
    for (int64_t d = 0; d < rank; ++d)
      if ((*repeats)[d] == 0)
        shape[d] = Dim::of(0);
      else if ((*repeats)[d] != 1 && shape[d].isStatic()) {
        int64_t tiled = 0;
        if (__builtin_mul_overflow(shape[d].size, (*repeats)[d], &tiled) || tiled > kMaxDimSize)
          return c.fail("the tiled dim is too large");
        shape[d] = Dim::of(tiled);
      }
      else if ((*repeats)[d] != 1)
        return failOnSymbolicTile(c, shape[d].symbol);
    return c.define(0, c.emitSplat(0, x->type.getDType(), shape, c.node.output(0))), true;
  }
  Value *current = x;
  for (int64_t d = 0; d < rank && current; ++d) {
    int64_t r = (*repeats)[d];
    if (r == 1)
      continue;
    Shape shape = current->type.getShape();
    if (shape[d].isSymbolic())
      return failOnSymbolicTile(c, shape[d].symbol);
    std::string name = c.node.output(0) + "_" + std::to_string(d);
    Attrs expand;
    expand.set("axis", makeIntList({d}));
    Value *opened = c.emit("expand_dims", {Operand::of(current)}, expand, name + "_axis");
    Shape wide = shape;
    wide.insert(wide.begin() + d, Dim::of(r));
    Attrs broadcast;
    broadcast.set("shape", makeShapeList(wide));
    Value *copies = opened ? c.emit("broadcast_to", {Operand::of(opened)}, broadcast,
                                    name + "_copies")
                           : nullptr;
    int64_t tiled = 0;
    if (__builtin_mul_overflow(shape[d].size, r, &tiled) || tiled > kMaxDimSize)
      return c.fail("the tiled dim is too large");
    shape[d] = Dim::of(tiled);
    Attrs reshape;
    reshape.set("shape", makeShapeList(shape));
    current = copies ? c.emit("reshape", {Operand::of(copies)}, reshape, name + "_tiled")
                     : nullptr;
  }
  c.define(0, current);
  return true;
}

/// The index along an axis of `n` that padded position `i` reads.
static int64_t padSource(int64_t i, int64_t begin, int64_t n, bool reflect) {
  int64_t src = i - begin;
  if (!reflect || n == 1)
    return std::clamp<int64_t>(src, 0, n - 1);
  int64_t period = 2 * (n - 1);
  src %= period;
  if (src < 0)
    src += period;
  return src < n ? src : period - src;
}

static bool convertPad(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  std::string mode = c.attrString("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    return c.fail("mode '" + mode + "' is not supported");
  // Pad-1 names its attribute `paddings`; Pad-2 `pads`; from 11 an input.
  std::optional<std::vector<int64_t>> pads = c.opset < 2    ? c.attrInts("paddings")
                                             : c.opset < 11 ? c.attrInts("pads")
                                                            : c.ints(1, "pads");
  if (!pads)
    return c.opset < 11 ? c.fail("pads is required") : false;
  double value = c.opset < 11 ? c.attrFloat("value", 0) : 0;
  if (c.opset >= 11 && c.hasInput(2)) {
    const TensorData *given = c.constant(2);
    if (!given || given->getNumElements() != 1)
      return c.fail("constant_value must be a one-element constant");
    value = isFloatDType(given->getDType()) ? given->get(0) : double(given->getInt(0));
  }
  int64_t rank = x->type.getRank();
  if (int64_t(pads->size()) != 2 * rank)
    return c.fail("pads has " + std::to_string(pads->size()) + " entries for rank " +
                  std::to_string(rank));
  DType dtype = x->type.getDType();
  if (!isFloatDType(dtype) && !isInt64Value(value))
    return c.fail("the pad value is not a " + dtypeName(dtype).str() + " value");
  Value *current = x;
  for (int64_t d = 0; d < rank && current; ++d) {
    int64_t begin = (*pads)[d], end = (*pads)[rank + d];
    if (begin == 0 && end == 0)
      continue;
    Shape shape = current->type.getShape();
    if (shape[d].isSymbolic())
      return c.fail("padding the symbolic dim '" + shape[d].symbol +
                    "' is not supported: its padded size is no FIR dim (--dim " +
                    shape[d].symbol + "=SIZE fixes its size)");
    int64_t n = shape[d].size;
    if (std::abs(begin) > kMaxDimSize || std::abs(end) > kMaxDimSize ||
        n + begin + end < 0 || n + begin + end > kMaxDimSize)
      return c.fail("pads [" + std::to_string(begin) + ", " + std::to_string(end) +
                    "] do not fit the dim of " + std::to_string(n));
    std::string name = c.node.output(0) + "_" + std::to_string(d);
    if (mode != "constant") {
      if (n == 0)
        return c.fail("mode '" + mode + "' pads an empty dim");
      TensorData indices(DType::i64, {n + begin + end});
      for (int64_t i = 0; i < n + begin + end; ++i)
        indices.setInt(i, padSource(i, begin, n, mode == "reflect"));
      Value *index = c.emitConstant(std::move(indices), name + "_indices");
      Attrs attrs;
      attrs.set("axis", Attr::makeInt(d));
      current = c.emit("take", {Operand::of(current), Operand::of(index)}, attrs, name + "_padded");
      continue;
    }
    if (begin < 0 || end < 0) { // crop first
      Attrs slice;
      slice.set("axes", makeIntList({d}));
      slice.set("begin", makeIntList({std::max<int64_t>(-begin, 0)}));
      slice.set("end", makeIntList({n - std::max<int64_t>(-end, 0)}));
      current = c.emit("strided_slice", {Operand::of(current)}, slice, name + "_cropped");
    }
    current = padWithConstant(c, current, d, begin, end, value, name);
  }
  c.define(0, current);
  return true;
}

Value *onnximport::padWithConstant(NodeContext &c, Value *x, int64_t axis, int64_t begin,
                                   int64_t end, double fill, const std::string &name) {
  std::vector<Operand> parts;
  for (int side = 0; side < 2 && x; ++side) {
    int64_t width = side == 0 ? begin : end;
    if (width > 0) {
      Shape block = x->type.getShape();
      block[size_t(axis)] = Dim::of(width);
      parts.push_back(Operand::of(c.emitSplat(fill, x->type.getDType(), block,
                                              name + (side ? "_after" : "_before"))));
    }
    if (side == 0)
      parts.push_back(Operand::of(x));
  }
  if (!x || parts.size() == 1)
    return x;
  Attrs attrs;
  attrs.set("axis", Attr::makeInt(axis));
  return c.emit("concat", parts, attrs, name + "_padded");
}

static bool convertEyeLike(NodeContext &c) {
  // The result depends on the input's shape and dtype only: a constant.
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  if (const TensorData *data = c.constant(0)) {
    shape = data->getShape();
    dtype = data->getDType();
  } else if (const Type *type = c.typeOf(0)) {
    for (const Dim &dim : type->getShape()) {
      if (dim.isSymbolic())
        return c.fail("the input's dims must be static, not " + type->str() + " (--dim " +
                      dim.symbol + "=SIZE fixes one)");
      shape.push_back(dim.size);
    }
    dtype = type->getDType();
  } else {
    return c.fail("input 0 is missing or not a tensor");
  }
  if (shape.size() != 2)
    return c.fail("the input must be a matrix (rank 2)");
  if (c.hasAttr("dtype")) {
    std::optional<DType> given = c.dtypeOf(c.attrInt("dtype", 1), "dtype");
    if (!given)
      return false;
    dtype = *given;
  }
  int64_t k = c.attrInt("k", 0), rows = shape[0], cols = shape[1];
  if (rows && cols > (int64_t(1) << 26) / rows)
    return c.fail("more than 2^26 elements");
  TensorData eye(dtype, shape);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      eye.setInt(i * cols + j, j - i == k ? 1 : 0);
  c.defineConstant(0, std::move(eye));
  return true;
}

static bool convertTrilu(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  bool upper = c.attrInt("upper", 1) != 0;
  int64_t k = 0;
  if (c.hasInput(1)) {
    std::optional<std::vector<int64_t>> given = c.ints(1, "k");
    if (!given)
      return false;
    if (given->size() != 1)
      return c.fail("k must hold one value, not " + std::to_string(given->size()));
    k = (*given)[0];
  }
  int64_t rank = x->type.getRank();
  if (rank < 2)
    return c.fail("the input must have rank 2 or more, not " + std::to_string(rank));
  const Dim &rows = x->type.getShape()[size_t(rank - 2)], &cols = x->type.getShape()[size_t(rank - 1)];
  std::string name = c.node.output(0);
  if (rows.isSymbolic() || cols.isSymbolic()) {
    // A causal mask over a dynamic sequence (torch.triu of a [seq, seq]
    // fill): the mask compares index vectors, j - i against k.
    Value *i = indexVector(c, rows, 1, name + "_rows"), *j = indexVector(c, cols, 0, name + "_cols");
    Value *offset = i && j ? c.emit("subtract", {Operand::of(j), Operand::of(i)}, {},
                                    name + "_offset")
                           : nullptr;
    Value *keep = offset ? c.emit(upper ? "greater_equal" : "less_equal",
                                  {Operand::of(offset), NodeContext::literal(double(k), DType::i64)},
                                  {}, name + "_mask")
                         : nullptr;
    c.define(0, keep ? c.emit("where", {Operand::of(keep), Operand::of(x),
                                        NodeContext::literal(0, x->type.getDType())})
                     : nullptr);
    return true;
  }
  constexpr int64_t kMaxMaskElements = int64_t(1) << 26;
  if (rows.size && cols.size > kMaxMaskElements / rows.size)
    return c.fail("a mask of " + rows.str() + "x" + cols.str() +
                  " elements is more than fusec builds at import (2^26)");
  // Beyond this the mask is all kept or all zero; clamping keeps j - i in range.
  k = std::clamp<int64_t>(k, -rows.size - 1, cols.size + 1);
  TensorData mask(DType::boolean, {rows.size, cols.size});
  for (int64_t i = 0; i < rows.size; ++i)
    for (int64_t j = 0; j < cols.size; ++j)
      mask.setInt(i * cols.size + j, upper ? j - i >= k : j - i <= k);
  Value *keep = c.emitConstant(std::move(mask), name + "_mask");
  c.define(0, c.emit("where", {Operand::of(keep), Operand::of(x),
                               NodeContext::literal(0, x->type.getDType())}));
  return true;
}

void onnximport::registerFillOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Expand", convertExpand},
      {"ConstantOfShape", convertConstantOfShape},
      {"Range", convertRange},
      {"Tile", convertTile},
      {"Pad", convertPad},
      {"Trilu", convertTrilu},
      {"EyeLike", convertEyeLike},
  });
}
