//===- ScheduleRowStages.cpp - Row values and row buffers at the block ----===//
//
// Contract: with a target (schedule{cost-model=roofline}; not TVM), the
// `reduction` rule's spatial internals that its passes over a row would
// recompute at every read are computed once per row at the block, into
// shared memory (`compute_at(output, block)`), where the cost model finds
// that cheaper; the others stay inline (TVM's choice). Remarks and report
// decisions give both estimates of each.
//
// Algorithm:
//   1. Row values (shape R then 1s, read by a wider stage: a chain on a
//      row's mean added back to the row), each weighed on its own
//      (estimatePlacement, one element per block), the others counted as
//      at the block (seed 003's recomputation, here after a reduction).
//   2. Row buffers (shape R and static inner dims that fit the block's
//      shared memory, read only in their own rows): a local search from
//      none on the estimated time of the whole kernel
//      (estimateRowKernelUs), adding, dropping or trading one at a time,
//      later stages first, since one buffer changes what the others save.
//   3. Readers too large to inline get a launch of their own from `lower`,
//      away from the block's shared rows: their buffers go back inline.
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

#include "llvm/Support/Format.h"

#include <map>
#include <set>

using namespace fusec;

/// Bytes of the kernel's inputs, each read once.
static int64_t inputBytesOf(const Kernel &kernel) {
  int64_t bytes = 0;
  for (const KBuffer &input : kernel.inputs)
    bytes += estimatedNumElements(input.type) * dtypeBytes(input.type.getDType());
  return bytes;
}

/// Bytes of the kernel's (first) output, written once.
static int64_t outputBytesOf(const Kernel &kernel) {
  const Type &type = kernel.outputs.front().type;
  return estimatedNumElements(type) * dtypeBytes(type.getDType());
}

/// Whether `stage` holds one value per row: spatial, internal, of shape
/// `rows` followed by 1s.
static bool isRowValue(const Kernel &kernel, const KStage &stage, const std::vector<Dim> &rows) {
  if (!isInternal(kernel, stage) || stage.isReduction())
    return false;
  const Shape &shape = kernel.findBuffer(stage.buffer)->type.getShape();
  if (shape.size() < rows.size())
    return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (d < rows.size() ? !(shape[d] == rows[d]) : !shape[d].isOne())
      return false;
  return true;
}

