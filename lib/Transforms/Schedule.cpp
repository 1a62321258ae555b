//===- Schedule.cpp - Choose a GPU schedule for every kernel --------------===//
//
// Contract: every kernel without a schedule (and not yet lowered) gets one,
// printed with the kernel: a placement per stage (inline, compute_at a
// consumer's block or thread, or root; an internal root is materialized in
// global memory) and a mapping per root (flat or rows, threads, vector
// width). A kernel that already has a schedule keeps it, as a kernel that
// already has an op_pattern keeps it.
//
// Algorithm: try the rules in order; the first that applies decides
//   1. elementwise (ScheduleElementwise.cpp): no reductions; with
//      cost-model=roofline, broadcast producers placed by estimated time
//      (ScheduleBroadcast.cpp, lib/Analysis/CostModel.cpp);
//   2. matmul (ScheduleMatmul.cpp): a contraction (matmul, batched matmul,
//      convolution) with its prologues and elementwise epilogue, tiled;
//   3. reduction (ScheduleReduction.cpp): row reductions with their
//      elementwise prologues and epilogues; with cost-model=roofline, row
//      values (a chain on a row's mean) placed by estimated time, and a
//      reduction over too few rows to fill the GPU split into partial
//      reductions (ScheduleSplitReduction.cpp);
//   4. fallback (ScheduleFallback.cpp): everything else.
// The schedule is verified against the stages (a failure is a bug of a
// rule: exit code 3).
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"
#include "fusec/Transforms/Passes.h"

#define DEBUG_TYPE "schedule"

using namespace fusec;

FUSEC_STATISTIC(NumElementwise, "num-elementwise", "Kernels scheduled by the elementwise rule");
FUSEC_STATISTIC(NumMatmul, "num-matmul", "Kernels scheduled by the matmul (tiled contraction) rule");
FUSEC_STATISTIC(NumReduction, "num-reduction", "Kernels scheduled by the row-reduction rule");
FUSEC_STATISTIC(NumSplit, "num-split-reduction",
                "Row reductions over few rows split into partial reductions");
FUSEC_STATISTIC(NumFallback, "num-fallback", "Kernels scheduled by the fallback rule");

namespace {
class Schedule : public Pass {
public:
  Schedule() : Pass("schedule") {
    declareOption("cost-model", OptionKind::String, "none",
                  "none: TVM's choices (inline every producer); roofline: place broadcast "
                  "producers and a reduction's row values and row buffers by estimated time, "
                  "and split a reduction over too few rows")
        .choices = {"none", "roofline"};
    declareOption("target", OptionKind::String, "sm_90",
                  "The cost model's GPU: sm_75, sm_80, sm_86, sm_89, sm_90, h200 or a JSON file")
        .check = checkTargetSpec;
    declareOption("tensor-cores", OptionKind::Bool, "true",
                  "false: SIMT tiles for f16/bf16 contractions too (GPUs before sm_80 lack "
                  "mma.sync m16n8k16)");
  }

  bool run(Module &module, PassContext &context) override {
    std::string costModel = getStringOption("cost-model");
    TargetDesc target;
    ScheduleCostContext cost;
    cost.pass = &context;
    cost.tensorCores = getBoolOption("tensor-cores");
    if (costModel == "roofline") {
      if (!loadTargetDesc(getStringOption("target"), target, context.diag, getName()))
        return false;
      cost.target = &target;
    } else if (costModel != "none") {
      context.diag.error({}, "schedule: unknown cost-model '" + costModel +
                                 "' (none or roofline)");
      return false;
    }
    ScheduleCostContext quiet = cost;
    quiet.pass = nullptr;
    for (auto &kernel : module.kernels) {
      if (kernel->isLowered() || !kernel->schedule.empty())
        continue;
      KSchedule schedule;
      std::string elementwise, matmul, reduction, why;
      if (scheduleElementwise(*kernel, schedule, elementwise, cost)) {
        ++NumElementwise;
        why = elementwise;
      } else if (scheduleMatmul(*kernel, schedule, matmul, cost)) {
        ++NumMatmul;
        why = matmul;
      } else if (scheduleRowReduction(*kernel, schedule, reduction, quiet)) {
        ++NumReduction;
        why = reduction;
        // A split replaces the rule's schedule, so its row-stage decisions
        // are reported (by running the rule again, to the same schedule)
        // only when the kernel keeps one block per row.
        if (splitRowReduction(*kernel, schedule, why, cost)) {
          ++NumSplit;
        } else if (cost.target && (context.remarks || context.report)) {
          schedule = KSchedule();
          scheduleRowReduction(*kernel, schedule, reduction, cost);
        }
      } else {
        schedule = KSchedule();
        scheduleFallback(*kernel, schedule);
        ++NumFallback;
        why = "not matmul: " + matmul + "; not reduction: " + reduction;
      }
      kernel->schedule = std::move(schedule);
      if (context.remarks)
        *context.remarks << "remark: schedule: @" << kernel->name << " by the '"
                         << kernel->schedule.rule << "' rule (" << why << ")\n";
      if (!verifyKernel(*kernel, context.diag, "in schedule (@" + kernel->name + ")")) {
        context.internalError = true;
        return false;
      }
    }
    return true;
  }
};
} // namespace

std::unique_ptr<Pass> fusec::createSchedulePass() { return std::make_unique<Schedule>(); }

#undef DEBUG_TYPE
