//===- ONNXOpsWindow.cpp - Convolutions and pools -------------------------===//
//
// Conv (NCHW/OIHW, groups, pads, strides, dilations, auto_pad on static
// sizes) -> nn.conv2d, its bias added as a [1,C,1,1] tensor;
// MaxPool/AveragePool -> nn.max_pool2d/nn.avg_pool2d (fusec's average
// excludes padding: with count_include_pad = 1 the padding is made
// explicit zeros first; ONNX's ceil_mode rule is matched, below); GlobalAveragePool/GlobalMaxPool ->
// mean/max over the spatial axes with keepdims. 1-D Conv and pools (NCL)
// run as the 2-D ones over a unit height: expand_dims at 2, the attributes
// lifted ([v] -> [neutral, v]), squeeze after; 3-D ones (NCDHW) as 2-D ones
// over depth slices (ONNXOpsVolume.cpp).
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

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

/// Reads the window attributes of `x`, whose S = rank - 2 spatial dims (1
/// to 3) the window covers: S strides, dilations (and w.kernel, given) and
/// 2S pads [begins..., ends...] from `pads` or `auto_pad`.
static bool readWindow(NodeContext &c, const Type &x, Window &w) {
  size_t spatial = size_t(x.getRank() - 2);
  if (x.getRank() < 3 || x.getRank() > 5)
    return c.fail("only 1-D, 2-D and 3-D windows (inputs of rank 3 to 5) are supported, not "
                  "rank " + std::to_string(x.getRank()));
  if (w.kernel.size() != spatial)
    return c.fail("kernel_shape needs " + std::to_string(spatial) + " values for " + x.str());
  w.strides.assign(spatial, 1);
  w.dilations.assign(spatial, 1);
  w.pads.assign(2 * spatial, 0);
  if (auto strides = c.attrInts("strides"))
    w.strides = *strides;
  if (auto dilations = c.attrInts("dilations"))
    w.dilations = *dilations;
  if (auto pads = c.attrInts("pads"))
    w.pads = *pads;
  if (w.strides.size() != spatial || w.dilations.size() != spatial ||
      w.pads.size() != 2 * spatial)
    return c.fail("strides and dilations need " + std::to_string(spatial) + " values and pads " +
                  std::to_string(2 * spatial) + " for " + x.str());
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
  for (size_t d = 0; d < spatial; ++d)
    if (__int128(w.kernel[d] - 1) * w.dilations[d] + 1 > kMaxDimSize)
      return c.fail("the window ((kernel - 1) x dilation + 1) must be at most 2^40");
  // Every output visits every tap of its window (padding included), so a
  // window of 2^40 taps over a few elements of padding never finishes.
  __int128 taps = 1;
  for (int64_t k : w.kernel)
    taps *= k;
  if (taps > kMaxWindowTaps)
    return c.fail("the window has " + std::to_string(int64_t(std::min<__int128>(taps, INT64_MAX))) +
                  " taps (the product of kernel_shape); fusec takes at most 2^24");
  std::string autoPad = c.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) {
      // With stride 1 the padding, (kernel - 1) x dilation, does not depend
      // on the size (Keras' Conv1D(padding='same') on a dynamic length).
      const Dim &in = x.getShape()[2 + d];
      if (in.isSymbolic() && w.strides[d] != 1)
        return c.fail("auto_pad " + autoPad + " with stride " + std::to_string(w.strides[d]) +
                      " on the symbolic dim '" + in.symbol + "' is not supported (--dim " +
                      in.symbol + "=SIZE fixes its size)");
      int64_t size = in.isSymbolic() ? 1 : in.size; // any size gives stride 1's padding
      __int128 out = (size + w.strides[d] - 1) / w.strides[d];
      __int128 needed =
          (out - 1) * w.strides[d] + __int128(w.kernel[d] - 1) * w.dilations[d] + 1 - size;
      if (needed > kMaxDimSize)
        return c.fail("auto_pad " + autoPad + " would need more than 2^40 of padding");
      int64_t total = std::max<int64_t>(0, int64_t(needed));
      int64_t small = total / 2, large = total - small;
      w.pads[d] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[spatial + d] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return c.fail("auto_pad '" + autoPad + "' is not supported");
  }
  return true;
}

