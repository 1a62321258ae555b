//===- KernelExec.cpp - Compiling and running kernel stages ---------------===//
//
// Each stage is compiled once per call into a tree of small node objects
// (symbolic dims already bound, buffer strides and global/internal roles
// resolved, affine indices reduced to coefficient lists), then run over its
// domain in row-major order with reduction variables innermost. Nothing is
// keyed on op names beyond the scalar operation itself: the interpreter
// checks the stages exactly as written.
//
// Counting is dynamic and exact: every executed operation node increments
// its counter (a not-taken `select` branch does not run), every load of an
// input or output buffer adds its dtype's bytes to bytes read, every store
// to an output adds to bytes written; a reduction's combine counts as one
// evaluation of its combiner.
//
//===----------------------------------------------------------------------===//
#include "KernelExec.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace fusec;
using namespace fusec::exec;

/// An integral double wrapped modulo 2^64 into int64's range, without the
/// undefined behaviour of converting an out-of-range double.
static int64_t wrapToInt64(double value) {
  if (std::isnan(value) || std::isinf(value))
    return 0;
  double wrapped = std::fmod(std::trunc(value), 18446744073709551616.0);
  if (wrapped >= 9223372036854775808.0)
    wrapped -= 18446744073709551616.0;
  else if (wrapped < -9223372036854775808.0)
    wrapped += 18446744073709551616.0;
  return wrapped >= 9223372036854775808.0 ? INT64_MIN : static_cast<int64_t>(wrapped);
}

double exec::roundTo(double value, DType dtype) {
  switch (dtype) {
  case DType::f32:
    return static_cast<float>(value);
  case DType::f16:
  case DType::bf16:
    return roundToDType(value, dtype);
  case DType::boolean:
    return value != 0 ? 1 : 0;
  case DType::i8:
  case DType::i32: {
    uint64_t bits = static_cast<uint64_t>(wrapToInt64(value));
    return dtype == DType::i8 ? double(int8_t(bits)) : double(int32_t(bits));
  }
  case DType::i64:
    return double(wrapToInt64(value)); // modulo 2^64, as two's complement
  }
  return value;
}

void exec::roundBatch(double *values, int64_t n, DType dtype) {
  if (dtype == DType::f32) {
    for (int64_t t = 0; t < n; ++t)
      values[t] = static_cast<float>(values[t]);
    return;
  }
  if (dtype == DType::i64 || dtype == DType::boolean || dtype == DType::i8 ||
      dtype == DType::i32 || dtype == DType::f16 || dtype == DType::bf16)
    for (int64_t t = 0; t < n; ++t)
      values[t] = roundTo(values[t], dtype);
}

