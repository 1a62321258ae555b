//===- ParserImpl.h - The FIR parser's private class ------------*- C++ -*-===//
//
// Shared by Parser.cpp (module, functions, bindings) and ParseValues.cpp
// (types, attributes, literals, constants). Not a public header.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_PARSER_PARSERIMPL_H
#define FUSEC_LIB_PARSER_PARSERIMPL_H

#include "fusec/IR/Kernel.h"
#include "fusec/Parser/Parser.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

#include <map>

namespace fusec {
namespace detail {

class Parser {
public:
  Parser(llvm::SourceMgr &sourceMgr, unsigned bufferId, DiagEngine &diag,
         llvm::StringRef sourceDirectory, const KnownFiles *knownFiles = nullptr)
      : lexer(sourceMgr.getMemoryBuffer(bufferId)->getBuffer()), diag(diag),
        sourceDirectory(sourceDirectory), knownFiles(knownFiles) {
    token = lexer.next();
  }

  std::unique_ptr<Module> parseModule();
  /// A pattern file (ParsePattern.cpp).
  bool parsePatternFile(std::vector<DataflowPattern> &patterns);

private:
  // Token handling and errors.
  void consume() {
    previousEnd = token.spelling.end();
    token = lexer.next();
  }
  bool error(const llvm::Twine &message);
  bool errorAt(llvm::SMLoc loc, const llvm::Twine &message);
  bool expect(Token::Kind kind, llvm::StringRef what);
  bool expectKeyword(llvm::StringRef word);
  std::string describeToken() const;

  // Top level.
  bool parseFunction(Module &module);
  bool parseParams(Function &function);
  bool parseBody(Function &function);
  bool parseDataflowBlock(Function &function);
  bool parseReturn(Function &function);

  // Bindings and expressions.
  std::unique_ptr<Binding> parseBinding();
  bool parseExpression(Binding &binding);
  bool parseOperandList(Binding &binding);
  bool parseOperand(Operand &operand);
  bool parseConstant(Binding &binding);
  bool checkConstantValue(Binding &binding);

  /// Parses `element (',' element)*` up to and including `close`; the
  /// opening token is already consumed. `what` names an element and
  /// `where` the list, for messages; trailing commas are errors.
  bool parseCommaList(Token::Kind close, llvm::StringRef closeText,
                      llvm::StringRef what, llvm::StringRef where,
                      llvm::function_ref<bool()> element);

  // Types and attributes.
  bool parseType(Type &type);
  bool parseDim(Dim &dim);
  bool parseAttrDict(Attrs &attrs);
  bool parseAttrValue(Attr &value);
  bool parseLiteral(Attr &value);

  // Kernels (ParseKernel.cpp).
  enum class ExprContext { Value, Index, Any };
  using MutableExpr = std::shared_ptr<KExpr>;
  bool parseKernel(Module &module);
  bool parseKernelBuffers(std::vector<KBuffer> &buffers, KBuffer::Role role);
  bool parseStage(Kernel &kernel);
  // Schedules and the lowered form (ParseLowered.cpp).
  bool parseSchedule(Kernel &kernel);
  bool parseScheduleEntry(Kernel &kernel);
  bool parseMapping(StageMapping &mapping);
  bool parseLaunch(Kernel &kernel);
  bool parseBlockStmt(LLaunch &launch, std::vector<LStmt> &out);
  bool parseThreadStmt(std::vector<LStmt> &out);
  bool parseStmtBlock(std::vector<LStmt> &out, bool blockLevel, LLaunch *launch);
  bool parseStore(LStmt &stmt, bool blockLevel);
  bool parseLoopVar(std::string &name);
  /// `VAR in KIND(EXTENT)` after `for` (a block-level loop is serial or
  /// unroll; a thread-level one may also be vector).
  bool parseLoopHead(LStmt &stmt, bool blockLevel);
  MutableExpr parseIndexExpr();
  bool parseInt(int64_t &value, llvm::StringRef what);
  /// A `%buf[indices]` operand of a lowered statement; null after an error
  /// that names `what` was expected.
  MutableExpr parseBufferElement(llvm::StringRef what);

  MutableExpr parseKExpr(ExprContext context);
  MutableExpr parseKBinary(ExprContext context, int minPrecedence);
  MutableExpr parseKUnary(ExprContext context);
  MutableExpr parseKPrimary(ExprContext context);
  bool resolveDTypes(KExpr &e, std::optional<DType> expected, llvm::SMLoc loc);
  /// Gives an untyped literal its dtype (an integer one keeps the exact
  /// value written).
  void typeLiteral(KExpr &e, DType dtype);
  const Kernel *currentKernel = nullptr;
  /// Literals whose dtype comes from their context, resolved per stage.
  std::vector<KExpr *> untypedLiterals;
  /// How each kernel literal was written, for dtype checks and messages.
  std::map<const KExpr *, Attr> literalKinds;

  // Pattern files (ParsePattern.cpp).
  bool parsePattern(DataflowPattern &pattern);
  bool parsePatternBinding(DataflowPattern &pattern);
  bool parsePatternOperands(DataflowPattern &pattern, PatternNode &node,
                            llvm::SMLoc &ellipsisLoc);
  bool parsePatternOperand(DataflowPattern &pattern, int &node);
  bool parsePatternNodeRef(const DataflowPattern &pattern, int &node);
  bool parseConstraint(DataflowPattern &pattern, PatternConstraint &constraint);
  bool parsePatternTerm(DataflowPattern &pattern, PatternTerm &term);
  bool checkPattern(DataflowPattern &pattern);

  // Scoping.
  Value *lookupValue(const Token &nameToken);
  bool defineValue(Value &value);

  Lexer lexer;
  Token token;
  const char *previousEnd = nullptr;
  DiagEngine &diag;
  std::string sourceDirectory;
  const KnownFiles *knownFiles;
  bool hasErrored = false;
  /// Nesting of tuple types, attribute lists, statement blocks and kernel
  /// expressions, bounded so that deeply nested input is an error, not a
  /// stack overflow. Expressions get a deeper bound: `lower` inlines a fused
  /// chain into one expression, one level per op (257 for the default
  /// max-fused-ops = 256), and its dump must parse back.
  unsigned nestingDepth = 0;
  static constexpr unsigned kMaxNestingDepth = 64;
  static constexpr unsigned kMaxExprNestingDepth = 1024;
  bool enterNesting(unsigned limit = kMaxNestingDepth);

  // Per-function scope: every name defined so far (names are unique across
  // blocks), the ones visible here, and block-local ones that were hidden.
  llvm::StringMap<llvm::SMLoc> definedNames;
  llvm::StringMap<Value *> visibleValues;
  llvm::StringMap<llvm::SMLoc> hiddenValues;
};

} // namespace detail
} // namespace fusec

#endif // FUSEC_LIB_PARSER_PARSERIMPL_H
