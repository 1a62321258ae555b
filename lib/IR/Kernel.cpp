//===- Kernel.cpp - Kernel expressions, buffers and printing --------------===//
//
// Construction, structural equality and printing of kernel expressions, the
// table of kernel-level value operations, and the textual form of kernels.
// Index arithmetic prints infix with the usual precedence
// (|| < && < comparisons < + - < *); value operations print as calls.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Kernel.h"
#include "fusec/IR/Ops.h"

#include "llvm/ADT/StringMap.h"

using namespace fusec;

//===----------------------------------------------------------------------===//
// KExpr construction
//===----------------------------------------------------------------------===//

KExprPtr KExpr::intConst(int64_t value) {
  auto e = std::make_shared<KExpr>();
  e->kind = IntConst;
  e->intValue = value;
  return e;
}

KExprPtr KExpr::var(std::string name) {
  auto e = std::make_shared<KExpr>();
  e->kind = Var;
  e->name = std::move(name);
  return e;
}

KExprPtr KExpr::binary(Kind kind, KExprPtr lhs, KExprPtr rhs) {
  auto e = std::make_shared<KExpr>();
  e->kind = kind;
  e->dtype = (kind >= Lt && kind <= Not) ? DType::boolean : DType::i64;
  e->args = {std::move(lhs)};
  if (rhs)
    e->args.push_back(std::move(rhs));
  return e;
}

KExprPtr KExpr::literal(double value, DType dtype) {
  auto e = std::make_shared<KExpr>();
  e->kind = Literal;
  e->dtype = dtype;
  e->floatValue = value;
  if (isIntDType(dtype) || dtype == DType::boolean)
    e->intValue = saturatingInt64(value);
  return e;
}

KExprPtr KExpr::intLiteral(int64_t value, DType dtype) {
  auto e = std::make_shared<KExpr>();
  e->kind = Literal;
  e->dtype = dtype;
  e->floatValue = double(value);
  e->intValue = value;
  return e;
}

KExprPtr KExpr::load(std::string buffer, std::vector<KExprPtr> indices,
                     DType dtype) {
  auto e = std::make_shared<KExpr>();
  e->kind = Load;
  e->name = std::move(buffer);
  e->args = std::move(indices);
  e->dtype = dtype;
  return e;
}

KExprPtr KExpr::call(std::string op, std::vector<KExprPtr> args, DType dtype) {
  auto e = std::make_shared<KExpr>();
  e->kind = Call;
  e->name = std::move(op);
  e->args = std::move(args);
  e->dtype = dtype;
  return e;
}

KExprPtr KExpr::cast(KExprPtr value, DType dtype) {
  auto e = std::make_shared<KExpr>();
  e->kind = Cast;
  e->args = {std::move(value)};
  e->dtype = dtype;
  return e;
}

KExprPtr KExpr::select(KExprPtr cond, KExprPtr a, KExprPtr b) {
  auto e = std::make_shared<KExpr>();
  e->kind = Select;
  // Between an index (i64) and an index loaded from an i32 buffer, the
  // wider one, as C's `?:`.
  e->dtype = isIntDType(a->dtype) && b->dtype == DType::i64 ? DType::i64 : a->dtype;
  e->args = {std::move(cond), std::move(a), std::move(b)};
  return e;
}

double fusec::combinerIdentity(llvm::StringRef combiner, DType dtype) {
  return combiner == "multiply" ? 1.0
         : combiner == "max"    ? lowestValue(dtype)
         : combiner == "min"    ? highestValue(dtype)
                                : 0.0;
}

KExprPtr KStage::identityLiteral() const {
  return KExpr::literal(combinerIdentity(combiner, accumulate), accumulate);
}

bool fusec::equalExprs(const KExpr &a, const KExpr &b) {
  if (a.kind != b.kind || a.dtype != b.dtype || a.name != b.name ||
      a.intValue != b.intValue || a.args.size() != b.args.size())
    return false;
  if (a.kind == KExpr::Literal && a.floatValue != b.floatValue &&
      !(a.floatValue != a.floatValue && b.floatValue != b.floatValue))
    return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!equalExprs(*a.args[i], *b.args[i]))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Kernel operations
//===----------------------------------------------------------------------===//

