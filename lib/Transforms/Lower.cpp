//===- Lower.cpp - Scheduled kernels to the loop-level form ---------------===//
//
// Contract: every kernel with a schedule becomes a lowered kernel: launches
// of thread blocks with shared and local buffers, barriers, warp shuffles
// and loops (docs/ir.md#the-lowered-form). This is the form CUDA C is
// generated from and the form the interpreter runs, so its counters are
// those of the emitted code. Kernels already lowered are left alone; a
// kernel without a schedule is an error (run `schedule` first).
//
// Algorithm, per kernel (LowerKernel.cpp has the details):
//   1. substitute inline stages into their readers;
//   2. per root stage, one launch laid out by its mapping (flat or rows),
//      with the stages computed at it emitted first in the same blocks;
//   3. verify the result (a failure is a bug of this pass: exit code 3).
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"
#include "fusec/Transforms/Passes.h"

#define DEBUG_TYPE "lower"

using namespace fusec;

FUSEC_STATISTIC(NumLoweredKernels, "num-lowered-kernels", "Number of kernels lowered");
FUSEC_STATISTIC(NumLaunches, "num-launches", "Number of launches the lowered kernels make");

namespace {
class Lower : public Pass {
public:
  Lower() : Pass("lower") {}

  bool run(Module &module, PassContext &context) override {
    for (auto &kernel : module.kernels) {
      if (kernel->isLowered())
        continue;
      if (!lowerKernel(*kernel, context.diag, context.remarks))
        return false;
      if (!verifyKernel(*kernel, context.diag, "in lower (@" + kernel->name + ")")) {
        context.internalError = true;
        return false;
      }
      ++NumLoweredKernels;
      NumLaunches += kernel->launches.size();
      FUSEC_DEBUG("@" + kernel->name + ": " + std::to_string(kernel->launches.size()) +
                  " launch(es)");
    }
    return true;
  }
};
} // namespace

std::unique_ptr<Pass> fusec::createLowerPass() { return std::make_unique<Lower>(); }

#undef DEBUG_TYPE
