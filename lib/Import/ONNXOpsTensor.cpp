//===- ONNXOpsTensor.cpp - Shape and layout ONNX operators ----------------===//
//
// Reshape (a constant or folded shape input; 0 copies the input's dim unless
// allowzero, -1 is inferred, symbolic sizes become dim names), Flatten,
// Transpose, Squeeze/Unsqueeze (axes as an input from opset 13), Concat,
// Split (sizes as an input, or equal parts), Slice and Gather map onto
// reshape, permute_dims, squeeze, expand_dims, concat, split + get,
// strided_slice and take. On shape values
// (ONNXImporter.h) Gather, Unsqueeze, Squeeze, Concat and Slice are folded
// instead, so that shape computations never reach the program.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

/// Whether input 0 is a shape value that the node may fold (no FIR value).
static std::optional<ShapeValue> foldable(NodeContext &c) {
  if (c.typeOf(0))
    return std::nullopt;
  return c.shapeValue(0);
}

static bool convertReshape(NodeContext &c) {
  // A shape value with a symbolic dim reshaped to one axis stays a shape
  // value (PyTorch's `expand` export flattens its target shape).
  if (std::optional<ShapeValue> value = c.shapeValue(0); value && !value->isStatic()) {
    c.attrInt("allowzero", 0); // no 0 in a one-axis target
    std::optional<std::vector<int64_t>> target = c.ints(1, "the shape");
    if (!target)
      return false;
    int64_t count = int64_t(value->elements.size());
    if (target->size() != 1 || ((*target)[0] != -1 && (*target)[0] != count))
      return c.fail("a shape computation involving the symbolic dim '" +
                    *value->firstSymbol() + "' can only be reshaped to one axis");
    value->scalar = false;
    return c.defineShape(0, *value), true;
  }
  std::optional<ShapeValue> shape;
  if (c.opset < 5) { // Reshape-1: the `shape` attribute
    std::optional<std::vector<int64_t>> attr = c.attrInts("shape");
    if (!attr)
      return c.fail("the shape attribute is required before opset 5");
    shape.emplace();
    for (int64_t size : *attr)
      shape->elements.push_back(SymbolicSize::of(size));
  } else {
    shape = c.shapeValue(1);
  }
  if (!shape)
    return c.fail("the shape (input 1) must be a constant or a shape computation that folds");
  return defineReshape(c, shape->elements, c.attrInt("allowzero", 0) != 0);
}

static bool convertFlatten(NodeContext &c) {
  std::optional<std::vector<SymbolicSize>> dims = c.onnxDims(0);
  if (!dims)
    return c.input(0), false; // reports what input 0 is instead
  int64_t rank = int64_t(dims->size());
  int64_t axis = c.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
  if (axis < 0)
    axis += rank;
  std::optional<SymbolicSize> left = productOf({dims->begin(), dims->begin() + axis}),
                              right = productOf({dims->begin() + axis, dims->end()});
  if (!left || !right)
    return c.fail("the flattened input has more elements than fit in i64");
  return defineReshape(c, {*left, *right}, false);
}

static bool convertTranspose(NodeContext &c) {
  Attrs attrs;
  std::optional<std::vector<int64_t>> perm = c.attrInts("perm");
  if (const AxisRuns *runs = c.runsOf(0)) {
    // A grouped dim moves with all its factors.
    std::vector<int64_t> order = perm ? *perm : std::vector<int64_t>();
    if (!perm)
      for (int64_t d = int64_t(runs->size()) - 1; d >= 0; --d)
        order.push_back(d);
    std::vector<int64_t> firstAxis{0}, axes;
    AxisRuns permuted;
    for (int64_t run : *runs)
      firstAxis.push_back(firstAxis.back() + run);
    std::vector<bool> seen(runs->size());
    for (int64_t d : order) {
      if (d < 0 || d >= int64_t(runs->size()) || seen[d] || order.size() != runs->size())
        return c.fail("perm must be a permutation of the input's " +
                      std::to_string(runs->size()) + " axes");
      seen[d] = true;
      for (int64_t k = 0; k < (*runs)[d]; ++k)
        axes.push_back(firstAxis[d] + k);
      permuted.push_back((*runs)[d]);
    }
    attrs.set("axes", makeIntList(axes));
    c.defineGrouped(0, c.emit("permute_dims", {Operand::of(c.input(0))}, attrs), permuted);
    return true;
  }
  if (perm)
    attrs.set("axes", makeIntList(*perm));
  c.define(0, c.emit("permute_dims", {Operand::of(c.input(0))}, attrs));
  return true;
}

