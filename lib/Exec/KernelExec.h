//===- KernelExec.h - Executing one kernel (private) ------------*- C++ -*-===//
#ifndef FUSEC_LIB_EXEC_KERNELEXEC_H
#define FUSEC_LIB_EXEC_KERNELEXEC_H

#include "fusec/Exec/Exec.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace fusec {
namespace exec {

/// A run-time failure inside a kernel (index out of range, division by
/// zero); caught at the interpreter's entry.
struct ExecError {
  std::string message;
  /// Whether `message` already names the binding that failed.
  bool located = false;
};

/// The product of `dims` (each at most 2^40), saturated at 2^62 instead of
/// overflowing.
inline int64_t saturatingProduct(const std::vector<int64_t> &dims) {
  int64_t product = 1;
  for (int64_t dim : dims)
    product = dim && product > (int64_t(1) << 62) / dim ? int64_t(1) << 62 : product * dim;
  return product;
}

/// Throws ExecError when `allocationProblem` refuses `elements` values.
inline void checkAllocation(int64_t elements, const std::string &what) {
  std::string problem = allocationProblem(elements, what);
  if (!problem.empty())
    throw ExecError{problem};
}

/// False while an Interpreter made with Float32Evaluation::Float64 runs:
/// f32 values are then carried as doubles, not rounded (one such run at a
/// time; the worker pool's tasks start after it is set).
extern bool roundsFloat32;

/// The number `value` as a value of `dtype` (ExecNodes.h: an i64 is held
/// bit-cast): f32/f16/bf16 rounded to nearest even (f32 not while
/// !roundsFloat32), integers truncated and wrapped as two's complement,
/// bool 0/1.
double roundTo(double value, DType dtype);
/// `x`, a value of `from`, converted to `to` as C and CUDA convert (an i64
/// to f32 rounds once, exactly as __ll2float_rn).
double convertValue(double x, DType from, DType to);
/// roundTo with the common f32 case inlined (hot loops).
inline double roundFast(double value, DType dtype) {
  if (dtype == DType::f32)
    return roundsFloat32 ? double(static_cast<float>(value)) : value;
  return roundTo(value, dtype);
}
/// Rounds `n` values in place.
void roundBatch(double *values, int64_t n, DType dtype);

/// Runs `kernel` on `inputs`; returns its outputs. Throws ExecError.
std::vector<std::shared_ptr<TensorData>>
runKernel(const Kernel &kernel, const std::vector<std::shared_ptr<TensorData>> &inputs,
          KernelCounters &counters);

/// How many workers a parallel stage or launch uses: setInterpreterThreads's
/// count, or one per core.
unsigned getInterpreterWorkers();

/// Runs `body(worker, from, to)` over the indices [0, count) in chunks of
/// consecutive indices, taken in order by `workers` threads (worker w runs
/// its chunks one after another, so state of its own needs no lock). An
/// exception is rethrown here: the first failing chunk's, in index order
/// (ExecParallel.cpp).
void runInChunks(int64_t count, unsigned workers,
                 llvm::function_ref<void(unsigned, int64_t, int64_t)> body);

/// Adds `from`'s bytes and evaluations (not its launches) to `into`.
void addCounters(KernelCounters &into, const KernelCounters &from);

/// Runs the indices [0, count) of a stage or launch. `make(counters)`
/// returns a copy of the work (a std::unique_ptr to something with
/// `run(from, to)`) that counts into `counters`. With one worker (or one
/// index) a single copy counts into `total` and runs everything here; else
/// each worker's copy has counters of its own, added to `total` at the end
/// (runInChunks).
template <typename Make>
void runOnWorkers(int64_t count, unsigned workers, KernelCounters &total, Make &&make) {
  workers = unsigned(std::min<int64_t>(workers, count));
  if (workers <= 1) {
    make(total)->run(0, count);
    return;
  }
  std::vector<KernelCounters> counters(workers);
  std::vector<decltype(make(total))> copies;
  for (unsigned w = 0; w < workers; ++w)
    copies.push_back(make(counters[w]));
  runInChunks(count, workers,
              [&](unsigned w, int64_t from, int64_t to) { copies[w]->run(from, to); });
  for (const KernelCounters &worker : counters)
    addCounters(total, worker);
}

} // namespace exec
} // namespace fusec

#endif
