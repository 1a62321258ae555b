//===- ONNXOpsWindow.cpp - Convolutions and pools -------------------------===//
//
// Conv (NCHW/OIHW, groups, pads, strides, dilations, auto_pad on static
// sizes) -> nn.conv2d, its bias added as a [1,C,1,1] tensor;
// MaxPool/AveragePool -> nn.max_pool2d/nn.avg_pool2d (fusec's average
// excludes padding: count_include_pad = 1 with padding is rejected; ONNX's
// ceil_mode rule is matched, below); GlobalAveragePool/GlobalMaxPool ->
// mean/max over the spatial axes with keepdims. 1-D Conv and pools (NCL)
// run as the 2-D ones over a unit height: expand_dims at 2, the attributes
// lifted ([v] -> [neutral, v]), squeeze after.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

/// Pool/conv window attributes: pads [top, left, bottom, right] from
/// `pads` or `auto_pad`, strides, dilations.
struct Window {
  std::vector<int64_t> kernel, strides{1, 1}, dilations{1, 1}, pads{0, 0, 0, 0};
};

std::vector<int64_t> onnximport::liftWindowList(std::vector<int64_t> values, int64_t neutral) {
  if (values.size() == 1)
    return {neutral, values[0]};
  if (values.size() == 2 && neutral == 0) // pads [begin, end]
    return {0, values[0], 0, values[1]};
  return values;
}

Value *onnximport::withUnitHeight(NodeContext &c, size_t i, llvm::StringRef hint) {
  if (const TensorData *data = c.constant(i)) {
    std::vector<int64_t> shape = data->getShape();
    shape.insert(shape.begin() + 2, 1);
    TensorData lifted(data->getDType(), shape);
    for (int64_t k = 0; k < data->getNumElements(); ++k)
      lifted.set(k, data->get(k));
    return c.emitConstant(std::move(lifted), hint);
  }
  Value *v = c.input(i);
  Attrs attrs;
  attrs.set("axis", Attr::makeInt(2));
  return v ? c.emit("expand_dims", {Operand::of(v)}, attrs, hint) : nullptr;
}

bool onnximport::liftConvolution(NodeContext &c, Value *&x, Value *&w, const std::string &name,
                                 bool &oneD) {
  oneD = x->type.getRank() == 3 && w->type.getRank() == 3;
  if (!oneD)
    return true;
  x = withUnitHeight(c, 0, name + "_input");
  w = withUnitHeight(c, 1, name + "_weights");
  return x && w;
}

Value *onnximport::dropUnitHeight(NodeContext &c, Value *v, llvm::StringRef name) {
  Attrs attrs;
  attrs.set("axis", makeIntList({2}));
  return v ? c.emit("squeeze", {Operand::of(v)}, attrs, name) : nullptr;
}

