//===- ONNXOpsScatter.cpp - Scatters with constant indices ----------------===//
//
// FIR has no scatter. ScatterND and ScatterElements (Scatter, its name in
// opsets 9 and 10) are imported when their indices are constants, as in
// PyTorch's slice assignment (`y[..., 0:2] = v` exports a ScatterND), on a
// static data shape; reduction none, add or mul (opset 16):
//   1. An index addresses a position of the data's first k dims (ScatterND:
//      the indices' last dim; ScatterElements: all), and writes the slice
//      of the remaining dims there.
//   2. The update rows written at each position are listed in index order.
//      Reduction none keeps the last (ONNX leaves duplicates undefined;
//      ONNX Runtime's loop keeps the last); add and mul combine them all,
//      in order, into the data.
//   3. Per level j (the j-th update of each position; one level for none),
//      a constant `source_j` of the first k dims names the row: out =
//      where(written_j, out (+|*) take(updates as [U, dims after k],
//      source_j), out), from out = data (none: the take alone replaces it).
//      The take has the data's shape, so the data is read where it lies:
//      elementwise and injective ops that fuse into one kernel. Where every
//      position is written, the where is left out.
// Negative indices count from the end of their dim; one still out of range
// is an import error (the indices are known).
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

/// Positions and updates are at most this many (constants built at import).
static constexpr int64_t kMaxScatterConstant = int64_t(1) << 24;

/// Most updates one position may receive with reduction add or mul (each
/// is one take and one combine).
static constexpr size_t kMaxWritesPerPosition = 64;

/// Steps 2 and 3, given `writers` (per position of the data's first `k`
/// dims, row-major, the update rows written there in index order).
static bool scatterRows(NodeContext &c, Value *data, Value *updates,
                        const std::vector<int64_t> &dataShape, size_t k,
                        const std::vector<std::vector<int64_t>> &writers, int64_t updateRows,
                        const std::string &reduction) {
  std::string name = c.node.output(0);
  // The updates as [U, the data's dims after k]: the take by a constant of
  // the data's first k dims then has the data's shape.
  Shape rowShape{Dim::of(updateRows)}, sourceShape, maskShape;
  std::vector<int64_t> sourceDims(dataShape.begin(), dataShape.begin() + k), maskDims = sourceDims;
  for (size_t d = k; d < dataShape.size(); ++d) {
    rowShape.push_back(Dim::of(dataShape[d]));
    maskDims.push_back(1);
  }
  Value *updateRowsView = updates->type.getShape() == rowShape
                              ? updates
                              : reshapeTo(c, updates, rowShape, name + "_updates");
  size_t levels = reduction == "none" ? 1 : 0;
  for (const std::vector<int64_t> &list : writers)
    levels = std::max(levels, list.size());
  if (levels > kMaxWritesPerPosition)
    return c.fail("a position receives " + std::to_string(levels) +
                  " updates; fusec combines at most " + std::to_string(kMaxWritesPerPosition));
  Value *out = data;
  for (size_t level = 0; level < levels && out && updateRowsView; ++level) {
    // Reduction none: the last update of each position alone.
    auto writer = [&](size_t p) -> int64_t {
      const std::vector<int64_t> &list = writers[p];
      if (reduction == "none")
        return list.empty() ? -1 : list.back();
      return level < list.size() ? list[level] : -1;
    };
    TensorData rowOf(DType::i64, sourceDims), written(DType::boolean, maskDims);
    bool everywhere = true, anywhere = false;
    for (size_t p = 0; p < writers.size(); ++p) {
      rowOf.setInt(int64_t(p), std::max<int64_t>(writer(p), 0));
      written.set(int64_t(p), writer(p) >= 0);
      everywhere &= writer(p) >= 0;
      anywhere |= writer(p) >= 0;
    }
    if (!anywhere) // no updates (empty indices): the data as it is
      continue;
    std::string step = name + (levels > 1 ? "_" + std::to_string(level) : "");
    Attrs take;
    take.set("axis", Attr::makeInt(0));
    Value *gathered = c.emit("take",
                             {Operand::of(updateRowsView),
                              Operand::of(c.emitConstant(std::move(rowOf), step + "_source"))},
                             take, step + "_gathered");
    Value *combined = reduction == "none" || !gathered
                          ? gathered
                          : c.emit(reduction == "add" ? "add" : "multiply",
                                   {Operand::of(out), Operand::of(gathered)}, {}, step + "_combined");
    out = everywhere || !combined
              ? combined
              : c.emit("where",
                       {Operand::of(c.emitConstant(std::move(written), step + "_written")),
                        Operand::of(combined), Operand::of(out)},
                       {}, step + "_rows");
  }
  if (!out)
    return false;
  c.define(0, out);
  return true;
}

