//===- Reduction.cpp - Reductions, softmax and normalizations -------------===//
//
// Spec §4 row "reduction". `sum/mean/max/min/prod {axis, keepdims}` reduce
// the listed axes (all when absent); softmax and log_softmax keep the shape
// and take one axis (default -1); layer_norm and rms_norm normalize over
// `axes` with per-element scale (and shift) tensors whose shape is the input
// shape at those axes. Attribute defaults follow TVM Relax.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Ops.h"

#include <cmath>

using namespace fusec;

static std::optional<Type> inferReduce(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  if (input.getDType() == DType::boolean)
    return ctx.errorAtOperand(0, "'" + ctx.binding.callee +
                                     "' requires a numeric operand, got " +
                                     input.str());
  std::vector<int64_t> all;
  for (int64_t i = 0; i < input.getRank(); ++i)
    all.push_back(i);
  auto axes = ctx.axes("axis", input.getRank(), all);
  if (!axes)
    return std::nullopt;
  const Attr *keepdims = ctx.attr("keepdims");
  bool keep = keepdims && keepdims->boolValue;
  Shape shape;
  for (int64_t i = 0; i < input.getRank(); ++i) {
    bool reduced = std::find(axes->begin(), axes->end(), i) != axes->end();
    if (!reduced)
      shape.push_back(input.getShape()[i]);
    else if (keep)
      shape.push_back(Dim::of(1));
  }
  return Type::tensor(input.getDType(), shape);
}

static std::optional<Type> inferSoftmax(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  if (!isFloatDType(input.getDType()))
    return ctx.errorAtOperand(0, "'" + ctx.binding.callee +
                                     "' requires a floating-point operand, got " +
                                     input.str());
  if (input.getRank() == 0)
    return ctx.errorAtOperand(0, "'" + ctx.binding.callee +
                                     "' needs an operand of rank >= 1");
  const Attr *axis = ctx.attr("axis");
  if (axis && axis->kind == Attr::List && axis->list.size() != 1)
    return ctx.errorAtAttr("axis", "'" + ctx.binding.callee +
                                       "' takes a single axis");
  if (!ctx.axes("axis", input.getRank(), {-1}))
    return std::nullopt;
  return input;
}

/// layer_norm(x, gamma, beta) and rms_norm(x, weight): every operand after
/// the first has shape x.shape[axes] and x's dtype.
static std::optional<Type> inferNorm(InferContext &ctx) {
  const Type &input = ctx.operand(0);
  if (!isFloatDType(input.getDType()))
    return ctx.errorAtOperand(0, "'" + ctx.binding.callee +
                                     "' requires a floating-point operand, got " +
                                     input.str());
  auto axes = ctx.axes("axes", input.getRank(), {-1});
  if (!axes)
    return std::nullopt;
  if (axes->empty())
    return ctx.errorAtAttr("axes", "'" + ctx.binding.callee +
                                       "' needs at least one axis");
  Shape expected;
  for (int64_t axis : *axes)
    expected.push_back(input.getShape()[axis]);
  Type parameterType = Type::tensor(input.getDType(), expected);
  for (size_t i = 1; i < ctx.numOperands(); ++i)
    if (ctx.operand(i) != parameterType)
      return ctx.errorAtOperand(i, "operand " + std::to_string(i) + " of '" +
                                       ctx.binding.callee + "' must be " +
                                       parameterType.str() + ", got " +
                                       ctx.operand(i).str());
  if (const Attr *epsilon = ctx.attr("epsilon"))
    if (epsilon->asDouble() < 0)
      return ctx.errorAtAttr("epsilon", "epsilon must be non-negative");
  return input;
}

//===----------------------------------------------------------------------===//
// Legalization. A plain reduction is one reduce stage (comm_reduce);
// mean, softmax and the norms reduce into internal buffers and finish with
// an output stage, the reduce-then-elementwise shape the analysis calls
// out_ewise_fusable. f16/bf16 compute in f32 and round once at the end.
//===----------------------------------------------------------------------===//

namespace {
/// How an input is read by a reduction over `axes`: the output's spatial
/// variables, the reduction variables and the input indices they give.
struct ReduceIndexing {
  std::vector<std::string> outVars, reduceNames;
  std::vector<std::pair<std::string, Dim>> reduceVars;
  std::vector<KExprPtr> inputIndices; // input rank, r's on reduced axes
  std::vector<KExprPtr> keptIndices;  // the output vars of kept axes
  Shape keptShape;
  KExprPtr count = KExpr::intConst(1); // reduced element count

