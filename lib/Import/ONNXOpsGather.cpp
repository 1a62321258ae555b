//===- ONNXOpsGather.cpp - Element gathers and one-hot --------------------===//
//
// FIR's `take` gathers whole slices along one axis. The element gathers
// compute a flat index per output element and take from the flattened data
// (static data shapes; the index arithmetic fuses into the take's kernel):
//   GatherElements(data, idx, axis): flat = idx' * stride[axis] +
//       sum over the other dims d of i_d * stride[d] (a constant of idx's
//       shape with a unit axis), idx' = idx + n where idx < 0.
//   GatherND(data, idx[..., k], batch_dims b): flat = sum over j of
//       idx'[..., j] * stride_j over data's k dims after the b batch dims,
//       plus each batch entry's start, and the take is from data reshaped
//       to [prod(first b + k dims), rest...].
//   OneHot(idx, depth, values): where(idx' == iota along `axis`, on, off),
//       depth a constant, idx' = idx + depth where idx < 0 (float indices
//       truncated); an index out of range is all off, as ONNX says.
// An index out of range along its own dim makes the flat index point past
// the data: a run-time error in the interpreter and clamped on the GPU, as
// for `take` (spec §4), never a read of another row.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include <cmath>

using namespace fusec;
using namespace fusec::onnximport;

/// Index constants (offsets, iotas) are at most this many elements.
static constexpr int64_t kMaxIndexConstant = int64_t(1) << 24;

/// Input `i` as i64 indices with negative ones counted from the end of a
/// dim of `extent` (a constant or, per element, `extents`); float indices
/// (OneHot's) are truncated.
static Value *normalizedIndices(NodeContext &c, size_t i, Value *extents, int64_t extent,
                                const std::string &hint, bool allowFloat = false) {
  Value *indices = c.input(i);
  if (!indices)
    return nullptr;
  DType dtype = indices->type.getDType();
  if (dtype != DType::i32 && dtype != DType::i64 && !(allowFloat && isFloatDType(dtype))) {
    c.fail("indices must be int32 or int64, not " + dtypeName(dtype).str());
    return nullptr;
  }
  if (dtype != DType::i64) {
    Attrs attrs;
    attrs.set("dtype", Attr::makeString("i64"));
    indices = c.emit("astype", {Operand::of(indices)}, attrs, hint + "_i64");
  }
  Value *negative = c.emit("less", {Operand::of(indices), NodeContext::literal(0, DType::i64)}, {},
                           hint + "_negative");
  Operand size = extents ? Operand::of(extents) : NodeContext::literal(double(extent), DType::i64);
  Value *wrapped = c.emit("add", {Operand::of(indices), size}, {}, hint + "_wrapped");
  return c.emit("where", {Operand::of(negative), Operand::of(wrapped), Operand::of(indices)}, {},
                hint);
}

/// `term` where the normalized index `index` is in [0, extent), else
/// `outside`: a flat index past the flattened data, so that an index out of
/// range along its own dim is the take's run-time error (clamped on the
/// GPU) instead of a read of a neighbouring row.
static Value *guarded(NodeContext &c, Value *index, Operand extent, Value *term,
                      int64_t outside, const std::string &hint) {
  Value *nonNegative = c.emit("greater_equal",
                              {Operand::of(index), NodeContext::literal(0, DType::i64)}, {},
                              hint + "_nonnegative");
  Value *below = c.emit("less", {Operand::of(index), extent}, {}, hint + "_below");
  Value *inRange = c.emit("logical_and", {Operand::of(nonNegative), Operand::of(below)}, {},
                          hint + "_in_range");
  if (!inRange || !term)
    return nullptr;
  return c.emit("where", {Operand::of(inRange), Operand::of(term),
                          NodeContext::literal(double(outside), DType::i64)},
                {}, hint);
}

std::optional<std::vector<int64_t>> onnximport::staticShape(NodeContext &c, Value *x,
                                                            const char *what) {
  std::vector<int64_t> shape;
  std::vector<SymbolicSize> symbolic; // all of them, for one message
  for (const Dim &dim : x->type.getShape()) {
    if (dim.isSymbolic() && !llvm::is_contained(symbolic, SymbolicSize::of(dim)))
      symbolic.push_back(SymbolicSize::of(dim));
    shape.push_back(dim.size);
  }
  if (!symbolic.empty())
    return c.fail(std::string(what) + " must have a static shape, not " + x->type.str() + " (" +
                  dimOptions(symbolic) + (symbolic.size() == 1 ? " fixes its size)" : " fix their sizes)")),
           std::nullopt;
  return shape;
}

