//===- DCE.cpp - Dead binding and function elimination --------------------===//
//
// Contract: removes bindings whose values nothing live uses, and functions
// that no entry point reaches. An entry point is a graph function that no
// other function calls in the input (spec §9) and that fusion did not make
// (primitive, composite and codegen functions are private in TVM, unless
// the module has nothing else), and `@main` always (the public entry, as
// TVM keeps it); entry points are kept even when unused.
// Outside dataflow blocks a `call_extern` may have effects and is kept, and
// so is a `call` of a function that has such effects; inside a block every
// binding is side-effect free (spec §3). As TVM's normalizer after its DCE:
// a dataflow block left empty goes, and two blocks that only dead bindings
// separated become one (blocks adjacent in the input, or on either side of
// a block that went, stay apart: that is how a fusion barrier is written).
//
// Algorithm:
//   1. Find the entry points: ungrouped functions that no `call` names,
//      and @main;
//      and the functions with effects (a call_extern, or a call of such a
//      function, outside a block), to a fixpoint.
//   2. In each function, mark the returned values live, then walk the
//      bindings backwards: a live binding makes its operands live. Repeat
//      until nothing changes (one backward sweep suffices in SSA order).
//   3. Drop dead bindings and remove them from `output` lists; drop empty
//      blocks and merge blocks that dead bindings alone kept apart.
//   4. Remove functions not reachable from an entry point through `call`,
//      and kernels that no remaining function calls (a module of kernels
//      only, with no graph function, keeps them all).
//
//===----------------------------------------------------------------------===//
#include "fusec/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "dce"

using namespace fusec;

FUSEC_STATISTIC(NumDeadBindings, "num-dead-bindings",
                "Number of dead bindings removed");
FUSEC_STATISTIC(NumDeadFunctions, "num-dead-functions",
                "Number of unreachable functions removed");
FUSEC_STATISTIC(NumDeadKernels, "num-dead-kernels",
                "Number of kernels no function calls removed");

namespace {
class DCE final : public Pass {
public:
  DCE() : Pass("dce") {}
  bool run(Module &module, PassContext &context) override;

private:
  void findEffects(const Module &module);
  bool hasEffects(const Binding &binding, bool inDataflowBlock) const;
  void eliminateDeadBindings(Function &function);
  /// Functions whose calls outside a block must stay (step 1).
  llvm::StringSet<> effectful;
  void eliminateUnreachableFunctions(Module &module,
                                     const llvm::StringSet<> &entryPoints);
};
} // namespace

/// Whether `binding` must stay even when its value is unused.
bool DCE::hasEffects(const Binding &binding, bool inDataflowBlock) const {
  if (inDataflowBlock)
    return false;
  return binding.kind == ExprKind::CallExtern ||
         (binding.kind == ExprKind::Call && effectful.count(binding.callee));
}

void DCE::findEffects(const Module &module) {
  effectful.clear();
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &function : module.functions) {
      if (effectful.count(function->name))
        continue;
      bool effects = llvm::any_of(function->body, [&](const BodyItem &item) {
        return item.binding && hasEffects(*item.binding, false);
      });
      if (effects)
        changed = effectful.insert(function->name).second;
    }
  }
}

