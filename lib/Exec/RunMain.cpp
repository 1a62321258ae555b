//===- RunMain.cpp - The fusec-run command line ---------------------------===//
//
// `fusec-run FILE.fir [--inputs=a.npy,b.npy | --random-inputs --seed=N]
//  [--dims=n=64] [--outputs=DIR] [--counters=FILE.json] [--print]
//  [--device=cuda [--bench] [--expect=DIR | --unchecked] | --device=emulator]`:
// parses the module (any pipeline stage), runs the entry function on the
// CPU reference interpreter and writes what was asked. With --device=cuda
// the module (lowered) also runs on the GPU through the launcher engine;
// its results must match the interpreter's, and are the ones written.
// --device=emulator runs the same CUDA C and engine on the CPU (fusec's
// CUDA emulator, twice: threads in order with late cp.async copies, then in
// reverse with early ones); each run must match the interpreter.
// Exit codes as fusec: 1 bad input (including run-time errors and a GPU
// result that differs), 2 usage error.
//
//===----------------------------------------------------------------------===//
#include "fusec/Exec/Exec.h"
#include "fusec/Parser/Parser.h"
#include "fusec/Support/FileIO.h"
#include "fusec/Target/CUDA.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <functional>

using namespace fusec;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory runCategory("fusec-run options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .fir file, or ->"),
                               cl::cat(runCategory));
cl::opt<std::string> entry("entry", cl::desc("Function to run (default @main)"),
                           cl::cat(runCategory));
cl::list<std::string> inputs("inputs", cl::desc("One .npy per parameter, in order"),
                             cl::CommaSeparated, cl::cat(runCategory));
cl::opt<bool> randomInputs("random-inputs", cl::desc("Deterministic random inputs"),
                           cl::cat(runCategory));
cl::opt<unsigned> seed("seed", cl::desc("Seed of --random-inputs"), cl::init(0),
                       cl::cat(runCategory));
cl::list<std::string> dims("dims", cl::desc("Sizes of symbolic dims for --random-inputs, "
                                            "e.g. n=64,m=8 (default 8)"),
                           cl::CommaSeparated, cl::cat(runCategory));
cl::opt<std::string> outputs("outputs", cl::desc("Write out0.npy, out1.npy, ... into DIR"),
                             cl::value_desc("DIR"), cl::cat(runCategory));
cl::opt<std::string> countersFile("counters", cl::desc("Write the counters as JSON (- for stdout)"),
                                  cl::value_desc("FILE.json"), cl::cat(runCategory));
cl::opt<bool> printOutputs("print", cl::desc("Print the results to stdout"),
                           cl::cat(runCategory));
cl::opt<std::string> device("device", cl::desc("cpu (default), cuda or emulator"), cl::init("cpu"),
                            cl::cat(runCategory));
cl::opt<bool> bench("bench", cl::desc("With --device=cuda: time the model with CUDA events"),
                    cl::cat(runCategory));
cl::opt<int> benchRuns("bench-runs", cl::desc("Timed runs of --bench (median reported)"),
                       cl::init(100), cl::cat(runCategory));
cl::opt<std::string> expectDir("expect",
                              cl::desc("With --device=cuda: compare with DIR/out0.npy, ... "
                                       "(an earlier --outputs) instead of running the "
                                       "interpreter"),
                              cl::value_desc("DIR"), cl::cat(runCategory));
cl::opt<bool> unchecked("unchecked",
                        cl::desc("With --device=cuda: no reference, no comparison (a model "
                                 "too large for the interpreter; its --outputs can be a later "
                                 "run's --expect)"),
                        cl::cat(runCategory));
cl::opt<std::string> cudaPath("cuda-path", cl::desc("CUDA installation for NVRTC"),
                              cl::value_desc("DIR"), cl::cat(runCategory));
cl::opt<unsigned> threads("threads",
                          cl::desc("Threads that run large stages and lowered launches (default 0: "
                                   "one per core); results and counters do not depend on it"),
                          cl::init(0), cl::cat(runCategory));
