//===- ONNXImporter.h - Shared state of the ONNX importer -------*- C++ -*-===//
//
// The importer walks the graph's nodes in order (ONNX requires a
// topological order) and converts each through its entry of the operator
// table (ONNXOps*.cpp). A converter reads its inputs and attributes through
// the NodeContext below and emits FIR bindings, each typed at once by the op
// registry's inference, so that the next node sees shapes.
//
// Three kinds of ONNX values exist during an import:
//   - FIR values (graph inputs, results of emitted bindings);
//   - constants (initializers, Constant nodes, folded shape arithmetic):
//     held as TensorData and emitted as a `constant` binding only when a
//     node reads them as a tensor;
//   - shape values: 1-D or 0-d int64 tensors whose elements are sizes,
//     possibly symbolic (`Shape` of an input with a `batch` dim), so that
//     the exporters' Shape -> Gather -> Unsqueeze -> Concat -> Reshape
//     chains fold into `reshape {shape = [batch, -1]}`.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_IMPORT_ONNXIMPORTER_H
#define FUSEC_LIB_IMPORT_ONNXIMPORTER_H

#include "fusec/IR/IR.h"
#include "fusec/IR/Ops.h"
#include "fusec/Import/Import.h"

#include "onnx.pb.h"

#include <map>
#include <optional>
#include <set>

namespace fusec::onnximport {

/// A size in a shape computation: symbolic dims times a static factor
/// (`batch`, `batch * 4`, `seq * batch`). A FIR dim is a size or one name,
/// so a product reaches the program only as a grouped value (below).
struct SymbolicSize {
  int64_t size = 0; // the static factor; the size when static
  /// In the order the product was formed (which a grouped value's axes
  /// keep); empty when static.
  std::vector<std::string> symbols;

  static SymbolicSize of(int64_t size) { return SymbolicSize{size, {}}; }
  static SymbolicSize of(const Dim &dim);
  bool isStatic() const { return symbols.empty(); }
  bool isSymbolic() const { return !symbols.empty(); }
  /// The FIR dim it is: a size, or one name (factor 1); nullopt for a
  /// product.
  std::optional<Dim> asDim() const;
  /// `batch * 4`.
  std::string str() const;
  /// The same size, whatever the order of the names.
  bool operator==(const SymbolicSize &other) const;
  bool operator!=(const SymbolicSize &other) const { return !(*this == other); }
};
/// The product of `dims`, or nullopt when it overflows int64.
std::optional<SymbolicSize> productOf(const std::vector<SymbolicSize> &dims);
/// `--dim a=SIZE,b=SIZE`: the option that fixes the symbolic dims of
/// `sizes` (each name once).
std::string dimOptions(const std::vector<SymbolicSize> &sizes);
/// x / y when the quotient is again a size (y's names among x's, its
/// factor dividing x's); nullopt otherwise.
std::optional<SymbolicSize> quotientOf(const SymbolicSize &x, const SymbolicSize &y);

/// A shape value: int64 elements that are sizes, static or symbolic.
struct ShapeValue {
  std::vector<SymbolicSize> elements;
  bool scalar = false; // a 0-d tensor (one element)
  /// The dtype it materializes as: i64 (Shape's), or a constant's own (an
  /// i8 or i32 constant folds as shape arithmetic only when i64), or the
  /// float type a symbolic one was cast to (which no arithmetic folds).
  DType dtype = DType::i64;
  bool isStatic() const;
  /// The first symbolic dim name among the elements, or null.
  const std::string *firstSymbol() const;
};

/// A grouped value: an ONNX tensor some of whose dims are products of
/// symbolic dims (`batch * heads`, `batch * seq`), which no FIR type can
/// hold. It is a FIR tensor in which such a dim is split into its factors
/// (`[seq, batch, 4, 8]` for ONNX's `[seq, batch * 4, 8]`), in the same
/// row-major element order; runs[d] counts the FIR axes of ONNX dim d.
/// Only the operators of ONNXGrouped.cpp read one.
using AxisRuns = std::vector<int64_t>;

/// The ONNX dims of a FIR shape grouped by `runs` (each dim its own run
/// when null).
std::vector<SymbolicSize> onnxDimsOf(const Shape &fir, const AxisRuns *runs);

class Importer;

/// What a converter sees of one node.
class NodeContext {
public:
  NodeContext(Importer &importer, const onnx::NodeProto &node, int64_t opset)
      : importer(importer), node(node), opset(opset) {}
  Importer &importer;
  const onnx::NodeProto &node;
  const int64_t opset;

