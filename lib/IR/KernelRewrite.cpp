//===- KernelRewrite.cpp - Substitution, inlining and folding of stages ---===//
//
// The building blocks of `lower` (and of the schedule rules that must agree
// with it): variable substitution with index folding, load rewriting, stage
// inlining, divisibility facts and the classification of accesses in a
// vector loop, which the interpreter's byte counts and the CUDA code's
// vector loads both follow.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Kernel.h"

#include <functional>
#include <map>
#include <numeric>

using namespace fusec;

static bool isConst(const KExprPtr &e, int64_t value) {
  return e->kind == KExpr::IntConst && e->intValue == value;
}

static int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

KExprPtr fusec::foldIndex(KExpr::Kind kind, KExprPtr lhs, KExprPtr rhs) {
  if (lhs->kind == KExpr::IntConst && rhs->kind == KExpr::IntConst) {
    int64_t a = lhs->intValue, b = rhs->intValue;
    switch (kind) {
    case KExpr::Add: return KExpr::intConst(wrappingAdd(a, b));
    case KExpr::Sub: return KExpr::intConst(wrappingSub(a, b));
    case KExpr::Mul: return KExpr::intConst(wrappingMul(a, b));
    // Division by 0 and -2^63 / -1 stay for the run time to report.
    case KExpr::FloorDiv:
      if (b != 0 && !(b == -1 && a == INT64_MIN))
        return KExpr::intConst(floorDivInt(a, b));
      break;
    case KExpr::Mod:
      if (b != 0 && !(b == -1 && a == INT64_MIN))
        return KExpr::intConst(a - floorDivInt(a, b) * b);
      break;
    case KExpr::Min: return KExpr::intConst(std::min(a, b));
    case KExpr::Max: return KExpr::intConst(std::max(a, b));
    default: break;
    }
  }
  switch (kind) {
  case KExpr::Add:
    if (isConst(lhs, 0))
      return rhs;
    if (isConst(rhs, 0))
      return lhs;
    break;
  case KExpr::Sub:
    if (isConst(rhs, 0))
      return lhs;
    break;
  case KExpr::Mul:
    if (isConst(lhs, 0) || isConst(rhs, 0))
      return KExpr::intConst(0);
    if (isConst(lhs, 1))
      return rhs;
    if (isConst(rhs, 1))
      return lhs;
    if (lhs->kind == KExpr::IntConst) // constants on the right
      std::swap(lhs, rhs);
    break;
  case KExpr::FloorDiv:
  case KExpr::Mod:
    if (isConst(rhs, 1))
      return kind == KExpr::FloorDiv ? lhs : KExpr::intConst(0);
    // floordiv(x * c, c) = x and mod(x * c, c) = 0 (c > 0).
    if (rhs->kind == KExpr::IntConst && rhs->intValue > 0 && lhs->kind == KExpr::Mul &&
        lhs->args[1]->kind == KExpr::IntConst &&
        lhs->args[1]->intValue % rhs->intValue == 0) {
      if (kind == KExpr::Mod)
        return KExpr::intConst(0);
      return foldIndex(KExpr::Mul, lhs->args[0],
                       KExpr::intConst(lhs->args[1]->intValue / rhs->intValue));
    }
    break;
  default:
    break;
  }
  return KExpr::binary(kind, std::move(lhs), std::move(rhs));
}

/// Rebuilds `e` with new arguments, refolding index arithmetic.
static KExprPtr rebuild(const KExpr &e, std::vector<KExprPtr> args) {
  if (e.isIndexArith())
    return foldIndex(e.kind, args[0], args[1]);
  auto copy = std::make_shared<KExpr>(e);
  copy->args = std::move(args);
  return copy;
}

KExprPtr fusec::foldIndexTree(const KExprPtr &e) {
  if (!e->isIndexArith())
    return e;
  return foldIndex(e->kind, foldIndexTree(e->args[0]), foldIndexTree(e->args[1]));
}

KExprPtr fusec::substituteVars(const KExprPtr &e,
                               const std::map<std::string, KExprPtr> &bindings) {
  if (e->kind == KExpr::Var) {
    auto it = bindings.find(e->name);
    return it == bindings.end() ? e : it->second;
  }
  if (e->args.empty())
    return e;
  std::vector<KExprPtr> args;
  bool changed = false;
  for (const KExprPtr &arg : e->args) {
    args.push_back(arg ? substituteVars(arg, bindings) : arg);
    changed |= args.back() != arg;
  }
  return changed ? rebuild(*e, std::move(args)) : e;
}