namespace {

struct Buffer {
  std::vector<double> data;
  std::vector<int64_t> shape, strides;
  DType dtype = DType::f32;
  bool global = false;
  std::string name;
};

/// Elements evaluated per batch along the innermost loop.
constexpr int64_t kBatch = 256;

struct Node {
  virtual ~Node() = default;
  virtual double eval(const int64_t *vars) const = 0;
  /// The values for vars[slot] = start, start + 1, ..., start + count - 1
  /// (vars[slot] holds start; count <= kBatch). The default evaluates each
  /// element on its own, which keeps `select` lazy.
  virtual void evalBatch(int64_t *vars, int slot, int64_t count, double *out) const {
    int64_t start = vars[slot];
    for (int64_t t = 0; t < count; ++t) {
      vars[slot] = start + t;
      out[t] = eval(vars);
    }
    vars[slot] = start;
  }
};
using NodePtr = std::unique_ptr<Node>;

struct Const final : Node {
  double value;
  explicit Const(double v) : value(v) {}
  double eval(const int64_t *) const override { return value; }
  void evalBatch(int64_t *, int, int64_t count, double *out) const override {
    std::fill(out, out + count, value);
  }
};

struct VarRef final : Node {
  int slot;
  explicit VarRef(int s) : slot(s) {}
  double eval(const int64_t *vars) const override { return double(vars[slot]); }
  void evalBatch(int64_t *vars, int batchSlot, int64_t count, double *out) const override {
    double start = double(vars[slot]);
    for (int64_t t = 0; t < count; ++t)
      out[t] = batchSlot == slot ? start + double(t) : start;
  }
};

int64_t floorDiv(int64_t a, int64_t b) {
  if (b == 0)
    throw ExecError{"division by zero in an index expression"};
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

struct IndexOp final : Node {
  KExpr::Kind kind;
  NodePtr a, b;
  mutable double rhs[kBatch];
  bool shortCircuit = false; // `&&`/`||` whose right side loads: stay lazy
  /// Arithmetic and comparisons evaluate both operands as batches; so do
  /// `&&` and `||` unless their right side reads a buffer (a guard such as
  /// `i < n && %idx[i] > 0` must not read out of range).
  void evalBatch(int64_t *vars, int slot, int64_t count, double *out) const override {
    if (shortCircuit)
      return Node::evalBatch(vars, slot, count, out);
    a->evalBatch(vars, slot, count, out);
    if (kind == KExpr::Not) {
      for (int64_t t = 0; t < count; ++t)
        out[t] = out[t] == 0;
      return;
    }
    if (kind == KExpr::FloorDiv || kind == KExpr::Mod)
      return Node::evalBatch(vars, slot, count, out); // division checks
    b->evalBatch(vars, slot, count, rhs);
    for (int64_t t = 0; t < count; ++t) {
      double x = out[t], y = rhs[t];
      switch (kind) {
      case KExpr::Add: out[t] = x + y; break;
      case KExpr::Sub: out[t] = x - y; break;
      case KExpr::Mul: out[t] = x * y; break;
      case KExpr::Min: out[t] = std::min(x, y); break;
      case KExpr::Max: out[t] = std::max(x, y); break;
      case KExpr::Lt: out[t] = x < y; break;
      case KExpr::Le: out[t] = x <= y; break;
      case KExpr::Gt: out[t] = x > y; break;
      case KExpr::Ge: out[t] = x >= y; break;
      case KExpr::Eq: out[t] = x == y; break;
      case KExpr::Ne: out[t] = x != y; break;
      case KExpr::And: out[t] = x != 0 && y != 0; break;
      case KExpr::Or: out[t] = x != 0 || y != 0; break;
      default: break;
      }
    }
  }
  double eval(const int64_t *vars) const override {
    int64_t x = wrapToInt64(a->eval(vars));
    if (kind == KExpr::Not)
      return x == 0;
    if (kind == KExpr::And)
      return x != 0 && b->eval(vars) != 0; // short-circuit
    if (kind == KExpr::Or)
      return x != 0 || b->eval(vars) != 0;
    int64_t y = wrapToInt64(b->eval(vars));
    switch (kind) {
    case KExpr::Add: return double(x + y);
    case KExpr::Sub: return double(x - y);
    case KExpr::Mul: return double(x * y);
    case KExpr::FloorDiv: return double(floorDiv(x, y));
    case KExpr::Mod: return double(x - floorDiv(x, y) * y);
    case KExpr::Min: return double(std::min(x, y));
    case KExpr::Max: return double(std::max(x, y));
    case KExpr::Lt: return x < y;
    case KExpr::Le: return x <= y;
    case KExpr::Gt: return x > y;
    case KExpr::Ge: return x >= y;
    case KExpr::Eq: return x == y;
    case KExpr::Ne: return x != y;
    default: return 0;
    }
  }
};

/// One index of a load: constant + sum of coefficient * variable when the
/// expression is affine, else a general node.
struct IndexCalc {
  int64_t constant = 0;
  std::vector<std::pair<int, int64_t>> terms; // slot, coefficient
  NodePtr general;
  int64_t eval(const int64_t *vars) const {
    if (general)
      return wrapToInt64(general->eval(vars));
    int64_t value = constant;
    for (const auto &[slot, coefficient] : terms)
      value += coefficient * vars[slot];
    return value;
  }
};

struct Load final : Node {
  const Buffer *buffer;
  std::vector<IndexCalc> indices;
  int64_t *bytesRead;
  int64_t elementBytes;
  double eval(const int64_t *vars) const override {
    int64_t offset = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t index = indices[d].eval(vars);
      if (index < 0 || index >= buffer->shape[d])
        throw ExecError{"index " + std::to_string(index) + " is out of range [0, " +
                        std::to_string(buffer->shape[d]) + ") in dimension " +
                        std::to_string(d) + " of %" + buffer->name};
      offset += index * buffer->strides[d];
    }
    if (buffer->global)
      *bytesRead += elementBytes;
    return buffer->data[offset];
  }

  void evalBatch(int64_t *vars, int slot, int64_t count, double *out) const override {
    // Affine indices move linearly with the batched variable: checking the
    // first and the last element checks them all.
    int64_t offset = 0, step = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      const IndexCalc &calc = indices[d];
      if (calc.general)
        return Node::evalBatch(vars, slot, count, out);
      int64_t first = calc.eval(vars), delta = 0;
      for (const auto &[termSlot, coefficient] : calc.terms)
        if (termSlot == slot)
          delta += coefficient;
      int64_t last = first + delta * (count - 1);
      if (std::min(first, last) < 0 || std::max(first, last) >= buffer->shape[d])
        return Node::evalBatch(vars, slot, count, out); // reports the index
      offset += first * buffer->strides[d];
      step += delta * buffer->strides[d];
    }
    const double *data = buffer->data.data() + offset;
    for (int64_t t = 0; t < count; ++t)
      out[t] = data[t * step];
    if (buffer->global)
      *bytesRead += elementBytes * count;
  }
};