/// How a GPU's (or the emulator's) results are compared with the
/// interpreter's: relative to the output's magnitude, and no more tightly
/// than the module's least precise float type allows (CompareOptions).
CompareOptions deviceComparison(const Module &module) {
  CompareOptions options;
  options.relativeToOutput = true;
  auto consider = [&](DType dtype) {
    if (dtype == DType::bf16 || (dtype == DType::f16 && options.precision != DType::bf16))
      options.precision = dtype;
  };
  // A value rounded to f16 inside an expression (`f32(f16(...))`, an
  // astype pair fused into one kernel) counts as much as an f16 buffer: a
  // one-ulp difference before the rounding can move it by one f16 ulp.
  std::function<void(const KExpr &)> considerExpr = [&](const KExpr &expr) {
    consider(expr.dtype);
    for (const KExprPtr &arg : expr.args)
      if (arg)
        considerExpr(*arg);
  };
  std::function<void(const LStmt &)> considerStmt = [&](const LStmt &stmt) {
    for (const KExprPtr *expr : {&stmt.extent, &stmt.cond, &stmt.value})
      if (*expr)
        considerExpr(**expr);
    for (const auto *exprs : {&stmt.indices, &stmt.operands})
      for (const KExprPtr &expr : *exprs)
        if (expr)
          considerExpr(*expr);
    for (const auto *stmts : {&stmt.body, &stmt.elseBody})
      for (const LStmt &child : *stmts)
        considerStmt(child);
  };
  for (const auto &kernel : module.kernels) {
    for (const auto *buffers : {&kernel->inputs, &kernel->outputs, &kernel->internals})
      for (const KBuffer &buffer : *buffers)
        consider(buffer.type.getDType());
    for (const KStage &stage : kernel->stages)
      if (stage.body)
        considerExpr(*stage.body);
    for (const LLaunch &launch : kernel->launches) {
      for (const KBuffer &buffer : launch.buffers)
        consider(buffer.type.getDType());
      for (const LStmt &stmt : launch.body)
        considerStmt(stmt);
    }
  }
  return options;
}

} // namespace

static int fail(int code, const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "fusec-run") << message << "\n";
  return code;
}

static void printTensor(llvm::raw_ostream &os, const std::string &name,
                        const TensorData &data) {
  Shape shape;
  for (int64_t dim : data.getShape())
    shape.push_back(Dim::of(dim));
  os << name << ": " << Type::tensor(data.getDType(), shape).str() << " = [";
  int64_t shown = std::min<int64_t>(data.getNumElements(), 64);
  for (int64_t i = 0; i < shown; ++i)
    os << (i ? ", " : "")
       << (data.getDType() == DType::i64 ? std::to_string(data.getInt(i)) // beyond 2^53
                                         : formatScalar(data.get(i), data.getDType()));
  if (shown < data.getNumElements())
    os << ", ... (" << data.getNumElements() << " elements)";
  os << "]\n";
}