/// Defines the node's output as take(reshape(data, sourceShape), flat) along
/// axis 0 (the gathers' last step).
static bool takeFlat(NodeContext &c, Value *data, const std::vector<Dim> &sourceShape,
                     Value *flat) {
  Attrs reshape;
  reshape.set("shape", makeShapeList(sourceShape));
  Value *source = c.emit("reshape", {Operand::of(data)}, reshape, c.node.output(0) + "_data");
  if (!flat || !source)
    return false;
  Attrs take;
  take.set("axis", makeIntList({0}));
  c.define(0, c.emit("take", {Operand::of(source), Operand::of(flat)}, take));
  return true;
}

static bool convertGatherElements(NodeContext &c) {
  Value *data = c.input(0), *rawIndices = c.input(1);
  if (!data || !rawIndices)
    return false;
  std::optional<std::vector<int64_t>> shape = staticShape(c, data, "the data");
  std::optional<std::vector<int64_t>> indexShape = staticShape(c, rawIndices, "the indices");
  if (!shape || !indexShape)
    return false;
  int64_t rank = int64_t(shape->size()), axis = c.attrInt("axis", 0);
  if (rank == 0 || int64_t(indexShape->size()) != rank)
    return c.fail("data and indices must have one rank of at least 1, not " + data->type.str() +
                  " and " + rawIndices->type.str());
  if (axis < -rank || axis >= rank)
    return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
  if (axis < 0)
    axis += rank;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && (*indexShape)[d] > (*shape)[d])
      return c.fail("indices " + rawIndices->type.str() + " exceed the data " +
                    data->type.str() + " in dim " + std::to_string(d));
  std::string name = c.node.output(0);
  std::vector<int64_t> strides = rowMajorStrides(*shape);
  // The other dims' part of each flat index: a constant with a unit axis.
  std::vector<int64_t> offsetShape = *indexShape;
  offsetShape[axis] = 1;
  TensorData offsets(DType::i64, offsetShape);
  if (offsets.getNumElements() > kMaxIndexConstant)
    return c.fail("the indices are larger than fusec builds offsets for at import (2^24)");
  std::vector<int64_t> offsetStrides = rowMajorStrides(offsetShape);
  for (int64_t k = 0; k < offsets.getNumElements(); ++k) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d)
      flat += (k / offsetStrides[d] % offsetShape[d]) * strides[d];
    offsets.setInt(k, flat);
  }
  Value *indices = normalizedIndices(c, 1, nullptr, (*shape)[axis], name + "_indices");
  Value *scaled = indices ? c.emit("multiply", {Operand::of(indices),
                                                NodeContext::literal(double(strides[axis]),
                                                                     DType::i64)},
                                   {}, name + "_scaled")
                          : nullptr;
  Value *offsetValue = c.emitConstant(std::move(offsets), name + "_offsets");
  Value *unguarded = scaled ? c.emit("add", {Operand::of(scaled), Operand::of(offsetValue)}, {},
                                     name + "_unguarded")
                            : nullptr;
  int64_t elements = 1;
  for (int64_t dim : *shape)
    elements *= dim;
  Value *flat = indices ? guarded(c, indices,
                                  NodeContext::literal(double((*shape)[axis]), DType::i64),
                                  unguarded, elements, name + "_flat")
                        : nullptr;
  return takeFlat(c, data, {Dim::of(elements)}, flat);
}