  ReduceIndexing(const Shape &in, const std::vector<int64_t> &axes, bool keepdims) {
    size_t outRank = keepdims ? in.size() : in.size() - axes.size();
    outVars = KernelBuilder::varNames("i", outRank);
    size_t nextOut = 0, nextReduce = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      bool reduced = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
      if (reduced) {
        std::string r = KernelBuilder::freshName("r" + std::to_string(nextReduce++));
        reduceVars.push_back({r, in[d]});
        inputIndices.push_back(KExpr::var(r));
        KExprPtr extent = in[d].isSymbolic() ? KExpr::var(in[d].symbol)
                                             : KExpr::intConst(in[d].size);
        count = count->kind == KExpr::IntConst && count->intValue == 1
                    ? extent
                    : KExpr::binary(KExpr::Mul, count, extent);
        if (keepdims)
          ++nextOut;
        continue;
      }
      KExprPtr var = KExpr::var(outVars[nextOut++]);
      inputIndices.push_back(var);
      keptIndices.push_back(var);
      keptShape.push_back(in[d]);
    }
  }
};
} // namespace

static void legalizeReduce(KernelBuilder &b) {
  const Type &input = b.operandType(0);
  std::vector<int64_t> all;
  for (int64_t i = 0; i < input.getRank(); ++i)
    all.push_back(i);
  std::vector<int64_t> axes = b.axes("axis", input.getRank(), all);
  bool keepdims = b.attr("keepdims") && b.attr("keepdims")->boolValue;
  ReduceIndexing ix(input.getShape(), axes, keepdims);
  DType dtype = input.getDType(), acc = computeDType(dtype);
  llvm::StringRef op = b.binding.callee;
  KExprPtr value = b.load(0, ix.inputIndices);
  std::string combiner = op == "prod" ? "multiply" : op == "max" ? "max"
                         : op == "min" ? "min" : "add";
  double init = combinerIdentity(combiner, dtype);
  if (op != "mean") {
    b.addReduction(b.outputName(0), ix.outVars, combiner, ix.reduceVars, init, acc, value);
    return;
  }
  b.addInternal("sum", Type::tensor(acc, b.resultType.getShape()));
  b.addReduction("sum", ix.outVars, "add", ix.reduceVars, 0.0, acc, value);
  KExprPtr sum = b.loadBuffer("sum", KernelBuilder::vars(ix.outVars));
  b.addStage(b.outputName(0), ix.outVars,
             castTo(KExpr::call("divide", {sum, KExpr::cast(ix.count, acc)}, acc), dtype));
}

static void legalizeSoftmax(KernelBuilder &b) {
  const Type &input = b.operandType(0);
  int64_t axis = b.axes("axis", input.getRank(), {-1}).front();
  ReduceIndexing ix(input.getShape(), {axis}, false);
  DType dtype = input.getDType(), acc = computeDType(dtype);
  auto full = KernelBuilder::varNames("i", input.getRank());
  std::vector<KExprPtr> kept; // the full vars minus the axis
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (d != axis)
      kept.push_back(KExpr::var(full[d]));
  Type reducedType = Type::tensor(acc, ix.keptShape);
  b.addInternal("max", reducedType);
  b.addReduction("max", ix.outVars, "max", ix.reduceVars, -INFINITY, acc,
                 castTo(b.load(0, ix.inputIndices), acc));
  KExprPtr shifted = KExpr::call(
      "subtract", {castTo(b.load(0, KernelBuilder::vars(full)), acc),
                   b.loadBuffer("max", kept)}, acc);
  bool isLog = b.binding.callee == "nn.log_softmax";
  if (isLog) {
    KExprPtr shiftedAtR = KExpr::call(
        "subtract", {castTo(b.load(0, ix.inputIndices), acc),
                     b.loadBuffer("max", KernelBuilder::vars(ix.outVars))}, acc);
    b.addInternal("sum", reducedType);
    b.addReduction("sum", ix.outVars, "add", ix.reduceVars, 0.0, acc,
                   KExpr::call("exp", {shiftedAtR}, acc));
    KExprPtr logSum = KExpr::call("log", {b.loadBuffer("sum", kept)}, acc);
    b.addStage(b.outputName(0), full,
               castTo(KExpr::call("subtract", {shifted, logSum}, acc), dtype));
    return;
  }
  b.addInternal("exp", Type::tensor(acc, input.getShape()));
  b.addStage("exp", full, KExpr::call("exp", {shifted}, acc));
  std::vector<KExprPtr> expAtR;
  for (int64_t d = 0, next = 0; d < input.getRank(); ++d)
    expAtR.push_back(d == axis ? KExpr::var(ix.reduceVars[0].first)
                               : KExpr::var(ix.outVars[next++]));
  b.addInternal("sum", reducedType);
  b.addReduction("sum", ix.outVars, "add", ix.reduceVars, 0.0, acc,
                 b.loadBuffer("exp", expAtR));
  KExprPtr normalized = KExpr::call(
      "divide", {b.loadBuffer("exp", KernelBuilder::vars(full)),
                 b.loadBuffer("sum", kept)}, acc);
  b.addStage(b.outputName(0), full, castTo(normalized, dtype));
}

