//===- ONNXOpsConvTranspose.cpp - ConvTranspose ---------------------------===//
//
// FIR has no transposed convolution. ConvTranspose over S = 2 or 3 spatial
// dims (1-D as the 2-D one over a unit height) is the convolution of the
// stride-dilated input with the flipped, transposed weights:
//   1. zero insertion: expand_dims after each spatial dim
//      ([N, C, H, 1, W, 1]), broadcast_to the strides ([N, C, H, sh, W, sw]),
//      a where with a constant mask that keeps [.., 0, .., 0] (a select, so
//      inf and NaN inputs stay where they are), reshape to [N, C, H sh,
//      W sw], strided_slice to (H - 1) sh + 1 (and crops where the padding
//      exceeds the window);
//   2. weights [C, M/g, k...] -> [M, C/g, k...], spatially flipped: folded
//      at import when constant (flipping every spatial dim reverses their
//      row-major order), else reshape, permute_dims, reshape and a
//      strided_slice with strides -1;
//   3. the convolution (nn.conv2d, or the 3-D one of ONNXOpsVolume.cpp)
//      with stride 1, the dilation, the groups and padding ext - 1 -
//      pad_begin before and ext - 1 - pad_end + output_padding after
//      (ext = (k - 1) dilation + 1); the bias added per channel.
// Pads come from `pads`, `auto_pad` (SAME_UPPER, SAME_LOWER: output =
// input x stride; VALID) or `output_shape`, split as ONNX's operator text
// says (an output_shape beyond the windows' reach: zeros after).
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

/// strided_slice over the spatial dims (from 2) of `x`.
static Value *spatialSlice(NodeContext &c, Value *x, const std::vector<int64_t> &begin,
                           const std::vector<int64_t> &end, const std::vector<int64_t> &strides,
                           const std::string &hint) {
  std::vector<int64_t> axes;
  for (size_t d = 0; d < begin.size(); ++d)
    axes.push_back(int64_t(2 + d));
  Attrs attrs;
  attrs.set("axes", makeIntList(axes));
  attrs.set("begin", makeIntList(begin));
  attrs.set("end", makeIntList(end));
  attrs.set("strides", makeIntList(strides));
  return x ? c.emit("strided_slice", {Operand::of(x)}, attrs, hint) : nullptr;
}

/// The weights as a convolution's (step 2); `folded` receives their data
/// when they are a constant.
static Value *convolutionWeights(NodeContext &c, Value *w, int64_t groups,
                                 std::optional<TensorData> &folded, const std::string &name) {
  const Shape &ws = w->type.getShape();
  int64_t in = ws[0].size, outPerGroup = ws[1].size, inPerGroup = in / groups, taps = 1;
  Shape kernel(ws.begin() + 2, ws.end());
  for (const Dim &k : kernel)
    taps *= k.size;
  Shape merged{Dim::of(groups * outPerGroup), Dim::of(inPerGroup)};
  merged.insert(merged.end(), kernel.begin(), kernel.end());
  if (const TensorData *data = c.constant(1)) {
    std::vector<int64_t> dims;
    for (const Dim &dim : merged)
      dims.push_back(dim.size);
    folded.emplace(data->getDType(), dims);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t m = 0; m < outPerGroup; ++m)
        for (int64_t ci = 0; ci < inPerGroup; ++ci)
          for (int64_t p = 0; p < taps; ++p)
            folded->set(((g * outPerGroup + m) * inPerGroup + ci) * taps + p,
                        data->get(((g * inPerGroup + ci) * outPerGroup + m) * taps +
                                  (taps - 1 - p)));
    return c.emitConstant(*folded, name + "_weights");
  }
  Shape grouped{Dim::of(groups), Dim::of(inPerGroup), Dim::of(outPerGroup)};
  grouped.insert(grouped.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> swap{0, 2, 1}, begin, end, reverse;
  for (size_t d = 0; d < kernel.size(); ++d) {
    swap.push_back(int64_t(3 + d));
    begin.push_back(kernel[d].size - 1);
    end.push_back(-kernel[d].size - 1);
    reverse.push_back(-1);
  }
  Value *regrouped = reshapeTo(c, w, grouped, name + "_wgroups");
  Value *swapped = permute(c, regrouped, swap, name + "_wswapped");
  return spatialSlice(c, reshapeTo(c, swapped, merged, name + "_wmerged"), begin, end, reverse,
                      name + "_weights");
}

