//===- ONNXGrouped.cpp - Dims that are products of symbolic dims ----------===//
//
// Exporters merge dims at run time: nn.MultiheadAttention views its
// [seq, batch, embed] projection as [seq, batch * heads, head_dim], and
// linear layers are often applied to x.view(-1, features) of a
// [batch, seq, features] x. On a dynamic batch such a size is a product of
// symbolic dims, which a FIR dim (a size or one name) cannot hold. The
// importer keeps such a tensor as a grouped value (ONNXImporter.h): the FIR
// tensor has the product's factors as separate axes, in the same row-major
// element order, so a later reshape back to plain dims is again one FIR
// reshape.
//
// 1. Reshape and Flatten resolve their target (0 copies an input dim, -1 is
//    the element count divided by the other sizes, all as products). When
//    every size is a FIR dim and the input is plain, the reshape is an
//    ordinary one; otherwise each size becomes its factors (the names in
//    the order the exporter multiplied them, then the static factor: MHA's
//    `bsz * num_heads` is [batch, 4], the axes the data has) and the result
//    is grouped.
// 2. A node with a grouped input is converted by its own converter when the
//    operator allows it:
//    - elementwise operators: the operands are aligned (an operand's size-1
//      dim facing a grouped dim becomes as many unit axes) and the output
//      is grouped like the broadcast of the inputs;
//    - MatMul and Gemm: grouped rows or batch dims, plain contraction dims;
//    - Softmax, LogSoftmax, LayerNormalization and the reductions: their
//      axes are renumbered to FIR axes (a reduced grouped dim reduces all its
//      factors); a normalized dim must be plain;
//    - Transpose moves a group as a whole, Shape gives the products (both in
//      their converters).
//    Any other operator reports the grouped input with the --dim that
//    avoids it; so does a graph output that is grouped.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

bool onnximport::defineReshape(NodeContext &c, std::vector<SymbolicSize> target,
                               bool allowZero) {
  Value *x = c.input(0);
  std::optional<std::vector<SymbolicSize>> dims = c.onnxDims(0);
  if (!x || !dims)
    return false;
  std::optional<size_t> inferred;
  bool ambiguous = false;
  std::vector<SymbolicSize> known;
  for (size_t d = 0; d < target.size(); ++d) {
    SymbolicSize &size = target[d];
    if (size.isStatic() && size.size == 0 && !allowZero) {
      if (d >= dims->size())
        return c.fail("shape entry " + std::to_string(d) + " is 0 (copy the input's dim) "
                      "but the input has rank " + std::to_string(dims->size()));
      size = (*dims)[d];
    } else if (size.isStatic() && size.size == -1) {
      ambiguous |= inferred.has_value(); // FIR's reshape reports it
      inferred = d;
      continue;
    } else if (size.isStatic() && size.size < 0) {
      return c.fail("shape entry " + std::to_string(size.size) + " is invalid");
    }
    known.push_back(size);
  }
  // The -1 resolved, when it resolves; where it does not, or where every
  // size is a FIR dim, FIR's reshape takes the target as written (and
  // reports what is wrong with it).
  std::vector<SymbolicSize> resolved = target;
  std::optional<SymbolicSize> total = productOf(*dims), rest = productOf(known);
  if (inferred && !ambiguous && total && rest && !(total->size == 0 && rest->size == 0))
    if (std::optional<SymbolicSize> quotient = quotientOf(*total, *rest))
      resolved[*inferred] = *quotient;
  bool plain = !c.runsOf(0) && llvm::all_of(resolved, [](const SymbolicSize &size) {
    return size.asDim().has_value();
  });
  Shape shape;
  AxisRuns runs;
  for (const SymbolicSize &size : plain ? target : resolved) {
    size_t before = shape.size();
    if (std::optional<Dim> dim = size.asDim()) {
      shape.push_back(*dim);
    } else {
      for (const std::string &symbol : size.symbols)
        shape.push_back(Dim::named(symbol));
      if (size.size != 1)
        shape.push_back(Dim::of(size.size));
    }
    runs.push_back(int64_t(shape.size() - before));
  }
  c.defineGrouped(0, reshapeTo(c, x, shape, c.node.output(0)), runs);
  return true;
}

