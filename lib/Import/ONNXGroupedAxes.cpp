//===- ONNXGroupedAxes.cpp - Operators with axes on grouped values --------===//
//
// An operator with axes (an attribute, or a constant input) on a grouped
// value (ONNXImporter.h) is converted by its own converter on a copy of the
// node whose axes are FIR axes:
// 1. Each axis names an ONNX dim; the dims the operator indexes, slices,
//    splits, joins or normalizes must be plain (one FIR axis), except that
//    a reduction over a grouped dim reduces all its factors, and Softmax
//    before opset 13 (over the dims from its axis on) may start anywhere.
// 2. The copy's attribute is renumbered in place; an axes input becomes a
//    constant of the importer's own, named after the node's output.
// 3. The converter runs on the copy; what it read is marked read on the
//    node, and its outputs get the runs the operator leaves: Gather puts
//    the indices' dims (plain) in place of the indexed one, Unsqueeze adds
//    and Squeeze removes plain dims, reductions without keepdims drop the
//    reduced dims.
// A Gather along a leading dim that is a product is a flattened take
// (gatherFromProduct).
//
//===----------------------------------------------------------------------===//
#include "ONNXGrouped.h"

using namespace fusec;
using namespace fusec::onnximport;

/// The first FIR axis of each ONNX dim under `runs`, and the FIR rank last.
static std::vector<int64_t> firstAxes(const AxisRuns &runs) {
  std::vector<int64_t> first{0};
  for (int64_t run : runs)
    first.push_back(first.back() + run);
  return first;
}

/// The FIR axes of ONNX dims `dims` under `runs`.
static std::vector<int64_t> firAxes(const AxisRuns &runs, const std::vector<int64_t> &dims) {
  std::vector<int64_t> first = firstAxes(runs), axes;
  for (int64_t d : dims)
    for (int64_t k = 0; k < runs[d]; ++k)
      axes.push_back(first[d] + k);
  return axes;
}

namespace {
/// A copy of the node with FIR axes, converted by the node's converter.
class Renumbered {
public:
  explicit Renumbered(NodeContext &c) : c(c), node(c.node) {}

  /// Sets int attribute `name` (a list when `list`) to `values`.
  void setAttr(const std::string &name, const std::vector<int64_t> &values, bool list) {
    onnx::AttributeProto *attr = nullptr;
    for (onnx::AttributeProto &candidate : *node.mutable_attribute())
      if (candidate.name() == name)
        attr = &candidate;
    if (!attr) {
      attr = node.add_attribute();
      attr->set_name(name);
    }
    attr->clear_ints();
    attr->clear_i();
    attr->set_type(list ? onnx::AttributeProto::INTS : onnx::AttributeProto::INT);
    if (list)
      for (int64_t value : values)
        attr->add_ints(value);
    else
      attr->set_i(values[0]);
  }

  /// Sets input `i` to a constant 1-D int64 tensor of `values`.
  void setInput(size_t i, const std::vector<int64_t> &values) {
    TensorData data(DType::i64, {int64_t(values.size())});
    for (size_t k = 0; k < values.size(); ++k)
      data.setInt(int64_t(k), values[k]);
    std::string name = c.node.output(0) + ".fir_axes";
    while (c.importer.constants.count(name) || c.importer.values.count(name) ||
           c.importer.shapes.count(name))
      name += "_";
    if (std::optional<ShapeValue> shape = shapeOfConstant(data))
      c.importer.shapes[name] = *shape;
    c.importer.constants[name] = std::make_shared<TensorData>(std::move(data));
    while (size_t(node.input_size()) <= i)
      node.add_input("");
    node.set_input(int(i), name);
  }

  /// Converts the copy; every output gets `runs`.
  bool convert(bool (*convertFn)(NodeContext &), const AxisRuns &runs) {
    NodeContext inner(c.importer, node, c.opset);
    for (const auto &[i, value] : c.substitutions())
      inner.substitute(i, value);
    bool converted = convertFn(inner);
    for (const std::string &name : inner.usedAttrs())
      c.ignoreAttr(name);
    for (size_t i = 0; i < c.numInputs(); ++i)
      if (inner.wasRead(i))
        c.ignoreInput(i);
    return converted && defineOutputsGrouped(c, runs);
  }

private:
  NodeContext &c;
  onnx::NodeProto node;
};
} // namespace

