//===- Driver.cpp - The fusec command-line driver -------------------------===//
//
// `driverMain` reads top to bottom like MLIR's performActions:
//   1. parse the command line (usage errors exit 2);
//   2. decide the pipeline: --passes, else -O<n>, else by output kind
//      (FIR output runs no pass; CUDA/PTX/cubin output runs -O2);
//   3. read the input and split it on `// -----` with --split-input-file;
//   4. per chunk: parse and verify, run the pipeline with instrumentation;
//   5. write the output.
//
//===----------------------------------------------------------------------===//
#include "Backend.h"
#include "fusec/Driver/Driver.h"
#include "fusec/Exec/Exec.h"
#include "fusec/Import/Import.h"
#include "fusec/Parser/Parser.h"
#include "fusec/Pass/Pass.h"
#include "fusec/Printer/Printer.h"
#include "fusec/Support/FileIO.h"
#include "fusec/Target/CUDA.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <set>

using namespace fusec;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory fusecCategory("fusec options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .fir file, .onnx model, or - for stdin>"),
                               cl::cat(fusecCategory));
cl::opt<std::string> outputFile("o", cl::desc("Output file (- for stdout); the kind follows the extension"),
                                cl::value_desc("file"), cl::init("-"), cl::cat(fusecCategory));
cl::opt<std::string> emitKind("emit", cl::desc("What to write: fir, cuda, ptx or cubin"),
                              cl::value_desc("kind"), cl::cat(fusecCategory));
cl::opt<bool> optO0("O0", cl::desc("Pipeline -O0: one kernel per op, no fusion"), cl::cat(fusecCategory));
cl::opt<bool> optO1("O1", cl::desc("Pipeline -O1: TVM's fusion decisions"), cl::cat(fusecCategory));
cl::opt<bool> optO2("O2", cl::desc("Pipeline -O2: library patterns and cost-aware fusion"), cl::cat(fusecCategory));
cl::opt<std::string> passPipeline("passes", cl::desc("Explicit pass pipeline, e.g. 'dce' (empty: no pass)"),
                                  cl::value_desc("pipeline"), cl::cat(fusecCategory));
cl::alias passPipelineAlias("pass-pipeline", cl::desc("Alias for --passes"), cl::aliasopt(passPipeline));
cl::opt<std::string> arch("arch", cl::desc("CUDA target architecture"), cl::init("sm_90"),
                          cl::cat(fusecCategory));
cl::opt<std::string> costModel("cost-model",
                              cl::desc("-O2's scheduling cost model: roofline, or none for TVM's "
                                       "schedules"),
                              cl::init("roofline"), cl::cat(fusecCategory));
cl::opt<std::string> targetDesc("target",
                                cl::desc("-O2's cost-model GPU: sm_75, sm_80, sm_86, sm_89, sm_90, h200 "
                                         "or a JSON file (default: the --arch's)"),
                                cl::value_desc("target"), cl::cat(fusecCategory));
cl::opt<bool> printBeforeAll("print-before-all", cl::desc("Print the IR before every pass"), cl::cat(fusecCategory));
cl::opt<bool> printAfterAll("print-after-all", cl::desc("Print the IR after every pass"), cl::cat(fusecCategory));
cl::list<std::string> printBefore("print-before", cl::desc("Print the IR before pass P"), cl::value_desc("P"),
                                  cl::CommaSeparated, cl::cat(fusecCategory));
cl::list<std::string> printAfter("print-after", cl::desc("Print the IR after pass P"), cl::value_desc("P"),
                                 cl::CommaSeparated, cl::cat(fusecCategory));
cl::opt<bool> printChanged("print-changed", cl::desc("Print the IR after each pass that changed it"),
                           cl::cat(fusecCategory));
cl::opt<std::string> dumpDir("dump-dir", cl::desc("Write the IR after each pass to DIR/NN_<pass>.fir"),
                             cl::value_desc("DIR"), cl::cat(fusecCategory));
cl::opt<bool> dumpPassPipeline("dump-pass-pipeline", cl::desc("Print the pipeline that will run (to stderr)"),
                               cl::cat(fusecCategory));
