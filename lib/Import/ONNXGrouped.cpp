//===- ONNXGrouped.cpp - Dims that are products of symbolic dims ----------===//
//
// Exporters merge dims at run time: nn.MultiheadAttention views its
// [seq, batch, embed] projection as [seq, batch * heads, head_dim], and
// linear layers are often applied to x.view(-1, features) of a
// [batch, seq, features] x. On a dynamic batch such a size is a product
// involving symbolic dims, which a FIR dim (a size or one name) cannot
// hold. The importer keeps such a tensor as a grouped value
// (ONNXImporter.h): the FIR tensor has the product's factors as separate
// axes, in the same row-major element order, so a later reshape back to
// plain dims is again one FIR reshape.
//
// 1. Reshape and Flatten resolve their target (0 copies an input dim, -1 is
//    the element count divided by the other sizes, all as products). When
//    every size is a FIR dim and the input is plain, the reshape is an
//    ordinary one; otherwise each size becomes its factors (the names in
//    the order the exporter multiplied them, then the static factor: MHA's
//    `bsz * num_heads` is [batch, 4], the axes the data has) and the result
//    is grouped. Expand and ConstantOfShape to such sizes broadcast to the
//    factors.
// 2. A node with a grouped input is converted by its own converter when the
//    operator allows it:
//    - elementwise operators: the operands are aligned (an operand's size-1
//      dim facing a grouped dim becomes as many unit axes; the same product
//      factored otherwise, [seq, batch] against [batch, seq], is reshaped
//      to the first operand's factors) and the output is grouped like the
//      broadcast of the inputs;
//    - MatMul and Gemm: grouped rows or batch dims, plain contraction dims;
//    - operators with axes (ONNXGroupedAxes.cpp): the axes are renumbered
//      to FIR axes;
//    - Transpose moves a group as a whole, Shape gives the products (both in
//      their converters).
//    Any other operator reports the grouped input with the --dim that
//    avoids it; so does a graph output that is grouped.
//
//===----------------------------------------------------------------------===//
#include "ONNXGrouped.h"

using namespace fusec;
using namespace fusec::onnximport;

GroupedShape onnximport::factorShape(const std::vector<SymbolicSize> &sizes) {
  GroupedShape result;
  for (const SymbolicSize &size : sizes) {
    size_t before = result.shape.size();
    if (std::optional<Dim> dim = size.asDim()) {
      result.shape.push_back(*dim);
    } else {
      for (const std::string &symbol : size.symbols)
        result.shape.push_back(Dim::named(symbol));
      if (size.size != 1)
        result.shape.push_back(Dim::of(size.size));
    }
    result.runs.push_back(int64_t(result.shape.size() - before));
  }
  return result;
}

bool onnximport::failOnProduct(NodeContext &c, size_t input, size_t dim,
                               const std::string &what) {
  std::optional<std::vector<SymbolicSize>> dims = c.onnxDims(input);
  SymbolicSize size = dims && dim < dims->size() ? (*dims)[dim] : SymbolicSize::of(0);
  return c.fail("input " + std::to_string(input) + " ('" + c.node.input(int(input)) +
                "') has the dim " + size.str() + " (dim " + std::to_string(dim) +
                "), a product involving a symbolic dim, which " + what + " (" +
                dimOptions({size}) + " fixes its size)");
}

