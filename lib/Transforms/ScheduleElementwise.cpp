//===- ScheduleElementwise.cpp - Elementwise, broadcast and injective -----===//
//
// Contract: applies to kernels without reductions. Every internal stage is
// inlined into its readers (what TVM's DLight does, recomputation included:
// seed 003's exp chain is evaluated per output element); every output is a
// root with a flat mapping of 256 threads and the widest vector (16 bytes)
// that divides its last dim, so contiguous operands move as one access.
// With a cost model, broadcast producers are placed by it instead
// (ScheduleBroadcast.cpp), and an internal stage that the output reads
// several times per element (a diamond inside the kernel) is computed once
// per thread into a register rather than inlined at every read.
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

#include "llvm/Support/Format.h"

using namespace fusec;

std::vector<KStage> fusec::inlineSpatialInternals(const Kernel &kernel) {
  return inlineStagesWhere(kernel, [&](size_t j) {
    return isInternal(kernel, kernel.stages[j]) && !kernel.stages[j].isReduction();
  });
}

std::vector<KStage> fusec::inlineStagesWhere(const Kernel &kernel,
                                             llvm::function_ref<bool(size_t)> inlined) {
  std::vector<KStage> stages = kernel.stages;
  std::vector<bool> tooLarge(stages.size(), false);
  for (size_t i = 0; i < stages.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (!tooLarge[j] && inlined(j))
        stages[i].body = inlineStage(stages[i].body, stages[j]);
    // As `lower` materializes it: later stages read it, not its copies.
    tooLarge[i] = exceedsInliningLimit(*stages[i].body);
  }
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

double fusec::stageIterations(const Kernel &kernel, const KStage &stage) {
  double iterations = double(estimatedNumElements(kernel.findBuffer(stage.buffer)->type));
  for (const auto &reduce : stage.reduceVars)
    iterations *= double(estimatedProduct(reduce.second));
  return iterations;
}

double fusec::countReads(const Kernel &kernel, llvm::ArrayRef<KStage> stages,
                         llvm::function_ref<bool(const KStage &)> inlined, llvm::StringRef buffer) {
  double reads = 0;
  for (const KStage &stage : stages) {
    if (inlined(stage))
      continue;
    reads += double(countLoads(*stage.body, buffer)) * stageIterations(kernel, stage);
  }
  return reads;
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

bool fusec::isTiledEpilogue(const Kernel &kernel, const KStage &epilogue, const KStage &core) {
  return readsAtOwnIndex(*epilogue.body, core.buffer, epilogue.spatialVars, true) &&
         kernel.findBuffer(epilogue.buffer)->type.getShape() ==
             kernel.findBuffer(core.buffer)->type.getShape();
}

/// With a target (not TVM): an internal stage that the output, once the
/// other inline stages are substituted, reads several times per element (a
/// diamond inside the kernel) and that costs more than a few FMA slots is
/// computed once per thread into a register, compute_at(output, thread),
/// instead of being inlined at every read; the output's vector width
/// becomes 1 (a vector loop holds no per-element statements).
///
/// The reads are counted as paths through the inline stages (what inlining
/// each of them into its readers would leave), one pass over the stages per
/// candidate: substituting the stages themselves for every candidate took
/// a cubic number of expression copies (15 s for a bicubic GridSample). A
/// read inside an index of a substituted load counts once, where the
/// substitution copies it per use of that index variable.
static void computeSharedStagesOnce(const Kernel &kernel, KSchedule &schedule,
                                    const ScheduleCostContext &cost) {
  constexpr double kMinWork = 4; // FMA slots: below, recomputing is as cheap
  size_t count = kernel.stages.size();
  llvm::StringMap<size_t> indexOf;
  for (size_t i = 0; i < count; ++i)
    indexOf[kernel.stages[i].buffer] = i;
  // KSchedule::find searches; the loops below ask once per stage pair.
  std::vector<StageSchedule *> entries(count);
  for (size_t i = 0; i < count; ++i)
    entries[i] = schedule.find(kernel.stages[i].buffer);
  // Stages `lower` materializes for their size are read, not expanded.
  std::vector<KStage> expanded = inlineStagesWhere(kernel, [&](size_t j) {
    return entries[j]->placement == StageSchedule::Inline;
  });
  std::vector<bool> tooLarge(count);
  for (size_t i = 0; i < count; ++i)
    tooLarge[i] = exceedsInliningLimit(*expanded[i].body);
  // Latest stages first: a shared stage's own producers are then read once,
  // by it, and stay inlined into it.
  for (size_t s = count; s-- > 0;) {
    const KStage &shared = kernel.stages[s];
    StageSchedule *entry = entries[s];
    if (!entry || entry->placement != StageSchedule::Inline)
      continue;
    std::vector<bool> substituted(count);
    std::map<std::string, const KStage *> inlinedProducers;
    for (size_t j = 0; j < count; ++j) {
      substituted[j] = j != s && !tooLarge[j] && entries[j]->placement == StageSchedule::Inline;
      if (substituted[j] && j < s)
        inlinedProducers[kernel.stages[j].buffer] = &kernel.stages[j];
    }
    double work = expressionWork(*shared.body, *cost.target, inlinedProducers);
    if (work < kMinWork)
      continue;
    // reads[i], evaluated[i]: loads of `shared` in stage i with the
    // substituted stages inlined; evaluated: those taken whatever the data
    // (not in a select branch, not right of && or ||).
    std::vector<int64_t> reads(count, 0), evaluated(count, 0);
    std::function<void(const KExpr &, bool, int64_t &, int64_t &)> visit =
        [&](const KExpr &e, bool always, int64_t &all, int64_t &sure) {
          if (e.kind == KExpr::Load) {
            auto found = indexOf.find(e.name);
            size_t j = found == indexOf.end() ? count : found->second;
            if (j == s) {
              all += 1;
              sure += always;
            } else if (j < count && substituted[j]) {
              all += reads[j];
              sure += always ? evaluated[j] : 0;
            }
          }
          bool branches = e.kind == KExpr::Select || e.kind == KExpr::And || e.kind == KExpr::Or;
          for (size_t k = 0; k < e.args.size(); ++k)
            if (e.args[k])
              visit(*e.args[k], always && !(branches && k > 0), all, sure);
        };
    for (size_t i = s + 1; i < count; ++i)
      visit(*kernel.stages[i].body, true, reads[i], evaluated[i]);
    size_t reader = count; // none yet
    int64_t readCount = 0;
    bool single = true;
    for (size_t i = s + 1; i < count; ++i) {
      const StageSchedule *readerEntry = entries[i];
      if (!reads[i] || readerEntry->placement == StageSchedule::Inline)
        continue;
      // A read under a condition (padding, a clamped gather) may be at an
      // index that only the condition keeps in range: computing it ahead
      // would load out of bounds.
      single &= reader == count && readerEntry->placement == StageSchedule::Root &&
                readerEntry->mapping.kind == StageMapping::Flat &&
                evaluated[i] == reads[i];
      reader = i;
      readCount = reads[i];
    }
    if (reader == count || !single || readCount < 2)
      continue;
    entry->placement = StageSchedule::ComputeAt;
    entry->consumer = kernel.stages[reader].buffer;
    entry->level = StageSchedule::Thread;
    entries[reader]->mapping.vector = 1;
    if (cost.pass && cost.pass->remarks)
      *cost.pass->remarks << "remark: schedule: @" << kernel.name << ": %" << shared.buffer
                          << " -> %" << kernel.stages[reader].buffer << ": compute_at thread (read "
                          << readCount << " times per element, " << llvm::format("%.0f", work)
                          << " FMA slots each: computed once into a register, not inlined at "
                             "every read)\n";
  }
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
  if (cost.target) {
    placeBroadcastProducers(kernel, schedule, cost);
    computeSharedStagesOnce(kernel, schedule, cost);
  }
  return true;
}
