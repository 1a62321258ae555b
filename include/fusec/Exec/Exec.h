//===- Exec.h - The CPU reference interpreter --------------------*- C++ -*-===//
//
// Runs a module at any pipeline stage: graph functions (an op binding runs
// through its legalized kernel, so there is one set of semantics), calls,
// tuples, `call_kernel` with multi-stage kernels. Every stage is executed
// as written: each element of its domain is computed, reductions combine in
// their accumulation dtype, f16/bf16/f32 values are rounded to their dtype
// after every operation (f32 not in a Float32Evaluation::Float64 run). Counters record exactly what
// ran: kernel launches, bytes loaded from and stored to global buffers (a kernel's inputs and
// outputs; internal buffers are not in device memory) and evaluations per
// operation.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_EXEC_EXEC_H
#define FUSEC_EXEC_EXEC_H

#include "fusec/IR/Kernel.h"

#include <map>
#include <memory>

namespace fusec {

class ModuleSnapshot;

struct KernelCounters {
  std::string name;
  int64_t launches = 0, bytesRead = 0, bytesWritten = 0;
  std::map<std::string, int64_t> evaluations;
  /// For a library call (a composite with `codegen = "cublaslt"`): the
  /// library. Its launches are calls, its bytes each operand read once and
  /// the result written once, its evaluations those of the composite's body.
  std::string library;
};

struct Counters {
  int64_t launches = 0, bytesRead = 0, bytesWritten = 0;
  int64_t libraryCalls = 0; // included in `launches`
  std::map<std::string, int64_t> evaluations;
  std::vector<KernelCounters> kernels; // one entry per kernel name
  /// The spec §7 JSON form.
  std::string toJSON() const;
};

/// A run-time value: a tensor, or a tuple of values.
struct RtValue {
  std::shared_ptr<TensorData> tensor;
  std::vector<RtValue> fields;
  bool isTuple() const { return !tensor; }
};

/// How an Interpreter evaluates f32 values.
enum class Float32Evaluation {
  /// Rounded to f32 after every operation: the program's semantics.
  Rounded,
  /// Carried as doubles: the program with its f32 arithmetic in float64
  /// (f16 and bf16 still rounded). A second opinion when two evaluation
  /// orders of a sum that cancels disagree in f32 (an in-order sum against a
  /// tree, as a pass or a GPU reorders it): in float64 they agree unless the
  /// programs differ. One such run at a time per process.
  Float64,
};

class Interpreter {
public:
  explicit Interpreter(const Module &module,
                       Float32Evaluation float32 = Float32Evaluation::Rounded);
  ~Interpreter();

  /// Runs `entry` on `inputs` (one per tensor parameter; a tuple parameter
  /// takes one per field, flattened in order as results are). On failure
  /// returns false and sets `error` (shape or dtype mismatch, index out of
  /// range, ...).
  bool run(llvm::StringRef entry, const std::vector<TensorData> &inputs,
           std::vector<TensorData> &outputs, std::string &error);
  const Counters &getCounters() const { return counters; }

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
  Counters counters;
  Float32Evaluation float32;
};

/// The tensors a call of `function` takes, with their names: its
/// parameters with tuples flattened in order (`%t[0]`, `%t[1][0]`, ...).
std::vector<std::pair<std::string, Type>> flatInputs(const Function &function);

/// Deterministic inputs for `function` (flattened as flatInputs): input k
/// is `random<seed = seed + k>` (spec §9) for floats, `u mod 5 - 2` for
/// integers, `u mod 2` for bool; a symbolic dim takes `dims[name]`, else 8.
/// Sets `error` (and returns nothing) when an input is larger than
/// `allocationProblem` allows.
std::vector<TensorData> makeRandomInputs(const Function &function, uint64_t seed,
                                         const std::map<std::string, int64_t> &dims,
                                         std::string &error);

/// Reads one `.npy` file per input of `function` (flattened as flatInputs),
/// each of the input's dtype (bf16 from float32); shapes are checked when
/// the function runs. Returns false and sets `error` otherwise.
bool readInputFiles(const Function &function, const std::vector<std::string> &files,
                    std::vector<TensorData> &inputs, std::string &error);

/// "" when the interpreter can hold `elements` values of `what` (as doubles,
/// within this machine's physical memory), else a message saying why not:
/// an allocation that large would abort the process.
std::string allocationProblem(int64_t elements, const std::string &what);

/// Writes NumPy `.npy` (v1.0, C order; bf16 as float32). Returns "" or an
/// error message.
std::string writeNpyFile(llvm::StringRef path, const TensorData &data);

/// How a GPU's results are compared with the interpreter's (both off for
/// --check-each, which compares two runs of the interpreter):
///   - relativeToOutput: the relative part of the tolerance is measured
///     against the larger of the element and the output's largest finite
///     magnitude: a library step rounds its fused epilogue once where the
///     interpreter rounds after each operator, and in a sum that cancels
///     that difference is relative to the terms, not to the sum;
///   - precision: no tolerance is tighter than this dtype's (the module's
///     least precise float): a reduction added in another order may round
///     an f16 intermediate the other way, and an f32 result computed from it
///     carries that difference.
struct CompareOptions {
  bool relativeToOutput = false;
  std::optional<DType> precision;
};

/// Compares two results within a per-dtype tolerance (documented in
/// docs/interpreter.md). Returns "" when they agree, else the first
/// difference.
std::string compareResults(const std::vector<TensorData> &expected,
                           const std::vector<TensorData> &actual,
                           const CompareOptions &options = {});

/// Checks that transformed forms of a module compute what it does, on fixed
/// inputs (--check-each, the pipeline fuzzer). A form agrees when its
/// results match the module's within compareResults' tolerance, or, failing
/// that, when they match with f32 evaluated in float64 on both sides
/// (Float32Evaluation::Float64): a pass that reorders a sum that cancels
/// changes the f32 results and computes the same function.
class EquivalenceCheck {
public:
  /// Runs `entry` of the original `module` on `inputs`; false, with
  /// `error` set, when it cannot run. Its float64 run waits for the first
  /// disagreement, on a copy (a float64 run that fails leaves no second
  /// opinion).
  bool setReference(const Module &module, llvm::StringRef entry, std::vector<TensorData> inputs,
                    std::string &error);
  /// The reference's f32 results.
  const std::vector<TensorData> &getReference() const { return reference; }
  /// Runs `entry` of `module`: false, with `error` set, when it cannot run;
  /// else `difference` is "" when it agrees, or says where it does not (in
  /// f32, then in float64).
  bool check(const Module &module, std::string &difference, std::string &error) const;

  EquivalenceCheck();
  ~EquivalenceCheck();

private:
  std::string entry;
  std::vector<TensorData> inputs, reference;
  std::unique_ptr<ModuleSnapshot> original; // for the float64 reference
  // Made at the first disagreement.
  mutable std::vector<TensorData> float64Reference;
  mutable bool float64Tried = false, hasFloat64Reference = false;
};

/// How many threads run a large stage's points or a lowered launch's
/// blocks (0, the default: one per core; 1: the calling thread alone).
/// Results, counters and errors do not depend on it. The worker pool is
/// made at the first parallel stage or launch, with the count set then.
void setInterpreterThreads(unsigned threads);

/// The entry function used by fusec-run and --check-each: `@main`, else the
/// first graph function no other function calls.
const Function *findEntryFunction(const Module &module, llvm::StringRef name = "");

/// The fusec-run command line (tools/fusec-run).
int runMain(int argc, char **argv);

} // namespace fusec

#endif // FUSEC_EXEC_EXEC_H