  size_t numInputs() const { return node.input_size(); }
  /// Whether input `i` is given (optional inputs may be absent or "").
  bool hasInput(size_t i) const;
  /// Input `i` as a FIR value (a constant gets its binding here); null
  /// after an error.
  Value *input(size_t i);
  /// Input `i`'s contents when it is a constant, else null.
  const TensorData *constant(size_t i) const;
  /// Input `i` as a shape value (a constant int tensor of rank <= 1, or a
  /// folded shape computation), else nullopt.
  std::optional<ShapeValue> shapeValue(size_t i) const;
  /// The static integers of input `i`; reports an error naming `what`
  /// when the input is not a constant.
  std::optional<std::vector<int64_t>> ints(size_t i, const char *what);
  const Type *typeOf(size_t i) const;
  /// The shape of input `i`, a value or a constant; nullopt otherwise.
  std::optional<Shape> inputShape(size_t i) const;
  /// The axis runs of input `i` when it is a grouped value, else null.
  const AxisRuns *runsOf(size_t i) const;
  /// Input `i`'s ONNX dims: those of a value (grouped or not) or a
  /// constant; nullopt otherwise.
  std::optional<std::vector<SymbolicSize>> onnxDims(size_t i) const;
  /// Input `i` reads as `value` for the rest of this conversion (a grouped
  /// operand aligned with another); no longer a constant or shape value.
  void substitute(size_t i, Value *value) { substitutes[i] = value; }
  const std::map<size_t, Value *> &substitutions() const { return substitutes; }

  /// Attributes; each read marks the attribute as understood (the importer
  /// rejects a node with an attribute no converter read).
  bool hasAttr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t defaultValue);
  double attrFloat(llvm::StringRef name, double defaultValue);
  std::string attrString(llvm::StringRef name, std::string defaultValue);
  std::optional<std::vector<int64_t>> attrInts(llvm::StringRef name);
  std::vector<double> attrFloats(llvm::StringRef name);
  std::vector<std::string> attrStrings(llvm::StringRef name);
  const onnx::TensorProto *attrTensor(llvm::StringRef name);
  const onnx::GraphProto *attrGraph(llvm::StringRef name);
  /// Output `i` is whatever ONNX name `source` holds: a value, a constant
  /// or a shape value (Identity, an If's branch outputs).
  bool forward(size_t i, const std::string &source);
  /// Marks an attribute as understood without reading it (e.g. BatchNorm's
  /// momentum, meaningless in inference).
  void ignoreAttr(llvm::StringRef name) { used.insert(name.str()); }
  const std::set<std::string> &usedAttrs() const { return used; }
  /// Whether the conversion looked at input `i` (any accessor, hasInput
  /// included); the importer rejects a node with a given input it did not.
  bool wasRead(size_t i) const;
  /// Marks input `i` as understood without reading it (Dropout's ratio).
  void ignoreInput(size_t i) { (void)hasInput(i); }