/// `x` is the (lifted) rank-4 input; `oneD` lifts the 1-D attributes.
static bool readWindow(NodeContext &c, const Type &x, Window &w, bool oneD) {
  if (x.getRank() != 4)
    return c.fail("only 1-D and 2-D windows (rank-3 NCL and rank-4 NCHW inputs) are "
                  "supported, not rank " + std::to_string(x.getRank()));
  bool fits = true; // 1-D: one value per list, two pads
  auto list = [&](const char *name, int64_t neutral) -> std::optional<std::vector<int64_t>> {
    std::optional<std::vector<int64_t>> values = c.attrInts(name);
    if (values && oneD) {
      fits &= values->size() == (neutral == 0 ? 2u : 1u);
      values = liftWindowList(*values, neutral);
    }
    return values;
  };
  if (oneD && w.kernel.size() == 1) // a pool's kernel_shape (Conv's is lifted already)
    w.kernel = liftWindowList(w.kernel, 1);
  if (auto strides = list("strides", 1))
    w.strides = *strides;
  if (auto dilations = list("dilations", 1))
    w.dilations = *dilations;
  if (auto pads = list("pads", 0))
    w.pads = *pads;
  if (oneD && !fits)
    return c.fail("a 1-D window takes one stride and dilation and 2 pads");
  if (w.kernel.size() != 2 || w.strides.size() != 2 || w.dilations.size() != 2 ||
      w.pads.size() != 4)
    return c.fail("kernel_shape, strides and dilations need 2 values and pads 4");
  // Bounded so that no window arithmetic below (or in the op's inference)
  // can overflow.
  const std::pair<const char *, const std::vector<int64_t> *> bounded[] = {
      {"strides", &w.strides}, {"dilations", &w.dilations}, {"kernel sizes", &w.kernel},
      {"pads", &w.pads}};
  for (const auto &[what, values] : bounded) {
    int64_t lowest = values == &w.pads ? 0 : 1;
    for (int64_t v : *values)
      if (v < lowest || v > kMaxDimSize)
        return c.fail(std::string(what) + " must be in [" + std::to_string(lowest) + ", 2^40]");
  }
  for (int d = 0; d < 2; ++d)
    if (__int128(w.kernel[d] - 1) * w.dilations[d] + 1 > kMaxDimSize)
      return c.fail("the window ((kernel - 1) x dilation + 1) must be at most 2^40");
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.pads = {0, 0, 0, 0};
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int d = 0; d < 2; ++d) {
      const Dim &in = x.getShape()[2 + d];
      if (in.isSymbolic())
        return c.fail("auto_pad " + autoPad + " on the symbolic dim '" + in.symbol +
                      "' is not supported");
      __int128 out = (in.size + w.strides[d] - 1) / w.strides[d];
      __int128 needed =
          (out - 1) * w.strides[d] + __int128(w.kernel[d] - 1) * w.dilations[d] + 1 - in.size;
      if (needed > kMaxDimSize)
        return c.fail("auto_pad " + autoPad + " would need more than 2^40 of padding");
      int64_t total = std::max<int64_t>(0, int64_t(needed));
      int64_t small = total / 2, large = total - small;
      w.pads[d] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[2 + d] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return c.fail("auto_pad '" + autoPad + "' is not supported");
  }
  return true;
}

static bool convertConv(NodeContext &c) {
  Value *x = c.input(0), *w = c.input(1);
  if (!x || !w)
    return false;
  std::string name = c.node.output(0);
  bool oneD = false; // a 1-D convolution is the 2-D one over a unit height
  if (!liftConvolution(c, x, w, name, oneD))
    return false;
  if (w->type.getRank() != 4)
    return c.fail("only 1-D and 2-D convolutions (rank-3 and rank-4 weights) are supported");
  Window window;
  for (int d = 0; d < 2; ++d)
    window.kernel.push_back(w->type.getShape()[2 + d].size);
  if (auto kernel = c.attrInts("kernel_shape");
      kernel && (oneD ? liftWindowList(*kernel, 1) : *kernel) != window.kernel)
    return c.fail("kernel_shape does not match the weights' spatial dims");
  if (!readWindow(c, x->type, window, oneD))
    return false;
  Attrs attrs;
  attrs.set("strides", makeIntList(window.strides));
  attrs.set("padding", makeIntList(window.pads));
  attrs.set("dilation", makeIntList(window.dilations));
  int64_t groups = c.attrInt("group", 1);
  if (groups < 1 || groups > kMaxDimSize)
    return c.fail("group must be in [1, 2^40]");
  attrs.set("groups", Attr::makeInt(groups));
  defineConvolution(c, x, w, std::move(attrs), name, oneD);
  return true;
}

void onnximport::defineConvolution(NodeContext &c, Value *x, Value *w, Attrs attrs,
                                   const std::string &name, bool oneD) {
  bool last = !c.hasInput(2) && !oneD;
  Value *conv = c.emit("nn.conv2d", {Operand::of(x), Operand::of(w)}, std::move(attrs),
                       last ? name : name + "_conv");
  if (conv && c.hasInput(2)) {
    Value *bias = perChannel(c, 2, 4, name + "_bias");
    conv = bias ? c.emit("add", {Operand::of(conv), Operand::of(bias)}, {},
                         oneD ? name + "_biased" : name)
                : nullptr;
  }
  c.define(0, oneD ? dropUnitHeight(c, conv, name) : conv);
}

