//===- Elementwise.cpp - Unary, binary and ternary elementwise ops --------===//
//
// Spec §4 rows "unary elementwise", "binary (broadcast)" and "ternary".
// dtype rules, as in TVM Relax:
//   - transcendental unary ops (exp, tanh, nn.gelu, ...) need a float;
//   - negative, abs, sign, nn.relu, clip and arithmetic need a number (not
//     bool); logical_not / logical_and / logical_or need bool;
//   - binary operands must have the same dtype (no silent promotion);
//     comparisons return bool.
// Shapes broadcast the NumPy way (`broadcastShapes`).
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Ops.h"

using namespace fusec;

static std::optional<Type> requireDType(InferContext &ctx, size_t i,
                                        bool (*predicate)(DType),
                                        const char *what) {
  const Type &type = ctx.operand(i);
  if (predicate(type.getDType()))
    return type;
  return ctx.errorAtOperand(i, "'" + ctx.binding.callee + "' requires " + what +
                                   " operand, got " + type.str());
}

static bool isFloat(DType dtype) { return isFloatDType(dtype); }
static bool isNumber(DType dtype) { return dtype != DType::boolean; }
static bool isBool(DType dtype) { return dtype == DType::boolean; }

static std::optional<Type> inferFloatUnary(InferContext &ctx) {
  return requireDType(ctx, 0, isFloat, "a floating-point");
}
static std::optional<Type> inferNumericUnary(InferContext &ctx) {
  return requireDType(ctx, 0, isNumber, "a numeric");
}
static std::optional<Type> inferLogicalUnary(InferContext &ctx) {
  return requireDType(ctx, 0, isBool, "a bool");
}

static std::optional<Type> inferClip(InferContext &ctx) {
  auto type = requireDType(ctx, 0, isNumber, "a numeric");
  if (!type)
    return std::nullopt;
  for (const char *bound : {"min", "max"}) {
    std::string problem =
        checkLiteralForDType(*ctx.attr(bound), type->getDType());
    if (!problem.empty())
      return ctx.errorAtAttr(bound, "clip bound: " + problem);
  }
  if (ctx.attr("min")->asDouble() > ctx.attr("max")->asDouble())
    return ctx.errorAtAttr("min", "clip requires min <= max");
  return type;
}

static std::optional<Type> inferAstype(InferContext &ctx) {
  DType dtype = *parseDType(ctx.attr("dtype")->text);
  return Type::tensor(dtype, ctx.operand(0).getShape());
}

/// Broadcasts every operand from `first` on, requiring one common dtype.
static std::optional<Type> broadcastOperands(InferContext &ctx, size_t first) {
  DType dtype = ctx.operand(first).getDType();
  Shape shape = ctx.operand(first).getShape();
  for (size_t i = first + 1; i < ctx.numOperands(); ++i) {
    if (ctx.operand(i).getDType() != dtype)
      return ctx.errorAtOperand(
          i, "'" + ctx.binding.callee + "' operands have different dtypes " +
                 dtypeName(dtype) + " and " +
                 dtypeName(ctx.operand(i).getDType()) +
                 "; convert one with 'astype'");
  }
  for (size_t i = 0; i < ctx.numOperands(); ++i) {
    if (i < first)
      continue;
    std::string problem;
    auto merged = broadcastShapes(shape, ctx.operand(i).getShape(), problem);
    if (!merged) {
      std::string shapes;
      for (size_t j = first; j < ctx.numOperands(); ++j)
        shapes += (j > first ? " and " : "") + ctx.operand(j).str();
      return ctx.error("'" + ctx.binding.callee + "' cannot broadcast " +
                       shapes + ": " + problem);
    }
    shape = *merged;
  }
  return Type::tensor(dtype, shape);
}

static std::optional<Type> inferArithmetic(InferContext &ctx) {
  if (!requireDType(ctx, 0, isNumber, "numeric"))
    return std::nullopt;
  return broadcastOperands(ctx, 0);
}

static std::optional<Type> inferComparison(InferContext &ctx) {
  auto type = broadcastOperands(ctx, 0);
  if (!type)
    return std::nullopt;
  return Type::tensor(DType::boolean, type->getShape());
}

static std::optional<Type> inferLogicalBinary(InferContext &ctx) {
  if (!requireDType(ctx, 0, isBool, "bool"))
    return std::nullopt;
  return broadcastOperands(ctx, 0);
}

static std::optional<Type> inferWhere(InferContext &ctx) {
  if (!requireDType(ctx, 0, isBool, "a bool condition as its first"))
    return std::nullopt;
  auto branches = broadcastOperands(ctx, 1);
  if (!branches)
    return std::nullopt;
  std::string problem;
  auto shape = broadcastShapes(ctx.operand(0).getShape(),
                               branches->getShape(), problem);
  if (!shape)
    return ctx.error("'where' cannot broadcast the condition " +
                     ctx.operand(0).str() + " with " + branches->str() + ": " +
                     problem);
  return Type::tensor(branches->getDType(), *shape);
}