/// `x` with stride - 1 zeros between its elements along each spatial dim
/// (step 1, before the crop).
static Value *zeroInserted(NodeContext &c, Value *x, const std::vector<int64_t> &strides,
                           const std::string &name) {
  const Shape &xs = x->type.getShape();
  size_t spatial = strides.size();
  std::vector<int64_t> axes, maskShape{1, 1};
  Shape spread{xs[0], xs[1]}, dilated{xs[0], xs[1]};
  for (size_t d = 0; d < spatial; ++d) {
    axes.push_back(int64_t(3 + 2 * d));
    spread.push_back(xs[2 + d]);
    spread.push_back(Dim::of(strides[d]));
    dilated.push_back(Dim::of(xs[2 + d].size * strides[d]));
    maskShape.push_back(1);
    maskShape.push_back(strides[d]);
  }
  Attrs expand;
  expand.set("axis", makeIntList(axes));
  Value *unit = c.emit("expand_dims", {Operand::of(x)}, expand, name + "_spread");
  Attrs broadcast;
  broadcast.set("shape", makeShapeList(spread));
  Value *tiled =
      unit ? c.emit("broadcast_to", {Operand::of(unit)}, broadcast, name + "_tiled") : nullptr;
  TensorData keep(DType::boolean, maskShape);
  keep.setInt(0, 1);
  Value *mask = c.emitConstant(std::move(keep), name + "_mask");
  Value *zeroed = tiled ? c.emit("where", {Operand::of(mask), Operand::of(tiled),
                                           NodeContext::literal(0, x->type.getDType())},
                                 {}, name + "_zeroed")
                        : nullptr;
  return reshapeTo(c, zeroed, dilated, name + "_dilated");
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
  int64_t rank = x->type.getRank();
  if ((rank != 4 && rank != 5) || w->type.getRank() != rank)
    return c.fail("only 1-D, 2-D and 3-D transposed convolutions (input and weights of equal "
                  "rank, 3 to 5) are supported");
  size_t spatial = size_t(rank - 2);
  std::vector<int64_t> allDims, inputDims;
  for (int64_t d = 0; d < rank; ++d) {
    allDims.push_back(d);
    if (d > 0)
      inputDims.push_back(d);
  }
  if (!staticDims(c, x->type, inputDims) || !staticDims(c, w->type, allDims))
    return false;
  const Shape &xs = x->type.getShape(), &ws = w->type.getShape();
  int64_t groups = c.attrInt("group", 1);
  for (size_t d = 1; d < xs.size(); ++d)
    if (xs[d].size < 1)
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
  std::vector<int64_t> strides = listAttr("strides", 1, std::vector<int64_t>(spatial, 1)),
                       dilations = listAttr("dilations", 1, std::vector<int64_t>(spatial, 1)),
                       outputPadding =
                           listAttr("output_padding", 1, std::vector<int64_t>(spatial, 0)),
                       pads = listAttr("pads", 0, std::vector<int64_t>(2 * spatial, 0));
  if (oneD && outputPadding.size() == 2 && c.attrInts("output_padding"))
    outputPadding[0] = 0; // lifted with the neutral 1 above: the unit height has none
  if (!fits)
    return c.fail("a 1-D transposed convolution takes one stride, dilation and output "
                  "padding and 2 pads");
  std::vector<int64_t> kernel;
  for (size_t d = 0; d < spatial; ++d)
    kernel.push_back(ws[2 + d].size);
  if (auto given = c.attrInts("kernel_shape");
      given && (oneD ? liftWindowList(*given, 1) : *given) != kernel)
    return c.fail("kernel_shape does not match the weights' spatial dims");
  if (strides.size() != spatial || dilations.size() != spatial ||
      outputPadding.size() != spatial || pads.size() != 2 * spatial)
    return c.fail("strides, dilations and output_padding need " + std::to_string(spatial) +
                  " values and pads " + std::to_string(2 * spatial));
  for (size_t d = 0; d < spatial; ++d)
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
  else if (outputShape && outputShape->size() > spatial)
    outputShape = std::vector<int64_t>(outputShape->end() - spatial, outputShape->end());
  std::vector<int64_t> extent(spatial), extra(spatial, 0);
  for (size_t d = 0; d < spatial; ++d) {
    int64_t in = xs[2 + d].size;
    extent[d] = (kernel[d] - 1) * dilations[d] + 1;
    int64_t full = strides[d] * (in - 1) + outputPadding[d] + extent[d];
    std::optional<int64_t> target;
    if (outputShape && outputShape->size() == spatial)
      target = (*outputShape)[d];
    else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
      target = in * strides[d];
    else if (autoPad == "VALID")
      pads[d] = pads[spatial + d] = 0;
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
      pads[spatial + d] = upper ? total - total / 2 : total / 2;
    }
    if (full - pads[d] - pads[spatial + d] < 1)
      return c.fail("the padding leaves no output");
  }

  // Step 1: the zero-inserted input, cropped where a pad exceeds ext - 1.
  std::vector<int64_t> before(spatial), after(spatial), cropBegin(spatial), cropEnd(spatial),
      ones(spatial, 1);
  bool crops = false, strided = false;
  for (size_t d = 0; d < spatial; ++d) {
    before[d] = extent[d] - 1 - pads[d];
    after[d] = extent[d] - 1 - pads[spatial + d] + outputPadding[d] + extra[d];
    cropBegin[d] = std::max<int64_t>(0, -before[d]);
    cropEnd[d] = std::max<int64_t>(0, -after[d]);
    crops |= cropBegin[d] || cropEnd[d];
    strided |= strides[d] > 1;
  }
  Value *input = strided ? zeroInserted(c, x, strides, name) : x;
  if (strided || crops) {
    std::vector<int64_t> end;
    for (size_t d = 0; d < spatial; ++d)
      end.push_back((xs[2 + d].size - 1) * strides[d] + 1 - cropEnd[d]);
    input = spatialSlice(c, input, cropBegin, end, ones, name + "_input");
  }

  // Steps 2 and 3.
  std::optional<TensorData> folded;
  Value *weights = convolutionWeights(c, w, groups, folded, name);
  if (!input || !weights)
    return false;
  Window window{kernel, ones, dilations, {}};
  for (int64_t pad : before)
    window.pads.push_back(std::max<int64_t>(0, pad));
  for (int64_t pad : after)
    window.pads.push_back(std::max<int64_t>(0, pad));
  if (spatial == 3)
    return defineConvolution3D(c, input, weights, folded ? &*folded : nullptr, window, groups,
                               name);
  Attrs attrs;
  attrs.set("padding", makeIntList(window.pads));
  attrs.set("dilation", makeIntList(dilations));
  attrs.set("groups", Attr::makeInt(groups));
  defineConvolution(c, input, weights, std::move(attrs), name, oneD);
  return true;
}

void onnximport::registerConvTransposeOps(std::vector<OpConverter> &table) {
  table.push_back({"ConvTranspose", convertConvTranspose});
}
