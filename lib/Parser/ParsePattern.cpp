//===- ParsePattern.cpp - Parser for .pat pattern files --------------------===//
//
// Grammar (spec §6), one token of lookahead, the same lexer as .fir:
//
//   file       ::= pattern*
//   pattern    ::= 'pattern' @name '{' line* '}'
//   line       ::= %name '=' op-expr | 'root' %name | 'where' check,+
//   op-expr    ::= 'get' '(' operand ',' int ')'
//                | op ('|' op)* '(' operands? ')' attr-dict?
//   operands   ::= '...' | operand (',' operand)* (',' '...')?
//   operand    ::= %name | int | float
//   check      ::= 'not' '(' check ')' | 'is_constant' '(' %x ')'
//                | 'single_use' '(' %x ')' | term cmp term
//                | term 'in' '[' term,+ ']'
//   term       ::= 'dtype' '(' %x ')' | 'rank' '(' %x ')'
//                | 'shape' '(' %x ')' '[' int ']' | int | dtype-name
//   cmp        ::= '==' | '!=' | '<' | '<=' | '>' | '>='
//
// A `%name` first seen as an operand is a wildcard; defining it afterwards
// is an error (the pattern would be ambiguous), as is a name used only in
// `where`, an op binding the root does not reach, an unknown op, an
// attribute the op does not have, or an operand count the op rejects.
//
//===----------------------------------------------------------------------===//
#include "ParserImpl.h"
#include "fusec/IR/Ops.h"

#include "llvm/ADT/StringExtras.h"

#include <set>

using namespace fusec;
using fusec::detail::Parser;

bool Parser::parsePatternFile(std::vector<DataflowPattern> &patterns) {
  while (!token.is(Token::Eof)) {
    if (!token.isKeyword("pattern"))
      return error("expected 'pattern', found " + describeToken());
    DataflowPattern pattern;
    if (!parsePattern(pattern))
      return false;
    patterns.push_back(std::move(pattern));
  }
  return !hasErrored;
}

bool Parser::parsePattern(DataflowPattern &pattern) {
  consume(); // 'pattern'
  if (!token.is(Token::GlobalName))
    return error("expected a pattern name like '@cublaslt.matmul' after 'pattern', found " +
                 describeToken());
  pattern.name = token.stringValue;
  pattern.loc = token.getLoc();
  consume();
  if (!expect(Token::LBrace, "'{' to open the pattern body"))
    return false;
  llvm::SMLoc rootLoc;
  while (!token.is(Token::RBrace)) {
    if (token.is(Token::LocalName)) {
      if (!parsePatternBinding(pattern))
        return false;
    } else if (token.isKeyword("root")) {
      if (pattern.root >= 0 || rootLoc.isValid()) {
        error("the pattern already has a root");
        diag.note(rootLoc, "previous root is here");
        return false;
      }
      consume();
      rootLoc = token.getLoc();
      if (!token.is(Token::LocalName))
        return error("expected the root's %name after 'root', found " + describeToken());
      int node = pattern.lookup(token.stringValue);
      if (node < 0 || pattern.nodes[node].kind == PatternNode::Wildcard)
        return error("the root '%" + token.stringValue + "' must be an op bound earlier in the pattern");
      if (pattern.nodes[node].kind != PatternNode::Op)
        return error("the root '%" + token.stringValue + "' must be an op, not a 'get'");
      pattern.root = node;
      consume();
    } else if (token.isKeyword("where")) {
      consume();
      do {
        if (token.is(Token::Comma))
          consume();
        PatternConstraint constraint;
        if (!parseConstraint(pattern, constraint))
          return false;
        pattern.constraints.push_back(std::move(constraint));
      } while (token.is(Token::Comma));
    } else {
      return error("expected a binding '%name = op(...)', 'root', 'where' or '}', found " +
                   describeToken());
    }
  }
  llvm::SMLoc closeLoc = token.getLoc();
  consume(); // '}'
  if (pattern.root < 0) {
    for (int n = int(pattern.nodes.size()) - 1; n >= 0 && pattern.root < 0; --n)
      if (pattern.nodes[n].kind != PatternNode::Wildcard &&
          pattern.nodes[n].kind != PatternNode::Literal)
        pattern.root = n;
    if (pattern.root < 0)
      return errorAt(closeLoc, "pattern '@" + pattern.name + "' has no op binding");
    if (pattern.nodes[pattern.root].kind != PatternNode::Op)
      return errorAt(pattern.nodes[pattern.root].loc,
                     "the root (the last binding) must be an op, not a 'get'; add 'root %name'");
  }
  return checkPattern(pattern);
}