/// What both scatters read: the data and updates (one dtype, static
/// shapes), the constant indices and the reduction (none, add or mul; from
/// opset 16).
struct ScatterInputs {
  Value *data = nullptr, *updates = nullptr;
  const TensorData *indices = nullptr;
  std::vector<int64_t> shape; // the data's
  std::string reduction;
};

static std::optional<ScatterInputs> readScatter(NodeContext &c) {
  ScatterInputs in;
  in.reduction = c.attrString("reduction", "none");
  if (in.reduction != "none" && in.reduction != "add" && in.reduction != "mul")
    return c.fail("reduction '" + in.reduction + "' is not supported (none, add and mul are)"),
           std::nullopt;
  in.data = c.input(0);
  in.updates = c.input(2);
  if (!in.data || !in.updates)
    return std::nullopt;
  in.indices = c.constant(1);
  if (!in.indices)
    return c.fail("the indices (input 1) must be a constant: FIR has no scatter, so fusec "
                  "builds it from a gather at import"),
           std::nullopt;
  bool elementwise = c.node.op_type() != "ScatterND"; // int32 or int64; ScatterND: int64
  DType indexType = in.indices->getDType();
  if (indexType != DType::i64 && !(elementwise && indexType == DType::i32))
    return c.fail(std::string("the indices must be ") + (elementwise ? "int32 or int64" : "int64") +
                  ", not " + dtypeName(indexType).str()),
           std::nullopt;
  if (in.updates->type.getDType() != in.data->type.getDType())
    return c.fail("the updates " + in.updates->type.str() + " must have the data's dtype, " +
                  in.data->type.str()),
           std::nullopt;
  std::optional<std::vector<int64_t>> shape = staticShape(c, in.data, "the data");
  if (!shape || !staticShape(c, in.updates, "the updates"))
    return std::nullopt;
  in.shape = *shape;
  int64_t elements = 1;
  for (int64_t dim : in.shape)
    elements = dim ? std::min(elements * dim, kMaxScatterConstant + 1) : 0;
  if (elements > kMaxScatterConstant || in.indices->getNumElements() > kMaxScatterConstant)
    return c.fail("the data or indices are larger than fusec builds a scatter for at import "
                  "(2^24 elements)"),
           std::nullopt;
  return in;
}

/// `index` counted from the end when negative, checked against `extent`.
static std::optional<int64_t> normalize(NodeContext &c, int64_t index, int64_t extent) {
  int64_t normalized = index < 0 ? index + extent : index;
  if (normalized < 0 || normalized >= extent)
    return c.fail("index " + std::to_string(index) + " is out of range for a dim of " +
                  std::to_string(extent)),
           std::nullopt;
  return normalized;
}

