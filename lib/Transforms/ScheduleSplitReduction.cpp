//===- ScheduleSplitReduction.cpp - Row reductions over few rows, split ---===//
//
// Contract (not TVM; with a target, cost-model=roofline): a kernel that the
// `reduction` rule took, whose one reduction has too few rows to fill the
// GPU (a full sum, the norm of a vector, a mean over a few huge rows) and
// whose output has one element per row, is split into partial reductions
// (TVM's rfactor primitive, Inductor's split reductions, XLA's multi-block
// row reductions) when the cost model finds that cheaper. One block per row
// leaves all but a few SMs idle, and each block draws only the bytes its
// loads in flight allow (estimateBlocksUs): a sum of 16 MiB in one block
// runs at a few percent of the memory bandwidth.
//
// Algorithm:
//   1. Qualify: one reduction stage `%r` of static rows R and a static
//      reduction domain; the output is `%r` or a spatial stage of shape R
//      (then 1s) reading it.
//   2. Partials P per row: enough blocks in all to saturate the memory
//      (chooseReductionPartials), each folding at least 1024 elements.
//      Split the first reduction variable whose extent reaches P (else
//      the widest), `r = p * C + r'`: an exact divisor of its extent near P
//      where there is one, else C = ceil(extent / P) with a guard that
//      gives the combiner's identity past the end.
//   3. Estimate one block per row against the split (two launches, the
//      partials written and read back); keep the rule's schedule unless the
//      split is faster. Either way, a remark and a report decision give both.
//   4. Rewrite: `internal %r_rf: acc[R..., P]`, the stage
//      `%r_rf[i..., p] = reduce(body) over (r': C, ...) init identity`
//      before `%r`, and `%r[i...] = reduce(%r_rf[i..., r0]) over (r0: P)`
//      with `%r`'s init; schedule `%r_rf: materialize rows(...)` (one block
//      per partial), `%r` reduced by the output's blocks, spatial stages
//      inlined.
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <numeric>

using namespace fusec;

