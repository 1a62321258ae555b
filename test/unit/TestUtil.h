//===- TestUtil.h - Shared helpers for the fusec unit tests -----*- C++ -*-===//
//
// Parses FIR text through the real parser with diagnostics captured (message,
// 1-based line, 0-based byte column), and builds the one-binding functions
// that the type-inference tests use.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_TESTUTIL_H
#define FUSEC_TEST_UNIT_TESTUTIL_H

#include "fusec/IR/IR.h"
#include "fusec/Parser/Parser.h"
#include "fusec/Printer/Printer.h"

#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>
#include <vector>

namespace fusec {
namespace test {

struct CapturedDiag {
  llvm::SourceMgr::DiagKind kind;
  std::string message;
  int line;
  int column;
  /// `line:column: message`, for compact comparisons.
  std::string str() const {
    return std::to_string(line) + ":" + std::to_string(column) + ": " + message;
  }
};

/// Parses `text` on construction; neither copyable nor movable (the engine
/// refers to the SourceMgr).
class Parsed {
public:
  explicit Parsed(llvm::StringRef text) : diag(sourceMgr) {
    diag.setHandler([this](const llvm::SMDiagnostic &d) {
      diags.push_back({d.getKind(), d.getMessage().str(), d.getLineNo(),
                       d.getColumnNo()});
    });
    module = parseModuleString(text, sourceMgr, diag);
  }
  Parsed(const Parsed &) = delete;
  Parsed &operator=(const Parsed &) = delete;

  /// The first error as `line:column: message`, or "" when none.
  std::string firstError() const {
    for (const CapturedDiag &d : diags)
      if (d.kind == llvm::SourceMgr::DK_Error)
        return d.str();
    return "";
  }
  unsigned numErrors() const {
    unsigned count = 0;
    for (const CapturedDiag &d : diags)
      count += d.kind == llvm::SourceMgr::DK_Error;
    return count;
  }
  Function &function(size_t i = 0) const { return *module->functions.at(i); }
  /// The binding defining `%name` in the first function, or null.
  const Binding *binding(llvm::StringRef name, size_t functionIndex = 0) const {
    const Binding *found = nullptr;
    const Function &fn = *module->functions.at(functionIndex);
    fn.forEachBinding([&](const Binding &b) {
      if (b.getResult()->name == name)
        found = &b;
    });
    return found;
  }

  llvm::SourceMgr sourceMgr;
  DiagEngine diag;
  std::vector<CapturedDiag> diags;
  std::unique_ptr<Module> module;
};

/// Column (0-based) of the binding's expression in `singleBindingText`.
constexpr int kExprColumn = 7;

/// `func @f(PARAMS) -> RET {\n  %y = EXPR\n  return %y\n}\n`: the binding is
/// on line 2 and EXPR starts at column kExprColumn.
inline std::string singleBindingText(const std::string &params,
                                     const std::string &expr,
                                     const std::string &ret) {
  return "func @f(" + params + ") -> " + ret + " {\n  %y = " + expr +
         "\n  return %y\n}\n";
}

/// The inferred type of `%y = EXPR` in a function returning `ret`, or
/// "error L:C: message" for the first diagnostic. Writing the expected type
/// as `ret` checks both inference and that the whole function verifies.
inline std::string inferType(const std::string &params, const std::string &expr,
                             const std::string &ret) {
  Parsed parsed(singleBindingText(params, expr, ret));
  if (!parsed.module)
    return "error " + parsed.firstError();
  const Binding *y = parsed.binding("y");
  return y ? y->getType().str() : "error: no %y";
}

/// The first diagnostic for `%y = EXPR`, as `line:column: message`.
inline std::string inferError(const std::string &params, const std::string &expr,
                              const std::string &ret = "f32[]") {
  Parsed parsed(singleBindingText(params, expr, ret));
  if (parsed.module)
    return "unexpectedly parsed; %y : " + parsed.binding("y")->getType().str();
  return parsed.firstError();
}

/// `2:<column of needle in expr>: message`, the location inferError reports
/// for an error at `needle` inside the expression.
inline std::string at(const std::string &expr, const std::string &needle,
                      const std::string &message) {
  return "2:" + std::to_string(kExprColumn + int(expr.find(needle))) + ": " +
         message;
}

} // namespace test
} // namespace fusec

/// Checks that `%y = EXPR` infers TYPE (written as the return type too).
#define CHECK_INFERS(params, expr, type)                                       \
  CHECK(::fusec::test::inferType(params, expr, type) == std::string(type))

#endif // FUSEC_TEST_UNIT_TESTUTIL_H
