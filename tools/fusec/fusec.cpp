//===- fusec.cpp - The fusec compiler driver ------------------------------===//
//
// fusec: an optimizing compiler driver for tensor programs on NVIDIA GPUs.
// All logic lives in lib/Driver; this file only registers the passes and
// hands over.
//
//===----------------------------------------------------------------------===//
#include "fusec/Driver/Driver.h"
#include "fusec/Pass/Pass.h"

#include "fusec/Support/Support.h"

#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  fusec::exitWithOneOnBrokenPipe();
  llvm::InitLLVM initLLVM(argc, argv, /*InstallPipeSignalExitHandler=*/false);
  fusec::exitOnOutOfMemory("fusec");
  fusec::exitCleanlyOnStdoutError("fusec");
  fusec::registerAllPasses();
  return fusec::exitStatus(fusec::driverMain(argc, argv));
}
