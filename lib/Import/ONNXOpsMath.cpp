//===- ONNXOpsMath.cpp - Elementwise ONNX operators -----------------------===//
//
// Unary and binary elementwise operators map one to one onto spec §4's ops
// (NumPy broadcasting on both sides). A one-element constant operand whose
// rank does not exceed the other operand's becomes a literal operand
// (`multiply(%x, 0.5)`), converted to the other operand's dtype (ONNX's Pow
// allows a different exponent dtype). Arithmetic, Equal and Where on shape
// values fold first (ONNXShapeFold.cpp).
//
// Also here: Clip (limits as inputs), Cast and CastLike, Where, Mod, the
// variadic Max, Min, Sum and Mean, Identity, Dropout (inference: the
// identity) and Constant.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include <cmath>

using namespace fusec;
using namespace fusec::onnximport;

/// Operand `i` of a binary op whose other operand is `other`.
static std::optional<Operand> operandOf(NodeContext &c, size_t i, size_t other) {
  const TensorData *data = c.constant(i);
  const Type *otherType = c.typeOf(other);
  const TensorData *otherData = c.constant(other);
  std::optional<DType> otherDType = otherType ? std::optional<DType>(otherType->getDType())
                                    : otherData ? std::optional<DType>(otherData->getDType())
                                                : std::nullopt;
  int64_t otherRank = otherType ? otherType->getRank()
                      : otherData ? int64_t(otherData->getShape().size())
                                  : -1;
  // The literal form only when the other side is a value (so that one
  // operand stays a tensor) and the result's shape is the other's.
  double scalar = !data || data->getNumElements() != 1 ? 0
                  : isFloatDType(data->getDType())     ? data->get(0)
                                                       : double(data->getInt(0));
  // A float that an int operand cannot take stays a tensor (and inference
  // reports the mixed dtypes).
  bool representable = !otherDType || isFloatDType(*otherDType) || isInt64Value(scalar);
  if (data && data->getNumElements() == 1 && otherType && otherDType && representable &&
      int64_t(data->getShape().size()) <= otherRank)
    return NodeContext::literal(scalar, *otherDType);
  Value *value = c.input(i);
  if (!value)
    return std::nullopt;
  return Operand::of(value);
}

/// And, Or, Xor and Not take bool tensors only (ONNX's type constraint);
/// false after reporting another dtype.
static bool logicalInputsAreBool(NodeContext &c) {
  llvm::StringRef onnxType = c.node.op_type();
  if (onnxType != "And" && onnxType != "Or" && onnxType != "Xor" && onnxType != "Not")
    return true;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    std::optional<DType> dtype;
    if (const Type *type = c.typeOf(i))
      dtype = type->getDType();
    else if (const TensorData *data = c.constant(i))
      dtype = data->getDType();
    if (dtype && *dtype != DType::boolean)
      return c.fail(onnxType + " takes bool inputs, not " + dtypeName(*dtype) + " (input " +
                    std::to_string(i) + ")");
  }
  return true;
}

/// Before opset 7, `broadcast = 1` with an `axis` lines B's dims up with
/// A's from that axis (Add-1: A [2, 3, 4, 5], B [3, 4], axis 1) where
/// NumPy's rule lines up trailing dims. Returns how many unit dims B needs
/// after its own for NumPy's rule to give the same (0: none), or -1 after
/// an error. Without `broadcast` the shapes are equal, or broadcast as
/// NumPy's rule says (TVM's reading of these opsets).
static int64_t legacyTrailingUnitDims(NodeContext &c) {
  if (c.opset >= 7)
    return 0;
  bool broadcast = c.attrInt("broadcast", 0) != 0;
  int64_t given = c.attrInt("axis", -1);
  if (!broadcast || !c.hasAttr("axis"))
    return 0;
  std::optional<Shape> shapeA = c.inputShape(0), shapeB = c.inputShape(1);
  if (!shapeA || !shapeB)
    return c.fail("broadcast with an axis needs tensor inputs"), -1;
  int64_t rankA = int64_t(shapeA->size()), rankB = int64_t(shapeB->size());
  __int128 axis = given < 0 ? __int128(given) + rankA : __int128(given);
  if (axis < 0 || axis + rankB > rankA)
    return c.fail("axis " + std::to_string(given) + " does not place B (rank " +
                  std::to_string(rankB) + ") within A (rank " + std::to_string(rankA) + ")"),
           -1;
  return rankA - int64_t(axis) - rankB;
}