/// With a target: each row value that a wider stage reads (the last of a
/// row chain; the stages before it inline into it) goes to the block when
/// computing it once per row is estimated cheaper than inlining it into
/// every read. Remarks and report decisions give both estimates.
static void placeRowValues(const Kernel &kernel, const std::vector<Dim> &rows, const KStage &output,
                           KSchedule &schedule, const ScheduleCostContext &cost) {
  std::vector<const KStage *> candidates;
  for (const KStage &stage : kernel.stages) {
    if (!isRowValue(kernel, stage, rows))
      continue;
    bool readWider = llvm::any_of(kernel.stages, [&](const KStage &reader) {
      return !isRowValue(kernel, reader, rows) && loadsBuffer(*reader.body, stage.buffer);
    });
    if (readWider)
      candidates.push_back(&stage);
  }
  if (candidates.empty())
    return;
  std::map<std::string, const KStage *> inlined;
  for (const KStage &stage : kernel.stages)
    if (isInternal(kernel, stage) && !stage.isReduction() &&
        !llvm::is_contained(candidates, &stage))
      inlined[stage.buffer] = &stage;
  int64_t rowCount = std::max<int64_t>(1, estimatedProduct(rows));
  const Type &outputType = kernel.outputs.front().type;
  int64_t rootBytes = inputBytesOf(kernel) + outputBytesOf(kernel);
  // Inlined, a row value is evaluated at every read: each load in the
  // stages that are not inlined counts its stage's iterations.
  std::vector<KStage> flattened = inlineStagesWhere(
      kernel, [&](size_t j) { return inlined.count(kernel.stages[j].buffer) != 0; });
  for (const KStage *candidate : candidates) {
    double evaluations = countReads(
        kernel, flattened, [&](const KStage &stage) { return inlined.count(stage.buffer) != 0; },
        candidate->buffer);
    const Type &type = kernel.findBuffer(candidate->buffer)->type;
    PlacementCost estimate =
        estimatePlacement(*candidate, rowCount, rowCount * dtypeBytes(type.getDType()),
                          saturatingInt64(std::max(1.0, evaluations)), rootBytes, {rowCount, 1},
                          *cost.target, inlined);
    // Materializing would need the reductions it reads in a launch of
    // their own: not a choice here.
    bool atBlock = estimate.computeAtUs < estimate.inlineUs;
    estimate.choice = atBlock ? "compute_at" : "inline";
    if (atBlock) {
      StageSchedule *entry = schedule.find(candidate->buffer);
      entry->placement = StageSchedule::ComputeAt;
      entry->consumer = output.buffer;
      entry->level = StageSchedule::Block;
    }
    std::string reason;
    llvm::raw_string_ostream os(reason);
    os << "a row value: inlining would evaluate it " << estimate.recompute << " times per row ("
       << llvm::format("%.0f", estimate.workPerElement) << " FMA slots each)";
    if (hasSymbolicDims(type) || hasSymbolicDims(outputType))
      os << " (symbolic dims counted as " << kSymbolicDimEstimate << ")";
    os.flush();
    std::string producer = "%" + candidate->buffer, consumer = "%" + output.buffer;
    PassContext *pass = cost.pass;
    if (pass && pass->remarks)
      *pass->remarks << "remark: schedule: @" << kernel.name << ": " << producer << " -> "
                     << consumer << ": " << estimate.choice << " (" << reason
                     << "; estimated us: inline " << llvm::format("%.3f", estimate.inlineUs)
                     << ", compute_at " << llvm::format("%.3f", estimate.computeAtUs) << " on "
                     << cost.target->name << ")\n";
    if (pass && pass->report)
      pass->report->decisions.push_back({"schedule",
                                         kernel.name,
                                         estimate.choice,
                                         reason,
                                         {{"producer", producer}, {"consumer", consumer}},
                                         {{"inline_us", estimate.inlineUs},
                                          {"compute_at_us", estimate.computeAtUs},
                                          {"chosen_us", estimate.chosenUs()}}});
  }
}

