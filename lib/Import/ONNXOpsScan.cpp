//===- ONNXOpsScan.cpp - Operators that search or accumulate along an axis -===//
//
// FIR has no arg-reduction or scan op; these compose from ops it has, each a
// reduction over an elementwise body that fusion makes one kernel:
//   ArgMax / ArgMin  m = max|min(x) over the axis (kept);
//                    hit = x == m, or x is NaN (NumPy and ONNX Runtime
//                    return the first NaN);
//                    min(where(hit, index, n)) over the axis, the first
//                    index; max(where(hit, index, -1)) with
//                    select_last_index, the last. `index` is a constant
//                    0..n-1 along the axis (i64, as ONNX's result).
//   CumSum           y[.., i, ..] = sum over j of where(j <= i, x[.., j, ..], 0)
//                    (j < i when exclusive; j >= i, j > i when reverse):
//                    x is expanded with an axis for i, the mask compares two
//                    constant index vectors, and the sum drops the j axis.
//                    A select, not a product with a 0/1 mask, so that an
//                    infinity in x stays out of the other sums.
//   Hardmax          where(index == ArgMax(x) kept, 1, 0) (2-D before opset 13).
//   TopK             k rounds (k <= 64): the max (min) of x with the elements
//                    taken so far (and NaNs) replaced by the dtype's lowest
//                    (highest) value, and the first index of it not taken
//                    yet; a NaN ranks above every number (PyTorch's order:
//                    first when largest, last when smallest); the rounds'
//                    values and indices concatenated along the axis.
//                    Larger k (a sort): each element's rank, the number of
//                    elements before it in that order (an n x n comparison
//                    summed), then output r takes the element of rank r
//                    (a k x n match summed): n <= 4096.
// The index vectors are constants, or over a symbolic axis range kernels
// (emitSymbolicRange); TopK's ranks need a static axis (its rounds do not).
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

/// Index constants are at most this long (a 2^24-element i64 is 128 MiB).
static constexpr int64_t kMaxScanExtent = int64_t(1) << 24;

/// The axis `axis` of `x` (negative counts from the end) and its extent:
/// static and non-empty, of at most kMaxScanExtent, or a symbolic dim;
/// nullopt after an error.
static std::optional<std::pair<int64_t, Dim>> scanAxis(NodeContext &c, Value *x, int64_t axis) {
  int64_t rank = x->type.getRank();
  if (rank == 0)
    return c.fail("the input must have rank >= 1, not " + x->type.str()), std::nullopt;
  if (axis < -rank || axis >= rank)
    return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank)),
           std::nullopt;
  if (axis < 0)
    axis += rank;
  const Dim &extent = x->type.getShape()[axis];
  if (extent.isStatic() && (extent.size == 0 || extent.size > kMaxScanExtent))
    return c.fail("the axis has " + std::to_string(extent.size) +
                  " elements; 1 to 2^24 are supported"),
           std::nullopt;
  return std::make_pair(axis, extent);
}

/// What `min(where(hit, index, notFound))` gives when nothing is hit: the
/// extent, or for a symbolic one a value above any index.
static double notFoundIndex(const Dim &n) { return n.isStatic() ? double(n.size) : 0x1p62; }