static bool convertGatherND(NodeContext &c) {
  int64_t batchDims = c.attrInt("batch_dims", 0);
  Value *data = c.input(0), *rawIndices = c.input(1);
  if (!data || !rawIndices)
    return false;
  std::optional<std::vector<int64_t>> shape = staticShape(c, data, "the data");
  if (!shape)
    return false;
  const Shape &indexShape = rawIndices->type.getShape();
  if (indexShape.empty() || indexShape.back().isSymbolic())
    return c.fail("the indices' last dim must be static, not " + rawIndices->type.str());
  int64_t k = indexShape.back().size, rank = int64_t(shape->size());
  int64_t indexRank = int64_t(indexShape.size());
  if (batchDims < 0 || batchDims >= std::min(rank, indexRank))
    return c.fail("batch_dims = " + std::to_string(batchDims) + " must be less than both ranks");
  for (int64_t d = 0; d < batchDims; ++d)
    if (indexShape[d] != Dim::of((*shape)[d]))
      return c.fail("the indices " + rawIndices->type.str() + " and the data " +
                    data->type.str() + " differ in batch dim " + std::to_string(d));
  if (k < 1 || k > rank - batchDims)
    return c.fail("the indices' last dim, " + std::to_string(k) + ", must be in [1, " +
                  std::to_string(rank - batchDims) + "] for the data " + data->type.str());
  std::string name = c.node.output(0);
  // Per index component j: its dim's size and its stride over the k dims
  // after the batch dims.
  std::vector<int64_t> leading(shape->begin() + batchDims, shape->begin() + batchDims + k);
  std::vector<int64_t> strides = rowMajorStrides(leading);
  TensorData sizes(DType::i64, {k}), strideData(DType::i64, {k});
  for (int64_t j = 0; j < k; ++j) {
    sizes.setInt(j, leading[j]);
    strideData.setInt(j, strides[j]);
  }
  Value *extents = c.emitConstant(std::move(sizes), name + "_extents");
  Value *indices = normalizedIndices(c, 1, extents, 0, name + "_indices");
  Value *strideValue = c.emitConstant(std::move(strideData), name + "_strides");
  Value *product = indices ? c.emit("multiply", {Operand::of(indices), Operand::of(strideValue)},
                                    {}, name + "_product")
                           : nullptr;
  int64_t outside = 1; // past the whole source: out of range whatever else is added
  for (int64_t dim : *shape)
    outside = dim && outside > (int64_t(1) << 40) / dim ? int64_t(1) << 40 : outside * dim;
  Value *scaled = indices ? guarded(c, indices, Operand::of(extents), product, outside,
                                    name + "_scaled")
                          : nullptr;
  Attrs last;
  last.set("axis", makeIntList({-1}));
  Value *flat = scaled ? c.emit("sum", {Operand::of(scaled)}, last,
                                batchDims ? name + "_within" : name + "_flat")
                       : nullptr;
  int64_t leadingElements = 1;
  for (int64_t dim : leading)
    leadingElements *= dim;
  if (batchDims && flat) {
    // Each batch entry starts leadingElements * its linear batch index in.
    std::vector<int64_t> offsetShape(shape->begin(), shape->begin() + batchDims);
    offsetShape.resize(size_t(indexRank - 1), 1);
    TensorData offsets(DType::i64, offsetShape);
    if (offsets.getNumElements() > kMaxIndexConstant)
      return c.fail("the batch is larger than fusec builds offsets for at import (2^24)");
    for (int64_t b = 0; b < offsets.getNumElements(); ++b)
      offsets.setInt(b, b * leadingElements);
    Value *batchOffsets = c.emitConstant(std::move(offsets), name + "_batch_offsets");
    flat = c.emit("add", {Operand::of(flat), Operand::of(batchOffsets)}, {}, name + "_flat");
    for (int64_t d = 0; d < batchDims; ++d)
      leadingElements *= (*shape)[d];
  }
  std::vector<Dim> sourceShape{Dim::of(leadingElements)};
  for (int64_t d = batchDims + k; d < rank; ++d)
    sourceShape.push_back(Dim::of((*shape)[d]));
  return takeFlat(c, data, sourceShape, flat);
}

static bool convertOneHot(NodeContext &c) {
  // depth may be of any numeric type (a float is truncated, as ONNX says).
  const TensorData *depthData = c.constant(1), *values = c.constant(2);
  if (!depthData || depthData->getNumElements() != 1)
    return c.fail("depth (input 1) must be a one-element constant");
  if (!values || values->getNumElements() != 2)
    return c.fail("values (input 2) must be a constant [off, on] pair");
  double depthNumber = std::trunc(isFloatDType(depthData->getDType())
                                      ? depthData->get(0)
                                      : double(depthData->getInt(0)));
  if (!(depthNumber >= 1 && depthNumber <= double(kMaxIndexConstant)))
    return c.fail("depth must be in [1, 2^24]");
  int64_t depth = int64_t(depthNumber);
  Value *raw = c.input(0);
  if (!raw)
    return false;
  int64_t rank = raw->type.getRank() + 1, axis = c.attrInt("axis", -1);
  if (axis < -rank || axis >= rank)
    return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
  if (axis < 0)
    axis += rank;
  std::string name = c.node.output(0);
  Value *indices = normalizedIndices(c, 0, nullptr, depth, name + "_indices", true);
  Attrs expand;
  expand.set("axis", makeIntList({axis}));
  Value *expanded = indices ? c.emit("expand_dims", {Operand::of(indices)}, expand,
                                     name + "_expanded")
                            : nullptr;
  std::vector<int64_t> iotaShape(size_t(rank - axis), 1);
  iotaShape[0] = depth;
  TensorData iota(DType::i64, iotaShape);
  for (int64_t k = 0; k < depth; ++k)
    iota.setInt(k, k);
  Value *positions = c.emitConstant(std::move(iota), name + "_positions");
  Value *hit = expanded ? c.emit("equal", {Operand::of(expanded), Operand::of(positions)}, {},
                                 name + "_hit")
                        : nullptr;
  DType dtype = values->getDType();
  auto scalar = [&](int64_t k, const char *suffix) {
    return c.emitSplat(isFloatDType(dtype) ? values->get(k) : double(values->getInt(k)), dtype,
                       {}, name + suffix);
  };
  Value *off = scalar(0, "_off"), *on = scalar(1, "_on");
  if (!hit || !off || !on)
    return false;
  c.define(0, c.emit("where", {Operand::of(hit), Operand::of(on), Operand::of(off)}));
  return true;
}

void onnximport::registerGatherOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"GatherElements", convertGatherElements},
      {"GatherND", convertGatherND},
      {"OneHot", convertOneHot},
  });
}