cl::opt<bool> verifyEach("verify-each", cl::desc("Run the verifier after every pass"), cl::init(true),
                         cl::cat(fusecCategory));
cl::opt<bool> verifyRoundTrip("verify-roundtrip", cl::desc("After every pass, check that the IR prints, parses "
                              "back and prints identically"), cl::Hidden, cl::cat(fusecCategory));
cl::opt<bool> timePasses("time-passes", cl::desc("Time each pass (llvm::TimerGroup report on stderr)"),
                         cl::cat(fusecCategory));
cl::opt<std::string> logLevel("log-level", cl::desc("Log level: trace, debug, info, warn, error, off"),
                              cl::init("warn"), cl::cat(fusecCategory));
cl::opt<std::string> debugOnly("debug-only", cl::desc("Debug output of these passes (comma-separated)"),
                               cl::value_desc("pass,..."), cl::cat(fusecCategory));
cl::opt<bool> splitInputFile("split-input-file", cl::desc("Process each chunk between '// -----' lines "
                             "independently"), cl::cat(fusecCategory));
cl::opt<bool> checkEach("check-each", cl::desc("Run the program on random inputs before and after "
                         "every pass; stop at the first pass that changes the results"),
                         cl::cat(fusecCategory));
cl::list<std::string> checkInputs("check-inputs", cl::desc("With --check-each: run on these inputs "
                                  "instead of random ones (one .npy per parameter, in order)"),
                                  cl::value_desc("a.npy,..."), cl::CommaSeparated,
                                  cl::cat(fusecCategory));
cl::opt<bool> remarks("remarks", cl::desc("Print fusion decisions with their reasons (to stderr)"),
                      cl::cat(fusecCategory));
cl::opt<std::string> fusionReport("fusion-report", cl::desc("Write the fusion decisions as JSON"),
                                  cl::value_desc("FILE.json"), cl::cat(fusecCategory));
cl::opt<std::string> cudaPath("cuda-path", cl::desc("CUDA installation for NVRTC and its headers "
                                                   "(default: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda)"),
                               cl::value_desc("DIR"), cl::cat(fusecCategory));
cl::opt<std::string> launcherFile("launcher", cl::desc("Also write the host launcher FILE.cpp, its "
                                                       "FILE.h and <module>.manifest.json"),
                                   cl::value_desc("FILE.cpp"), cl::cat(fusecCategory));
cl::list<std::string> dimSizes("dim", cl::desc("Give a named dim of an ONNX model's inputs a size "
                                               "(repeatable, or comma-separated)"),
                                cl::value_desc("NAME=SIZE"), cl::CommaSeparated,
                                cl::cat(fusecCategory));
cl::opt<bool> listPasses("list-passes", cl::desc("List the registered passes and exit"), cl::cat(fusecCategory));
cl::opt<bool> listONNXOps("list-onnx-ops", cl::desc("List the ONNX operators the importer maps and exit"), cl::cat(fusecCategory));
} // namespace

static int usageError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "fusec") << message << "\n";
  return ExitUsageError;
}

static int inputError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "fusec") << message << "\n";
  return ExitInputError;
}

/// The output kind from --emit or the -o extension; "" after an error.
static std::string decideEmitKind() {
  if (!emitKind.empty()) {
    if (emitKind != "fir" && emitKind != "cuda" && emitKind != "ptx" &&
        emitKind != "cubin") {
      usageError("--emit must be fir, cuda, ptx or cubin, not '" + emitKind + "'");
      return "";
    }
    return emitKind;
  }
  if (outputFile == "-")
    return "fir";
  llvm::StringRef extension = llvm::sys::path::extension(outputFile);
  if (extension == ".fir" || extension.empty()) // `-o /dev/null` is FIR
    return "fir";
  if (extension == ".cu")
    return "cuda";
  if (extension == ".ptx")
    return "ptx";
  if (extension == ".cubin")
    return "cubin";
  usageError("cannot tell the output kind of '" + outputFile +
             "' from its extension; use --emit=fir|cuda|ptx|cubin");
  return "";
}

