//===- IR.h - The FIR graph-level IR -----------------------------*- C++ -*-===//
//
// The in-memory form of a `.fir` module (spec §2–§3): types with static and
// symbolic dimensions, attributes, constants, bindings, dataflow blocks and
// functions. Values keep the names the user wrote; a binding owns the value
// it defines and operands point at values, so uses are plain pointers.
//
// Semantic checking lives here too: `inferTypes` fills in (or checks) the
// type of every binding after parsing, and `verifyModule` is the structural
// verifier that runs after parsing and after every pass.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_IR_H
#define FUSEC_IR_IR_H

#include "fusec/Support/Support.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cassert>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fusec {

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

enum class DType : uint8_t { f32, f16, bf16, i8, i32, i64, boolean };

std::optional<DType> parseDType(llvm::StringRef name);
llvm::StringRef dtypeName(DType dtype);
unsigned dtypeBytes(DType dtype);
bool isFloatDType(DType dtype);
bool isIntDType(DType dtype);
/// `value` truncated to an int64, saturated at INT64_MIN/INT64_MAX (2^63 as
/// a double, the nearest to INT64_MAX, becomes INT64_MAX); NaN is 0.
int64_t saturatingInt64(double value);
/// `value` truncated and wrapped modulo 2^64 into int64's range (NaN and
/// infinities are 0), without the undefined behaviour of converting an
/// out-of-range double: `astype`'s float-to-integer conversion.
inline int64_t wrapToInt64(double value) {
  // In range (nearly always: indices, loop bounds): the cast truncates as
  // trunc does. NaN fails both comparisons and takes the slow path.
  if (value >= -9223372036854775808.0 && value < 9223372036854775808.0)
    return static_cast<int64_t>(value);
  if (std::isnan(value) || std::isinf(value))
    return 0;
  double wrapped = std::fmod(std::trunc(value), 18446744073709551616.0);
  if (wrapped >= 9223372036854775808.0)
    wrapped -= 18446744073709551616.0;
  else if (wrapped < -9223372036854775808.0)
    wrapped += 18446744073709551616.0;
  return wrapped >= 9223372036854775808.0 ? INT64_MIN : static_cast<int64_t>(wrapped);
}
/// `value` wrapped to `dtype`'s width as two's complement (i8, i32), 0/1
/// for bool; i64 as is.
int64_t wrapToIntDType(int64_t value, DType dtype);
/// Rounds `value` to the nearest value representable in a float dtype.
double roundToDType(double value, DType dtype);
/// Whether `value` fits `dtype` without overflowing (inf/nan fit floats).
bool fitsDType(double value, DType dtype);
/// Shortest text that reads back to the same `dtype` value.
std::string formatScalar(double value, DType dtype);

/// A dimension: a static size or a symbolic name bound at run time.
struct Dim {
  int64_t size = 0;
  std::string symbol; // non-empty for a symbolic dimension

  static Dim of(int64_t size) { return Dim{size, {}}; }
  static Dim named(std::string symbol) { return Dim{0, std::move(symbol)}; }
  bool isSymbolic() const { return !symbol.empty(); }
  bool isStatic() const { return symbol.empty(); }
  /// A static 1: the dims a broadcast stretches.
  bool isOne() const { return isStatic() && size == 1; }
  bool operator==(const Dim &other) const {
    return size == other.size && symbol == other.symbol;
  }
  bool operator!=(const Dim &other) const { return !(*this == other); }
  std::string str() const;
};
using Shape = std::vector<Dim>;

/// A tensor type `f16[4096,1]` or a tuple type `(f32[4], f16[])`.
class Type {
public:
  Type() = default;
  static Type tensor(DType dtype, Shape shape);
  static Type tuple(std::vector<Type> fields);

  bool isTensor() const { return !isTupleType; }
  bool isTuple() const { return isTupleType; }
  DType getDType() const { return dtype; }
  const Shape &getShape() const { return shape; }
  int64_t getRank() const { return static_cast<int64_t>(shape.size()); }
  const std::vector<Type> &getFields() const { return fields; }
  /// The element count when every dimension is static.
  std::optional<int64_t> getStaticNumElements() const;
  /// This type with each symbolic dim that `dims` names replaced by its
  /// entry (in every field of a tuple).
  Type withDims(const std::map<std::string, Dim> &dims) const;

  bool operator==(const Type &other) const;
  bool operator!=(const Type &other) const { return !(*this == other); }
  std::string str() const;

private:
  bool isTupleType = false;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<Type> fields;
};

/// Largest allowed dimension (spec §9).
constexpr int64_t kMaxDimSize = int64_t(1) << 40;

//===----------------------------------------------------------------------===//
// Attributes and literals
//===----------------------------------------------------------------------===//

/// An attribute value or literal operand: int, float, bool, string, a bare
/// identifier (a symbolic dim in `{shape = [n, -1]}`) or a list.
struct Attr {
  enum Kind { Int, Float, Bool, String, Ident, List };
  Kind kind = Int;
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string text; // String and Ident; a parsed number's spelling (messages only)
  std::vector<Attr> list;
  llvm::SMLoc loc;

