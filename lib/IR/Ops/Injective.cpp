//===- Injective.cpp - Reshapes, permutations, slices, concat, take -------===//
//
// Spec §4 row "injective", plus expand_dims, squeeze and broadcast_to.
// Shapes may hold symbolic dims; an op whose result would need an
// expression of them (n + m, n / 2) is rejected with a message rather than
// guessed. `reshape` compares element counts as products of a coefficient
// and a multiset of symbols, so [n, 128] -> [n, -1] works and [n] -> [m]
// does not.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Ops.h"

#include <set>

using namespace fusec;

namespace {
/// coefficient * product(symbols): the element count of a shape.
struct SymbolicProduct {
  int64_t coefficient = 1;
  std::multiset<std::string> symbols;

  bool multiply(const Dim &dim) {
    if (dim.isSymbolic()) {
      symbols.insert(dim.symbol);
      return true;
    }
    return !__builtin_mul_overflow(coefficient, dim.size, &coefficient);
  }
};
} // namespace

static std::optional<Type> inferReshape(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  SymbolicProduct inputCount, knownCount;
  for (const Dim &dim : input.getShape())
    if (!inputCount.multiply(dim))
      return ctx.errorAtOperand(0, "cannot reshape " + input.str() +
                                       ": more elements than fit in i64");
  Shape shape;
  int inferredIndex = -1;
  for (const Attr &item : ctx.attr("shape")->list) {
    if (item.kind == Attr::Ident) {
      shape.push_back(Dim::named(item.text));
    } else if (item.intValue == -1) {
      if (inferredIndex >= 0)
        return ctx.errorAt(item.loc, "reshape allows at most one -1");
      inferredIndex = static_cast<int>(shape.size());
      shape.push_back(Dim::of(1));
      continue;
    } else if (item.intValue == 0) {
      // TVM Relax's reshape: 0 copies the operand's dim at that position.
      if (int64_t(shape.size()) >= input.getRank())
        return ctx.errorAt(item.loc, "reshape entry " + std::to_string(shape.size()) +
                                         " is 0 (copy the operand's dim) but the operand " +
                                         input.str() + " has rank " +
                                         std::to_string(input.getRank()));
      shape.push_back(input.getShape()[shape.size()]);
    } else if (item.intValue < 0) {
      return ctx.errorAt(item.loc, "reshape sizes must be positive, 0 (copy the operand's "
                                   "dim) or -1, got " + std::to_string(item.intValue));
    } else if (item.intValue > kMaxDimSize) {
      return ctx.errorAt(item.loc, "reshape size " + std::to_string(item.intValue) +
                                       " exceeds the maximum size 2^40");
    } else {
      shape.push_back(Dim::of(item.intValue));
    }
    if (!knownCount.multiply(shape.back()))
      return ctx.errorAtAttr("shape", "reshape target has too many elements");
  }
  std::string what = "cannot reshape " + input.str() + " to " +
                     ctx.attr("shape")->str() + ": ";
  if (inferredIndex < 0) {
    if (inputCount.coefficient != knownCount.coefficient ||
        inputCount.symbols != knownCount.symbols)
      return ctx.error(what + "the element counts differ");
    return Type::tensor(input.getDType(), shape);
  }
  // Solve -1 = inputCount / knownCount.
  std::multiset<std::string> remaining = inputCount.symbols;
  for (const std::string &symbol : knownCount.symbols) {
    auto it = remaining.find(symbol);
    if (it == remaining.end())
      return ctx.error(what + "'" + symbol + "' does not divide the element count");
    remaining.erase(it);
  }
  if (knownCount.coefficient == 0 ||
      inputCount.coefficient % knownCount.coefficient != 0)
    return ctx.error(what + "the element count is not divisible by the other sizes");
  int64_t quotient = inputCount.coefficient / knownCount.coefficient;
  if (remaining.empty())
    shape[inferredIndex] = Dim::of(quotient);
  else if (remaining.size() == 1 && quotient == 1)
    shape[inferredIndex] = Dim::named(*remaining.begin());
  else {
    // Name the product: `batch * 4`, `n * m`.
    std::string product = quotient == 1 ? "" : std::to_string(quotient);
    for (const std::string &symbol : remaining)
      product += (product.empty() ? "" : " * ") + symbol;
    return ctx.error(what + "the -1 would be " + product +
                     ", and a dim is a size or one name, not a product");
  }
  return Type::tensor(input.getDType(), shape);
}

