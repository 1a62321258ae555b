//===- Parser.h - Lexer and parser for .fir files ----------------*- C++ -*-===//
//
// Turns FIR text (spec §1–§3, §9) into a Module. Every malformed input gets
// one located diagnostic (`file:line:col: error: ...`, the line and a caret
// at the offending token) and a null result; nothing in the input can reach
// an assertion. After a successful parse the module has been type-inferred
// and verified.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PARSER_PARSER_H
#define FUSEC_PARSER_PARSER_H

#include "fusec/IR/IR.h"

#include <map>
#include "fusec/IR/Pattern.h"

#include "llvm/Support/SourceMgr.h"

namespace fusec {

struct Token {
  enum Kind {
    Eof, Error, BareIdent, GlobalName, LocalName, Integer, Float, String,
    LParen, RParen, LBrace, RBrace, LSquare, RSquare, Less, Greater,
    Comma, Colon, Equal, Arrow, Pipe,
    // Kernel index expressions.
    Plus, Minus, Star, Bang, AndAnd, OrOr, LessEq, GreaterEq, EqEq, NotEq,
    // Pattern files.
    Ellipsis,
  };
  Kind kind = Eof;
  llvm::StringRef spelling; // the exact source text
  int64_t intValue = 0;
  double floatValue = 0;
  std::string stringValue; // String: unescaped; names: without the sigil

  llvm::SMLoc getLoc() const { return llvm::SMLoc::getFromPointer(spelling.data()); }
  llvm::SMRange getRange() const {
    return {getLoc(), llvm::SMLoc::getFromPointer(spelling.end())};
  }
  bool is(Kind k) const { return kind == k; }
  bool isKeyword(llvm::StringRef word) const {
    return kind == BareIdent && spelling == word;
  }
};

/// Splits a buffer into tokens. A lexical error yields a Token::Error whose
/// stringValue holds the message; the parser reports it.
class Lexer {
public:
  explicit Lexer(llvm::StringRef buffer);
  Token next();
  /// A position just after the last token, for "expected X" at end of input.
  const char *getCurrentPointer() const { return current; }

private:
  bool consumeIf(char expected);
  Token makeToken(Token::Kind kind, const char *start);
  Token makeError(const char *start, const std::string &message);
  Token lexNumber(const char *start);
  Token lexName(Token::Kind kind, const char *start);
  Token lexString(const char *start);
  void skipWhitespaceAndComments();

  llvm::StringRef buffer;
  const char *current;
};

/// Contents of `file<"...">` constants already in memory, by the path as
/// written (a module's own, when its printed text is parsed back).
using KnownFiles = std::map<std::string, std::shared_ptr<TensorData>>;

/// Parses buffer `bufferId` of `sourceMgr`. `file<"...">` paths are resolved
/// against `sourceDirectory`, unless `knownFiles` holds them. Returns null
/// after reporting an error.
std::unique_ptr<Module> parseModule(llvm::SourceMgr &sourceMgr,
                                    unsigned bufferId, DiagEngine &diag,
                                    llvm::StringRef sourceDirectory,
                                    const KnownFiles *knownFiles = nullptr);

/// A module as its printed text, to be parsed back later into a copy (the
/// round-trip check; --check-each's float64 second opinion on the input
/// program, after passes changed it in place). Its `file<>` constants'
/// contents are kept from memory (an imported model's weights are written
/// only after the pipeline).
class ModuleSnapshot {
public:
  explicit ModuleSnapshot(const Module &module);
  const std::string &getText() const { return text; }
  /// The copy, parsed from a buffer named `name` added to `sourceMgr`
  /// (which must outlive it); null, with the error in `diag`, when the text
  /// does not parse.
  std::unique_ptr<Module> restore(llvm::SourceMgr &sourceMgr, DiagEngine &diag,
                                  llvm::StringRef name) const;

private:
  std::string text, sourceDirectory;
  KnownFiles knownFiles;
};

/// Convenience for tests and tools: parses `text` held in a SourceMgr that
/// the caller owns (diagnostics point into it).
std::unique_ptr<Module> parseModuleString(llvm::StringRef text,
                                          llvm::SourceMgr &sourceMgr,
                                          DiagEngine &diag,
                                          llvm::StringRef bufferName = "<string>");

/// Parses a pattern file (spec §6) held in buffer `bufferId`, appending its
/// patterns in file order. Returns false after reporting an error.
bool parsePatterns(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                   DiagEngine &diag, std::vector<DataflowPattern> &patterns);

/// Convenience for tests and the C++ API: parses pattern text held in a
/// SourceMgr that the caller owns.
bool parsePatternsString(llvm::StringRef text, llvm::SourceMgr &sourceMgr,
                         DiagEngine &diag, std::vector<DataflowPattern> &patterns,
                         llvm::StringRef bufferName = "<patterns>");

} // namespace fusec

#endif // FUSEC_PARSER_PARSER_H