/// The shipped target description the cost model uses for `arch`: its
/// own, else the newest one at or below it (sm_87 uses sm_86's, sm_100
/// sm_90's; an older one than sm_75 uses sm_75's), said in a warning.
static std::string targetForArch(const std::string &arch) {
  static const int shipped[] = {75, 80, 86, 89, 90};
  int number = std::atoi(arch.c_str() + 3), chosen = shipped[0];
  for (int candidate : shipped)
    if (candidate <= number)
      chosen = candidate;
  std::string target = "sm_" + std::to_string(chosen);
  if (target != arch)
    llvm::WithColor::warning(llvm::errs(), "fusec")
        << "--arch=" << arch << ": no target description ships for it; the cost model "
        << "uses " << target << "'s (--target=FILE gives one)\n";
  return target;
}

/// The pipeline text to run, and a name for it in messages.
static bool decidePipeline(const std::string &emit, std::string &text,
                           std::string &description) {
  int levels = int(optO0) + int(optO1) + int(optO2);
  if (levels > 1) {
    usageError("only one of -O0, -O1 and -O2 may be given");
    return false;
  }
  if (costModel != "roofline" && costModel != "none") {
    usageError("--cost-model must be roofline or none, not '" + costModel + "'");
    return false;
  }
  if ((costModel.getNumOccurrences() || targetDesc.getNumOccurrences()) &&
      (optO0 || optO1 || passPipeline.getNumOccurrences())) {
    usageError("--cost-model and --target apply to -O2 (with --passes, set "
               "schedule{cost-model=...,target=...})");
    return false;
  }
  if (passPipeline.getNumOccurrences()) {
    if (levels) {
      usageError("--passes cannot be combined with -O0/-O1/-O2");
      return false;
    }
    text = passPipeline;
    description = "--passes";
    return true;
  }
  std::string level = optO0 ? "O0" : optO1 ? "O1" : optO2 ? "O2" : "";
  if (level.empty() && emit != "fir")
    level = "O2";
  if (level.empty() && (costModel.getNumOccurrences() || targetDesc.getNumOccurrences())) {
    usageError("--cost-model and --target apply to -O2, and FIR output runs no pipeline "
               "unless one is given");
    return false;
  }
  if (!level.empty()) {
    text = getNamedPipeline(level, costModel,
                            targetDesc.getNumOccurrences() ? std::string(targetDesc)
                                                           : targetForArch(arch),
                            cuda::hasTensorCoreMma(arch));
    description = "-" + level;
  }
  return true;
}

/// Parses pipeline text; reports errors with a caret under the column.
static std::unique_ptr<PassManager> buildPipeline(const std::string &text,
                                                  const std::string &description,
                                                  int &exitCode) {
  PipelineError error;
  auto manager = parsePassPipeline(text, error);
  if (manager)
    return manager;
  bool isNamed = description != "--passes";
  llvm::SourceMgr sourceMgr;
  unsigned id = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, description), llvm::SMLoc());
  const char *start = sourceMgr.getMemoryBuffer(id)->getBufferStart();
  std::string message = error.message;
  // Named pipelines quote every value they are given (--target paths), so
  // only a missing pass can stop one from parsing.
  if (isNamed)
    message = "pipeline " + description + " cannot run in this build of fusec: " + message +
              (llvm::StringRef(message).startswith("unknown pass")
                   ? " (this build of fusec does not have that pass yet)"
                   : "");
  sourceMgr.PrintMessage(llvm::errs(),
                         llvm::SMLoc::getFromPointer(start + error.column),
                         llvm::SourceMgr::DK_Error, message);
  exitCode = isNamed ? ExitInputError : ExitUsageError;
  return nullptr;
}

