//===- ScheduleSplitReduction.cpp - Row reductions over few rows, split ---===//
//
// Contract (not TVM; with a target, cost-model=roofline): a kernel that the
// `reduction` rule took whose reductions have too few rows to fill the GPU
// (a full sum, the norm of a vector, a softmax over one row of logits) is
// split into partial reductions (TVM's rfactor primitive, Inductor's split
// reductions, XLA's multi-block row reductions) when the cost model finds
// that cheaper. One block per row leaves all but a few SMs idle, and each
// block draws only the bytes its loads in flight allow (estimateBlocksUs):
// a sum of 16 MiB in one block runs at a few percent of the bandwidth.
//
// Algorithm:
//   1. Qualify: static shapes; reductions of rows R; an output that is a
//      spatial stage, or, alone, the one reduction.
//   2. Partials P per reduction and row: enough blocks in all to saturate
//      the memory (chooseReductionPartials), each folding at least 1024
//      elements. Split the first reduction variable whose extent reaches P
//      (else the widest), `r = p * C + r'`: an exact divisor of its extent
//      near P where there is one, else C = ceil(extent / P) with a guard
//      that gives the combiner's identity past the end.
//   3. Estimate one block per row against the split (estimateSplitReduction)
//      and keep the rule's schedule unless the split is faster. Either way,
//      a remark and a report decision give both.
//   4. Rewrite each reduction `%r`: `internal %r_rf: acc[R..., P]`, the
//      stage `%r_rf[i..., p] = reduce(body) over (r': C, ...) init identity`
//      before `%r`, and `%r[i...] = reduce(%r_rf[i..., r0]) over (r0: P)`
//      with `%r`'s init. Schedule: `%r_rf: materialize rows(...)` (a block
//      per partial); one reduction and an element per row: `%r` folded by
//      the output's blocks (two launches); else each `%r` materialized by a
//      launch of its own and the output flat (2 launches per reduction and
//      one); spatial stages inlined.
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <set>

using namespace fusec;