const KernelOpInfo *fusec::lookupKernelOp(llvm::StringRef name) {
  static const KernelOpInfo ops[] = {
      {"exp", 1, false},       {"log", 1, false},        {"sqrt", 1, false},
      {"rsqrt", 1, false},     {"sin", 1, false},        {"cos", 1, false},
      {"tanh", 1, false},      {"sigmoid", 1, false},    {"erf", 1, false},
      {"floor", 1, false},     {"ceil", 1, false},       {"round", 1, false},
      {"negative", 1, false},  {"abs", 1, false},        {"sign", 1, false},
      {"relu", 1, false},      {"gelu", 1, false},       {"gelu_tanh", 1, false},
      {"silu", 1, false},      {"logical_not", 1, true}, {"add", 2, false},
      {"subtract", 2, false},  {"multiply", 2, false},   {"divide", 2, false},
      {"power", 2, false},     {"maximum", 2, false},    {"minimum", 2, false},
      {"equal", 2, true},      {"not_equal", 2, true},   {"less", 2, true},
      {"less_equal", 2, true}, {"greater", 2, true},     {"greater_equal", 2, true},
      {"logical_and", 2, true}, {"logical_or", 2, true},
      // A reduction's combiners as they appear in the lowered form, so that
      // counters keep the combiner's name (NaN-propagating, as maximum).
      {"max", 2, false},        {"min", 2, false},
  };
  for (const KernelOpInfo &op : ops)
    if (name == op.name)
      return &op;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

static int precedence(const KExpr &e) {
  switch (e.kind) {
  case KExpr::Or: return 1;
  case KExpr::And: return 2;
  case KExpr::Lt: case KExpr::Le: case KExpr::Gt: case KExpr::Ge:
  case KExpr::Eq: case KExpr::Ne: return 3;
  case KExpr::Add: case KExpr::Sub: return 4;
  case KExpr::Mul: return 5;
  default: return 6;
  }
}

static const char *infixSymbol(KExpr::Kind kind) {
  switch (kind) {
  case KExpr::Add: return " + ";
  case KExpr::Sub: return " - ";
  case KExpr::Mul: return " * ";
  case KExpr::Lt: return " < ";
  case KExpr::Le: return " <= ";
  case KExpr::Gt: return " > ";
  case KExpr::Ge: return " >= ";
  case KExpr::Eq: return " == ";
  case KExpr::Ne: return " != ";
  case KExpr::And: return " && ";
  case KExpr::Or: return " || ";
  default: return nullptr;
  }
}

static std::string printWith(const KExpr &e, std::optional<DType> expected);

static std::string printArgs(const std::vector<KExprPtr> &args,
                             std::optional<DType> expected = std::nullopt,
                             size_t first = 0) {
  std::string text;
  for (size_t i = 0; i < args.size(); ++i)
    text += (i ? ", " : "") +
            printWith(*args[i], i >= first ? expected : std::nullopt);
  return text;
}

/// Whether the parser can tell `e`'s dtype without a context: not a bare
/// literal, nor an operation on bare literals only (`relu(0.25)`), which the
/// printer must then write with typed literals.
static bool hasIntrinsicDType(const KExpr &e) {
  switch (e.kind) {
  case KExpr::Literal:
    return e.dtype == DType::boolean;
  case KExpr::Call: {
    const KernelOpInfo *op = lookupKernelOp(e.name);
    if (op && op->returnsBool)
      return true;
    for (const KExprPtr &arg : e.args)
      if (hasIntrinsicDType(*arg))
        return true;
    return false;
  }
  case KExpr::Select:
    return hasIntrinsicDType(*e.args[1]) || hasIntrinsicDType(*e.args[2]);
  default:
    return true;
  }
}

/// The dtype the parser will give bare literals among `args`: that of the
/// first operand whose dtype it can tell, else the context's.
static std::optional<DType> operandContext(const std::vector<KExprPtr> &args,
                                           size_t first,
                                           std::optional<DType> expected) {
  for (size_t i = first; i < args.size(); ++i)
    if (hasIntrinsicDType(*args[i]))
      return args[i]->dtype;
  return expected;
}

std::string fusec::printExpr(const KExpr &e) { return printWith(e, std::nullopt); }
std::string fusec::printValueExpr(const KExpr &e, DType context) {
  return printWith(e, context);
}

/// Prints `e`; a literal is bare when the parser will infer its dtype from
/// `expected`, and written `f16(0.5)` otherwise.
static std::string printWith(const KExpr &e, std::optional<DType> expected) {
  switch (e.kind) {
  case KExpr::IntConst:
    return std::to_string(e.intValue);
  case KExpr::Var:
    return e.name;
  case KExpr::Literal: {
    std::string text = isIntDType(e.dtype) ? std::to_string(e.intValue)
                                           : formatScalar(e.floatValue, e.dtype);
    if (e.dtype == DType::boolean || (expected && *expected == e.dtype))
      return text;
    return dtypeName(e.dtype).str() + "(" + text + ")";
  }
  case KExpr::Load:
    return "%" + e.name + "[" + printArgs(e.args) + "]";
  case KExpr::Call: {
    const KernelOpInfo *op = lookupKernelOp(e.name);
    std::optional<DType> context =
        op && op->returnsBool ? std::nullopt : expected;
    return e.name + "(" +
           printArgs(e.args, operandContext(e.args, 0, context)) + ")";
  }
  case KExpr::Cast:
    return dtypeName(e.dtype).str() + "(" + printWith(*e.args[0], std::nullopt) + ")";
  case KExpr::Select:
    return "select(" +
           printArgs(e.args, operandContext(e.args, 1, expected), 1) + ")";
  case KExpr::FloorDiv:
    return "floordiv(" + printArgs(e.args) + ")";
  case KExpr::Mod:
    return "mod(" + printArgs(e.args) + ")";
  case KExpr::Min:
    return "min(" + printArgs(e.args) + ")";
  case KExpr::Max:
    return "max(" + printArgs(e.args) + ")";
  case KExpr::Not: {
    std::string inner = printExpr(*e.args[0]);
    return precedence(*e.args[0]) < 6 ? "!(" + inner + ")" : "!" + inner;
  }
  default:
    break;
  }
  int prec = precedence(e);
  std::string lhs = printWith(*e.args[0], std::nullopt),
              rhs = printWith(*e.args[1], std::nullopt);
  if (precedence(*e.args[0]) < prec ||
      (prec == 3 && precedence(*e.args[0]) == 3))
    lhs = "(" + lhs + ")";
  // Left-associative: a right operand of equal precedence needs parentheses.
  if (precedence(*e.args[1]) <= prec)
    rhs = "(" + rhs + ")";
  return lhs + infixSymbol(e.kind) + rhs;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

const KBuffer *Kernel::findBuffer(llvm::StringRef bufferName) const {
  for (const auto *list : {&inputs, &outputs, &internals})
    for (const KBuffer &buffer : *list)
      if (buffer.name == bufferName)
        return &buffer;
  for (const LLaunch &launch : launches)
    for (const KBuffer &buffer : launch.buffers)
      if (buffer.name == bufferName)
        return &buffer;
  return nullptr;
}

const KStage *Kernel::findStage(llvm::StringRef buffer) const {
  for (const KStage &stage : stages)
    if (stage.buffer == buffer)
      return &stage;
  return nullptr;
}

static const std::pair<OpPatternKind, const char *> kKindNames[] = {
    {OpPatternKind::ElemWise, "elemwise"},
    {OpPatternKind::Broadcast, "broadcast"},
    {OpPatternKind::Injective, "injective"},
    {OpPatternKind::CommReduce, "comm_reduce"},
    {OpPatternKind::OutEWiseFusable, "out_ewise_fusable"},
    {OpPatternKind::Tuple, "tuple"},
    {OpPatternKind::Opaque, "opaque"}};

llvm::StringRef fusec::patternKindName(OpPatternKind kind) {
  for (const auto &[value, name] : kKindNames)
    if (value == kind)
      return name;
  return "opaque";
}

std::optional<OpPatternKind> fusec::parsePatternKind(llvm::StringRef name) {
  for (const auto &[value, name2] : kKindNames)
    if (name == name2)
      return value;
  return std::nullopt;
}

Type Kernel::getResultType() const {
  const Attr *tupleResult = attrs.get("tuple_result");
  bool forceTuple = tupleResult && tupleResult->kind == Attr::Bool && tupleResult->boolValue;
  if (outputs.size() == 1 && !forceTuple)
    return outputs.front().type;
  std::vector<Type> fields;
  for (const KBuffer &buffer : outputs)
    fields.push_back(buffer.type);
  return Type::tuple(fields);
}

std::vector<std::string> Kernel::getSymbolicDims() const {
  std::vector<std::string> dims;
  for (const KBuffer &buffer : inputs)
    for (const Dim &dim : buffer.type.getShape())
      if (dim.isSymbolic() &&
          std::find(dims.begin(), dims.end(), dim.symbol) == dims.end())
        dims.push_back(dim.symbol);
  return dims;
}

static std::string printBufferList(const std::vector<KBuffer> &buffers) {
  std::string text;
  for (size_t i = 0; i < buffers.size(); ++i)
    text += (i ? ", " : "") + ("%" + buffers[i].name) + ": " +
            buffers[i].type.str();
  return text;
}

static std::string printStage(const KStage &stage) {
  std::string text = "%" + stage.buffer + "[";
  for (size_t i = 0; i < stage.spatialVars.size(); ++i)
    text += (i ? ", " : "") + stage.spatialVars[i];
  text += "] = ";
  if (!stage.isReduction())
    return text + printWith(*stage.body, stage.body->dtype);
  text += "reduce " + stage.combiner + "(" +
          printWith(*stage.body, stage.accumulate) + ") over (";
  for (size_t i = 0; i < stage.reduceVars.size(); ++i)
    text += (i ? ", " : "") + stage.reduceVars[i].first + ": " +
            stage.reduceVars[i].second.str();
  std::string init = isIntDType(stage.accumulate) ? std::to_string(stage.intInit)
                                                  : formatScalar(stage.init, stage.accumulate);
  return text + ") init " + init + " in " +
         dtypeName(stage.accumulate).str();
}

std::string fusec::printKernel(const Kernel &kernel) {
  std::string text = "kernel @" + kernel.name + "(" +
                     printBufferList(kernel.inputs) + ") -> (" +
                     printBufferList(kernel.outputs) + ")";
  if (!kernel.attrs.empty())
    text += " attributes " + kernel.attrs.str();
  text += " {\n";
  for (const KBuffer &buffer : kernel.internals)
    text += "  internal %" + buffer.name + ": " + buffer.type.str() + "\n";
  for (const KStage &stage : kernel.stages)
    text += "  " + printStage(stage) + "\n";
  if (!kernel.schedule.empty())
    text += printSchedule(kernel);
  for (const LLaunch &launch : kernel.launches)
    text += printLaunch(launch);
  return text + "}\n";
}