KExprPtr fusec::rewriteLoads(
    const KExprPtr &e,
    llvm::function_ref<KExprPtr(const KExpr &, const std::vector<KExprPtr> &)> rewrite) {
  if (e->args.empty() && e->kind != KExpr::Load)
    return e;
  std::vector<KExprPtr> args;
  bool changed = false;
  for (const KExprPtr &arg : e->args) {
    args.push_back(arg ? rewriteLoads(arg, rewrite) : arg);
    changed |= args.back() != arg;
  }
  if (e->kind == KExpr::Load)
    if (KExprPtr replaced = rewrite(*e, args))
      return replaced;
  return changed ? rebuild(*e, std::move(args)) : e;
}

bool fusec::exceedsInliningLimit(const KExpr &e) {
  std::map<const KExpr *, int64_t> sizes; // per shared node: the walk stays linear
  std::function<int64_t(const KExpr &)> size = [&](const KExpr &node) -> int64_t {
    auto found = sizes.find(&node);
    if (found != sizes.end())
      return found->second;
    int64_t total = 1;
    for (const KExprPtr &arg : node.args)
      if (arg)
        total = std::min(kMaxInlinedNodes + 1, total + size(*arg));
    return sizes[&node] = total;
  };
  return size(e) > kMaxInlinedNodes;
}

KExprPtr fusec::inlineStage(const KExprPtr &e, const KStage &stage) {
  return rewriteLoads(e, [&](const KExpr &load, const std::vector<KExprPtr> &indices) {
    if (load.name != stage.buffer)
      return KExprPtr();
    std::map<std::string, KExprPtr> bindings;
    for (size_t d = 0; d < stage.spatialVars.size(); ++d)
      bindings[stage.spatialVars[d]] = indices[d];
    return substituteVars(stage.body, bindings);
  });
}

bool fusec::usesVar(const KExpr &e, llvm::StringRef var) {
  if (e.kind == KExpr::Var)
    return e.name == var;
  for (const KExprPtr &arg : e.args)
    if (arg && usesVar(*arg, var))
      return true;
  return false;
}

bool fusec::loadsBuffer(const KExpr &e, llvm::StringRef buffer) {
  if (e.kind == KExpr::Load && e.name == buffer)
    return true;
  for (const KExprPtr &arg : e.args)
    if (arg && loadsBuffer(*arg, buffer))
      return true;
  return false;
}

int64_t fusec::countLoads(const KExpr &e, llvm::StringRef buffer) {
  int64_t loads = e.kind == KExpr::Load && e.name == buffer;
  for (const KExprPtr &arg : e.args)
    if (arg)
      loads += countLoads(*arg, buffer);
  return loads;
}

bool fusec::hasLoad(const KExpr &e) {
  if (e.kind == KExpr::Load)
    return true;
  for (const KExprPtr &arg : e.args)
    if (arg && hasLoad(*arg))
      return true;
  return false;
}

int64_t fusec::knownMultipleOf(const KExpr &e) {
  switch (e.kind) {
  case KExpr::IntConst:
    return e.intValue == 0 ? 0 : std::abs(e.intValue); // 0 is a multiple of all
  case KExpr::Mul: {
    int64_t a = knownMultipleOf(*e.args[0]), b = knownMultipleOf(*e.args[1]);
    return a == 0 || b == 0 ? 0 : a * b;
  }
  case KExpr::Add:
  case KExpr::Sub:
    return std::gcd(knownMultipleOf(*e.args[0]), knownMultipleOf(*e.args[1]));
  case KExpr::Mod: // x - floordiv(x, m) * m
    if (e.args[1]->kind == KExpr::IntConst)
      return std::gcd(knownMultipleOf(*e.args[0]), std::abs(e.args[1]->intValue));
    return 1;
  default:
    return 1;
  }
}

LaneAccess fusec::classifyLaneAccess(const std::vector<KExprPtr> &indices,
                                     const Type &bufferType, llvm::StringRef lane,
                                     int64_t width) {
  bool anyLane = false;
  for (const KExprPtr &index : indices)
    anyLane |= usesVar(*index, lane);
  if (!anyLane)
    return LaneAccess::Uniform;
  if (indices.empty())
    return LaneAccess::Gather;
  for (size_t d = 0; d + 1 < indices.size(); ++d)
    if (usesVar(*indices[d], lane))
      return LaneAccess::Gather;
  const Dim &last = bufferType.getShape().back();
  if (last.isSymbolic() || last.size % width != 0)
    return LaneAccess::Gather;
  const KExpr &index = *indices.back();
  KExprPtr base;
  if (index.kind == KExpr::Var && index.name == lane)
    return LaneAccess::Contiguous;
  if (index.kind == KExpr::Add) {
    if (index.args[1]->kind == KExpr::Var && index.args[1]->name == lane)
      base = index.args[0];
    else if (index.args[0]->kind == KExpr::Var && index.args[0]->name == lane)
      base = index.args[1];
  }
  if (!base || usesVar(*base, lane))
    return LaneAccess::Gather;
  int64_t multiple = knownMultipleOf(*base);
  return multiple % width == 0 ? LaneAccess::Contiguous : LaneAccess::Gather;
}
