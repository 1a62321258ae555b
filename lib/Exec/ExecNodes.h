//===- ExecNodes.h - The interpreter's expression nodes (private) -*- C++ -*-===//
//
// Shared by KernelExec.cpp (stages) and LoweredExec.cpp (launches): buffers,
// the compiled expression nodes with their exact counting, and the compiler
// from KExpr to nodes.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_EXEC_EXECNODES_H
#define FUSEC_LIB_EXEC_EXECNODES_H

#include "KernelExec.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <cstring>
#include <optional>

namespace fusec {
namespace exec {

// Values are doubles, except that an i64 value's 64 bits are the int64
// itself (bit-cast): every int64 is exact, where a double holds integers
// up to 2^53 only. Every node knows its dtype, so each reads its operands
// in their representation. i8, i32 and bool values are ordinary doubles
// (exact); index expressions are i64.

/// The double slot that holds the i64 `value`.
inline double fromInt64(int64_t value) {
  double slot;
  std::memcpy(&slot, &value, sizeof slot);
  return slot;
}
/// The i64 held in `slot`.
inline int64_t asInt64(double slot) {
  int64_t value;
  std::memcpy(&value, &slot, sizeof value);
  return value;
}
/// The integer value of `x`, a value of `dtype` (an integer dtype or bool;
/// a float is truncated and wrapped).
inline int64_t intOf(double x, DType dtype) {
  return dtype == DType::i64 ? asInt64(x) : wrapToInt64(x);
}
/// The integer `value` as a value of `dtype`: wrapped to its width (bool:
/// 0/1; a float dtype: rounded to it).
inline double intValueOf(int64_t value, DType dtype) {
  if (dtype == DType::i64)
    return fromInt64(value);
  if (isIntDType(dtype) || dtype == DType::boolean)
    return double(wrapToIntDType(value, dtype));
  if (dtype == DType::f32)
    return double(static_cast<float>(value)); // one rounding, as CUDA's
  if (dtype == DType::bf16 && (value > (int64_t(1) << 53) || value < -(int64_t(1) << 53))) {
    // Rounded to bf16's 8 significant bits here: through a double it would
    // be rounded twice (f16 overflows long before 2^53).
    uint64_t magnitude = value < 0 ? 0 - uint64_t(value) : uint64_t(value);
    int shift = 64 - __builtin_clzll(magnitude) - 8;
    uint64_t kept = magnitude >> shift, rest = magnitude & ((uint64_t(1) << shift) - 1);
    uint64_t half = uint64_t(1) << (shift - 1);
    if (rest > half || (rest == half && (kept & 1)))
      ++kept;
    double rounded = std::ldexp(double(kept), shift);
    return value < 0 ? -rounded : rounded;
  }
  return roundToDType(double(value), dtype);
}

struct Buffer {
  std::vector<double> data;
  std::vector<int64_t> shape, strides;
  DType dtype = DType::f32;
  bool global = false;
  std::string name;
  /// A lowered launch's local buffer holds one copy per thread: element
  /// offsets move by `threadStride` per value of vars[threadSlot].
  int threadSlot = -1;
  int64_t threadStride = 0;
  /// A lowered kernel's output marks each element it stores (empty when not
  /// tracked): an element no launch wrote is an error, not a silent 0.
  std::vector<uint8_t> written;
};

/// Elements evaluated per batch along the innermost loop.
constexpr int64_t kBatch = 256;

struct Node {
  /// What eval returns (set by Compiler::compile): a consumer reads the
  /// value in this dtype's representation.
  DType dtype = DType::i64;
  virtual ~Node() = default;
  virtual double eval(const int64_t *vars) const = 0;
  /// The value as an integer.
  int64_t evalInt(const int64_t *vars) const { return intOf(eval(vars), dtype); }
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
  double eval(const int64_t *vars) const override { return fromInt64(vars[slot]); }
  void evalBatch(int64_t *vars, int batchSlot, int64_t count, double *out) const override {
    int64_t start = vars[slot];
    if (batchSlot != slot)
      return std::fill(out, out + count, fromInt64(start));
    for (int64_t t = 0; t < count; ++t)
      out[t] = fromInt64(start + t);
  }
};

inline int64_t floorDiv(int64_t a, int64_t b) {
  if (b == 0)
    throw ExecError{"division by zero in an index expression"};
  if (b == -1 && a == INT64_MIN)
    throw ExecError{"overflow in an index expression: -2^63 divided by -1"};
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

struct IndexOp final : Node {
  KExpr::Kind kind;
  bool allI64 = false; // a binary operation on i64 operands (set by the compiler)
  NodePtr a, b;
  mutable double rhs[kBatch];
  bool shortCircuit = false; // `&&`/`||` whose right side loads: stay lazy
  /// The slots the operation reads, when it reads no buffer (nullopt
  /// otherwise; set by the compiler): one that does not read the batch's
  /// slot (a convolution's row bounds while a batch runs along the columns)
  /// is evaluated once per batch.
  std::optional<uint64_t> pureSlots;

  /// The operation on integer operands, as a value of this node's dtype.
  double apply(int64_t x, int64_t y) const {
    int64_t result = 0;
    switch (kind) {
    case KExpr::Add: result = wrappingAdd(x, y); break;
    case KExpr::Sub: result = wrappingSub(x, y); break;
    case KExpr::Mul: result = wrappingMul(x, y); break;
    case KExpr::FloorDiv: result = floorDiv(x, y); break;
    case KExpr::Mod: result = wrappingSub(x, wrappingMul(floorDiv(x, y), y)); break;
    case KExpr::Min: result = std::min(x, y); break;
    case KExpr::Max: result = std::max(x, y); break;
    case KExpr::Lt: return x < y;
    case KExpr::Le: return x <= y;
    case KExpr::Gt: return x > y;
    case KExpr::Ge: return x >= y;
    case KExpr::Eq: return x == y;
    case KExpr::Ne: return x != y;
    case KExpr::And: return x != 0 && y != 0;
    case KExpr::Or: return x != 0 || y != 0;
    default: return 0;
    }
    return intValueOf(result, dtype);
  }
  /// Both operands are evaluated as batches, unless `&&`/`||` has a right
  /// side that reads a buffer (a guard such as `i < n && %idx[i] > 0` must
  /// not read out of range).
  void evalBatch(int64_t *vars, int slot, int64_t count, double *out) const override {
    if (pureSlots && slot < 64 && !((*pureSlots >> slot) & 1))
      return std::fill(out, out + count, eval(vars));
    if (shortCircuit)
      return Node::evalBatch(vars, slot, count, out);
    a->evalBatch(vars, slot, count, out);
    if (kind == KExpr::Not) {
      for (int64_t t = 0; t < count; ++t)
        out[t] = intOf(out[t], a->dtype) == 0;
      return;
    }
    b->evalBatch(vars, slot, count, rhs);
    if (allI64)
      return applyI64(out, count);
    if ((kind == KExpr::And || kind == KExpr::Or) && a->dtype == DType::boolean &&
        b->dtype == DType::boolean) { // bounds checks: held as 0 and 1
      for (int64_t t = 0; t < count; ++t)
        out[t] = kind == KExpr::And ? double(out[t] != 0 && rhs[t] != 0)
                                    : double(out[t] != 0 || rhs[t] != 0);
      return;
    }
    for (int64_t t = 0; t < count; ++t)
      out[t] = apply(intOf(out[t], a->dtype), intOf(rhs[t], b->dtype));
  }
  /// out[t] = out[t] op rhs[t] on i64 operands, one loop per operation.
  void applyI64(double *out, int64_t count) const {
    auto each = [&](auto &&op) {
      for (int64_t t = 0; t < count; ++t)
        out[t] = op(asInt64(out[t]), asInt64(rhs[t]));
    };
    switch (kind) {
    case KExpr::Add: return each([](int64_t x, int64_t y) { return fromInt64(wrappingAdd(x, y)); });
    case KExpr::Sub: return each([](int64_t x, int64_t y) { return fromInt64(wrappingSub(x, y)); });
    case KExpr::Mul: return each([](int64_t x, int64_t y) { return fromInt64(wrappingMul(x, y)); });
    case KExpr::Lt: return each([](int64_t x, int64_t y) { return double(x < y); });
    case KExpr::Le: return each([](int64_t x, int64_t y) { return double(x <= y); });
    case KExpr::Gt: return each([](int64_t x, int64_t y) { return double(x > y); });
    case KExpr::Ge: return each([](int64_t x, int64_t y) { return double(x >= y); });
    default:
      for (int64_t t = 0; t < count; ++t)
        out[t] = apply(asInt64(out[t]), asInt64(rhs[t]));
    }
  }
  double eval(const int64_t *vars) const override {
    if (allI64) // index arithmetic, the lowered loops' hot path
      return apply(asInt64(a->eval(vars)), asInt64(b->eval(vars)));
    int64_t x = a->evalInt(vars);
    if (kind == KExpr::Not)
      return x == 0;
    if (kind == KExpr::And && x == 0) // short-circuit
      return 0;
    if (kind == KExpr::Or && x != 0)
      return 1;
    return apply(x, b->evalInt(vars));
  }
};

/// One index of a load: constant + sum of coefficient * variable when the
/// expression is affine, plus terms coefficient * (a chain of floordiv and
/// mod by positive constants of an affine expression: the lowering's
/// coordinates of a flat index `bx * 256 + tx`, the tile lowering's thread,
/// warp and lane coordinates), else a general node.
struct IndexCalc {
  struct Derived {
    int64_t base = 0;                                // the affine expression's constant
    std::vector<std::pair<int, int64_t>> baseTerms; // and its slots and coefficients
    int64_t coefficient = 1;
    std::vector<std::pair<bool, int64_t>> steps; // (is mod, constant), innermost first
    // The last base and its result: inner loops over other variables (a
    // convolution's taps) repeat the same divisions (the interpreter is
    // single-threaded).
    mutable int64_t lastBase = 0, lastResult = 0;
    mutable bool cached = false;
    // Likewise for the last batch along a slot the base reads (a lowered
    // thread's `floordiv(tx, 16)` in every iteration of its loops).
    mutable int64_t lastBatchBase = 0, lastBatchStep = 0;
    mutable std::vector<int64_t> lastBatch;
    int64_t baseAt(const int64_t *vars) const {
      int64_t value = base;
      for (const auto &[slot, coefficient] : baseTerms)
        value = wrappingAdd(value, wrappingMul(coefficient, vars[slot]));
      return value;
    }
    /// The chain of floordiv/mod steps applied to `x` (floor semantics).
    int64_t divided(int64_t x) const {
      for (const auto &[isMod, c] : steps) { // c > 0: no check needed
        int64_t q = x / c;
        q -= (x % c != 0 && x < 0);
        x = isMod ? x - q * c : q;
      }
      return x;
    }
  };
  int64_t constant = 0;
  std::vector<std::pair<int, int64_t>> terms; // slot, coefficient
  std::vector<Derived> derived;
  NodePtr general; // its dtype may be i32 (an index loaded from an i32 buffer)
  int64_t eval(const int64_t *vars) const {
    if (general)
      return general->evalInt(vars);
    int64_t value = constant;
    for (const auto &[slot, coefficient] : terms)
      value = wrappingAdd(value, wrappingMul(coefficient, vars[slot]));
    for (const Derived &term : derived) {
      int64_t base = term.baseAt(vars);
      if (!term.cached || base != term.lastBase) {
        term.lastBase = base;
        term.lastResult = term.divided(base);
        term.cached = true;
      }
      value = wrappingAdd(value, wrappingMul(term.coefficient, term.lastResult));
    }
    return value;
  }
  /// The values for vars[slot] = start .. start + count - 1 (vars[slot]
  /// holds start), divisions of terms that read the slot taken per element.
  void evalBatch(int64_t *vars, int slot, int64_t count, int64_t *out) const;
  /// The index without the terms that read `slot` (see SplitOffsets).
  int64_t evalWithout(const int64_t *vars, int slot) const;
  /// Whether a floordiv/mod term reads `slot`: else the index moves
  /// linearly along it, by stepAlong(slot).
  bool divisionReads(int slot) const {
    for (const Derived &term : derived)
      for (const auto &[termSlot, coefficient] : term.baseTerms)
        if (termSlot == slot)
          return true;
    return false;
  }
  int64_t stepAlong(int slot) const {
    int64_t step = 0;
    for (const auto &[termSlot, coefficient] : terms)
      if (termSlot == slot)
        step = wrappingAdd(step, coefficient);
    return step;
  }
};

/// An i64 index expression in IndexCalc's form (a lowered guard's
/// coordinates of `bx * 256 + tx`): one node instead of a tree of
/// operations, its divisions memoized.
struct AffineValue final : Node {
  IndexCalc calc;
  double eval(const int64_t *vars) const override { return fromInt64(calc.eval(vars)); }
  /// IndexCalc's batch: linear steps, divisions memoized per batch.
  void evalBatch(int64_t *vars, int slot, int64_t count, double *out) const override {
    int64_t values[kBatch];
    calc.evalBatch(vars, slot, count, values);
    for (int64_t t = 0; t < count; ++t)
      out[t] = fromInt64(values[t]);
  }
};

/// A batch's element offsets when every index splits into a part that
/// does not read the batch's slot and a part that reads nothing else (a
/// lowered thread's `floordiv(tx, 16) * 4 + i` in a loop over i): the
/// second part's offsets are kept for the batch's start, so that each
/// iteration of the thread's loops only adds one offset to them.
class SplitOffsets {
public:
  /// The offsets to add to `base`, or nullptr when the indices do not
  /// split or an element may fall outside the buffer.
  const int64_t *get(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                     int64_t *vars, int slot, int64_t count, int64_t &base);

private:
  void rebuild(const Buffer &buffer, const std::vector<IndexCalc> &indices, int64_t *vars,
               int slot, int64_t count);
  int slot = -1;
  int64_t start = 0, count = 0;
  bool splits = false;
  std::vector<int64_t> perElement, low, high; // low/high: per dim, of the slot's part
};

/// Where the elements of a batch are: offset + t * step, or offset +
/// perElement[t].
struct BatchAddresses {
  int64_t offset = 0, step = 0;
  const int64_t *perElement = nullptr;
  int64_t at(int64_t t) const { return offset + (perElement ? perElement[t] : t * step); }
};

/// The addresses of a batch's elements, range-checked (`scratch` holds
/// kBatch offsets when neither the linear nor the split form applies).
BatchAddresses addressBatch(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                            SplitOffsets &split, int64_t *vars, int slot, int64_t count,
                            int64_t *scratch);
/// In a vector loop's lane 0: every element of the batch must start a
/// vector of `width` (checked per element in scalar form).
void checkVectorStarts(const BatchAddresses &addresses, int64_t count, int64_t width,
                       const Buffer &buffer, const char *access);

struct Load final : Node {
  const Buffer *buffer;
  std::vector<IndexCalc> indices;
  int64_t *bytesRead;
  int64_t elementBytes;
  /// In a vector loop (lowered form): a load that does not depend on the
  /// lane variable is one scalar load for the whole vector (counted at lane
  /// 0), and a contiguous one must start at a multiple of the width.
  int laneSlot = -1;
  bool uniformInLane = false;
  int64_t vectorWidth = 0;
  mutable SplitOffsets split;

  double eval(const int64_t *vars) const override {
    int64_t offset = elementOffset(*buffer, indices, vars);
    if (vectorWidth && vars[laneSlot] == 0 && offset % vectorWidth != 0)
      throw misaligned(*buffer, "access to", offset);
    if (buffer->global && !(uniformInLane && vars[laneSlot] != 0))
      *bytesRead += elementBytes;
    return buffer->data[offset];
  }

  /// The element `indices` address, range-checked per dimension.
  static int64_t elementOffset(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                               const int64_t *vars) {
    int64_t offset = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t index = indices[d].eval(vars);
      if (index < 0 || index >= buffer.shape[d])
        throw ExecError{"index " + std::to_string(index) + " is out of range [0, " +
                        std::to_string(buffer.shape[d]) + ") in dimension " +
                        std::to_string(d) + " of %" + buffer.name};
      offset += index * buffer.strides[d];
    }
    if (buffer.threadSlot >= 0)
      offset += vars[buffer.threadSlot] * buffer.threadStride;
    return offset;
  }

  static ExecError misaligned(const Buffer &buffer, const char *access, int64_t offset) {
    return ExecError{"misaligned vector " + std::string(access) + " %" + buffer.name +
                     " at element " + std::to_string(offset)};
  }

  /// In a vector loop the batch runs along the threads at one lane: the
  /// lane decides the counting and the alignment check for all of them.
  void evalBatch(int64_t *vars, int slot, int64_t count, double *out) const override {
    if (laneSlot >= 0 && laneSlot == slot)
      return Node::evalBatch(vars, slot, count, out);
    int64_t scratch[kBatch];
    BatchAddresses addresses = addressBatch(*buffer, indices, split, vars, slot, count, scratch);
    if (vectorWidth && vars[laneSlot] == 0)
      checkVectorStarts(addresses, count, vectorWidth, *buffer, "access to");
    const double *data = buffer->data.data() + addresses.offset;
    if (addresses.perElement)
      for (int64_t t = 0; t < count; ++t)
        out[t] = data[addresses.perElement[t]];
    else
      for (int64_t t = 0; t < count; ++t)
        out[t] = data[t * addresses.step];
    if (buffer->global && !(uniformInLane && vars[laneSlot] != 0))
      *bytesRead += elementBytes * count;
  }

  /// When every index moves linearly along `slot` and the batch stays in
  /// range (checking the first and the last element checks them all): the
  /// first element's offset and the step between elements.
  static bool linearOffsets(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                            const int64_t *vars, int slot, int64_t count, int64_t &offset,
                            int64_t &step);

  /// The offsets of a batch's elements, each index range-checked (the
  /// first element out of range is reported as elementOffset reports it).
  static void batchOffsets(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                           int64_t *vars, int slot, int64_t count, int64_t *offsets);
};

enum class Op {
  Exp, Log, Sqrt, Rsqrt, Sin, Cos, Tanh, Sigmoid, Erf, Floor, Ceil, Round,
  Negative, Abs, Sign, Relu, Gelu, GeluTanh, Silu, LogicalNot, Add, Subtract,
  Multiply, Divide, Power, Maximum, Minimum, Equal, NotEqual, Less, LessEqual,
  Greater, GreaterEqual, LogicalAnd, LogicalOr
};

inline const llvm::StringMap<Op> &opTable() {
  static const llvm::StringMap<Op> table = {
      {"exp", Op::Exp}, {"log", Op::Log}, {"sqrt", Op::Sqrt}, {"rsqrt", Op::Rsqrt},
      {"sin", Op::Sin}, {"cos", Op::Cos}, {"tanh", Op::Tanh}, {"sigmoid", Op::Sigmoid},
      {"erf", Op::Erf}, {"floor", Op::Floor}, {"ceil", Op::Ceil}, {"round", Op::Round},
      {"negative", Op::Negative}, {"abs", Op::Abs}, {"sign", Op::Sign}, {"relu", Op::Relu},
      {"gelu", Op::Gelu}, {"gelu_tanh", Op::GeluTanh}, {"silu", Op::Silu},
      {"logical_not", Op::LogicalNot}, {"add", Op::Add}, {"subtract", Op::Subtract},
      {"multiply", Op::Multiply}, {"divide", Op::Divide}, {"power", Op::Power},
      {"maximum", Op::Maximum}, {"minimum", Op::Minimum},
      {"max", Op::Maximum}, {"min", Op::Minimum}, {"equal", Op::Equal},
      {"not_equal", Op::NotEqual}, {"less", Op::Less}, {"less_equal", Op::LessEqual},
      {"greater", Op::Greater}, {"greater_equal", Op::GreaterEqual},
      {"logical_and", Op::LogicalAnd}, {"logical_or", Op::LogicalOr}};
  return table;
}

inline double applyUnary(Op op, double x) {
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
  case Op::Sign: return x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0.0 : x; // +0 for -0, as NumPy; NaN stays
  case Op::Relu: return x > 0 ? x : (std::isnan(x) ? x : 0.0);
  case Op::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case Op::GeluTanh:
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  case Op::Silu: return x / (1.0 + std::exp(-x));
  case Op::LogicalNot: return x == 0;
  default: return 0;
  }
}

/// A comparison or logical operation (a bool: 0/1) on int64 or double
/// operands; nullopt for any other operation.
template <class T> std::optional<double> applyPredicate(Op op, T x, T y) {
  switch (op) {
  case Op::Equal: return x == y;
  case Op::NotEqual: return x != y;
  case Op::Less: return x < y;
  case Op::LessEqual: return x <= y;
  case Op::Greater: return x > y;
  case Op::GreaterEqual: return x >= y;
  case Op::LogicalAnd: return x != 0 && y != 0;
  case Op::LogicalOr: return x != 0 || y != 0;
  default: return std::nullopt;
  }
}

/// An operation on integer operands of `dtype` (y is unused by unary
/// ones), exact in 64-bit two's complement arithmetic, as a value of
/// `resultDType` (wrapped to its width). Division truncates, as C and
/// TVM's TIR; operations without an integer form go through doubles.
inline double applyInteger(Op op, int64_t x, int64_t y, DType resultDType) {
  if (std::optional<double> predicate = applyPredicate(op, x, y))
    return *predicate;
  uint64_t a = uint64_t(x), b = uint64_t(y);
  int64_t result;
  switch (op) {
  case Op::Add: result = int64_t(a + b); break;
  case Op::Subtract: result = int64_t(a - b); break;
  case Op::Multiply: result = int64_t(a * b); break;
  case Op::Divide:
    if (y == 0)
      throw ExecError{"integer division by zero"};
    result = y == -1 ? int64_t(0 - a) : x / y; // INT64_MIN / -1 wraps
    break;
  case Op::Maximum: result = std::max(x, y); break;
  case Op::Minimum: result = std::min(x, y); break;
  case Op::Negative: result = int64_t(0 - a); break;
  case Op::Abs: result = x < 0 ? int64_t(0 - a) : x; break;
  case Op::Sign: result = (x > 0) - (x < 0); break;
  case Op::Relu: result = std::max<int64_t>(x, 0); break;
  case Op::Floor:
  case Op::Ceil:
  case Op::Round: result = x; break;
  case Op::LogicalNot: return x == 0;
  case Op::Power: // exact and wrapping, by squaring; as the generated code
    if (y < 0) {
      result = x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0; // truncated 1 / x^-y
    } else {
      uint64_t product = 1;
      for (int64_t e = y; e > 0; e >>= 1, a *= a)
        if (e & 1)
          product *= a;
      result = int64_t(product);
    }
    break;
  default:
    return roundTo(applyUnary(op, double(x)), resultDType);
  }
  return intValueOf(result, resultDType);
}

/// A binary operation on float (or bool) operands.
inline double applyBinary(Op op, double x, double y) {
  switch (op) {
  case Op::Add: return x + y;
  case Op::Subtract: return x - y;
  case Op::Multiply: return x * y;
  case Op::Divide: return x / y;
  case Op::Power: return std::pow(x, y);
  case Op::Maximum: return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
  case Op::Minimum: return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
  default: return applyPredicate(op, x, y).value_or(0);
  }
}

struct Call final : Node {
  Op op;
  bool integer = false; // integer operands (a's dtype): exact int64 arithmetic
  NodePtr a, b;
  int64_t *count;
  mutable double scratch[kBatch];
  double eval(const int64_t *vars) const override {
    ++*count;
    double x = a->eval(vars);
    if (integer)
      return applyInteger(op, intOf(x, a->dtype), b ? b->evalInt(vars) : 0, dtype);
    double result = b ? applyBinary(op, x, b->eval(vars)) : applyUnary(op, x);
    return roundFast(result, dtype);
  }
  void evalBatch(int64_t *vars, int slot, int64_t n, double *out) const override {
    a->evalBatch(vars, slot, n, out);
    if (b)
      b->evalBatch(vars, slot, n, scratch);
    *count += n;
    if (integer) {
      for (int64_t t = 0; t < n; ++t)
        out[t] = applyInteger(op, intOf(out[t], a->dtype), b ? intOf(scratch[t], b->dtype) : 0,
                              dtype);
      return;
    }
    if (b) {
      // The frequent float arithmetic gets its own loops.
      switch (op) {
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
          out[t] = applyBinary(op, out[t], scratch[t]);
      }
    } else {
      for (int64_t t = 0; t < n; ++t)
        out[t] = applyUnary(op, out[t]);
    }
    roundBatch(out, n, dtype);
  }
};

/// `a` converted to this node's dtype.
struct Cast final : Node {
  NodePtr a;
  double eval(const int64_t *vars) const override {
    return convertValue(a->eval(vars), a->dtype, dtype);
  }
  void evalBatch(int64_t *vars, int slot, int64_t n, double *out) const override {
    a->evalBatch(vars, slot, n, out);
    if (a->dtype == dtype)
      return;
    if (a->dtype != DType::i64)
      return roundBatch(out, n, dtype);
    for (int64_t t = 0; t < n; ++t)
      out[t] = convertValue(out[t], a->dtype, dtype);
  }
};

/// Calls `run(from, to, taken)` for each run [from, to) of neighbouring
/// batch elements whose conditions agree.
template <typename Run> void forEachRun(const double *conditions, int64_t count, Run &&run) {
  for (int64_t from = 0, to; from < count; from = to) {
    bool taken = conditions[from] != 0;
    for (to = from + 1; to < count && (conditions[to] != 0) == taken;)
      ++to;
    run(from, to, taken);
  }
}

struct Select final : Node {
  NodePtr cond, a, b;
  mutable double conditions[kBatch];
  double eval(const int64_t *vars) const override {
    return cond->eval(vars) != 0 ? a->eval(vars) : b->eval(vars);
  }
  /// Each run of neighbouring elements whose conditions agree evaluates
  /// its branch as a batch (the interior of a padded window, the threads
  /// inside a guard), so a branch never runs where it is not taken.
  void evalBatch(int64_t *vars, int slot, int64_t count, double *out) const override {
    cond->evalBatch(vars, slot, count, conditions);
    int64_t start = vars[slot];
    forEachRun(conditions, count, [&](int64_t from, int64_t to, bool taken) {
      vars[slot] = start + from;
      (taken ? a : b)->evalBatch(vars, slot, to - from, out + from);
    });
    vars[slot] = start;
  }
};

inline bool readsBuffer(const KExpr &e) {
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
  /// Inside a lowered vector loop: its lane variable's slot and name, its
  /// width, and the kernel whose buffer types classify each access.
  int laneSlot = -1;
  std::string laneVar;
  int64_t laneWidth = 0;
  const Kernel *kernel = nullptr;

  explicit Compiler(KernelCounters &counters) : counters(counters) {}
  /// A compiler for one worker's copy of a stage or launch: `parent`'s
  /// buffers, slots and symbols, its evaluations counted into `counters`.
  Compiler(const Compiler &parent, KernelCounters &counters)
      : buffers(parent.buffers), slots(parent.slots), symbols(parent.symbols), counters(counters),
        kernel(parent.kernel) {}

  /// Index calculations for `indices`.
  std::vector<IndexCalc> compileIndices(const std::vector<KExprPtr> &indices);

  /// Affine form of `e` over the slots, if it has one.
  bool affine(const KExpr &e, IndexCalc &out, int64_t scale);

  /// Whether `e` is i64 arithmetic (+, -, *, floordiv, mod) of i64
  /// variables and constants throughout, which IndexCalc computes alike.
  static bool isI64Arithmetic(const KExpr &e);

  /// The slots `e` reads (all for one past 63), or nullopt when it reads a
  /// buffer or counts an evaluation.
  std::optional<uint64_t> slotsRead(const KExpr &e) const;

  /// `e` as a value of `dtype`: an index select's branches may be an i32
  /// load and i64 index arithmetic, held differently.
  NodePtr compileAs(const KExpr &e, DType dtype);

  /// The node of `e`, of `e`'s dtype.
  NodePtr compile(const KExpr &e);
  NodePtr compileNode(const KExpr &e);
};

inline std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  return rowMajorStrides(shape);
}

inline int64_t resolveDim(const Dim &dim, const llvm::StringMap<int64_t> &symbols) {
  return dim.isSymbolic() ? symbols.lookup(dim.symbol) : dim.size;
}


/// Runs a lowered kernel's launches (LoweredExec.cpp) on the buffers
/// `compiler` holds; adds one launch per launch with a non-empty grid.
void runLaunches(const Kernel &kernel, Compiler &compiler);

} // namespace exec
} // namespace fusec

#endif