/// Pow of an integer base with a float exponent that is not an integer
/// (given at run time, or 0.5): ONNX Runtime raises in floating point and
/// truncates (5 ^ 0.5 = 2), where converting the exponent to the base's
/// dtype would give 5 ^ 0 = 1. Computed in f32: astype, power, astype back.
/// nullopt when the other path applies (integral exponents stay exact).
static std::optional<bool> convertIntegerPowerOfFloat(NodeContext &c) {
  // Either may be a constant not yet materialized (no type).
  auto dtypeOf = [&](size_t i) -> std::optional<DType> {
    if (const Type *type = c.typeOf(i); type && type->isTensor())
      return type->getDType();
    if (const TensorData *data = c.constant(i))
      return data->getDType();
    return std::nullopt;
  };
  std::optional<DType> base = dtypeOf(0), exponent = dtypeOf(1);
  if (!base || !exponent || !isIntDType(*base) || !isFloatDType(*exponent))
    return std::nullopt;
  if (const TensorData *constant = c.constant(1)) {
    bool integral = true;
    for (int64_t k = 0; k < constant->getNumElements() && integral; ++k)
      integral = constant->get(k) == std::trunc(constant->get(k));
    if (integral)
      return std::nullopt;
  }
  std::string name = c.node.output(0);
  Value *floatBase = castTo(c, c.input(0), DType::f32, name + "_base");
  Value *floatExponent = *exponent == DType::f32
                             ? c.input(1)
                             : castTo(c, c.input(1), DType::f32, name + "_exponent");
  if (!floatBase || !floatExponent)
    return false;
  Value *raised = c.emit("power", {Operand::of(floatBase), Operand::of(floatExponent)}, {},
                         name + "_float");
  c.define(0, castTo(c, raised, *base, name));
  return true;
}

template <const char *Op>
static bool convertBinary(NodeContext &c) {
  llvm::StringRef onnxType = c.node.op_type();
  if (!logicalInputsAreBool(c))
    return false;
  int64_t unitDims = legacyTrailingUnitDims(c);
  if (unitDims < 0)
    return false;
  // The folds follow NumPy's rule; an opset-6 axis placement is not theirs.
  if (unitDims == 0) {
    if ((onnxType == "Add" || onnxType == "Sub" || onnxType == "Mul" || onnxType == "Div") &&
        foldShapeArithmetic(c, onnxType))
      return true;
    if (onnxType == "Equal" && foldSymbolicEqual(c))
      return true;
    if (c.importer.error.empty() && foldElementwise(c))
      return true;
  }
  if (!c.importer.error.empty())
    return false;
  if (onnxType == "Pow" && unitDims == 0)
    if (std::optional<bool> done = convertIntegerPowerOfFloat(c))
      return *done;
  std::optional<Operand> a = operandOf(c, 0, 1);
  if (!a)
    return false;
  std::optional<Operand> b = operandOf(c, 1, 0);
  if (!b)
    return false;
  if (unitDims > 0 && !b->isLiteral()) { // one element broadcasts either way
    Shape shape = b->value->type.getShape();
    shape.insert(shape.end(), size_t(unitDims), Dim::of(1));
    Attrs attrs;
    attrs.set("shape", makeShapeList(shape));
    Value *aligned = c.emit("reshape", {*b}, attrs, c.node.output(0) + "_b");
    if (!aligned)
      return false;
    b = Operand::of(aligned);
  }
  // Pow's exponent may have another dtype: convert it to the base's.
  if (onnxType == "Pow" && !a->isLiteral() && !b->isLiteral() &&
      a->value->type.getDType() != b->value->type.getDType()) {
    Value *cast = castTo(c, b->value, a->value->type.getDType(), c.node.output(0) + "_exponent");
    if (!cast)
      return false;
    b = Operand::of(cast);
  }
  c.define(0, c.emit(Op, {*a, *b}));
  return true;
}

template <const char *Op>
static bool convertUnary(NodeContext &c) {
  if (!logicalInputsAreBool(c))
    return false;
  if (c.node.op_type() == "Not" && (foldElementwise(c) || !c.importer.error.empty()))
    return c.importer.error.empty();
  c.define(0, c.emit(Op, {Operand::of(c.input(0))}));
  return true;
}

