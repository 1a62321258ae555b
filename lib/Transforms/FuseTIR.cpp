//===- FuseTIR.cpp - Merge each primitive function into one kernel --------===//
//
// Contract: every `primitive` function (without `codegen`, and not run by
// a library: fusec/IR/Pattern.h, libraryBoundFunctions) made of
// call_kernels, `tuple`s, `get`s, aliases and scalar constants becomes one
// kernel of
// the same name holding the stages of all its members; each call site
// becomes `call_kernel`. The function's results are the kernel's outputs
// (several results: a multi-output kernel), every other member result is an
// internal stage, not in device memory unless a schedule decides so.
// A tensor constant inside the function (a composite's bound constant)
// becomes a parameter that each call site defines and passes, and a tuple
// parameter one parameter per field (nested tuples flattened) that each
// call site takes with `get`s (FunctionSignatures.cpp). Parameters
// no stage reads are dropped, here and at the call sites, and
// kernels nothing calls any more are removed (TVM's FuseTIR runs DCE too).
//
// Algorithm, per primitive function:
//   1. Tensor constants become parameters and tuple parameters their
//      fields, at the call sites too (FunctionSignatures.cpp).
//   2. The kernel is built from the members (FusedKernelBuilder.cpp).
//   3. Inputs no stage reads are dropped unless one binds a symbolic dim
//      the kernel uses; the kernel is verified; the function is replaced.
// Then every call becomes `call_kernel` with the kept arguments, call-site
// `get`s of fields nothing reads are removed, and so are the member
// kernels nothing calls any more.
//
//===----------------------------------------------------------------------===//
#include "FunctionSignatures.h"
#include "FusedKernelBuilder.h"
#include "GroupOutliner.h"
#include "fusec/IR/Kernel.h"
#include "fusec/IR/Pattern.h"
#include "fusec/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>

#include <map>
#include <set>

#define DEBUG_TYPE "fuse-tir"

using namespace fusec;

FUSEC_STATISTIC(NumFusedKernels, "num-fused-kernels", "Number of primitive functions merged into kernels");

namespace {
class FuseTIR final : public Pass {
public:
  FuseTIR() : Pass("fuse-tir") {}
  bool run(Module &module, PassContext &context) override;
};

} // namespace

/// Names of the variables `e` mentions (stage variables and symbolic dims;
/// a stage variable never shadows a symbol of the fused kernel, see above).
static void collectSymbols(const KExprPtr &e, llvm::StringSet<> &symbols) {
  if (e->kind == KExpr::Var)
    symbols.insert(e->name);
  for (const KExprPtr &arg : e->args)
    collectSymbols(arg, symbols);
}

/// Names of the buffers some stage reads.
static void collectReads(const KExprPtr &e, llvm::StringSet<> &reads) {
  if (e->kind == KExpr::Load)
    reads.insert(e->name);
  for (const KExprPtr &arg : e->args)
    collectReads(arg, reads);
}