  static Attr makeInt(int64_t v) { Attr a; a.kind = Int; a.intValue = v; return a; }
  static Attr makeFloat(double v) { Attr a; a.kind = Float; a.floatValue = v; return a; }
  static Attr makeBool(bool v) { Attr a; a.kind = Bool; a.boolValue = v; return a; }
  static Attr makeString(std::string s) { Attr a; a.kind = String; a.text = std::move(s); return a; }
  static Attr makeIdent(std::string s) { Attr a; a.kind = Ident; a.text = std::move(s); return a; }
  static Attr makeList(std::vector<Attr> items) { Attr a; a.kind = List; a.list = std::move(items); return a; }

  bool isNumber() const { return kind == Int || kind == Float; }
  double asDouble() const { return kind == Int ? double(intValue) : floatValue; }
  bool operator==(const Attr &other) const;
  bool operator!=(const Attr &other) const { return !(*this == other); }
  std::string str() const;
};

/// Why scalar literal `literal` cannot be a value of `dtype` ("float literal
/// 0.5 cannot be an i32", "70000 overflows f16"), or empty if it can.
std::string checkLiteralForDType(const Attr &literal, DType dtype);

/// An ordered attribute dictionary `{key = value, ...}`.
class Attrs {
public:
  struct Entry {
    std::string name;
    Attr value;
    llvm::SMLoc loc;
  };
  const Attr *get(llvm::StringRef name) const;
  Attr *get(llvm::StringRef name);
  void set(llvm::StringRef name, Attr value, llvm::SMLoc loc = {});
  bool erase(llvm::StringRef name);
  bool empty() const { return entries.empty(); }
  const std::vector<Entry> &getEntries() const { return entries; }
  std::vector<Entry> &getEntries() { return entries; }
  bool operator==(const Attrs &other) const;
  std::string str() const; // `{a = 1, b = [2]}`, empty string when empty

private:
  std::vector<Entry> entries;
};

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

/// The row-major strides (in elements) of a tensor of `shape`.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

/// Row-major tensor contents in the dtype's own storage (f16/bf16 as 16-bit
/// patterns, bool as one byte), or, for an f32 tensor made with
/// `Float32Storage::Double`, as doubles.
class TensorData {
public:
  /// How an f32 tensor holds its elements: as floats (the program's
  /// values), or as doubles, so that the interpreter's float64 second
  /// opinion (Float32Evaluation::Float64) carries f32 values between
  /// kernels as it carries them inside one; fusion moves values from one
  /// place to the other and must not change what that run computes.
  enum class Float32Storage { Float, Double };

  TensorData() = default;
  TensorData(DType dtype, std::vector<int64_t> shape,
             Float32Storage float32 = Float32Storage::Float);
  DType getDType() const { return dtype; }
  const std::vector<int64_t> &getShape() const { return shape; }
  int64_t getNumElements() const { return numElements; }
  double get(int64_t index) const;
  void set(int64_t index, double value); // rounds to the dtype (not when holding doubles)
  /// Exact integer access (i64 values beyond 2^53 survive).
  int64_t getInt(int64_t index) const;
  void setInt(int64_t index, int64_t value);
  /// The elements in the dtype's storage; not of a tensor that holds its
  /// f32 elements as doubles (holdsDoubles()).
  const uint8_t *data() const {
    assert(!holdsDoubles() && "a tensor of doubles has no dtype storage");
    return bytes.data();
  }
  uint8_t *data() {
    assert(!holdsDoubles() && "a tensor of doubles has no dtype storage");
    return bytes.data();
  }
  bool holdsDoubles() const { return elementBytes == 8 && dtype == DType::f32; }
  bool operator==(const TensorData &other) const;

private:
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  int64_t numElements = 0;
  int64_t elementBytes = 4;
  std::vector<uint8_t> bytes;
};

/// The value of `constant ...`: the form it was written in, kept for
/// printing, and its contents, materialized on demand.
struct ConstantData {
  enum Form { Scalar, Dense, Splat, Random, File };
  Form form = Scalar;
  std::vector<Attr> values; // Scalar/Splat: one value; Dense: nested lists
  uint64_t seed = 0;        // Random
  std::string path;         // File, as written
  std::shared_ptr<TensorData> fileContents; // File, read at parse time

  /// The contents for a constant of type `type` (static shape required).
  TensorData materialize(const Type &type) const;
};

/// Element `index` of `random<seed = N>` (spec §9), before dtype rounding.
double randomConstantElement(uint64_t seed, int64_t index, DType dtype);
/// Reads a NumPy `.npy` file; on failure returns nullptr and sets `error`.
std::shared_ptr<TensorData> readNpyFile(llvm::StringRef path,
                                        std::string &error);

//===----------------------------------------------------------------------===//
// Values, bindings, blocks, functions, modules
//===----------------------------------------------------------------------===//

struct Binding;

/// A named SSA value: a function parameter or the result of a binding.
struct Value {
  std::string name; // without the '%'
  Type type;
  llvm::SMLoc loc;
  Binding *definingBinding = nullptr; // null for parameters