/// The index of the first (`last`: the last) maximum (IsMax) or minimum of
/// `x` along axis `a` of `n` elements, i64, the axis kept or dropped.
static Value *extremeIndex(NodeContext &c, Value *x, int64_t a, const Dim &n, bool isMax,
                           bool last, bool keepdims, const std::string &name) {
  Attrs kept;
  kept.set("axis", makeIntList({a}));
  kept.set("keepdims", Attr::makeBool(true));
  Value *best = c.emit(isMax ? "max" : "min", {Operand::of(x)}, kept, name + "_best");
  Value *hit = c.emit("equal", {Operand::of(x), Operand::of(best)}, {}, name + "_hit");
  if (isFloatDType(x->type.getDType())) {
    Value *nan = c.emit("not_equal", {Operand::of(x), Operand::of(x)}, {}, name + "_nan");
    hit = c.emit("logical_or", {Operand::of(hit), Operand::of(nan)}, {}, name + "_found");
  }
  Value *index = indexVector(c, n, x->type.getRank() - a - 1, name + "_index");
  Value *candidates =
      c.emit("where", {Operand::of(hit), Operand::of(index),
                       NodeContext::literal(last ? -1.0 : notFoundIndex(n), DType::i64)},
             {}, name + "_candidates");
  Attrs result;
  result.set("axis", makeIntList({a}));
  result.set("keepdims", Attr::makeBool(keepdims));
  return c.emit(last ? "max" : "min", {Operand::of(candidates)}, result, name);
}

template <bool IsMax>
static bool convertArgExtreme(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  bool keepdims = c.attrInt("keepdims", 1) != 0;
  bool last = c.attrInt("select_last_index", 0) != 0;
  std::optional<std::pair<int64_t, Dim>> axis = scanAxis(c, x, c.attrInt("axis", 0));
  if (!axis)
    return false;
  c.define(0, extremeIndex(c, x, axis->first, axis->second, IsMax, last, keepdims,
                           c.node.output(0)));
  return true;
}

/// Hardmax: 1 at the first maximum along the axis, 0 elsewhere. Before
/// opset 13 the input is seen as 2-D, [dims before axis, dims from axis].
static bool convertHardmax(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  bool coerced = c.opset < 13;
  int64_t rank = x->type.getRank(), axis = c.attrInt("axis", coerced ? 1 : -1);
  std::string name = c.node.output(0);
  Value *rows = x;
  if (coerced) {
    if (axis < -rank || axis > rank)
      return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                    std::to_string(rank));
    if (axis < 0)
      axis += rank;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      const Dim &dim = x->type.getShape()[d];
      if (dim.isSymbolic())
        return c.fail("before opset 13 the input must be static, not " + x->type.str());
      (d < axis ? outer : inner) *= dim.size;
    }
    Attrs shape;
    shape.set("shape", makeIntList({outer, inner}));
    rows = c.emit("reshape", {Operand::of(x)}, shape, name + "_rows");
    axis = 1;
    if (!rows)
      return false;
  }
  std::optional<std::pair<int64_t, Dim>> scan = scanAxis(c, rows, axis);
  if (!scan)
    return false;
  int64_t a = scan->first;
  Dim n = scan->second;
  Value *best = extremeIndex(c, rows, a, n, true, false, true, name + "_argmax");
  Value *index = indexVector(c, n, rows->type.getRank() - a - 1, name + "_positions");
  Value *hit = best ? c.emit("equal", {Operand::of(index), Operand::of(best)}, {}, name + "_hit")
                    : nullptr;
  if (!hit)
    return false;
  DType dtype = x->type.getDType();
  Value *one = c.emitSplat(1, dtype, {}, name + "_one"), *zero = c.emitSplat(0, dtype, {}, name + "_zero");
  Value *result = c.emit("where", {Operand::of(hit), Operand::of(one), Operand::of(zero)}, {},
                         coerced ? name + "_2d" : name);
  if (coerced && result) {
    Attrs shape;
    shape.set("shape", makeShapeList(x->type.getShape()));
    result = c.emit("reshape", {Operand::of(result)}, shape, name);
  }
  c.define(0, result);
  return true;
}

