//===- EmulatorHeaderCache.h - The emulator header, precompiled -*- C++ -*-===//
//
// fusec-run --device=emulator's cache of the emulator header's precompiled
// form (EmulatorHeaderCache.cpp). Not a public header.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TARGET_CUDA_EMULATORHEADERCACHE_H
#define FUSEC_LIB_TARGET_CUDA_EMULATORHEADERCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace fusec::cuda {

/// The cached copy of `headerText` (the emulator header) that `compiler`
/// has precompiled with `flags` (the module build's, without its input and
/// output) and the CUDA headers under `cudaPath`, building it on first use:
/// the path to pass with `-include`, the `.gch` beside it. "" where the
/// cache is off (FUSEC_CACHE_DIR set to "") or cannot be built; the caller
/// then builds from the text.
std::string getCachedEmulatorHeader(const std::string &compiler,
                                    const std::vector<std::string> &flags,
                                    const std::string &cudaPath, llvm::StringRef headerText);

/// Runs the host `compiler` with `flags` followed by `more`, its output
/// going to `log` ("" discards it). Returns the exit status, negative when
/// the compiler could not be run (`message` then says why).
int runHostCompiler(const std::string &compiler, const std::vector<std::string> &flags,
                    llvm::ArrayRef<llvm::StringRef> more, llvm::StringRef log,
                    std::string *message = nullptr);

} // namespace fusec::cuda

#endif
