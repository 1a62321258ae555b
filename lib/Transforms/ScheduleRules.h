//===- ScheduleRules.h - The schedule rules (private) -----------*- C++ -*-===//
//
// Each rule, in the spirit of TVM's DLight rules, looks at a kernel and
// either fills in a schedule or declines. `schedule` (Schedule.cpp) tries
// them in order: elementwise, row reduction, fallback (which never
// declines).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TRANSFORMS_SCHEDULERULES_H
#define FUSEC_LIB_TRANSFORMS_SCHEDULERULES_H

#include "fusec/Analysis/Analysis.h"
#include "fusec/IR/Kernel.h"
#include "fusec/Pass/Pass.h"

#include <set>

namespace fusec {

/// Threads per block of the flat mappings.
constexpr int64_t kFlatThreads = 256;

/// The stages' bodies with every spatial internal stage inlined, as `lower`
/// will see them under a schedule that inlines those stages.
std::vector<KStage> inlineSpatialInternals(const Kernel &kernel);
/// The stages with the stages `inlined(j)` substituted into later ones,
/// except those past kMaxInlinedNodes (which `lower` materializes).
std::vector<KStage> inlineStagesWhere(const Kernel &kernel,
                                      llvm::function_ref<bool(size_t)> inlined);
bool isInternal(const Kernel &kernel, const KStage &stage);
/// Whether the reduction `stage` (spatial internals inlined into it) reads
/// some input with a reduction variable in its last index: a row, not a
/// column, reduction.
bool reducesInnermost(const Kernel &kernel, const KStage &stage);
/// How often `stage` runs its body: once per element, times the reduced
/// extents (symbolic dims as kSymbolicDimEstimate).
double stageIterations(const Kernel &kernel, const KStage &stage);
/// How many times `stages` read `buffer` in all, each load counting its
/// stage's iterations (stageIterations), leaving out the stages `inlined`
/// names (their loads are counted where they were substituted).
double countReads(const Kernel &kernel, llvm::ArrayRef<KStage> stages,
                  llvm::function_ref<bool(const KStage &)> inlined, llvm::StringRef buffer);
/// The widest vector (at most 16 bytes) that divides the stage's static
/// last dim; 1 for reductions, 0-d stages and symbolic last dims.
int64_t chooseVectorWidth(const Kernel &kernel, const KStage &stage);
/// Whether every load of `producer` in `body` has `vars` as its first
/// indices (and, with `exact`, no other indices).
bool readsAtOwnIndex(const KExpr &body, llvm::StringRef producer,
                     const std::vector<std::string> &vars, bool exact);
/// Whether `epilogue` reads the contraction `core` only at its own index
/// and over the same shape, so that tiles covering the contraction store
/// every epilogue element once (a channel slice at offset 0 reads at its
/// own index but over fewer channels).
bool isTiledEpilogue(const Kernel &kernel, const KStage &epilogue, const KStage &core);

/// A contraction `out[s] = sum_r X(s, r) * Y(s, r)` seen as a (batched)
/// GEMM: spatial variables that only X's loads use are M, only Y's are N,
/// both are batch; K is the reduction domain. A grouped convolution's
/// output channel `c` is read by X only as `floordiv(c, f)` (its group) and
/// by Y whole: it is split into `c = g * f + j`, the group `g` a batch
/// variable and `j` (the channel within the group) an N variable. The
/// operands are kept as expressions over `vars` (anything inlined into
/// them, a prologue, comes along); `xDType`/`yDType` are what a tile holds:
/// the operand before its conversion to the accumulation dtype, which is
/// applied as the tile is read.
struct Contraction {
  const KStage *stage = nullptr;
  std::vector<std::string> vars;     // the GEMM's spatial variables
  std::vector<Dim> extents;          // and their extents
  std::vector<KExprPtr> spatialOf;   // each of stage->spatialVars over `vars`
  std::vector<size_t> batch, m, n;   // positions in `vars`
  KExprPtr x, y;                     // operands, before the conversions
  DType xDType = DType::f32, yDType = DType::f32;
  int64_t groups = 1;                // a grouped convolution's groups