static bool convertCumSum(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  if (!c.hasInput(1))
    return c.fail("axis (input 1) is missing");
  std::optional<std::vector<int64_t>> axisValue = c.ints(1, "axis");
  if (!axisValue)
    return false;
  if (axisValue->size() != 1)
    return c.fail("axis (input 1) must hold one value");
  bool exclusive = c.attrInt("exclusive", 0) != 0, reverse = c.attrInt("reverse", 0) != 0;
  std::optional<std::pair<int64_t, Dim>> axis = scanAxis(c, x, axisValue->front());
  if (!axis)
    return false;
  int64_t a = axis->first;
  Dim n = axis->second;
  int64_t trailing = x->type.getRank() - a - 1;
  std::string name = c.node.output(0);
  // x: [.., n(j), ..] -> [.., n(j), 1(i), ..]; the mask is [n(j), n(i), 1...].
  Attrs expand;
  expand.set("axis", makeIntList({a + 1}));
  Value *rows = c.emit("expand_dims", {Operand::of(x)}, expand, name + "_rows");
  Value *source = indexVector(c, n, trailing + 1, name + "_source");
  Value *target = indexVector(c, n, trailing, name + "_target");
  const char *compare = reverse ? (exclusive ? "greater" : "greater_equal")
                                : (exclusive ? "less" : "less_equal");
  Value *mask = c.emit(compare, {Operand::of(source), Operand::of(target)}, {}, name + "_mask");
  Value *terms = c.emit("where", {Operand::of(mask), Operand::of(rows),
                                  NodeContext::literal(0, x->type.getDType())},
                        {}, name + "_terms");
  Attrs sum;
  sum.set("axis", makeIntList({a}));
  c.define(0, c.emit("sum", {Operand::of(terms)}, sum, name));
  return true;
}

/// TopK for a large k: rank[i] = #{j : x[j] comes before x[i]} (NaN first
/// when largest, last when smallest; equal ones by index), then output r
/// takes the element whose rank is r.
static bool topKByRank(NodeContext &c, Value *x, int64_t a, int64_t n, int64_t k,
                       bool largest) {
  std::string name = c.node.output(0);
  DType dtype = x->type.getDType();
  int64_t rank = x->type.getRank();
  int counter = 0;
  auto emit = [&](const char *op, std::vector<Operand> operands, Attrs attrs = {}) {
    return c.emit(op, std::move(operands), std::move(attrs),
                  name + "_rank_" + std::to_string(counter++));
  };
  auto both = [&](const char *op, Value *lhs, Value *rhs) {
    return emit(op, {Operand::of(lhs), Operand::of(rhs)});
  };
  auto expand = [&](Value *v, int64_t axis) {
    Attrs attrs;
    attrs.set("axis", makeIntList({axis}));
    return emit("expand_dims", {Operand::of(v)}, attrs);
  };
  // x[i] along axis a, x[j] along a + 1: [.., n (i), n (j), ..].
  Value *xi = expand(x, a + 1), *xj = expand(x, a);
  Value *iIndex = indexVector(c, Dim::of(n), rank - a, name + "_rank_i");
  Value *jIndex = indexVector(c, Dim::of(n), rank - a - 1, name + "_rank_j");
  Value *better = both(largest ? "greater" : "less", xj, xi);
  Value *tie = both("equal", xj, xi);
  if (isFloatDType(dtype)) {
    Value *nanI = both("not_equal", xi, xi), *nanJ = both("not_equal", xj, xj);
    Value *numberI = emit("logical_not", {Operand::of(nanI)});
    Value *numberJ = emit("logical_not", {Operand::of(nanJ)});
    // largest: a NaN before every number; smallest: every number before a NaN.
    Value *nanOrder = largest ? both("logical_and", nanJ, numberI)
                              : both("logical_and", numberJ, nanI);
    better = both("logical_or", better, nanOrder);
    tie = both("logical_or", tie, both("logical_and", nanI, nanJ));
  }
  Value *before = both("logical_or", better, both("logical_and", tie,
                                                   both("less", jIndex, iIndex)));
  Attrs overJ;
  overJ.set("axis", makeIntList({a + 1}));
  Value *ranks = emit("sum", {Operand::of(castTo(c, before, DType::i64, name + "_rank_before"))},
                      overJ);
  // Output r: the element whose rank is r ([.., k (r), n (i), ..]).
  Value *positions = indexVector(c, Dim::of(k), rank - a, name + "_rank_r");
  Value *match = both("equal", expand(ranks, a), positions);
  Value *chosenIndex = emit("sum", {Operand::of(emit(
                                       "where", {Operand::of(match), Operand::of(jIndex),
                                                 NodeContext::literal(0, DType::i64)}))},
                            overJ);
  Value *chosenValue = emit("sum", {Operand::of(emit(
                                       "where", {Operand::of(match), Operand::of(expand(x, a)),
                                                 NodeContext::literal(0, dtype)}))},
                            overJ);
  if (!chosenIndex || !chosenValue)
    return false;
  c.define(0, chosenValue);
  if (c.hasOutput(1))
    c.define(1, chosenIndex);
  return c.importer.error.empty();
}

