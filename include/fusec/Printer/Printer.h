//===- Printer.h - FIR text output -------------------------------*- C++ -*-===//
//
// Prints a Module in the canonical FIR form. The output parses back to an
// equal module and prints identically (round-trip), so any dump can be the
// input of a regression test. Types are always printed; attributes keep
// their order; an int `axis` prints as a list (spec §9).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PRINTER_PRINTER_H
#define FUSEC_PRINTER_PRINTER_H

#include "fusec/IR/IR.h"

#include "llvm/Support/raw_ostream.h"

namespace fusec {

void printModule(const Module &module, llvm::raw_ostream &os);
std::string printModuleToString(const Module &module);
/// One binding without indentation or newline: `%y = add(%a, %b) : f32[4]`.
std::string printBinding(const Binding &binding);

} // namespace fusec

#endif // FUSEC_PRINTER_PRINTER_H
