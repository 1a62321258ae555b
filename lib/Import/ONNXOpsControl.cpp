//===- ONNXOpsControl.cpp - If on a condition known at import ------------===//
//
// If whose condition folds to a constant: the branch it takes is imported
// in place, and the If's outputs are that branch's outputs. PyTorch writes
// such Ifs for shape checks it cannot settle at export: `x.squeeze(1)` on a
// dim of unknown size (inside LocalResponseNorm's decomposition, or on a
// dynamic axis) becomes `If(Equal(Gather(Shape(x), 1), 1))` with a Squeeze
// in one branch and an Identity in the other; with static shapes (or the
// dim fixed by --dim) the condition folds.
//   1. The condition (input 0) must be one bool that is a constant after
//      folding; a condition computed at run time is rejected: FIR has no
//      control flow in a dataflow block.
//   2. Both branches are GRAPH attributes without inputs and with one
//      output per If output; the one taken has its initializers added as
//      constants and its nodes imported one by one, as the main graph's
//      (they may read outer values by name, ONNX's lexical scoping; a
//      nested If is handled the same way).
//   3. The branch's outputs are forwarded to the If's. The names the branch
//      defined are its own: dropped after the If, and an outer name a
//      branch initializer shadowed is put back (BranchScope).
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

namespace {
/// The names a branch defines (its initializers and its nodes' outputs) are
/// its own, as ONNX scopes them: after the If they are dropped, and an
/// outer entry a branch initializer shadowed is put back.
class BranchScope {
public:
  BranchScope(Importer &importer, const onnx::GraphProto &branch) : importer(importer) {
    for (const onnx::TensorProto &tensor : branch.initializer())
      save(tensor.name());
    for (const onnx::NodeProto &node : branch.node())
      for (const std::string &output : node.output())
        if (!output.empty())
          save(output);
  }
  ~BranchScope() {
    for (const Saved &entry : saved) {
      forget(importer, entry.name);
      if (entry.value)
        importer.values[entry.name] = entry.value;
      if (entry.constant)
        importer.constants[entry.name] = entry.constant;
      if (entry.shape)
        importer.shapes[entry.name] = *entry.shape;
      if (entry.unsignedBytes)
        importer.unsignedBytes.insert(entry.name);
      if (entry.quantized)
        importer.quantized.insert(entry.name);
    }
  }
  /// Drops everything `name` holds in the importer.
  static void forget(Importer &importer, const std::string &name) {
    importer.values.erase(name);
    importer.constants.erase(name);
    importer.shapes.erase(name);
    importer.unsignedBytes.erase(name);
    importer.quantized.erase(name);
  }
  bool defines(const std::string &name) const {
    return llvm::any_of(saved, [&](const Saved &entry) { return entry.name == name; });
  }

private:
  struct Saved {
    std::string name;
    Value *value = nullptr;
    std::shared_ptr<TensorData> constant;
    std::optional<ShapeValue> shape;
    bool unsignedBytes = false, quantized = false;
  };
  void save(const std::string &name) {
    if (defines(name))
      return;
    Saved entry;
    entry.name = name;
    if (auto value = importer.values.find(name); value != importer.values.end())
      entry.value = value->second;
    if (auto constant = importer.constants.find(name); constant != importer.constants.end())
      entry.constant = constant->second;
    if (auto shape = importer.shapes.find(name); shape != importer.shapes.end())
      entry.shape = shape->second;
    entry.unsignedBytes = importer.unsignedBytes.count(name) != 0;
    entry.quantized = importer.quantized.count(name) != 0;
    saved.push_back(std::move(entry));
  }
  Importer &importer;
  std::vector<Saved> saved;
};
} // namespace

static bool convertIf(NodeContext &c) {
  const onnx::GraphProto *thenBranch = c.attrGraph("then_branch");
  const onnx::GraphProto *elseBranch = c.attrGraph("else_branch");
  if (!thenBranch || !elseBranch)
    return c.fail("then_branch and else_branch must be graphs");
  for (const onnx::GraphProto *branch : {thenBranch, elseBranch}) {
    const char *which = branch == thenBranch ? "then_branch" : "else_branch";
    if (branch->input_size())
      return c.fail(std::string(which) + " declares inputs; a branch takes none");
    if (branch->output_size() != int(c.numOutputs()))
      return c.fail(std::string(which) + " has " + std::to_string(branch->output_size()) +
                    " outputs; the If has " + std::to_string(c.numOutputs()));
  }
  const TensorData *data = c.constant(0);
  if (!data && c.typeOf(0) && c.typeOf(0)->isTensor() &&
      c.typeOf(0)->getDType() == DType::boolean)
    return c.fail("the condition must fold to one constant at import (fusec has no control "
                  "flow: a condition computed at run time is not supported)");
  if (!data || data->getDType() != DType::boolean || data->getNumElements() != 1)
    return c.fail("the condition must be one bool");
  bool condition = data->get(0) != 0;
  const onnx::GraphProto &branch = condition ? *thenBranch : *elseBranch;
  BranchScope scope(c.importer, branch);
  for (size_t i = 0; i < c.numOutputs(); ++i)
    if (c.hasOutput(i) && scope.defines(c.node.output(int(i))))
      return c.fail("'" + c.node.output(int(i)) + "' is defined by the If and inside its branch");
  for (const onnx::TensorProto &tensor : branch.initializer()) {
    std::string error;
    std::shared_ptr<TensorData> tensorData =
        readTensor(tensor, c.importer.modelDirectory, error);
    if (!tensorData)
      return c.fail("initializer '" + tensor.name() + "' of the branch: " + error);
    // A branch initializer shadows an outer name of its own (the scope puts
    // the outer one back).
    BranchScope::forget(c.importer, tensor.name());
    c.importer.constants[tensor.name()] = tensorData;
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