/// Splits on lines that are exactly `// -----`, padding each chunk with
/// newlines so that diagnostics keep the line numbers of the whole file.
static std::vector<std::string> splitChunks(llvm::StringRef buffer) {
  std::vector<std::string> chunks;
  std::string current;
  unsigned linesBefore = 0, linesInChunk = 0;
  llvm::SmallVector<llvm::StringRef, 64> lines;
  buffer.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (line.rtrim() == "// -----") {
      chunks.push_back(std::string(linesBefore, '\n') + current);
      linesBefore += linesInChunk + 1;
      current.clear();
      linesInChunk = 0;
      continue;
    }
    current += line.str() + "\n";
    ++linesInChunk;
  }
  chunks.push_back(std::string(linesBefore, '\n') + current);
  return chunks;
}

static Instrumentation makeInstrumentation() {
  Instrumentation inst;
  inst.printBeforeAll = printBeforeAll;
  inst.printAfterAll = printAfterAll;
  inst.printChanged = printChanged;
  inst.printBefore.insert(printBefore.begin(), printBefore.end());
  inst.printAfter.insert(printAfter.begin(), printAfter.end());
  inst.dumpDir = dumpDir;
  inst.verifyEach = verifyEach;
  inst.verifyRoundTrip = verifyRoundTrip;
  inst.timePasses = timePasses;
  if (remarks)
    inst.remarks = &llvm::errs();
  return inst;
}

/// Parses, transforms and prints one chunk. Returns an exit code.
static int processModule(Module &module, DiagEngine &diag, const PassManager &pipeline,
                         Instrumentation inst, FusionReport *report, std::string &moduleName,
                         const std::string &emit, std::string &output,
                         std::vector<ExtraStatistic> &backendStats);

static int processChunk(const std::string &text, llvm::StringRef bufferName,
                        const PassManager &pipeline, Instrumentation inst,
                        FusionReport *report, std::string &moduleName,
                        const std::string &emit, std::string &output,
                        std::vector<ExtraStatistic> &backendStats) {
  llvm::SourceMgr sourceMgr;
  DiagEngine diag(sourceMgr);
  unsigned id = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  std::string directory = bufferName == "<stdin>"
                              ? std::string(".")
                              : llvm::sys::path::parent_path(bufferName).str();
  auto module = parseModule(sourceMgr, id, diag, directory.empty() ? "." : directory);
  if (!module)
    return ExitInputError;
  return processModule(*module, diag, pipeline, inst, report, moduleName, emit, output,
                       backendStats);
}

/// The directory the `-o` text is read from: the file's, or the working
/// directory for stdout.
static std::string outputDirectory() {
  std::string directory = outputFile == "-" ? "" : llvm::sys::path::parent_path(outputFile).str();
  return directory.empty() ? "." : directory;
}

/// Imports an ONNX model and compiles it; the weights of a `.fir` output
/// are written beside it (`<stem>.weights/*.npy`), or inlined on stdout.
static int processONNX(const PassManager &pipeline, Instrumentation inst, FusionReport *report,
                       std::string &moduleName, const std::string &emit, std::string &output,
                       std::vector<ExtraStatistic> &backendStats) {
  ONNXImportOptions options;
  for (llvm::StringRef entry : dimSizes) {
    auto [name, size] = entry.split('=');
    int64_t value = -1;
    if (name.empty() || size.getAsInteger(10, value) || value < 0 || value > kMaxDimSize)
      return usageError("--dim takes NAME=SIZE with a size in [0, 2^40], not '" + entry + "'");
    if (!options.dimSizes.emplace(name.str(), value).second)
      return usageError("--dim gives '" + name + "' twice");
  }
  bool firFile = emit == "fir" && outputFile != "-" && outputFile != "/dev/null";
  if (firFile)
    options.weightsDirectory = llvm::sys::path::stem(outputFile).str() + ".weights";
  else if (emit == "fir")
    options.inlineElements = std::numeric_limits<int64_t>::max();
  std::string error;
  std::vector<std::string> warnings;
  std::unique_ptr<Module> module = importONNX(inputFile, options, error, &warnings);
  if (!module)
    return inputError(error);
  for (const std::string &warning : warnings)
    llvm::WithColor::warning(llvm::errs(), "fusec") << warning << "\n";
  // The weights' paths are relative to the output's directory, where they
  // will be written.
  std::string directory = outputDirectory();
  if (firFile)
    module->sourceDirectory = directory;
  llvm::SourceMgr sourceMgr;
  DiagEngine diag(sourceMgr);
  int code = processModule(*module, diag, pipeline, inst, report, moduleName, emit, output,
                           backendStats);
  if (code == ExitSuccess && firFile) {
    std::string problem = writeImportedWeights(*module, directory);
    if (!problem.empty())
      return inputError(problem);
  }
  return code;
}

