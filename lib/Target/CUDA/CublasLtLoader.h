//===- CublasLtLoader.h - cuBLASLt through dlopen ---------------*- C++ -*-===//
//
// The cuBLASLt API of fusec-run --device=cuda: fusec builds without the CUDA
// toolkit, so the handle types are opaque pointers and the two structs the
// API passes by value mirror cublasLt.h's layouts
// (test/Target/CUDA/cublaslt-abi.test checks them against the header).
// Not a public header.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TARGET_CUDA_CUBLASLTLOADER_H
#define FUSEC_LIB_TARGET_CUDA_CUBLASLTLOADER_H

#define FUSEC_RT_NO_CUBLASLT_HEADER
#include "fusec/Runtime/Runtime.h"
#include "fusec/Runtime/CublasLt.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace fusec {
namespace cuda {

/// cublasLtMatmulAlgo_t.
struct CublasLtAlgo {
  uint64_t data[8];
};

/// cublasLtMatmulHeuristicResult_t.
struct CublasLtHeuristic {
  CublasLtAlgo algo;
  size_t workspaceSize;
  int state; // cublasStatus_t
  float wavesCount;
  int reserved[4];
};

/// The engine's library table over a dlopen'ed libcublasLt (the workspace
/// from `driver`), or null with `error` saying what is missing. `cudaPath`
/// is tried after the loader's search path.
const fusec_rt::Library *loadCublasLt(const fusec_rt::Driver &driver,
                                      const std::string &cudaPath, std::string &error);

} // namespace cuda
} // namespace fusec

#endif // FUSEC_LIB_TARGET_CUDA_CUBLASLTLOADER_H