namespace {
/// What step 1 finds.
struct SplitCandidate {
  std::vector<size_t> reductions; // indices in kernel.stages, in order
  const KStage *output = nullptr;
  std::vector<Dim> rows;
  int64_t rowCount = 1;
  /// Whether the output has dims beyond the rows (a softmax).
  bool wholeRow = false;
  /// One reduction and an element per row: the output's blocks fold the
  /// partials. Otherwise every reduction's partials are folded by a launch
  /// of their own and the output gets a flat launch.
  bool foldsInOutput() const { return !wholeRow && reductions.size() == 1; }
};

bool findCandidate(const Kernel &kernel, SplitCandidate &candidate) {
  if (kernel.outputs.size() != 1)
    return false;
  for (size_t i = 0; i < kernel.stages.size(); ++i) {
    const KStage &stage = kernel.stages[i];
    if (stage.isReduction())
      candidate.reductions.push_back(i);
    if (!isInternal(kernel, stage))
      candidate.output = &stage;
  }
  if (candidate.reductions.empty() || !candidate.output)
    return false;
  for (const std::vector<KBuffer> *buffers : {&kernel.inputs, &kernel.outputs, &kernel.internals})
    for (const KBuffer &buffer : *buffers)
      if (hasSymbolicDims(buffer.type))
        return false;
  const Type &type = kernel.findBuffer(kernel.stages[candidate.reductions.front()].buffer)->type;
  const Type &outputType = kernel.findBuffer(candidate.output->buffer)->type;
  candidate.rows = withoutTrailingOnes(type.getShape());
  for (size_t index : candidate.reductions) {
    const KStage &reduction = kernel.stages[index];
    if (withoutTrailingOnes(kernel.findBuffer(reduction.buffer)->type.getShape()) != candidate.rows)
      return false;
    for (const auto &[var, extent] : reduction.reduceVars)
      if (extent.isSymbolic())
        return false;
  }
  for (const Dim &dim : candidate.rows)
    candidate.rowCount *= dim.size;
  candidate.wholeRow = withoutTrailingOnes(outputType.getShape()) != candidate.rows;
  // Several reductions fold in launches of their own, before a spatial output.
  if (!candidate.foldsInOutput())
    return !candidate.output->isReduction();
  return true;
}

/// The bytes of the inputs `expr` loads, each read once: a pass over its
/// rows loads an element twice (`x * x`) from one address, and a broadcast
/// input again for every row from cache.
double inputBytesRead(const Kernel &kernel, const KExpr &expr) {
  std::set<std::string> names;
  std::function<void(const KExpr &)> walk = [&](const KExpr &e) {
    if (e.kind == KExpr::Load)
      if (const KBuffer *buffer = kernel.findBuffer(e.name))
        if (buffer->role == KBuffer::Input)
          names.insert(e.name);
    for (const KExprPtr &arg : e.args)
      if (arg)
        walk(*arg);
  };
  walk(expr);
  double bytes = 0;
  for (const std::string &name : names) {
    const Type &type = kernel.findBuffer(name)->type;
    bytes += double(estimatedNumElements(type) * dtypeBytes(type.getDType()));
  }
  return bytes;
}

int64_t reducedExtent(const KStage &reduction) {
  int64_t reduced = 1;
  for (const auto &[var, extent] : reduction.reduceVars)
    reduced *= extent.size;
  return reduced;
}

/// Step 2: the reduction variable to split and its chunk.
struct Split {
  size_t var = 0;
  int64_t partials = 1, chunk = 1;
  bool guarded = false;
};

Split chooseSplit(const KStage &reduction, int64_t partials) {
  Split split;
  size_t widest = 0;
  for (size_t v = 0; v < reduction.reduceVars.size(); ++v)
    if (reduction.reduceVars[v].second.size > reduction.reduceVars[widest].second.size)
      widest = v;
  split.var = widest;
  for (size_t v = 0; v < reduction.reduceVars.size(); ++v)
    if (reduction.reduceVars[v].second.size >= partials) {
      split.var = v;
      break;
    }
  int64_t extent = reduction.reduceVars[split.var].second.size;
  partials = std::min(partials, extent);
  for (int64_t divisor = partials; divisor * 2 >= partials; --divisor)
    if (extent % divisor == 0) {
      split.partials = divisor;
      split.chunk = extent / divisor;
      return split;
    }
  split.chunk = (extent + partials - 1) / partials;
  split.partials = (extent + split.chunk - 1) / split.chunk;
  split.guarded = split.partials * split.chunk != extent;
  return split;
}

std::string freshName(llvm::StringRef base, llvm::function_ref<bool(llvm::StringRef)> taken) {
  std::string name = base.str();
  for (int suffix = 1; taken(name); ++suffix)
    name = base.str() + "_" + std::to_string(suffix);
  return name;
}

/// Step 4: the kernel's stages with the partial stage before the reduction.
void rewriteKernel(Kernel &kernel, size_t index, const std::vector<Dim> &rows, const Split &split,
                   std::string &partialName) {
  KStage &reduction = kernel.stages[index];
  partialName = freshName(reduction.buffer + "_rf",
                          [&](llvm::StringRef name) { return kernel.findBuffer(name); });
  size_t rowRank = rows.size();
  std::vector<std::string> vars(reduction.spatialVars.begin(),
                                reduction.spatialVars.begin() + rowRank);
  auto used = [&](llvm::StringRef name) {
    if (llvm::is_contained(reduction.spatialVars, name))
      return true;
    for (const auto &[var, extent] : reduction.reduceVars)
      if (var == name)
        return true;
    return false;
  };
  std::string partialVar = freshName("p", used);
  // The partial stage: the body with the kept 1s at 0 and the split variable
  // offset by its chunk.
  std::map<std::string, KExprPtr> bindings;
  for (size_t d = rowRank; d < reduction.spatialVars.size(); ++d)
    bindings[reduction.spatialVars[d]] = KExpr::intConst(0);
  std::string splitVar = reduction.reduceVars[split.var].first;
  int64_t splitExtent = reduction.reduceVars[split.var].second.size;
  KExprPtr point = KExpr::binary(
      KExpr::Add, KExpr::binary(KExpr::Mul, KExpr::var(partialVar), KExpr::intConst(split.chunk)),
      KExpr::var(splitVar));
  bindings[splitVar] = point;
  KStage partial;
  partial.buffer = partialName;
  partial.spatialVars = vars;
  partial.spatialVars.push_back(partialVar);
  partial.body = substituteVars(reduction.body, bindings);
  if (split.guarded) {
    DType dtype = partial.body->dtype;
    partial.body =
        KExpr::select(KExpr::binary(KExpr::Lt, point, KExpr::intConst(splitExtent)), partial.body,
                      KExpr::literal(combinerIdentity(reduction.combiner, dtype), dtype));
  }
  partial.combiner = reduction.combiner;
  partial.reduceVars = reduction.reduceVars;
  partial.reduceVars[split.var].second = Dim::of(split.chunk);
  partial.setInit(combinerIdentity(reduction.combiner, reduction.accumulate));
  partial.accumulate = reduction.accumulate;
  partial.loc = reduction.loc;
  // The reduction now folds the partials, from its own init.
  std::string partialIndex = freshName(
      "r0", [&](llvm::StringRef name) { return llvm::is_contained(reduction.spatialVars, name); });
  std::vector<KExprPtr> indices;
  for (const std::string &var : vars)
    indices.push_back(KExpr::var(var));
  indices.push_back(KExpr::var(partialIndex));
  reduction.body = KExpr::load(partialName, std::move(indices), reduction.accumulate);
  reduction.reduceVars = {{partialIndex, Dim::of(split.partials)}};
  KBuffer buffer;
  buffer.name = partialName;
  buffer.role = KBuffer::Internal;
  std::vector<Dim> shape = rows;
  shape.push_back(Dim::of(split.partials));
  buffer.type = Type::tensor(reduction.accumulate, shape);
  kernel.internals.push_back(buffer);
  kernel.stages.insert(kernel.stages.begin() + std::ptrdiff_t(index), std::move(partial));
}

/// Step 4's schedule: each partial stage and each fold (a reduction, now
/// of the partials) with the threads `partialThreads` and `foldThreads` give
/// it.
KSchedule splitSchedule(const Kernel &kernel, const SplitCandidate &candidate,
                        const std::string &outputName,
                        const std::map<std::string, int64_t> &partialThreads,
                        const std::map<std::string, int64_t> &foldThreads) {
  KSchedule schedule;
  schedule.rule = "reduction";
  int64_t rowRank = int64_t(candidate.rows.size());
  bool foldInOutput = candidate.foldsInOutput();
  for (const KStage &stage : kernel.stages) {
    StageSchedule entry;
    entry.stage = stage.buffer;
    int64_t rank = kernel.findBuffer(stage.buffer)->type.getRank();
    auto partial = partialThreads.find(stage.buffer), fold = foldThreads.find(stage.buffer);
    if (partial != partialThreads.end()) {
      entry.mapping.kind = StageMapping::Rows;
      entry.mapping.threads = partial->second;
    } else if (stage.buffer == outputName && !foldInOutput) {
      entry.mapping.kind = StageMapping::Flat;
      entry.mapping.threads = kFlatThreads;
      entry.mapping.vector = chooseVectorWidth(kernel, stage);
    } else if (stage.buffer == outputName) {
      // The output's blocks fold the one reduction's partials (it may be
      // that reduction).
      entry.mapping.kind = StageMapping::Rows;
      entry.mapping.threads = foldThreads.begin()->second;
      entry.mapping.inner = rank - rowRank;
    } else if (fold != foldThreads.end() && foldInOutput) {
      entry.placement = StageSchedule::ComputeAt;
      entry.consumer = outputName;
      entry.level = StageSchedule::Block;
    } else if (fold != foldThreads.end()) {
      entry.mapping.kind = StageMapping::Rows; // materialized: a launch of its own
      entry.mapping.threads = fold->second;
      entry.mapping.inner = rank - rowRank;
    } else {
      entry.placement = StageSchedule::Inline;
    }
    schedule.stages.push_back(std::move(entry));
  }
  return schedule;
}
} // namespace