/// Spec §8: every binding of the input that no pass grouped, whatever the
/// passes (at -O0 all of them). Names are per function and per module, so
/// only the groups and dead members this module's run added (from
/// `firstGroup`, `firstDead` on) take its bindings, a group its own
/// function's.
static void noteUnfused(FusionReport &report,
                        const std::vector<std::pair<std::string, std::string>> &inputBindings,
                        size_t firstGroup, size_t firstDead) {
  std::set<std::pair<std::string, std::string>> taken(report.dead.begin() + long(firstDead),
                                                      report.dead.end());
  for (size_t k = firstGroup; k < report.groups.size(); ++k)
    for (const std::string &member : report.groups[k].members)
      taken.insert({report.groups[k].caller, member});
  for (const auto &binding : inputBindings)
    if (!taken.count(binding))
      report.unfused.push_back(binding);
}

static int processModule(Module &moduleRef, DiagEngine &diag, const PassManager &pipeline,
                         Instrumentation inst, FusionReport *report, std::string &moduleName,
                         const std::string &emit, std::string &output,
                         std::vector<ExtraStatistic> &backendStats) {
  Module *module = &moduleRef;
  if (!module->name.empty())
    moduleName = module->name;
  std::vector<std::pair<std::string, std::string>> inputBindings;
  size_t firstGroup = report ? report->groups.size() : 0;
  size_t firstDead = report ? report->dead.size() : 0;
  if (report)
    for (const auto &function : module->functions)
      function->forEachBinding([&](const Binding &binding) {
        inputBindings.push_back({function->name, "%" + binding.getResult()->name});
      });
  EquivalenceCheck check;
  if (checkEach) {
    // The reference results of the input program, on deterministic inputs.
    const Function *entry = findEntryFunction(*module);
    if (!entry) {
      diag.error(module->loc, "--check-each: the module has no entry function to run");
      return ExitInputError;
    }
    std::string error;
    // Given inputs for what random ones cannot exercise: indices into a
    // table of two rows, integer divisors.
    std::vector<TensorData> inputs;
    if (checkInputs.empty())
      inputs = makeRandomInputs(*entry, /*seed=*/0, {}, error);
    else
      readInputFiles(*entry, std::vector<std::string>(checkInputs.begin(), checkInputs.end()),
                     inputs, error);
    if (!error.empty() || !check.setReference(*module, entry->name, std::move(inputs), error)) {
      diag.error(llvm::SMLoc(), "--check-each: cannot run @" + entry->name +
                                    " before the first pass: " + error +
                                    (checkInputs.empty()
                                         ? " (on random inputs; --check-inputs=a.npy,... "
                                           "gives others)"
                                         : ""));
      return ExitInputError;
    }
    std::string entryName = entry->name;
    inst.afterPass = [&check, entryName](const Module &current, const Pass &pass, DiagEngine &d) {
      std::string difference, error;
      if (!check.check(current, difference, error)) {
        d.error(llvm::SMLoc(), "--check-each: after pass '" + pass.getName() +
                                   "' the program no longer runs: " + error);
        return false;
      }
      if (!difference.empty()) {
        d.error(llvm::SMLoc(), "--check-each: pass '" + pass.getName() +
                                   "' changed the results of @" + entryName + ": " +
                                   difference);
        return false;
      }
      return true;
    };
  }
  RunResult result = pipeline.run(*module, diag, inst, report);
  if (report)
    noteUnfused(*report, inputBindings, firstGroup, firstDead);
  if (result == RunResult::InputError)
    return ExitInputError;
  if (result == RunResult::InternalError)
    return ExitInternalError;
  if (emit != "fir" || !launcherFile.empty()) {
    int code = runBackend(*module, {emit, arch, cudaPath, moduleName, launcherFile}, output,
                          backendStats);
    if (code != ExitSuccess || emit != "fir")
      return code;
  }
  // Relative file<> paths are rebased for the directory the text lands in.
  output += printModuleToString(*module, outputDirectory());
  return ExitSuccess;
}

