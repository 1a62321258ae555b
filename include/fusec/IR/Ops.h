//===- Ops.h - The operator registry -----------------------------*- C++ -*-===//
//
// One entry per operator of spec §4. An entry gathers everything the
// compiler knows about the op, so that each op's later pieces (legalization
// to a kernel, the interpreter's reference implementation) are added beside
// its type inference in the same per-class file:
//
//   lib/IR/Ops/Elementwise.cpp   unary, clip, astype, binary, where
//   lib/IR/Ops/Injective.cpp     reshape, permute_dims, ..., take
//   lib/IR/Ops/Reduction.cpp     sum ... prod, softmax, norms
//   lib/IR/Ops/Complex.cpp       matmul, conv2d, pools
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_OPS_H
#define FUSEC_IR_OPS_H

#include "fusec/IR/IR.h"
#include "fusec/IR/Kernel.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>

namespace fusec {

enum class OpClass { Unary, Binary, Ternary, Injective, Reduction, Complex };

/// What an attribute accepts. Validation and normalization (an int `axis`
/// becomes a one-element list) are generic; per-op meaning is in `infer`.
enum class AttrSchema {
  Int,        // 3
  Float,      // 0.5 or 3 (kept as written: `clip {min = 0}` suits i32 too)
  Bool,       // true
  DTypeName,  // "f16"
  Axes,       // 1 or [0, 2]; printed as a list
  IntList,    // [1, 2]; an int is accepted where the op allows (IntOrList)
  IntOrList,  // 2 or [2, 2]; kept as written
  ShapeList,  // [n, -1, 4]: ints and symbolic dim names
};

struct AttrSpec {
  const char *name;
  AttrSchema schema;
  bool required = false;
};

/// What inference sees of one binding: operand types (literals already given
/// their dtype), attributes (validated), and where to point errors.
class InferContext {
public:
  InferContext(const Binding &binding, std::vector<Type> operandTypes,
               DiagEngine &diag)
      : binding(binding), operandTypes(std::move(operandTypes)), diag(diag) {}

  const Binding &binding;
  std::vector<Type> operandTypes;

  const Type &operand(size_t i) const { return operandTypes[i]; }
  size_t numOperands() const { return operandTypes.size(); }
  const Attr *attr(llvm::StringRef name) const { return binding.attrs.get(name); }
  /// The axes of an `Axes` attribute, normalized to [0, rank); reports an
  /// error for out-of-range or repeated axes. `std::nullopt` on error.
  std::optional<std::vector<int64_t>> axes(llvm::StringRef name, int64_t rank,
                                           std::vector<int64_t> defaults) const;
  std::optional<int64_t> intAttr(llvm::StringRef name, int64_t defaultValue) const;
  std::vector<int64_t> intList(llvm::StringRef name, size_t expectedSize,
                               std::vector<int64_t> defaults) const;

  /// Reports an error at the op and returns std::nullopt for `return`.
  std::nullopt_t error(const llvm::Twine &message) const;
  std::nullopt_t errorAtOperand(size_t i, const llvm::Twine &message) const;
  std::nullopt_t errorAtAttr(llvm::StringRef name, const llvm::Twine &message) const;
  /// At `loc` when valid (an element of an attribute list), else at the op.
  std::nullopt_t errorAt(llvm::SMLoc loc, const llvm::Twine &message) const;

private:
  DiagEngine &diag;
};

using InferFn = std::optional<Type> (*)(InferContext &);

/// Builds the kernel of one op binding: the op's legalization writes stages
/// through it. Operand i (not a literal) is the input buffer `inputName(i)`;
/// literal operands are folded into the stages as constants.
class KernelBuilder {
public:
  /// `dimCarriers` (see `dimCarriers()`) become extra input buffers after
  /// the operands' that no stage reads: they bind symbolic dims.
  KernelBuilder(const Binding &binding, const Type &resultType,
                llvm::ArrayRef<const Value *> dimCarriers = {});

  const Binding &binding;
  const Type resultType;
  const Type &operandType(size_t i) const { return operandTypes[i]; }
  size_t numOperands() const { return operandTypes.size(); }
  const Attr *attr(llvm::StringRef name) const { return binding.attrs.get(name); }
  /// Normalized axes of an `Axes` attribute (validated by inference).
  std::vector<int64_t> axes(llvm::StringRef name, int64_t rank,
                            std::vector<int64_t> defaults) const;
  std::vector<int64_t> intList(llvm::StringRef name, size_t size,
                               std::vector<int64_t> defaults) const;