/// The axes of Squeeze/Unsqueeze: an input from opset 13.
static std::optional<std::vector<int64_t>> axesInput(NodeContext &c, bool required) {
  if (c.opset < 13) { // an attribute before opset 13
    std::optional<std::vector<int64_t>> axes = c.attrInts("axes");
    if (!axes && required)
      c.fail("the axes attribute is required");
    return axes;
  }
  if (c.hasInput(1))
    return c.ints(1, "axes");
  if (required)
    c.fail("axes (input 1) is required");
  return std::nullopt;
}

static bool convertUnsqueeze(NodeContext &c) {
  std::optional<std::vector<int64_t>> axes = axesInput(c, true);
  if (!axes)
    return false;
  if (std::optional<ShapeValue> shape = foldable(c); shape && shape->scalar &&
                                                       axes->size() == 1 &&
                                                       ((*axes)[0] == 0 || (*axes)[0] == -1)) {
    shape->scalar = false;
    c.defineShape(0, *shape);
    return true;
  }
  Attrs attrs;
  attrs.set("axis", makeIntList(*axes));
  c.define(0, c.emit("expand_dims", {Operand::of(c.input(0))}, attrs));
  return true;
}

static bool convertSqueeze(NodeContext &c) {
  std::optional<std::vector<int64_t>> axes = axesInput(c, false);
  if (!c.importer.error.empty())
    return false;
  if (std::optional<ShapeValue> shape = foldable(c);
      shape && !shape->scalar && shape->elements.size() == 1) {
    shape->scalar = true;
    c.defineShape(0, *shape);
    return true;
  }
  Value *x = c.input(0);
  if (!x)
    return false;
  // A symbolic dim is never assumed to be 1: without axes the output's rank
  // would depend on it; a squeezed axis must be 1.
  const std::vector<Dim> &shape = x->type.getShape();
  int64_t rank = int64_t(shape.size());
  for (int64_t d = 0; d < rank; ++d) {
    if (!shape[d].isSymbolic())
      continue;
    std::string fix = " (--dim " + shape[d].symbol + "=SIZE fixes its size)";
    if (!axes)
      return c.fail("without axes Squeeze removes every dim of size 1, and whether the "
                    "symbolic dim " + shape[d].symbol + " (dim " + std::to_string(d) +
                    ") is 1 is known only at run time" + fix);
    if (llvm::any_of(*axes, [&](int64_t axis) { return axis == d || axis + rank == d; }))
      return c.fail("Squeeze removes dim " + std::to_string(d) + ", whose symbolic size " +
                    shape[d].symbol + " is not known to be 1 (--dim " + shape[d].symbol +
                    "=1 fixes it)");
  }
  Attrs attrs;
  if (axes)
    attrs.set("axis", makeIntList(*axes));
  c.define(0, c.emit("squeeze", {Operand::of(x)}, attrs));
  return true;
}

static bool convertConcat(NodeContext &c) {
  // Concat-1 concatenates channels (axis 1) by default; from opset 4 the
  // axis is required.
  if (!c.hasAttr("axis") && c.opset >= 4)
    return c.fail("axis is required");
  int64_t axis = c.attrInt("axis", 1);
  // All inputs shape values (no FIR value): concatenate their elements.
  bool allShapes = c.numInputs() > 0;
  for (size_t i = 0; i < c.numInputs(); ++i)
    allShapes &= !c.typeOf(i) && c.shapeValue(i) && !c.shapeValue(i)->scalar;
  if (allShapes && (axis == 0 || axis == -1)) {
    ShapeValue result;
    result.dtype = c.shapeValue(0)->dtype;
    for (size_t i = 0; i < c.numInputs(); ++i) {
      std::optional<ShapeValue> part = c.shapeValue(i);
      result.elements.insert(result.elements.end(), part->elements.begin(),
                             part->elements.end());
    }
    c.defineShape(0, result);
    return true;
  }
  std::vector<Operand> operands;
  for (size_t i = 0; i < c.numInputs(); ++i)
    operands.push_back(Operand::of(c.input(i)));
  Attrs attrs;
  attrs.set("axis", Attr::makeInt(axis));
  c.define(0, c.emit("concat", operands, attrs));
  return true;
}