/// Every op binding must be reachable from the root: anything else would
/// be matched against nothing.
bool Parser::checkPattern(DataflowPattern &pattern) {
  std::vector<bool> reached(pattern.nodes.size(), false);
  std::vector<int> work{pattern.root};
  while (!work.empty()) {
    int node = work.back();
    work.pop_back();
    if (reached[node])
      continue;
    reached[node] = true;
    for (int operand : pattern.nodes[node].operands)
      work.push_back(operand);
  }
  // Op bindings first: an unreachable wildcard is only a symptom.
  for (int opsFirst = 1; opsFirst >= 0; --opsFirst)
    for (size_t n = 0; n < pattern.nodes.size(); ++n)
      if (!reached[n] && pattern.nodes[n].kind != PatternNode::Literal &&
          (pattern.nodes[n].kind != PatternNode::Wildcard) == bool(opsFirst))
        return errorAt(pattern.nodes[n].loc,
                     "'%" + pattern.nodes[n].name + "' is not reachable from the root '%" +
                         pattern.nodes[pattern.root].name + "'");
  return true;
}

bool Parser::parsePatternBinding(DataflowPattern &pattern) {
  std::string name = token.stringValue;
  llvm::SMLoc nameLoc = token.getLoc();
  int existing = pattern.lookup(name);
  if (existing >= 0) {
    bool wildcard = pattern.nodes[existing].kind == PatternNode::Wildcard;
    if (wildcard)
      error("'%" + name + "' is used as a wildcard before this definition; "
            "define it before its uses");
    else
      error("'%" + name + "' is already defined in this pattern");
    diag.note(pattern.nodes[existing].loc,
              wildcard ? "first used here" : "previous definition is here");
    return false;
  }
  consume();
  if (!expect(Token::Equal, "'=' after '%" + name + "'"))
    return false;
  PatternNode node;
  node.name = name;
  node.loc = nameLoc;
  if (token.isKeyword("get")) {
    node.kind = PatternNode::Get;
    consume();
    if (!expect(Token::LParen, "'(' after 'get'"))
      return false;
    int tuple = -1;
    if (!token.is(Token::LocalName))
      return error("expected the tuple's %name in 'get', found " + describeToken());
    if (!parsePatternOperand(pattern, tuple))
      return false;
    node.operands.push_back(tuple);
    if (!expect(Token::Comma, "',' after the tuple in 'get'"))
      return false;
    if (!token.is(Token::Integer) || token.intValue < 0)
      return error("expected a non-negative tuple index, found " + describeToken());
    node.tupleIndex = token.intValue;
    consume();
    if (!expect(Token::RParen, "')' to close 'get'"))
      return false;
    pattern.nodes.push_back(std::move(node));
    return true;
  }
  node.kind = PatternNode::Op;
  std::vector<const OpInfo *> infos;
  std::vector<llvm::SMLoc> opLocs;
  while (true) {
    if (!token.is(Token::BareIdent))
      return error("expected an op name, found " + describeToken());
    const OpInfo *info = lookupOp(token.spelling);
    if (!info) {
      std::string suggestion = suggestOpName(token.spelling);
      return error("unknown op '" + token.spelling + "'" +
                   (suggestion.empty() ? std::string() : "; did you mean '" + suggestion + "'?"));
    }
    node.opNames.push_back(token.spelling.str());
    infos.push_back(info);
    opLocs.push_back(token.getLoc());
    consume();
    if (!token.is(Token::Pipe))
      break;
    consume();
  }
  if (!expect(Token::LParen, "'(' after the op name"))
    return false;
  llvm::SMLoc ellipsisLoc;
  if (!parsePatternOperands(pattern, node, ellipsisLoc))
    return false;
  for (int operand : node.operands)
    if (pattern.nodes[operand].kind == PatternNode::Wildcard && pattern.nodes[operand].name == name)
      return errorAt(pattern.nodes[operand].loc, "'%" + name + "' is used in its own definition");
  for (size_t i = 0; i < infos.size(); ++i) {
    const OpInfo *info = infos[i];
    int count = int(node.operands.size());
    if (node.variadic && info->maxOperands != -1)
      return errorAt(ellipsisLoc, "'...' needs a variadic op such as 'concat'; '" +
                                      std::string(info->name) + "' takes a fixed number of operands");
    bool tooFew = count < info->minOperands && !node.variadic;
    bool tooMany = info->maxOperands >= 0 && count > info->maxOperands;
    if (tooFew || tooMany) {
      // The wording of the .fir parser (inferOpType).
      std::string expected =
          info->maxOperands < 0 ? "at least " + std::to_string(info->minOperands)
          : info->minOperands == info->maxOperands
              ? std::to_string(info->minOperands)
              : std::to_string(info->minOperands) + " to " + std::to_string(info->maxOperands);
      return errorAt(opLocs[i], "'" + std::string(info->name) + "' takes " + expected +
                                    " operand(s), but " + std::to_string(count) + " were given");
    }
    for (int operand : node.operands)
      if (pattern.nodes[operand].kind == PatternNode::Literal && !info->allowsLiterals)
        return errorAt(pattern.nodes[operand].loc, "'" + std::string(info->name) +
                                                       "' does not take literal operands");
  }
  if (token.is(Token::LBrace)) {
    if (!parseAttrDict(node.attrs))
      return false;
    for (const Attrs::Entry &entry : node.attrs.getEntries())
      for (const OpInfo *info : infos)
        if (std::string problem = attrFormProblem(*info, entry.name, entry.value);
            !problem.empty())
          return errorAt(entry.loc, problem);
    // Canonical forms (an int axis is a one-element list), as in .fir.
    Binding probe;
    probe.callee = node.opNames.front();
    probe.attrs = node.attrs;
    normalizeOpAttrs(probe);
    node.attrs = probe.attrs;
  }
  pattern.nodes.push_back(std::move(node));
  return true;
}