/// Max, Min, Sum, Mean: a left fold (Mean divides by the count).
template <const char *Op>
static bool convertVariadic(NodeContext &c) {
  if (c.numInputs() == 0)
    return c.fail("needs at least one input");
  if ((c.node.op_type() == "Max" || c.node.op_type() == "Min") && c.numInputs() == 2 &&
      (foldElementwise(c) || !c.importer.error.empty()))
    return c.importer.error.empty();
  Value *accumulated = c.input(0);
  for (size_t i = 1; i < c.numInputs() && accumulated; ++i)
    accumulated = c.emit(Op, {Operand::of(accumulated), Operand::of(c.input(i))});
  if (accumulated && c.node.op_type() == "Mean" && c.numInputs() > 1)
    accumulated = c.emit("divide", {Operand::of(accumulated),
                                    NodeContext::literal(double(c.numInputs()),
                                                         accumulated->type.getDType())});
  if (accumulated && c.numInputs() == 1) // one input: the identity
    return c.define(0, accumulated), true;
  c.define(0, accumulated);
  return true;
}

static bool convertClip(NodeContext &c) {
  Value *x = c.input(0);
  if (!x)
    return false;
  DType dtype = x->type.getDType();
  std::optional<double> limits[2];
  Value *bounds[2] = {nullptr, nullptr};
  if (c.opset < 11) { // min and max attributes
    if (c.hasAttr("min"))
      limits[0] = c.attrFloat("min", 0);
    if (c.hasAttr("max"))
      limits[1] = c.attrFloat("max", 0);
  }
  for (size_t i = 1; i <= 2 && c.opset >= 11; ++i) {
    if (!c.hasInput(i))
      continue;
    const TensorData *data = c.constant(i);
    if (data && data->getNumElements() == 1)
      limits[i - 1] = isFloatDType(data->getDType()) ? data->get(0) : double(data->getInt(0));
    else if (!(bounds[i - 1] = c.input(i)))
      return false;
  }
  for (const std::optional<double> &limit : limits)
    if (limit && !isFloatDType(dtype) && !isInt64Value(*limit))
      return c.fail("the limit " + formatScalar(*limit, DType::f32) + " is not a " +
                    dtypeName(dtype).str() + " value");
  // min > max gives max everywhere (ONNX's Clip from opset 11, ONNX
  // Runtime), which maximum then minimum computes and FIR's clip refuses.
  // Clip-6 does not define it, and ONNX Runtime refuses it there.
  if (c.opset < 11 && limits[0] && limits[1] && *limits[0] > *limits[1])
    return c.fail("min " + formatScalar(*limits[0], DType::f32) + " is above max " +
                  formatScalar(*limits[1], DType::f32) + " (Clip-11 defines it: max everywhere)");
  if (limits[0] && limits[1] && *limits[0] <= *limits[1]) {
    Attrs attrs;
    auto number = [&](double v) {
      return isFloatDType(dtype) ? Attr::makeFloat(v) : Attr::makeInt(int64_t(v));
    };
    attrs.set("min", number(*limits[0]));
    attrs.set("max", number(*limits[1]));
    c.define(0, c.emit("clip", {Operand::of(x)}, attrs));
    return true;
  }
  // One limit, limits computed at run time, or min > max: maximum, then
  // minimum.
  Value *result = x;
  const char *ops[2] = {"maximum", "minimum"};
  for (int k = 0; k < 2 && result; ++k) {
    if (!limits[k] && !bounds[k])
      continue;
    Operand bound = bounds[k] ? Operand::of(bounds[k]) : NodeContext::literal(*limits[k], dtype);
    bool last = k == 1 || (!limits[1] && !bounds[1]);
    result = c.emit(ops[k], {Operand::of(result), bound}, {},
                    last ? c.node.output(0) : c.node.output(0) + "_low");
  }
  c.define(0, result);
  return true;
}

/// Cast and CastLike: input 0 as `dtype` (folded on small constants).
static bool castInput(NodeContext &c, std::optional<DType> dtype);

static bool convertCast(NodeContext &c) {
  int64_t onnxType = 0;
  if (c.opset < 6) { // Cast-1 names the type: to = "FLOAT"
    std::string name = c.attrString("to", "");
    onnx::TensorProto::DataType parsed;
    if (!onnx::TensorProto::DataType_Parse(name, &parsed))
      return c.fail("'" + name + "' is no ONNX element type");
    onnxType = parsed;
  } else {
    onnxType = c.attrInt("to", 0);
  }
  std::optional<DType> dtype = c.dtypeOf(onnxType, "the target of Cast");
  return castInput(c, dtype);
}