  /// Emits `op(operands) {attrs}` and returns its result (null after an
  /// error, reported against this node).
  Value *emit(llvm::StringRef op, std::vector<Operand> operands, Attrs attrs = {},
              llvm::StringRef nameHint = {});
  Value *emitConstant(TensorData data, llvm::StringRef nameHint);
  /// `constant splat<value> : dtype[shape]`: nothing allocated at import.
  Value *emitSplat(double value, DType dtype, const Shape &shape, llvm::StringRef nameHint);
  /// A scalar literal operand (a 0-d constant of the other operand's dtype).
  static Operand literal(double value, DType dtype);
  /// Output `i` of the node is `value` / a constant / a shape value.
  void define(size_t i, Value *value);
  void defineConstant(size_t i, TensorData data);
  void defineShape(size_t i, ShapeValue shape);
  /// Output `i` is `value` grouped by `runs` (a plain value when every
  /// run is 1).
  void defineGrouped(size_t i, Value *value, AxisRuns runs);
  size_t numOutputs() const { return node.output_size(); }
  bool hasOutput(size_t i) const;

  /// Reports `message` against this node; returns false.
  /// `node 'X' (Add, opset 13)`, or the node computing its first output.
  std::string describe() const;
  bool fail(const llvm::Twine &message);
  /// The FIR dtype of ONNX element type `type`, or an error.
  std::optional<DType> dtypeOf(int64_t onnxType, const char *what);

private:
  const onnx::AttributeProto *findAttr(llvm::StringRef name) const;
  const onnx::AttributeProto *typedAttr(llvm::StringRef name,
                                        onnx::AttributeProto::AttributeType kind);
  std::set<std::string> used;
  mutable std::vector<bool> inputsRead;
  std::map<size_t, Value *> substitutes;
};

using ConvertFn = bool (*)(NodeContext &);
struct OpConverter {
  const char *opType;
  ConvertFn convert;
};
/// Shape-value folds (ONNXShapeFold.cpp); each returns false when it does
/// not apply (or after an error): Add/Sub/Mul/Div of int64 shape values
/// (static, or products of symbolic dims), Equal and Where on shape values
/// with a symbolic dim.
bool foldShapeArithmetic(NodeContext &c, llvm::StringRef op);
/// Output 0 is input 0 reshaped to the ONNX sizes `target`, in which 0
/// (unless `allowZero`) and -1 are still to be resolved; a grouped value
/// when a size is a product of symbolic dims (ONNXGrouped.cpp).
bool defineReshape(NodeContext &c, std::vector<SymbolicSize> target, bool allowZero);
/// Output 0 is `x` (with input 0's dims `dims` and runs `runs`) broadcast
/// both ways to the ONNX sizes `target` (Expand, ConstantOfShape), grouped
/// where a size is a product (ONNXGrouped.cpp).
bool defineBroadcast(NodeContext &c, Value *x, const std::vector<SymbolicSize> &dims,
                     const AxisRuns &runs, const std::vector<SymbolicSize> &target);
/// Converts a node with a grouped input through `convert` where the
/// operator allows it: elementwise operators, reductions and
/// normalizations over plain dims, MatMul, Gemm, Transpose, Reshape,
/// Flatten, Shape; otherwise reports why not (ONNXGrouped.cpp).
bool convertGroupedNode(NodeContext &c, bool (*convert)(NodeContext &));
/// 0, 1, ..., symbol - 1 as `dtype`, for the symbolic dim `symbol`: a call
/// of a kernel that a graph input with that dim binds (ONNXOpsFill.cpp).
Value *emitSymbolicRange(NodeContext &c, const std::string &symbol, DType dtype,
                         llvm::StringRef nameHint);
/// A shape value with symbolic elements (seq, batch * 4) as a tensor of its
/// dtype, [n] or 0-d: a call of a kernel that computes them from its
/// symbolic dims (ONNXOpsFill.cpp).
Value *emitShapeValue(NodeContext &c, const ShapeValue &shape, llvm::StringRef nameHint);
/// 0, 1, ..., n-1 as i64 of shape [n, 1, ..., 1] with `trailing` unit dims,
/// so that it broadcasts along one axis: a constant, or for a symbolic n a
/// range kernel's result (ONNXOpsFill.cpp).
Value *indexVector(NodeContext &c, const Dim &n, int64_t trailing, llvm::StringRef hint);
bool foldSymbolicEqual(NodeContext &c);
bool foldSymbolicWhere(NodeContext &c);

