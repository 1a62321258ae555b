//===- ONNXOpsControl.cpp - If on a condition known at import ------------===//
//
// If whose condition folds to a constant: the branch it takes is imported
// in place, and the If's outputs are that branch's outputs. PyTorch writes
// such Ifs for shape checks, e.g. `x.squeeze(1)` from opset 11 becomes
// `If(Equal(Gather(Shape(x), 1), 1))` with a Squeeze in one branch and an
// Identity in the other; with static shapes the condition folds.
//   1. The condition (input 0) must be a one-element constant (or a folded
//      shape computation); a condition computed at run time is rejected:
//      FIR has no control flow in a dataflow block.
//   2. Both branches are typed as GRAPH attributes (marked read); the one
//      taken has its initializers added as constants and its nodes imported
//      one by one, as the main graph's (they may read outer values by name,
//      ONNX's lexical scoping; a nested If is handled the same way).
//   3. The branch's outputs, one per If output, are forwarded.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

static bool convertIf(NodeContext &c) {
  const onnx::GraphProto *thenBranch = c.attrGraph("then_branch");
  const onnx::GraphProto *elseBranch = c.attrGraph("else_branch");
  if (!thenBranch || !elseBranch)
    return c.fail("then_branch and else_branch must be graphs");
  std::optional<bool> condition;
  if (const TensorData *data = c.constant(0)) {
    if (data->getNumElements() == 1)
      condition = data->get(0) != 0;
  } else if (std::optional<ShapeValue> shape = c.shapeValue(0)) {
    if (shape->elements.size() == 1 && shape->elements[0].isStatic())
      condition = shape->elements[0].size != 0;
  }
  if (!condition)
    return c.fail("the condition must fold to one constant at import (fusec has no control "
                  "flow: a condition computed at run time is not supported)");
  const onnx::GraphProto &branch = *condition ? *thenBranch : *elseBranch;
  if (branch.output_size() != int(c.numOutputs()))
    return c.fail(std::string(*condition ? "then_branch" : "else_branch") + " has " +
                  std::to_string(branch.output_size()) + " outputs; the If has " +
                  std::to_string(c.numOutputs()));
  for (const onnx::TensorProto &tensor : branch.initializer()) {
    std::string error;
    std::shared_ptr<TensorData> data = readTensor(tensor, c.importer.modelDirectory, error);
    if (!data)
      return c.fail("initializer '" + tensor.name() + "' of the branch: " + error);
    c.importer.constants[tensor.name()] = data;
  }
  for (const onnx::NodeProto &node : branch.node())
    if (!c.importer.importNode(node))
      return false;
  for (size_t i = 0; i < c.numOutputs(); ++i)
    if (c.hasOutput(i) && !c.forward(i, branch.output(int(i)).name()))
      return false;
  return true;
}

void onnximport::registerControlOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {{"If", convertIf}});
}
