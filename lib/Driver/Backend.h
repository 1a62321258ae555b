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
  std::string name;     // the module's name (NVRTC's program, the launcher's)
  std::string launcher; // --launcher=FILE.cpp, or ""
};

/// Generates (and for ptx/cubin, or a launcher, compiles) `module`; appends
/// the CUDA C, PTX or cubin to `output` (emit "fir" appends nothing), writes
/// the launcher files, and the per-kernel resource figures to `stats`.
/// Returns an exit code, after printing the error.
int runBackend(const Module &module, const BackendRequest &request, std::string &output,
               std::vector<ExtraStatistic> &stats);

} // namespace fusec

#endif