static bool convertSplit(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  int64_t rank = x->type.getRank();
  std::optional<int64_t> axis = normalizeAxis(c.attrInt("axis", 0), rank);
  if (!axis)
    return c.fail("axis is out of range for rank " + std::to_string(rank));
  size_t parts = c.numOutputs();
  Attr split = Attr::makeInt(int64_t(parts));
  std::optional<std::vector<int64_t>> sizes;
  if (c.opset < 13)
    sizes = c.attrInts("split");
  else if (c.hasInput(1) && !(sizes = c.ints(1, "split")))
    return false;
  if (sizes) {
    if (sizes->size() != parts)
      return c.fail("split has " + std::to_string(sizes->size()) + " sizes for " +
                    std::to_string(parts) + " outputs");
    std::vector<int64_t> indices;
    int64_t at = 0;
    for (size_t k = 0; k < sizes->size(); ++k) {
      if ((*sizes)[k] < 0 || (*sizes)[k] > kMaxDimSize)
        return c.fail("split size " + std::to_string((*sizes)[k]) + " is invalid");
      at += (*sizes)[k];
      if (k + 1 < sizes->size())
        indices.push_back(at);
    }
    const Dim &dim = x->type.getShape()[*axis];
    int64_t total = at;
    if (dim.isSymbolic() || dim.size != total)
      return c.fail("split sizes add up to " + std::to_string(total) + ", not the axis' size " +
                    dim.str());
    split = makeIntList(indices);
  }
  if (!sizes) {
    const Dim &dim = x->type.getShape()[*axis];
    if (dim.isStatic() && dim.size % int64_t(parts) != 0)
      return c.fail("the axis' size " + std::to_string(dim.size) + " does not split into " +
                    std::to_string(parts) + " equal parts");
  }
  if (parts == 1)
    return c.define(0, x), true;
  Attrs attrs;
  attrs.set("indices_or_sections", split);
  attrs.set("axis", Attr::makeInt(*axis));
  Value *tuple = c.emit("split", {Operand::of(x)}, attrs, c.node.name() + "_parts");
  if (!tuple)
    return false;
  for (size_t k = 0; k < parts; ++k) {
    if (!c.hasOutput(k))
      continue;
    auto get = std::make_unique<Binding>();
    get->kind = ExprKind::Get;
    get->operands.push_back(Operand::of(tuple));
    get->tupleIndex = int64_t(k);
    get->result = std::make_unique<Value>();
    get->result->type = tuple->type.getFields()[k];
    std::string problem;
    c.define(k, c.importer.addBinding(std::move(get), c.node.output(int(k)), problem));
  }
  return true;
}