bool Parser::parsePatternOperands(DataflowPattern &pattern, PatternNode &node,
                                  llvm::SMLoc &ellipsisLoc) {
  while (!token.is(Token::RParen)) {
    if (token.is(Token::Ellipsis)) {
      node.variadic = true;
      ellipsisLoc = token.getLoc();
      consume();
      if (!token.is(Token::RParen))
        return error("expected ')' after '...', found " + describeToken());
      break;
    }
    int operand = -1;
    if (!parsePatternOperand(pattern, operand))
      return false;
    node.operands.push_back(operand);
    if (token.is(Token::Comma)) {
      consume();
      if (token.is(Token::RParen))
        return error("expected an operand after ',', found ')'");
    } else if (!token.is(Token::RParen)) {
      return error("expected ',' or ')' in the operands, found " + describeToken());
    }
  }
  consume(); // ')'
  return true;
}

bool Parser::parsePatternOperand(DataflowPattern &pattern, int &node) {
  if (token.is(Token::Integer) || token.is(Token::Float)) {
    PatternNode literal;
    literal.kind = PatternNode::Literal;
    literal.loc = token.getLoc();
    if (!parseLiteral(literal.literal))
      return false;
    pattern.nodes.push_back(std::move(literal));
    node = int(pattern.nodes.size()) - 1;
    return true;
  }
  if (!token.is(Token::LocalName))
    return error("expected an operand (%name or a number), found " + describeToken());
  node = pattern.lookup(token.stringValue);
  if (node < 0)
    node = pattern.addWildcard(token.stringValue);
  pattern.nodes[node].loc = pattern.nodes[node].loc.isValid() ? pattern.nodes[node].loc
                                                               : token.getLoc();
  consume();
  return true;
}