AxisRuns onnximport::runsOrOnes(NodeContext &c, size_t i, size_t rank) {
  const AxisRuns *runs = c.runsOf(i);
  return runs ? *runs : AxisRuns(rank, 1);
}

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
  std::optional<SymbolicSize> count = productOf(resolved);
  auto shapes = [&] {
    std::string from, to;
    for (const SymbolicSize &size : *dims)
      from += (from.empty() ? "" : ", ") + size.str();
    for (const SymbolicSize &size : target)
      to += (to.empty() ? "" : ", ") + size.str();
    return "cannot reshape [" + from + "] to [" + to + "]";
  };
  // A static target from a symbolic input (a model traced at batch 1, its
  // batch then declared symbolic): the target fixes the sizes.
  if (!inferred && total && count && total->isSymbolic() && count->isStatic()) {
    const std::vector<std::string> &names = total->symbols;
    std::string fix;
    if (names.size() > 1)
      fix = "the input's symbolic dims would need fixed sizes (" + dimOptions({*total}) + ")";
    else if (total->size > 0 && count->size % total->size == 0)
      fix = names[0] + " would have to be " + std::to_string(count->size / total->size) +
            " (--dim " + names[0] + "=" + std::to_string(count->size / total->size) + ")";
    else
      fix = "no size of " + names[0] + " gives its " + std::to_string(count->size) + " elements";
    return c.fail(shapes() + ": the target shape is static, so " + fix);
  }
  if (!plain && (!total || !count || *total != *count || ambiguous))
    return c.fail(shapes() + ": the element counts " + (total ? total->str() : "?") + " and " +
                  (count ? count->str() : "?") + " differ, or a -1 does not resolve");
  GroupedShape shape = factorShape(plain ? target : resolved);
  // Regrouping alone (x.view(-1, C) of a [batch, seq, C] x) moves no data.
  bool same = !plain && shape.shape == x->type.getShape();
  c.defineGrouped(0, same ? x : reshapeTo(c, x, shape.shape, c.node.output(0)), shape.runs);
  return true;
}

bool onnximport::defineBroadcast(NodeContext &c, Value *x, const std::vector<SymbolicSize> &dims,
                                 const AxisRuns &runs, const std::vector<SymbolicSize> &target) {
  if (!x)
    return false;
  size_t rank = std::max(dims.size(), target.size());
  // ONNX broadcasts both ways. A grouped dim of x keeps its factors; x gets
  // unit axes where it broadcasts to a grouped dim.
  Shape fir, aligned;
  AxisRuns outRuns;
  for (size_t k = 0, axis = 0; k < rank; ++k) {
    bool hasX = k + dims.size() >= rank, hasTarget = k + target.size() >= rank;
    const SymbolicSize *a = hasX ? &dims[k + dims.size() - rank] : nullptr;
    const SymbolicSize *b = hasTarget ? &target[k + target.size() - rank] : nullptr;
    int64_t run = hasX ? runs[k + dims.size() - rank] : 0;
    Shape own(x->type.getShape().begin() + axis, x->type.getShape().begin() + axis + run);
    axis += run;
    const SymbolicSize *size = !a || (*a == SymbolicSize::of(1)) ? b : a;
    if (a && b && *a != *b && *a != SymbolicSize::of(1) && *b != SymbolicSize::of(1))
      return c.fail("cannot broadcast dim " + std::to_string(k) + " of size " + a->str() +
                    " to " + b->str());
    Shape factors = run > 1 ? own : factorShape({*size}).shape;
    fir.insert(fir.end(), factors.begin(), factors.end());
    outRuns.push_back(int64_t(factors.size()));
    if (hasX && run == 1 && factors.size() > 1)
      aligned.insert(aligned.end(), factors.size(), Dim::of(1));
    else
      aligned.insert(aligned.end(), own.begin(), own.end());
  }
  std::string name = c.node.output(0);
  if (aligned != x->type.getShape())
    x = reshapeTo(c, x, aligned, name + "_aligned");
  Attrs attrs;
  attrs.set("shape", makeShapeList(fir));
  Value *result = x && x->type.getShape() != fir
                      ? c.emit("broadcast_to", {Operand::of(x)}, attrs, name) : x;
  c.defineGrouped(0, result, outRuns);
  return true;
}

