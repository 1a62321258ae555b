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

void fusec::registerReductionOps(std::vector<const OpInfo *> &registry) {
  static std::vector<OpInfo> ops;
  for (const char *name : {"sum", "mean", "max", "min", "prod"})
    ops.push_back({name, OpClass::Reduction, 1, 1,
                   {{"axis", AttrSchema::Axes}, {"keepdims", AttrSchema::Bool}},
                   inferReduce});
  for (const char *name : {"nn.softmax", "nn.log_softmax"})
    ops.push_back({name, OpClass::Reduction, 1, 1, {{"axis", AttrSchema::Axes}},
                   inferSoftmax});
  ops.push_back({"nn.layer_norm", OpClass::Reduction, 3, 3,
                 {{"axes", AttrSchema::Axes, true},
                  {"epsilon", AttrSchema::Float}},
                 inferNorm});
  ops.push_back({"nn.rms_norm", OpClass::Reduction, 2, 2,
                 {{"axes", AttrSchema::Axes}, {"epsilon", AttrSchema::Float}},
                 inferNorm});
  for (const OpInfo &op : ops)
    registry.push_back(&op);
}
