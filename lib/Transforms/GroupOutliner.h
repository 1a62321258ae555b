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
#include "llvm/ADT/StringSet.h"

#include <set>

namespace fusec {

/// A tuple from outside a group is passed field by field, as TVM does for
/// partially used tuple parameters: the `get`s that read it stay at the
/// call site (they are removed from `members`) and the function takes the
/// fields, each named `<tuple>_<index>` as TVM's FunctionCreator names it,
/// joining the parameters at the tuple's first `get`.
struct OutsideFieldReads {
  llvm::DenseMap<const Value *, std::string> paramNames;
  std::vector<const Value *> paramOrder;
  std::vector<Binding *> gets; // taken out of the members; a dead group drops them
};
OutsideFieldReads separateOutsideFieldReads(std::vector<Binding *> &members);

/// Functions created by one pass run, by their text up to renaming, so that
/// identical groups share one function across blocks and functions; and
/// the names the module's functions and kernels take, gathered at the run's
/// first new function and kept as it adds more (only the outliner adds
/// functions while a pass runs), so that a fresh name costs a lookup, not a
/// scan of the module per candidate: a model of thousands of layers makes
/// thousands of `fused_matmul_add_1`, `_2`, ....
struct OutlinedFunctionTable {
  llvm::StringMap<std::string> byText;
  llvm::StringSet<> taken;
  llvm::StringMap<int> nextSuffix; // per base name: the suffixes below are taken
  bool takenKnown = false;
  void clear() {
    byText.clear();
    taken.clear();
    nextSuffix.clear();
    takenKnown = false;
  }
};

class GroupOutliner {
public:
  GroupOutliner(Module &module, Function &function, DataflowBlock &block,
                OutlinedFunctionTable &table);

  struct Result {
    std::string function;  // "" for a dead group (nothing uses its results)
    std::vector<Value *> params, outputs;
  };

  /// Outlines `members` (bindings of the block, in block order, without
  /// the `get`s separateOutsideFieldReads took out). Parameters are the
  /// values used from outside, in order of first use except that `fields`
  /// orders the ones it lists (a tuple's fields join at its first `get`)
  /// and names its field parameters (`<tuple>_<index>`, as TVM names them;
  /// the others take the name of the value passed); a 0-d constant is
  /// copied in, and so is every constant when `bindConstants`. Outputs are
  /// the members used outside the group, listed in the block's `output` or
  /// returned. `attrs` are added to `primitive = true`. A dead group's
  /// members are removed. Nothing is rewritten until `finish`.
  Result outline(const std::vector<Binding *> &members, const Attrs &attrs,
                 bool bindConstants, const OutsideFieldReads &fields);

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
  llvm::DenseMap<const Binding *, size_t> blockPosition; // the block's bindings
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



/// The name part a binding contributes to `fused_<callees>`: the op
/// (`nn.relu` -> `relu`), kernel or function it calls; "" for others.
std::string fusedNamePart(const Binding &binding);

} // namespace fusec

#endif // FUSEC_LIB_TRANSFORMS_GROUPOUTLINER_H
