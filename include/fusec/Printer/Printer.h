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

/// `file<"...">` paths are relative to the directory of the .fir file that
/// holds them: a module printed for another directory (`fileDirectory`: the
/// output file's, or "." for stdout and dumps read from the working
/// directory) gets its relative paths rebased from `module.sourceDirectory`
/// so that the text still finds its .npy files. Empty: printed as written.
void printModule(const Module &module, llvm::raw_ostream &os,
                 llvm::StringRef fileDirectory = {});
std::string printModuleToString(const Module &module, llvm::StringRef fileDirectory = {});

/// Where a binding's `file<"...">` path is printed relative to: `from` is
/// the directory it was written against, `to` the reader's (empty: as
/// written).
struct FilePathBase {
  llvm::StringRef from, to;
};
/// One binding without indentation or newline: `%y = add(%a, %b) : f32[4]`.
std::string printBinding(const Binding &binding, const FilePathBase &paths = {});

} // namespace fusec

#endif // FUSEC_PRINTER_PRINTER_H