/// Evaluates an elementwise operator whose inputs are all small constants
/// (ONNXFold.cpp); false when it does not apply (or after an error).
bool foldElementwise(NodeContext &c);
/// After a node whose inputs are all small constants was converted into the
/// bindings from `firstNew` on: runs them on the interpreter and turns the
/// node's outputs into constants, removing the bindings (ONNXFold.cpp).
void foldNodeOnConstants(Importer &importer, NodeContext &c, size_t firstNew);

/// Input `i`, a [C] vector, as a tensor broadcasting against [N, C,
/// spatial...] of rank `rank`: reshaped if constant, else expand_dims
/// (ONNXOpsNN.cpp).
Value *perChannel(NodeContext &c, size_t i, int64_t rank, llvm::StringRef hint);
/// Whether dims `dims` of `x` are static; otherwise reports which is not
/// (with the --dim that fixes it) and returns false.
bool staticDims(NodeContext &c, const Type &x, const std::vector<int64_t> &dims);
/// The static shape of `x`, or nullopt after an error naming `what`.
std::optional<std::vector<int64_t>> staticShape(NodeContext &c, Value *x, const char *what);
/// reshape(x) {shape} and permute_dims(x) {axes}; null when `x` is null
/// or after an error.
Value *reshapeTo(NodeContext &c, Value *x, const Shape &shape, const std::string &hint);
/// `astype(x) {dtype}` (null when x is).
Value *castTo(NodeContext &c, Value *x, DType dtype, const std::string &hint);
Value *permute(NodeContext &c, Value *x, const std::vector<int64_t> &axes,
               const std::string &hint);
/// `x` with `begin` and `end` elements of value `fill` around dim `axis`
/// (splats concatenated; `x` itself when both are 0); null after an error.
Value *padWithConstant(NodeContext &c, Value *x, int64_t axis, int64_t begin, int64_t end,
                       double fill, const std::string &name);
/// The most taps (the product of kernel sizes) a conv or pool window may
/// have; a 3-D window unrolls at most kMaxDepthTaps of them along depth.
constexpr int64_t kMaxWindowTaps = int64_t(1) << 24;
constexpr int64_t kMaxDepthTaps = 1024;
/// A 3-D convolution over a symbolic batch is one 2-D convolution per
/// output depth (ONNXOpsVolume.cpp), at most this many.
constexpr int64_t kMaxDepthConvolutions = 256;
/// Pool/conv window attributes over S spatial dims: S kernel sizes,
/// strides and dilations, 2S pads [begins..., ends...].
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads;
};
/// ONNX drops a ceil_mode window that would start in the end padding;
/// fusec's pools (as TVM's) keep it. Where the two differ, `w`'s end pads
/// are set to what ONNX's last window reaches and `ceilMode` cleared
/// (ONNXOpsWindow.cpp); false after an error.
bool matchONNXCeilMode(NodeContext &c, const Type &x, Window &w, bool &ceilMode);
/// The attributes of nn.max_pool2d / nn.avg_pool2d for a 2-D window.
Attrs poolAttrs(const Window &window, bool ceilMode);
/// 3-D convolutions and pools (NCDHW) as 2-D ones over depth slices
/// (ONNXOpsVolume.cpp); each defines output 0, false after an error.
/// `weights` is w's data when it is a constant (folded at import), else null.
bool defineConvolution3D(NodeContext &c, Value *x, Value *w, const TensorData *weights,
                         const Window &window, int64_t groups, const std::string &name);
bool definePool3D(NodeContext &c, Value *x, const Window &window, bool ceilMode, bool isMax,
                  const std::string &name);
