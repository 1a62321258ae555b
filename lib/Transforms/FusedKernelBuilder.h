//===- FusedKernelBuilder.h - One kernel from a primitive function -*- C++ -*-===//
//
// fuse-tir's kernel construction (TVM's FusedTIRConstructor). Not a public
// header.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TRANSFORMS_FUSEDKERNELBUILDER_H
#define FUSEC_LIB_TRANSFORMS_FUSEDKERNELBUILDER_H

#include "fusec/IR/Kernel.h"

#include <memory>
#include <string>

namespace fusec {

/// The kernel holding the stages of every member kernel `function` calls,
/// named as the function, its inputs the function's parameters (all
/// tensors: expand tuples first) and its outputs the returned values.
/// Returns null with `problem` set when the function has something a
/// kernel cannot hold (a binding other than a kernel call, `tuple`, `get`,
/// alias or 0-d constant; a tuple parameter; a nested tuple result; no
/// result).
std::unique_ptr<Kernel> buildFusedKernel(const Module &module, const Function &function,
                                         std::string &problem);

} // namespace fusec

#endif // FUSEC_LIB_TRANSFORMS_FUSEDKERNELBUILDER_H
