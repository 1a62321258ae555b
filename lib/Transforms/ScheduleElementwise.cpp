//===- ScheduleElementwise.cpp - Elementwise, broadcast and injective -----===//
//
// Contract: applies to kernels without reductions. Every internal stage is
// inlined into its readers (what TVM's DLight does, recomputation included:
// seed 003's exp chain is evaluated per output element); every output is a
// root with a flat mapping of 256 threads and the widest vector (16 bytes)
// that divides its last dim, so contiguous operands move as one access.
// With a cost model, broadcast producers are placed by it instead
// (ScheduleBroadcast.cpp).
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

using namespace fusec;

std::vector<KStage> fusec::inlineSpatialInternals(const Kernel &kernel) {
  std::vector<KStage> stages = kernel.stages;
  for (size_t i = 0; i < stages.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (isInternal(kernel, stages[j]) && !stages[j].isReduction())
        stages[i].body = inlineStage(stages[i].body, stages[j]);
  return stages;
}

bool fusec::isInternal(const Kernel &kernel, const KStage &stage) {
  const KBuffer *buffer = kernel.findBuffer(stage.buffer);
  return buffer && buffer->role == KBuffer::Internal;
}

int64_t fusec::chooseVectorWidth(const Kernel &kernel, const KStage &stage) {
  const Type &type = kernel.findBuffer(stage.buffer)->type;
  if (stage.isReduction() || type.getRank() == 0 || type.getShape().back().isSymbolic())
    return 1;
  int64_t width = std::max<int64_t>(1, 16 / dtypeBytes(type.getDType()));
  while (width > 1 && type.getShape().back().size % width != 0)
    width /= 2;
  return width;
}

bool fusec::readsAtOwnIndex(const KExpr &body, llvm::StringRef producer,
                            const std::vector<std::string> &vars, bool exact) {
  if (body.kind == KExpr::Load && body.name == producer) {
    if (body.args.size() < vars.size() || (exact && body.args.size() != vars.size()))
      return false;
    for (size_t d = 0; d < vars.size(); ++d)
      if (body.args[d]->kind != KExpr::Var || body.args[d]->name != vars[d])
        return false;
  }
  for (const KExprPtr &arg : body.args)
    if (arg && !readsAtOwnIndex(*arg, producer, vars, exact))
      return false;
  return true;
}

bool fusec::scheduleElementwise(const Kernel &kernel, KSchedule &schedule, std::string &why,
                                const ScheduleCostContext &cost) {
  for (const KStage &stage : kernel.stages)
    if (stage.isReduction()) {
      why = "'%" + stage.buffer + "' is a reduction";
      return false;
    }
  why = "no reductions";
  schedule.rule = "elementwise";
  for (const KStage &stage : kernel.stages) {
    StageSchedule entry;
    entry.stage = stage.buffer;
    if (isInternal(kernel, stage)) {
      entry.placement = StageSchedule::Inline;
    } else {
      entry.mapping.kind = StageMapping::Flat;
      entry.mapping.threads = kFlatThreads;
      entry.mapping.vector = chooseVectorWidth(kernel, stage);
    }
    schedule.stages.push_back(std::move(entry));
  }
  if (cost.target)
    placeBroadcastProducers(kernel, schedule, cost);
  return true;
}
