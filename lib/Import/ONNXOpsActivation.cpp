//===- ONNXOpsActivation.cpp - Composite activation functions -------------===//
//
// ONNX activations with no FIR op of their own, composed from spec §4 ops
// exactly as ONNX defines them (float inputs only):
//   LeakyRelu(x)   = maximum(x, alpha x)              (0 <= alpha <= 1)
//                  = where(x < 0, alpha x, x)          (otherwise)
//   PRelu(x, s)    = where(x < 0, x * s, x)           (s broadcasts)
//   Elu(x)         = where(x < 0, alpha (exp(x) - 1), x)
//   Selu(x)        = gamma where(x <= 0, alpha exp(x) - alpha, x)
//   HardSigmoid(x) = clip(alpha x + beta, 0, 1)
//   HardSwish(x)   = x * clip(x / 6 + 1/2, 0, 1)
//   Softplus(x)    = log(exp(x) + 1)
//   Reciprocal(x)  = 1 / x
//   Softsign(x)    = x / (1 + |x|)
//   Celu(x)        = max(0, x) + min(0, alpha (exp(x / alpha) - 1))
//   ThresholdedRelu(x) = where(x > alpha, x, 0)
//   Shrink(x)      = where(x < -lambd, x + bias, where(x > lambd, x - bias, 0))
//   Tan(x)         = sin(x) / cos(x)
//   Sinh, Cosh     = exp(x - ln 2) -+ exp(-x - ln 2)
//   IsNaN(x)       = x != x;  IsInf(x) = x == inf or x == -inf (as asked)
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include <cmath>

using namespace fusec;
using namespace fusec::onnximport;

/// Input 0, which must be a float tensor.
static Value *floatInput(NodeContext &c) {
  Value *x = c.input(0);
  if (x && !isFloatDType(x->type.getDType())) {
    c.fail(c.node.op_type() + " needs a float input, not " + x->type.str());
    return nullptr;
  }
  return x;
}

/// `op(a, literal)` named after the node's output with `suffix`.
static Value *withLiteral(NodeContext &c, const char *op, Value *a, double literal,
                          const char *suffix) {
  if (!a)
    return nullptr;
  return c.emit(op, {Operand::of(a), NodeContext::literal(literal, a->type.getDType())}, {},
                c.node.output(0) + suffix);
}

static Value *clipUnit(NodeContext &c, Value *x) {
  Attrs attrs;
  attrs.set("min", Attr::makeFloat(0));
  attrs.set("max", Attr::makeFloat(1));
  return x ? c.emit("clip", {Operand::of(x)}, attrs, c.node.output(0) + "_gate") : nullptr;
}

static bool convertLeakyRelu(NodeContext &c) {
  double alpha = c.attrFloat("alpha", 0.01);
  Value *x = floatInput(c);
  Value *scaled = withLiteral(c, "multiply", x, alpha, "_scaled");
  if (!scaled)
    return false;
  if (alpha >= 0 && alpha <= 1) {
    c.define(0, c.emit("maximum", {Operand::of(x), Operand::of(scaled)}));
    return true;
  }
  // Outside [0, 1] the larger of x and alpha x is not the negative part's.
  Value *negative = withLiteral(c, "less", x, 0, "_negative");
  if (!negative)
    return false;
  c.define(0, c.emit("where", {Operand::of(negative), Operand::of(scaled), Operand::of(x)}));
  return true;
}

static bool convertPRelu(NodeContext &c) {
  Value *x = floatInput(c), *slope = x ? c.input(1) : nullptr;
  if (!slope)
    return false;
  // Before opset 7 a slope of one value per channel applies along dim 1
  // (PyTorch's PReLU(C) exported at opset 6); NumPy's rule from opset 7.
  const Shape &xShape = x->type.getShape(), &slopeShape = slope->type.getShape();
  if (c.opset < 7 && slopeShape.size() == 1 && xShape.size() > 2 && slopeShape[0] != Dim::of(1) &&
      slopeShape[0] == xShape[1]) {
    Shape channels(xShape.size() - 1, Dim::of(1));
    channels[0] = slopeShape[0];
    Attrs attrs;
    attrs.set("shape", makeShapeList(channels));
    slope = c.emit("reshape", {Operand::of(slope)}, attrs, c.node.output(0) + "_slope");
    if (!slope)
      return false;
  }
  Value *negative = withLiteral(c, "less", x, 0, "_negative");
  Value *scaled = c.emit("multiply", {Operand::of(x), Operand::of(slope)}, {},
                         c.node.output(0) + "_scaled");
  if (!negative || !scaled)
    return false;
  c.define(0, c.emit("where", {Operand::of(negative), Operand::of(scaled), Operand::of(x)}));
  return true;
}

