//===- LowerKernel.h - Lowering one kernel (private) ------------*- C++ -*-===//
#ifndef FUSEC_LIB_TRANSFORMS_LOWERKERNEL_H
#define FUSEC_LIB_TRANSFORMS_LOWERKERNEL_H

#include "fusec/IR/Kernel.h"

namespace fusec {

/// Replaces `kernel`'s stages and schedule by launches (LowerKernel.cpp).
/// Returns false after a diagnostic when the schedule cannot be applied.
bool lowerKernel(Kernel &kernel, DiagEngine &diag);

} // namespace fusec

#endif