/// 1-D window operators (NCL) run as their 2-D forms over a unit height
/// (ONNXOpsWindow.cpp): input `i` with a unit dim inserted at 2 (a constant is
/// reshaped at import), a 1-D attribute list as the 2-D one ([v] ->
/// [neutral, v]; with neutral 0, pads [b, e] -> [0, b, 0, e]), and the
/// unit dim squeezed from the result.
Value *withUnitHeight(NodeContext &c, size_t i, llvm::StringRef hint);
std::vector<int64_t> liftWindowList(std::vector<int64_t> values, int64_t neutral);
Value *dropUnitHeight(NodeContext &c, Value *v, llvm::StringRef name);
/// Inputs 0 and 1 of a (transposed) convolution, `x` and `w`, lifted when
/// both have rank 3 (`oneD`); false after an error.
bool liftConvolution(NodeContext &c, Value *&x, Value *&w, const std::string &name, bool &oneD);
/// Output 0 of a (transposed) convolution: nn.conv2d(x, w) {attrs}, input
/// 2 (the bias, if given) added per channel, the unit height squeezed when
/// `oneD`.
void defineConvolution(NodeContext &c, Value *x, Value *w, Attrs attrs, const std::string &name,
                       bool oneD);

/// The tables of ONNXOpsMath.cpp, ONNXOpsActivation.cpp, ONNXOpsNN.cpp,
/// ONNXOpsWindow.cpp, ONNXOpsReduce.cpp, ONNXOpsSpatial.cpp, ONNXOpsTensor.cpp, ONNXOpsFill.cpp
/// and ONNXOpsResize.cpp.
void registerMathOps(std::vector<OpConverter> &table);
void registerActivationOps(std::vector<OpConverter> &table);
void registerFillOps(std::vector<OpConverter> &table);
void registerResizeOps(std::vector<OpConverter> &table);
void registerNNOps(std::vector<OpConverter> &table);
void registerReduceOps(std::vector<OpConverter> &table);
void registerWindowOps(std::vector<OpConverter> &table);
void registerSpatialOps(std::vector<OpConverter> &table);
void registerConvTransposeOps(std::vector<OpConverter> &table);
void registerQuantizeOps(std::vector<OpConverter> &table);
void registerRecurrentOps(std::vector<OpConverter> &table);
void registerTensorOps(std::vector<OpConverter> &table);
void registerScanOps(std::vector<OpConverter> &table);
void registerEinsumOps(std::vector<OpConverter> &table);
void registerGatherOps(std::vector<OpConverter> &table);
void registerShapeOps(std::vector<OpConverter> &table);
void registerControlOps(std::vector<OpConverter> &table);
void registerScatterOps(std::vector<OpConverter> &table);

/// Two graph-input dims that an op's typing needs equal (ONNXDimUnification.cpp).
struct EquatedDims {
  /// (kept, dropped): `dropped` is taken to be `kept`, an earlier input's.
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string node; // the op's node, described
};

class Importer {
public:
  Importer(Module &module, const ONNXImportOptions &options, std::string modelDirectory)
      : module(module), options(options), modelDirectory(std::move(modelDirectory)) {}
  bool run(const onnx::ModelProto &model);
  /// Converts one node (of the graph, or of a branch an If takes).
  bool importNode(const onnx::NodeProto &node);
  /// Checks a node whose values nothing needs, as onnx.checker would,
  /// without converting it.
  bool checkUnusedNode(const onnx::NodeProto &node);
  bool checkDomain(const onnx::NodeProto &node);
  /// The names the graph's outputs need: their nodes' inputs, transitively,
  /// and every name a needed node's subgraphs read or return.
  void collectNeededNames(const onnx::GraphProto &graph);
  void checkDeclaredOutputShapes(const onnx::GraphProto &graph);

