//===- ExecParallel.cpp - Worker threads for the interpreter --------------===//
//
// The interpreter runs a large stage (KernelExec.cpp) or launch
// (LoweredExec.cpp) on a pool of worker threads. The work is cut into
// chunks of consecutive indices (outer points of a stage, blocks of a
// launch), which the workers take in index order. Each worker owns what it
// writes besides the outputs (its compiled nodes, scratch buffers and
// counters), and the chunks write disjoint output elements, so the results
// do not depend on the thread count. The error reported is the first
// failing chunk's in index order: every chunk before it has run, and,
// since each chunk stops at its first error, that is the error a run in
// order meets first.
//
//===----------------------------------------------------------------------===//
#include "KernelExec.h"

#include "llvm/Support/ThreadPool.h"

#include <atomic>
#include <exception>

using namespace fusec;
using namespace fusec::exec;

/// setInterpreterThreads's count; 0 is one per core.
static unsigned configuredThreads = 0;

void fusec::setInterpreterThreads(unsigned threads) { configuredThreads = threads; }

unsigned exec::getInterpreterWorkers() {
  return configuredThreads ? configuredThreads
                           : llvm::hardware_concurrency().compute_thread_count();
}

static llvm::ThreadPool &workerPool() {
  static llvm::ThreadPool pool(llvm::hardware_concurrency(getInterpreterWorkers()));
  return pool;
}

void exec::runInChunks(int64_t count, unsigned workers,
                       llvm::function_ref<void(unsigned, int64_t, int64_t)> body) {
  // Several chunks per worker even out workers whose chunks cost more.
  int64_t chunks = std::min<int64_t>(count, int64_t(workers) * 8);
  std::atomic<int64_t> nextChunk{0}, firstFailed{chunks};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(chunks));
  llvm::ThreadPool &pool = workerPool();
  for (unsigned w = 0; w < workers; ++w)
    pool.async([&, w] {
      for (int64_t chunk; (chunk = nextChunk++) < chunks && chunk < firstFailed;) {
        try {
          body(w, count * chunk / chunks, count * (chunk + 1) / chunks);
        } catch (...) {
          errors[size_t(chunk)] = std::current_exception();
          for (int64_t seen = firstFailed; chunk < seen;)
            firstFailed.compare_exchange_weak(seen, chunk);
          return;
        }
      }
    });
  pool.wait();
  if (firstFailed < chunks)
    std::rethrow_exception(errors[size_t(firstFailed.load())]);
}

void exec::addCounters(KernelCounters &into, const KernelCounters &from) {
  into.bytesRead += from.bytesRead;
  into.bytesWritten += from.bytesWritten;
  for (const auto &[op, count] : from.evaluations)
    into.evaluations[op] += count;
}