  /// Whether a `constant` binding defines this value as a tensor (isScalar:
  /// a 0-d one, which fusion copies into a fused kernel as a literal).
  bool isConstant() const;
  bool isScalarConstant() const { return isConstant() && type.getRank() == 0; }
};

/// An operand: a value, or a scalar literal (`multiply(%x, 0.5)`).
struct Operand {
  Value *value = nullptr;
  Attr literal; // used when value is null
  llvm::SMLoc loc;

  static Operand of(Value *v, llvm::SMLoc loc = {}) { Operand o; o.value = v; o.loc = loc; return o; }
  bool isLiteral() const { return value == nullptr; }
};

enum class ExprKind { Op, Constant, Call, CallKernel, CallExtern, Tuple, Get, Alias };

/// `%name = EXPR {attrs} : TYPE`.
struct Binding {
  ExprKind kind = ExprKind::Op;
  std::string callee; // op name, @function, @kernel (without '@'), extern name
  std::vector<Operand> operands;
  Attrs attrs;
  int64_t tupleIndex = 0;                 // Get
  llvm::SMLoc tupleIndexLoc;
  std::unique_ptr<ConstantData> constant; // Constant
  std::unique_ptr<Value> result;
  llvm::SMLoc loc;       // the start of the expression
  llvm::SMLoc calleeLoc; // the op or callee name
  /// Type written in the source, if any, with its location.
  std::optional<Type> writtenType;
  llvm::SMLoc typeLoc;

  Value *getResult() const { return result.get(); }
  const Type &getType() const { return result->type; }
  /// Human-readable name of the expression head (`add`, `call @f`, ...).
  std::string headName() const;
};

/// `dataflow { bindings; output %a, %b }`.
struct DataflowBlock {
  std::vector<std::unique_ptr<Binding>> bindings;
  std::vector<Value *> outputs;
  std::vector<llvm::SMLoc> outputLocs;
  llvm::SMLoc loc;
  bool hasOutputClause = false;
};

/// One entry of a function body: a binding outside any block, or a block.
struct BodyItem {
  std::unique_ptr<Binding> binding;
  std::unique_ptr<DataflowBlock> block;
};

struct Function {
  std::string name; // without the '@'
  llvm::SMLoc loc;
  std::vector<std::unique_ptr<Value>> params;
  Type returnType;
  llvm::SMLoc returnTypeLoc;
  Attrs attrs;
  std::vector<BodyItem> body;
  /// `return %v` (one entry, returnsTuple false) or `return (%a, %b)`.
  std::vector<Operand> returnValues;
  bool returnsTuple = false;
  llvm::SMLoc returnLoc;

  /// Whether passes that group bindings must leave this function alone.
  bool isGroupedFunction() const;
  /// Visits every binding, in order, inside and outside blocks.
  void forEachBinding(const std::function<void(Binding &)> &fn);
  void forEachBinding(const std::function<void(const Binding &)> &fn) const;
};

struct Kernel; // fusec/IR/Kernel.h

class Module {
public:
  Module();
  ~Module();
  std::string name; // optional `module @name`
  llvm::SMLoc loc;  // the first token, or the end of a module of comments only
  std::vector<std::unique_ptr<Function>> functions;
  std::vector<std::unique_ptr<Kernel>> kernels;
  /// Directory that `file<"...">` paths are relative to.
  std::string sourceDirectory;

  Function *lookupFunction(llvm::StringRef name) const;
  Kernel *lookupKernel(llvm::StringRef name) const;
  /// Indexes of the functions and kernels by name (the first of a name, as
  /// the lookups find it), for many lookups while the module stays as it
  /// is: a lookup scans the module.
  llvm::StringMap<Function *> functionsByName() const;
  llvm::StringMap<Kernel *> kernelsByName() const;
  /// The kernels some function's `call_kernel` names.
  std::set<std::string> calledKernels() const;
  /// Removes the kernels no function calls (only those among `among`, when
  /// given: a pass removes what it left uncalled); returns their names.
  std::vector<std::string> removeUncalledKernels(const std::set<std::string> *among = nullptr);
};

//===----------------------------------------------------------------------===//
// Semantic checks
//===----------------------------------------------------------------------===//

/// `base`, or else `base_1`, `base_2`, ...: the first name `taken` does not
/// claim, always one that reads back as a `%name` (a name starting with a
/// digit is all digits or gets a `v` first: `%7` taken gives `%v7`, since
/// `%7_1` is not a name).
std::string uniqueValueName(llvm::StringRef base,
                            llvm::function_ref<bool(llvm::StringRef)> taken);

/// Infers the type of every binding and checks it against a written type.
/// Emits located diagnostics; returns false on the first error.
bool inferTypes(Module &module, DiagEngine &diag);
/// Structural verifier: SSA, scoping, dataflow outputs, types agree with
/// inference, return types, symbolic dims, call graph without recursion.
/// `context` names what produced the IR ("after pass 'dce'") in messages.
bool verifyModule(const Module &module, DiagEngine &diag,
                  llvm::StringRef context = {});

} // namespace fusec

#endif // FUSEC_IR_IR_H
