//===- ParserFuzzer.cpp - libFuzzer target for the FIR parser -------------===//
//
// For any input: parsing must not crash, leak or hang, as FIR and as a
// pattern file (spec §6). For an input that parses as FIR, the printed form
// must parse back and print identically, and `dce` must leave IR that
// verifies; a violation aborts so libFuzzer reports it.
//
//===----------------------------------------------------------------------===//
#include "FuzzInput.h"
#include "fusec/Parser/Parser.h"
#include "fusec/Pass/Pass.h"
#include "fusec/Printer/Printer.h"

#include <cstdlib>

using namespace fusec;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzInput input(data, size);
  llvm::StringRef text = input.text;
  {
    llvm::SourceMgr patternMgr;
    DiagEngine patternDiag(patternMgr);
    patternDiag.setHandler([](const llvm::SMDiagnostic &) {});
    std::vector<DataflowPattern> patterns;
    parsePatternsString(text, patternMgr, patternDiag, patterns, "fuzz.pat");
  }
  auto module = parseModuleString(text, input.sourceMgr, input.diag, "fuzz.fir");
  if (!module)
    return 0;
  std::string printed = printModuleToString(*module);
  llvm::SourceMgr reparseMgr;
  DiagEngine reparseDiag(reparseMgr);
  auto reparsed = parseModuleString(printed, reparseMgr, reparseDiag, "printed.fir");
  if (!reparsed || printModuleToString(*reparsed) != printed)
    std::abort();
  PipelineError error;
  auto pipeline = parsePassPipeline("dce", error);
  Instrumentation quiet;
  if (pipeline->run(*reparsed, reparseDiag, quiet) != RunResult::Success)
    std::abort();
  return 0;
}
