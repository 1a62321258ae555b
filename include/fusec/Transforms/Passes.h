//===- Passes.h - Factories of every fusec pass ------------------*- C++ -*-===//
//
// One factory per pass; each pass lives in its own file in lib/Transforms/
// and is registered from lib/Transforms/Passes.def.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TRANSFORMS_PASSES_H
#define FUSEC_TRANSFORMS_PASSES_H

#include "fusec/IR/Pattern.h"
#include "fusec/Pass/Pass.h"

#include <memory>

namespace fusec {

/// `dce`: dead bindings and functions unreachable from an entry point.
std::unique_ptr<Pass> createDCEPass();

/// `fuse-by-pattern`: matches of the `patterns` file become composite
/// functions (TVM's FuseOpsByPattern).
std::unique_ptr<Pass> createFuseByPatternPass();
/// The same pass with patterns built in C++ (each may carry a `check`
/// callback); a `patterns` file, if also given, is matched after them.
std::unique_ptr<Pass> createFuseByPatternPass(std::vector<DataflowPattern> patterns,
                                              bool bindConstants = true,
                                              bool annotateCodegen = false);

/// `legalize`: graph ops to call_kernel + kernel definitions.
std::unique_ptr<Pass> createLegalizePass();

/// `annotate-pattern`: the op_pattern attribute of every kernel.
std::unique_ptr<Pass> createAnnotatePatternPass();

/// `fuse-ops`: TVM's FuseOps on each dataflow block.
std::unique_ptr<Pass> createFuseOpsPass();

/// `fuse-tir`: each primitive function becomes one kernel.
std::unique_ptr<Pass> createFuseTIRPass();

/// `schedule`: a GPU schedule for every kernel (DLight-style rules).
std::unique_ptr<Pass> createSchedulePass();

/// `lower`: scheduled kernels to the loop-level form.
std::unique_ptr<Pass> createLowerPass();

/// `test-perturb-constants`: a deliberately wrong pass for tests.
std::unique_ptr<Pass> createTestPerturbConstantsPass();

} // namespace fusec

#endif // FUSEC_TRANSFORMS_PASSES_H