enum class Op {
  Exp, Log, Sqrt, Rsqrt, Sin, Cos, Tanh, Sigmoid, Erf, Floor, Ceil, Round,
  Negative, Abs, Sign, Relu, Gelu, GeluTanh, Silu, LogicalNot, Add, Subtract,
  Multiply, Divide, Power, Maximum, Minimum, Equal, NotEqual, Less, LessEqual,
  Greater, GreaterEqual, LogicalAnd, LogicalOr
};

const llvm::StringMap<Op> &opTable() {
  static const llvm::StringMap<Op> table = {
      {"exp", Op::Exp}, {"log", Op::Log}, {"sqrt", Op::Sqrt}, {"rsqrt", Op::Rsqrt},
      {"sin", Op::Sin}, {"cos", Op::Cos}, {"tanh", Op::Tanh}, {"sigmoid", Op::Sigmoid},
      {"erf", Op::Erf}, {"floor", Op::Floor}, {"ceil", Op::Ceil}, {"round", Op::Round},
      {"negative", Op::Negative}, {"abs", Op::Abs}, {"sign", Op::Sign}, {"relu", Op::Relu},
      {"gelu", Op::Gelu}, {"gelu_tanh", Op::GeluTanh}, {"silu", Op::Silu},
      {"logical_not", Op::LogicalNot}, {"add", Op::Add}, {"subtract", Op::Subtract},
      {"multiply", Op::Multiply}, {"divide", Op::Divide}, {"power", Op::Power},
      {"maximum", Op::Maximum}, {"minimum", Op::Minimum}, {"equal", Op::Equal},
      {"not_equal", Op::NotEqual}, {"less", Op::Less}, {"less_equal", Op::LessEqual},
      {"greater", Op::Greater}, {"greater_equal", Op::GreaterEqual},
      {"logical_and", Op::LogicalAnd}, {"logical_or", Op::LogicalOr}};
  return table;
}

double applyUnary(Op op, double x) {
  switch (op) {
  case Op::Exp: return std::exp(x);
  case Op::Log: return std::log(x);
  case Op::Sqrt: return std::sqrt(x);
  case Op::Rsqrt: return 1.0 / std::sqrt(x);
  case Op::Sin: return std::sin(x);
  case Op::Cos: return std::cos(x);
  case Op::Tanh: return std::tanh(x);
  case Op::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
  case Op::Erf: return std::erf(x);
  case Op::Floor: return std::floor(x);
  case Op::Ceil: return std::ceil(x);
  case Op::Round: return std::nearbyint(x); // half to even, as NumPy
  case Op::Negative: return -x;
  case Op::Abs: return std::fabs(x);
  case Op::Sign: return x > 0 ? 1 : x < 0 ? -1 : x;
  case Op::Relu: return x > 0 ? x : (std::isnan(x) ? x : 0.0);
  case Op::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case Op::GeluTanh:
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  case Op::Silu: return x / (1.0 + std::exp(-x));
  case Op::LogicalNot: return x == 0;
  default: return 0;
  }
}