static std::optional<Type> inferPermuteDims(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  int64_t rank = input.getRank();
  std::vector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  auto axes = ctx.axes("axes", rank, reversed);
  if (!axes)
    return std::nullopt;
  if (int64_t(axes->size()) != rank)
    return ctx.errorAtAttr("axes", "permute_dims needs " + std::to_string(rank) +
                                       " axes for " + input.str());
  Shape shape;
  for (int64_t axis : *axes)
    shape.push_back(input.getShape()[axis]);
  return Type::tensor(input.getDType(), shape);
}

static std::optional<Type> inferExpandDims(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  int64_t outRank = input.getRank() + int64_t(ctx.attr("axis")->kind == Attr::Int
                                                  ? 1
                                                  : ctx.attr("axis")->list.size());
  auto axes = ctx.axes("axis", outRank, {});
  if (!axes)
    return std::nullopt;
  Shape shape;
  auto next = input.getShape().begin();
  for (int64_t i = 0; i < outRank; ++i) {
    if (std::find(axes->begin(), axes->end(), i) != axes->end())
      shape.push_back(Dim::of(1));
    else
      shape.push_back(*next++);
  }
  return Type::tensor(input.getDType(), shape);
}

static std::optional<Type> inferSqueeze(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  std::vector<int64_t> unitAxes;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (input.getShape()[i] == Dim::of(1))
      unitAxes.push_back(i);
  auto axes = ctx.axes("axis", input.getRank(), unitAxes);
  if (!axes)
    return std::nullopt;
  for (int64_t axis : *axes)
    if (input.getShape()[axis] != Dim::of(1))
      return ctx.errorAtAttr("axis", "cannot squeeze axis " +
                                         std::to_string(axis) + " of " +
                                         input.str() + ": its size is " +
                                         input.getShape()[axis].str() + ", not 1");
  Shape shape;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (std::find(axes->begin(), axes->end(), i) == axes->end())
      shape.push_back(input.getShape()[i]);
  return Type::tensor(input.getDType(), shape);
}

static std::optional<Type> inferBroadcastTo(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  Shape target;
  for (const Attr &item : ctx.attr("shape")->list) {
    if (item.kind == Attr::Ident)
      target.push_back(Dim::named(item.text));
    else if (item.intValue < 0 || item.intValue > kMaxDimSize)
      return ctx.errorAtAttr("shape", "broadcast_to sizes must be in [0, 2^40]");
    else
      target.push_back(Dim::of(item.intValue));
  }
  int64_t offset = int64_t(target.size()) - input.getRank();
  if (offset < 0)
    return ctx.error("cannot broadcast " + input.str() + " to the lower rank " +
                     std::to_string(target.size()));
  // A symbolic dim the operand lacks must be bound by a tensor parameter of
  // the function; the verifier checks that (legalize passes it along).
  for (int64_t i = 0; i < input.getRank(); ++i) {
    const Dim &from = input.getShape()[i];
    if (from != target[i + offset] && from != Dim::of(1))
      return ctx.error("cannot broadcast " + input.str() + " to " +
                       ctx.attr("shape")->str() + ": the operand's dimension " +
                       std::to_string(i) + " (" + from.str() + ") faces dimension " +
                       std::to_string(i + offset) + " of the shape (" +
                       target[i + offset].str() + ")");
  }
  return Type::tensor(input.getDType(), target);
}

/// The single axis of an `axis` attribute (one-element list), or nullopt.
static std::optional<int64_t> singleAxis(InferContext &ctx, int64_t rank,
                                         int64_t defaultAxis) {
  const Attr *value = ctx.attr("axis");
  if (value && value->kind == Attr::List && value->list.size() != 1)
    return ctx.errorAtAttr("axis", "'" + ctx.binding.callee +
                                       "' takes a single axis");
  auto axes = ctx.axes("axis", rank, {defaultAxis});
  if (!axes)
    return std::nullopt;
  return axes->front();
}