namespace {
/// One operand of a broadcast: its FIR value and ONNX dims, and how many
/// of its trailing dims stay out of the broadcast (MatMul's matrix dims).
struct BroadcastOperand {
  size_t input;
  size_t trailing;
};
} // namespace

/// The runs of each operand (ones for a plain value or a constant).
static AxisRuns runsOrOnes(NodeContext &c, size_t i, size_t rank) {
  const AxisRuns *runs = c.runsOf(i);
  return runs ? *runs : AxisRuns(rank, 1);
}

/// Broadcasts the leading dims of `operands` (all but their trailing
/// ones), substituting for an operand whose size-1 dim faces a grouped
/// dim the operand with unit axes there. Returns the runs of the broadcast
/// dims, or nullopt after an error.
static std::optional<AxisRuns> alignOperands(NodeContext &c,
                                             const std::vector<BroadcastOperand> &operands) {
  struct Seen {
    std::vector<SymbolicSize> dims;
    AxisRuns runs;
    Shape fir;
  };
  std::vector<Seen> seen;
  size_t rank = 0;
  for (const BroadcastOperand &operand : operands) {
    std::optional<std::vector<SymbolicSize>> dims = c.onnxDims(operand.input);
    Value *value = dims ? c.input(operand.input) : nullptr;
    if (!value)
      return c.fail("input " + std::to_string(operand.input) + " has no known shape"),
             std::nullopt;
    if (dims->size() < operand.trailing)
      return c.fail("input " + std::to_string(operand.input) + " has rank " +
                    std::to_string(dims->size()) + ", below " +
                    std::to_string(operand.trailing)),
             std::nullopt;
    seen.push_back({*dims, runsOrOnes(c, operand.input, dims->size()), value->type.getShape()});
    rank = std::max(rank, dims->size() - operand.trailing);
  }
  // The FIR dims of each broadcast dim that some operand has grouped.
  std::vector<std::optional<Shape>> groups(rank);
  for (size_t k = 0; k < seen.size(); ++k) {
    const Seen &operand = seen[k];
    size_t count = operand.dims.size() - operands[k].trailing, offset = rank - count;
    size_t axis = 0;
    for (size_t d = 0; d < count; ++d) {
      int64_t run = operand.runs[d];
      Shape factors(operand.fir.begin() + axis, operand.fir.begin() + axis + run);
      axis += run;
      if (run == 1)
        continue;
      std::optional<Shape> &group = groups[offset + d];
      if (group && *group != factors)
        return c.fail("inputs " + std::to_string(operands[0].input) + " and " +
                      std::to_string(operands[k].input) + " split the product dim " +
                      std::to_string(offset + d) + " differently (--dim fixes the sizes)"),
               std::nullopt;
      group = factors;
    }
  }
  AxisRuns result;
  for (const std::optional<Shape> &group : groups)
    result.push_back(group ? int64_t(group->size()) : 1);
  for (size_t k = 0; k < seen.size(); ++k) {
    const Seen &operand = seen[k];
    size_t count = operand.dims.size() - operands[k].trailing, offset = rank - count;
    Shape aligned;
    size_t axis = 0;
    bool changed = false;
    for (size_t d = 0; d < operand.dims.size(); ++d) {
      int64_t run = operand.runs[d];
      if (d < count && run == 1 && result[offset + d] > 1) {
        if (!(operand.dims[d] == SymbolicSize::of(1)))
          return c.fail("input " + std::to_string(operands[k].input) + " has size " +
                        operand.dims[d].str() + " at dim " + std::to_string(d) +
                        ", which does not broadcast with a product of symbolic dims"),
                 std::nullopt;
        aligned.insert(aligned.end(), size_t(result[offset + d]), Dim::of(1));
        changed = true;
      } else {
        aligned.insert(aligned.end(), operand.fir.begin() + axis,
                       operand.fir.begin() + axis + run);
      }
      axis += run;
    }
    if (changed)
      c.substitute(operands[k].input,
                   reshapeTo(c, c.input(operands[k].input), aligned,
                             c.node.output(0) + "_in" + std::to_string(operands[k].input)));
  }
  return result;
}