/// TopK: k rounds, each taking the largest (smallest) element not taken
/// yet, the first of equal ones (ONNX's order), then one concat per output.
static bool convertTopK(NodeContext &c) {
  Value *x = c.input(0);
  std::optional<std::vector<int64_t>> kValue;
  if (c.opset < 10) // k was an attribute
    kValue = std::vector<int64_t>{c.attrInt("k", 0)};
  else
    kValue = c.ints(1, "k");
  if (!x || !kValue)
    return false;
  bool largest = c.attrInt("largest", 1) != 0;
  c.attrInt("sorted", 1); // the rounds give sorted results either way
  std::optional<std::pair<int64_t, Dim>> axis = scanAxis(c, x, c.attrInt("axis", -1));
  if (!axis)
    return false;
  constexpr int64_t kMaxRounds = 64, kMaxRanked = 4096;
  int64_t a = axis->first;
  const Dim extent = axis->second;
  // Over a symbolic axis, the rounds, without ONNX's check that k is at most
  // the axis' size: a run with fewer elements (invalid ONNX) gives rounds
  // past them the index 2^62 (and a float value 0, an integer's extreme).
  int64_t n = extent.isStatic() ? extent.size : kMaxRounds;
  if (kValue->size() != 1 || (*kValue)[0] < 0 || (*kValue)[0] > n)
    return c.fail(extent.isStatic() ? "k must be one value in [0, " + std::to_string(n) + "]"
                                    : "k must be one value in [0, 64] along the symbolic axis '" +
                                          extent.symbol + "' (--dim " + extent.symbol +
                                          "=SIZE fixes its size)");
  int64_t k = (*kValue)[0];
  if (k == 0) { // empty results, the axis of size 0
    Shape empty = x->type.getShape();
    empty[size_t(a)] = Dim::of(0);
    std::string name = c.node.output(0);
    c.define(0, c.emitSplat(0, x->type.getDType(), empty, name));
    if (c.hasOutput(1))
      c.define(1, c.emitSplat(0, DType::i64, empty, name + "_indices"));
    return true;
  }
  if (k > kMaxRounds && n > kMaxRanked)
    return c.fail("k = " + std::to_string(k) + " over " + std::to_string(n) +
                  " elements: above 64, fusec ranks the elements against each other, for "
                  "at most " + std::to_string(kMaxRanked));
  if (k > kMaxRounds)
    return topKByRank(c, x, a, n, k, largest);
  std::string name = c.node.output(0);
  DType dtype = x->type.getDType();
  double sentinel = largest ? lowestValue(dtype) : highestValue(dtype);
  Attrs kept;
  kept.set("axis", makeIntList({a}));
  kept.set("keepdims", Attr::makeBool(true));
  Value *index = indexVector(c, extent, x->type.getRank() - a - 1, name + "_index");
  double notFound = notFoundIndex(extent);
  auto emit = [&](const char *op, std::vector<Operand> operands, const std::string &hint,
                  Attrs attrs = {}) {
    for (const Operand &operand : operands)
      if (!operand.isLiteral() && !operand.value)
        return static_cast<Value *>(nullptr);
    return c.emit(op, std::move(operands), std::move(attrs), hint);
  };
  auto firstOf = [&](Value *hit, const std::string &hint) {
    Value *candidates = emit("where", {Operand::of(hit), Operand::of(index),
                                       NodeContext::literal(notFound, DType::i64)},
                             hint + "_candidates");
    return emit("min", {Operand::of(candidates)}, hint, kept);
  };
  // NaN ranks above every number (PyTorch's order): first when largest,
  // last when smallest. It takes no part in the max/min of a round.
  bool floats = isFloatDType(dtype);
  Value *nan = floats ? emit("not_equal", {Operand::of(x), Operand::of(x)}, name + "_nan")
                      : nullptr;
  Value *taken = nullptr;
  std::vector<Operand> values, indices;
  for (int64_t round = 0; round < k; ++round) {
    std::string step = name + "_" + std::to_string(round);
    Value *open = taken ? emit("logical_not", {Operand::of(taken)}, step + "_open") : nullptr;
    Value *excluded = taken && nan ? emit("logical_or", {Operand::of(taken), Operand::of(nan)},
                                          step + "_excluded")
                                   : taken ? taken : nan;
    Value *rest = excluded ? emit("where", {Operand::of(excluded),
                                            NodeContext::literal(sentinel, dtype), Operand::of(x)},
                                  step + "_rest")
                           : x;
    Value *best = emit(largest ? "max" : "min", {Operand::of(rest)}, step + "_best", kept);
    Value *hit = emit("equal", {Operand::of(rest), Operand::of(best)}, step + "_hit");
    if (excluded) {
      Value *allowed = emit("logical_not", {Operand::of(excluded)}, step + "_allowed");
      hit = emit("logical_and", {Operand::of(hit), Operand::of(allowed)}, step + "_number");
    }
    Value *chosen = firstOf(hit, step + "_position");
    if (nan) {
      Value *nanOpen = open ? emit("logical_and", {Operand::of(nan), Operand::of(open)},
                                   step + "_nan_open")
                            : nan;
      Value *firstNaN = firstOf(nanOpen, step + "_nan_position");
      // largest: a NaN if one is left; smallest: a number if one is left.
      Value *preferred = largest ? firstNaN : chosen, *fallback = largest ? chosen : firstNaN;
      Value *found = emit("less", {Operand::of(preferred),
                                   NodeContext::literal(notFound, DType::i64)},
                          step + "_found");
      chosen = emit("where", {Operand::of(found), Operand::of(preferred), Operand::of(fallback)},
                    step + "_chosen");
    }
    Value *now = emit("equal", {Operand::of(index), Operand::of(chosen)}, step + "_taken");
    // The value at the chosen index: for floats a sum of one element (NaN
    // and infinities included), for integers the round's max/min.
    Value *value = best;
    if (floats) {
      Value *only = emit("where", {Operand::of(now), Operand::of(x),
                                   NodeContext::literal(0, dtype)},
                         step + "_only");
      value = emit("sum", {Operand::of(only)}, step + "_value", kept);
    }
    if (!value || !chosen || !now)
      return false;
    values.push_back(Operand::of(value));
    indices.push_back(Operand::of(chosen));
    if (round + 1 < k)
      taken = taken ? emit("logical_or", {Operand::of(taken), Operand::of(now)},
                           step + "_all_taken")
                    : now;
  }
  Attrs along;
  along.set("axis", makeIntList({a}));
  auto joined = [&](std::vector<Operand> parts, const std::string &output) {
    return parts.size() == 1 ? parts.front().value
                             : c.emit("concat", std::move(parts), along, output);
  };
  c.define(0, joined(values, name));
  if (c.hasOutput(1))
    c.define(1, joined(indices, c.node.output(1)));
  return c.importer.error.empty();
}

void onnximport::registerScanOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"ArgMax", convertArgExtreme<true>},
      {"ArgMin", convertArgExtreme<false>},
      {"CumSum", convertCumSum},
      {"Hardmax", convertHardmax},
      {"TopK", convertTopK},
  });
}