static std::optional<Type> inferConcat(InferContext &ctx) {
  const Type &first = ctx.operand(0);
  if (first.getRank() == 0)
    return ctx.errorAtOperand(0, "concat needs operands of rank >= 1");
  auto axis = singleAxis(ctx, first.getRank(), 0);
  if (!axis)
    return std::nullopt;
  Shape shape = first.getShape();
  for (size_t i = 1; i < ctx.numOperands(); ++i) {
    const Type &other = ctx.operand(i);
    if (other.getDType() != first.getDType() || other.getRank() != first.getRank())
      return ctx.errorAtOperand(i, "concat operands must have the same dtype and "
                                   "rank: " + first.str() + " vs " + other.str());
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == *axis)
        continue;
      if (other.getShape()[d] != first.getShape()[d])
        return ctx.errorAtOperand(i, "concat operands differ in dimension " +
                                         std::to_string(d) + ": " + first.str() +
                                         " vs " + other.str());
    }
    const Dim &extra = other.getShape()[*axis];
    if (shape[*axis].isSymbolic() || extra.isSymbolic())
      return ctx.errorAtOperand(i, "concat along a symbolic dimension is not "
                                   "supported (the size would be a sum: " +
                                       shape[*axis].str() + " + " + extra.str() + ")");
    shape[*axis].size += extra.size;
  }
  return Type::tensor(first.getDType(), shape);
}

/// The [begin, end) sections of a dim of `size` split at a list of
/// non-negative indices: each from the previous index (0 first) to the
/// next (`size` last), clamped to the dim; one between a larger and a
/// smaller index is empty (NumPy's and TVM's rule).
static std::vector<std::pair<int64_t, int64_t>> splitIndexRanges(int64_t size,
                                                                  const Attr &spec) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t begin = 0;
  for (const Attr &index : spec.list) {
    int64_t end = std::clamp<int64_t>(index.intValue, 0, size);
    ranges.push_back({begin, std::max(begin, end)});
    begin = end;
  }
  ranges.push_back({begin, size});
  return ranges;
}

static std::optional<Type> inferSplit(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  if (input.getRank() == 0)
    return ctx.errorAtOperand(0, "split needs an operand of rank >= 1");
  auto axis = singleAxis(ctx, input.getRank(), 0);
  if (!axis)
    return std::nullopt;
  const Dim &dim = input.getShape()[*axis];
  const Attr &spec = *ctx.attr("indices_or_sections");
  std::vector<std::pair<int64_t, int64_t>> ranges; // [begin, end)
  if (spec.kind == Attr::Int) {
    if (spec.intValue <= 0)
      return ctx.errorAtAttr("indices_or_sections",
                             "split needs a positive number of sections");
    // Each section is a tuple field: bound their number before building them.
    constexpr int64_t kMaxSections = 65536;
    if (spec.intValue > kMaxSections)
      return ctx.errorAtAttr("indices_or_sections",
                             "split into more than " + std::to_string(kMaxSections) +
                                 " sections");
    // One section is the operand itself, a tensor, not a 1-tuple (TVM Relax
    // since apache/tvm#17642).
    if (spec.intValue == 1)
      return input;
    if (dim.isSymbolic())
      return ctx.error("split into sections along the symbolic dimension '" +
                       dim.symbol + "' is not supported");
    // TVM Relax: ceil-divided sections; the last one takes the rest.
    int64_t length = (dim.size + spec.intValue - 1) / spec.intValue;
    for (int64_t i = 0; i < spec.intValue; ++i)
      ranges.push_back({std::min(i * length, dim.size),
                        std::min((i + 1) * length, dim.size)});
  } else {
    if (spec.list.empty())
      return input; // no index: one section, as above
    if (dim.isSymbolic())
      return ctx.error("split at indices along the symbolic dimension '" +
                       dim.symbol + "' is not supported");
    // NumPy and TVM agree on indices out of order (a section between a
    // larger and a smaller index is empty), not on negative ones.
    for (const Attr &index : spec.list)
      if (index.intValue < 0)
        return ctx.errorAtAttr("indices_or_sections",
                               "split indices must be non-negative (NumPy counts a negative "
                               "one from the end, TVM clamps it to 0)");
    ranges = splitIndexRanges(dim.size, spec);
  }
  std::vector<Type> fields;
  for (auto [begin, end] : ranges) {
    Shape shape = input.getShape();
    shape[*axis] = Dim::of(std::max<int64_t>(0, end - begin));
    fields.push_back(Type::tensor(input.getDType(), shape));
  }
  return Type::tuple(fields);
}

