//===- ScheduleReduction.cpp - Row reductions -----------------------------===//
//
// Contract: applies to kernels with one output whose reductions all have
// the same spatial shape R (the rows; up to trailing kept axes of size 1),
// reduce along the innermost axis of some input (a row, not a column,
// reduction), are not contractions
// (matmul, convolution: a product of loads, one of which some output rows
// share — those go to the fallback until they get a rule of their own) and
// are read only within their own row; the output's leading dims are R (a
// keepdims reduction's trailing 1s are never in R: `x - mean(x)
// {keepdims}`, or a reduction reading it at coordinate 0 there). Typical: sum/mean/max over the
// last axis, softmax, layer_norm, decomposed norms, and their fused elementwise prologues and
// epilogues.
//
// Schedule (TVM DLight's GeneralReduction, in this IR's terms):
//   1. spatial internal stages: inline (recomputed per use, as in TVM);
//   2. reductions: compute_at(output, block): one block per row reduces
//      it with strided loads, warp shuffles and shared memory;
//   3. the output: rows(threads, vector, inner = rank - |R|), threads the
//      smallest power of two >= the reduced extent within [32, 256]; an
//      output that is a reduction itself is reduced by the block too, its
//      inner dims (kept axes of size 1) at coordinate 0.
// With a target (cost-model=roofline), row values (one per row) and row
// buffers (whole rows) may instead be computed once per row at the block
// into shared memory, where the cost model finds that cheaper than
// inlining them at every read (ScheduleRowStages.cpp).
// Rows of fewer than 32 elements (a 3 x 3 pooling window, a mean over 8)
// are left to the fallback rule when it would materialize nothing: a warp
// per row would leave most lanes idle and spend five shuffle rounds per
// row, where a thread per row reduces it serially in registers, 32 rows to
// a warp (PyTorch's reductions do the same for short rows).
//
//===----------------------------------------------------------------------===//
#include "FusePrologues.h"
#include "ScheduleRules.h"

using namespace fusec;

/// Threads per warp: a row reduction's smallest block.
static constexpr int64_t kWarpLanes = 32;

static bool loadsInputAlongReduction(const KExpr &body, const Kernel &kernel, const KStage &stage) {
  if (body.kind == KExpr::Load && !body.args.empty()) {
    const KBuffer *buffer = kernel.findBuffer(body.name);
    if (buffer && buffer->role == KBuffer::Input)
      for (const auto &reduce : stage.reduceVars)
        if (usesVar(*body.args.back(), reduce.first))
          return true;
  }
  for (const KExprPtr &arg : body.args)
    if (arg && loadsInputAlongReduction(*arg, kernel, stage))
      return true;
  return false;
}

bool fusec::reducesInnermost(const Kernel &kernel, const KStage &stage) {
  return loadsInputAlongReduction(*stage.body, kernel, stage);
}

static void collectLoads(const KExpr &e, std::vector<const KExpr *> &loads) {
  if (e.kind == KExpr::Load)
    loads.push_back(&e);
  for (const KExprPtr &arg : e.args)
    if (arg)
      collectLoads(*arg, loads);
}

/// A sum of products one of whose factors is shared by several outputs
/// (leaves out a spatial variable): the multiply-accumulate of a matmul or
/// a convolution. A factor that an output dimension's variable enters only
/// through a broadcast operand (a position embedding `p[0, i1, r0]` added
/// to `x[i0, i1, r0]`) still depends on it, so a sum of squares of such a
/// sum is none; nor is one into a keepdims axis (`sum(x * x)` into [m, 1]),
/// whose variable spans one output.
static bool isContraction(const Kernel &kernel, const KStage &stage) {
  if (stage.combiner != "add")
    return false;
  const KExpr *body = stage.body.get();
  while (body->kind == KExpr::Cast)
    body = body->args[0].get();
  if (body->kind != KExpr::Call || body->name != "multiply")
    return false;
  std::vector<const KExpr *> left, right;
  collectLoads(*body->args[0], left);
  collectLoads(*body->args[1], right);
  if (left.empty() || right.empty())
    return false;
  const Shape &shape = kernel.findBuffer(stage.buffer)->type.getShape();
  for (const KExprPtr &factor : body->args)
    for (size_t d = 0; d < stage.spatialVars.size() && d < shape.size(); ++d)
      if (!shape[d].isOne() && !usesVar(*factor, stage.spatialVars[d]))
        return true;
  return false;
}

/// Whether the fallback rule would compute every internal reduction in the
/// threads of its one reader, materializing nothing.
static bool reduceInReaderThreads(const Kernel &kernel, const std::vector<KStage> &stages) {
  for (size_t i = 0; i < stages.size(); ++i)
    if (isInternal(kernel, stages[i]) && stages[i].isReduction() &&
        !findSoleOwnIndexReader(kernel, stages, i))
      return false;
  return true;
}

int64_t fusec::rowReductionThreads(int64_t reduced, bool symbolic) {
  int64_t threads = kWarpLanes;
  while (threads < 256 && (symbolic || threads < reduced))
    threads *= 2;
  return threads;
}

