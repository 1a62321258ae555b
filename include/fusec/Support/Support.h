//===- Support.h - Diagnostics, debug logging, statistics, numerics -*- C++ -*-===//
//
// The small services every other component uses:
//   - DiagEngine: located diagnostics through llvm::SourceMgr
//     (`file:line:col: error: ...`, the source line and a caret);
//   - FUSEC_DEBUG / --debug-only / --log-level through spdlog (Debian's LLVM
//     is a release build, so LLVM's own -debug-only does not exist);
//   - FUSEC_STATISTIC counters printed by --stats;
//   - f16 / bf16 rounding shared by the parser, printer and interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_SUPPORT_SUPPORT_H
#define FUSEC_SUPPORT_SUPPORT_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fusec {

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

/// Reports errors against the buffers of a SourceMgr. A diagnostic without a
/// location is printed as `fusec: error: ...`.
class DiagEngine {
public:
  using Handler = std::function<void(const llvm::SMDiagnostic &)>;

  explicit DiagEngine(llvm::SourceMgr &sourceMgr) : sourceMgr(sourceMgr) {}

  void error(llvm::SMLoc loc, const llvm::Twine &message,
             llvm::ArrayRef<llvm::SMRange> ranges = {});
  void warning(llvm::SMLoc loc, const llvm::Twine &message);
  void note(llvm::SMLoc loc, const llvm::Twine &message);

  unsigned numErrors() const { return errorCount; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }
  /// Diverts diagnostics (for unit tests); the default prints to stderr.
  void setHandler(Handler newHandler) { handler = std::move(newHandler); }

private:
  void report(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind,
              const llvm::Twine &message, llvm::ArrayRef<llvm::SMRange> ranges);

  llvm::SourceMgr &sourceMgr;
  Handler handler;
  unsigned errorCount = 0;
};

//===----------------------------------------------------------------------===//
// Debug logging
//===----------------------------------------------------------------------===//

/// Sets the spdlog level by name: trace, debug, info, warn, error, off.
bool setLogLevel(llvm::StringRef level);
/// Enables FUSEC_DEBUG output for the given comma-separated debug types
/// (`all` or `*` for every one). A name `isKnown` refuses enables nothing:
/// it is returned (a misspelt pass would otherwise print nothing, silently).
std::string setDebugOnly(llvm::StringRef commaSeparatedTypes,
                         llvm::function_ref<bool(llvm::StringRef)> isKnown);
bool isDebugEnabled(llvm::StringRef debugType);
/// Logs one line `[debugType] message` to stderr.
void debugLog(llvm::StringRef debugType, const std::string &message);
void logWarning(const std::string &message);

#define FUSEC_DEBUG(MESSAGE_EXPR)                                              \
  do {                                                                         \
    if (::fusec::isDebugEnabled(DEBUG_TYPE))                                   \
      ::fusec::debugLog(DEBUG_TYPE, (MESSAGE_EXPR));                           \
  } while (false)

//===----------------------------------------------------------------------===//
// Statistics
//===----------------------------------------------------------------------===//

/// A named counter owned by a pass; registered on construction and printed
/// by `--stats` as `(S) <value> <name> - <description>`.
class Statistic {
public:
  Statistic(const char *debugType, const char *name, const char *description);
  Statistic &operator++() { ++value; return *this; }
  Statistic &operator+=(uint64_t amount) { value += amount; return *this; }
  uint64_t getValue() const { return value; }
  void reset() { value = 0; }
  const char *debugType, *name, *description;

private:
  uint64_t value = 0;
};

#define FUSEC_STATISTIC(VAR, NAME, DESCRIPTION)                                \
  static ::fusec::Statistic VAR(DEBUG_TYPE, NAME, DESCRIPTION)

/// A figure reported with the statistics that no pass counter holds (the
/// CUDA backend's per-kernel registers, spills, shared memory).
struct ExtraStatistic {
  std::string group, name, description;
  uint64_t value = 0;
};
void printStatistics(llvm::raw_ostream &os, const std::vector<ExtraStatistic> &extra = {});
void printStatisticsJSON(llvm::raw_ostream &os,
                         const std::vector<ExtraStatistic> &extra = {});
void resetStatistics();

//===----------------------------------------------------------------------===//
// Reduced-precision floats
//===----------------------------------------------------------------------===//

uint16_t floatToHalfBits(float value);    // round to nearest even
float halfBitsToFloat(uint16_t bits);
uint16_t floatToBFloat16Bits(float value); // round to nearest even
float bfloat16BitsToFloat(uint16_t bits);

/// Shortest decimal text that reads back to exactly `value` ("inf", "nan",
/// "-1.5", "1e-05"). When `forceFloatSyntax` is set the text always lexes
/// as a float ("2.0", not "2").
std::string formatFloat(double value, bool forceFloatSyntax);

/// A flag that takes a value and was given an empty one (`--emit=`): the
/// message "--emit needs a value: <what>", else "". cl::opt cannot tell an
/// empty value from no flag, which would silently mean the default.
using RequiredValue = std::pair<llvm::cl::opt<std::string> *, const char *>;
std::string findEmptyFlagValue(llvm::ArrayRef<RequiredValue> flags);

/// Makes running out of memory (a failed allocation anywhere, LLVM's or
/// the standard library's) print `<tool>: error: out of memory` and exit
/// with 1, instead of LLVM's default abort with a crash report. Call after
/// llvm::InitLLVM, which installs the handler this one replaces.
void exitOnOutOfMemory(const char *toolName);

/// Makes a failed write to stdout (`> /dev/full`, a closed pipe's end of
/// disk) print `<tool>: error: cannot write to stdout: REASON` and exit
/// with 1 when the program ends, instead of LLVM's abort in outs()'s
/// destructor; this covers cl's --help, which exits on its own. A failed
/// write to stderr exits with 1 too (nothing can be printed), or with the
/// status given to exitStatus when that is not 0 (a usage error stays 2).
void exitCleanlyOnStdoutError(const char *toolName);
/// Records the status `main` returns, for exitCleanlyOnStdoutError's check
/// at exit; returns it.
int exitStatus(int status);

/// Makes SIGPIPE exit with 1. Call it before llvm::InitLLVM, and construct
/// that with InstallPipeSignalExitHandler = false.
void exitWithOneOnBrokenPipe();

} // namespace fusec

#endif // FUSEC_SUPPORT_SUPPORT_H
