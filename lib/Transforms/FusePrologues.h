//===- FusePrologues.h - Cost-aware prologue fusion for fuse-ops -*- C++ -*-===//
//
// fuse-ops{prologue=true}: after TVM's partition, an elementwise producer
// group that only a contraction reads joins the contraction's group when the
// cost model says so (FusePrologues.cpp). Not a public header.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TRANSFORMS_FUSEPROLOGUES_H
#define FUSEC_LIB_TRANSFORMS_FUSEPROLOGUES_H

#include "fusec/Analysis/Analysis.h"
#include "fusec/Pass/Pass.h"

#include <set>

namespace fusec {

/// Merges prologue groups into contraction groups in `partition`; returns
/// the nodes that joined as prologues. Every decision (fused or not) is a
/// remark and a report decision with both estimates.
std::set<int> mergePrologues(const Module &module, const Function &function,
                             const FusionGraph &graph, Partition &partition,
                             const TargetDesc &target, PassContext &context);

/// The node of `group`'s contraction (a call_kernel of a matmul or
/// convolution kernel), or -1.
int findContraction(const Module &module, const FusionGraph &graph,
                    const Partition &partition, int group);

} // namespace fusec

#endif
