//===- ONNXOpsSpatial.cpp - DepthToSpace, SpaceToDepth, ConvTranspose -----===//
//
// FIR has none of these operators; each becomes the layout or convolution
// ops that compute it:
//   DepthToSpace (PixelShuffle) and SpaceToDepth: reshape to rank 6,
//     permute_dims, reshape back (ONNX's DCR and CRD orders);
//   ConvTranspose (1-D as the 2-D one over a unit height, and 2-D): the
//     convolution of the stride-dilated input with
//     the flipped, transposed weights:
//     1. zero insertion: expand_dims to [N, C, H, 1, W, 1], broadcast_to
//        [N, C, H, sh, W, sw], a where with a constant mask that keeps
//        [.., 0, .., 0] (a select, so inf and NaN inputs stay where they
//        are), reshape to [N, C, H sh, W sw], strided_slice to
//        (H - 1) sh + 1 (and crops where the padding exceeds the window);
//     2. weights [C, M/g, kh, kw] -> [M, C/g, kh, kw], spatially flipped:
//        folded at import when constant, else reshape, permute_dims,
//        reshape and a strided_slice with strides -1;
//     3. nn.conv2d with stride 1, the dilation, the groups and padding
//        ext - 1 - pad_begin before and ext - 1 - pad_end + output_padding
//        after (ext = (k - 1) dilation + 1); the bias added per channel.
//     Pads come from `pads`, `auto_pad` (SAME_UPPER, SAME_LOWER: output =
//     input x stride; VALID) or `output_shape`, split as ONNX's operator
//     text says (an output_shape beyond the windows' reach: zeros after).
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

/// The static spatial (and channel) dims a converter needs, or an error.
static bool staticDims(NodeContext &c, const Type &x, std::initializer_list<int> dims) {
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

static Value *slice(NodeContext &c, Value *x, const std::vector<int64_t> &begin,
                    const std::vector<int64_t> &end, const std::vector<int64_t> &strides,
                    const std::string &hint) {
  Attrs attrs;
  attrs.set("axes", makeIntList({2, 3}));
  attrs.set("begin", makeIntList(begin));
  attrs.set("end", makeIntList(end));
  attrs.set("strides", makeIntList(strides));
  return x ? c.emit("strided_slice", {Operand::of(x)}, attrs, hint) : nullptr;
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

/// ConvTranspose's weights as a convolution's (step 2).
static Value *convolutionWeights(NodeContext &c, Value *w, int64_t groups,
                                 const std::string &name) {
  const Shape &ws = w->type.getShape();
  int64_t in = ws[0].size, outPerGroup = ws[1].size, kh = ws[2].size, kw = ws[3].size;
  int64_t inPerGroup = in / groups;
  if (const TensorData *data = c.constant(1)) {
    TensorData flipped(data->getDType(), {groups * outPerGroup, inPerGroup, kh, kw});
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t m = 0; m < outPerGroup; ++m)
        for (int64_t ci = 0; ci < inPerGroup; ++ci)
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j)
              flipped.set((((g * outPerGroup + m) * inPerGroup + ci) * kh + i) * kw + j,
                          data->get((((g * inPerGroup + ci) * outPerGroup + m) * kh +
                                     (kh - 1 - i)) * kw + (kw - 1 - j)));
    return c.emitConstant(std::move(flipped), name + "_weights");
  }
  auto dim = [](int64_t v) { return Dim::of(v); };
  Value *grouped = reshapeTo(c, w, {dim(groups), dim(inPerGroup), dim(outPerGroup), dim(kh), dim(kw)},
                             name + "_wgroups");
  Value *swapped = permute(c, grouped, {0, 2, 1, 3, 4}, name + "_wswapped");
  Value *merged = reshapeTo(c, swapped, {dim(groups * outPerGroup), dim(inPerGroup), dim(kh), dim(kw)},
                            name + "_wmerged");
  return slice(c, merged, {kh - 1, kw - 1}, {-kh - 1, -kw - 1}, {-1, -1}, name + "_weights");
}