bool fusec::splitRowReduction(Kernel &kernel, KSchedule &schedule, std::string &why,
                              const ScheduleCostContext &cost) {
  SplitCandidate candidate;
  if (!cost.target || !findCandidate(kernel, candidate))
    return false;
  const TargetDesc &target = *cost.target;
  // Step 2 for each reduction, and its share of step 3 (over the stages as
  // `lower` sees them: spatial internals inlined).
  std::vector<KStage> inlined = inlineSpatialInternals(kernel);
  std::vector<Split> splits;
  std::vector<SplitReductionStep> steps;
  std::vector<int64_t> perPartial;
  int64_t longest = 0;
  std::string names;
  for (size_t index : candidate.reductions) {
    const KStage &reduction = kernel.stages[index];
    int64_t reduced = reducedExtent(reduction);
    longest = std::max(longest, reduced);
    Split split =
        chooseSplit(reduction, chooseReductionPartials(candidate.rowCount, reduced, target));
    if (split.partials < 2)
      return false;
    perPartial.push_back(split.chunk * (reduced / reduction.reduceVars[split.var].second.size));
    SplitReductionStep step;
    double iterations = stageIterations(kernel, inlined[index]);
    step.work = expressionWork(*inlined[index].body, target, {}) * iterations;
    step.inputBytes = inputBytesRead(kernel, *inlined[index].body);
    step.partials = split.partials;
    step.accumulateBytes = dtypeBytes(reduction.accumulate);
    step.chunkThreads = rowReductionThreads(perPartial.back(), false);
    step.foldThreads = rowReductionThreads(split.partials, false);
    splits.push_back(split);
    steps.push_back(step);
    names += (names.empty() ? "%" : ", %") + reduction.buffer;
  }
  const KStage &output = *candidate.output;
  bool foldInOutput = candidate.foldsInOutput();
  double outputWork = 0, outputReads = 0;
  int64_t outputBlocks = 0;
  const KBuffer &outputBuffer = *kernel.findBuffer(output.buffer);
  if (!output.isReduction()) {
    size_t index = size_t(&output - kernel.stages.data());
    double iterations = stageIterations(kernel, inlined[index]);
    outputWork = expressionWork(*inlined[index].body, target, {}) * iterations;
    outputReads = inputBytesRead(kernel, *inlined[index].body);
  }
  if (!foldInOutput) {
    int64_t perBlock = kFlatThreads * chooseVectorWidth(kernel, output);
    outputBlocks = (estimatedNumElements(outputBuffer.type) + perBlock - 1) / perBlock;
  }
  double outputBytes =
      double(estimatedNumElements(outputBuffer.type) * dtypeBytes(outputBuffer.type.getDType()));
  SplitReductionCost estimate =
      estimateSplitReduction(steps, outputWork, outputReads, outputBytes, candidate.rowCount,
                             rowReductionThreads(longest, false), outputBlocks, target);
  std::string reason;
  llvm::raw_string_ostream os(reason);
  os << candidate.rowCount << " row(s) of " << longest << " elements: ";
  if (steps.size() > 1)
    os << steps.size() << " reductions, the first in ";
  os << splits.front().partials << " partial reductions of "
     << (splits.front().guarded ? "at most " : "") << perPartial.front() << " elements per row";
  if (!foldInOutput)
    os << ", each folded by a launch of its own, then the output by a flat launch";
  os.flush();
  std::string action = estimate.split() ? "split" : "keep";
  PassContext *pass = cost.pass;
  if (pass && pass->remarks)
    *pass->remarks << "remark: schedule: @" << kernel.name << ": " << names << ": " << action
                   << " (" << reason << "; estimated us: one block per row "
                   << llvm::format("%.3f", estimate.rowsUs) << ", split "
                   << llvm::format("%.3f", estimate.splitUs) << " on " << target.name << ")\n";
  if (pass && pass->report)
    pass->report->decisions.push_back(
        {"schedule",
         kernel.name,
         action,
         reason,
         {{"reduction", names}, {"partials", std::to_string(splits.front().partials)}},
         {{"rows_us", estimate.rowsUs},
          {"split_us", estimate.splitUs},
          {"chosen_us", std::min(estimate.rowsUs, estimate.splitUs)}}});
  if (!estimate.split())
    return false;
  // Step 4, the last reduction first so that the earlier indices hold.
  std::string outputName = output.buffer;
  std::map<std::string, int64_t> partialThreads, foldThreads;
  std::vector<std::string> partialNames(steps.size());
  for (size_t k = steps.size(); k-- > 0;) {
    foldThreads[kernel.stages[candidate.reductions[k]].buffer] = steps[k].foldThreads;
    rewriteKernel(kernel, candidate.reductions[k], candidate.rows, splits[k], partialNames[k]);
    partialThreads[partialNames[k]] = steps[k].chunkThreads;
  }
  // Declared in stage order.
  std::reverse(kernel.internals.end() - std::ptrdiff_t(steps.size()), kernel.internals.end());
  schedule = splitSchedule(kernel, candidate, outputName, partialThreads, foldThreads);
  for (size_t k = 0; k < steps.size(); ++k)
    why += (k ? ", " : "; split into ") + std::to_string(splits[k].partials) +
           " partial reductions per row (%" + partialNames[k] + ", " +
           std::to_string(steps[k].chunkThreads) + " threads each)";
  if (!foldInOutput)
    why += ", folded by launches of their own, the output flat";
  return true;
}
