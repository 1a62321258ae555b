//===- ONNXOpsReduce.cpp - Reductions -------------------------------------===//
//
// ReduceSum/Mean/Max/Min/Prod -> sum/mean/max/min/prod {axis, keepdims}
// (axes as the attribute, or as input 1 where the opset has it;
// noop_with_empty_axes). The composed ones apply their elementwise parts
// around a sum:
//   ReduceL1        sum(abs(x))
//   ReduceL2        sqrt(sum(x * x))          (F.normalize's norm)
//   ReduceSumSquare sum(x * x)
//   ReduceLogSum    log(sum(x))
//   ReduceLogSumExp log(sum(exp(x - m))) + m, m = max(x) with keepdims
//                   clipped to the finite range, so that a large x does not
//                   overflow exp (as ONNX Runtime) and a row of -inf gives
//                   -inf, not NaN (as PyTorch);
//                   the kept dims are squeezed after, without keepdims.
// With noop_with_empty_axes and no axes, nothing is reduced: only the
// elementwise parts apply (a reduction over no axis).
// MeanVarianceNormalization and LpNormalization divide by such reductions
// (kept dims), as their ONNX definitions do.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

namespace {
enum class Composed { Plain, L1, L2, SumSquare, LogSum, LogSumExp };

/// The reduction's attributes; `reduces` is false for a no-op reduction.
struct ReduceAttrs {
  Attrs attrs;
  std::vector<int64_t> axes; // empty: every axis
  bool keepdims = true;
  bool reduces = true;
};
} // namespace

static std::optional<ReduceAttrs> readReduceAttrs(NodeContext &c) {
  std::optional<std::vector<int64_t>> axes = c.attrInts("axes");
  if (c.hasInput(1)) {
    axes = c.ints(1, "axes");
    if (!axes)
      return std::nullopt;
  }
  ReduceAttrs result;
  result.keepdims = c.attrInt("keepdims", 1) != 0;
  bool noopWithEmptyAxes = c.attrInt("noop_with_empty_axes", 0) != 0; // read even with axes
  if ((!axes || axes->empty()) && noopWithEmptyAxes) {
    result.reduces = false;
    return result;
  }
  if (axes && !axes->empty()) {
    result.axes = *axes;
    result.attrs.set("axis", makeIntList(*axes));
  }
  result.attrs.set("keepdims", Attr::makeBool(result.keepdims));
  return result;
}

static const char kReduceMean[] = "mean", kReduceSum[] = "sum", kReduceMax[] = "max",
                  kReduceMin[] = "min", kReduceProd[] = "prod";

/// `Op` over the axes (Plain), or a composed reduction around a sum.
template <Composed Kind, const char *Op = kReduceSum>
static bool convertReduce(NodeContext &c) {
  // The product of a shape's dims (Keras' Dense on a 3-D input, through
  // tf.tensordot: ReduceProd of Shape's free dims) stays a shape value.
  if (std::optional<ShapeValue> shape = c.shapeValue(0);
      Kind == Composed::Plain && Op == kReduceProd && shape && !shape->isStatic() &&
      !shape->scalar) {
    std::optional<ReduceAttrs> reduce = readReduceAttrs(c);
    if (!reduce)
      return false;
    bool overDim0 = reduce->axes.empty() ||
                    (reduce->axes.size() == 1 && (reduce->axes[0] == 0 || reduce->axes[0] == -1));
    std::optional<SymbolicSize> product = productOf(shape->elements);
    if (reduce->reduces && overDim0 && product) {
      ShapeValue result;
      result.dtype = shape->dtype;
      result.elements = {*product};
      result.scalar = !reduce->keepdims;
      return c.defineShape(0, result), true;
    }
  }
  Value *x = c.input(0);
  if (!x)
    return false;
  std::optional<ReduceAttrs> reduce = readReduceAttrs(c);
  if (!reduce)
    return false;
  bool needsFloat = Kind == Composed::L2 || Kind == Composed::LogSum ||
                    Kind == Composed::LogSumExp;
  if (needsFloat && !isFloatDType(x->type.getDType()))
    return c.fail("the input must be a float tensor, not " + x->type.str());
  std::string name = c.node.output(0);
  auto unary = [&](const char *op, Value *v, const std::string &hint) {
    return c.emit(op, {Operand::of(v)}, {}, hint);
  };
  auto sum = [&](Value *v, Attrs attrs, const std::string &hint) {
    return reduce->reduces ? c.emit("sum", {Operand::of(v)}, std::move(attrs), hint) : v;
  };
  Value *result = nullptr;
  switch (Kind) {
  case Composed::Plain:
    result = reduce->reduces ? c.emit(Op, {Operand::of(x)}, reduce->attrs) : x;
    break;
  case Composed::L1:
    result = sum(unary("abs", x, name + "_abs"), reduce->attrs, name);
    break;
  case Composed::L2:
  case Composed::SumSquare: {
    Value *square = c.emit("multiply", {Operand::of(x), Operand::of(x)}, {}, name + "_square");
    result = sum(square, reduce->attrs, Kind == Composed::L2 ? name + "_sum" : name);
    if (Kind == Composed::L2)
      result = unary("sqrt", result, name);
    break;
  }
  case Composed::LogSum:
    result = unary("log", sum(x, reduce->attrs, name + "_sum"), name);
    break;
  case Composed::LogSumExp: {
    if (!reduce->reduces) { // log(exp(x)) over no axis
      c.define(0, x);
      return true;
    }
    Attrs kept = reduce->attrs;
    kept.set("keepdims", Attr::makeBool(true));
    // An infinite max (a row of -inf: a fully masked row; or a +inf) would
    // make x - m NaN: clipped to the finite range, the result is still
    // log(0) + m = -inf and inf, as PyTorch gives.
    Value *rowMax = c.emit("max", {Operand::of(x)}, kept, name + "_rowmax");
    Attrs finite;
    DType dtype = x->type.getDType();
    finite.set("min", Attr::makeFloat(lowestFiniteValue(dtype)));
    finite.set("max", Attr::makeFloat(-lowestFiniteValue(dtype)));
    Value *peak = rowMax ? c.emit("clip", {Operand::of(rowMax)}, finite, name + "_max") : nullptr;
    Value *shifted = c.emit("subtract", {Operand::of(x), Operand::of(peak)}, {}, name + "_shifted");
    Value *total = sum(unary("exp", shifted, name + "_exp"), kept, name + "_sum");
    result = c.emit("add", {Operand::of(unary("log", total, name + "_log")), Operand::of(peak)},
                    {}, reduce->keepdims ? name : name + "_kept");
    if (result && !reduce->keepdims) {
      Attrs squeeze;
      std::vector<int64_t> axes = reduce->axes;
      if (axes.empty())
        for (int64_t d = 0; d < x->type.getRank(); ++d)
          axes.push_back(d);
      squeeze.set("axis", makeIntList(axes));
      result = c.emit("squeeze", {Operand::of(result)}, squeeze, name);
    }
    break;
  }
  }
  c.define(0, result);
  return true;
}