/// Length of Python's `range(length)[begin:end:stride]`.
static int64_t sliceLength(int64_t length, int64_t begin, int64_t end,
                           int64_t stride) {
  auto clampIndex = [&](int64_t index, int64_t low, int64_t high) {
    if (index < 0)
      index = index < -length ? low : index + length;
    return std::clamp(index, low, high);
  };
  // ceil(distance / |stride|) as (distance - 1) / |stride| + 1, in 128 bits:
  // any int64 stride is valid and must not overflow.
  auto steps = [](int64_t distance, int64_t stride) -> int64_t {
    __int128 magnitude = stride > 0 ? __int128(stride) : -__int128(stride);
    return distance > 0 ? int64_t((__int128(distance) - 1) / magnitude + 1) : 0;
  };
  if (stride > 0)
    return steps(clampIndex(end, 0, length) - clampIndex(begin, 0, length), stride);
  return steps(clampIndex(begin, -1, length - 1) - clampIndex(end, -1, length - 1), stride);
}

SymbolicSlice fusec::symbolicSliceOf(int64_t begin, int64_t end, int64_t stride) {
  if (stride == 1 && (begin == 0 || begin <= -kMaxDimSize) && end >= kMaxDimSize)
    return SymbolicSlice::Whole;
  if (stride == -1 && (begin == -1 || begin >= kMaxDimSize) && end <= -kMaxDimSize)
    return SymbolicSlice::Reversed;
  return SymbolicSlice::None;
}

static std::optional<Type> inferStridedSlice(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  auto axes = ctx.axes("axes", input.getRank(), {});
  if (!axes)
    return std::nullopt;
  std::vector<int64_t> begin = ctx.intList("begin", axes->size(), {});
  std::vector<int64_t> end = ctx.intList("end", axes->size(), {});
  std::vector<int64_t> strides =
      ctx.intList("strides", axes->size(), std::vector<int64_t>(axes->size(), 1));
  if (begin.size() != axes->size() || end.size() != axes->size() ||
      strides.size() != axes->size())
    return ctx.error("strided_slice needs as many begin, end and strides "
                     "entries as axes (" + std::to_string(axes->size()) + ")");
  Shape shape = input.getShape();
  for (size_t i = 0; i < axes->size(); ++i) {
    Dim &dim = shape[(*axes)[i]];
    if (strides[i] == 0)
      return ctx.errorAtAttr("strides", "strided_slice strides must be non-zero");
    if (dim.isSymbolic()) {
      if (symbolicSliceOf(begin[i], end[i], strides[i]) == SymbolicSlice::None)
        return ctx.error("strided_slice along the symbolic dimension '" + dim.symbol +
                         "' takes it whole, forward (begin 0, end 2^40 or more, stride 1) or "
                         "reversed (begin -1, end -2^40 or less, stride -1): any other slice "
                         "has a size that is no dim");
      continue;
    }
    dim = Dim::of(sliceLength(dim.size, begin[i], end[i], strides[i]));
  }
  return Type::tensor(input.getDType(), shape);
}

static std::optional<Type> inferTake(InferContext &ctx) {
  const Type &data = ctx.operand(0);
  const Type &indices = ctx.operand(1);
  if (indices.getDType() != DType::i32 && indices.getDType() != DType::i64)
    return ctx.errorAtOperand(1, "take indices must be i32 or i64, got " +
                                     indices.str());
  if (data.getRank() == 0)
    return ctx.errorAtOperand(0, "take needs an operand of rank >= 1 (a 0-d tensor has no "
                                 "elements to index)");
  if (!ctx.attr("axis"))
    return Type::tensor(data.getDType(), indices.getShape());
  auto axis = singleAxis(ctx, data.getRank(), 0);
  if (!axis)
    return std::nullopt;
  Shape shape(data.getShape().begin(), data.getShape().begin() + *axis);
  shape.insert(shape.end(), indices.getShape().begin(), indices.getShape().end());
  shape.insert(shape.end(), data.getShape().begin() + *axis + 1,
               data.getShape().end());
  return Type::tensor(data.getDType(), shape);
}