/// One line per registered pass, then its options indented below it.
static std::string describePasses() {
  std::string text;
  for (const PassInfo &info : getRegisteredPasses()) {
    if (info.testOnly)
      continue;
    text += "  " + info.name + " - " + info.summary + "\n";
    std::unique_ptr<Pass> pass = info.create();
    for (const Pass::Option &option : pass->getOptions())
      text += "      " + option.name + "=<" +
              (option.kind == Pass::OptionKind::Int    ? "int"
               : option.kind == Pass::OptionKind::Bool ? "bool"
               : !option.choices.empty()               ? llvm::join(option.choices, "|")
                                                       : "string") +
              "> (default " + option.defaultValue + ") - " +
              option.description + "\n";
  }
  return text;
}

/// The spec §8 report of one module.
static nlohmann::ordered_json fusionReportJSON(const FusionReport &report,
                                               const std::string &moduleName,
                                               const PassManager &pipeline) {
  nlohmann::ordered_json root;
  root["module"] = moduleName;
  root["pipeline"] = nlohmann::ordered_json::array();
  for (const auto &pass : pipeline.getPasses())
    root["pipeline"].push_back(pass->getName().str());
  root["groups"] = nlohmann::ordered_json::array();
  for (const FusionReport::Group &group : report.groups) {
    nlohmann::ordered_json entry;
    entry["function"] = group.function;
    entry["caller"] = group.caller; // member names are this function's
    entry["kind"] = group.kind;
    if (!group.pattern.empty()) // a composite has its pattern's name instead
      entry["pattern"] = group.pattern;
    if (!group.composite.empty())
      entry["composite"] = group.composite;
    entry["members"] = group.members;
    if (!group.prologue.empty())
      entry["prologue"] = group.prologue;
    if (!group.epilogue.empty())
      entry["epilogue"] = group.epilogue;
    if (!group.merged.empty())
      entry["merged"] = group.merged;
    root["groups"].push_back(entry);
  }
  // `unfused_by_function` says whose each name is.
  root["unfused"] = nlohmann::ordered_json::array();
  nlohmann::ordered_json byFunction = nlohmann::ordered_json::object();
  for (const auto &[function, name] : report.unfused) {
    root["unfused"].push_back(name);
    byFunction[function].push_back(name);
  }
  root["unfused_by_function"] = byFunction;
  root["dead"] = nlohmann::ordered_json::array();
  nlohmann::ordered_json deadByFunction = nlohmann::ordered_json::object();
  for (const auto &[function, name] : report.dead) {
    root["dead"].push_back(name);
    deadByFunction[function].push_back(name);
  }
  root["dead_by_function"] = deadByFunction;
  root["decisions"] = nlohmann::ordered_json::array();
  for (const FusionReport::Decision &decision : report.decisions) {
    nlohmann::ordered_json entry;
    entry["pass"] = decision.pass;
    entry["function"] = decision.function;
    for (const auto &[key, value] : decision.fields)
      entry[key] = value;
    entry["action"] = decision.action;
    entry["reason"] = decision.reason;
    if (!decision.costs.empty()) {
      nlohmann::ordered_json cost = nlohmann::ordered_json::object();
      for (const auto &[key, value] : decision.costs)
        cost[key] = value;
      entry["cost"] = cost;
    }
    root["decisions"].push_back(entry);
  }
  return root;
}

static void printVersion(llvm::raw_ostream &os) {
  os << "fusec version 0.1.0 (LLVM Support 14, target sm_90 by default)\n";
}