bool FuseTIR::run(Module &module, PassContext &context) {
  std::set<std::string> calledBefore = module.calledKernels();
  std::vector<std::unique_ptr<Kernel>> created;
  llvm::StringMap<std::vector<size_t>> keptParams; // fused name -> params kept
  llvm::StringSet<> fused;
  std::vector<const Value *> fieldGets; // call-site gets of expanded tuples
  llvm::StringSet<> libraryBound = libraryBoundFunctions(module);
  for (const auto &function : module.functions) {
    const Attr *primitive = function->attrs.get("primitive");
    if (!primitive || primitive->kind != Attr::Bool || !primitive->boolValue ||
        function->attrs.get("codegen") || libraryBound.count(function->name))
      continue;
    liftTensorConstants(module, *function);
    expandTupleParams(module, *function, fieldGets);
    std::string problem;
    std::unique_ptr<Kernel> kernel = buildFusedKernel(module, *function, problem);
    if (!kernel) {
      FUSEC_DEBUG("@" + function->name + " stays a function: " + problem);
      continue;
    }
    llvm::StringSet<> reads;
    for (const KStage &stage : kernel->stages)
      collectReads(stage.body, reads);
    // Symbolic dims bound by the inputs that are read; an unread input stays
    // when it is the only one binding a dim the kernel uses (TVM's
    // RemoveUnusedParameters keeps the symbolic vars free in the body).
    llvm::StringSet<> usedSymbols;
    for (const auto *list : {&kernel->outputs, &kernel->internals})
      for (const KBuffer &buffer : *list)
        for (const Dim &dim : buffer.type.getShape())
          if (dim.isSymbolic())
            usedSymbols.insert(dim.symbol);
    for (const KStage &stage : kernel->stages) {
      collectSymbols(stage.body, usedSymbols);
      for (const auto &[var, extent] : stage.reduceVars)
        if (extent.isSymbolic())
          usedSymbols.insert(extent.symbol);
    }
    llvm::StringSet<> bound;
    for (const KBuffer &input : kernel->inputs)
      if (reads.count(input.name))
        for (const Dim &dim : input.type.getShape())
          if (dim.isSymbolic())
            bound.insert(dim.symbol);
    std::vector<size_t> kept;
    std::vector<KBuffer> inputs;
    for (size_t i = 0; i < kernel->inputs.size(); ++i) {
      bool bindsNeeded = false;
      for (const Dim &dim : kernel->inputs[i].type.getShape())
        if (dim.isSymbolic() && usedSymbols.count(dim.symbol) && !bound.count(dim.symbol)) {
          bindsNeeded = true;
          bound.insert(dim.symbol);
        }
      if (reads.count(kernel->inputs[i].name) || bindsNeeded) {
        kept.push_back(i);
        inputs.push_back(kernel->inputs[i]);
      }
    }
    kernel->inputs = std::move(inputs);
    if (!verifyKernel(*kernel, context.diag, "in fuse-tir (merging @" + function->name + ")")) {
      context.internalError = true; // a bug of this pass, not of the input
      return false;
    }
    keptParams[function->name] = kept;
    fused.insert(function->name);
    created.push_back(std::move(kernel));
    ++NumFusedKernels;
  }
  llvm::erase_if(module.functions, [&](const std::unique_ptr<Function> &f) {
    return fused.count(f->name);
  });
  for (auto &kernel : created)
    module.kernels.push_back(std::move(kernel));
  for (auto &function : module.functions)
    function->forEachBinding([&](Binding &binding) {
      if (binding.kind != ExprKind::Call || !fused.count(binding.callee))
        return;
      std::vector<Operand> operands;
      for (size_t index : keptParams[binding.callee])
        operands.push_back(binding.operands[index]);
      binding.kind = ExprKind::CallKernel;
      binding.operands = std::move(operands);
    });
  // The call-site gets of tuple fields that no merged kernel reads (until
  // none is left: a nested tuple's inner get is read only by gets).
  llvm::DenseSet<const Value *> pendingGets(fieldGets.begin(), fieldGets.end());
  for (bool removedAny = !pendingGets.empty(); removedAny;) {
    removedAny = false;
    for (auto &function : module.functions) {
      llvm::DenseSet<const Value *> read;
      function->forEachBinding([&](const Binding &binding) {
        for (const Operand &operand : binding.operands)
          if (!operand.isLiteral())
            read.insert(operand.value);
      });
      auto unread = [&](const Binding *binding) {
        return binding && pendingGets.count(binding->getResult()) &&
               !read.count(binding->getResult());
      };
      for (BodyItem &item : function->body)
        if (item.block) {
          size_t count = item.block->bindings.size();
          llvm::erase_if(item.block->bindings,
                         [&](const std::unique_ptr<Binding> &b) { return unread(b.get()); });
          removedAny |= item.block->bindings.size() != count;
        }
      size_t before = function->body.size();
      llvm::erase_if(function->body,
                     [&](const BodyItem &item) { return unread(item.binding.get()); });
      removedAny |= function->body.size() != before;
    }
  }
  // The members the merged kernels replace; kernels no function called
  // before this pass (hand-written, say) are not this pass's to remove.
  module.removeUncalledKernels(&calledBefore);
  return true;
}

std::unique_ptr<Pass> fusec::createFuseTIRPass() { return std::make_unique<FuseTIR>(); }

#undef DEBUG_TYPE