/// MeanVarianceNormalization: (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9)
/// over `axes` (default [0, 2, 3]), ONNX's function body.
static bool convertMeanVarianceNormalization(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  if (!isFloatDType(x->type.getDType()))
    return c.fail("the input must be a float tensor, not " + x->type.str());
  std::optional<std::vector<int64_t>> given = c.attrInts("axes");
  if (!given && x->type.getRank() < 4)
    return c.fail("the default axes [0, 2, 3] need rank 4 or more, not " + x->type.str() +
                  "; give axes");
  std::vector<int64_t> axes = given.value_or(std::vector<int64_t>{0, 2, 3});
  std::string name = c.node.output(0);
  Attrs over;
  over.set("axis", makeIntList(axes));
  over.set("keepdims", Attr::makeBool(true));
  Value *mean = c.emit("mean", {Operand::of(x)}, over, name + "_mean");
  Value *square = c.emit("multiply", {Operand::of(x), Operand::of(x)}, {}, name + "_square");
  Value *meanSquare = c.emit("mean", {Operand::of(square)}, over, name + "_mean_square");
  Value *squaredMean = c.emit("multiply", {Operand::of(mean), Operand::of(mean)}, {},
                              name + "_squared_mean");
  Value *variance = c.emit("subtract", {Operand::of(meanSquare), Operand::of(squaredMean)}, {},
                           name + "_variance");
  Value *deviation = c.emit("sqrt", {Operand::of(variance)}, {}, name + "_std");
  DType dtype = x->type.getDType();
  Value *denominator = c.emit("add", {Operand::of(deviation), NodeContext::literal(1e-9, dtype)},
                              {}, name + "_denominator");
  Value *centered = c.emit("subtract", {Operand::of(x), Operand::of(mean)}, {}, name + "_centered");
  c.define(0, c.emit("divide", {Operand::of(centered), Operand::of(denominator)}));
  return true;
}

/// LpNormalization: x / ||x||_p along `axis` (p = 1: sum of |x|; p = 2:
/// sqrt of the sum of squares).
static bool convertLpNormalization(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  int64_t p = c.attrInt("p", 2);
  if (p != 1 && p != 2)
    return c.fail("p = " + std::to_string(p) + " is not 1 or 2");
  if (!isFloatDType(x->type.getDType()))
    return c.fail("the input must be a float tensor, not " + x->type.str());
  std::string name = c.node.output(0);
  Attrs over;
  over.set("axis", makeIntList({c.attrInt("axis", -1)}));
  over.set("keepdims", Attr::makeBool(true));
  Value *terms = p == 1 ? c.emit("abs", {Operand::of(x)}, {}, name + "_abs")
                        : c.emit("multiply", {Operand::of(x), Operand::of(x)}, {}, name + "_square");
  Value *norm = c.emit("sum", {Operand::of(terms)}, over, name + "_norm");
  if (p == 2)
    norm = c.emit("sqrt", {Operand::of(norm)}, {}, name + "_l2");
  c.define(0, c.emit("divide", {Operand::of(x), Operand::of(norm)}));
  return true;
}

void onnximport::registerReduceOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"ReduceMean", convertReduce<Composed::Plain, kReduceMean>},
      {"ReduceSum", convertReduce<Composed::Plain, kReduceSum>},
      {"ReduceMax", convertReduce<Composed::Plain, kReduceMax>},
      {"ReduceMin", convertReduce<Composed::Plain, kReduceMin>},
      {"ReduceProd", convertReduce<Composed::Plain, kReduceProd>},
      {"ReduceL1", convertReduce<Composed::L1>},
      {"ReduceL2", convertReduce<Composed::L2>},
      {"ReduceSumSquare", convertReduce<Composed::SumSquare>},
      {"ReduceLogSum", convertReduce<Composed::LogSum>},
      {"ReduceLogSumExp", convertReduce<Composed::LogSumExp>},
      {"MeanVarianceNormalization", convertMeanVarianceNormalization},
      {"LpNormalization", convertLpNormalization},
  });
}
