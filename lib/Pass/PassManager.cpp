//===- PassManager.cpp - Running a pipeline with instrumentation ----------===//
//
// Around each pass, in this order:
//   1. print the IR before it (--print-before-all, --print-before=P);
//   2. run it under its llvm::Timer (--time-passes);
//   3. verify the result (--verify-each, on by default) and, when asked,
//      check that it prints, parses back and prints identically;
//   4. print the IR after it (--print-after-all, --print-after=P, or
//      --print-changed when the text differs) and write --dump-dir files.
// Dump banners are FIR comments, so every dump is itself valid input.
//
//===----------------------------------------------------------------------===//
#include "fusec/Parser/Parser.h"
#include "fusec/Pass/Pass.h"
#include "fusec/Printer/Printer.h"
#include "fusec/Support/FileIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Timer.h"

#include <iomanip>
#include <sstream>

using namespace fusec;

static std::string passTitle(const Pass &pass) {
  const PassInfo *info = lookupPassInfo(pass.getName());
  return info ? info->title : pass.getName().str();
}

static void printDump(llvm::raw_ostream &os, llvm::StringRef when,
                      const Pass &pass, const std::string &moduleText) {
  os << "// -----// IR Dump " << when << " " << passTitle(pass) << " ("
     << pass.getName() << ") //----- //\n"
     << moduleText << "\n";
  os.flush();
}

/// Prints, parses and prints again; the two texts must be equal.
static bool checkRoundTrip(const Module &module, DiagEngine &diag,
                           const Pass &pass) {
  ModuleSnapshot snapshot(module);
  llvm::SourceMgr sourceMgr;
  DiagEngine roundTripDiag(sourceMgr);
  auto reparsed =
      snapshot.restore(sourceMgr, roundTripDiag, "<round-trip after " + pass.getName().str() + ">");
  const std::string &first = snapshot.getText();
  if (!reparsed) {
    diag.error(llvm::SMLoc(), "internal error: the IR printed after pass '" +
                                  pass.getName() + "' does not parse back");
    return false;
  }
  if (printModuleToString(*reparsed) != first) {
    diag.error(llvm::SMLoc(), "internal error: the IR printed after pass '" +
                                  pass.getName() +
                                  "' does not print identically after parsing");
    return false;
  }
  return true;
}

static bool writeDumpFile(const std::string &dir, size_t index,
                          const Pass &pass, const std::string &moduleText,
                          DiagEngine &diag) {
  std::ostringstream name;
  name << std::setw(2) << std::setfill('0') << index << "_"
       << pass.getName().str() << ".fir";
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name.str());
  std::string text = "// IR after pass " + std::to_string(index) + ": " + passTitle(pass) +
                     " (" + pass.getName().str() + ")\n" + moduleText;
  if (std::string problem = writeFile(path, text); !problem.empty()) {
    diag.error(llvm::SMLoc(), problem);
    return false;
  }
  return true;
}

RunResult PassManager::run(Module &module, DiagEngine &diag,
                           const Instrumentation &inst, FusionReport *report) const {
  PassContext context{diag, report, inst.remarks};
  if (!inst.dumpDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(inst.dumpDir)) {
      diag.error(llvm::SMLoc(), "cannot create --dump-dir '" + inst.dumpDir +
                                    "': " + ec.message());
      return RunResult::InputError;
    }
  }
  llvm::TimerGroup timers("fusec", "fusec pass execution timing report");
  std::vector<std::unique_ptr<llvm::Timer>> passTimers;
  llvm::Timer verifierTimer("verifier", "(verifier)", timers);
  RunResult result = RunResult::Success;
  for (size_t index = 0; index < passes.size(); ++index) {
    const Pass &pass = *passes[index];
    std::string name = pass.getName().str();
    bool needsBefore = inst.printChanged || inst.printBeforeAll ||
                       inst.printBefore.count(name);
    // Dumps on a stream are read from the working directory: relative
    // file<> paths are rebased for it (and for the dump directory below).
    std::string before = needsBefore ? printModuleToString(module, ".") : "";
    if (inst.printBeforeAll || inst.printBefore.count(name))
      printDump(*inst.dumpStream, "Before", pass, before);

    passTimers.push_back(std::make_unique<llvm::Timer>(
        name + std::to_string(index), passTitle(pass) + " (" + name + ")",
        timers));
    bool ok;
    {
      llvm::TimeRegion region(inst.timePasses ? passTimers.back().get()
                                              : nullptr);
      ok = const_cast<Pass &>(pass).run(module, context);
    }
    if (!ok) {
      result = context.internalError ? RunResult::InternalError : RunResult::InputError;
      break;
    }
    if (inst.verifyEach) {
      llvm::TimeRegion region(inst.timePasses ? &verifierTimer : nullptr);
      if (!verifyModule(module, diag, "after pass '" + name + "'")) {
        result = RunResult::InternalError;
        break;
      }
    }
    if (inst.verifyRoundTrip && !checkRoundTrip(module, diag, pass)) {
      result = RunResult::InternalError;
      break;
    }
    if (inst.afterPass && !inst.afterPass(module, pass, diag)) {
      result = RunResult::InternalError;
      break;
    }
    bool printAfter = inst.printAfterAll || inst.printAfter.count(name);
    std::string after;
    if (printAfter || inst.printChanged)
      after = printModuleToString(module, ".");
    if (printAfter || (inst.printChanged && after != before))
      printDump(*inst.dumpStream, "After", pass, after);
    if (!inst.dumpDir.empty() &&
        !writeDumpFile(inst.dumpDir, index, pass, printModuleToString(module, inst.dumpDir),
                       diag)) {
      result = RunResult::InputError;
      break;
    }
  }
  if (inst.timePasses)
    timers.print(*inst.dumpStream, /*ResetAfterPrint=*/true);
  return result;
}
