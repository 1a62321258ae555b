//===- ScheduleBroadcast.cpp - Place broadcast producers by cost ----------===//
//
// Contract: in an elementwise kernel with one output of rank >= 2,
// a spatial internal stage S that the output reads through a broadcast,
// directly or through stages inlined at the output's own index,
// (each index a variable of the output or 0 on a dim of size 1, e.g. seed
// 003's [rows, 1] chain added to [rows, cols]) is placed where the cost
// model (lib/Analysis/CostModel.cpp) estimates it cheapest:
//   - inline (TVM's choice): S is recomputed at every output element;
//   - compute_at(output, block), for S[i0, .., ik-1, 0, .., 0] (any of
//     i0..ik-1 may be 0 on a dim of size 1, `%s[0, c, 0, 0]`) over rows of
//     at least a warp's 32 elements: the output is mapped one block per
//     row (`rows`, inner = r - k) and each block evaluates S once for its
//     row, into shared memory — one launch, no round trip;
//   - materialize: S gets its own launch and a global buffer.
// Symbolic dims (a dynamic batch) count as kSymbolicDimEstimate in the
// estimates, which the remark says; the reuse factor of a dim that the
// output and S share does not depend on it.
// Algorithm:
//   1. Find the candidates in the output's body and in the bodies of the
//      stages it reads at its own index (an epilogue after the broadcast
//      add); they must share one k (one rows mapping serves them all).
//   2. For each, estimate the three placements (S's work counts the stages
//      inlined into it) and keep the cheapest.
//   3. Rewrite the schedule entries; report each decision with its costs
//      (--remarks, the fusion report's `decisions`).
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <set>

using namespace fusec;

namespace {
struct Candidate {
  const KStage *stage = nullptr;
  size_t leading = 0; // k: the output dims S shares
};
} // namespace

/// The loads of internal spatial stages in `expr` that broadcast: each index
/// is a distinct variable of the output or 0 on a dim of size 1, and at
/// least one is 0. `leading` is k when the variables are exactly the
/// output's first k (a row broadcast, which compute_at can serve), else 0.
/// A stage the expression reads at the output's own index (an epilogue's
/// operand, `relu(add(chain, b))`) is inlined there, so its body is searched
/// too; `rootVar` maps the variables of `expr` to the output's.
static void findBroadcastLoads(const Kernel &kernel, const KExpr &expr, const KStage &root,
                               const std::map<std::string, std::string> &rootVar,
                               std::vector<Candidate> &found, std::set<const KStage *> &searched) {
  auto asRootVar = [&](const KExpr &index) -> std::string {
    if (index.kind != KExpr::Var)
      return "";
    auto it = rootVar.find(index.name);
    return it == rootVar.end() ? "" : it->second;
  };
  if (expr.kind == KExpr::Load) {
    const KBuffer *buffer = kernel.findBuffer(expr.name);
    const KStage *stage = kernel.findStage(expr.name);
    bool internal = buffer && buffer->role == KBuffer::Internal && stage &&
                    !stage->isReduction() && expr.args.size() == root.spatialVars.size();
    const Shape &shape = internal ? buffer->type.getShape() : Shape();
    std::set<std::string> vars;
    size_t zeros = 0;
    bool broadcast = internal;
    for (size_t d = 0; broadcast && d < expr.args.size(); ++d) {
      const KExpr &index = *expr.args[d];
      std::string var = asRootVar(index);
      if (index.kind == KExpr::IntConst && index.intValue == 0 && shape[d].isOne())
        ++zeros;
      else
        broadcast = !var.empty() && vars.insert(var).second;
    }
    bool identity = internal && zeros == 0 && vars.size() == expr.args.size();
    for (size_t d = 0; identity && d < expr.args.size(); ++d)
      identity = asRootVar(*expr.args[d]) == root.spatialVars[d];
    if (identity && stage->spatialVars.size() == root.spatialVars.size() &&
        searched.insert(stage).second) {
      std::map<std::string, std::string> inner;
      for (size_t d = 0; d < stage->spatialVars.size(); ++d)
        inner[stage->spatialVars[d]] = root.spatialVars[d];
      findBroadcastLoads(kernel, *stage->body, root, inner, found, searched);
      return;
    }
    broadcast &= zeros > 0 && zeros < expr.args.size();
    // Rows: every variable at its own position, so each row of the output's
    // first k dims reads one row of S (k: past the last variable); the dims
    // before k may still be broadcast (`%s[0, c, 0, 0]`).
    size_t k = 0;
    bool positional = broadcast;
    for (size_t d = 0; positional && d < expr.args.size(); ++d) {
      std::string var = asRootVar(*expr.args[d]);
      if (var.empty())
        continue;
      positional = var == root.spatialVars[d];
      k = d + 1;
    }
    bool rows = positional && k < expr.args.size();
    if (broadcast && llvm::none_of(found, [&](const Candidate &c) { return c.stage == stage; }))
      found.push_back({stage, rows ? k : 0});
    return;
  }
  for (const KExprPtr &arg : expr.args)
    if (arg)
      findBroadcastLoads(kernel, *arg, root, rootVar, found, searched);
}

