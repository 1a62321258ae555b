//===- TestPerturbConstants.cpp - A deliberately wrong pass (tests only) --===//
//
// Contract: adds 1 to every scalar literal operand and to the first value of
// every scalar, splat or dense constant. It exists so that tests can prove
// that `--check-each` names the pass that changed a program's results; it
// is registered as a test pass (not listed by --help or docs/passes.md).
//
//===----------------------------------------------------------------------===//
#include "fusec/Transforms/Passes.h"

#define DEBUG_TYPE "test-perturb-constants"

using namespace fusec;

namespace {
class TestPerturbConstants final : public Pass {
public:
  TestPerturbConstants() : Pass("test-perturb-constants") {}
  bool run(Module &module, PassContext &context) override;
};
} // namespace

static void perturb(Attr &value) {
  if (value.kind == Attr::List && !value.list.empty())
    return perturb(value.list.front());
  if (value.kind == Attr::Int)
    value.intValue += 1;
  else if (value.kind == Attr::Float)
    value.floatValue += 1;
}

bool TestPerturbConstants::run(Module &module, PassContext &context) {
  for (auto &function : module.functions)
    function->forEachBinding([](Binding &binding) {
      for (Operand &operand : binding.operands)
        if (operand.isLiteral())
          perturb(operand.literal);
      if (binding.kind == ExprKind::Constant &&
          binding.constant->form <= ConstantData::Splat &&
          binding.getType().getDType() != DType::boolean)
        perturb(binding.constant->values.front());
    });
  return true;
}

std::unique_ptr<Pass> fusec::createTestPerturbConstantsPass() {
  return std::make_unique<TestPerturbConstants>();
}

#undef DEBUG_TYPE