/// The ops whose output is the broadcast of their inputs, element by
/// element.
static bool isElementwise(llvm::StringRef op) {
  static const std::set<std::string> ops = {
      "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
      "GreaterOrEqual", "And", "Or", "Xor", "Not", "Max", "Min", "Sum", "Mean", "Where",
      "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs", "Floor", "Ceil",
      "Sin", "Cos", "Tan", "Sign", "Round", "Reciprocal", "Cast", "CastLike", "Clip",
      "Identity", "Dropout", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish",
      "Softplus", "Softsign", "ThresholdedRelu", "Shrink", "IsNaN", "IsInf"};
  return ops.count(op.str()) != 0;
}

/// The FIR axes of ONNX dims `dims` under `runs`.
static std::vector<int64_t> firAxes(const AxisRuns &runs, const std::vector<int64_t> &dims) {
  std::vector<int64_t> firstAxis{0}, axes;
  for (int64_t run : runs)
    firstAxis.push_back(firstAxis.back() + run);
  for (int64_t d : dims)
    for (int64_t k = 0; k < runs[d]; ++k)
      axes.push_back(firstAxis[d] + k);
  return axes;
}

/// Converts an axis operator on grouped input 0 with its axis attribute
/// renumbered: `node` is a copy of the node with `axis`/`axes` replaced by
/// FIR axes. Output 0 gets `runs`.
static bool convertRenumbered(NodeContext &c, bool (*convert)(NodeContext &),
                              onnx::NodeProto node, const AxisRuns &runs) {
  NodeContext inner(c.importer, node, c.opset);
  bool converted = convert(inner);
  for (const std::string &name : inner.usedAttrs())
    c.ignoreAttr(name);
  for (size_t i = 0; i < c.numInputs(); ++i)
    if (inner.wasRead(i))
      c.ignoreInput(i);
  if (!converted)
    return false;
  Value *out = c.importer.values.count(c.node.output(0))
                   ? c.importer.values[c.node.output(0)] : nullptr;
  if (out)
    c.defineGrouped(0, out, runs);
  return true;
}

/// Sets integer attribute(s) `name` of `node` to `values` (a list when
/// `list`).
static void setAxesAttr(onnx::NodeProto &node, const std::string &name,
                        const std::vector<int64_t> &values, bool list) {
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

/// Softmax, LogSoftmax, LayerNormalization and the reductions on grouped
/// input 0.
static bool convertGroupedAxisOp(NodeContext &c, bool (*convert)(NodeContext &)) {
  llvm::StringRef op = c.node.op_type();
  const AxisRuns &runs = *c.runsOf(0);
  int64_t rank = int64_t(runs.size());
  auto normalized = [&](int64_t axis) -> std::optional<int64_t> {
    std::optional<int64_t> d = normalizeAxis(axis, rank);
    if (!d)
      c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
             std::to_string(rank));
    return d;
  };
  onnx::NodeProto node = c.node;
  if (op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization") {
    bool coerced = op != "LayerNormalization" && c.opset < 13; // all dims from axis on
    std::optional<int64_t> axis = normalized(c.attrInt("axis", coerced ? 1 : -1));
    if (!axis)
      return false;
    for (int64_t d = *axis; d < (coerced ? *axis + 1 : rank); ++d)
      if (runs[d] != 1 && !coerced)
        return c.fail(op + " normalizes dim " + std::to_string(d) +
                      ", a product of symbolic dims (--dim fixes their sizes)");
    setAxesAttr(node, "axis", {firAxes(runs, {*axis})[0]}, false);
    return convertRenumbered(c, convert, node, runs);
  }
  // A reduction: axes as an attribute, or a constant input from
  // ReduceSum-13 on (renumbered into a constant of the importer's own).
  std::optional<std::vector<int64_t>> given =
      c.hasInput(1) ? c.ints(1, "axes") : c.attrInts("axes");
  if (c.hasInput(1) && !given)
    return false;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(d);
  if (given) {
    dims.clear();
    for (int64_t axis : *given) {
      std::optional<int64_t> d = normalized(axis);
      if (!d)
        return false;
      dims.push_back(*d);
    }
  }
  bool keepDims = c.attrInt("keepdims", 1) != 0;
  AxisRuns out;
  for (int64_t d = 0; d < rank; ++d)
    if (keepDims || !llvm::is_contained(dims, d))
      out.push_back(runs[d]);
  if (c.hasInput(1)) {
    std::vector<int64_t> axes = firAxes(runs, dims);
    TensorData data(DType::i64, {int64_t(axes.size())});
    for (size_t k = 0; k < axes.size(); ++k)
      data.setInt(int64_t(k), axes[k]);
    std::string name = c.node.output(0) + ".fir_axes";
    while (c.importer.constants.count(name) || c.importer.values.count(name))
      name += "_";
    c.importer.shapes[name] = *shapeOfConstant(data);
    c.importer.constants[name] = std::make_shared<TensorData>(std::move(data));
    node.set_input(1, name);
  } else {
    setAxesAttr(node, "axes", firAxes(runs, dims), true);
  }
  return convertRenumbered(c, convert, node, out);
}

