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

#include "fusec/IR/Kernel.h"

namespace fusec {

/// Threads per block of the flat mappings.
constexpr int64_t kFlatThreads = 256;

/// The stages' bodies with every spatial internal stage inlined, as `lower`
/// will see them under a schedule that inlines those stages.
std::vector<KStage> inlineSpatialInternals(const Kernel &kernel);
bool isInternal(const Kernel &kernel, const KStage &stage);
/// The widest vector (at most 16 bytes) that divides the stage's static
/// last dim; 1 for reductions, 0-d stages and symbolic last dims.
int64_t chooseVectorWidth(const Kernel &kernel, const KStage &stage);
/// Whether every load of `producer` in `body` has `vars` as its first
/// indices (and, with `exact`, no other indices).
bool readsAtOwnIndex(const KExpr &body, llvm::StringRef producer,
                     const std::vector<std::string> &vars, bool exact);

/// No reductions: inline every internal stage, map outputs flat with
/// vector accesses.
bool scheduleElementwise(const Kernel &kernel, KSchedule &schedule);
/// Reductions that share their rows with the one output (row sums,
/// softmax, layer_norm, mean): one block per row, reductions computed at
/// block level, spatial stages inlined.
bool scheduleRowReduction(const Kernel &kernel, KSchedule &schedule);
/// Anything else: spatial stages inlined, a reduction read element-wise by
/// one stage computed in that stage's threads, every other reduction
/// materialized; outputs flat.
void scheduleFallback(const Kernel &kernel, KSchedule &schedule);

} // namespace fusec

#endif