static bool scatterND(NodeContext &c, const ScatterInputs &in) {
  const std::vector<int64_t> &shape = in.shape;
  const TensorData *indices = in.indices;
  Value *data = in.data, *updates = in.updates;
  const std::vector<int64_t> &indexShape = indices->getShape();
  if (indexShape.empty() || indexShape.back() < 1 || indexShape.back() > int64_t(shape.size()))
    return c.fail("the indices' last dim must be in [1, " + std::to_string(shape.size()) +
                  "] (the data's rank)");
  size_t k = size_t(indexShape.back());
  std::vector<int64_t> expected(indexShape.begin(), indexShape.end() - 1);
  expected.insert(expected.end(), shape.begin() + k, shape.end());
  const Shape &given = updates->type.getShape();
  if (given.size() != expected.size() ||
      !std::equal(expected.begin(), expected.end(), given.begin(),
                  [](int64_t size, const Dim &dim) { return dim == Dim::of(size); }))
    return c.fail("the updates are " + updates->type.str() + "; these indices need " +
                  Type::tensor(data->type.getDType(), [&] {
                    Shape dims;
                    for (int64_t dim : expected)
                      dims.push_back(Dim::of(dim));
                    return dims;
                  }()).str() +
                  " (the indices' shape without its last dim, then the data's dims after the "
                  "first " + std::to_string(k) + ")");
  int64_t rows = 1, updateRows = indices->getNumElements() / int64_t(k);
  for (size_t d = 0; d < k; ++d)
    rows *= shape[d];
  std::vector<std::vector<int64_t>> writers(static_cast<size_t>(rows));
  for (int64_t u = 0; u < updateRows; ++u) {
    int64_t position = 0;
    for (size_t d = 0; d < k; ++d) {
      std::optional<int64_t> index =
          normalize(c, indices->getInt(u * int64_t(k) + int64_t(d)), shape[d]);
      if (!index)
        return false;
      position = position * shape[d] + *index;
    }
    writers[size_t(position)].push_back(u);
  }
  return scatterRows(c, data, updates, shape, k, writers, updateRows, in.reduction);
}

static bool scatterElements(NodeContext &c, const ScatterInputs &in) {
  const std::vector<int64_t> &shape = in.shape;
  const TensorData *indices = in.indices;
  Value *data = in.data, *updates = in.updates;
  int64_t rank = int64_t(shape.size()), axis = c.attrInt("axis", 0);
  const std::vector<int64_t> &indexShape = indices->getShape();
  if (rank == 0 || int64_t(indexShape.size()) != rank)
    return c.fail("data and indices must have one rank of at least 1");
  if (axis < -rank || axis >= rank)
    return c.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
  if (axis < 0)
    axis += rank;
  const Shape &given = updates->type.getShape();
  for (int64_t d = 0; d < rank; ++d) {
    if (size_t(rank) != given.size() || given[size_t(d)] != Dim::of(indexShape[size_t(d)]))
      return c.fail("the updates " + updates->type.str() + " must have the indices' shape");
    if (d != axis && indexShape[size_t(d)] > shape[size_t(d)])
      return c.fail("the indices exceed the data " + data->type.str() + " in dim " +
                    std::to_string(d));
  }
  int64_t rows = 1;
  for (int64_t dim : shape)
    rows *= dim;
  std::vector<std::vector<int64_t>> writers(static_cast<size_t>(rows));
  std::vector<int64_t> indexStrides = rowMajorStrides(indexShape);
  for (int64_t u = 0; u < indices->getNumElements(); ++u) {
    int64_t position = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t coordinate = u / indexStrides[size_t(d)] % indexShape[size_t(d)];
      if (d == axis) {
        std::optional<int64_t> index = normalize(c, indices->getInt(u), shape[size_t(d)]);
        if (!index)
          return false;
        coordinate = *index;
      }
      position = position * shape[size_t(d)] + coordinate;
    }
    writers[size_t(position)].push_back(u);
  }
  return scatterRows(c, data, updates, shape, shape.size(), writers,
                     indices->getNumElements(), in.reduction);
}

template <bool (*Scatter)(NodeContext &, const ScatterInputs &)>
static bool convertScatter(NodeContext &c) {
  std::optional<ScatterInputs> in = readScatter(c);
  return in && Scatter(c, *in);
}

void onnximport::registerScatterOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {{"ScatterND", convertScatter<scatterND>},
                             {"ScatterElements", convertScatter<scatterElements>},
                             {"Scatter", convertScatter<scatterElements>}});
}
