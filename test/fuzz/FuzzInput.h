//===- FuzzInput.h - What every fuzz target sets up first --------*- C++ -*-===//
//
// One fuzzer input as text, with the passes registered (once per process)
// and a diagnostic engine that discards what it is told: a fuzz target
// checks for crashes and broken invariants, and most inputs are malformed.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_FUZZ_FUZZINPUT_H
#define FUSEC_TEST_FUZZ_FUZZINPUT_H

#include "fusec/Pass/Pass.h"
#include "fusec/Support/Support.h"

#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

namespace fusec {

struct FuzzInput {
  FuzzInput(const uint8_t *data, size_t size)
      : text(reinterpret_cast<const char *>(data), size), diag(sourceMgr) {
    static bool registered = (registerAllPasses(), true);
    (void)registered;
    diag.setHandler([](const llvm::SMDiagnostic &) {});
  }

  llvm::StringRef text;
  llvm::SourceMgr sourceMgr;
  DiagEngine diag;
};

} // namespace fusec

#endif // FUSEC_TEST_FUZZ_FUZZINPUT_H
