//===- PatternKind.cpp - The op-pattern analysis of a kernel --------------===//
//
// TVM's AnalyzeOpPatternKind (tvm-fusion-rules.md §2.2), on stages:
//   kind starts at elemwise. For each stage, each load L against the store
//   S (the stage's spatial variables) is
//     - elemwise when its indices equal S's, expression by expression;
//     - broadcast when each index is one of S's variables, found in order
//       without moving past the last match (so [i, i] counts); a static
//       size-1 dim read at index 0 is skipped; a 0-d load is a broadcast;
//     - injective when it uses only S's iteration variables (any
//       arithmetic, nested loads included: a gather reads one element per
//       output element, so `take` is injective as spec §4 requires);
//     - opaque otherwise.
//   The stage's p is the max; broadcast with an elemwise load is elemwise.
//   A non-opaque p: an output stage after a reduction makes the kernel
//   out_ewise_fusable (softmax, mean, norms); else kind = max(kind, p).
//   An opaque p: no reduction variable -> opaque; a multiply-accumulate
//   whose two loads each miss a spatial variable (matmul, conv) ->
//   out_ewise_fusable; a load whose index mixes a reduction variable into
//   arithmetic (pooling windows) -> out_ewise_fusable; else comm_reduce.
//
//===----------------------------------------------------------------------===//
#include "fusec/Analysis/Analysis.h"

#include "llvm/ADT/StringSet.h"

using namespace fusec;

static void collectLoads(const KExprPtr &e, std::vector<const KExpr *> &loads) {
  if (e->kind == KExpr::Load)
    loads.push_back(e.get());
  for (const KExprPtr &arg : e->args)
    collectLoads(arg, loads);
}

/// Iteration variables (not symbolic dims) used anywhere in `e`.
static void collectVars(const KExpr &e, const llvm::StringSet<> &iterVars,
                        llvm::StringSet<> &used) {
  if (e.kind == KExpr::Var && iterVars.count(e.name))
    used.insert(e.name);
  for (const KExprPtr &arg : e.args)
    collectVars(*arg, iterVars, used);
}

static bool isVarNamed(const KExpr &e, llvm::StringRef name) {
  return e.kind == KExpr::Var && e.name == name;
}

namespace {
struct StageAnalyzer {
  const Kernel &kernel;
  const KStage &stage;
  llvm::StringSet<> spatial, reduce, all;

  StageAnalyzer(const Kernel &kernel, const KStage &stage)
      : kernel(kernel), stage(stage) {
    for (const std::string &v : stage.spatialVars)
      spatial.insert(v), all.insert(v);
    for (const auto &[v, extent] : stage.reduceVars)
      reduce.insert(v), all.insert(v);
  }

  bool isElemWise(const KExpr &load) const {
    if (load.args.size() != stage.spatialVars.size())
      return false;
    for (size_t i = 0; i < load.args.size(); ++i)
      if (!isVarNamed(*load.args[i], stage.spatialVars[i]))
        return false;
    return true;
  }

  bool isBroadcast(const KExpr &load) const {
    const KBuffer *buffer = kernel.findBuffer(load.name);
    size_t j = 0;
    for (size_t i = 0; i < load.args.size(); ++i) {
      const KExpr &index = *load.args[i];
      bool unitDim = buffer && buffer->type.getShape()[i] == Dim::of(1);
      if (unitDim && index.kind == KExpr::IntConst && index.intValue == 0)
        continue;
      // As TVM's IsBroadcastPattern: the cursor stays on a match, so
      // `A[i, i]` read by a stage over [i, j] is a broadcast.
      while (j < stage.spatialVars.size() &&
             !isVarNamed(index, stage.spatialVars[j]))
        ++j;
      if (j == stage.spatialVars.size())
        return false;
    }
    return true;
  }

  bool isInjective(const KExpr &load) const {
    llvm::StringSet<> used;
    for (const KExprPtr &index : load.args)
      collectVars(*index, all, used);
    for (const auto &entry : used)
      if (!spatial.count(entry.getKey()))
        return false;
    return true;
  }