/// The axes of the node: input `input` when the opset passes them so (absent
/// inputs: nullopt), else attribute `name`. `ok` is false after an error.
static std::optional<std::vector<int64_t>> readAxes(NodeContext &c, bool asInput, size_t input,
                                                    const char *name, bool &ok) {
  ok = true;
  if (!asInput)
    return c.attrInts(name);
  if (!c.hasInput(input))
    return std::nullopt;
  std::optional<std::vector<int64_t>> axes = c.ints(input, "axes");
  ok = axes.has_value();
  return axes;
}

/// `axes` normalized against `rank`; each must name a plain dim (unless
/// `groupedToo`) else `what` is reported. nullopt after an error.
static std::optional<std::vector<int64_t>> plainDims(NodeContext &c, size_t input,
                                                     const AxisRuns &runs,
                                                     std::vector<int64_t> axes, int64_t rank,
                                                     const std::string &what,
                                                     bool groupedToo = false) {
  for (int64_t &axis : axes) {
    std::optional<int64_t> d = normalizeAxis(axis, rank);
    if (!d)
      return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                    std::to_string(rank)),
             std::nullopt;
    if (*d < int64_t(runs.size()) && runs[*d] != 1 && !groupedToo)
      return failOnProduct(c, input, size_t(*d), what), std::nullopt;
    axis = *d;
  }
  for (size_t k = 0; k < axes.size(); ++k)
    if (llvm::is_contained(llvm::makeArrayRef(axes).take_front(k), axes[k]))
      return c.fail("axis " + std::to_string(axes[k]) + " is given twice"), std::nullopt;
  return axes;
}

/// Gather along a leading dim that is a product (`x.view(-1, d)[idx]`, or
/// `h[torch.arange(b), last]` exported as a flattened index: sequence
/// classification's and CLIP's pooling): FIR has no axis for the product,
/// but `take` without an axis indexes the flattened data, so row q of the
/// trailing dims (D elements, static) is the flat range q * D + [0, D). A
/// negative q counts from the end, as the flattened take does.
static bool gatherFromProduct(NodeContext &c, const AxisRuns &runs) {
  Value *x = c.input(0), *rows = c.input(1);
  if (!x || !rows)
    return false;
  if (!isIntDType(rows->type.getDType()))
    return c.fail("indices (input 1) must be integers, not " + rows->type.str());
  for (size_t d = 1; d < runs.size(); ++d)
    if (runs[d] != 1)
      return failOnProduct(c, 0, d, "Gather along dim 0 cannot keep");
  const Shape &shape = x->type.getShape();
  Shape trailing(shape.begin() + runs[0], shape.end());
  int64_t rowSize = 1;
  for (const Dim &dim : trailing) {
    if (dim.isSymbolic())
      return c.fail("Gather along dim 0 of " + x->type.str() +
                    ", a product, needs static trailing dims, not '" + dim.symbol + "' (--dim " +
                    dim.symbol + "=SIZE fixes its size)");
    rowSize *= dim.size;
  }
  std::string name = c.node.output(0);
  Shape rowsShape = rows->type.getShape();
  Value *wide = rows->type.getDType() == DType::i64 ? rows
                                                    : castTo(c, rows, DType::i64, name + "_rows_i64");
  Value *start = wide ? c.emit("multiply", {Operand::of(wide),
                                            NodeContext::literal(double(rowSize), DType::i64)},
                               {}, name + "_row_start")
                      : nullptr;
  Attrs column;
  column.set("axis", makeIntList({int64_t(rowsShape.size())}));
  Value *first = start ? c.emit("expand_dims", {Operand::of(start)}, column, name + "_row_first")
                       : nullptr;
  Value *offsets = indexVector(c, Dim::of(rowSize), 0, name + "_row_offsets");
  Value *flat = first && offsets ? c.emit("add", {Operand::of(first), Operand::of(offsets)}, {},
                                          name + "_flat")
                                 : nullptr;
  Value *taken = flat ? c.emit("take", {Operand::of(x), Operand::of(flat)}, {},
                               trailing.size() == 1 ? name : name + "_rows")
                      : nullptr;
  if (taken && trailing.size() != 1) {
    Shape target = rowsShape;
    target.insert(target.end(), trailing.begin(), trailing.end());
    Attrs reshape;
    reshape.set("shape", makeShapeList(target));
    taken = c.emit("reshape", {Operand::of(taken)}, reshape, name);
  }
  return taken && (c.define(0, taken), true);
}

