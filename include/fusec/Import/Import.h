//===- Import.h - Model importers --------------------------------*- C++ -*-===//
//
// Importers turn models written for other frameworks into fusec modules.
// ONNX (opsets 13-17): one function @main whose parameters are the graph's
// inputs (symbolic dims kept by name), whose bindings sit in one dataflow
// block (so that fusion applies) and whose results are the graph's outputs.
// Initializers become constants: small ones written inline, the others
// `file<"WEIGHTS/NAME.npy">` constants that hold their contents in memory
// (written beside a `.fir` output by writeImportedWeights). The operator
// mappings are documented in docs/onnx.md.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IMPORT_IMPORT_H
#define FUSEC_IMPORT_IMPORT_H

#include "fusec/IR/IR.h"

#include <memory>
#include <string>
#include <map>
#include <vector>

namespace fusec {

struct ONNXImportOptions {
  /// Directory (relative to the `.fir` that will hold the module) that
  /// large constants are referenced in: `file<"DIR/NAME.npy">`.
  std::string weightsDirectory = "weights";
  /// Constants with at most this many elements are written inline (dense).
  int64_t inlineElements = 16;
  /// Sizes for named (symbolic) dims of the graph inputs, by the ONNX name
  /// or its sanitized FIR form (`fusec --dim batch=8`); every entry must
  /// name a dim of some input.
  std::map<std::string, int64_t> dimSizes;
};

/// Reads the ONNX model at `path`. On failure returns null and sets `error`
/// to a message that names what is missing (operator type, node name and
/// opset for an unsupported operator or attribute).
/// Warnings (the model still imports: e.g. a graph output declared with a
/// shape the graph does not compute, which stale exporter shape inference
/// leaves behind) go to `warnings` when given.
std::unique_ptr<Module> importONNX(llvm::StringRef path, const ONNXImportOptions &options,
                                   std::string &error,
                                   std::vector<std::string> *warnings = nullptr);

/// The ONNX operator types the importer maps, sorted.
std::vector<std::string> supportedONNXOps();

/// Writes every `file<...>` constant of `module` that holds contents in
/// memory (an import's weights) to `directory`/path, creating directories.
/// Returns an error message, or empty.
std::string writeImportedWeights(const Module &module, llvm::StringRef directory);

} // namespace fusec

#endif // FUSEC_IMPORT_IMPORT_H
