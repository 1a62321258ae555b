//===- Backend.h - CUDA output of the driver (private) ----------*- C++ -*-===//
#ifndef FUSEC_LIB_DRIVER_BACKEND_H
#define FUSEC_LIB_DRIVER_BACKEND_H

#include "fusec/Support/Support.h"
#include "fusec/Target/CUDA.h"

namespace fusec {

struct BackendRequest {
  std::string emit;     // cuda, ptx or cubin
  std::string arch;     // sm_90
  std::string cudaPath; // --cuda-path
  std::string name;     // the program name NVRTC reports errors with
};

/// Generates (and for ptx/cubin compiles) `module`; appends the result to
/// `output` and the per-kernel resource figures to `stats`. Returns an exit
/// code, after printing the error.
int runBackend(const Module &module, const BackendRequest &request, std::string &output,
               std::vector<ExtraStatistic> &stats);

} // namespace fusec

#endif
