//===- Pass.h - Passes, the pass registry and the pass manager --*- C++ -*-===//
//
// A Pass transforms a Module in place. Passes are registered once, from the
// table in lib/Transforms/Passes.def (`registerAllPasses`); the same table
// feeds the pipeline parser, `--help`, `--list-passes` and docs/passes.md.
//
// Pipeline text (spec §7): passes separated by commas, options in braces
// after a pass name, separated by commas or spaces:
//   `fuse-by-pattern{patterns=p.pat,bind-constants=false},legalize`
// A value may be written in double quotes, with `\"` and `\\` escapes
// (`patterns="my patterns/a,b.pat"`). `PassManager::str()` prints a
// pipeline that parses back to itself, quoting values where needed.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASS_PASS_H
#define FUSEC_PASS_PASS_H

#include "fusec/IR/IR.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace fusec {

/// Fusion decisions collected for `--fusion-report` (spec §8).
struct FusionReport {
  struct Group {
    std::string function, kind, pattern, composite;
    std::vector<std::string> members; // binding names of the input
    /// Of a group around a matmul or convolution: the members applied as
    /// its operand tiles load, and those applied to its accumulators.
    std::vector<std::string> prologue, epilogue;
    std::string caller; // the function whose bindings `members` are
    /// Of merged groups of row reductions (fuse-ops{merge-reductions}):
    /// the members that came from groups other than the last one's.
    std::vector<std::string> merged;
  };
  /// One decision with its reason: `fields` are extra keys, in order
  /// (`pattern`, `root`, ...).
  struct Decision {
    std::string pass, function, action, reason;
    std::vector<std::pair<std::string, std::string>> fields;
    /// Estimated times of the alternatives (`inline_us`, ...), in order.
    std::vector<std::pair<std::string, double>> costs;
  };
  std::vector<Group> groups;
  /// (function, %binding) of the members of groups dropped as dead.
  std::vector<std::pair<std::string, std::string>> dead;
  std::vector<Decision> decisions;
  /// (function, %binding) of the input's bindings, in order, that no group
  /// took and that were not dead: noted by the driver per module (each
  /// --split-input-file chunk on its own, since names repeat across them).
  std::vector<std::pair<std::string, std::string>> unfused;
};

/// What a pass may use besides the module.
struct PassContext {
  DiagEngine &diag;
  FusionReport *report = nullptr;     // --fusion-report
  llvm::raw_ostream *remarks = nullptr; // --remarks
  /// Set by a pass that fails on an invariant of its own (exit code 3)
  /// rather than on its input (exit code 1).
  bool internalError = false;
};

class Pass {
public:
  enum class OptionKind { Int, Bool, String };
  /// Values are checked when the pipeline text is parsed, so that a bad one
  /// is a usage error (exit 2) pointing at the value, before anything runs.
  struct Option {
    std::string name;
    OptionKind kind;
    std::string defaultValue;
    std::string description;
    std::string value;
    /// A String option with a fixed set of values: those values.
    std::vector<std::string> choices;
    /// An Int option: its smallest and largest meaningful values.
    int64_t minimum = std::numeric_limits<int64_t>::min();
    int64_t maximum = std::numeric_limits<int64_t>::max();
    /// Any further check of a String value: why it is wrong, or "".
    std::function<std::string(llvm::StringRef)> check;
  };

  virtual ~Pass() = default;
  /// The pipeline name (`dce`), also the pass's DEBUG_TYPE.
  llvm::StringRef getName() const { return name; }
  /// Runs on `module`. Returns false after emitting a diagnostic when the
  /// input cannot be handled (exit code 1).
  virtual bool run(Module &module, PassContext &context) = 0;