/// A 1-D window as the 2-D one over a unit height.
static Window liftTo2D(const Window &w) {
  return {liftWindowList(w.kernel, 1), liftWindowList(w.strides, 1),
          liftWindowList(w.dilations, 1), liftWindowList(w.pads, 0)};
}

static bool convertConv(NodeContext &c) {
  Value *x = c.input(0), *w = c.input(1);
  if (!x || !w)
    return false;
  std::string name = c.node.output(0);
  int64_t rank = x->type.getRank();
  if (rank < 3 || rank > 5 || w->type.getRank() != rank)
    return c.fail("only 1-D, 2-D and 3-D convolutions (input and weights of equal rank, 3 "
                  "to 5) are supported, not " + x->type.str() + " and " + w->type.str());
  Window window;
  for (int64_t d = 2; d < rank; ++d) {
    const Dim &k = w->type.getShape()[size_t(d)];
    if (k.isSymbolic())
      return c.fail("the weights' spatial dims must be static, not '" + k.symbol + "'");
    window.kernel.push_back(k.size);
  }
  if (auto kernel = c.attrInts("kernel_shape"); kernel && *kernel != window.kernel)
    return c.fail("kernel_shape does not match the weights' spatial dims");
  if (!readWindow(c, x->type, window))
    return false;
  int64_t groups = c.attrInt("group", 1);
  if (groups < 1 || groups > kMaxDimSize)
    return c.fail("group must be in [1, 2^40]");
  if (rank == 5)
    return defineConvolution3D(c, x, w, c.constant(1), window, groups, name);
  bool oneD = false; // a 1-D convolution is the 2-D one over a unit height
  if (!liftConvolution(c, x, w, name, oneD))
    return false;
  if (oneD)
    window = liftTo2D(window);
  Attrs attrs;
  attrs.set("strides", makeIntList(window.strides));
  attrs.set("padding", makeIntList(window.pads));
  attrs.set("dilation", makeIntList(window.dilations));
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
bool onnximport::matchONNXCeilMode(NodeContext &c, const Type &x, Window &w, bool &ceilMode) {
  size_t spatial = w.kernel.size();
  std::vector<int64_t> ends(spatial, 0);
  bool differs = false;
  for (size_t d = 0; d < spatial; ++d) {
    int64_t stride = w.strides[d], begin = w.pads[d], end = w.pads[spatial + d];
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
  // ceil_mode covers every dim, and a symbolic one cannot be given floor's
  // answer by its padding.
  for (size_t d = 0; d < spatial; ++d)
    if (x.getShape()[2 + d].isSymbolic())
      return c.fail("ceil_mode = 1 with a symbolic spatial dim where ONNX drops the last "
                    "window of another dim");
  ceilMode = false;
  for (size_t d = 0; d < spatial; ++d)
    w.pads[spatial + d] = ends[d];
  return true;
}

/// AveragePool with count_include_pad = 1: the padding is made explicit
/// (zeros, which the average counts), and the pool runs on the padded input
/// with no padding of its own. ONNX Runtime (and PyTorch) count a window
/// clipped to the padded input, as fusec's pool counts the in-bounds taps;
/// the ONNX output size (its ceil_mode rule, found on the original window)
/// is reached with end padding the pool excludes. Returns the padded input,
/// or null after an error.
static Value *padForIncludedCount(NodeContext &c, Value *x, Window &window, bool &ceilMode,
                                  const std::string &name) {
  size_t spatial = window.kernel.size();
  Window original = window;
  bool originalCeil = ceilMode;
  if (ceilMode && !matchONNXCeilMode(c, x->type, original, originalCeil))
    return nullptr;
  std::vector<int64_t> extra(spatial, 0);
  for (size_t d = 0; d < spatial; ++d) {
    const Dim &in = x->type.getShape()[2 + d];
    if (in.isSymbolic()) {
      c.fail("count_include_pad = 1 pads the symbolic dim '" + in.symbol +
             "' explicitly, which fusec's types cannot (--dim " + in.symbol +
             "=SIZE fixes its size)");
      return nullptr;
    }
    int64_t begin = window.pads[d], end = window.pads[spatial + d];
    int64_t extent = (window.kernel[d] - 1) * window.dilations[d] + 1;
    int64_t padded = in.size + begin + end;
    // The ONNX output size: the pool's rule on the window as matched.
    int64_t span = in.size + original.pads[d] + original.pads[spatial + d] - extent;
    int64_t outputs = (originalCeil ? (span + window.strides[d] - 1) / window.strides[d]
                                    : span / window.strides[d]) + 1;
    extra[d] = std::max<int64_t>(0, (outputs - 1) * window.strides[d] + extent - padded);
    if (!(x = padWithConstant(c, x, int64_t(2 + d), begin, end, 0.0, name + "_pad" +
                                                                      std::to_string(d))))
      return nullptr;
  }
  for (size_t d = 0; d < spatial; ++d) {
    window.pads[d] = 0;
    window.pads[spatial + d] = extra[d];
  }
  ceilMode = false;
  return x;
}

template <bool IsMax>
static bool convertPool(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  std::string name = c.node.output(0);
  Window window;
  if (auto kernel = c.attrInts("kernel_shape"))
    window.kernel = *kernel;
  else
    return c.fail("kernel_shape is required");
  if (!readWindow(c, x->type, window))
    return false;
  bool ceilMode = c.attrInt("ceil_mode", 0) != 0;
  if (IsMax) // orders the Indices output only, which fusec does not compute
    c.attrInt("storage_order", 0);
  bool oneD = x->type.getRank() == 3; // the 2-D pool over a unit height
  if (oneD) {
    if (!(x = withUnitHeight(c, 0, name + "_input")))
      return false;
    window = liftTo2D(window);
  }
  if (!IsMax && c.attrInt("count_include_pad", 0) != 0 &&
      llvm::any_of(window.pads, [](int64_t p) { return p != 0; })) {
    if (!(x = padForIncludedCount(c, x, window, ceilMode, name)))
      return false;
  } else if (ceilMode && !matchONNXCeilMode(c, x->type, window, ceilMode)) {
    return false;
  }
  if (x->type.getRank() == 5)
    return definePool3D(c, x, window, ceilMode, IsMax, name);
  Value *pooled = c.emit(IsMax ? "nn.max_pool2d" : "nn.avg_pool2d", {Operand::of(x)},
                         poolAttrs(window, ceilMode), oneD ? name + "_2d" : name);
  c.define(0, oneD ? dropUnitHeight(c, pooled, name) : pooled);
  return true;
}

Attrs onnximport::poolAttrs(const Window &window, bool ceilMode) {
  Attrs attrs;
  attrs.set("pool_size", makeIntList(window.kernel));
  attrs.set("strides", makeIntList(window.strides));
  attrs.set("dilation", makeIntList(window.dilations));
  attrs.set("padding", makeIntList(window.pads));
  attrs.set("ceil_mode", Attr::makeBool(ceilMode));
  return attrs;
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

static const char kPoolMean[] = "mean", kPoolMax[] = "max";

void onnximport::registerWindowOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Conv", convertConv},
      {"MaxPool", convertPool<true>},
      {"AveragePool", convertPool<false>},
      {"GlobalAveragePool", convertGlobalPool<kPoolMean>},
      {"GlobalMaxPool", convertGlobalPool<kPoolMax>},
  });
}