bool Parser::parsePatternNodeRef(const DataflowPattern &pattern, int &node) {
  if (!token.is(Token::LocalName))
    return error("expected a %name, found " + describeToken());
  node = pattern.lookup(token.stringValue);
  if (node < 0)
    return error("'%" + token.stringValue +
                 "' is not in the pattern; a name in 'where' must be bound or used as an operand above it");
  consume();
  return true;
}

bool Parser::parsePatternTerm(DataflowPattern &pattern, PatternTerm &term) {
  term.loc = token.getLoc();
  if (token.is(Token::Integer)) {
    term.kind = PatternTerm::Int;
    term.value = token.intValue;
    consume();
    return true;
  }
  if (!token.is(Token::BareIdent))
    return error("expected a check (dtype(%x), rank(%x), shape(%x)[i], is_constant(%x), "
                 "single_use(%x), not(...)) or a value, found " + describeToken());
  llvm::StringRef word = token.spelling;
  if (word == "dtype" || word == "rank" || word == "shape") {
    term.kind = word == "dtype"  ? PatternTerm::DTypeOf
                : word == "rank" ? PatternTerm::RankOf
                                 : PatternTerm::ShapeOf;
    consume();
    if (!expect(Token::LParen, "'(' after '" + word.str() + "'") ||
        !parsePatternNodeRef(pattern, term.node) ||
        !expect(Token::RParen, "')' after the %name"))
      return false;
    if (term.kind == PatternTerm::ShapeOf) {
      if (!expect(Token::LSquare, "'[' and a dim index after 'shape(...)'"))
        return false;
      if (!token.is(Token::Integer))
        return error("expected a dim index, found " + describeToken());
      term.value = token.intValue;
      consume();
      if (!expect(Token::RSquare, "']' after the dim index"))
        return false;
    }
    return true;
  }
  if (std::optional<DType> dtype = parseDType(word)) {
    term.kind = PatternTerm::DTypeName;
    term.dtype = *dtype;
    consume();
    return true;
  }
  // A dtype FIR does not have (f64, u8, bf8): a dtype prefix and a width.
  llvm::StringRef width = word;
  if ((width.consume_front("bf") || width.consume_front("f") || width.consume_front("i") ||
       width.consume_front("u")) &&
      !width.empty() && llvm::all_of(width, llvm::isDigit))
    return error("unknown dtype '" + word.str() +
                 "' (FIR's are f32, f16, bf16, i8, i32, i64, bool)");
  return error("expected a check (dtype(%x), rank(%x), shape(%x)[i], is_constant(%x), "
               "single_use(%x), not(...)) or a value, found " + describeToken());
}