std::optional<bool> onnximport::convertGroupedAxisOp(NodeContext &c,
                                                     bool (*convert)(NodeContext &)) {
  llvm::StringRef op = c.node.op_type();
  static const std::set<std::string> axisOps = {
      "Softmax", "LogSoftmax", "LayerNormalization", "Gather", "Slice", "Split", "Concat",
      "Unsqueeze", "Squeeze", "ArgMax", "ArgMin"};
  if (!axisOps.count(op.str()) && !op.startswith("Reduce"))
    return std::nullopt;
  for (size_t i = op == "Concat" ? c.numInputs() : 1; i < c.numInputs(); ++i)
    if (const AxisRuns *grouped = c.runsOf(i))
      return failOnProduct(c, i, size_t(llvm::find_if(*grouped, [](int64_t run) {
                                          return run != 1;
                                        }) - grouped->begin()),
                           op.str() + " cannot take as input " + std::to_string(i));
  size_t grouped = 0; // Concat's first grouped input; else input 0
  while (!c.runsOf(grouped))
    ++grouped;
  const AxisRuns runs = *c.runsOf(grouped);
  int64_t rank = int64_t(runs.size());
  std::vector<int64_t> first = firstAxes(runs);
  Renumbered node(c);
  std::string what = op.str() + " cannot ";
  bool ok = true;

  if (op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization") {
    // Softmax before opset 13 is over the dims from its axis on, as one.
    bool coerced = op != "LayerNormalization" && c.opset < 13;
    std::optional<std::vector<int64_t>> axis =
        plainDims(c, grouped, runs, {c.attrInt("axis", coerced ? 1 : -1)}, rank,
                  what + "normalize over", coerced);
    if (!axis)
      return false;
    for (int64_t d = (*axis)[0] + 1; op == "LayerNormalization" && d < rank; ++d)
      if (runs[d] != 1)
        return failOnProduct(c, 0, size_t(d), what + "normalize over");
    node.setAttr("axis", {first[(*axis)[0]]}, false);
    return node.convert(convert, runs);
  }
  if (op.startswith("Reduce") || op == "ArgMax" || op == "ArgMin") {
    // The axes: an attribute, or an input from ReduceSum-13 on. A reduced
    // grouped dim reduces all its factors.
    bool arg = op.startswith("Arg");
    bool asInput = c.hasInput(1);
    std::optional<std::vector<int64_t>> given =
        arg ? std::vector<int64_t>{c.attrInt("axis", 0)} : readAxes(c, asInput, 1, "axes", ok);
    if (!ok)
      return false;
    bool noop = !arg && c.attrInt("noop_with_empty_axes", 0) != 0;
    if (given && given->empty() && noop)
      return node.convert(convert, runs); // nothing reduced
    std::vector<int64_t> all;
    for (int64_t d = 0; d < rank; ++d)
      all.push_back(d);
    std::optional<std::vector<int64_t>> dims =
        plainDims(c, grouped, runs, given && !given->empty() ? *given : all, rank, what + "reduce over",
                  !arg);
    if (!dims)
      return false;
    bool keepDims = c.attrInt("keepdims", 1) != 0;
    AxisRuns out;
    for (int64_t d = 0; d < rank; ++d)
      if (keepDims || !llvm::is_contained(*dims, d))
        out.push_back(runs[d]);
    if (arg)
      node.setAttr("axis", {first[(*dims)[0]]}, false);
    else if (asInput)
      node.setInput(1, firAxes(runs, *dims));
    else
      node.setAttr("axes", firAxes(runs, *dims), true);
    return node.convert(convert, out);
  }
  if (op == "Gather") {
    if (std::optional<int64_t> d = normalizeAxis(c.attrInt("axis", 0), rank);
        d == 0 && runs[0] != 1 && grouped == 0)
      return gatherFromProduct(c, runs);
    std::optional<std::vector<int64_t>> axis =
        plainDims(c, grouped, runs, {c.attrInt("axis", 0)}, rank, what + "index");
    std::optional<std::vector<SymbolicSize>> indices = c.onnxDims(1);
    if (!axis || !indices)
      return axis && c.input(1) && false; // reports a missing input
    AxisRuns out(runs.begin(), runs.begin() + (*axis)[0]);
    out.insert(out.end(), indices->size(), 1);
    out.insert(out.end(), runs.begin() + (*axis)[0] + 1, runs.end());
    node.setAttr("axis", {first[(*axis)[0]]}, false);
    return node.convert(convert, out);
  }
  if (op == "Slice") {
    // Slice-10 on: starts, ends, axes (default 0, 1, ...), steps as inputs.
    bool asInput = c.opset >= 10;
    std::optional<std::vector<int64_t>> axes = readAxes(c, asInput, 3, "axes", ok);
    if (!ok)
      return false;
    if (!axes) {
      std::optional<ShapeValue> starts = asInput ? c.shapeValue(1) : std::nullopt;
      std::optional<std::vector<int64_t>> startsAttr = c.attrInts("starts");
      size_t count = starts ? starts->elements.size() : startsAttr ? startsAttr->size() : 0;
      axes.emplace();
      for (size_t d = 0; d < count; ++d)
        axes->push_back(int64_t(d));
    }
    std::optional<std::vector<int64_t>> dims = plainDims(c, grouped, runs, *axes, rank, what + "slice");
    if (!dims)
      return false;
    std::vector<int64_t> fir = firAxes(runs, *dims);
    asInput ? node.setInput(3, fir) : node.setAttr("axes", fir, true);
    return node.convert(convert, runs);
  }
  if (op == "Split" || op == "Concat") {
    std::optional<std::vector<int64_t>> axis =
        plainDims(c, grouped, runs, {c.attrInt("axis", 0)}, rank, what + (op == "Split" ? "split"
                                                                               : "join"));
    if (!axis)
      return false;
    if (op == "Concat") {
      // The inputs' grouped dims alike (the same product factored otherwise
      // reshaped); its joined dim is plain in every input.
      std::vector<BroadcastOperand> operands;
      for (size_t i = 0; i < c.numInputs(); ++i)
        if (c.hasInput(i)) {
          if (const AxisRuns *other = c.runsOf(i); other && (*other)[(*axis)[0]] != 1)
            return failOnProduct(c, i, size_t((*axis)[0]), what + "join");
          operands.push_back({i, 0});
        }
      std::optional<AxisRuns> aligned = alignOperands(c, operands, (*axis)[0]);
      if (!aligned)
        return false;
      node.setAttr("axis", {firstAxes(*aligned)[(*axis)[0]]}, false);
      return node.convert(convert, *aligned);
    }
    node.setAttr("axis", {first[(*axis)[0]]}, false);
    return node.convert(convert, runs);
  }
  // Unsqueeze and Squeeze: axes as an input from opset 13.
  std::optional<std::vector<int64_t>> axes = readAxes(c, c.opset >= 13, 1, "axes", ok);
  if (!ok)
    return false;
  AxisRuns out;
  std::vector<int64_t> fir;
  if (op == "Unsqueeze") {
    if (!axes)
      return c.fail("Unsqueeze needs axes");
    std::optional<std::vector<int64_t>> dims =
        plainDims(c, grouped, AxisRuns(), *axes, rank + int64_t(axes->size()), what + "unsqueeze");
    if (!dims)
      return false;
    for (int64_t d = 0, next = 0; d < rank + int64_t(dims->size()); ++d)
      out.push_back(llvm::is_contained(*dims, d) ? 1 : runs[next++]);
    std::vector<int64_t> outFirst = firstAxes(out);
    for (int64_t d : *dims)
      fir.push_back(outFirst[d]);
  } else {
    std::optional<std::vector<SymbolicSize>> sizes = c.onnxDims(0);
    if (!axes) { // every size-1 dim
      axes.emplace();
      for (int64_t d = 0; d < rank; ++d)
        if ((*sizes)[d] == SymbolicSize::of(1))
          axes->push_back(d);
    }
    std::optional<std::vector<int64_t>> dims =
        plainDims(c, grouped, runs, *axes, rank, what + "remove");
    if (!dims)
      return false;
    for (int64_t d : *dims)
      if ((*sizes)[d] != SymbolicSize::of(1))
        return c.fail("dim " + std::to_string(d) + " has size " + (*sizes)[d].str() +
                      ", not 1: Squeeze cannot remove it");
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(*dims, d))
        out.push_back(runs[d]);
    fir = firAxes(runs, *dims);
    if (fir.empty() && !c.hasInput(1) && !c.hasAttr("axes"))
      return node.convert(convert, out); // nothing to remove
  }
  c.opset >= 13 ? node.setInput(1, fir) : node.setAttr("axes", fir, true);
  return node.convert(convert, out);
}