/// Integer add, subtract and multiply in wrapping 64-bit arithmetic, so an
/// i32 product beyond 2^53 is exact before it is wrapped to 32 bits.
double integerArithmetic(Op op, double x, double y, DType dtype) {
  uint64_t a = uint64_t(wrapToInt64(x)), b = uint64_t(wrapToInt64(y));
  uint64_t result = op == Op::Add ? a + b : op == Op::Subtract ? a - b : a * b;
  // Wrap to the dtype's width before the result becomes a double again.
  if (dtype == DType::i8)
    return double(int8_t(result));
  if (dtype == DType::i32)
    return double(int32_t(result));
  return double(int64_t(result));
}

double applyBinary(Op op, double x, double y, DType dtype) {
  if (isIntDType(dtype) && (op == Op::Add || op == Op::Subtract || op == Op::Multiply))
    return integerArithmetic(op, x, y, dtype);
  switch (op) {
  case Op::Add: return x + y;
  case Op::Subtract: return x - y;
  case Op::Multiply: return x * y;
  case Op::Divide:
    if (isIntDType(dtype)) { // truncating, as C and TVM's TIR
      if (y == 0)
        throw ExecError{"integer division by zero"};
      return std::trunc(x / y);
    }
    return x / y;
  case Op::Power: return std::pow(x, y);
  case Op::Maximum: return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
  case Op::Minimum: return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
  case Op::Equal: return x == y;
  case Op::NotEqual: return x != y;
  case Op::Less: return x < y;
  case Op::LessEqual: return x <= y;
  case Op::Greater: return x > y;
  case Op::GreaterEqual: return x >= y;
  case Op::LogicalAnd: return x != 0 && y != 0;
  case Op::LogicalOr: return x != 0 || y != 0;
  default: return 0;
  }
}

struct Call final : Node {
  Op op;
  DType dtype;       // the operation's dtype (operands' for comparisons)
  DType resultDType; // what the result is rounded to
  NodePtr a, b;
  int64_t *count;
  mutable double scratch[kBatch];
  double eval(const int64_t *vars) const override {
    ++*count;
    double x = a->eval(vars);
    double result = b ? applyBinary(op, x, b->eval(vars), dtype) : applyUnary(op, x);
    return roundTo(result, resultDType);
  }
  void evalBatch(int64_t *vars, int slot, int64_t n, double *out) const override {
    a->evalBatch(vars, slot, n, out);
    if (b) {
      b->evalBatch(vars, slot, n, scratch);
      // The frequent float arithmetic gets its own loops.
      switch (isIntDType(dtype) ? Op::Power : op) {
      case Op::Add:
        for (int64_t t = 0; t < n; ++t)
          out[t] += scratch[t];
        break;
      case Op::Subtract:
        for (int64_t t = 0; t < n; ++t)
          out[t] -= scratch[t];
        break;
      case Op::Multiply:
        for (int64_t t = 0; t < n; ++t)
          out[t] *= scratch[t];
        break;
      default:
        for (int64_t t = 0; t < n; ++t)
          out[t] = applyBinary(op, out[t], scratch[t], dtype);
      }
    } else {
      for (int64_t t = 0; t < n; ++t)
        out[t] = applyUnary(op, out[t]);
    }
    roundBatch(out, n, resultDType);
    *count += n;
  }
};

struct Cast final : Node {
  NodePtr a;
  DType dtype;
  double eval(const int64_t *vars) const override { return roundTo(a->eval(vars), dtype); }
  void evalBatch(int64_t *vars, int slot, int64_t n, double *out) const override {
    a->evalBatch(vars, slot, n, out);
    roundBatch(out, n, dtype);
  }
};

struct Select final : Node {
  NodePtr cond, a, b;
  mutable double conditions[kBatch];
  double eval(const int64_t *vars) const override {
    return cond->eval(vars) != 0 ? a->eval(vars) : b->eval(vars);
  }
  /// A batch whose conditions agree evaluates one branch as a batch (the
  /// interior of a padded window); a mixed batch stays lazy per element, so
  /// a branch never runs where it is not taken.
  void evalBatch(int64_t *vars, int slot, int64_t count, double *out) const override {
    cond->evalBatch(vars, slot, count, conditions);
    bool allTrue = true, allFalse = true;
    for (int64_t t = 0; t < count; ++t) {
      allTrue &= conditions[t] != 0;
      allFalse &= conditions[t] == 0;
    }
    if (allTrue)
      return a->evalBatch(vars, slot, count, out);
    if (allFalse)
      return b->evalBatch(vars, slot, count, out);
    int64_t start = vars[slot];
    for (int64_t t = 0; t < count; ++t) {
      vars[slot] = start + t;
      out[t] = conditions[t] != 0 ? a->eval(vars) : b->eval(vars);
    }
    vars[slot] = start;
  }
};