  Module &module;
  const ONNXImportOptions &options;
  std::string modelDirectory;
  int64_t opset = -1; // of the default domain
  int64_t irVersion = 0;
  Function *function = nullptr;
  DataflowBlock *block = nullptr;
  std::map<std::string, Value *> values;
  std::map<std::string, std::shared_ptr<TensorData>> constants;
  std::map<std::string, ShapeValue> shapes;
  /// The runs of the values (in `values`) that are grouped.
  std::map<std::string, AxisRuns> groupedRuns;
  std::set<std::string> takenNames;
  /// The kernels emitSymbolicRange and emitShapeValue made (by their text
  /// under a placeholder name) and their names.
  std::map<std::string, std::string> indexKernels;
  /// uint8 constants (read widened to i32) and QuantizeLinear's results
  /// (quantized integers in a float type): only the QDQ operators may read
  /// them (ONNXOpsQuantize.cpp).
  std::set<std::string> unsignedBytes, quantized;
  std::set<std::string> neededNames;
  std::string error;
  std::vector<std::string> warnings;
  /// Graph-input dims taken to be another's (by FIR name), from earlier
  /// rounds of the import, and the graph inputs' symbolic dims in order.
  std::map<std::string, std::string> dimAliases;
  std::vector<std::string> inputDims;
  /// Set when an op failed to type only because two input dims differ.
  std::optional<EquatedDims> equatedDims;
  /// Tries merging each pair of the input dims that a failed op names
  /// (ONNXDimUnification.cpp).
  /// `named`: the symbolic dims its operands and its `shape` attribute name.
  void noteEquatedDims(const std::string &node, llvm::StringRef op,
                       const std::vector<Operand> &operands, const Attrs &attrs,
                       const std::vector<std::string> &named);

  /// A FIR value name for ONNX name `name` (sanitized, unique).
  std::string valueName(llvm::StringRef name);
  /// The binding of constant `name` (emitted on first use).
  Value *materialize(const std::string &name);
  Value *addBinding(std::unique_ptr<Binding> binding, llvm::StringRef nameHint,
                    std::string &problem);
};

/// Replaces every call of one of `model`'s local functions, in the graph and
/// its subgraphs, by the function's body (ONNXFunctions.cpp). Sets `error`
/// on failure.
bool inlineLocalFunctions(onnx::ModelProto &model, std::string &error);
/// TensorProto contents (ONNXTensors.cpp): raw or typed fields, or external
/// data relative to `modelDirectory`. Sets `error` on failure.
std::shared_ptr<TensorData> readTensor(const onnx::TensorProto &tensor,
                                       llvm::StringRef modelDirectory, std::string &error);
/// Checks `node` against the schema of its operator at `opset` (input and
/// output counts, attribute names, types and required ones), as
/// onnx.checker does (ONNXSchemaCheck.cpp); reports through `context`.
bool checkAgainstSchema(NodeContext &context, const onnx::NodeProto &node, int64_t opset);
/// Whether ONNX 1.12 defines operator `opType` (at some opset).
bool hasSchema(llvm::StringRef opType);
/// The FIR dtype of an ONNX TensorProto::DataType, if fusec has one.
std::optional<DType> mapDType(int64_t onnxType);
std::string onnxTypeName(int64_t onnxType);
/// A constant's contents as a shape value, when it is an int tensor of
/// rank <= 1.
std::optional<ShapeValue> shapeOfConstant(const TensorData &data);
/// A static shape value as an i64 tensor.
TensorData tensorOfShape(const ShapeValue &shape);
/// Whether `value` is an integer that an int64 holds exactly.
inline bool isInt64Value(double value) {
  // NaN fails every comparison; the bounds are -2^63 and 2^63.
  return value >= -9223372036854775808.0 && value < 9223372036854775808.0 &&
         value == static_cast<double>(static_cast<int64_t>(value));
}
/// `[1, 2, 3]` as an attribute.
Attr makeIntList(const std::vector<int64_t> &values);
/// `sizes` as FIR dims; nullopt when one is a product (a grouped value's
/// dim).
std::optional<std::vector<Dim>> firDims(const std::vector<SymbolicSize> &sizes);
/// A shape attribute: ints, and symbolic dims by name (`[batch, -1]`).
Attr makeShapeList(const std::vector<Dim> &dims);
/// Normalizes `axis` against `rank` (negative counts from the end).
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

} // namespace fusec::onnximport

#endif // FUSEC_LIB_IMPORT_ONNXIMPORTER_H
