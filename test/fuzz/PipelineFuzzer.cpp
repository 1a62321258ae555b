//===- PipelineFuzzer.cpp - libFuzzer target for the whole pipeline -------===//
//
// The parser fuzzer checks what any text does to the parser; this target
// checks what any program that parses does to the passes, code generation
// and the interpreter. For an input that parses as FIR (spec §9: "never a
// crash, an assertion or a silent wrong result"):
//   1. One named pipeline runs on it (-O0, -O1 or -O2 for sm_90, picked by
//      the input's size, so that a crash reproduces from the file alone). It
//      may refuse the program (an input error: an unsupported schedule, a
//      size past a limit) but must not report an internal error, and every
//      pass's output must verify and print back identically after a
//      reparse (the pass manager's verify-each and round-trip checks).
//   2. When the pipeline succeeds, the CUDA C is generated (a failure is a
//      bug), and the launch plan, manifest and launcher of the entry
//      function (the plan may refuse the module, as for a call_extern; the
//      launcher is left out past a megabyte of constants).
//   3. When the program is small (every tensor at most kMaxCheckedElements
//      elements, a symbolic dim counted as the interpreter's default 8), the
//      interpreter runs it on deterministic inputs before the pipeline and
//      after each pass, as --check-each does; a pass after which it no
//      longer runs, or gives other results, is a bug.
// Any violation aborts, so that libFuzzer reports the input.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "fusec/Exec/Exec.h"
#include "fusec/IR/Kernel.h"
#include "fusec/Parser/Parser.h"
#include "fusec/Pass/Pass.h"
#include "fusec/Target/CUDA.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace fusec;

namespace {

/// Large enough for every operator's shapes to vary, small enough that a
/// lowered matmul or convolution over such tensors runs in well under a
/// second on the interpreter.
constexpr int64_t kMaxCheckedElements = 1024;
constexpr int64_t kDefaultSymbolicSize = 8;
constexpr int64_t kMaxLauncherConstantBytes = 1 << 20;

bool isSmallType(const Type &type) {
  if (type.isTuple()) {
    for (const Type &field : type.getFields())
      if (!isSmallType(field))
        return false;
    return true;
  }
  int64_t elements = 1;
  for (const Dim &dim : type.getShape()) {
    elements *= dim.isSymbolic() ? kDefaultSymbolicSize : dim.size;
    if (elements > kMaxCheckedElements)
      return false;
  }
  return true;
}

/// Whether the interpreter can run the module quickly: graph functions
/// only (a hand-written kernel's loops can be any length), small tensors.
bool isSmallGraphModule(const Module &module) {
  if (!module.kernels.empty())
    return false;
  bool small = true;
  for (const auto &function : module.functions) {
    for (const auto &param : function->params)
      small = small && isSmallType(param->type);
    function->forEachBinding(
        [&](const Binding &binding) { small = small && isSmallType(binding.result->type); });
  }
  return small;
}

[[noreturn]] void fail(const std::string &what) {
  llvm::errs() << "pipeline fuzzer: " << what << "\n";
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzInput input(data, size);
  llvm::StringRef text = input.text;
  auto module = parseModuleString(text, input.sourceMgr, input.diag, "fuzz.fir");
  if (!module)
    return 0;

  static const char *const kLevels[] = {"O0", "O1", "O2"};
  const char *level = kLevels[size % 3];
  PipelineError pipelineError;
  auto pipeline = parsePassPipeline(getNamedPipeline(level), pipelineError);
  if (!pipeline)
    fail(std::string("-") + level + " does not parse: " + pipelineError.message);

  Instrumentation instrumentation;
  instrumentation.verifyRoundTrip = true;
  EquivalenceCheck check;
  const Function *entry = findEntryFunction(*module);
  if (entry && isSmallGraphModule(*module)) {
    std::string error;
    std::vector<TensorData> inputs = makeRandomInputs(*entry, /*seed=*/0, {}, error);
    // A program that cannot run on random inputs (an index out of range)
    // is still compiled, but not compared.
    if (error.empty() && check.setReference(*module, entry->name, std::move(inputs), error))
      instrumentation.afterPass = [&](const Module &current, const Pass &pass, DiagEngine &) {
        std::string difference, runError;
        if (!check.check(current, difference, runError))
          fail("after pass '" + pass.getName().str() + "' the program no longer runs: " + runError);
        if (!difference.empty())
          fail("pass '" + pass.getName().str() + "' changed the results: " + difference);
        return true;
      };
  }

  RunResult result = pipeline->run(*module, input.diag, instrumentation);
  if (result == RunResult::InternalError)
    fail(std::string("-") + level + " reported an internal error");
  if (result != RunResult::Success)
    return 0;

  std::string source, error;
  if (!cuda::generateCUDA(*module, source, error))
    fail("CUDA C generation failed after -" + std::string(level) + ": " + error);
  // The entry is looked up again: the pipeline rewrote the module.
  // A launch plan may be refused (a call_extern names no routine fusec
  // has; a symbolic dim no input carries), but not crash. The launcher
  // embeds the constants as text: megabytes of them (a sample's weights)
  // take a minute under the sanitizers, and are left out.
  cuda::LaunchPlan plan;
  const Function *lowered = findEntryFunction(*module);
  if (lowered && cuda::buildLaunchPlan(*module, *lowered, plan, error)) {
    cuda::writeManifest(plan, "sm_90");
    int64_t constantBytes = 0;
    for (const TensorData &constant : plan.constants)
      constantBytes += constant.getNumElements() * dtypeBytes(constant.getDType());
    if (constantBytes <= kMaxLauncherConstantBytes)
      cuda::writeLauncher(plan, "fuzz.h", "");
  }
  return 0;
}