void fusec::placeBroadcastProducers(const Kernel &kernel, KSchedule &schedule,
                                    const ScheduleCostContext &cost) {
  if (kernel.outputs.size() != 1)
    return;
  const KStage *root = kernel.findStage(kernel.outputs.front().name);
  const Type &rootType = kernel.outputs.front().type;
  int64_t rootElements = estimatedNumElements(rootType);
  if (!root || rootType.getRank() < 2 || rootElements <= 0)
    return;
  std::vector<Candidate> candidates;
  std::map<std::string, std::string> rootVars;
  for (const std::string &var : root->spatialVars)
    rootVars[var] = var;
  std::set<const KStage *> searched;
  findBroadcastLoads(kernel, *root->body, *root, rootVars, candidates, searched);
  if (candidates.empty())
    return;
  // Every other spatial internal stage is inlined where it is read, so a
  // candidate's work includes the chain feeding it.
  std::map<std::string, const KStage *> inlined;
  for (const KStage &stage : kernel.stages)
    if (isInternal(kernel, stage) && !stage.isReduction() &&
        llvm::none_of(candidates, [&](const Candidate &c) { return c.stage == &stage; }))
      inlined[stage.buffer] = &stage;
  int64_t rootBytes = rootElements * dtypeBytes(rootType.getDType());
  bool symbolic = hasSymbolicDims(rootType);
  for (const KBuffer &input : kernel.inputs) {
    rootBytes += estimatedNumElements(input.type) * dtypeBytes(input.type.getDType());
    symbolic |= hasSymbolicDims(input.type);
  }
  StageSchedule *rootEntry = schedule.find(root->buffer);
  size_t rowsLeading = 0; // the k of the compute_at candidates
  for (const Candidate &candidate : candidates) {
    const KBuffer *buffer = kernel.findBuffer(candidate.stage->buffer);
    int64_t producerElements = estimatedNumElements(buffer->type);
    if (producerElements <= 0)
      continue;
    // Blocks of the rows mapping compute_at would use; 0: compute_at cannot
    // serve a broadcast that is not over trailing dims, nor rows shorter
    // than a warp (most of each block's threads would idle).
    llvm::ArrayRef<Dim> rootShape = rootType.getShape();
    std::string noComputeAt = "not a row broadcast";
    int64_t blocks = 0;
    if (candidate.leading) {
      llvm::ArrayRef<Dim> rowDims = rootShape.drop_front(candidate.leading);
      int64_t rowElements = estimatedProduct(rowDims);
      if (!hasSymbolicDims(rowDims) && rowElements < 32)
        noComputeAt = "rows of " + std::to_string(rowElements) + " elements, under a warp";
      else
        blocks = estimatedProduct(rootShape.take_front(candidate.leading));
    }
    PlacementCost estimate = estimatePlacement(
        *candidate.stage, producerElements,
        producerElements * dtypeBytes(buffer->type.getDType()), rootElements, rootBytes, blocks,
        *cost.target, inlined);
    if (estimate.choice == "compute_at" && rowsLeading && rowsLeading != candidate.leading)
      estimate.choice = estimate.materializeUs < estimate.inlineUs ? "materialize" : "inline";
    StageSchedule *entry = schedule.find(candidate.stage->buffer);
    if (estimate.choice == "compute_at") {
      rowsLeading = candidate.leading;
      entry->placement = StageSchedule::ComputeAt;
      entry->consumer = root->buffer;
      entry->level = StageSchedule::Block;
    } else if (estimate.choice == "materialize") {
      entry->placement = StageSchedule::Root; // an internal root is materialized
      entry->mapping.kind = StageMapping::Flat;
      entry->mapping.threads = kFlatThreads;
      entry->mapping.vector = chooseVectorWidth(kernel, *candidate.stage);
    }
    // Explain the decision with every alternative's estimate.
    std::string producer = "%" + candidate.stage->buffer, consumer = "%" + root->buffer;
    std::string reason;
    llvm::raw_string_ostream os(reason);
    os << "broadcast reuse " << estimate.recompute << "x; inlining would recompute "
       << llvm::format("%.0f", estimate.workPerElement) << " FMA slots per output element";
    if (symbolic)
      os << " (symbolic dims counted as " << kSymbolicDimEstimate << ")";
    os.flush();
    double chosen = estimate.choice == "inline"       ? estimate.inlineUs
                    : estimate.choice == "compute_at" ? estimate.computeAtUs
                                                      : estimate.materializeUs;
    if (PassContext *pass = cost.pass) {
      if (pass->remarks)
        *pass->remarks << "remark: schedule: @" << kernel.name << ": " << producer << " -> "
                       << consumer << ": " << estimate.choice << " (" << reason
                       << "; estimated us: inline " << llvm::format("%.3f", estimate.inlineUs)
                       << ", compute_at "
                       << (estimate.computeAtPossible
                               ? std::string(llvm::formatv("{0:f3}", estimate.computeAtUs))
                               : "n/a (" + noComputeAt + ")")
                       << ", materialize " << llvm::format("%.3f", estimate.materializeUs)
                       << ", plus " << llvm::format("%.3f", estimate.rootUs)
                       << " of the output's own traffic on " << cost.target->name << ")\n";
      if (pass->report) {
        std::vector<std::pair<std::string, double>> costs = {{"inline_us", estimate.inlineUs}};
        if (estimate.computeAtPossible)
          costs.push_back({"compute_at_us", estimate.computeAtUs});
        costs.push_back({"materialize_us", estimate.materializeUs});
        costs.push_back({"chosen_us", chosen});
        pass->report->decisions.push_back({"schedule", kernel.name, estimate.choice, reason,
                                           {{"producer", producer}, {"consumer", consumer}},
                                           costs});
      }
    }
  }
  if (rowsLeading && rootEntry) {
    // One block per row; the threads stride over the row's elements (a
    // full block when their number is symbolic).
    int64_t rowElements = 1;
    bool symbolicRow = false;
    for (size_t d = rowsLeading; d < size_t(rootType.getRank()); ++d) {
      symbolicRow |= rootType.getShape()[d].isSymbolic();
      rowElements *= rootType.getShape()[d].isSymbolic() ? 1 : rootType.getShape()[d].size;
    }
    int64_t vector = chooseVectorWidth(kernel, *root);
    int64_t threads = symbolicRow ? kFlatThreads : (rowElements / vector + 31) / 32 * 32;
    rootEntry->mapping.kind = StageMapping::Rows;
    rootEntry->mapping.threads = std::clamp<int64_t>(threads, 32, kFlatThreads);
    rootEntry->mapping.vector = vector;
    rootEntry->mapping.inner = int64_t(rootType.getRank()) - int64_t(rowsLeading);
    schedule.rule = "elementwise";
  }
}
