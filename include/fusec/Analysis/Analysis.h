//===- Analysis.h - Analyses over kernels and graphs -------------*- C++ -*-===//
//
// The pattern-kind analysis of `annotate-pattern` (TVM's
// AnnotateTIROpPattern, transcribed in ../shared/reference/
// tvm-fusion-rules.md §2), with the per-operand access information TVM
// throws away: which input is read elementwise, which through a broadcast
// and by what factor. Later analyses (dominators, cost model) join here.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_ANALYSIS_ANALYSIS_H
#define FUSEC_ANALYSIS_ANALYSIS_H

#include "fusec/IR/Kernel.h"

#include <optional>

namespace fusec {

/// TVM's OpPatternKind lattice, same order and values; combining along a
/// path takes the max.
enum class OpPatternKind {
  ElemWise = 0,
  Broadcast = 1,
  Injective = 2,
  CommReduce = 3,
  OutEWiseFusable = 4,
  Tuple = 7,
  Opaque = 8,
};

llvm::StringRef patternKindName(OpPatternKind kind);
std::optional<OpPatternKind> parsePatternKind(llvm::StringRef name);

/// How one stage reads one buffer.
enum class AccessKind { ElemWise, Broadcast, Injective, Opaque };

struct OperandAccess {
  std::string buffer;
  AccessKind kind;
  /// For a broadcast read with static shapes: output elements per element
  /// read (4096 for [4096,1] read by a [4096,4096] stage); else 0.
  int64_t reuseFactor = 0;
};

struct KernelPatternInfo {
  OpPatternKind kind = OpPatternKind::ElemWise;
  /// One entry per (stage, load) of an input buffer, in stage order.
  std::vector<OperandAccess> inputAccesses;
};

/// Classifies `kernel` from the index expressions of its stages.
KernelPatternInfo analyzePatternKind(const Kernel &kernel);

} // namespace fusec

#endif // FUSEC_ANALYSIS_ANALYSIS_H