  const std::vector<Option> &getOptions() const { return options; }
  bool hasOption(llvm::StringRef key) const { return findOption(key) != nullptr; }
  /// Sets an option from pipeline text; returns an error message or "".
  std::string setOption(llvm::StringRef key, llvm::StringRef value);
  /// `{a=1,b=x}` with every option, or "" for a pass without options;
  /// values are quoted where pipeline text needs it.
  std::string getOptionsString() const;

protected:
  explicit Pass(llvm::StringRef name) : name(name.str()) {}
  /// Returns the new option, valid until the next declaration, for its
  /// `choices`, `minimum` or `check`.
  Option &declareOption(llvm::StringRef name, OptionKind kind, llvm::StringRef defaultValue,
                        llvm::StringRef description);
  int64_t getIntOption(llvm::StringRef name) const;
  bool getBoolOption(llvm::StringRef name) const;
  std::string getStringOption(llvm::StringRef name) const;

private:
  const Option *findOption(llvm::StringRef name) const;
  std::string name;
  std::vector<Option> options;
};

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

struct PassInfo {
  std::string name;    // `fuse-ops`
  std::string title;   // `FuseOps`, for IR dump banners
  std::string summary; // one line, shown by --help and docs/passes.md
  std::function<std::unique_ptr<Pass>()> create;
  bool testOnly = false; // hidden from --help, --list-passes and the docs
};

void registerPass(PassInfo info);
/// Registers every pass of lib/Transforms/Passes.def (idempotent).
void registerAllPasses();
llvm::ArrayRef<PassInfo> getRegisteredPasses();
const PassInfo *lookupPassInfo(llvm::StringRef name);

//===----------------------------------------------------------------------===//
// Pass manager and instrumentation
//===----------------------------------------------------------------------===//

/// What the pass manager does around each pass (spec §7 flags).
struct Instrumentation {
  bool printBeforeAll = false, printAfterAll = false, printChanged = false;
  std::set<std::string> printBefore, printAfter;
  std::string dumpDir;        // one file per pass: NN_<pass>.fir
  bool verifyEach = true;
  bool verifyRoundTrip = false;
  bool timePasses = false;
  llvm::raw_ostream *remarks = nullptr; // --remarks
  llvm::raw_ostream *dumpStream = &llvm::errs();
  /// Called after each pass (after verification); returning false stops
  /// the pipeline with an internal error (`--check-each`).
  std::function<bool(const Module &, const Pass &, DiagEngine &)> afterPass;
};

/// Result of a pipeline run, mapped to fusec's exit codes by the driver.
enum class RunResult { Success, InputError, InternalError };

class PassManager {
public:
  void addPass(std::unique_ptr<Pass> pass) { passes.push_back(std::move(pass)); }
  size_t size() const { return passes.size(); }
  const std::vector<std::unique_ptr<Pass>> &getPasses() const { return passes; }
  /// Canonical pipeline text; parses back to an identical pipeline.
  std::string str() const;
  RunResult run(Module &module, DiagEngine &diag,
                const Instrumentation &instrumentation,
                FusionReport *report = nullptr) const;

private:
  std::vector<std::unique_ptr<Pass>> passes;
};

/// A pipeline text error, with the 0-based column it points at.
struct PipelineError {
  size_t column = 0;
  std::string message;
};

/// `value` as pipeline text writes it: as is when it needs no quotes, else
/// in double quotes with `"` and `\` escaped.
std::string quotePipelineValue(llvm::StringRef value);

/// Parses pipeline text. Returns null and fills `error` on failure.
std::unique_ptr<PassManager> parsePassPipeline(llvm::StringRef text,
                                               PipelineError &error);
/// The text of a named pipeline (`O0`, `O1`, `O2`), or "" if unknown.
/// `costModel` and `target` are -O2's `schedule` options (`none` gives
/// TVM's schedules); without `tensorCores` (a GPU before sm_80) every
/// `schedule` gets `tensor-cores=false`.
std::string getNamedPipeline(llvm::StringRef name, llvm::StringRef costModel = "roofline",
                             llvm::StringRef target = "sm_90", bool tensorCores = true);

} // namespace fusec

#endif // FUSEC_PASS_PASS_H