bool readsBuffer(const KExpr &e) {
  if (e.kind == KExpr::Load)
    return true;
  for (const KExprPtr &arg : e.args)
    if (readsBuffer(*arg))
      return true;
  return false;
}

/// Compiles the expressions of one kernel call.
struct Compiler {
  llvm::StringMap<Buffer *> buffers;
  llvm::StringMap<int> slots;             // iteration variables
  llvm::StringMap<int64_t> symbols;       // bound symbolic dims
  KernelCounters &counters;

  explicit Compiler(KernelCounters &counters) : counters(counters) {}

  /// Affine form of `e` over the slots, if it has one.
  bool affine(const KExpr &e, IndexCalc &out, int64_t scale) {
    switch (e.kind) {
    case KExpr::IntConst:
      out.constant += scale * e.intValue;
      return true;
    case KExpr::Var: {
      auto slot = slots.find(e.name);
      if (slot != slots.end()) {
        out.terms.push_back({slot->second, scale});
        return true;
      }
      out.constant += scale * symbols.lookup(e.name);
      return true;
    }
    case KExpr::Add:
      return affine(*e.args[0], out, scale) && affine(*e.args[1], out, scale);
    case KExpr::Sub:
      return affine(*e.args[0], out, scale) && affine(*e.args[1], out, -scale);
    case KExpr::Mul: {
      IndexCalc constant;
      if (affine(*e.args[1], constant, 1) && constant.terms.empty())
        return affine(*e.args[0], out, scale * constant.constant);
      constant = IndexCalc();
      if (affine(*e.args[0], constant, 1) && constant.terms.empty())
        return affine(*e.args[1], out, scale * constant.constant);
      return false;
    }
    default:
      return false;
    }
  }

  NodePtr compile(const KExpr &e) {
    switch (e.kind) {
    case KExpr::IntConst:
      return std::make_unique<Const>(double(e.intValue));
    case KExpr::Literal:
      return std::make_unique<Const>(e.floatValue);
    case KExpr::Var: {
      auto slot = slots.find(e.name);
      if (slot != slots.end())
        return std::make_unique<VarRef>(slot->second);
      return std::make_unique<Const>(double(symbols.lookup(e.name)));
    }
    case KExpr::Load: {
      auto load = std::make_unique<Load>();
      load->buffer = buffers.lookup(e.name);
      load->bytesRead = &counters.bytesRead;
      load->elementBytes = dtypeBytes(e.dtype);
      for (const KExprPtr &index : e.args) {
        IndexCalc calc;
        if (!affine(*index, calc, 1)) {
          calc = IndexCalc();
          calc.general = compile(*index);
        }
        load->indices.push_back(std::move(calc));
      }
      return load;
    }
    case KExpr::Call: {
      auto call = std::make_unique<Call>();
      call->op = opTable().lookup(e.name);
      call->dtype = e.args[0]->dtype;
      call->resultDType = e.dtype;
      call->a = compile(*e.args[0]);
      if (e.args.size() > 1)
        call->b = compile(*e.args[1]);
      call->count = &counters.evaluations[e.name];
      return call;
    }
    case KExpr::Cast: {
      auto cast = std::make_unique<Cast>();
      cast->a = compile(*e.args[0]);
      cast->dtype = e.dtype;
      return cast;
    }
    case KExpr::Select: {
      auto select = std::make_unique<Select>();
      select->cond = compile(*e.args[0]);
      select->a = compile(*e.args[1]);
      select->b = compile(*e.args[2]);
      return select;
    }
    default: {
      auto op = std::make_unique<IndexOp>();
      op->kind = e.kind;
      op->a = compile(*e.args[0]);
      if (e.args.size() > 1)
        op->b = compile(*e.args[1]);
      op->shortCircuit =
          (e.kind == KExpr::And || e.kind == KExpr::Or) && readsBuffer(*e.args[1]);
      return op;
    }
    }
  }
};

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