bool onnximport::convertGroupedNode(NodeContext &c, bool (*convert)(NodeContext &)) {
  llvm::StringRef op = c.node.op_type();
  std::optional<AxisRuns> runs;
  if (op == "Reshape" || op == "Flatten" || op == "Transpose" || op == "Shape" ||
      op == "Size")
    return convert(c); // they read the runs themselves
  if (op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization" ||
      op.startswith("Reduce")) {
    for (size_t i = 1; i < c.numInputs(); ++i)
      if (c.runsOf(i))
        return c.fail("input " + std::to_string(i) + " is a product of symbolic dims");
    return convertGroupedAxisOp(c, convert);
  }
  if (op == "MatMul" || op == "Gemm") {
    std::optional<std::vector<SymbolicSize>> a = c.onnxDims(0), b = c.onnxDims(1);
    if (!a || !b)
      return c.input(0) && c.input(1) && false;
    AxisRuns runsA = runsOrOnes(c, 0, a->size()), runsB = runsOrOnes(c, 1, b->size());
    bool plainMatrices = a->size() >= 2 && b->size() >= 2 && runsA.back() == 1 &&
                         runsB.back() == 1 && runsB[b->size() - 2] == 1;
    bool batched = b->size() > 2;
    if (op == "Gemm" && (batched || c.runsOf(2) || c.attrInt("transA", 0)))
      plainMatrices = false;
    if (!plainMatrices || (batched && runsA[a->size() - 2] != 1))
      return c.fail("its matrix dims include a product of symbolic dims (--dim fixes "
                    "their sizes)");
    runs = alignOperands(c, {{0, batched ? size_t(2) : size_t(1)}, {1, 2}});
    if (!runs)
      return false;
    runs->insert(runs->end(), batched ? 2 : 1, 1);
  } else if (isElementwise(op) && !llvm::any_of(c.node.attribute(), [](const auto &attr) {
               return attr.name() == "axis"; // the broadcast of the first opsets
             })) {
    std::vector<BroadcastOperand> operands;
    for (size_t i = 0; i < c.numInputs(); ++i)
      if (c.hasInput(i) && c.onnxDims(i))
        operands.push_back({i, 0});
    runs = alignOperands(c, operands);
    if (!runs)
      return false;
  } else {
    for (size_t i = 0; i < c.numInputs(); ++i)
      if (const AxisRuns *grouped = c.runsOf(i)) {
        std::optional<std::vector<SymbolicSize>> dims = c.onnxDims(i);
        const SymbolicSize *product = nullptr;
        for (size_t d = 0; d < grouped->size(); ++d)
          if ((*grouped)[d] != 1 && !product)
            product = &(*dims)[d];
        std::string symbol = product && !product->symbols.empty() ? product->symbols[0] : "N";
        return c.fail("input " + std::to_string(i) + " ('" + c.node.input(int(i)) +
                      "') has the dim " + (product ? product->str() : "?") +
                      ", a product of symbolic dims, which " + op.str() +
                      " cannot take (--dim " + symbol + "=SIZE fixes its size)");
      }
    return convert(c);
  }
  if (!convert(c))
    return false;
  int64_t firRank = 0;
  for (int64_t run : *runs)
    firRank += run;
  for (size_t i = 0; i < c.numOutputs(); ++i) {
    if (!c.hasOutput(i) || !c.importer.values.count(c.node.output(int(i))))
      continue;
    Value *out = c.importer.values[c.node.output(int(i))];
    if (out->type.getRank() != firRank)
      return c.fail("output " + std::to_string(i) + " does not keep the grouped dims of " +
                    "its inputs");
    c.defineGrouped(i, out, *runs);
  }
  return true;
}