static bool convertSlice(NodeContext &c) {
  bool attributes = c.opset < 10; // starts, ends and axes attributes
  std::optional<std::vector<int64_t>> starts =
      attributes ? c.attrInts("starts") : c.ints(1, "starts");
  // An end that is a symbolic dim: a static buffer cut to a sequence's
  // length (BERT's position_ids[:, :seq], GPT-2's causal mask), taken below.
  std::vector<std::optional<SymbolicSize>> symbolicEnds;
  std::optional<std::vector<int64_t>> ends;
  std::optional<ShapeValue> endShape = attributes ? std::nullopt : c.shapeValue(2);
  if (starts && endShape && !endShape->isStatic() && !foldable(c)) {
    ends.emplace();
    for (const SymbolicSize &end : endShape->elements) {
      symbolicEnds.push_back(end.isSymbolic() ? std::optional<SymbolicSize>(end) : std::nullopt);
      ends->push_back(end.isSymbolic() ? 0 : end.size);
    }
  } else {
    ends = attributes ? c.attrInts("ends") : starts ? c.ints(2, "ends") : std::nullopt;
  }
  if (!starts || !ends)
    return attributes ? c.fail("starts and ends are required") : false;
  std::vector<int64_t> axes, steps(starts->size(), 1);
  for (size_t k = 0; k < starts->size(); ++k)
    axes.push_back(int64_t(k));
  if (attributes && c.hasAttr("axes")) {
    axes = *c.attrInts("axes");
  } else if (!attributes && c.hasInput(3)) {
    std::optional<std::vector<int64_t>> given = c.ints(3, "axes");
    if (!given)
      return false;
    axes = *given;
  }
  if (!attributes && c.hasInput(4)) {
    std::optional<std::vector<int64_t>> given = c.ints(4, "steps");
    if (!given)
      return false;
    steps = *given;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return c.fail("starts, ends, axes and steps must have one length");
  if (std::optional<ShapeValue> shape = foldable(c);
      shape && !shape->scalar && axes.size() == 1 && (axes[0] == 0 || axes[0] == -1)) {
    // NumPy slicing of the elements.
    int64_t n = int64_t(shape->elements.size()), step = steps[0];
    if (step == 0)
      return c.fail("steps must not be 0");
    auto clampIndex = [&](int64_t i, bool isEnd) {
      if (i < 0)
        i = i < -n ? -1 : i + n;
      return step > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
    };
    ShapeValue result;
    result.dtype = shape->dtype;
    int64_t begin = clampIndex((*starts)[0], false), end = clampIndex((*ends)[0], true);
    for (int64_t i = begin; step > 0 ? i < end : i > end;) {
      result.elements.push_back(shape->elements[i]);
      if (__builtin_add_overflow(i, step, &i))
        break;
    }
    c.defineShape(0, result);
    return true;
  }
  // A slice of a whole symbolic dim (start 0, end past any size, step 1:
  // tf2onnx's x[:, 0:INT_MAX]) changes nothing there; FIR's strided_slice
  // takes no symbolic dim.
  Value *x = c.input(0);
  if (!x)
    return false;
  int64_t rank = x->type.getRank();
  auto dropEntry = [&](size_t k) {
    axes.erase(axes.begin() + k);
    starts->erase(starts->begin() + k);
    ends->erase(ends->begin() + k);
    steps.erase(steps.begin() + k);
  };
  // Entry k done as a take of `indices` along `axis`: x becomes it.
  auto takeEntry = [&](size_t k, int64_t axis, Value *indices) {
    Attrs attrs;
    attrs.set("axis", Attr::makeInt(axis));
    x = indices ? c.emit("take", {Operand::of(x), Operand::of(indices)}, attrs) : nullptr;
    dropEntry(k);
    return x != nullptr;
  };
  // x[..., 0:seq] of a static dim takes the indices arange(seq): the
  // result's dim is seq, which must then not exceed the dim (a larger one
  // reads out of range: an error in the interpreter, clamped on a GPU).
  for (size_t k = symbolicEnds.size(); k-- > 0;) {
    if (!symbolicEnds[k])
      continue;
    int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    std::optional<Dim> end = symbolicEnds[k]->asDim();
    if (axis < 0 || axis >= rank)
      return c.fail("axes entry " + std::to_string(axes[k]) + " is out of range for rank " +
                    std::to_string(rank));
    const Dim &dim = x->type.getShape()[axis];
    if (!end || (*starts)[k] != 0 || steps[k] != 1 || (dim.isSymbolic() && dim != *end))
      return c.fail("ends entry " + std::to_string(k) + " is " + symbolicEnds[k]->str() +
                    ": a symbolic end is supported from start 0 with step 1 on a static "
                    "dim or the same dim (" + dimOptions({*symbolicEnds[k]}) +
                    " fixes its size)");
    if (dim.isSymbolic())
      dropEntry(k); // the whole dim
    else if (!takeEntry(k, axis, indexVector(c, *end, 0, c.node.output(0) + "_indices")))
      return false;
  }
  for (size_t k = axes.size(); k-- > 0;) {
    int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (axis >= 0 && axis < rank && x->type.getShape()[axis].isSymbolic() &&
        symbolicSliceOf((*starts)[k], (*ends)[k], steps[k]) == SymbolicSlice::Whole)
      dropEntry(k);
  }
  if (axes.empty())
    return c.define(0, x), true;
  // A static stretch of a symbolic dim, counted from its start (BERT's
  // pooler x[:, 0:1]) or from its end (the last token, x[:, -1:]), is a take
  // of constant indices (negative ones count from the end), assuming the dim
  // is long enough (a shorter one reads out of range: an error in the
  // interpreter, clamped on a GPU). Any other slice of it has a size that is
  // no FIR dim.
  for (size_t k = axes.size(); k-- > 0;) {
    int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (axis < 0 || axis >= rank || x->type.getShape()[axis].isStatic())
      continue;
    const std::string &symbol = x->type.getShape()[axis].symbol;
    int64_t start = (*starts)[k], end = (*ends)[k], step = steps[k];
    // The whole dim reversed (torch.flip, x[::-1]) is strided_slice's too.
    if (symbolicSliceOf(start, end, step) == SymbolicSlice::Reversed)
      continue;
    if (start < 0 && end >= kMaxDimSize)
      end = 0; // to the end, counted from it
    bool fromStart = start >= 0 && end < kMaxDimSize,
         fromEnd = start < 0 && start > -kMaxDimSize && end <= 0;
    // (Both bounds within 2^40 of 0 here: end - start cannot overflow.)
    if (step <= 0 || !(fromStart || fromEnd) || start >= end || (end - start) / step > (1 << 24))
      return c.fail("slicing the symbolic dim '" + symbol + "' from " +
                    std::to_string((*starts)[k]) + " to " + std::to_string((*ends)[k]) +
                    " with step " + std::to_string(steps[k]) +
                    " is not supported: the result's size is no FIR dim (a whole dim, "
                    "forward or reversed, or a static stretch from its start or its end, is; "
                    "--dim " +
                    symbol + "=SIZE fixes its size)");
    int64_t count = (end - start - 1) / step + 1; // step may be near 2^63
    TensorData indices(DType::i64, {count});
    for (int64_t i = 0; i < count; ++i)
      indices.setInt(i, start + i * step);
    if (!takeEntry(k, axis,
                   c.emitConstant(std::move(indices), c.node.output(0) + "_positions")))
      return false;
  }
  if (axes.empty())
    return c.define(0, x), true;
  Attrs attrs;
  attrs.set("axes", makeIntList(axes));
  attrs.set("begin", makeIntList(*starts));
  attrs.set("end", makeIntList(*ends));
  attrs.set("strides", makeIntList(steps));
  c.define(0, c.emit("strided_slice", {Operand::of(x)}, attrs));
  return true;
}

static bool convertGather(NodeContext &c) {
  int64_t axis = c.attrInt("axis", 0);
  if (std::optional<ShapeValue> shape = foldable(c); shape && !shape->scalar) {
    if (std::optional<ShapeValue> indices = c.shapeValue(1); indices && indices->isStatic()) {
      if (axis != 0 && axis != -1)
        return c.fail("axis " + std::to_string(axis) + " of a 1-D shape value");
      ShapeValue result;
      result.scalar = indices->scalar;
      result.dtype = shape->dtype;
      int64_t n = int64_t(shape->elements.size());
      for (const SymbolicSize &index : indices->elements) {
        if (index.size < -n || index.size >= n)
          return c.fail("index " + std::to_string(index.size) + " is out of range for " +
                        std::to_string(n) + " elements");
        result.elements.push_back(shape->elements[index.size < 0 ? index.size + n : index.size]);
      }
      c.defineShape(0, result);
      return true;
    }
  }
  Value *data = c.input(0);
  if (!data)
    return false;
  std::optional<int64_t> normalized = normalizeAxis(axis, data->type.getRank());
  if (!normalized)
    return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(data->type.getRank()));
  Value *indices = nullptr;
  if (const TensorData *constant = c.constant(1)) {
    if (constant->getDType() != DType::i32 && constant->getDType() != DType::i64)
      return c.fail("indices must be int32 or int64, not " +
                    dtypeName(constant->getDType()).str());
    // Constant indices: negative ones counted from the end here.
    const Dim &dim = data->type.getShape()[*normalized];
    TensorData fixed(DType::i64, constant->getShape());
    for (int64_t k = 0; k < constant->getNumElements(); ++k) {
      int64_t index = constant->getInt(k);
      if (dim.isStatic() && (index < -dim.size || index >= dim.size))
        return c.fail("index " + std::to_string(index) + " is out of range for a dim of " +
                      std::to_string(dim.size));
      fixed.setInt(k, index < 0 && dim.isStatic() ? index + dim.size : index);
    }
    indices = c.emitConstant(std::move(fixed), c.node.output(0) + "_indices");
  } else {
    indices = c.input(1);
  }
  Attrs attrs;
  attrs.set("axis", Attr::makeInt(*normalized));
  c.define(0, c.emit("take", {Operand::of(data), Operand::of(indices)}, attrs));
  return true;
}

void onnximport::registerTensorOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Reshape", convertReshape},
      {"Flatten", convertFlatten},
      {"Transpose", convertTranspose},
      {"Unsqueeze", convertUnsqueeze},
      {"Squeeze", convertSqueeze},
      {"Concat", convertConcat},
      {"Split", convertSplit},
      {"Slice", convertSlice},
      {"Gather", convertGather},
  });
}
