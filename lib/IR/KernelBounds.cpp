//===- KernelBounds.cpp - Loads that certainly leave their buffer ---------===//
//
// A stage computes every element of its domain (spatial x reduction
// variables, a box), so a load evaluated at every point reads outside its
// buffer whenever one of its indices, affine in the variables, reaches past
// the dim at a corner of the box. Such a kernel is wrong as written: the
// interpreter would stop at run time and the GPU would read memory it does
// not own. Found statically:
//   1. Walk the stage's body, skipping select arms (a not-taken arm does not
//      run: a padded convolution guards its reads so).
//   2. For each load of a static dim, reduce the index to sum(c_v * v) + c
//      over variables with static extents (a non-affine or symbolic index
//      is left to the run-time check); its range over the box is exact:
//      c + sum(min(0, c_v * (e_v - 1))) .. c + sum(max(0, c_v * (e_v - 1))).
//   3. Report the first index whose range is not inside [0, dim).
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Kernel.h"

#include <map>
#include <optional>

using namespace fusec;

namespace {
/// sum(coefficients[v] * v) + constant.
struct Affine {
  std::map<std::string, int64_t> coefficients;
  int64_t constant = 0;
};
} // namespace

static std::optional<Affine> affineOf(const KExpr &e) {
  // Coefficients stay far from overflow: index constants and extents are
  // bounded by the buffers' sizes.
  constexpr int64_t kLimit = int64_t(1) << 40;
  switch (e.kind) {
  case KExpr::IntConst:
    if (e.intValue > kLimit || e.intValue < -kLimit)
      return std::nullopt;
    return Affine{{}, e.intValue};
  case KExpr::Var:
    return Affine{{{e.name, 1}}, 0};
  case KExpr::Add:
  case KExpr::Sub: {
    std::optional<Affine> lhs = affineOf(*e.args[0]), rhs = affineOf(*e.args[1]);
    if (!lhs || !rhs)
      return std::nullopt;
    int64_t sign = e.kind == KExpr::Add ? 1 : -1;
    for (const auto &[var, c] : rhs->coefficients)
      lhs->coefficients[var] += sign * c;
    lhs->constant += sign * rhs->constant;
    return lhs;
  }
  case KExpr::Mul: {
    std::optional<Affine> lhs = affineOf(*e.args[0]), rhs = affineOf(*e.args[1]);
    if (!lhs || !rhs || (!lhs->coefficients.empty() && !rhs->coefficients.empty()))
      return std::nullopt;
    if (lhs->coefficients.empty())
      std::swap(lhs, rhs);
    int64_t factor = rhs->constant;
    if (factor > kLimit || factor < -kLimit)
      return std::nullopt;
    for (auto &entry : lhs->coefficients)
      entry.second *= factor;
    lhs->constant *= factor;
    return lhs;
  }
  default:
    return std::nullopt;
  }
}

namespace {
struct BoundsFinder {
  const Kernel &kernel;
  std::map<std::string, int64_t> extents; // the stage's variables
  std::string problem;
  llvm::SMLoc where;

  void visit(const KExpr &e, llvm::SMLoc loc) {
    if (!problem.empty())
      return;
    if (e.loc.isValid())
      loc = e.loc;
    if (e.kind == KExpr::Select) {
      visit(*e.args[0], loc); // the arms run only where they are chosen
      return;
    }
    for (const KExprPtr &arg : e.args)
      if (arg)
        visit(*arg, loc);
    if (e.kind == KExpr::Load && problem.empty())
      checkLoad(e, loc);
  }

  void checkLoad(const KExpr &load, llvm::SMLoc loc) {
    const KBuffer *buffer = kernel.findBuffer(load.name);
    if (!buffer || !buffer->type.isTensor())
      return;
    const Shape &shape = buffer->type.getShape();
    for (size_t d = 0; d < load.args.size() && d < shape.size(); ++d) {
      std::optional<Affine> index = affineOf(*load.args[d]);
      if (!shape[d].isStatic() || !index)
        continue;
      int64_t low = index->constant, high = index->constant;
      bool known = true;
      for (const auto &[var, c] : index->coefficients) {
        auto extent = extents.find(var);
        if (extent == extents.end()) {
          known = c == 0;
          if (!known)
            break;
          continue;
        }
        low += std::min<int64_t>(0, c * (extent->second - 1));
        high += std::max<int64_t>(0, c * (extent->second - 1));
      }
      if (!known || (low >= 0 && high < shape[d].size))
        continue;
      problem = "'%" + load.name + "' is read at " + printExpr(*load.args[d]) + " in dim " +
                std::to_string(d) + ", which runs from " + std::to_string(low) + " to " +
                std::to_string(high) + " over the stage's domain; the dim has " +
                std::to_string(shape[d].size) + " elements";
      where = loc;
      return;
    }
  }
};
} // namespace

std::string fusec::findLoadOutOfBounds(const Kernel &kernel, const KStage &stage,
                                       llvm::SMLoc &where) {
  const KBuffer *buffer = kernel.findBuffer(stage.buffer);
  if (!buffer || !buffer->type.isTensor())
    return "";
  BoundsFinder finder{kernel, {}, "", stage.loc};
  const Shape &shape = buffer->type.getShape();
  for (size_t d = 0; d < stage.spatialVars.size() && d < shape.size(); ++d) {
    if (!shape[d].isStatic())
      continue; // a variable of symbolic extent makes its indices unknown
    if (shape[d].size == 0)
      return ""; // an empty domain reads nothing
    finder.extents[stage.spatialVars[d]] = shape[d].size;
  }
  for (const auto &[var, extent] : stage.reduceVars) {
    if (!extent.isStatic())
      continue;
    if (extent.size == 0)
      return "";
    finder.extents[var] = extent.size;
  }
  // A symbolic extent of 0 would empty the domain: only a domain of static
  // extents is certainly evaluated.
  if (finder.extents.size() != stage.spatialVars.size() + stage.reduceVars.size())
    return "";
  finder.visit(*stage.body, stage.loc);
  where = finder.where;
  return finder.problem;
}
