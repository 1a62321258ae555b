//===- GroupOutliner.h - Turn groups of bindings into functions -*- C++ -*-===//
//
// Function formation shared by fuse-ops and fuse-by-pattern (TVM's
// MakeGroupedFunctions, tvm-fusion-rules.md §6): a group of bindings of one
// dataflow block becomes `func @fused_<callees>` called where its last
// member was. Not a public header.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TRANSFORMS_GROUPOUTLINER_H
#define FUSEC_LIB_TRANSFORMS_GROUPOUTLINER_H

#include "fusec/IR/IR.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <set>

namespace fusec {

/// Functions created by one pass run, by their text up to renaming, so that
/// identical groups share one function across blocks and functions.
using OutlinedFunctionTable = llvm::StringMap<std::string>;

class GroupOutliner {
public:
  GroupOutliner(Module &module, Function &function, DataflowBlock &block,
                OutlinedFunctionTable &table);

  struct Result {
    std::string function;  // "" for a dead group (nothing uses its results)
    std::vector<Value *> params, outputs;
  };

  /// Outlines `members` (bindings of the block, in block order). Parameters
  /// are the values used from outside, in order of first use; a 0-d
  /// constant is copied in, and so is every constant when `bindConstants`.
  /// Outputs are the members used outside the group, listed in the block's
  /// `output` or returned. `attrs` are added to `primitive = true`.
  /// A dead group's members are removed. Nothing is rewritten until
  /// `finish`. `paramNames` names some parameters (a tuple field passed
  /// for a `get` left at the call site is `<tuple>_<index>`, as TVM
  /// names it); the others take the name of the value passed.
  /// `paramOrder`, when given, orders the parameters it lists (the others
  /// follow in first-use order).
  Result outline(const std::vector<Binding *> &members, const Attrs &attrs,
                 bool bindConstants,
                 const llvm::DenseMap<const Value *, std::string> &paramNames =
                     llvm::DenseMap<const Value *, std::string>(),
                 const std::vector<const Value *> *paramOrder = nullptr);

  /// Replaces each outlined group by its call (several outputs: a tuple and
  /// `get`s that keep the members' names), drops constants that only the
  /// groups used, and re-sorts the block topologically. Returns false if
  /// groups depend on each other in a cycle, naming one binding in `cycle`.
  bool finish(std::string &cycle);

private:
  std::string makeFunction(const std::vector<Binding *> &members,
                           const std::vector<Value *> &params,
                           const std::vector<Value *> &outputs, const Attrs &attrs,
                           bool bindConstants,
                           const llvm::DenseMap<const Value *, std::string> &paramNames);

  Module &module;
  Function &function;
  DataflowBlock &block;
  OutlinedFunctionTable &table;
  llvm::DenseMap<const Value *, std::vector<const Binding *>> uses;
  llvm::DenseSet<const Value *> usedByReturnOrOutput;
  llvm::DenseSet<const Binding *> removed;
  std::set<std::string> usedNames; // value names of the function
  llvm::DenseSet<const Binding *> copiedConstants;
  llvm::DenseMap<const Binding *, std::vector<std::unique_ptr<Binding>>> replacements;
  /// Each outlined member's group, named by its last member (the key of
  /// `replacements`).
  llvm::DenseMap<const Binding *, const Binding *> groupOf;
};

/// The name TVM gives field `index` of tuple `%tuple` passed on its own:
/// `tuple_index` (`t_0`); a numeric tuple name takes a letter (`v3_0`), as
/// `%3_0` would not parse.
std::string tupleFieldName(llvm::StringRef tuple, int64_t index);

/// A tuple from outside a group is passed field by field, as TVM does for
/// partially used tuple parameters: the `get`s that read it stay at the
/// call site (they are removed from `members`) and the function takes the
/// fields, each named `<tuple>_<index>` as TVM's FunctionCreator names it,
/// joining the parameters at the tuple's first `get`.
struct OutsideFieldReads {
  llvm::DenseMap<const Value *, std::string> paramNames;
  std::vector<const Value *> paramOrder;
};
OutsideFieldReads separateOutsideFieldReads(std::vector<Binding *> &members);

/// The name part a binding contributes to `fused_<callees>`: the op
/// (`nn.relu` -> `relu`), kernel or function it calls; "" for others.
std::string fusedNamePart(const Binding &binding);

} // namespace fusec

#endif // FUSEC_LIB_TRANSFORMS_GROUPOUTLINER_H