  /// The product of `dims`' extents, a symbolic one counted as `symbolic`.
  int64_t extent(const std::vector<size_t> &dims, int64_t symbolic) const;
  /// That product for a remark: "512", or with symbolic dims their names
  /// and the figure used, "4 x n (counted as 4096)".
  std::string describeExtent(const std::vector<size_t> &dims) const;
};
/// Recognizes a contraction (ScheduleMatmul.cpp); needs M and N non-empty.
bool analyzeContraction(const Kernel &kernel, const KStage &stage, Contraction &contraction);

/// What the cost-aware choices need: the target (null: TVM's choices, every
/// spatial internal stage inlined) and where to explain them.
struct ScheduleCostContext {
  const TargetDesc *target = nullptr;
  PassContext *pass = nullptr;
  /// False for GPUs without mma.sync m16n8k16 (before sm_80): SIMT tiles.
  bool tensorCores = true;
};

/// Each rule says in `why` why it applied or declined (--remarks).
/// No reductions: inline every internal stage, map outputs flat with
/// vector accesses. With a target, a producer that the output reads through
/// a broadcast is placed by the cost model instead (ScheduleBroadcast.cpp).
bool scheduleElementwise(const Kernel &kernel, KSchedule &schedule, std::string &why,
                         const ScheduleCostContext &cost);
/// The cost model's placement of broadcast producers in an elementwise
/// kernel's schedule (compute_at the output's blocks, or materialize);
/// leaves `schedule` as it is where inlining is cheapest.
void placeBroadcastProducers(const Kernel &kernel, KSchedule &schedule,
                             const ScheduleCostContext &cost);
/// Reductions that share their rows with the one output (row sums,
/// softmax, layer_norm, mean): one block per row, reductions computed at
/// block level, spatial stages inlined.
/// With a target: the `reduction` rule's row values and row buffers that
/// the cost model places at the block (ScheduleRowStages.cpp); `rows` are
/// the reductions' rows, `output` the kernel's output stage.
void placeRowStages(const Kernel &kernel, const std::vector<Dim> &rows, const KStage &output,
                    KSchedule &schedule, const ScheduleCostContext &cost);
bool scheduleRowReduction(const Kernel &kernel, KSchedule &schedule, std::string &why,
                          const ScheduleCostContext &cost);
/// The threads of a block that reduces rows of `reduced` elements: the
/// smallest power of two at least that, within [32, 256] (256 when
/// `symbolic`).
int64_t rowReductionThreads(int64_t reduced, bool symbolic);
/// With a target (not TVM): a kernel the reduction rule took whose
/// reductions have too few rows to fill the GPU, split into partial
/// reductions (rfactor) when the cost model finds that faster
/// (ScheduleSplitReduction.cpp). Rewrites `kernel`'s
/// stages and replaces `schedule`; false (both untouched) otherwise.
bool splitRowReduction(Kernel &kernel, KSchedule &schedule, std::string &why,
                       const ScheduleCostContext &cost);
/// A contraction with at least a 16 x 16 output tile per batch, alone or
/// with an elementwise epilogue: tiles through shared memory (with a target,
/// tiles small enough to give every SM a block).
bool scheduleMatmul(const Kernel &kernel, KSchedule &schedule, std::string &why,
                    const ScheduleCostContext &cost);
/// The one stage after `stages[producer]` (not an inlined spatial internal)
/// that reads it, when there is one and it reads it only at its own index,
/// element by element: the producer can then be computed in that stage's
/// threads. Null otherwise.
const KStage *findSoleOwnIndexReader(const Kernel &kernel, const std::vector<KStage> &stages,
                                     size_t producer);
/// Anything else: spatial stages inlined, a reduction read element-wise by
/// one stage computed in that stage's threads, every other reduction
/// materialized; outputs flat.
void scheduleFallback(const Kernel &kernel, KSchedule &schedule);

} // namespace fusec

#endif
