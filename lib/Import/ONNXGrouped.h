//===- ONNXGrouped.h - Grouped values, shared by their converters -*- C++ -*-===//
//
// The helpers of ONNXGrouped.cpp and ONNXGroupedAxes.cpp (see the notes at
// the top of each): how a grouped value's dims map to FIR axes, and the
// alignment of operands around one.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_IMPORT_ONNXGROUPED_H
#define FUSEC_LIB_IMPORT_ONNXGROUPED_H

#include "ONNXImporter.h"

namespace fusec::onnximport {

/// FIR dims for ONNX sizes: a size or one name as itself, a product as its
/// factors (the names, then the static factor), with the run of each.
struct GroupedShape {
  Shape shape;
  AxisRuns runs;
};
GroupedShape factorShape(const std::vector<SymbolicSize> &sizes);

/// The runs of input `i` (ones for a plain value or a constant of `rank`).
AxisRuns runsOrOnes(NodeContext &c, size_t i, size_t rank);

/// Reports that ONNX dim `dim` of input `input`, a product, meets `what`
/// ("Gather cannot index"), with the --dim options that avoid it; false.
bool failOnProduct(NodeContext &c, size_t input, size_t dim, const std::string &what);

/// One operand of a broadcast, and how many of its trailing dims stay out
/// of it (MatMul's matrix dims).
struct BroadcastOperand {
  size_t input;
  size_t trailing;
};
/// Aligns `operands` for a broadcast of their leading dims (substituting
/// reshaped operands); the runs of the broadcast dims, or nullopt after an
/// error. Dim `joined` (Concat's axis) may differ between the operands.
std::optional<AxisRuns> alignOperands(NodeContext &c,
                                      const std::vector<BroadcastOperand> &operands,
                                      std::optional<int64_t> joined = std::nullopt);

/// Every output the conversion defined gets `runs` (its FIR rank checked).
bool defineOutputsGrouped(NodeContext &c, const AxisRuns &runs);

/// An operator with axes on a grouped input (ONNXGroupedAxes.cpp): the
/// conversion's result, or nullopt when `c`'s operator has no axes to
/// renumber.
std::optional<bool> convertGroupedAxisOp(NodeContext &c, bool (*convert)(NodeContext &));

} // namespace fusec::onnximport

#endif // FUSEC_LIB_IMPORT_ONNXGROUPED_H