  /// Each index that mentions a reduction variable is exactly that variable.
  bool isPureReduce(const KExpr &load) const {
    for (const KExprPtr &index : load.args) {
      llvm::StringSet<> used;
      collectVars(*index, reduce, used);
      if (!used.empty() && !(index->kind == KExpr::Var && reduce.count(index->name)))
        return false;
    }
    return true;
  }

  /// A load some spatial variable does not index (it is reused across it).
  bool allowsReuse(const KExpr &load) const {
    llvm::StringSet<> used;
    for (const KExprPtr &index : load.args)
      collectVars(*index, spatial, used);
    return used.size() < spatial.size();
  }

  static const KExpr &stripCasts(const KExpr &e) {
    return e.kind == KExpr::Cast ? stripCasts(*e.args[0]) : e;
  }

  bool isMultiplyAccumulate() const {
    if (stage.combiner != "add")
      return false;
    const KExpr &body = stripCasts(*stage.body);
    if (body.kind != KExpr::Call || body.name != "multiply")
      return false;
    const KExpr &a = stripCasts(*body.args[0]), &b = stripCasts(*body.args[1]);
    return a.kind == KExpr::Load && b.kind == KExpr::Load && allowsReuse(a) &&
           allowsReuse(b);
  }
};
} // namespace

/// Output elements per element read, for a broadcast load with static shapes.
static int64_t reuseFactor(const Kernel &kernel, const KStage &stage,
                           const KExpr &load) {
  const KBuffer *written = kernel.findBuffer(stage.buffer);
  const KBuffer *read = kernel.findBuffer(load.name);
  auto out = written->type.getStaticNumElements();
  auto in = read->type.getStaticNumElements();
  return out && in && *in > 0 ? *out / *in : 0;
}

KernelPatternInfo fusec::analyzePatternKind(const Kernel &kernel) {
  KernelPatternInfo info;
  OpPatternKind &kind = info.kind;
  for (const KStage &stage : kernel.stages) {
    StageAnalyzer analyzer(kernel, stage);
    std::vector<const KExpr *> loads;
    collectLoads(stage.body, loads);
    OpPatternKind p = OpPatternKind::ElemWise;
    // A reduction also reads its accumulator at the store's indices, which
    // TVM counts as an elementwise load.
    bool hasElemWise = stage.isReduction();
    for (const KExpr *load : loads) {
      AccessKind access;
      if (analyzer.isElemWise(*load)) {
        access = AccessKind::ElemWise;
        hasElemWise = true;
      } else if (analyzer.isBroadcast(*load)) {
        access = AccessKind::Broadcast;
        p = combinePatternKinds(p, OpPatternKind::Broadcast);
      } else if (analyzer.isInjective(*load)) {
        access = AccessKind::Injective;
        p = combinePatternKinds(p, OpPatternKind::Injective);
      } else {
        access = AccessKind::Opaque;
        p = OpPatternKind::Opaque;
      }
      const KBuffer *buffer = kernel.findBuffer(load->name);
      if (buffer && buffer->role == KBuffer::Input)
        info.inputAccesses.push_back(
            {load->name, access,
             access == AccessKind::Broadcast ? reuseFactor(kernel, stage, *load) : 0});
      if (p == OpPatternKind::Opaque)
        break;
    }
    if (p == OpPatternKind::Broadcast && hasElemWise)
      p = OpPatternKind::ElemWise;
    const KBuffer *written = kernel.findBuffer(stage.buffer);
    bool writesOutput = written && written->role == KBuffer::Output;
    if (p != OpPatternKind::Opaque) {
      if (writesOutput && kind == OpPatternKind::CommReduce)
        kind = OpPatternKind::OutEWiseFusable;
      else
        kind = combinePatternKinds(kind, p);
      continue;
    }
    if (!stage.isReduction()) {
      kind = OpPatternKind::Opaque;
      continue;
    }
    if (analyzer.isMultiplyAccumulate()) {
      kind = combinePatternKinds(kind, OpPatternKind::OutEWiseFusable);
      continue;
    }
    bool allPure = true;
    for (const KExpr *load : loads)
      allPure &= analyzer.isPureReduce(*load);
    kind = combinePatternKinds(kind, allPure ? OpPatternKind::CommReduce
                                             : OpPatternKind::OutEWiseFusable);
  }
  return info;
}
