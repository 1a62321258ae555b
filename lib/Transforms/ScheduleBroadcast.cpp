//===- ScheduleBroadcast.cpp - Place broadcast producers by cost ----------===//
//
// Contract: in an elementwise kernel with one static output of rank >= 2,
// a spatial internal stage S that the output reads through a broadcast
// (S[i0, .., ik-1, 0, .., 0] for an output [i0, .., ir-1], S's trailing
// dims 1 — seed 003's [rows, 1] chain added to [rows, cols]) is placed
// where the cost model (lib/Analysis/CostModel.cpp) estimates it cheapest:
//   - inline (TVM's choice): S is recomputed at every output element;
//   - compute_at(output, block): the output is mapped one block per row
//     (`rows`, inner = r - k) and each block evaluates S once for its row,
//     into shared memory — one launch, no round trip, no recomputation;
//   - materialize: S gets its own launch and a global buffer.
// Algorithm:
//   1. Find the candidates in the output's body; they must share one k
//      (one rows mapping serves them all).
//   2. For each, estimate the three placements (S's work counts the stages
//      inlined into it) and keep the cheapest.
//   3. Rewrite the schedule entries; report each decision with its costs
//      (--remarks, the fusion report's `decisions`).
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

#include "llvm/Support/Format.h"

using namespace fusec;

namespace {
struct Candidate {
  const KStage *stage = nullptr;
  size_t leading = 0; // k: the output dims S shares
};
} // namespace

static const KStage *findStage(const Kernel &kernel, llvm::StringRef buffer) {
  for (const KStage &stage : kernel.stages)
    if (stage.buffer == buffer)
      return &stage;
  return nullptr;
}

/// The loads of internal stages in `expr` that broadcast over the output's
/// trailing dims.
static void findBroadcastLoads(const Kernel &kernel, const KExpr &expr, const KStage &root,
                               std::vector<Candidate> &found) {
  if (expr.kind == KExpr::Load) {
    const KBuffer *buffer = kernel.findBuffer(expr.name);
    const KStage *stage = findStage(kernel, expr.name);
    const Shape &shape = buffer ? buffer->type.getShape() : Shape();
    bool internal = buffer && buffer->role == KBuffer::Internal && stage &&
                    !stage->isReduction() && expr.args.size() == root.spatialVars.size();
    size_t k = 0;
    while (internal && k < expr.args.size() && expr.args[k]->kind == KExpr::Var &&
           expr.args[k]->name == root.spatialVars[k])
      ++k;
    bool broadcast = internal && k >= 1 && k < expr.args.size();
    for (size_t d = k; broadcast && d < expr.args.size(); ++d)
      broadcast = expr.args[d]->kind == KExpr::IntConst && expr.args[d]->intValue == 0 &&
                  shape[d].isStatic() && shape[d].size == 1;
    if (broadcast && llvm::none_of(found, [&](const Candidate &c) { return c.stage == stage; }))
      found.push_back({stage, k});
    return;
  }
  for (const KExprPtr &arg : expr.args)
    if (arg)
      findBroadcastLoads(kernel, *arg, root, found);
}

static int64_t staticElements(const Type &type) {
  std::optional<int64_t> count = type.getStaticNumElements();
  return count ? *count : -1;
}

void fusec::placeBroadcastProducers(const Kernel &kernel, KSchedule &schedule,
                                    const ScheduleCostContext &cost) {
  if (kernel.outputs.size() != 1)
    return;
  const KStage *root = findStage(kernel, kernel.outputs.front().name);
  const Type &rootType = kernel.outputs.front().type;
  int64_t rootElements = staticElements(rootType);
  if (!root || rootType.getRank() < 2 || rootElements <= 0)
    return;
  std::vector<Candidate> candidates;
  findBroadcastLoads(kernel, *root->body, *root, candidates);
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
  for (const KBuffer &input : kernel.inputs)
    if (int64_t elements = staticElements(input.type); elements > 0)
      rootBytes += elements * dtypeBytes(input.type.getDType());
  StageSchedule *rootEntry = nullptr;
  for (StageSchedule &entry : schedule.stages)
    if (entry.stage == root->buffer)
      rootEntry = &entry;
  size_t rowsLeading = 0; // the k of the compute_at candidates
  for (const Candidate &candidate : candidates) {
    const KBuffer *buffer = kernel.findBuffer(candidate.stage->buffer);
    int64_t producerElements = staticElements(buffer->type);
    if (producerElements <= 0)
      continue;
    int64_t blocks = 1;
    for (size_t d = 0; d < candidate.leading; ++d)
      blocks *= rootType.getShape()[d].size;
    PlacementCost estimate = estimatePlacement(
        *candidate.stage, producerElements,
        producerElements * dtypeBytes(buffer->type.getDType()), rootElements, rootBytes, blocks,
        *cost.target, inlined);
    if (estimate.choice == "compute_at" && rowsLeading && rowsLeading != candidate.leading)
      estimate.choice = estimate.materializeUs < estimate.inlineUs ? "materialize" : "inline";
    StageSchedule *entry = nullptr;
    for (StageSchedule &e : schedule.stages)
      if (e.stage == candidate.stage->buffer)
        entry = &e;
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
    os.flush();
    double chosen = estimate.choice == "inline"       ? estimate.inlineUs
                    : estimate.choice == "compute_at" ? estimate.computeAtUs
                                                      : estimate.materializeUs;
    if (PassContext *pass = cost.pass) {
      if (pass->remarks)
        *pass->remarks << "remark: schedule: @" << kernel.name << ": " << producer << " -> "
                       << consumer << ": " << estimate.choice << " (" << reason
                       << "; estimated us: inline "
                       << llvm::format("%.3f", estimate.inlineUs) << ", compute_at "
                       << llvm::format("%.3f", estimate.computeAtUs) << ", materialize "
                       << llvm::format("%.3f", estimate.materializeUs) << ", plus "
                       << llvm::format("%.3f", estimate.rootUs)
                       << " of the output's own traffic on " << cost.target->name << ")\n";
      if (pass->report)
        pass->report->decisions.push_back(
            {"schedule", kernel.name, estimate.choice, reason,
             {{"producer", producer}, {"consumer", consumer}},
             {{"inline_us", estimate.inlineUs},
              {"compute_at_us", estimate.computeAtUs},
              {"materialize_us", estimate.materializeUs},
              {"chosen_us", chosen}}});
    }
  }
  if (rowsLeading && rootEntry) {
    // One block per row; the threads stride over the row's elements.
    int64_t rowElements = 1;
    for (size_t d = rowsLeading; d < size_t(rootType.getRank()); ++d)
      rowElements *= rootType.getShape()[d].size;
    int64_t vector = chooseVectorWidth(kernel, *root);
    int64_t threads = (rowElements / vector + 31) / 32 * 32;
    rootEntry->mapping.kind = StageMapping::Rows;
    rootEntry->mapping.threads = std::clamp<int64_t>(threads, 32, kFlatThreads);
    rootEntry->mapping.vector = vector;
    rootEntry->mapping.inner = int64_t(rootType.getRank()) - int64_t(rowsLeading);
    schedule.rule = "elementwise";
  }
}
