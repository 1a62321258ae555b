//===- FusePrologues.h - Cost-aware decisions of fuse-ops -------*- C++ -*-===//
//
// fuse-ops{prologue=true}: after TVM's partition, an elementwise producer
// group that only a contraction reads joins the contraction's group when the
// cost model says so (FusePrologues.cpp); fuse-ops{recompute-veto=true}: a
// producer that a reduction's or contraction's loop would recompute per
// broadcast element leaves the group when that costs more than its own
// kernel (RecomputeVeto.cpp). Not a public header.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TRANSFORMS_FUSEPROLOGUES_H
#define FUSEC_LIB_TRANSFORMS_FUSEPROLOGUES_H

#include "fusec/Analysis/Analysis.h"
#include "fusec/Pass/Pass.h"

#include <optional>
#include <set>
#include <vector>

namespace fusec {

/// Merges prologue groups into contraction groups in `partition`; returns
/// the nodes that joined as prologues. Every decision (fused or not) is a
/// remark and a report decision with both estimates.
std::set<int> mergePrologues(const Module &module, const Function &function,
                             const FusionGraph &graph, Partition &partition,
                             const TargetDesc &target, PassContext &context);

/// XLA-style veto (not TVM): in a group whose kernel the reduction or
/// matmul rule will schedule (both inline spatial producers into their
/// loops), a member read through a broadcast (its consumer in the group has
/// more elements) is recomputed for each of them; when the cost model says
/// that costs more than its own launch and round trip, the member and the
/// producers only it reads leave the group. Returns the nodes moved out;
/// every decision is a remark and a report decision.
std::set<int> vetoRecomputation(const Module &module, const Function &function,
                                const FusionGraph &graph, Partition &partition,
                                const TargetDesc &target, PassContext &context);

/// `shape` without its trailing 1s.
std::vector<Dim> withoutTrailingOnes(const Shape &shape);
/// Whether a row kernel whose output has type `output` can hold row
/// buffers of its reductions' `rows` (ScheduleRowStages.cpp): the output
/// has dims beyond them that are not all 1 (not a mean {keepdims}, whose
/// kept 1s the reduction rule may keep in its rows).
bool hasRowsBeyond(const Type &output, llvm::ArrayRef<Dim> rows);

/// The rows R of a group without a contraction (`members`: its nodes)
/// whose reductions all reduce rows R along their innermost axis (each of
/// shape R then 1s, as the reduction rule sees it: spatial internals
/// inlined): a member of shape R then 1s is a row value, which that rule can
/// compute once per row at the block instead of inlining it. Nullopt for
/// any other group, and for a group without reductions.
std::optional<std::vector<Dim>> rowReductionRows(const Module &module, const FusionGraph &graph,
                                                 const std::vector<int> &members,
                                                 bool hasContraction);

/// fuse-ops{merge-reductions=true} (MergeRowReductions.cpp): a group of row
/// reductions and the groups that read it, each a group of row reductions
/// over the same rows or elementwise work on those rows, become one group
/// when the cost model says so (a written-out layer norm or softmax).
/// Returns the nodes that moved; every decision is a remark and a report
/// decision with both estimates.
std::set<int> mergeRowReductions(const Module &module, const Function &function,
                                 const FusionGraph &graph, Partition &partition,
                                 const PartitionOptions &options, const TargetDesc &target,
                                 PassContext &context);

/// Whether a stage of `kernel` is a contraction (a matmul or convolution).
bool hasContraction(const Kernel &kernel);
/// Whether a stage of `kernel` is a reduction.
bool hasReduction(const Kernel &kernel);
/// The expression work of all of `kernel`'s stages per element, in FMA
/// slots (what one evaluation of its result costs, every stage inlined).
double kernelWork(const Kernel &kernel, const TargetDesc &target);
/// How many times `kernel`'s loops, spatial internals inlined (as the
/// reduction and fallback rules run them), read `buffer` in all.
double countInlinedReads(const Kernel &kernel, llvm::StringRef buffer);

/// The first of a group's nodes `members` (in order) that is its
/// contraction (a call_kernel of a matmul or convolution kernel), or -1.
int findContraction(const Module &module, const FusionGraph &graph, llvm::ArrayRef<int> members);

/// For fuse-by-pattern{prologue-aware=true}: why a library match should be
/// left to fusec's own kernel (an operand of its matmul comes from a chain of
/// single-use elementwise ops that the same estimate would fuse as a
/// prologue, which a library call cannot apply), or "" — then `separate`
/// says why a candidate prologue stays its own kernel, if there was one.
/// `estimate` holds the last prologue estimate made (rereads 0: none).
std::string libraryPrologueVeto(const PatternMatch &match, const BlockIndex &block,
                                const UseMap &uses, const TargetDesc &target, std::string &separate,
                                PrologueCost &estimate);

} // namespace fusec

#endif
