//===- AnnotatePattern.cpp - Label kernels with their pattern kind --------===//
//
// Contract: every kernel without an `op_pattern` attribute gets
// `op_pattern = "<kind>"` (spec §5), the kind computed from its stages' index
// expressions by `analyzePatternKind` (lib/Analysis/PatternKind.cpp), never
// from op names. A kernel that already carries `op_pattern` keeps it, so a
// hand-written kernel can pin a kind (`tuple` included), as in TVM; the
// verifier has already refused an `op_pattern` that names no kind.
//
//===----------------------------------------------------------------------===//
#include "fusec/Analysis/Analysis.h"
#include "fusec/Transforms/Passes.h"

#define DEBUG_TYPE "annotate-pattern"

using namespace fusec;

FUSEC_STATISTIC(NumAnnotated, "num-annotated", "Number of kernels annotated");

namespace {
class AnnotatePattern final : public Pass {
public:
  AnnotatePattern() : Pass("annotate-pattern") {}
  bool run(Module &module, PassContext &context) override;
};
} // namespace

static const char *accessName(AccessKind kind) {
  switch (kind) {
  case AccessKind::ElemWise: return "elemwise";
  case AccessKind::Broadcast: return "broadcast";
  case AccessKind::Injective: return "injective";
  case AccessKind::Opaque: return "opaque";
  }
  return "";
}

bool AnnotatePattern::run(Module &module, PassContext &context) {
  for (auto &kernel : module.kernels) {
    if (kernel->attrs.get("op_pattern"))
      continue;
    if (kernel->isLowered()) {
      // Loops carry no index notation to analyse; like a TVM PrimFunc that
      // the analysis cannot read, the kernel is opaque and fuses with nothing.
      kernel->attrs.set("op_pattern", Attr::makeString("opaque"));
      ++NumAnnotated;
      continue;
    }
    KernelPatternInfo info = analyzePatternKind(*kernel);
    kernel->attrs.set("op_pattern", Attr::makeString(patternKindName(info.kind).str()));
    ++NumAnnotated;
    if (isDebugEnabled(DEBUG_TYPE)) {
      std::string accesses;
      for (const OperandAccess &access : info.inputAccesses)
        accesses += " %" + access.buffer + ":" + accessName(access.kind) +
                    (access.reuseFactor ? "x" + std::to_string(access.reuseFactor) : "");
      FUSEC_DEBUG("@" + kernel->name + " is " + patternKindName(info.kind).str() +
                  ";" + accesses);
    }
  }
  return true;
}

std::unique_ptr<Pass> fusec::createAnnotatePatternPass() {
  return std::make_unique<AnnotatePattern>();
}

#undef DEBUG_TYPE