/// layer_norm(x, gamma, beta) and rms_norm(x, weight).
static void legalizeNorm(KernelBuilder &b) {
  const Type &input = b.operandType(0);
  std::vector<int64_t> axes = b.axes("axes", input.getRank(), {-1});
  ReduceIndexing ix(input.getShape(), axes, false);
  DType dtype = input.getDType(), acc = computeDType(dtype);
  double epsilon = b.attr("epsilon") ? b.attr("epsilon")->asDouble() : 1e-5;
  auto full = KernelBuilder::varNames("i", input.getRank());
  std::vector<KExprPtr> kept, normalized;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    bool isAxis = std::find(axes.begin(), axes.end(), d) != axes.end();
    (isAxis ? normalized : kept).push_back(KExpr::var(full[d]));
  }
  // gamma/beta/weight are indexed in the order the axes were listed.
  std::vector<KExprPtr> parameterIndices;
  for (int64_t axis : axes)
    parameterIndices.push_back(KExpr::var(full[axis]));
  Type reducedType = Type::tensor(acc, ix.keptShape);
  KExprPtr count = KExpr::cast(ix.count, acc);
  KExprPtr xAtR = castTo(b.load(0, ix.inputIndices), acc);
  KExprPtr x = castTo(b.load(0, KernelBuilder::vars(full)), acc);
  auto literal = [&](double v) { return KExpr::literal(roundToDType(v, acc), acc); };
  auto call = [&](const char *op, std::vector<KExprPtr> args) {
    return KExpr::call(op, std::move(args), acc);
  };
  KExprPtr scaled;
  if (b.binding.callee == "nn.rms_norm") {
    b.addInternal("sumsq", reducedType);
    b.addReduction("sumsq", ix.outVars, "add", ix.reduceVars, 0.0, acc,
                   call("multiply", {xAtR, xAtR}));
    KExprPtr meanSquare = call("divide", {b.loadBuffer("sumsq", kept), count});
    scaled = call("multiply", {call("multiply", {x, call("rsqrt", {call("add", {meanSquare, literal(epsilon)})})}),
                               castTo(b.load(1, parameterIndices), acc)});
  } else {
    b.addInternal("sum", reducedType);
    b.addReduction("sum", ix.outVars, "add", ix.reduceVars, 0.0, acc, xAtR);
    b.addInternal("mean", reducedType);
    b.addStage("mean", ix.outVars,
               call("divide", {b.loadBuffer("sum", KernelBuilder::vars(ix.outVars)), count}));
    KExprPtr centeredAtR =
        call("subtract", {xAtR, b.loadBuffer("mean", KernelBuilder::vars(ix.outVars))});
    b.addInternal("sumsq", reducedType);
    b.addReduction("sumsq", ix.outVars, "add", ix.reduceVars, 0.0, acc,
                   call("multiply", {centeredAtR, centeredAtR}));
    KExprPtr variance = call("divide", {b.loadBuffer("sumsq", kept), count});
    KExprPtr centered = call("subtract", {x, b.loadBuffer("mean", kept)});
    KExprPtr normal = call("multiply", {centered, call("rsqrt", {call("add", {variance, literal(epsilon)})})});
    scaled = call("add", {call("multiply", {normal, castTo(b.load(1, parameterIndices), acc)}),
                          castTo(b.load(2, parameterIndices), acc)});
  }
  b.addStage(b.outputName(0), full, castTo(scaled, dtype));
}

void fusec::registerReductionOps(std::vector<const OpInfo *> &registry) {
  static std::vector<OpInfo> ops;
  for (const char *name : {"sum", "mean", "max", "min", "prod"})
    ops.push_back({name, OpClass::Reduction, 1, 1,
                   {{"axis", AttrSchema::Axes}, {"keepdims", AttrSchema::Bool}},
                   inferReduce, false, legalizeReduce});
  for (const char *name : {"nn.softmax", "nn.log_softmax"})
    ops.push_back({name, OpClass::Reduction, 1, 1, {{"axis", AttrSchema::Axes}},
                   inferSoftmax, false, legalizeSoftmax});
  ops.push_back({"nn.layer_norm", OpClass::Reduction, 3, 3,
                 {{"axes", AttrSchema::Axes, true},
                  {"epsilon", AttrSchema::Float}},
                 inferNorm, false, legalizeNorm});
  ops.push_back({"nn.rms_norm", OpClass::Reduction, 2, 2,
                 {{"axes", AttrSchema::Axes}, {"epsilon", AttrSchema::Float}},
                 inferNorm, false, legalizeNorm});
  for (const OpInfo &op : ops)
    registry.push_back(&op);
}