int fusec::runMain(int argc, char **argv) {
  cl::HideUnrelatedOptions(runCategory);
  std::string parseErrors;
  llvm::raw_string_ostream errorStream(parseErrors);
  if (!cl::ParseCommandLineOptions(argc, argv, "fusec-run: the fusec reference interpreter\n",
                                   &errorStream)) {
    llvm::errs() << errorStream.str();
    return 2;
  }
  if (inputFile.empty())
    return fail(2, "no input file; give a .fir file, or - to read stdin");
  // cl::opt cannot tell `--outputs=` from no --outputs at all, so an empty
  // value would silently mean the default.
  const RequiredValue needValues[] = {
      {&entry, "a function name"},
      {&outputs, "a directory"},
      {&countersFile, "a file name, or - for stdout"},
      {&expectDir, "a directory"},
      {&cudaPath, "a directory"}};
  if (std::string empty = findEmptyFlagValue(needValues); !empty.empty())
    return fail(2, empty);
  if (device != "cpu" && device != "cuda" && device != "emulator")
    return fail(2, "--device must be cpu, cuda or emulator");
  if (bench && device != "cuda")
    return fail(2, "--bench times the GPU; add --device=cuda");
  if (unchecked && (device != "cuda" || !expectDir.empty() || !countersFile.empty()))
    return fail(2, "--unchecked needs --device=cuda, and no --expect or --counters");
  if (benchRuns < 1)
    return fail(2, "--bench-runs must be at least 1");
  setInterpreterThreads(threads);
  // `--inputs=` (an empty list, as a script writes it for a function
  // without parameters) names no files.
  std::vector<std::string> inputFiles(inputs.begin(), inputs.end());
  if (inputFiles.size() == 1 && inputFiles[0].empty())
    inputFiles.clear();
  if (randomInputs && inputs.getNumOccurrences())
    return fail(2, "give exactly one of --inputs and --random-inputs");
  if (dims.getNumOccurrences() && !randomInputs)
    return fail(2, "--dims sizes the symbolic dims of --random-inputs; with --inputs the "
                   "arrays' shapes give them");
  std::map<std::string, int64_t> dimSizes;
  for (llvm::StringRef entryText : dims) {
    auto [name, value] = entryText.split('=');
    int64_t size;
    if (name.empty() || value.getAsInteger(10, size) || size < 0)
      return fail(2, "--dims entries look like n=64, not '" + entryText + "'");
    if (size > kMaxDimSize)
      return fail(2, "--dims " + entryText + ": a dim is at most 2^40");
    if (!dimSizes.emplace(name.str(), size).second)
      return fail(2, "--dims gives '" + name + "' twice");
  }

  std::string readError;
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      readFile(inputFile, readError, /*isText=*/true, /*allowStdin=*/true);
  if (!buffer)
    return fail(1, inputFile == "-" ? readError
                                    : "cannot read '" + inputFile + "': " + readError);
  llvm::SourceMgr sourceMgr;
  DiagEngine diag(sourceMgr);
  llvm::StringRef name = inputFile == "-" ? "<stdin>" : llvm::StringRef(inputFile);
  unsigned id = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(buffer->getBuffer(), name), llvm::SMLoc());
  std::string directory = inputFile == "-" ? "." : llvm::sys::path::parent_path(inputFile).str();
  auto module = parseModule(sourceMgr, id, diag, directory.empty() ? "." : directory);
  if (!module)
    return 1;
  if (llvm::StringRef(entry).startswith("@"))
    entry = entry.substr(1); // `--entry=@main` names it as the IR does
  const Function *function = findEntryFunction(*module, entry);
  if (!function && entry.empty()) {
    diag.error(module->loc, "the module has no entry function");
    return 1;
  }
  if (!function)
    return fail(1, "no function '@" + entry + "' in the module");

  std::vector<TensorData> arguments;
  // A tuple parameter takes one input per field, flattened in order.
  std::vector<std::pair<std::string, Type>> flat = flatInputs(*function);
  if (!randomInputs && inputFiles.empty() && !flat.empty())
    return fail(2, "@" + function->name + " takes " + std::to_string(flat.size()) +
                       " inputs: give --inputs=a.npy,... or --random-inputs");
  if (randomInputs) {
    for (const auto &entry : dimSizes) {
      const std::string &dimName = entry.first;
      if (!llvm::any_of(flat, [&](const auto &input) {
            return llvm::any_of(input.second.getShape(),
                                [&](const Dim &dim) { return dim.symbol == dimName; });
          }))
        // A warning, not an error: a script may size `n` for every model it runs.
        llvm::WithColor::warning(llvm::errs(), "fusec-run")
            << "--dims " << dimName << "=" << entry.second << ": no input of @"
            << function->name << " has a dim named '" << dimName << "'\n";
    }
    std::string error;
    arguments = makeRandomInputs(*function, seed, dimSizes, error);
    if (!error.empty())
      return fail(1, error);
  } else {
    std::string error;
    if (!readInputFiles(*function, inputFiles, arguments, error))
      return fail(1, error);
  }

  Interpreter interpreter(*module);
  std::vector<TensorData> results;
  std::string error;
  if (unchecked) {
    // The GPU's results are the only ones.
  } else if (!expectDir.empty()) {
    // Results computed earlier (the interpreter on a cheaper equivalent
    // form): large models on the GPU need not wait for the interpreter.
    if (device != "cuda" || !countersFile.empty())
      return fail(2, "--expect needs --device=cuda and no --counters");
    for (size_t i = 0;; ++i) {
      llvm::SmallString<256> path(expectDir);
      llvm::sys::path::append(path, "out" + std::to_string(i) + ".npy");
      if (!llvm::sys::fs::exists(path))
        break;
      std::shared_ptr<TensorData> data = readNpyFile(path, error);
      if (!data)
        return fail(1, error);
      results.push_back(*data);
    }
    if (results.empty())
      return fail(1, "--expect: no out0.npy in '" + expectDir + "'");
  } else if (!interpreter.run(function->name, arguments, results, error)) {
    return fail(1, error);
  }
  if (device == "emulator") {
    cuda::EmulatorOptions options;
    options.cudaPath = cudaPath;
    cuda::EmulatorResult emulated;
    if (!cuda::runOnEmulator(*module, *function, arguments, options, emulated, error))
      return fail(1, "--device=emulator: " + error);
    for (size_t v = 0; v < emulated.outputs.size(); ++v) {
      std::string difference =
          compareResults(results, emulated.outputs[v], deviceComparison(*module));
      if (!difference.empty())
        return fail(1, "the emulated GPU (" + cuda::describeEmulatorVariant(options.variants[v]) +
                           ") and the interpreter disagree: " + difference);
    }
    llvm::errs() << "fusec-run: emulator: " << emulated.launches << " kernel launch(es)"
                 << (emulated.libraryCalls
                         ? ", " + std::to_string(emulated.libraryCalls) + " library call(s)"
                         : std::string())
                 << ", results match the interpreter in both thread orders\n";
    results = std::move(emulated.outputs.back());
  }
  if (device == "cuda") {
    cuda::DeviceRunOptions options;
    options.cudaPath = cudaPath;
    options.bench = bench;
    options.runs = benchRuns;
    cuda::DeviceRunResult onDevice;
    if (!cuda::runOnDevice(*module, *function, arguments, options, onDevice, error))
      return fail(1, "--device=cuda: " + error);
    if (unchecked) {
      llvm::errs() << "fusec-run: " << onDevice.deviceName << " (" << onDevice.arch
                   << "): results not checked (--unchecked)\n";
    } else {
      std::string difference = compareResults(results, onDevice.outputs, deviceComparison(*module));
      if (!difference.empty())
        return fail(1, "the GPU (" + onDevice.deviceName + ", " + onDevice.arch + ") and " +
                           (expectDir.empty() ? "the interpreter" : "'" + expectDir + "'") +
                           " disagree: " + difference);
      llvm::errs() << "fusec-run: " << onDevice.deviceName << " (" << onDevice.arch
                   << "): results match "
                   << (expectDir.empty() ? "the interpreter" : "'" + expectDir + "'") << "\n";
    }
    if (bench) {
      std::vector<double> times = onDevice.timesMs;
      std::sort(times.begin(), times.end());
      llvm::outs() << llvm::format("bench: %s on %s: median %.4f ms, min %.4f ms, max %.4f ms "
                                   "over %zu runs\n",
                                   function->name.c_str(), onDevice.arch.c_str(),
                                   times[times.size() / 2], times.front(), times.back(),
                                   times.size());
    }
    results = std::move(onDevice.outputs);
  }
  if (printOutputs)
    for (size_t i = 0; i < results.size(); ++i)
      printTensor(llvm::outs(), "out" + std::to_string(i), results[i]);
  if (!outputs.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputs))
      return fail(1, "cannot create '" + outputs + "': " + ec.message());
    for (size_t i = 0; i < results.size(); ++i) {
      llvm::SmallString<256> path(outputs);
      llvm::sys::path::append(path, "out" + std::to_string(i) + ".npy");
      std::string problem = writeNpyFile(path, results[i]);
      if (!problem.empty())
        return fail(1, problem);
    }
  }
  if (!countersFile.empty()) {
    std::string json = interpreter.getCounters().toJSON();
    if (countersFile == "-") {
      llvm::outs() << json;
    } else {
      if (std::string problem = writeFile(countersFile, json); !problem.empty())
        return fail(1, problem);
    }
  }
  return 0;
}