static bool convertElu(NodeContext &c) {
  double alpha = c.attrFloat("alpha", 1.0);
  Value *x = floatInput(c);
  Value *negative = withLiteral(c, "less", x, 0, "_negative");
  Value *exp = x ? c.emit("exp", {Operand::of(x)}, {}, c.node.output(0) + "_exp") : nullptr;
  Value *scaled = withLiteral(c, "multiply", withLiteral(c, "subtract", exp, 1, "_expm1"), alpha,
                              "_scaled");
  if (!negative || !scaled)
    return false;
  c.define(0, c.emit("where", {Operand::of(negative), Operand::of(scaled), Operand::of(x)}));
  return true;
}

static bool convertSelu(NodeContext &c) {
  double alpha = c.attrFloat("alpha", 1.67326319217681884765625);
  double gamma = c.attrFloat("gamma", 1.05070102214813232421875);
  Value *x = floatInput(c);
  Value *nonPositive = withLiteral(c, "less_equal", x, 0, "_nonpositive");
  Value *exp = x ? c.emit("exp", {Operand::of(x)}, {}, c.node.output(0) + "_exp") : nullptr;
  Value *scaled = withLiteral(c, "subtract", withLiteral(c, "multiply", exp, alpha, "_aexp"),
                              alpha, "_negative_part");
  if (!nonPositive || !scaled)
    return false;
  Value *chosen = c.emit("where", {Operand::of(nonPositive), Operand::of(scaled), Operand::of(x)},
                         {}, c.node.output(0) + "_selected");
  c.define(0, withLiteral(c, "multiply", chosen, gamma, ""));
  return true;
}

static bool convertHardSigmoid(NodeContext &c) {
  double alpha = c.attrFloat("alpha", 0.2), beta = c.attrFloat("beta", 0.5);
  Value *x = floatInput(c);
  Value *gate = clipUnit(c, withLiteral(c, "add", withLiteral(c, "multiply", x, alpha, "_scaled"),
                                        beta, "_shifted"));
  if (!gate)
    return false;
  c.define(0, gate);
  return true;
}

static bool convertHardSwish(NodeContext &c) {
  Value *x = floatInput(c);
  Value *gate = clipUnit(c, withLiteral(c, "add", withLiteral(c, "divide", x, 6, "_scaled"), 0.5,
                                        "_shifted"));
  if (!gate)
    return false;
  c.define(0, c.emit("multiply", {Operand::of(x), Operand::of(gate)}));
  return true;
}

/// log(1 + exp(x)) as relu(x) + log(1 + exp(-|x|)): the same value, but exp
/// never overflows (x = 100 gave inf; ONNX Runtime and PyTorch give 100).
static bool convertSoftplus(NodeContext &c) {
  Value *x = floatInput(c);
  if (!x)
    return false;
  std::string name = c.node.output(0);
  Value *magnitude = c.emit("abs", {Operand::of(x)}, {}, name + "_abs");
  Value *negated = magnitude ? c.emit("negative", {Operand::of(magnitude)}, {}, name + "_neg")
                             : nullptr;
  Value *exp = negated ? c.emit("exp", {Operand::of(negated)}, {}, name + "_exp") : nullptr;
  Value *shifted = withLiteral(c, "add", exp, 1, "_exp1");
  Value *log = shifted ? c.emit("log", {Operand::of(shifted)}, {}, name + "_log") : nullptr;
  Value *positive = c.emit("nn.relu", {Operand::of(x)}, {}, name + "_relu");
  if (!log || !positive)
    return false;
  c.define(0, c.emit("add", {Operand::of(positive), Operand::of(log)}));
  return true;
}

static bool convertReciprocal(NodeContext &c) {
  Value *x = floatInput(c);
  if (!x)
    return false;
  c.define(0, c.emit("divide", {NodeContext::literal(1.0, x->type.getDType()), Operand::of(x)}));
  return true;
}

/// `op(a, b)` named after the node's output with `suffix`.
static Value *binary(NodeContext &c, const char *op, Value *a, Value *b, const char *suffix) {
  if (!a || !b)
    return nullptr;
  return c.emit(op, {Operand::of(a), Operand::of(b)}, {}, c.node.output(0) + suffix);
}

static Value *unary(NodeContext &c, const char *op, Value *a, const char *suffix) {
  return a ? c.emit(op, {Operand::of(a)}, {}, c.node.output(0) + suffix) : nullptr;
}

/// where(condition, a, literal) named after the node's output.
static Value *whereElse(NodeContext &c, Value *condition, Value *a, double otherwise,
                        const char *suffix) {
  if (!condition || !a)
    return nullptr;
  return c.emit("where", {Operand::of(condition), Operand::of(a),
                          NodeContext::literal(otherwise, a->type.getDType())},
                {}, c.node.output(0) + suffix);
}

static bool defineResult(NodeContext &c, Value *result) {
  if (!result)
    return false;
  c.define(0, result);
  return true;
}