/// With a target (not TVM): row buffers, spatial stages of shape R and
/// static inner dims that `lower` computes once per row at the block into
/// shared memory, where inlined they would be evaluated at every read: a
/// prologue chain before a softmax's max, sum and output passes, or a
/// norm's result before the next norm of a merged kernel (inlined, each
/// pass over a row recomputes every layer before it). The set is chosen by
/// a local search from none (TVM's inlining) on the estimated time of the
/// whole kernel (estimateRowKernelUs: its work with each stage evaluated as
/// often as the set makes it, and a barrier per buffer), since one buffer
/// changes what the others save; each step adds, drops or trades for
/// another a candidate when that lowers it, later stages first, within the
/// block's shared memory.
/// Candidates are read only in their own rows, by stages of those rows, so
/// that any inlining of their readers keeps them in the block's row.
/// Remarks and report decisions give, for each candidate that inlining
/// would recompute, the kernel's time with it inlined and at the block.
static void placeRowBuffers(const Kernel &kernel, const std::vector<Dim> &rows,
                            const KStage &output, KSchedule &schedule,
                            const ScheduleCostContext &cost) {
  const TargetDesc &target = *cost.target;
  // Whether `reader` is a stage of the rows that reads `buffer` only in its
  // own row (its first |rows| spatial variables in the first indices).
  auto readsOwnRow = [&](const KStage &reader, const std::string &buffer) {
    const Shape &shape = kernel.findBuffer(reader.buffer)->type.getShape();
    if (shape.size() < rows.size() || !std::equal(rows.begin(), rows.end(), shape.begin()))
      return false;
    std::vector<std::string> vars(reader.spatialVars.begin(),
                                  reader.spatialVars.begin() + rows.size());
    return readsAtOwnIndex(*reader.body, buffer, vars, false);
  };
  std::vector<const KStage *> candidates;
  std::map<const KStage *, int64_t> rowBytes;
  for (const KStage &stage : kernel.stages) {
    if (!isInternal(kernel, stage) || stage.isReduction())
      continue;
    const Type &type = kernel.findBuffer(stage.buffer)->type;
    int64_t elements = rowBufferElements(type, rows, target);
    bool ownRows =
        elements && llvm::all_of(kernel.stages, [&](const KStage &reader) {
          return !loadsBuffer(*reader.body, stage.buffer) || readsOwnRow(reader, stage.buffer);
        });
    if (ownRows) {
      candidates.push_back(&stage);
      // Each shared array is 16-byte aligned.
      rowBytes[&stage] = (elements * dtypeBytes(type.getDType()) + 15) / 16 * 16;
    }
  }
  if (candidates.empty())
    return;
  // The reductions and row values at the block stay there.
  std::set<std::string> atBlock;
  for (const StageSchedule &entry : schedule.stages)
    if (entry.placement == StageSchedule::ComputeAt && entry.level == StageSchedule::Block)
      atBlock.insert(entry.stage);
  int64_t rowCount = std::max<int64_t>(1, estimatedProduct(rows));
  const Type &outputType = kernel.outputs.front().type;
  double inputBytes = double(inputBytesOf(kernel));
  double memoryUs = (inputBytes + double(outputBytesOf(kernel))) / target.bytesPerUs();
  using StageSet = std::set<const KStage *>;
  auto inlinedWithout = [&](const StageSet &buffers) {
    std::map<std::string, const KStage *> inlined;
    for (const KStage &stage : kernel.stages)
      if (isInternal(kernel, stage) && !stage.isReduction() && !buffers.count(&stage) &&
          !atBlock.count(stage.buffer))
        inlined[stage.buffer] = &stage;
    return inlined;
  };
  // Each stage that is not inlined runs once per iteration, doing its
  // inlined producers' work and loads again at each read of them.
  auto kernelUs = [&](const StageSet &buffers) {
    std::map<std::string, const KStage *> inlined = inlinedWithout(buffers);
    double work = 0, loaded = 0;
    for (const KStage &stage : kernel.stages) {
      if (inlined.count(stage.buffer))
        continue;
      double iterations = stageIterations(kernel, stage);
      work += expressionWork(*stage.body, target, inlined) * iterations;
      loaded += expressionInputBytes(*stage.body, kernel, inlined) * iterations;
    }
    return estimateRowKernelUs(work, memoryUs, loaded - inputBytes, int64_t(buffers.size()),
                               rowCount, target);
  };
  // What the block's other shared buffers take: per reduction its value
  // and a partial per warp (8 at most, of at most 8 bytes), per row value 8
  // bytes; at most the 48 KiB of static shared memory `lower` allows,
  // whatever the target offers with an opt-in.
  int64_t budget = rowKernelSharedBytes(target);
  for (const KStage &stage : kernel.stages)
    budget -= stage.isReduction() ? 72 : atBlock.count(stage.buffer) ? 8 : 0;
  auto bytesOf = [&](const StageSet &buffers) {
    int64_t bytes = 0;
    for (const KStage *stage : buffers)
      bytes += rowBytes[stage];
    return bytes;
  };
  StageSet buffers;
  double best = kernelUs(buffers);
  auto tryMove = [&](StageSet trial) {
    if (bytesOf(trial) > budget)
      return false;
    double us = kernelUs(trial);
    if (us >= best - 1e-9)
      return false;
    buffers = std::move(trial);
    best = us;
    return true;
  };
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    // Add or drop one; where shared memory runs out, trade one for another.
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      StageSet trial = buffers;
      if (!trial.erase(*it))
        trial.insert(*it);
      changed |= tryMove(std::move(trial));
    }
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      if (buffers.count(*it))
        continue;
      for (const KStage *held : StageSet(buffers)) {
        StageSet trial = buffers;
        trial.erase(held);
        trial.insert(*it);
        if (tryMove(std::move(trial))) {
          changed = true;
          break;
        }
      }
    }
    if (!changed)
      break;
  }
  // A reader too large to inline gets a launch of its own from `lower`,
  // where the block's shared rows are not; a reader that reads a buffer
  // through inlined stages at other rows (a transpose of row dims) needs
  // rows the block does not hold: those buffers go back inline.
  StageSet unreachable;
  for (bool dropped = true; dropped;) {
    dropped = false;
    std::map<std::string, const KStage *> inlined = inlinedWithout(buffers);
    std::vector<KStage> flattened = inlineStagesWhere(
        kernel, [&](size_t j) { return inlined.count(kernel.stages[j].buffer) != 0; });
    for (const KStage &stage : flattened) {
      bool tooLarge = inlined.count(stage.buffer) && exceedsInliningLimit(*stage.body);
      if (inlined.count(stage.buffer) && !tooLarge)
        continue;
      for (auto it = buffers.begin(); it != buffers.end();) {
        const std::string &name = (*it)->buffer;
        bool outside = loadsBuffer(*stage.body, name) && (tooLarge || !readsOwnRow(stage, name));
        if (outside)
          unreachable.insert(*it);
        it = outside ? (dropped = true, buffers.erase(it)) : std::next(it);
      }
    }
  }
  for (const KStage *buffer : buffers) {
    StageSchedule *entry = schedule.find(buffer->buffer);
    entry->placement = StageSchedule::ComputeAt;
    entry->consumer = output.buffer;
    entry->level = StageSchedule::Block;
  }
  // The decisions, in the kernel's order.
  PassContext *pass = cost.pass;
  if (!pass || (!pass->remarks && !pass->report))
    return;
  for (const KStage *candidate : candidates) {
    StageSet without = buffers, with = buffers;
    without.erase(candidate);
    with.insert(candidate);
    std::map<std::string, const KStage *> inlined = inlinedWithout(without);
    inlined.erase(candidate->buffer); // to count its reads
    std::vector<KStage> flattened = inlineStagesWhere(
        kernel, [&](size_t j) { return inlined.count(kernel.stages[j].buffer) != 0; });
    double evaluations = countReads(
        kernel, flattened, [&](const KStage &stage) { return inlined.count(stage.buffer) != 0; },
        candidate->buffer);
    const Type &type = kernel.findBuffer(candidate->buffer)->type;
    int64_t elements = std::max<int64_t>(1, estimatedNumElements(type));
    bool chosen = buffers.count(candidate) != 0;
    if (!chosen && evaluations <= double(elements))
      continue; // evaluated once either way: nothing to decide
    bool fits = bytesOf(with) <= budget && !unreachable.count(candidate);
    double inlineUs = kernelUs(without), computeAtUs = fits ? kernelUs(with) : 0;
    std::string reason;
    llvm::raw_string_ostream os(reason);
    int64_t perRow = rowBufferElements(type, rows, target);
    os << "a row of " << perRow << " elements (" << perRow * dtypeBytes(type.getDType())
       << " bytes of shared memory): inlining would evaluate each element "
       << llvm::format("%.0f", evaluations / double(elements)) << " times ("
       << llvm::format("%.0f", expressionWork(*candidate->body, target, inlined))
       << " FMA slots each)";
    if (unreachable.count(candidate))
      os << "; a stage reads it outside its own row (through inlined stages) or in a launch of "
            "its own";
    else if (!fits)
      os << "; the block's shared memory has no room left for it";
    if (hasSymbolicDims(type) || hasSymbolicDims(outputType))
      os << " (symbolic dims counted as " << kSymbolicDimEstimate << ")";
    os.flush();
    std::string choice = chosen ? "compute_at" : "inline";
    std::string producer = "%" + candidate->buffer, consumer = "%" + output.buffer;
    if (pass->remarks) {
      *pass->remarks << "remark: schedule: @" << kernel.name << ": " << producer << " -> "
                     << consumer << ": " << choice << " (" << reason
                     << "; estimated us beyond the kernel's memory traffic: inline "
                     << llvm::format("%.3f", inlineUs);
      if (fits)
        *pass->remarks << ", compute_at " << llvm::format("%.3f", computeAtUs);
      *pass->remarks << " on " << target.name << ")\n";
    }
    if (pass->report) {
      std::vector<std::pair<std::string, double>> costs = {{"inline_us", inlineUs}};
      if (fits)
        costs.push_back({"compute_at_us", computeAtUs});
      costs.push_back({"chosen_us", chosen ? computeAtUs : inlineUs});
      pass->report->decisions.push_back({"schedule",
                                         kernel.name,
                                         choice,
                                         reason,
                                         {{"producer", producer}, {"consumer", consumer}},
                                         costs});
    }
  }
}

void fusec::placeRowStages(const Kernel &kernel, const std::vector<Dim> &rows, const KStage &output,
                           KSchedule &schedule, const ScheduleCostContext &cost) {
  placeRowValues(kernel, rows, output, schedule, cost);
  placeRowBuffers(kernel, rows, output, schedule, cost);
}