//===----------------------------------------------------------------------===//
// Legalization: one stage per output whose loads index the input with
// expressions of the output's iteration variables only (injective); pure
// re-orderings of them give broadcast, and the identity elemwise.
//===----------------------------------------------------------------------===//

static KExprPtr dimExpr(const Dim &dim) {
  return dim.isSymbolic() ? KExpr::var(dim.symbol) : KExpr::intConst(dim.size);
}

static KExprPtr mulExpr(KExprPtr a, KExprPtr b) {
  if (a->kind == KExpr::IntConst && a->intValue == 1)
    return b;
  if (b->kind == KExpr::IntConst && b->intValue == 1)
    return a;
  return KExpr::binary(KExpr::Mul, a, b);
}

static KExprPtr addExpr(KExprPtr a, KExprPtr b) {
  if (b->kind == KExpr::IntConst && b->intValue == 0)
    return a;
  if (a->kind == KExpr::IntConst && a->intValue == 0)
    return b;
  if (b->kind == KExpr::IntConst && b->intValue < 0)
    return KExpr::binary(KExpr::Sub, a, KExpr::intConst(-b->intValue));
  return KExpr::binary(KExpr::Add, a, b);
}

/// Row-major flat position of `indices` in `shape`.
static KExprPtr ravel(const std::vector<KExprPtr> &indices, const Shape &shape) {
  if (shape.empty())
    return KExpr::intConst(0);
  KExprPtr flat = indices[0];
  for (size_t d = 1; d < shape.size(); ++d)
    flat = addExpr(mulExpr(flat, dimExpr(shape[d])), indices[d]);
  return flat;
}

/// The indices of flat position `flat` in `shape`.
static std::vector<KExprPtr> unravel(KExprPtr flat, const Shape &shape) {
  std::vector<KExprPtr> indices(shape.size());
  KExprPtr stride = KExpr::intConst(1);
  for (size_t d = shape.size(); d-- > 0;) {
    KExprPtr quotient = stride->kind == KExpr::IntConst && stride->intValue == 1
                            ? flat
                            : KExpr::binary(KExpr::FloorDiv, flat, stride);
    indices[d] = d == 0 ? quotient
                        : KExpr::binary(KExpr::Mod, quotient, dimExpr(shape[d]));
    stride = mulExpr(stride, dimExpr(shape[d]));
  }
  return indices;
}

static void legalizeReshape(KernelBuilder &b) {
  const Shape &out = b.resultType.getShape(), &in = b.operandType(0).getShape();
  auto vars = KernelBuilder::varNames("i", out.size());
  std::vector<KExprPtr> indices = KernelBuilder::vars(vars);
  if (out != in)
    indices = unravel(ravel(indices, out), in);
  b.addStage(b.outputName(0), vars, b.load(0, indices));
}

static void legalizePermuteDims(KernelBuilder &b) {
  int64_t rank = b.operandType(0).getRank();
  std::vector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  std::vector<int64_t> axes = b.axes("axes", rank, reversed);
  auto vars = KernelBuilder::varNames("i", rank);
  std::vector<KExprPtr> indices(rank);
  for (int64_t d = 0; d < rank; ++d)
    indices[axes[d]] = KExpr::var(vars[d]);
  b.addStage(b.outputName(0), vars, b.load(0, indices));
}