/// CastLike: the dtype of input 1 (a tensor or a constant).
static bool convertCastLike(NodeContext &c) {
  std::optional<DType> dtype;
  if (const Type *type = c.typeOf(1))
    dtype = type->getDType();
  else if (const TensorData *data = c.constant(1))
    dtype = data->getDType();
  else if (std::optional<ShapeValue> shape = c.shapeValue(1))
    dtype = shape->dtype;
  else
    return c.fail("input 1 ('target_type') is missing");
  return castInput(c, dtype);
}

static bool castInput(NodeContext &c, std::optional<DType> dtype) {
  c.attrInt("saturate", 1);
  if (!dtype)
    return false;
  // Symbolic shape values stay shape values through casts: between int
  // types they still fold; as floats (torch.arange(T, dtype=float)'s limit,
  // x / x.shape[1]) a Range takes one, and other readers get a tensor.
  if (std::optional<ShapeValue> shape = c.shapeValue(0);
      shape && (isIntDType(*dtype) || isFloatDType(*dtype)) && !c.typeOf(0)) {
    if (!shape->isStatic()) {
      shape->dtype = *dtype;
      return c.defineShape(0, *shape), true;
    }
  }
  if (const TensorData *data = c.constant(0); data && data->getNumElements() <= 64) {
    TensorData cast(*dtype, data->getShape());
    for (int64_t i = 0; i < data->getNumElements(); ++i)
      isFloatDType(data->getDType()) ? cast.set(i, data->get(i))
                                     : cast.setInt(i, data->getInt(i));
    // Floats to integers as `astype` converts them at run time (ONNX leaves
    // NaN, infinities and out-of-range values undefined: T5's bucketed
    // positions cast log(0) = -inf and discard it with a Where).
    if (isIntDType(*dtype) && isFloatDType(data->getDType()))
      for (int64_t i = 0; i < data->getNumElements(); ++i)
        cast.setInt(i, wrapToIntDType(wrapToInt64(data->get(i)), *dtype));
    c.defineConstant(0, std::move(cast));
    return true;
  }
  Attrs attrs;
  attrs.set("dtype", Attr::makeString(dtypeName(*dtype).str()));
  c.define(0, c.emit("astype", {Operand::of(c.input(0))}, attrs));
  return true;
}

/// Mod has no FIR op: constants fold; tensors compose it from a truncating
/// quotient, r = a - trunc(a / b) * b (C's fmod, the dividend's sign), and
/// with fmod = 0 (integers) r + b where r and b differ in sign (Python's
/// %). Integer `divide` truncates; a float quotient is truncated by
/// where(q < 0, ceil(q), floor(q)), computed in f32 for f16 and bf16.
static bool convertMod(NodeContext &c) {
  if (foldElementwise(c) || !c.importer.error.empty())
    return c.importer.error.empty();
  bool fmod = c.attrInt("fmod", 0) != 0;
  Value *a = c.input(0), *b = c.input(1);
  if (!a || !b)
    return false;
  DType dtype = a->type.getDType();
  bool isFloat = isFloatDType(dtype);
  if (isFloat && !fmod)
    return c.fail("Mod of floats needs fmod = 1 (ONNX's rule)");
  std::string name = c.node.output(0);
  auto op = [&](const char *kind, std::vector<Operand> operands, const std::string &suffix,
                Attrs attrs = {}) {
    for (const Operand &operand : operands)
      if (!operand.isLiteral() && !operand.value)
        return static_cast<Value *>(nullptr);
    return c.emit(kind, std::move(operands), std::move(attrs), name + suffix);
  };
  bool widen = dtype == DType::f16 || dtype == DType::bf16;
  auto cast = [&](Value *v, DType to, const std::string &suffix) {
    Attrs attrs;
    attrs.set("dtype", Attr::makeString(dtypeName(to).str()));
    return op("astype", {Operand::of(v)}, suffix, attrs);
  };
  if (widen) {
    a = cast(a, DType::f32, "_a");
    b = cast(b, DType::f32, "_b");
  }
  Value *quotient = op("divide", {Operand::of(a), Operand::of(b)}, "_quotient");
  if (isFloat) {
    Value *negative = op("less", {Operand::of(quotient), NodeContext::literal(0, DType::f32)},
                         "_negative");
    quotient = op("where", {Operand::of(negative),
                            Operand::of(op("ceil", {Operand::of(quotient)}, "_ceil")),
                            Operand::of(op("floor", {Operand::of(quotient)}, "_floor"))},
                  "_truncated");
  }
  Value *product = op("multiply", {Operand::of(quotient), Operand::of(b)}, "_product");
  bool last = fmod && !widen;
  Value *remainder = op("subtract", {Operand::of(a), Operand::of(product)},
                        last ? "" : "_remainder");
  if (!fmod) {
    DType intType = a ? a->type.getDType() : dtype;
    Value *nonzero = op("not_equal", {Operand::of(remainder), NodeContext::literal(0, intType)},
                        "_nonzero");
    Value *remainderNegative =
        op("less", {Operand::of(remainder), NodeContext::literal(0, intType)}, "_r_negative");
    Value *divisorNegative =
        op("less", {Operand::of(b), NodeContext::literal(0, intType)}, "_b_negative");
    Value *differ = op("not_equal", {Operand::of(remainderNegative), Operand::of(divisorNegative)},
                       "_signs_differ");
    Value *adjust = op("logical_and", {Operand::of(nonzero), Operand::of(differ)}, "_adjust");
    Value *shifted = op("add", {Operand::of(remainder), Operand::of(b)}, "_shifted");
    remainder = op("where", {Operand::of(adjust), Operand::of(shifted), Operand::of(remainder)},
                   "");
  }
  if (widen && remainder)
    remainder = cast(remainder, dtype, "");
  if (!remainder)
    return false;
  c.define(0, remainder);
  return true;
}