//===----------------------------------------------------------------------===//
// Legalization: one spatial stage reading every operand at the output's
// iteration variables (broadcast operands at index 0 on unit dims), so the
// analysis finds `elemwise` when an operand has the full shape and
// `broadcast` when none has.
//===----------------------------------------------------------------------===//

/// The kernel-level operation of a graph op (`nn.relu` -> `relu`).
static std::string kernelOpName(llvm::StringRef op) {
  return op.startswith("nn.") ? op.drop_front(3).str() : op.str();
}

static std::vector<KExprPtr> operandsAtOutput(KernelBuilder &b,
                                             std::vector<std::string> &vars) {
  const Shape &shape = b.resultType.getShape();
  vars = KernelBuilder::varNames("i", shape.size());
  std::vector<KExprPtr> indices = KernelBuilder::vars(vars), operands;
  for (size_t i = 0; i < b.numOperands(); ++i)
    operands.push_back(b.broadcastOperand(i, indices, shape));
  return operands;
}

static void legalizeCall(KernelBuilder &b) {
  std::vector<std::string> vars;
  std::vector<KExprPtr> operands = operandsAtOutput(b, vars);
  std::string op = kernelOpName(b.binding.callee);
  const KernelOpInfo *info = lookupKernelOp(op);
  DType dtype = info->returnsBool ? DType::boolean : operands[0]->dtype;
  b.addStage(b.outputName(0), vars, KExpr::call(op, operands, dtype));
}

static void legalizeClip(KernelBuilder &b) {
  std::vector<std::string> vars;
  KExprPtr x = operandsAtOutput(b, vars)[0];
  DType dtype = x->dtype;
  KExprPtr low = literalFrom(*b.attr("min"), dtype);
  KExprPtr high = literalFrom(*b.attr("max"), dtype);
  KExprPtr clipped = KExpr::call(
      "minimum", {KExpr::call("maximum", {x, low}, dtype), high}, dtype);
  b.addStage(b.outputName(0), vars, clipped);
}

static void legalizeAstype(KernelBuilder &b) {
  std::vector<std::string> vars;
  KExprPtr x = operandsAtOutput(b, vars)[0];
  b.addStage(b.outputName(0), vars, castTo(x, b.resultType.getDType()));
}

static void legalizeWhere(KernelBuilder &b) {
  std::vector<std::string> vars;
  std::vector<KExprPtr> operands = operandsAtOutput(b, vars);
  b.addStage(b.outputName(0), vars,
             KExpr::select(operands[0], operands[1], operands[2]));
}

void fusec::registerElementwiseOps(std::vector<const OpInfo *> &registry) {
  static const char *floatUnary[] = {
      "exp",   "log",  "sqrt",  "rsqrt", "sin",     "cos",
      "tanh",  "sigmoid", "erf",
      "nn.gelu", "nn.gelu_tanh", "nn.silu"};
  // floor, ceil and round accept integers, as in TVM Relax and NumPy.
  static const char *numericUnary[] = {"negative", "abs", "sign", "nn.relu",
                                       "floor", "ceil", "round"};
  static const char *arithmetic[] = {"add",     "subtract", "multiply",
                                     "divide",  "power",    "maximum",
                                     "minimum"};
  static const char *comparisons[] = {"equal", "not_equal",  "less",
                                      "less_equal", "greater",
                                      "greater_equal"};
  static std::vector<OpInfo> ops;
  for (const char *name : floatUnary)
    ops.push_back({name, OpClass::Unary, 1, 1, {}, inferFloatUnary, false, legalizeCall});
  for (const char *name : numericUnary)
    ops.push_back({name, OpClass::Unary, 1, 1, {}, inferNumericUnary, false, legalizeCall});
  ops.push_back({"logical_not", OpClass::Unary, 1, 1, {}, inferLogicalUnary, false,
                 legalizeCall});
  ops.push_back({"clip", OpClass::Unary, 1, 1,
                 {{"min", AttrSchema::Float, true},
                  {"max", AttrSchema::Float, true}},
                 inferClip, false, legalizeClip});
  ops.push_back({"astype", OpClass::Unary, 1, 1,
                 {{"dtype", AttrSchema::DTypeName, true}}, inferAstype, false,
                 legalizeAstype});
  for (const char *name : arithmetic)
    ops.push_back({name, OpClass::Binary, 2, 2, {}, inferArithmetic, true, legalizeCall});
  for (const char *name : comparisons)
    ops.push_back({name, OpClass::Binary, 2, 2, {}, inferComparison, true, legalizeCall});
  for (const char *name : {"logical_and", "logical_or"})
    ops.push_back({name, OpClass::Binary, 2, 2, {}, inferLogicalBinary, true,
                   legalizeCall});
  ops.push_back({"where", OpClass::Ternary, 3, 3, {}, inferWhere, true, legalizeWhere});
  for (const OpInfo &op : ops)
    registry.push_back(&op);
}