static void legalizeExpandDims(KernelBuilder &b) {
  int64_t outRank = b.resultType.getRank();
  std::vector<int64_t> axes = b.axes("axis", outRank, {});
  auto vars = KernelBuilder::varNames("i", outRank);
  std::vector<KExprPtr> indices;
  for (int64_t d = 0; d < outRank; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      indices.push_back(KExpr::var(vars[d]));
  b.addStage(b.outputName(0), vars, b.load(0, indices));
}

static void legalizeSqueeze(KernelBuilder &b) {
  const Shape &in = b.operandType(0).getShape();
  std::vector<int64_t> unit;
  for (int64_t d = 0; d < int64_t(in.size()); ++d)
    if (in[d] == Dim::of(1))
      unit.push_back(d);
  std::vector<int64_t> axes = b.axes("axis", in.size(), unit);
  auto vars = KernelBuilder::varNames("i", b.resultType.getRank());
  std::vector<KExprPtr> indices;
  size_t next = 0;
  for (int64_t d = 0; d < int64_t(in.size()); ++d)
    indices.push_back(std::find(axes.begin(), axes.end(), d) != axes.end()
                          ? KExpr::intConst(0)
                          : KExpr::var(vars[next++]));
  b.addStage(b.outputName(0), vars, b.load(0, indices));
}

static void legalizeBroadcastTo(KernelBuilder &b) {
  const Shape &out = b.resultType.getShape();
  auto vars = KernelBuilder::varNames("i", out.size());
  b.addStage(b.outputName(0), vars,
             b.broadcastOperand(0, KernelBuilder::vars(vars), out));
}

static void legalizeConcat(KernelBuilder &b) {
  const Shape &out = b.resultType.getShape();
  int64_t axis = b.axes("axis", out.size(), {0}).front();
  auto vars = KernelBuilder::varNames("i", out.size());
  std::vector<int64_t> offsets{0};
  for (size_t i = 0; i < b.numOperands(); ++i)
    offsets.push_back(offsets.back() + b.operandType(i).getShape()[axis].size);
  auto operandAt = [&](size_t i) {
    std::vector<KExprPtr> indices = KernelBuilder::vars(vars);
    indices[axis] = addExpr(indices[axis], KExpr::intConst(-offsets[i]));
    return b.load(i, indices);
  };
  size_t last = b.numOperands() - 1;
  KExprPtr body = operandAt(last);
  for (size_t i = last; i-- > 0;)
    body = KExpr::select(KExpr::binary(KExpr::Lt, KExpr::var(vars[axis]),
                                       KExpr::intConst(offsets[i + 1])),
                         operandAt(i), body);
  b.addStage(b.outputName(0), vars, body);
}

static void legalizeSplit(KernelBuilder &b) {
  int64_t rank = b.operandType(0).getRank();
  if (!b.resultType.isTuple()) { // one section: a copy
    auto vars = KernelBuilder::varNames("i", rank);
    b.addStage(b.outputName(0), vars, b.load(0, KernelBuilder::vars(vars)));
    return;
  }
  int64_t axis = b.axes("axis", rank, {0}).front();
  const Attr *spec = b.attr("indices_or_sections");
  const Dim &dim = b.operandType(0).getShape()[axis];
  std::vector<std::pair<int64_t, int64_t>> ranges;
  if (spec && spec->kind == Attr::List && dim.isStatic())
    ranges = splitIndexRanges(dim.size, *spec);
  int64_t begin = 0;
  for (size_t k = 0; k < b.resultType.getFields().size(); ++k) {
    if (k < ranges.size())
      begin = ranges[k].first;
    auto vars = KernelBuilder::varNames("i", rank);
    std::vector<KExprPtr> indices = KernelBuilder::vars(vars);
    indices[axis] = addExpr(indices[axis], KExpr::intConst(begin));
    b.addStage(b.outputName(k), vars, b.load(0, indices));
    const Dim &extent = b.resultType.getFields()[k].getShape()[axis];
    begin += extent.isStatic() ? extent.size : 0;
  }
}

static void legalizeStridedSlice(KernelBuilder &b) {
  const Shape &in = b.operandType(0).getShape();
  std::vector<int64_t> axes = b.axes("axes", in.size(), {});
  std::vector<int64_t> begin = b.intList("begin", axes.size(), {});
  std::vector<int64_t> strides =
      b.intList("strides", axes.size(), std::vector<int64_t>(axes.size(), 1));
  auto vars = KernelBuilder::varNames("i", in.size());
  std::vector<KExprPtr> indices = KernelBuilder::vars(vars);
  std::vector<int64_t> end = b.intList("end", axes.size(), {});
  for (size_t k = 0; k < axes.size(); ++k) {
    const Dim &dim = in[axes[k]];
    if (dim.isSymbolic()) { // whole (the index as it is) or reversed: n - 1 - i
      if (symbolicSliceOf(begin[k], end[k], strides[k]) == SymbolicSlice::Reversed)
        indices[axes[k]] = addExpr(mulExpr(indices[axes[k]], KExpr::intConst(-1)),
                                   addExpr(dimExpr(dim), KExpr::intConst(-1)));
      continue;
    }
    int64_t length = dim.size, start = begin[k];
    // Python's slice start: negative counts from the end, then clamped.
    if (start < 0)
      start = start < -length ? (strides[k] > 0 ? 0 : -1) : start + length;
    start = strides[k] > 0 ? std::clamp<int64_t>(start, 0, length)
                           : std::clamp<int64_t>(start, -1, length - 1);
    indices[axes[k]] = addExpr(mulExpr(indices[axes[k]], KExpr::intConst(strides[k])),
                               KExpr::intConst(start));
  }
  b.addStage(b.outputName(0), vars, b.load(0, indices));
}

static void legalizeTake(KernelBuilder &b) {
  const Shape &data = b.operandType(0).getShape();
  const Shape &idxShape = b.operandType(1).getShape();
  auto vars = KernelBuilder::varNames("i", b.resultType.getRank());
  std::vector<KExprPtr> all = KernelBuilder::vars(vars);
  bool flattened = !b.attr("axis");
  int64_t axis = flattened ? 0 : b.axes("axis", data.size(), {0}).front();
  std::vector<KExprPtr> idxIndices(all.begin() + axis,
                                   all.begin() + axis + idxShape.size());
  KExprPtr index = b.load(1, idxIndices);
  // A negative index counts from the end once (spec §4).
  KExprPtr extent = flattened ? ravel({}, {}) : dimExpr(data[axis]);
  if (flattened) {
    extent = KExpr::intConst(1);
    for (const Dim &dim : data)
      extent = mulExpr(extent, dimExpr(dim));
  }
  KExprPtr wrapped = KExpr::select(KExpr::binary(KExpr::Lt, index, KExpr::intConst(0)),
                                   KExpr::binary(KExpr::Add, index, extent), index);
  std::vector<KExprPtr> dataIndices;
  if (flattened) {
    dataIndices = unravel(wrapped, data);
  } else {
    dataIndices.assign(all.begin(), all.begin() + axis);
    dataIndices.push_back(wrapped);
    dataIndices.insert(dataIndices.end(), all.begin() + axis + idxShape.size(), all.end());
  }
  b.addStage(b.outputName(0), vars, b.load(0, dataIndices));
}

void fusec::registerInjectiveOps(std::vector<const OpInfo *> &registry) {
  static const OpInfo ops[] = {
      {"reshape", OpClass::Injective, 1, 1,
       {{"shape", AttrSchema::ShapeList, true}}, inferReshape, false, legalizeReshape},
      {"permute_dims", OpClass::Injective, 1, 1,
       {{"axes", AttrSchema::Axes}}, inferPermuteDims, false, legalizePermuteDims},
      {"expand_dims", OpClass::Injective, 1, 1,
       {{"axis", AttrSchema::Axes, true}}, inferExpandDims, false, legalizeExpandDims},
      {"squeeze", OpClass::Injective, 1, 1, {{"axis", AttrSchema::Axes}},
       inferSqueeze, false, legalizeSqueeze},
      {"broadcast_to", OpClass::Injective, 1, 1,
       {{"shape", AttrSchema::ShapeList, true}}, inferBroadcastTo, false, legalizeBroadcastTo},
      {"concat", OpClass::Injective, 1, -1, {{"axis", AttrSchema::Axes}},
       inferConcat, false, legalizeConcat},
      {"split", OpClass::Injective, 1, 1,
       {{"indices_or_sections", AttrSchema::IntOrList, true},
        {"axis", AttrSchema::Axes}},
       inferSplit, false, legalizeSplit},
      {"strided_slice", OpClass::Injective, 1, 1,
       {{"axes", AttrSchema::Axes, true},
        {"begin", AttrSchema::IntOrList, true},
        {"end", AttrSchema::IntOrList, true},
        {"strides", AttrSchema::IntOrList}},
       inferStridedSlice, false, legalizeStridedSlice},
      {"take", OpClass::Injective, 2, 2, {{"axis", AttrSchema::Axes}},
       inferTake, false, legalizeTake},
  };
  for (const OpInfo &op : ops)
    registry.push_back(&op);
}
