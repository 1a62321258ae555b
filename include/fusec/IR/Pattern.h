//===- Pattern.h - Dataflow patterns for fuse-by-pattern --------*- C++ -*-===//
//
// The in-memory form of a `.pat` pattern (spec §6): a small dataflow graph
// of op nodes, `get` nodes and wildcards, a root, and declarative `where`
// constraints. Patterns are parsed from text (fusec/Parser/Parser.h) or
// built with the methods below; lib/Analysis/PatternMatcher.cpp matches them
// against graph bindings and fuse-by-pattern groups the matches.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_PATTERN_H
#define FUSEC_IR_PATTERN_H

#include "fusec/IR/IR.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <map>

namespace fusec {

/// One node of a pattern, named by the `%name` it was written with.
struct PatternNode {
  enum Kind { Wildcard, Op, Get, Literal };
  Kind kind = Wildcard;
  std::string name;                 // without '%'; "" for a literal operand
  std::vector<std::string> opNames; // Op: the alternatives of `a | b`
  std::vector<int> operands;        // Op/Get: node indices
  bool variadic = false;            // Op: `(...)` or `(%a, ...)`: more operands match
  Attrs attrs;                      // Op: attributes that must be equal
  int64_t tupleIndex = 0;           // Get
  Attr literal;                     // Literal: a scalar operand such as `0.5`
  llvm::SMLoc loc;
};

/// A term of a `where` comparison.
struct PatternTerm {
  enum Kind { DTypeOf, RankOf, ShapeOf, Int, DTypeName };
  Kind kind = Int;
  int node = -1;          // DTypeOf/RankOf/ShapeOf
  int64_t value = 0;      // Int; ShapeOf: the dim index (negative from the end)
  DType dtype = DType::f32;
  llvm::SMLoc loc;
  bool isDType() const { return kind == DTypeOf || kind == DTypeName; }
};

/// One `where` check.
struct PatternConstraint {
  enum Kind { Compare, In, IsConstant, SingleUse, Not };
  enum Comparison { Eq, Ne, Lt, Le, Gt, Ge };
  Kind kind = Compare;
  Comparison comparison = Eq;
  PatternTerm lhs;                       // Compare, In
  std::vector<PatternTerm> rhs;          // Compare: one term; In: the list
  int node = -1;                         // IsConstant, SingleUse
  std::vector<PatternConstraint> negated; // Not: one constraint
  llvm::SMLoc loc;
  /// The text of the constraint, for remarks (`single_use(%m)`).
  std::string text;
};

/// What a C++ check callback sees of a match (TVM's PatternCheckContext).
struct PatternCheckContext {
  /// The binding the match is rooted at (`matched_expr`).
  const Binding *root = nullptr;
  /// Every named pattern node and the value it matched (`annotated_expr`).
  std::map<std::string, const Value *> annotated;
  /// The bindings that join the group, in block order (`matched_bindings`).
  std::vector<const Binding *> matchedBindings;
  /// For each value of the function, the bindings that use it (`var_usages`).
  const llvm::DenseMap<const Value *, std::vector<const Binding *>> *uses = nullptr;
  /// Each value's defining binding (`value_to_bound_var`); null for
  /// parameters.
  const Binding *bindingOf(const Value *value) const { return value->definingBinding; }
};

using PatternCheckFn = std::function<bool(const PatternCheckContext &)>;

/// A named pattern: nodes in definition order, a root op node, constraints.
struct DataflowPattern {
  std::string name; // `cublaslt.matmul_bias_relu`
  llvm::SMLoc loc;
  std::vector<PatternNode> nodes;
  int root = -1;
  std::vector<PatternConstraint> constraints;
  /// An optional veto, after the constraints (C++ API only).
  PatternCheckFn check;

  /// The library or backend prefix of the name: the text before the first
  /// dot (`cublaslt`), or the whole name.
  std::string codegenPrefix() const;
  int lookup(llvm::StringRef nodeName) const;

  // Builders for the C++ API; each returns the new node's index.
  int addWildcard(llvm::StringRef nodeName);
  int addOp(llvm::StringRef nodeName, std::vector<std::string> alternatives,
            std::vector<int> operands, Attrs attrs = {}, bool variadic = false);
  int addGet(llvm::StringRef nodeName, int tuple, int64_t index);
};

/// Library backends that fusec dispatches composites to (a `codegen`
/// prefix naming one becomes a library call in the launcher).
bool isLibraryCodegen(llvm::StringRef codegen);

/// Functions whose bodies a library runs: each function with a library
/// `codegen` and every function it calls. Passes that compile graph ops
/// (legalize, fuse-tir) leave them alone; the interpreter runs their bodies.
llvm::StringSet<> libraryBoundFunctions(const Module &module);

} // namespace fusec

#endif // FUSEC_IR_PATTERN_H