/// Broadcasts the leading dims of `operands` (all but their trailing
/// ones), substituting for an operand whose size-1 dim faces a grouped
/// dim the operand with unit axes there, and for one whose grouped dim is
/// factored otherwise the operand with the first grouping. Returns the
/// runs of the broadcast dims, or nullopt after an error.
std::optional<AxisRuns> onnximport::alignOperands(NodeContext &c,
                                                  const std::vector<BroadcastOperand> &operands,
                                                  std::optional<int64_t> joined) {
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
  // The factors of each broadcast dim that some operand has grouped (the
  // first such operand's) and the product they make.
  std::vector<std::optional<Shape>> groups(rank);
  std::vector<SymbolicSize> products(rank);
  std::vector<std::pair<size_t, size_t>> owners(rank); // (input, its dim) of each group
  for (size_t k = 0; k < seen.size(); ++k) {
    const Seen &operand = seen[k];
    size_t count = operand.dims.size() - operands[k].trailing, offset = rank - count;
    for (size_t d = 0, axis = 0; d < count; axis += operand.runs[d], ++d) {
      if (operand.runs[d] == 1)
        continue;
      std::optional<Shape> &group = groups[offset + d];
      if (group && products[offset + d] != operand.dims[d])
        return c.fail("inputs " + std::to_string(owners[offset + d].first) + " and " +
                      std::to_string(operands[k].input) + " differ at dim " +
                      std::to_string(offset + d) + ": " + products[offset + d].str() +
                      " and " + operand.dims[d].str()),
               std::nullopt;
      if (!group) {
        group = Shape(operand.fir.begin() + axis, operand.fir.begin() + axis + operand.runs[d]);
        products[offset + d] = operand.dims[d];
        owners[offset + d] = {operands[k].input, d};
      }
    }
  }
  // ONNX's broadcast, checked on ONNX's sizes (FIR's would name axes the
  // model does not have).
  std::vector<std::pair<size_t, SymbolicSize>> sizes(rank, {0, SymbolicSize::of(1)});
  for (size_t k = 0; k < seen.size(); ++k) {
    size_t count = seen[k].dims.size() - operands[k].trailing, offset = rank - count;
    for (size_t d = 0; d < count; ++d) {
      const SymbolicSize &size = seen[k].dims[d];
      auto &[owner, known] = sizes[offset + d];
      if (known != SymbolicSize::of(1) && size != SymbolicSize::of(1) && size != known &&
          joined != int64_t(offset + d))
        return c.fail("inputs " + std::to_string(owner) + " and " +
                      std::to_string(operands[k].input) + " do not broadcast at dim " +
                      std::to_string(offset + d) + ": " + known.str() + " and " + size.str()),
               std::nullopt;
      if (size != SymbolicSize::of(1))
        sizes[offset + d] = {operands[k].input, size};
    }
  }
  AxisRuns result;
  for (const std::optional<Shape> &group : groups)
    result.push_back(group ? int64_t(group->size()) : 1);
  for (size_t k = 0; k < seen.size(); ++k) {
    const Seen &operand = seen[k];
    size_t count = operand.dims.size() - operands[k].trailing, offset = rank - count;
    Shape aligned;
    for (size_t d = 0, axis = 0; d < operand.dims.size(); axis += operand.runs[d], ++d) {
      const std::optional<Shape> &group = d < count ? groups[offset + d] : std::nullopt;
      if (!group) {
        aligned.insert(aligned.end(), operand.fir.begin() + axis,
                       operand.fir.begin() + axis + operand.runs[d]);
      } else if (operand.runs[d] > 1) {
        aligned.insert(aligned.end(), group->begin(), group->end());
      } else if (operand.dims[d] == SymbolicSize::of(1)) {
        aligned.insert(aligned.end(), group->size(), Dim::of(1));
      } else {
        return failOnProduct(c, owners[offset + d].first, owners[offset + d].second,
                             "input " + std::to_string(operands[k].input) + "'s size " +
                                 operand.dims[d].str() + " does not broadcast with"),
               std::nullopt;
      }
    }
    if (aligned != operand.fir)
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

/// The runs of MatMul's or Gemm's output, its operands aligned; nullopt
/// after an error.
static std::optional<AxisRuns> alignMatMul(NodeContext &c, llvm::StringRef op) {
  std::optional<std::vector<SymbolicSize>> a = c.onnxDims(0), b = c.onnxDims(1);
  if (!a || !b)
    return c.input(0), c.input(1), std::nullopt; // reports which is missing
  AxisRuns runsA = runsOrOnes(c, 0, a->size()), runsB = runsOrOnes(c, 1, b->size());
  std::string contract = op.str() + " cannot contract";
  if (runsA.back() != 1)
    return failOnProduct(c, 0, a->size() - 1, contract), std::nullopt;
  if (b->size() >= 2 && runsB[b->size() - 2] != 1)
    return failOnProduct(c, 1, b->size() - 2, contract), std::nullopt;
  if (runsB.back() != 1)
    return failOnProduct(c, 1, b->size() - 1, op.str() + " cannot take as its columns"),
           std::nullopt;
  if (op == "Gemm" && (c.runsOf(2) || c.attrInt("transA", 0) || b->size() != 2))
    return failOnProduct(c, c.runsOf(2) ? 2 : 0, 0, "Gemm cannot take with transA or a "
                                                    "grouped C"),
           std::nullopt;
  const SymbolicSize &k = a->back(), &kB = (*b)[b->size() >= 2 ? b->size() - 2 : 0];
  if (op == "MatMul" && k != kB)
    return c.fail("MatMul contracts " + k.str() + " of input 0 with " + kB.str() +
                  " of input 1"),
           std::nullopt;
  // A matrix (or vector) B: A's rows may be grouped; else both batch.
  bool batched = b->size() > 2;
  if (batched && a->size() >= 2 && runsA[a->size() - 2] != 1)
    return failOnProduct(c, 0, a->size() - 2, "a batched MatMul cannot take as its rows"),
           std::nullopt;
  std::optional<AxisRuns> runs =
      alignOperands(c, {{0, batched ? size_t(2) : size_t(1)}, {1, batched ? size_t(2)
                                                                          : b->size()}});
  if (runs)
    runs->insert(runs->end(), batched ? 2 : b->size() - 1, 1);
  return runs;
}

bool onnximport::convertGroupedNode(NodeContext &c, bool (*convert)(NodeContext &)) {
  llvm::StringRef op = c.node.op_type();
  if (op == "Reshape" || op == "Flatten" || op == "Transpose" || op == "Shape" ||
      op == "Size" || op == "Expand")
    return convert(c); // they read the runs themselves
  if (std::optional<bool> converted = convertGroupedAxisOp(c, convert))
    return *converted;
  std::optional<AxisRuns> runs;
  if (op == "MatMul" || op == "Gemm") {
    runs = alignMatMul(c, op);
  } else if (isElementwise(op) && !llvm::any_of(c.node.attribute(), [](const auto &attr) {
               return attr.name() == "axis"; // the broadcast of the first opsets
             })) {
    std::vector<BroadcastOperand> operands;
    for (size_t i = 0; i < c.numInputs(); ++i)
      if (c.hasInput(i) && c.onnxDims(i))
        operands.push_back({i, 0});
    runs = alignOperands(c, operands);
  } else {
    for (size_t i = 0; i < c.numInputs(); ++i)
      if (const AxisRuns *grouped = c.runsOf(i))
        return failOnProduct(c, i, size_t(llvm::find_if(*grouped, [](int64_t run) {
                                             return run != 1;
                                           }) - grouped->begin()),
                             op.str() + " cannot take");
    return convert(c);
  }
  return runs && convert(c) && defineOutputsGrouped(c, *runs);
}

bool onnximport::defineOutputsGrouped(NodeContext &c, const AxisRuns &runs) {
  int64_t firRank = 0;
  for (int64_t run : runs)
    firRank += run;
  for (size_t i = 0; i < c.numOutputs(); ++i) {
    if (!c.hasOutput(i) || !c.importer.values.count(c.node.output(int(i))))
      continue;
    Value *out = c.importer.values[c.node.output(int(i))];
    if (out->type.getRank() != firRank)
      return c.fail("output " + std::to_string(i) + " does not keep the grouped dims of " +
                    "its inputs");
    c.defineGrouped(i, out, runs);
  }
  return true;
}