bool Parser::parseConstraint(DataflowPattern &pattern, PatternConstraint &constraint) {
  const char *start = token.spelling.data();
  constraint.loc = token.getLoc();
  auto finish = [&] {
    constraint.text = std::string(start, previousEnd);
    return true;
  };
  if (token.isKeyword("not")) {
    consume();
    constraint.kind = PatternConstraint::Not;
    constraint.negated.emplace_back();
    if (!expect(Token::LParen, "'(' after 'not'") || !enterNesting())
      return false;
    bool ok = parseConstraint(pattern, constraint.negated.back());
    --nestingDepth;
    if (!ok || !expect(Token::RParen, "')' to close 'not'"))
      return false;
    return finish();
  }
  if (token.isKeyword("is_constant") || token.isKeyword("single_use")) {
    constraint.kind = token.spelling == "is_constant" ? PatternConstraint::IsConstant
                                                      : PatternConstraint::SingleUse;
    std::string word = token.spelling.str();
    consume();
    if (!expect(Token::LParen, "'(' after '" + word + "'") ||
        !parsePatternNodeRef(pattern, constraint.node) ||
        !expect(Token::RParen, "')' after the %name"))
      return false;
    return finish();
  }
  if (!parsePatternTerm(pattern, constraint.lhs))
    return false;
  auto compatible = [&](const PatternTerm &other) {
    if (constraint.lhs.isDType() != other.isDType())
      return errorAt(other.loc, constraint.lhs.isDType()
                                    ? "a dtype can only be compared with a dtype"
                                    : "an integer can only be compared with an integer");
    return true;
  };
  if (token.isKeyword("in")) {
    consume();
    constraint.kind = PatternConstraint::In;
    if (!expect(Token::LSquare, "'[' after 'in'"))
      return false;
    if (token.is(Token::RSquare))
      return error("expected at least one value in the list, found ']'");
    if (!parseCommaList(Token::RSquare, "]", "a value", "the list", [&] {
          constraint.rhs.emplace_back();
          return parsePatternTerm(pattern, constraint.rhs.back()) &&
                 compatible(constraint.rhs.back());
        }))
      return false;
    if (constraint.lhs.node < 0 &&
        llvm::none_of(constraint.rhs, [](const PatternTerm &t) { return t.node >= 0; }))
      return errorAt(constraint.loc, "this check names no value of the pattern");
    return finish();
  }
  static const std::pair<Token::Kind, PatternConstraint::Comparison> comparisons[] = {
      {Token::EqEq, PatternConstraint::Eq},   {Token::NotEq, PatternConstraint::Ne},
      {Token::Less, PatternConstraint::Lt},   {Token::LessEq, PatternConstraint::Le},
      {Token::Greater, PatternConstraint::Gt}, {Token::GreaterEq, PatternConstraint::Ge}};
  auto found = llvm::find_if(comparisons, [&](const auto &entry) { return token.is(entry.first); });
  if (found == std::end(comparisons))
    return error("expected a comparison ('==', '!=', '<', '<=', '>', '>=') or 'in', found " +
                 describeToken());
  llvm::SMLoc opLoc = token.getLoc();
  consume();
  constraint.kind = PatternConstraint::Compare;
  constraint.comparison = found->second;
  constraint.rhs.emplace_back();
  if (!parsePatternTerm(pattern, constraint.rhs.back()) || !compatible(constraint.rhs.back()))
    return false;
  if (constraint.lhs.node < 0 && constraint.rhs.back().node < 0)
    return errorAt(constraint.loc, "this check names no value of the pattern");
  if (constraint.lhs.isDType() && constraint.comparison != PatternConstraint::Eq &&
      constraint.comparison != PatternConstraint::Ne)
    return errorAt(opLoc, "dtypes can only be compared with '==', '!=' or 'in'");
  return finish();
}

bool fusec::parsePatterns(llvm::SourceMgr &sourceMgr, unsigned bufferId, DiagEngine &diag,
                          std::vector<DataflowPattern> &patterns) {
  Parser parser(sourceMgr, bufferId, diag, ".");
  return parser.parsePatternFile(patterns);
}

bool fusec::parsePatternsString(llvm::StringRef text, llvm::SourceMgr &sourceMgr,
                                DiagEngine &diag, std::vector<DataflowPattern> &patterns,
                                llvm::StringRef bufferName) {
  unsigned bufferId = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  return parsePatterns(sourceMgr, bufferId, diag, patterns);
}
