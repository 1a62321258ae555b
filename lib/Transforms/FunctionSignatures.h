//===- FunctionSignatures.h - Rewrite a function and its call sites -*- C++ -*-===//
//
// Signature changes fuse-tir makes to a primitive function before merging
// it into one kernel, each with the matching change at every call site.
// Not a public header.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TRANSFORMS_FUNCTIONSIGNATURES_H
#define FUSEC_LIB_TRANSFORMS_FUNCTIONSIGNATURES_H

#include "fusec/IR/IR.h"

namespace fusec {

/// Tensor constants inside a primitive function (a composite of
/// fuse-by-pattern with bind-constants) cannot be kernel stages: each
/// becomes a parameter of the function, defined by a copy at every call
/// site just before the call. Returns whether anything moved.
bool liftTensorConstants(Module &module, Function &function);

/// TVM's ExpandTupleArguments: a tuple parameter becomes one parameter per
/// field (`<tuple>_<index>`; nested tuples are flattened), and every call
/// site passes the fields, taken by `get`s just before the call (their
/// results are added to `fieldGets`, so that the caller can drop those
/// whose field the merged kernel does not read). Inside, the tuple's `get`s
/// read the fields, and a use of the whole tuple reads a `tuple` of them.
/// Returns whether anything changed.
bool expandTupleParams(Module &module, Function &function,
                       std::vector<const Value *> &fieldGets);

} // namespace fusec

#endif // FUSEC_LIB_TRANSFORMS_FUNCTIONSIGNATURES_H