static bool convertWhere(NodeContext &c) {
  if (foldSymbolicWhere(c))
    return true;
  if (foldElementwise(c) || !c.importer.error.empty())
    return c.importer.error.empty();
  std::optional<Operand> a = operandOf(c, 1, 2);
  if (!a)
    return false;
  std::optional<Operand> b = operandOf(c, 2, 1);
  if (!b)
    return false;
  c.define(0, c.emit("where", {Operand::of(c.input(0)), *a, *b}));
  return true;
}

static bool convertIdentity(NodeContext &c) {
  c.ignoreInput(0); // read by forward (the schema check made sure it is given)
  return c.forward(0, c.node.input(0));
}

static bool convertDropout(NodeContext &c) {
  c.attrInt("seed", 0);
  c.ignoreAttr("ratio"); // opsets 7-11: meaningless in inference
  if (c.hasInput(2)) {
    // Training mode drops with the ratio: a constant 0 drops nothing (as
    // torchvision's Swin exports its attention dropout even in eval mode).
    const TensorData *training = c.constant(2);
    const TensorData *ratio = c.hasInput(1) ? c.constant(1) : nullptr;
    bool keepsAll = ratio && ratio->getNumElements() == 1 && ratio->get(0) == 0;
    if (!training || training->getNumElements() != 1 || (training->get(0) != 0 && !keepsAll))
      return c.fail("training mode is not supported (inference only), unless the ratio is a "
                    "constant 0");
  }
  c.ignoreInput(1); // the ratio from opset 12: meaningless in inference
  if (c.hasOutput(1)) { // the mask: all true in inference
    Value *x = c.input(0);
    if (!x)
      return false;
    // Before opset 10 the mask has the input's type: ones.
    DType dtype = c.opset < 10 ? x->type.getDType() : DType::boolean;
    TensorData yes(dtype, {});
    isFloatDType(dtype) ? yes.set(0, 1) : yes.setInt(0, 1);
    Value *scalar = c.emitConstant(std::move(yes), c.node.output(1) + "_true");
    Attrs attrs;
    attrs.set("shape", makeShapeList(x->type.getShape()));
    c.define(1, c.emit("broadcast_to", {Operand::of(scalar)}, attrs, c.node.output(1)));
  }
  return convertIdentity(c);
}