  /// The input buffer of operand `i` (letters a, b, c, ...).
  static std::string inputName(size_t i);
  /// Output buffer names: `out`, or `out0`, `out1`, ... for a tuple result.
  std::string outputName(size_t i) const;
  /// Operand `i` read at `indices` of an output of shape `shape`, NumPy
  /// broadcast: leading dims dropped, unit dims read at index 0.
  KExprPtr broadcastOperand(size_t i, const std::vector<KExprPtr> &indices,
                            const Shape &shape) const;
  KExprPtr load(size_t i, std::vector<KExprPtr> indices) const;
  KExprPtr loadBuffer(const std::string &buffer, std::vector<KExprPtr> indices) const;
  /// Fresh iteration variable names `<prefix>0, <prefix>1, ...`; a name that
  /// is a symbolic dim of the kernel being built gets `_` appended.
  static std::vector<std::string> varNames(const char *prefix, size_t count);
  /// `base`, or `base_`... if it is a symbolic dim of the kernel.
  static std::string freshName(std::string base);
  static std::vector<KExprPtr> vars(const std::vector<std::string> &names);

  void addInternal(const std::string &name, const Type &type);
  void addStage(const std::string &buffer, std::vector<std::string> spatialVars,
                KExprPtr body);
  void addReduction(const std::string &buffer, std::vector<std::string> spatialVars,
                    const std::string &combiner,
                    std::vector<std::pair<std::string, Dim>> reduceVars,
                    double init, DType accumulate, KExprPtr body);
  std::unique_ptr<Kernel> finish(const std::string &name);

private:
  std::vector<Type> operandTypes;
  std::unique_ptr<Kernel> kernel;
};

/// The integers of an `IntList`/`IntOrList` attribute: `defaults` when
/// absent, `size` copies of a single int, else the list as written.
std::vector<int64_t> intListAttr(const Attr *value, size_t size,
                                 std::vector<int64_t> defaults);

/// The dtype an op computes in: f32 for f16/bf16, i64 for integers.
DType computeDType(DType dtype);
/// The identity of a max/min reduction in `dtype` (-inf/+inf or the
/// integer limits).
/// How strided_slice may slice a symbolic dim: whole, forward (begin 0 or
/// before it, end past it, stride 1) or reversed (`x[::-1]`, torch.flip:
/// begin -1 or past the end, end before the start, stride -1); anything
/// else has a size that is no dim (None).
enum class SymbolicSlice { None, Whole, Reversed };
SymbolicSlice symbolicSliceOf(int64_t begin, int64_t end, int64_t stride);

double lowestValue(DType dtype);
double highestValue(DType dtype);
/// The most negative finite value of `dtype` (TVM's `min_value`, which
/// pads a max pool): -65504 for f16, -FLT_MAX for f32 and bf16's own.
double lowestFiniteValue(DType dtype);
/// Converts `e` to `dtype` unless it already has it.
KExprPtr castTo(KExprPtr e, DType dtype);
/// A literal operand or attribute as a kernel literal of `dtype`: an
/// integer one exact, a float one for an integer dtype saturated to its
/// range (clip's default -inf/inf).
KExprPtr literalFrom(const Attr &value, DType dtype);

using LegalizeFn = void (*)(KernelBuilder &);

struct OpInfo {
  const char *name;
  OpClass opClass;
  int minOperands;
  int maxOperands; // -1: variadic
  std::vector<AttrSpec> attrs;
  InferFn infer;
  /// Literal operands allowed (binary and ternary ops).
  bool allowsLiterals = false;
  /// Writes the op's stages; set by the op class file's registration.
  LegalizeFn legalize = nullptr;
};

/// The op named `name`, or null.
const OpInfo *lookupOp(llvm::StringRef name);
/// All registered ops, in registration order.
llvm::ArrayRef<const OpInfo *> allOps();
/// The closest registered op name, for "did you mean" (empty if none close).
std::string suggestOpName(llvm::StringRef name);

/// "" when `value` has the form `info`'s attribute `name` takes (an int, a
/// dtype string, a list, ...), else a message saying what it must be (or
/// that the op has no such attribute). Pattern files check their attributes
/// with it; bindings get the same check from inference.
std::string attrFormProblem(const OpInfo &info, llvm::StringRef name, const Attr &value);

/// Rewrites attributes to their canonical form (an int `axis` becomes a
/// one-element list, spec §9). Invalid attributes are left for inference
/// to report.
void normalizeOpAttrs(Binding &binding);

/// Which canonical form: `Semantic` makes two spellings of one computation
/// one form (pattern matching compares these); `AsTVMHolds` is what TVM
/// Relax's attributes hold, so that function sharing sees what TVM's
/// structural equality sees: axes as written (`sum {axis = [-1]}` and
/// `sum {axis = [1]}` are two functions there) and absent where TVM's
/// Python API leaves them None (a reduction's axes, permute_dims').
enum class AttrForm { Semantic, AsTVMHolds };

/// The value attribute `name` of an op binding has in canonical form, given
/// `value` as written (null: absent), or std::nullopt where an absent
/// attribute has no single value (`take`'s axis, `squeeze`'s). Fills TVM
/// Relax's defaults (`keepdims = false`, `strides = [1, 1]`, a reduction's
/// axes all, `permute_dims` the reverse, `out_dtype` the result's), counts
/// negative axes from the end, and writes window attributes in full
/// (`padding = 1` is [1, 1, 1, 1]). Two spellings of one computation have
/// one canonical form. `AsTVMHolds` differs for axes only (above).
std::optional<Attr> canonicalOpAttr(const Binding &binding, llvm::StringRef name,
                                    const Attr *value, AttrForm form = AttrForm::Semantic);
/// Every attribute of an op binding in canonical form.
Attrs canonicalOpAttrs(const Binding &binding, AttrForm form = AttrForm::Semantic);

/// A window op's `padding` as [top, left, bottom, right] (from 1, 2 or 4
/// values), and a two-value attribute (strides, dilation, pool_size) from
/// 1 or 2 values; `defaultValue` for both when absent.
std::vector<int64_t> windowPaddingAttr(const Attr *value);
std::vector<int64_t> windowPairAttr(const Attr *value, int64_t defaultValue);

/// Infers the result type of an op binding (operands already typed).
/// Validates operand count, literal use, dtypes and attributes.
std::optional<Type> inferOpType(const Binding &binding, DiagEngine &diag);

/// The kernel of an op binding whose operands are typed (`legalize` and the
/// interpreter use it). The kernel is named `name`; `dimCarriers` are passed
/// to it after the operands (see below).
std::unique_ptr<Kernel> legalizeOp(const Binding &binding, const std::string &name,
                                   llvm::ArrayRef<const Value *> dimCarriers = {});

/// The symbolic dims of an op binding's result that none of its operands has
/// (`broadcast_to {shape = [n, 4]}` of an `f32[4]`), in order.
std::vector<std::string> introducedSymbols(const Binding &binding);

/// Tensor parameters of `function` that bind the dims `introducedSymbols`
/// names, the first such parameter for each. A kernel binds its symbolic dims
/// from its input buffers, so the op's kernel takes these as extra inputs
/// that it never reads (TVM passes such dims to `call_tir` as `tir_vars`).
/// A dim no tensor parameter binds goes to `unbound` (the verifier rejects
/// it, so after verification there is none).
std::vector<Value *> dimCarriers(const Function &function, const Binding &binding,
                                 std::vector<std::string> *unbound = nullptr);
/// The same for the dims `symbols` (the importer's range and shape kernels).
std::vector<Value *> dimCarriers(const Function &function, llvm::ArrayRef<std::string> symbols,
                                 std::vector<std::string> *unbound = nullptr);

/// NumPy broadcasting of two shapes; symbolic dims must be equal by name.
/// On a mismatch returns std::nullopt and sets `error`.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b,
                                     std::string &error);

// Registration hooks, one per op class file.
void registerElementwiseOps(std::vector<const OpInfo *> &registry);
void registerInjectiveOps(std::vector<const OpInfo *> &registry);
void registerReductionOps(std::vector<const OpInfo *> &registry);
void registerComplexOps(std::vector<const OpInfo *> &registry);

} // namespace fusec

#endif // FUSEC_IR_OPS_H
