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
    inputCount.multiply(dim);
  Shape shape;
  int inferredIndex = -1;
  for (const Attr &item : ctx.attr("shape")->list) {
    if (item.kind == Attr::Ident) {
      shape.push_back(Dim::named(item.text));
    } else if (item.intValue == -1) {
      if (inferredIndex >= 0)
        return ctx.errorAtAttr("shape", "reshape allows at most one -1");
      inferredIndex = static_cast<int>(shape.size());
      shape.push_back(Dim::of(1));
      continue;
    } else if (item.intValue <= 0 || item.intValue > kMaxDimSize) {
      return ctx.errorAtAttr("shape", "reshape sizes must be positive or -1, "
                                      "got " + std::to_string(item.intValue));
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
  else
    return ctx.error(what + "the -1 would be a product of symbolic dims");
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
  for (int64_t i = 0; i < input.getRank(); ++i) {
    const Dim &from = input.getShape()[i];
    if (from != target[i + offset] && from != Dim::of(1))
      return ctx.error("cannot broadcast " + input.str() + " to " +
                       ctx.attr("shape")->str() + ": dimension " +
                       std::to_string(i) + " is " + from.str() + " vs " +
                       target[i + offset].str());
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
                                   "supported (the size would be a sum)");
    shape[*axis].size += extra.size;
  }
  return Type::tensor(first.getDType(), shape);
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
    if (spec.intValue == 1) {
      std::vector<Type> fields{input};
      return Type::tuple(fields);
    }
    if (dim.isSymbolic())
      return ctx.error("split into sections along the symbolic dimension '" +
                       dim.symbol + "' is not supported");
    // TVM Relax: ceil-divided sections; the last one takes the rest.
    int64_t length = (dim.size + spec.intValue - 1) / spec.intValue;
    for (int64_t i = 0; i < spec.intValue; ++i)
      ranges.push_back({std::min(i * length, dim.size),
                        std::min((i + 1) * length, dim.size)});
  } else {
    if (dim.isSymbolic())
      return ctx.error("split at indices along the symbolic dimension '" +
                       dim.symbol + "' is not supported");
    int64_t begin = 0;
    for (const Attr &index : spec.list) {
      int64_t end = std::clamp<int64_t>(index.intValue, 0, dim.size);
      if (index.intValue < begin)
        return ctx.errorAtAttr("indices_or_sections",
                               "split indices must be non-negative and sorted");
      ranges.push_back({begin, end});
      begin = end;
    }
    ranges.push_back({begin, dim.size});
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
  if (stride > 0) {
    int64_t start = clampIndex(begin, 0, length);
    int64_t stop = clampIndex(end, 0, length);
    return stop > start ? (stop - start + stride - 1) / stride : 0;
  }
  int64_t start = clampIndex(begin, -1, length - 1);
  int64_t stop = clampIndex(end, -1, length - 1);
  return start > stop ? (start - stop + (-stride) - 1) / (-stride) : 0;
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
    if (dim.isSymbolic())
      return ctx.error("strided_slice along the symbolic dimension '" +
                       dim.symbol + "' is not supported");
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
  if (!ctx.attr("axis"))
    return Type::tensor(data.getDType(), indices.getShape());
  if (data.getRank() == 0)
    return ctx.errorAtOperand(0, "take along an axis needs rank >= 1");
  auto axis = singleAxis(ctx, data.getRank(), 0);
  if (!axis)
    return std::nullopt;
  Shape shape(data.getShape().begin(), data.getShape().begin() + *axis);
  shape.insert(shape.end(), indices.getShape().begin(), indices.getShape().end());
  shape.insert(shape.end(), data.getShape().begin() + *axis + 1,
               data.getShape().end());
  return Type::tensor(data.getDType(), shape);
}

void fusec::registerInjectiveOps(std::vector<const OpInfo *> &registry) {
  static const OpInfo ops[] = {
      {"reshape", OpClass::Injective, 1, 1,
       {{"shape", AttrSchema::ShapeList, true}}, inferReshape},
      {"permute_dims", OpClass::Injective, 1, 1,
       {{"axes", AttrSchema::Axes}}, inferPermuteDims},
      {"expand_dims", OpClass::Injective, 1, 1,
       {{"axis", AttrSchema::Axes, true}}, inferExpandDims},
      {"squeeze", OpClass::Injective, 1, 1, {{"axis", AttrSchema::Axes}},
       inferSqueeze},
      {"broadcast_to", OpClass::Injective, 1, 1,
       {{"shape", AttrSchema::ShapeList, true}}, inferBroadcastTo},
      {"concat", OpClass::Injective, 1, -1, {{"axis", AttrSchema::Axes}},
       inferConcat},
      {"split", OpClass::Injective, 1, 1,
       {{"indices_or_sections", AttrSchema::IntOrList, true},
        {"axis", AttrSchema::Axes}},
       inferSplit},
      {"strided_slice", OpClass::Injective, 1, 1,
       {{"axes", AttrSchema::Axes, true},
        {"begin", AttrSchema::IntOrList, true},
        {"end", AttrSchema::IntOrList, true},
        {"strides", AttrSchema::IntOrList}},
       inferStridedSlice},
      {"take", OpClass::Injective, 2, 2, {{"axis", AttrSchema::Axes}},
       inferTake},
  };
  for (const OpInfo &op : ops)
    registry.push_back(&op);
}