static bool convertSoftsign(NodeContext &c) {
  Value *x = floatInput(c);
  Value *denominator = withLiteral(c, "add", unary(c, "abs", x, "_abs"), 1, "_denominator");
  return defineResult(c, binary(c, "divide", x, denominator, ""));
}

static bool convertCelu(NodeContext &c) {
  double alpha = c.attrFloat("alpha", 1.0);
  if (alpha == 0)
    return c.fail("alpha must not be 0");
  Value *x = floatInput(c);
  Value *exp = unary(c, "exp", withLiteral(c, "divide", x, alpha, "_scaled"), "_exp");
  Value *negative = withLiteral(c, "minimum",
                                withLiteral(c, "multiply", withLiteral(c, "subtract", exp, 1,
                                                                       "_expm1"),
                                            alpha, "_elu"),
                                0, "_negative");
  return defineResult(c, binary(c, "add", withLiteral(c, "maximum", x, 0, "_positive"),
                                negative, ""));
}

static bool convertThresholdedRelu(NodeContext &c) {
  double alpha = c.attrFloat("alpha", 1.0);
  Value *x = floatInput(c);
  return defineResult(c, whereElse(c, withLiteral(c, "greater", x, alpha, "_above"), x, 0, ""));
}

static bool convertShrink(NodeContext &c) {
  double bias = c.attrFloat("bias", 0.0), lambd = c.attrFloat("lambd", 0.5);
  Value *x = c.input(0);
  Value *upper = whereElse(c, withLiteral(c, "greater", x, lambd, "_above"),
                           withLiteral(c, "subtract", x, bias, "_lowered"), 0, "_upper");
  Value *below = withLiteral(c, "less", x, -lambd, "_below");
  Value *raised = withLiteral(c, "add", x, bias, "_raised");
  if (!below || !raised || !upper)
    return false;
  return defineResult(c, c.emit("where", {Operand::of(below), Operand::of(raised),
                                          Operand::of(upper)}));
}

static bool convertTan(NodeContext &c) {
  Value *x = floatInput(c);
  return defineResult(c, binary(c, "divide", unary(c, "sin", x, "_sin"),
                                unary(c, "cos", x, "_cos"), ""));
}

/// Sinh (Sign = -1) and Cosh (+1): exp(x - ln 2) + Sign exp(-x - ln 2), the
/// halving inside the exponent, so that exp does not overflow where the
/// result is still finite (sinh(89) in f32, sinh(11.5) in f16).
template <int Sign>
static bool convertHyperbolic(NodeContext &c) {
  constexpr double kLn2 = 0.69314718055994530942;
  Value *x = floatInput(c);
  Value *up = unary(c, "exp", withLiteral(c, "subtract", x, kLn2, "_half"), "_exp");
  Value *negated = unary(c, "negative", x, "_negated");
  Value *down = unary(c, "exp", withLiteral(c, "subtract", negated, kLn2, "_negated_half"),
                      "_exp_negated");
  return defineResult(c, binary(c, Sign < 0 ? "subtract" : "add", up, down, ""));
}

static bool convertIsNaN(NodeContext &c) {
  Value *x = floatInput(c);
  return defineResult(c, binary(c, "not_equal", x, x, ""));
}

static bool convertIsInf(NodeContext &c) {
  bool negative = c.attrInt("detect_negative", 1) != 0;
  bool positive = c.attrInt("detect_positive", 1) != 0;
  Value *x = floatInput(c);
  if (!x)
    return false;
  if (!negative && !positive) // nothing to detect: x == inf and x == -inf, all false
    return defineResult(c, binary(c, "logical_and",
                                  withLiteral(c, "equal", x, INFINITY, "_plus"),
                                  withLiteral(c, "equal", x, -INFINITY, "_minus"), ""));
  Value *plus = positive ? withLiteral(c, "equal", x, INFINITY, negative ? "_plus" : "") : nullptr;
  Value *minus = negative ? withLiteral(c, "equal", x, -INFINITY, positive ? "_minus" : "")
                          : nullptr;
  return defineResult(c, plus && minus ? binary(c, "logical_or", plus, minus, "")
                                       : plus ? plus : minus);
}

void onnximport::registerActivationOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"LeakyRelu", convertLeakyRelu},
      {"PRelu", convertPRelu},
      {"Elu", convertElu},
      {"Selu", convertSelu},
      {"HardSigmoid", convertHardSigmoid},
      {"HardSwish", convertHardSwish},
      {"Softplus", convertSoftplus},
      {"Reciprocal", convertReciprocal},
      {"Softsign", convertSoftsign},
      {"Celu", convertCelu},
      {"ThresholdedRelu", convertThresholdedRelu},
      {"Shrink", convertShrink},
      {"Tan", convertTan},
      {"Sinh", convertHyperbolic<-1>},
      {"Cosh", convertHyperbolic<1>},
      {"IsNaN", convertIsNaN},
      {"IsInf", convertIsInf},
  });
}
