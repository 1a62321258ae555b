//===- Kernel.h - The FIR kernel-level IR ------------------------*- C++ -*-===//
//
// A kernel is a list of stages in index notation (spec §5):
//
//   kernel @mean(%x: f16[n,64]) -> (%out: f16[n]) attributes {...} {
//     internal %sum: f32[n]
//     %sum[i0] = reduce add(%x[i0, r0]) over (r0: 64) init 0.0 in f32
//     %out[i0] = divide(%sum[i0], 64.0)
//   }
//
// Each stage writes one buffer (a kernel result or an `internal` buffer)
// over the spatial iteration variables named on its left-hand side, one per
// buffer dimension; a reduction stage adds reduction variables with their
// extents, a combiner (add, multiply, max, min), an init value and the
// accumulation dtype (f32 for f16/bf16 inputs). Index expressions are
// integer arithmetic over iteration variables and symbolic dims (`+ - *`,
// `floordiv`, `mod`, `min`, `max`), predicates (`< <= > >= == != && || !`)
// and `select`, so that passes can analyse them. Symbolic dims of the
// parameter types are the kernel's scalar parameters.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_KERNEL_H
#define FUSEC_IR_KERNEL_H

#include "fusec/IR/IR.h"

#include <memory>

namespace fusec {

struct KExpr;
using KExprPtr = std::shared_ptr<const KExpr>;

/// A node of a stage's expression. Index nodes have dtype i64, predicates
/// bool; value nodes carry the dtype they compute in.
struct KExpr {
  enum Kind {
    IntConst, // 3
    Var,      // an iteration variable or a symbolic dim
    Add, Sub, Mul, FloorDiv, Mod, Min, Max,
    Lt, Le, Gt, Ge, Eq, Ne, And, Or, Not,
    Literal, // a value constant in `dtype`
    Load,    // %buf[indices...]
    Call,    // a value operation: add, exp, ... (`name`)
    Cast,    // f32(x): conversion to `dtype`
    Select,  // select(cond, a, b)
  };
  Kind kind = IntConst;
  DType dtype = DType::i64;
  std::string name; // Var, Load (buffer), Call (operation)
  std::vector<KExprPtr> args;
  int64_t intValue = 0;
  double floatValue = 0; // Literal

  bool isIndexArith() const { return kind >= Add && kind <= Max; }
  bool isPredicate() const { return kind >= Lt && kind <= Not; }
  static KExprPtr intConst(int64_t value);
  static KExprPtr var(std::string name);
  static KExprPtr binary(Kind kind, KExprPtr lhs, KExprPtr rhs);
  static KExprPtr literal(double value, DType dtype);
  static KExprPtr load(std::string buffer, std::vector<KExprPtr> indices,
                       DType dtype);
  static KExprPtr call(std::string op, std::vector<KExprPtr> args, DType dtype);
  static KExprPtr cast(KExprPtr value, DType dtype);
  static KExprPtr select(KExprPtr cond, KExprPtr a, KExprPtr b);
};

/// Structural equality (the analysis compares index expressions this way).
bool equalExprs(const KExpr &a, const KExpr &b);
std::string printExpr(const KExpr &expr);

/// The value operations a stage may call, with their arity and whether they
/// return bool. Their names are the keys of the interpreter's counters.
struct KernelOpInfo {
  const char *name;
  int arity;
  bool returnsBool;
};
const KernelOpInfo *lookupKernelOp(llvm::StringRef name);

struct KBuffer {
  enum Role { Input, Output, Internal };
  std::string name;
  Type type;
  Role role = Input;
  llvm::SMLoc loc;
};

struct KStage {
  std::string buffer; // the buffer written
  std::vector<std::string> spatialVars;
  KExprPtr body;
  // Reduction stages only.
  std::string combiner; // add, multiply, max, min; empty for a spatial stage
  std::vector<std::pair<std::string, Dim>> reduceVars;
  double init = 0;
  DType accumulate = DType::f32;
  llvm::SMLoc loc;

  bool isReduction() const { return !combiner.empty(); }
};

struct Kernel {
  std::string name;
  llvm::SMLoc loc;
  std::vector<KBuffer> inputs, outputs, internals;
  std::vector<KStage> stages;
  Attrs attrs;

  const KBuffer *findBuffer(llvm::StringRef name) const;
  /// The result type of `call_kernel`: one output is a tensor, several a
  /// tuple; `attributes {tuple_result = true}` makes one output a 1-tuple
  /// (`split` into one section).
  Type getResultType() const;
  /// Symbolic dims bound by the input types, in first-appearance order.
  std::vector<std::string> getSymbolicDims() const;
};

/// Checks a kernel: buffers unique, each stage writes an output or internal
/// buffer with one variable per dimension, every load names a buffer with
/// the right rank, variables are in scope, dtypes agree, every output is
/// written. Emits located diagnostics.
bool verifyKernel(const Kernel &kernel, DiagEngine &diag,
                  llvm::StringRef context = {});
std::string printKernel(const Kernel &kernel);

} // namespace fusec

#endif // FUSEC_IR_KERNEL_H
