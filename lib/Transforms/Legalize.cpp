//===- Legalize.cpp - Graph ops to kernels --------------------------------===//
//
// Contract: every op binding `%y = OP(...)` of every graph function becomes
// `%y = call_kernel @k(...)` plus a `kernel @k` holding the op's stages in
// index notation (spec §5); call_extern, calls, tuples, constants and
// aliases stay. Functions a library runs (a composite called from a
// `codegen = "cublaslt"` function) keep their ops. Literal operands are
// folded into the kernel; the call passes the remaining operands in order,
// then, for a symbolic dim that the op introduces (`broadcast_to` of an
// `f32[4]` to `[n, 4]`), a tensor parameter that binds it, which the kernel
// takes as an input it never reads.
// Identical kernels are shared.
//
// Algorithm:
//   1. For each op binding, build its kernel with the op's legalization
//      (lib/IR/Ops/, beside the op's type inference).
//   2. Print the kernel under a placeholder name; if an existing kernel
//      prints the same, reuse it. Otherwise name it after the op (`add`,
//      `nn.relu` -> `relu`), adding `_1`, `_2` ... on a clash.
//   3. Rewrite the binding into a call_kernel.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Kernel.h"
#include "fusec/IR/Ops.h"
#include "fusec/IR/Pattern.h"
#include "fusec/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "legalize"

using namespace fusec;

FUSEC_STATISTIC(NumLegalized, "num-legalized", "Number of op bindings legalized");
FUSEC_STATISTIC(NumKernels, "num-kernels", "Number of kernels created");

namespace {
class Legalize final : public Pass {
public:
  Legalize() : Pass("legalize") {}
  bool run(Module &module, PassContext &context) override;

private:
  std::string kernelFor(Module &module, const Binding &binding,
                        llvm::ArrayRef<const Value *> dimCarriers);
  llvm::StringMap<std::string> kernelByText; // placeholder text -> name
  llvm::StringSet<> usedNames;
};
} // namespace

static std::string baseName(llvm::StringRef op) {
  std::string name = op.startswith("nn.") ? op.drop_front(3).str() : op.str();
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

std::string Legalize::kernelFor(Module &module, const Binding &binding,
                                llvm::ArrayRef<const Value *> dimCarriers) {
  std::unique_ptr<Kernel> kernel = legalizeOp(binding, "_", dimCarriers);
  std::string text = printKernel(*kernel);
  auto existing = kernelByText.find(text);
  if (existing != kernelByText.end())
    return existing->second;
  std::string name = baseName(binding.callee);
  for (int suffix = 1; usedNames.count(name); ++suffix)
    name = baseName(binding.callee) + "_" + std::to_string(suffix);
  usedNames.insert(name);
  kernel->name = name;
  kernelByText[text] = name;
  module.kernels.push_back(std::move(kernel));
  ++NumKernels;
  FUSEC_DEBUG("new kernel @" + name + " for %" + binding.getResult()->name);
  return name;
}

bool Legalize::run(Module &module, PassContext &context) {
  kernelByText.clear();
  usedNames.clear();
  for (const auto &function : module.functions)
    usedNames.insert(function->name);
  for (const auto &kernel : module.kernels) {
    usedNames.insert(kernel->name);
    // Existing kernels are shared too, under their own names.
    std::unique_ptr<Kernel> copy = std::make_unique<Kernel>(*kernel);
    copy->name = "_";
    kernelByText.try_emplace(printKernel(*copy), kernel->name);
  }
  llvm::StringSet<> libraryBound = libraryBoundFunctions(module);
  for (auto &function : module.functions) {
    if (libraryBound.count(function->name))
      continue; // a library runs its body
    function->forEachBinding([&](Binding &binding) {
      if (binding.kind != ExprKind::Op)
        return;
      std::vector<Value *> carriers = dimCarriers(*function, binding);
      std::string name = kernelFor(module, binding, carriers);
      std::vector<Operand> operands;
      for (const Operand &operand : binding.operands)
        if (!operand.isLiteral())
          operands.push_back(operand);
      for (Value *carrier : carriers)
        operands.push_back(Operand::of(carrier));
      binding.kind = ExprKind::CallKernel;
      binding.callee = name;
      binding.operands = std::move(operands);
      binding.attrs = Attrs();
      ++NumLegalized;
    });
  }
  return true;
}

std::unique_ptr<Pass> fusec::createLegalizePass() {
  return std::make_unique<Legalize>();
}

#undef DEBUG_TYPE