namespace {
/// What step 1 finds.
struct SplitCandidate {
  size_t reduction = 0; // index in kernel.stages
  const KStage *output = nullptr;
  std::vector<Dim> rows;
  int64_t rowCount = 1, reduced = 1;
};

bool findCandidate(const Kernel &kernel, SplitCandidate &candidate) {
  if (kernel.outputs.size() != 1)
    return false;
  int reductions = 0;
  for (size_t i = 0; i < kernel.stages.size(); ++i) {
    const KStage &stage = kernel.stages[i];
    if (stage.isReduction()) {
      ++reductions;
      candidate.reduction = i;
    }
    if (!isInternal(kernel, stage))
      candidate.output = &stage;
  }
  if (reductions != 1 || !candidate.output)
    return false;
  const KStage &reduction = kernel.stages[candidate.reduction];
  const Type &type = kernel.findBuffer(reduction.buffer)->type;
  const Type &outputType = kernel.findBuffer(candidate.output->buffer)->type;
  if (hasSymbolicDims(type) || hasSymbolicDims(outputType))
    return false;
  candidate.rows = withoutTrailingOnes(type.getShape());
  if (withoutTrailingOnes(outputType.getShape()) != candidate.rows)
    return false;
  for (const Dim &dim : candidate.rows)
    candidate.rowCount *= dim.size;
  for (const auto &[var, extent] : reduction.reduceVars) {
    if (extent.isSymbolic())
      return false;
    candidate.reduced *= extent.size;
  }
  return true;
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
void rewriteKernel(Kernel &kernel, const SplitCandidate &candidate, const Split &split,
                   std::string &partialName) {
  KStage &reduction = kernel.stages[candidate.reduction];
  partialName = freshName(reduction.buffer + "_rf",
                          [&](llvm::StringRef name) { return kernel.findBuffer(name); });
  size_t rowRank = candidate.rows.size();
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
  std::vector<Dim> shape = candidate.rows;
  shape.push_back(Dim::of(split.partials));
  buffer.type = Type::tensor(reduction.accumulate, shape);
  kernel.internals.push_back(buffer);
  kernel.stages.insert(kernel.stages.begin() + std::ptrdiff_t(candidate.reduction),
                       std::move(partial));
}

KSchedule splitSchedule(const Kernel &kernel, const std::string &partialName,
                        const std::string &reductionName, const KStage &output,
                        int64_t chunkThreads, int64_t partialThreads, size_t rowRank) {
  KSchedule schedule;
  schedule.rule = "reduction";
  for (const KStage &stage : kernel.stages) {
    StageSchedule entry;
    entry.stage = stage.buffer;
    if (stage.buffer == partialName) {
      entry.mapping.kind = StageMapping::Rows;
      entry.mapping.threads = chunkThreads;
    } else if (stage.buffer == output.buffer) {
      entry.mapping.kind = StageMapping::Rows;
      entry.mapping.threads = partialThreads;
      entry.mapping.inner = kernel.findBuffer(output.buffer)->type.getRank() - int64_t(rowRank);
    } else if (stage.buffer == reductionName) {
      entry.placement = StageSchedule::ComputeAt;
      entry.consumer = output.buffer;
      entry.level = StageSchedule::Block;
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
  int64_t partials = chooseReductionPartials(candidate.rowCount, candidate.reduced, target);
  if (partials < 2)
    return false;
  const KStage &reduction = kernel.stages[candidate.reduction];
  Split split = chooseSplit(reduction, partials);
  if (split.partials < 2)
    return false;
  // Step 3, over the stages as `lower` sees them (spatial internals inlined).
  std::vector<KStage> inlined = inlineSpatialInternals(kernel);
  double work = 0;
  for (const KStage &stage : inlined)
    if (!isInternal(kernel, stage) || stage.isReduction())
      work += expressionWork(*stage.body, target, {}) * stageIterations(kernel, stage);
  double inputBytes = 0;
  for (const KBuffer &input : kernel.inputs)
    inputBytes += double(estimatedNumElements(input.type) * dtypeBytes(input.type.getDType()));
  const KBuffer &outputBuffer = *kernel.findBuffer(candidate.output->buffer);
  double outputBytes =
      double(estimatedNumElements(outputBuffer.type) * dtypeBytes(outputBuffer.type.getDType()));
  int64_t rowThreads = rowReductionThreads(candidate.reduced, false);
  int64_t perPartial =
      split.chunk * (candidate.reduced / reduction.reduceVars[split.var].second.size);
  int64_t chunkThreads = rowReductionThreads(perPartial, false);
  int64_t partialThreads = rowReductionThreads(split.partials, false);
  SplitReductionCost estimate = estimateSplitReduction(
      work, inputBytes, outputBytes, candidate.rowCount, split.partials,
      dtypeBytes(reduction.accumulate), rowThreads, chunkThreads, partialThreads, target);
  std::string reductionName = reduction.buffer;
  std::string reason;
  llvm::raw_string_ostream os(reason);
  os << candidate.rowCount << " row(s) of " << candidate.reduced << " elements: " << split.partials
     << " partial reductions of " << (split.guarded ? "at most " : "") << perPartial
     << " elements per row";
  os.flush();
  std::string action = estimate.split() ? "split" : "keep";
  PassContext *pass = cost.pass;
  if (pass && pass->remarks)
    *pass->remarks << "remark: schedule: @" << kernel.name << ": %" << reductionName << ": "
                   << action << " (" << reason << "; estimated us: one block per row "
                   << llvm::format("%.3f", estimate.rowsUs) << ", split "
                   << llvm::format("%.3f", estimate.splitUs) << " on " << target.name << ")\n";
  if (pass && pass->report)
    pass->report->decisions.push_back(
        {"schedule",
         kernel.name,
         action,
         reason,
         {{"reduction", "%" + reductionName}, {"partials", std::to_string(split.partials)}},
         {{"rows_us", estimate.rowsUs},
          {"split_us", estimate.splitUs},
          {"chosen_us", std::min(estimate.rowsUs, estimate.splitUs)}}});
  if (!estimate.split())
    return false;
  std::string outputName = candidate.output->buffer;
  std::string partialName;
  rewriteKernel(kernel, candidate, split, partialName);
  schedule = splitSchedule(kernel, partialName, reductionName, *kernel.findStage(outputName),
                           chunkThreads, partialThreads, candidate.rows.size());
  why += "; split into " + std::to_string(split.partials) + " partial reductions per row (%" +
         partialName + ", " + std::to_string(chunkThreads) + " threads each)";
  return true;
}