int fusec::driverMain(int argc, char **argv) {
  // LLVM Support registers -stats and -stats-json itself, while parsing the
  // command line; they are described here since --help cannot list them.
  static std::string extraHelp =
      "\nSTATISTICS:\n"
      "  --stats                 - Print the counters of each pass (to stderr)\n"
      "  --stats-json            - With --stats, print them as JSON\n"
      "\nPASSES (for --passes):\n" + describePasses();
  static cl::extrahelp passHelp(extraHelp.c_str());
  cl::HideUnrelatedOptions(fusecCategory);
  cl::SetVersionPrinter(printVersion);
  std::string parseErrors;
  llvm::raw_string_ostream errorStream(parseErrors);
  if (!cl::ParseCommandLineOptions(argc, argv, "fusec: operator-fusion compiler for NVIDIA GPUs\n",
                                   &errorStream)) {
    llvm::errs() << errorStream.str();
    return ExitUsageError;
  }
  if (listPasses) {
    llvm::outs() << describePasses();
    return ExitSuccess;
  }
  if (listONNXOps) {
    for (const std::string &name : supportedONNXOps())
      llvm::outs() << name << "\n";
    return ExitSuccess;
  }
  if (inputFile.empty())
    return usageError("no input file; give a .fir file, an .onnx model, or - to read stdin");
  // cl::opt cannot tell `--emit=` from no --emit at all, so an empty value
  // would silently mean the default. (`--passes=` is meaningful: no pass.)
  const RequiredValue needValues[] = {
      {&outputFile, "a file name, or - for stdout"},
      {&emitKind, "fir, cuda, ptx or cubin"},
      {&targetDesc, "sm_75, sm_80, sm_86, sm_89, sm_90, h200 or a JSON file"},
      {&dumpDir, "a directory"},
      {&fusionReport, "a file name"},
      {&cudaPath, "a directory"},
      {&launcherFile, "a file name ending in .cpp"},
      {&debugOnly, "pass names, comma-separated"}};
  if (std::string empty = findEmptyFlagValue(needValues); !empty.empty())
    return usageError(empty);
  if (!setLogLevel(logLevel))
    return usageError("--log-level must be trace, debug, info, warn, error or off");
  if (!debugOnly.empty()) {
    std::string unknown = setDebugOnly(debugOnly, [](llvm::StringRef type) {
      return type == "cuda" || lookupPassInfo(type); // the backend's, or a pass's
    });
    if (!unknown.empty())
      return usageError("--debug-only: unknown name '" + unknown +
                        "' (a pass name, cuda for the backend, or all)");
  }
  unsigned archNumber = 0;
  if (!llvm::StringRef(arch).startswith("sm_") ||
      !llvm::all_of(llvm::StringRef(arch).drop_front(3), llvm::isDigit) ||
      arch.size() < 5 || llvm::StringRef(arch).drop_front(3).getAsInteger(10, archNumber) ||
      archNumber > 999)
    return usageError("--arch must look like sm_80 or sm_90 (a number up to 999), not '" +
                      arch + "'");
  for (const std::string &name : printBefore)
    if (!lookupPassInfo(name))
      return usageError("--print-before: unknown pass '" + name + "'");
  for (const std::string &name : printAfter)
    if (!lookupPassInfo(name))
      return usageError("--print-after: unknown pass '" + name + "'");

  std::string emit = decideEmitKind();
  if (emit.empty())
    return ExitUsageError;
  std::string pipelineText, description;
  if (!decidePipeline(emit, pipelineText, description))
    return ExitUsageError;
  int exitCode = ExitSuccess;
  auto pipeline = buildPipeline(pipelineText, description, exitCode);
  if (!pipeline)
    return exitCode;
  if (dumpPassPipeline)
    llvm::errs() << pipeline->str() << "\n";
  if (splitInputFile && (emit == "ptx" || emit == "cubin"))
    return usageError("--split-input-file writes FIR or CUDA C, not --emit=" + emit);
  if (!checkInputs.empty() && !checkEach)
    return usageError("--check-inputs gives the inputs of --check-each, which is not set");
  if (!checkInputs.empty() && splitInputFile)
    return usageError("--check-inputs cannot be combined with --split-input-file (the chunks' "
                      "entry functions differ)");
  if (splitInputFile && !launcherFile.empty())
    return usageError("--split-input-file cannot be combined with --launcher");
  if (!launcherFile.empty() && llvm::sys::path::extension(launcherFile) != ".cpp")
    return usageError("--launcher needs a file name ending in .cpp, not '" + launcherFile + "'");

  std::string readError;
  std::unique_ptr<llvm::MemoryBuffer> inputBuffer =
      readFile(inputFile, readError, /*isText=*/true, /*allowStdin=*/true);
  if (!inputBuffer)
    return inputError(inputFile == "-" ? readError
                                       : "cannot read '" + inputFile + "': " + readError);
  llvm::StringRef bufferName = inputFile == "-" ? "<stdin>" : llvm::StringRef(inputFile);
  bool isONNX = llvm::sys::path::extension(inputFile) == ".onnx";
  if (isONNX && splitInputFile)
    return usageError("--split-input-file reads .fir files, not ONNX models");
  if (!isONNX && dimSizes.getNumOccurrences())
    return usageError("--dim sizes the named dims of an ONNX model's inputs; the input is "
                      "not an .onnx model");

  std::vector<std::string> chunks =
      splitInputFile ? splitChunks(inputBuffer->getBuffer())
                     : std::vector<std::string>{inputBuffer->getBuffer().str()};
  std::string output, stem = llvm::sys::path::stem(bufferName).str();
  // One report per module: with --split-input-file, per chunk.
  std::vector<FusionReport> reports(isONNX ? 1 : chunks.size());
  std::vector<std::string> moduleNames(reports.size(), stem);
  bool withReport = !fusionReport.empty();
  std::vector<ExtraStatistic> backendStats;
  if (isONNX) {
    chunks.clear();
    exitCode = processONNX(*pipeline, makeInstrumentation(), withReport ? &reports[0] : nullptr,
                           moduleNames[0], emit, output, backendStats);
  }
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::string chunkOutput;
    Instrumentation inst = makeInstrumentation();
    // Chunks are separate modules: give each its own dump directory.
    if (splitInputFile && !inst.dumpDir.empty())
      inst.dumpDir += "/chunk-" + std::to_string(i);
    int chunkCode =
        processChunk(chunks[i], bufferName, *pipeline, inst, withReport ? &reports[i] : nullptr,
                     moduleNames[i], emit, chunkOutput, backendStats);
    exitCode = std::max(exitCode, chunkCode);
    if (i)
      output += "// -----\n";
    output += chunkOutput;
  }
  // No partial PTX or cubin, and no empty FIR file for a failed input (a
  // later `fusec` would read it as an empty module); --split-input-file
  // still writes the chunks that succeeded.
  if (exitCode != ExitSuccess && (emit != "fir" || !splitInputFile))
    return exitCode;
  if (std::string problem = writeFile(outputFile, output, emit == "cubin"); !problem.empty())
    return inputError(problem);
  if (withReport) {
    // --split-input-file: an array of the chunks' reports, in chunk order.
    nlohmann::ordered_json json = nlohmann::ordered_json::array();
    if (!splitInputFile)
      json = fusionReportJSON(reports.front(), moduleNames.front(), *pipeline);
    else
      for (size_t i = 0; i < reports.size(); ++i)
        json.push_back(fusionReportJSON(reports[i], moduleNames[i], *pipeline));
    if (std::string problem = writeFile(fusionReport, json.dump(2) + "\n"); !problem.empty())
      return inputError(problem);
  }
  if (llvm::AreStatisticsEnabled()) {
    // LLVM 14 registers -stats-json as cl::opt<bool, true> (external storage).
    cl::Option *json = cl::getRegisteredOptions().lookup("stats-json");
    bool asJSON = json && static_cast<cl::opt<bool, true> *>(json)->getValue();
    asJSON ? printStatisticsJSON(llvm::errs(), backendStats)
           : printStatistics(llvm::errs(), backendStats);
  }
  return exitCode;
}