void DCE::eliminateDeadBindings(Function &function) {
  llvm::DenseSet<const Value *> live;
  for (const Operand &operand : function.returnValues)
    live.insert(operand.value);
  auto markOperands = [&](const Binding &binding) {
    for (const Operand &operand : binding.operands)
      if (!operand.isLiteral())
        live.insert(operand.value);
  };
  // Backward sweep: uses come after definitions in SSA order.
  for (auto item = function.body.rbegin(); item != function.body.rend(); ++item) {
    if (item->binding) {
      if (live.count(item->binding->getResult()) ||
          hasEffects(*item->binding, false))
        markOperands(*item->binding);
      continue;
    }
    auto &bindings = item->block->bindings;
    for (auto binding = bindings.rbegin(); binding != bindings.rend(); ++binding)
      if (live.count((*binding)->getResult()))
        markOperands(**binding);
  }
  auto isDead = [&](const std::unique_ptr<Binding> &binding, bool inBlock) {
    bool dead = !live.count(binding->getResult()) && !hasEffects(*binding, inBlock);
    if (dead) {
      ++NumDeadBindings;
      FUSEC_DEBUG("removing dead binding %" + binding->getResult()->name +
                  " in @" + function.name);
    }
    return dead;
  };
  std::vector<BodyItem> kept;
  // Whether a dead binding was dropped since the last kept item: a block
  // after it may join the block before it.
  bool droppedSinceLast = false;
  for (BodyItem &item : function.body) {
    if (item.binding) {
      if (isDead(item.binding, false)) {
        droppedSinceLast = true;
        continue;
      }
      kept.push_back(std::move(item));
      droppedSinceLast = false;
      continue;
    }
    DataflowBlock &block = *item.block;
    llvm::erase_if(block.outputs, [&](Value *v) { return !live.count(v); });
    block.outputLocs.resize(block.outputs.size());
    llvm::erase_if(block.bindings, [&](const std::unique_ptr<Binding> &b) {
      return isDead(b, true);
    });
    if (block.bindings.empty()) {
      // The blocks on either side were written apart from it: they stay
      // apart (a barrier the input states).
      droppedSinceLast = false;
      continue;
    }
    if (droppedSinceLast && !kept.empty() && kept.back().block) {
      DataflowBlock &previous = *kept.back().block;
      for (std::unique_ptr<Binding> &binding : block.bindings)
        previous.bindings.push_back(std::move(binding));
      previous.outputs.insert(previous.outputs.end(), block.outputs.begin(), block.outputs.end());
      previous.outputLocs.resize(previous.outputs.size());
      previous.hasOutputClause |= block.hasOutputClause;
      droppedSinceLast = false; // a block adjacent to this one in the input stays apart
      continue;
    }
    kept.push_back(std::move(item));
    droppedSinceLast = false;
  }
  function.body = std::move(kept);
}

void DCE::eliminateUnreachableFunctions(Module &module,
                                        const llvm::StringSet<> &entryPoints) {
  llvm::StringSet<> reached;
  std::vector<const Function *> worklist;
  for (const auto &function : module.functions)
    if (entryPoints.count(function->name)) {
      reached.insert(function->name);
      worklist.push_back(function.get());
    }
  while (!worklist.empty()) {
    const Function *function = worklist.back();
    worklist.pop_back();
    function->forEachBinding([&](const Binding &binding) {
      if (binding.kind != ExprKind::Call || !reached.insert(binding.callee).second)
        return;
      if (const Function *callee = module.lookupFunction(binding.callee))
        worklist.push_back(callee);
    });
  }
  llvm::erase_if(module.functions, [&](const std::unique_ptr<Function> &f) {
    if (reached.count(f->name))
      return false;
    ++NumDeadFunctions;
    FUSEC_DEBUG("removing unreachable function @" + f->name);
    return true;
  });
}

bool DCE::run(Module &module, PassContext &context) {
  llvm::StringSet<> called;
  for (const auto &function : module.functions)
    function->forEachBinding([&](const Binding &binding) {
      if (binding.kind == ExprKind::Call)
        called.insert(binding.callee);
    });
  // Functions that fusion made (primitive, composite, codegen) are private
  // in TVM: one nobody calls is no entry point, unless the module has
  // nothing else.
  bool onlyGrouped = llvm::all_of(module.functions, [](const std::unique_ptr<Function> &f) {
    return f->isGroupedFunction();
  });
  llvm::StringSet<> entryPoints;
  for (const auto &function : module.functions)
    if ((!called.count(function->name) && (onlyGrouped || !function->isGroupedFunction())) ||
        function->name == "main")
      entryPoints.insert(function->name);
  findEffects(module);
  for (auto &function : module.functions)
    eliminateDeadBindings(*function);
  eliminateUnreachableFunctions(module, entryPoints);
  if (module.functions.empty())
    return true;
  for (const std::string &name : module.removeUncalledKernels()) {
    ++NumDeadKernels;
    FUSEC_DEBUG("removing uncalled kernel @" + name);
  }
  return true;
}

std::unique_ptr<Pass> fusec::createDCEPass() { return std::make_unique<DCE>(); }

#undef DEBUG_TYPE