int64_t resolveDim(const Dim &dim, const llvm::StringMap<int64_t> &symbols) {
  return dim.isSymbolic() ? symbols.lookup(dim.symbol) : dim.size;
}

enum class Combiner { Add, Multiply, Max, Min };

inline double combineOne(Combiner combiner, double acc, double value,
                         DType accumulate) {
  value = roundFast(value, accumulate);
  bool integer = isIntDType(accumulate);
  switch (combiner) {
  case Combiner::Add:
    acc = integer ? integerArithmetic(Op::Add, acc, value, accumulate) : acc + value;
    break;
  case Combiner::Multiply:
    acc = integer ? integerArithmetic(Op::Multiply, acc, value, accumulate) : acc * value;
    break;
  case Combiner::Max:
    acc = std::isnan(acc) || std::isnan(value) ? NAN : std::max(acc, value);
    break;
  case Combiner::Min:
    acc = std::isnan(acc) || std::isnan(value) ? NAN : std::min(acc, value);
    break;
  }
  return roundFast(acc, accumulate);
}

/// Folds `values` into `acc` in order, rounding after every step.
double combineAll(Combiner combiner, double acc, const double *values, int64_t n,
                  DType accumulate) {
  for (int64_t t = 0; t < n; ++t)
    acc = combineOne(combiner, acc, values[t], accumulate);
  return acc;
}

/// Runs `stage` over its domain: row-major, reduction variables innermost,
/// the innermost variable evaluated in batches.
void runStage(const KStage &stage, Compiler &compiler, Buffer &out) {
  compiler.slots.clear();
  std::vector<int64_t> extents;
  for (size_t d = 0; d < stage.spatialVars.size(); ++d) {
    compiler.slots[stage.spatialVars[d]] = int(d);
    extents.push_back(out.shape[d]);
  }
  size_t spatialCount = extents.size();
  for (const auto &[var, extent] : stage.reduceVars) {
    compiler.slots[var] = int(extents.size());
    extents.push_back(resolveDim(extent, compiler.symbols));
  }
  NodePtr body = compiler.compile(*stage.body);
  Combiner combiner = stage.combiner == "multiply" ? Combiner::Multiply
                      : stage.combiner == "max"    ? Combiner::Max
                      : stage.combiner == "min"    ? Combiner::Min
                                                   : Combiner::Add;
  int64_t *combineCount =
      stage.isReduction() ? &compiler.counters.evaluations[stage.combiner] : nullptr;
  int64_t elementBytes = dtypeBytes(out.dtype);
  std::vector<int64_t> vars(extents.size() + 1, 0);
  double batch[kBatch];
  auto product = [&](size_t from, size_t to) {
    int64_t total = 1;
    for (size_t d = from; d < to; ++d)
      total *= extents[d];
    return total;
  };
  // Visits every point of dims [from, to - 1) and, along dim to - 1, runs
  // `inner(count)` per batch with vars[to - 1] at the batch start.
  auto sweep = [&](size_t from, size_t to, auto &&inner) {
    if (from == to) {
      inner(int64_t(1), -1);
      return;
    }
    size_t last = to - 1;
    int64_t outer = product(from, last), extent = extents[last];
    for (int64_t point = 0; point < outer; ++point) {
      for (size_t d = last, rest = point; d-- > from;) {
        vars[d] = int64_t(rest % extents[d]);
        rest /= extents[d];
      }
      for (int64_t start = 0; start < extent; start += kBatch) {
        vars[last] = start;
        inner(std::min(kBatch, extent - start), int(last));
      }
    }
  };
  int64_t flat = 0;
  if (!stage.isReduction()) {
    sweep(0, spatialCount, [&](int64_t count, int slot) {
      if (slot < 0)
        batch[0] = body->eval(vars.data());
      else
        body->evalBatch(vars.data(), slot, count, batch);
      for (int64_t t = 0; t < count; ++t)
        out.data[flat++] = roundTo(batch[t], out.dtype);
    });
  } else {
    // Each output element folds its reduction points in order. With spatial
    // dims, a batch of neighbouring outputs is folded together (same order
    // per element, contiguous loads); a 0-d output batches the reduction.
    int64_t reduceTotal = product(spatialCount, extents.size());
    double accs[kBatch];
    sweep(0, spatialCount, [&](int64_t count, int slot) {
      double init = roundTo(stage.init, stage.accumulate);
      if (slot < 0) {
        double acc = init;
        if (reduceTotal > 0)
          sweep(spatialCount, extents.size(), [&](int64_t n, int innerSlot) {
            if (innerSlot < 0)
              batch[0] = body->eval(vars.data());
            else
              body->evalBatch(vars.data(), innerSlot, n, batch);
            acc = combineAll(combiner, acc, batch, n, stage.accumulate);
            *combineCount += n;
          });
        out.data[flat++] = roundTo(acc, out.dtype);
        return;
      }
      std::fill(accs, accs + count, init);
      for (int64_t step = 0; step < reduceTotal; ++step) {
        for (size_t d = extents.size(), rest = step; d-- > spatialCount;) {
          vars[d] = int64_t(rest % extents[d]);
          rest /= extents[d];
        }
        body->evalBatch(vars.data(), slot, count, batch);
        if (combiner == Combiner::Add && stage.accumulate == DType::f32) {
          for (int64_t t = 0; t < count; ++t) // the matmul/conv case
            accs[t] = static_cast<float>(accs[t] + static_cast<float>(batch[t]));
        } else {
          for (int64_t t = 0; t < count; ++t)
            accs[t] = combineOne(combiner, accs[t], batch[t], stage.accumulate);
        }
      }
      *combineCount += count * reduceTotal;
      for (int64_t t = 0; t < count; ++t)
        out.data[flat++] = roundTo(accs[t], out.dtype);
    });
  }
  if (out.global)
    compiler.counters.bytesWritten += elementBytes * flat;
}

} // namespace

