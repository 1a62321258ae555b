//===- ONNXOpsSpatial.cpp - DepthToSpace, SpaceToDepth ---------------------===//
//
// FIR has none of these operators; each becomes the layout or convolution
// ops that compute it:
//   DepthToSpace (PixelShuffle) and SpaceToDepth: reshape to rank 6,
//     permute_dims, reshape back (ONNX's DCR and CRD orders);
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

bool onnximport::staticDims(NodeContext &c, const Type &x, const std::vector<int64_t> &dims) {
  for (int d : dims)
    if (x.getShape()[size_t(d)].isSymbolic())
      return c.fail("dim " + std::to_string(d) + " of " + x.str() + " must be static, not '" +
                    x.getShape()[size_t(d)].symbol + "' (--dim " + x.getShape()[size_t(d)].symbol +
                    "=SIZE fixes its size)");
  return true;
}

Value *onnximport::reshapeTo(NodeContext &c, Value *x, const Shape &shape,
                              const std::string &hint) {
  Attrs attrs;
  attrs.set("shape", makeShapeList(shape));
  return x ? c.emit("reshape", {Operand::of(x)}, attrs, hint) : nullptr;
}

Value *onnximport::permute(NodeContext &c, Value *x, const std::vector<int64_t> &axes,
                           const std::string &hint) {
  Attrs attrs;
  attrs.set("axes", makeIntList(axes));
  return x ? c.emit("permute_dims", {Operand::of(x)}, attrs, hint) : nullptr;
}

template <bool ToSpace>
static bool convertDepthSpace(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  if (x->type.getRank() != 4)
    return c.fail("the input must be NCHW (rank 4), not " + x->type.str());
  if (!staticDims(c, x->type, {1, 2, 3}))
    return false;
  int64_t block = c.attrInt("blocksize", 0);
  if (block < 1 || block > 1024)
    return c.fail("blocksize must be in [1, 1024]");
  const Shape &in = x->type.getShape();
  Dim n = in[0];
  int64_t channels = in[1].size, height = in[2].size, width = in[3].size;
  std::string name = c.node.output(0);
  if (ToSpace) { // DepthToSpace
    std::string mode = c.attrString("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      return c.fail("mode must be DCR or CRD, not '" + mode + "'");
    if (channels % (block * block) != 0)
      return c.fail("the channels (" + std::to_string(channels) + ") are not a multiple of " +
                    std::to_string(block * block));
    int64_t depth = channels / (block * block);
    Dim b = Dim::of(block), d = Dim::of(depth), h = Dim::of(height), w = Dim::of(width);
    Value *split = mode == "DCR" ? reshapeTo(c, x, {n, b, b, d, h, w}, name + "_blocks")
                                 : reshapeTo(c, x, {n, d, b, b, h, w}, name + "_blocks");
    Value *moved = mode == "DCR" ? permute(c, split, {0, 3, 4, 1, 5, 2}, name + "_moved")
                                 : permute(c, split, {0, 1, 4, 2, 5, 3}, name + "_moved");
    c.define(0, reshapeTo(c, moved, {n, d, Dim::of(height * block), Dim::of(width * block)},
                          name));
    return true;
  }
  if (height % block || width % block)
    return c.fail("the spatial dims " + std::to_string(height) + "x" + std::to_string(width) +
                  " are not multiples of the blocksize " + std::to_string(block));
  Dim b = Dim::of(block);
  Value *split = reshapeTo(c, x,
                           {n, Dim::of(channels), Dim::of(height / block), b,
                            Dim::of(width / block), b},
                           name + "_blocks");
  Value *moved = permute(c, split, {0, 3, 5, 1, 2, 4}, name + "_moved");
  c.define(0, reshapeTo(c, moved,
                        {n, Dim::of(channels * block * block), Dim::of(height / block),
                         Dim::of(width / block)},
                        name));
  return true;
}

void onnximport::registerSpatialOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"DepthToSpace", convertDepthSpace<true>},
      {"SpaceToDepth", convertDepthSpace<false>},
  });
}
