//===- PassRegistry.cpp - Register the passes of Passes.def ---------------===//
#include "fusec/Transforms/Passes.h"

void fusec::registerAllPasses() {
#define FUSEC_PASS(NAME, TITLE, FACTORY, SUMMARY)                              \
  registerPass({NAME, #TITLE, SUMMARY, [] { return FACTORY(); }, false});
#define FUSEC_TEST_PASS(NAME, TITLE, FACTORY, SUMMARY)                         \
  registerPass({NAME, #TITLE, SUMMARY, [] { return FACTORY(); }, true});
#include "Passes.def"
}