/// ONNX (like PyTorch) drops a ceil_mode window that would start in the end
/// padding; TVM's pools, and so fusec's, keep it. Where the two rules give
/// different output sizes the window is rewritten without ceil_mode: the
/// end padding becomes exactly what ONNX's last window reaches. Padding never
/// counts (max pads with the lowest value, the average excludes it), so the
/// values are unchanged.
static bool matchONNXCeilMode(NodeContext &c, const Type &x, Window &w, bool &ceilMode) {
  int64_t ends[2] = {0, 0};
  bool differs = false;
  for (int d = 0; d < 2; ++d) {
    int64_t stride = w.strides[d], begin = w.pads[d], end = w.pads[2 + d];
    int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
    const Dim &in = x.getShape()[2 + d];
    if (in.isSymbolic()) {
      // The last ceil window starts before end - extent + stride past the
      // input's end, so it cannot start in the padding when that is <= 0.
      if (end - extent + stride > 0)
        return c.fail("ceil_mode = 1 on the symbolic dim '" + in.symbol +
                      "': whether ONNX drops the last window depends on its size");
      continue;
    }
    int64_t span = in.size + begin + end - extent;
    if (span < 0)
      return c.fail("the window (" + std::to_string(extent) + ") is larger than the padded input (" +
                    std::to_string(in.size + begin + end) + ")");
    int64_t out = (span + stride - 1) / stride + 1;
    int64_t onnxOut = (out - 1) * stride >= in.size + begin ? out - 1 : out;
    differs |= onnxOut != out;
    ends[d] = std::max<int64_t>(0, (onnxOut - 1) * stride + extent - in.size - begin);
  }
  if (!differs)
    return true;
  // ceil_mode covers both dims, and a symbolic one cannot be given floor's
  // answer by its padding.
  for (int d = 0; d < 2; ++d)
    if (x.getShape()[2 + d].isSymbolic())
      return c.fail("ceil_mode = 1 with a symbolic spatial dim where ONNX drops the last "
                    "window of the other dim");
  ceilMode = false;
  w.pads[2] = ends[0];
  w.pads[3] = ends[1];
  return true;
}

template <bool IsMax>
static bool convertPool(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  std::string name = c.node.output(0);
  bool oneD = x->type.getRank() == 3; // the 2-D pool over a unit height
  if (oneD && !(x = withUnitHeight(c, 0, name + "_input")))
    return false;
  Window window;
  if (auto kernel = c.attrInts("kernel_shape"))
    window.kernel = *kernel;
  if (oneD && window.kernel.size() != 1)
    return c.fail("a 1-D pool takes one kernel size");
  if (!readWindow(c, x->type, window, oneD))
    return false;
  Attrs attrs;
  attrs.set("pool_size", makeIntList(window.kernel));
  attrs.set("strides", makeIntList(window.strides));
  attrs.set("dilation", makeIntList(window.dilations));
  bool ceilMode = c.attrInt("ceil_mode", 0) != 0;
  if (ceilMode && !matchONNXCeilMode(c, x->type, window, ceilMode))
    return false;
  attrs.set("padding", makeIntList(window.pads));
  attrs.set("ceil_mode", Attr::makeBool(ceilMode));
  if (IsMax && c.attrInt("storage_order", 0) != 0)
    return c.fail("storage_order = 1 is not supported");
  if (!IsMax && c.attrInt("count_include_pad", 0) != 0 &&
      llvm::any_of(window.pads, [](int64_t p) { return p != 0; }))
    return c.fail("count_include_pad = 1 with padding is not supported (fusec's average "
                  "pool excludes the padding, as TVM's does by default)");
  Value *pooled = c.emit(IsMax ? "nn.max_pool2d" : "nn.avg_pool2d", {Operand::of(x)}, attrs,
                         oneD ? name + "_2d" : name);
  c.define(0, oneD ? dropUnitHeight(c, pooled, name) : pooled);
  return true;
}

template <const char *Op>
static bool convertGlobalPool(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  if (x->type.getRank() < 3)
    return c.fail("the input needs spatial dims");
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < x->type.getRank(); ++d)
    axes.push_back(d);
  Attrs attrs;
  attrs.set("axis", makeIntList(axes));
  attrs.set("keepdims", Attr::makeBool(true));
  c.define(0, c.emit(Op, {Operand::of(x)}, attrs));
  return true;
}

static const char kMean[] = "mean", kMax[] = "max";

void onnximport::registerWindowOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Conv", convertConv},
      {"MaxPool", convertPool<true>},
      {"AveragePool", convertPool<false>},
      {"GlobalAveragePool", convertGlobalPool<kMean>},
      {"GlobalMaxPool", convertGlobalPool<kMax>},
  });
}