static bool convertConvTranspose(NodeContext &c) {
  Value *x = c.input(0), *w = c.input(1);
  if (!x || !w)
    return false;
  std::string name = c.node.output(0);
  // A 1-D one is the 2-D one over a unit height (the weights' data keeps
  // its layout with kh = 1, so step 2 reads it unchanged).
  bool oneD = false;
  if (!liftConvolution(c, x, w, name, oneD))
    return false;
  if (x->type.getRank() != 4 || w->type.getRank() != 4)
    return c.fail("only 1-D and 2-D transposed convolutions (rank-3 or rank-4 input and "
                  "weights) are supported");
  if (!staticDims(c, x->type, {1, 2, 3}) || !staticDims(c, w->type, {0, 1, 2, 3}))
    return false;
  const Shape &xs = x->type.getShape(), &ws = w->type.getShape();
  int64_t groups = c.attrInt("group", 1);
  if (xs[1].size < 1 || xs[2].size < 1 || xs[3].size < 1)
    return c.fail("the input " + x->type.str() + " has an empty channel or spatial dim");
  if (groups < 1 || groups > xs[1].size || xs[1].size % groups || ws[0].size != xs[1].size)
    return c.fail("the weights " + w->type.str() + " do not match the input " + x->type.str() +
                  " with " + std::to_string(groups) + " group(s)");
  bool fits = true; // 1-D: one value per list, two pads
  auto listAttr = [&](const char *attr, int64_t neutral, std::vector<int64_t> fallback) {
    std::optional<std::vector<int64_t>> values = c.attrInts(attr);
    if (!values)
      return fallback;
    if (!oneD)
      return *values;
    fits &= values->size() == (neutral == 0 ? 2u : 1u);
    return liftWindowList(*values, neutral);
  };
  std::vector<int64_t> strides = listAttr("strides", 1, {1, 1}),
                       dilations = listAttr("dilations", 1, {1, 1}),
                       outputPadding = listAttr("output_padding", 1, {0, 0}),
                       pads = listAttr("pads", 0, {0, 0, 0, 0});
  if (oneD && outputPadding.size() == 2 && c.attrInts("output_padding"))
    outputPadding[0] = 0; // lifted with the neutral 1 above: the unit height has none
  if (!fits)
    return c.fail("a 1-D transposed convolution takes one stride, dilation and output "
                  "padding and 2 pads");
  std::vector<int64_t> kernel{ws[2].size, ws[3].size};
  if (auto given = c.attrInts("kernel_shape");
      given && (oneD ? liftWindowList(*given, 1) : *given) != kernel)
    return c.fail("kernel_shape does not match the weights' spatial dims");
  if (strides.size() != 2 || dilations.size() != 2 || outputPadding.size() != 2 ||
      pads.size() != 4)
    return c.fail("strides, dilations and output_padding need 2 values and pads 4");
  for (int d = 0; d < 2; ++d)
    if (strides[d] < 1 || strides[d] > 1024 || dilations[d] < 1 || dilations[d] > 1024 ||
        outputPadding[d] < 0 || outputPadding[d] >= std::max(strides[d], dilations[d]))
      return c.fail("strides and dilations must be in [1, 1024], output_padding in "
                    "[0, max(stride, dilation))");
  for (int64_t pad : pads)
    if (pad < 0 || pad > kMaxDimSize)
      return c.fail("pads must be in [0, 2^40]");
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  std::optional<std::vector<int64_t>> outputShape = c.attrInts("output_shape");
  if (outputShape && oneD && !outputShape->empty())
    outputShape = std::vector<int64_t>{1, outputShape->back()};
  else if (outputShape && outputShape->size() > 2)
    outputShape = std::vector<int64_t>(outputShape->end() - 2, outputShape->end());
  int64_t extent[2], extra[2] = {0, 0};
  for (int d = 0; d < 2; ++d) {
    int64_t in = xs[2 + d].size;
    extent[d] = (kernel[d] - 1) * dilations[d] + 1;
    int64_t full = strides[d] * (in - 1) + outputPadding[d] + extent[d];
    std::optional<int64_t> target;
    if (outputShape && outputShape->size() == 2)
      target = (*outputShape)[d];
    else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
      target = in * strides[d];
    else if (autoPad == "VALID")
      pads[d] = pads[2 + d] = 0;
    else if (autoPad != "NOTSET")
      return c.fail("auto_pad '" + autoPad + "' is not supported");
    if (target) {
      // An output_shape beyond what the windows reach is padded with zeros
      // at the end (as ONNX Runtime: no padding, then the larger output).
      if (*target < 1 || *target > kMaxDimSize)
        return c.fail("output_shape must be in [1, 2^40]");
      int64_t total = std::max<int64_t>(0, full - *target);
      extra[d] = std::max<int64_t>(0, *target - full);
      bool upper = autoPad == "SAME_UPPER";
      pads[d] = upper ? total / 2 : total - total / 2;
      pads[2 + d] = upper ? total - total / 2 : total / 2;
    }
    if (full - pads[d] - pads[2 + d] < 1)
      return c.fail("the padding leaves no output");
  }

  // Step 1: the zero-inserted input, cropped where a pad exceeds ext - 1.
  int64_t before[2], after[2], cropBegin[2], cropEnd[2];
  for (int d = 0; d < 2; ++d) {
    before[d] = extent[d] - 1 - pads[d];
    after[d] = extent[d] - 1 - pads[2 + d] + outputPadding[d] + extra[d];
    cropBegin[d] = std::max<int64_t>(0, -before[d]);
    cropEnd[d] = std::max<int64_t>(0, -after[d]);
  }
  Value *input = x;
  int64_t sh = strides[0], sw = strides[1], h = xs[2].size, wd = xs[3].size;
  if (sh > 1 || sw > 1) {
    Attrs expand;
    expand.set("axis", makeIntList({3, 5}));
    Value *spread = c.emit("expand_dims", {Operand::of(x)}, expand, name + "_spread");
    Attrs broadcast;
    broadcast.set("shape", makeShapeList({xs[0], xs[1], Dim::of(h), Dim::of(sh), Dim::of(wd),
                                          Dim::of(sw)}));
    Value *tiled = spread ? c.emit("broadcast_to", {Operand::of(spread)}, broadcast,
                                   name + "_tiled")
                          : nullptr;
    TensorData keep(DType::boolean, {1, 1, 1, sh, 1, sw});
    keep.setInt(0, 1);
    Value *mask = c.emitConstant(std::move(keep), name + "_mask");
    Value *zeroed = tiled ? c.emit("where", {Operand::of(mask), Operand::of(tiled),
                                             NodeContext::literal(0, x->type.getDType())},
                                   {}, name + "_zeroed")
                          : nullptr;
    input = reshapeTo(c, zeroed, {xs[0], xs[1], Dim::of(h * sh), Dim::of(wd * sw)},
                      name + "_dilated");
  }
  int64_t dilatedH = (h - 1) * sh + 1, dilatedW = (wd - 1) * sw + 1;
  if (sh > 1 || sw > 1 || cropBegin[0] || cropBegin[1] || cropEnd[0] || cropEnd[1])
    input = slice(c, input, {cropBegin[0], cropBegin[1]},
                  {dilatedH - cropEnd[0], dilatedW - cropEnd[1]}, {1, 1}, name + "_input");

  // Steps 2 and 3.
  Value *weights = convolutionWeights(c, w, groups, name);
  if (!input || !weights)
    return false;
  Attrs attrs;
  attrs.set("padding", makeIntList({std::max<int64_t>(0, before[0]), std::max<int64_t>(0, before[1]),
                                    std::max<int64_t>(0, after[0]), std::max<int64_t>(0, after[1])}));
  attrs.set("dilation", makeIntList(dilations));
  attrs.set("groups", Attr::makeInt(groups));
  defineConvolution(c, input, weights, std::move(attrs), name, oneD);
  return true;
}

void onnximport::registerSpatialOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"DepthToSpace", convertDepthSpace<true>},
      {"SpaceToDepth", convertDepthSpace<false>},
      {"ConvTranspose", convertConvTranspose},
  });
}