static bool convertConstant(NodeContext &c) {
  if (const onnx::TensorProto *tensor = c.attrTensor("value")) {
    std::string error;
    std::shared_ptr<TensorData> data = readTensor(*tensor, c.importer.modelDirectory, error);
    if (!data)
      return c.fail(error);
    if (tensor->data_type() == onnx::TensorProto::UINT8) {
      c.importer.unsignedBytes.insert(c.node.output(0));
      c.importer.constants[c.node.output(0)] = data; // not a shape value
      return true;
    }
    c.defineConstant(0, *data);
    return true;
  }
  if (c.hasAttr("value_float") || c.hasAttr("value_floats")) {
    std::vector<double> values = c.hasAttr("value_float")
                                     ? std::vector<double>{c.attrFloat("value_float", 0)}
                                     : c.attrFloats("value_floats");
    TensorData data(DType::f32, c.hasAttr("value_float")
                                    ? std::vector<int64_t>{}
                                    : std::vector<int64_t>{int64_t(values.size())});
    for (size_t i = 0; i < values.size(); ++i)
      data.set(int64_t(i), values[i]);
    c.defineConstant(0, std::move(data));
    return true;
  }
  if (c.hasAttr("value_int") || c.hasAttr("value_ints")) {
    std::vector<int64_t> values = c.hasAttr("value_int")
                                      ? std::vector<int64_t>{c.attrInt("value_int", 0)}
                                      : *c.attrInts("value_ints");
    TensorData data(DType::i64, c.hasAttr("value_int")
                                    ? std::vector<int64_t>{}
                                    : std::vector<int64_t>{int64_t(values.size())});
    for (size_t i = 0; i < values.size(); ++i)
      data.setInt(int64_t(i), values[i]);
    c.defineConstant(0, std::move(data));
    return true;
  }
  return c.fail("only the value, value_float(s) and value_int(s) forms are supported");
}

static const char kAdd[] = "add", kSub[] = "subtract", kMul[] = "multiply", kDiv[] = "divide",
                  kPow[] = "power", kMax[] = "maximum", kMin[] = "minimum", kEqual[] = "equal",
                  kLess[] = "less", kLessEq[] = "less_equal", kGreater[] = "greater",
                  kGreaterEq[] = "greater_equal", kAnd[] = "logical_and", kOr[] = "logical_or",
                  kRelu[] = "nn.relu", kSigmoid[] = "sigmoid", kTanh[] = "tanh", kExp[] = "exp",
                  kLog[] = "log", kSqrt[] = "sqrt", kErf[] = "erf", kNeg[] = "negative",
                  kAbs[] = "abs", kFloor[] = "floor", kCeil[] = "ceil", kSin[] = "sin",
                  kCos[] = "cos", kNot[] = "logical_not", kSign[] = "sign", kRound[] = "round",
                  kXor[] = "not_equal";

void onnximport::registerMathOps(std::vector<OpConverter> &table) {
  table.insert(table.end(), {
      {"Add", convertBinary<kAdd>},
      {"Sub", convertBinary<kSub>},
      {"Mul", convertBinary<kMul>},
      {"Div", convertBinary<kDiv>},
      {"Pow", convertBinary<kPow>},
      {"Equal", convertBinary<kEqual>},
      {"Less", convertBinary<kLess>},
      {"LessOrEqual", convertBinary<kLessEq>},
      {"Greater", convertBinary<kGreater>},
      {"GreaterOrEqual", convertBinary<kGreaterEq>},
      {"And", convertBinary<kAnd>},
      {"Or", convertBinary<kOr>},
      {"Max", convertVariadic<kMax>},
      {"Min", convertVariadic<kMin>},
      {"Sum", convertVariadic<kAdd>},
      {"Mean", convertVariadic<kAdd>},
      {"Relu", convertUnary<kRelu>},
      {"Sigmoid", convertUnary<kSigmoid>},
      {"Tanh", convertUnary<kTanh>},
      {"Exp", convertUnary<kExp>},
      {"Log", convertUnary<kLog>},
      {"Sqrt", convertUnary<kSqrt>},
      {"Erf", convertUnary<kErf>},
      {"Neg", convertUnary<kNeg>},
      {"Abs", convertUnary<kAbs>},
      {"Floor", convertUnary<kFloor>},
      {"Ceil", convertUnary<kCeil>},
      {"Sin", convertUnary<kSin>},
      {"Cos", convertUnary<kCos>},
      {"Not", convertUnary<kNot>},
      {"Sign", convertUnary<kSign>},
      {"Round", convertUnary<kRound>}, // half to even, as ONNX and NumPy
      {"Xor", convertBinary<kXor>},    // on bools
      {"CastLike", convertCastLike},
      {"Clip", convertClip},
      {"Cast", convertCast},
      {"Where", convertWhere},
      {"Mod", convertMod},
      {"Identity", convertIdentity},
      {"Dropout", convertDropout},
      {"Constant", convertConstant},
  });
}
