//===- fusec-run.cpp - The fusec reference interpreter --------------------===//
//
// Runs a FIR module on the CPU reference interpreter; all logic is in
// lib/Exec (runMain).
//
//===----------------------------------------------------------------------===//
#include "fusec/Exec/Exec.h"

#include "fusec/Support/Support.h"

#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  fusec::exitWithOneOnBrokenPipe();
  llvm::InitLLVM initLLVM(argc, argv, /*InstallPipeSignalExitHandler=*/false);
  fusec::exitOnOutOfMemory("fusec-run");
  fusec::exitCleanlyOnStdoutError("fusec-run");
  return fusec::exitStatus(fusec::runMain(argc, argv));
}