bool fusec::scheduleRowReduction(const Kernel &kernel, KSchedule &schedule, std::string &why,
                                 const ScheduleCostContext &cost) {
  if (kernel.outputs.size() != 1)
    return why = "more than one output", false;
  std::vector<KStage> stages = inlineSpatialInternals(kernel);
  const KStage *output = nullptr;
  std::vector<const KStage *> reductions;
  for (const KStage &stage : stages) {
    if (!isInternal(kernel, stage))
      output = &stage;
    if (stage.isReduction())
      reductions.push_back(&stage);
  }
  if (reductions.empty() || !output)
    return why = "no reduction", false;
  // The rows: the reductions' shape, up to kept (keepdims) axes of size 1,
  // as the fewest dims among them have it (a merged norm's `sum` into [m]
  // beside a `mean {keepdims}` into [m, 1]).
  std::vector<Dim> rows = kernel.findBuffer(reductions.front()->buffer)->type.getShape();
  for (const KStage *reduction : reductions) {
    const Shape &shape = kernel.findBuffer(reduction->buffer)->type.getShape();
    if (withoutTrailingOnes(shape) != withoutTrailingOnes(rows))
      return why = "reductions of different shapes", false;
    if (shape.size() < rows.size())
      rows = shape;
  }
  int64_t reduced = 1;
  bool symbolicReduction = false;
  for (const KStage *reduction : reductions) {
    if (!reducesInnermost(kernel, *reduction))
      return why = "'%" + reduction->buffer + "' reduces a column, not a row", false;
    if (isContraction(kernel, *reduction))
      return why = "'%" + reduction->buffer + "' is a contraction", false;
    int64_t extent = 1;
    for (const auto &[var, dim] : reduction->reduceVars) {
      symbolicReduction |= dim.isSymbolic();
      extent *= dim.isSymbolic() ? 1 : dim.size;
    }
    reduced = std::max(reduced, extent);
  }
  const Type &outputType = kernel.findBuffer(output->buffer)->type;
  auto outputHasRows = [&] {
    if (outputType.getRank() < int64_t(rows.size()))
      return false;
    for (size_t d = 0; d < rows.size(); ++d)
      if (!(outputType.getShape()[d] == rows[d]))
        return false;
    return true;
  };
  // A keepdims reduction (`mean(x) {keepdims}`: [m, 1]): the rows are [m],
  // the 1s its reduced axes, which a reader (`x - mean`: [m, n], a variance
  // `mean((x - mean)^2) {keepdims}`, an ArgMax's `min` of where the `max`
  // is hit) reads at coordinate 0 of its own dims there.
  rows = withoutTrailingOnes(rows);
  if (!outputHasRows())
    return why = "the output does not have the reductions' rows", false;
  // Every reader of a reduction reads its own row.
  for (const KStage &reader : stages) {
    if (isInternal(kernel, reader) && !reader.isReduction())
      continue; // inlined; its reads moved into the stages checked here
    std::vector<std::string> rowVars(reader.spatialVars.begin(),
                                     reader.spatialVars.begin() +
                                         std::min(rows.size(), reader.spatialVars.size()));
    if (rowVars.size() != rows.size())
      return why = "'%" + reader.buffer + "' does not have the reductions' rows", false;
    for (const KStage *reduction : reductions)
      if (!readsAtOwnIndex(*reader.body, reduction->buffer, rowVars, false))
        return why = "'%" + reader.buffer + "' reads '%" + reduction->buffer +
                     "' outside its own row",
               false;
  }
  if (!symbolicReduction && reduced < kWarpLanes && reduceInReaderThreads(kernel, stages))
    return why = "rows of " + std::to_string(reduced) + " elements, fewer than a warp's " +
                 std::to_string(kWarpLanes) + " lanes: a thread per row reduces it serially",
           false;
  int64_t threads = rowReductionThreads(reduced, symbolicReduction);
  why = std::to_string(reductions.size()) + " row reduction(s) over " +
        std::to_string(reduced) + (symbolicReduction ? "+" : "") + " elements; " +
        std::to_string(threads) + " threads per row";
  schedule.rule = "reduction";
  for (const KStage &stage : kernel.stages) {
    StageSchedule entry;
    entry.stage = stage.buffer;
    if (stage.buffer == output->buffer) {
      entry.mapping.kind = StageMapping::Rows;
      entry.mapping.threads = threads;
      // A reduction as the output may keep reduced axes that the other
      // reductions drop (a sum {keepdims} into [m, 1] beside sums into
      // [m]): its inner dims are those 1s, stored at coordinate 0.
      entry.mapping.inner = outputType.getRank() - int64_t(rows.size());
      entry.mapping.vector =
          entry.mapping.inner > 0 && !stage.isReduction() ? chooseVectorWidth(kernel, stage) : 1;
    } else if (stage.isReduction()) {
      entry.placement = StageSchedule::ComputeAt;
      entry.consumer = output->buffer;
      entry.level = StageSchedule::Block;
    } else {
      entry.placement = StageSchedule::Inline;
    }
    schedule.stages.push_back(std::move(entry));
  }
  if (cost.target)
    placeRowStages(kernel, rows, *output, schedule, cost);
  return true;
}