std::vector<std::shared_ptr<TensorData>>
exec::runKernel(const Kernel &kernel,
                const std::vector<std::shared_ptr<TensorData>> &inputs,
                KernelCounters &counters) {
  Compiler compiler(counters);
  std::vector<std::unique_ptr<Buffer>> storage;
  // Inputs bind the symbolic dims (the caller checked consistency).
  for (size_t i = 0; i < kernel.inputs.size(); ++i) {
    const KBuffer &declared = kernel.inputs[i];
    const TensorData &data = *inputs[i];
    for (size_t d = 0; d < declared.type.getShape().size(); ++d) {
      const Dim &dim = declared.type.getShape()[d];
      if (dim.isSymbolic())
        compiler.symbols[dim.symbol] = data.getShape()[d];
    }
    auto buffer = std::make_unique<Buffer>();
    buffer->name = declared.name;
    buffer->shape = data.getShape();
    buffer->strides = stridesOf(buffer->shape);
    buffer->dtype = data.getDType();
    buffer->global = true;
    buffer->data.resize(data.getNumElements());
    for (int64_t e = 0; e < data.getNumElements(); ++e)
      buffer->data[e] = data.get(e);
    compiler.buffers[declared.name] = buffer.get();
    storage.push_back(std::move(buffer));
  }
  for (const auto *list : {&kernel.outputs, &kernel.internals})
    for (const KBuffer &declared : *list) {
      auto buffer = std::make_unique<Buffer>();
      buffer->name = declared.name;
      for (const Dim &dim : declared.type.getShape())
        buffer->shape.push_back(resolveDim(dim, compiler.symbols));
      buffer->strides = stridesOf(buffer->shape);
      buffer->dtype = declared.type.getDType();
      buffer->global = declared.role == KBuffer::Output;
      int64_t count = 1;
      for (int64_t dim : buffer->shape)
        count *= dim;
      buffer->data.assign(count, 0.0);
      compiler.buffers[declared.name] = buffer.get();
      storage.push_back(std::move(buffer));
    }
  for (const KStage &stage : kernel.stages)
    runStage(stage, compiler, *compiler.buffers.lookup(stage.buffer));
  std::vector<std::shared_ptr<TensorData>> outputs;
  for (const KBuffer &declared : kernel.outputs) {
    const Buffer &buffer = *compiler.buffers.lookup(declared.name);
    auto data = std::make_shared<TensorData>(buffer.dtype, buffer.shape);
    for (int64_t e = 0; e < data->getNumElements(); ++e)
      data->set(e, buffer.data[e]);
    outputs.push_back(std::move(data));
  }
  return outputs;
}
