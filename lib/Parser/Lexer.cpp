//===- Lexer.cpp - Tokens of the FIR language -----------------------------===//
//
// Spec §1 and §9: `//` comments; `@global` and `%local` names
// ([A-Za-z_][A-Za-z0-9_.$-]* or a decimal number); bare words (keywords,
// op names such as `nn.relu`, dtypes, dim names); integers, floats (`1.5`,
// `.5`, `5.`, `1e3`, `-inf`), strings with `\"` and `\\` escapes; and
// punctuation. A `-` starts a number, `-inf`, or the arrow `->`.
//
//===----------------------------------------------------------------------===//
#include "fusec/Parser/Parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

using namespace fusec;

static bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isBareIdentChar(char c) {
  return isIdentStart(c) || isDigit(c) || c == '.';
}
static bool isNameChar(char c) {
  return isIdentStart(c) || isDigit(c) || c == '.' || c == '$' || c == '-';
}

Lexer::Lexer(llvm::StringRef buffer) : buffer(buffer), current(buffer.begin()) {}

bool Lexer::consumeIf(char expected) {
  if (current < buffer.end() && *current == expected) {
    ++current;
    return true;
  }
  return false;
}

Token Lexer::makeToken(Token::Kind kind, const char *start) {
  Token token;
  token.kind = kind;
  token.spelling = llvm::StringRef(start, current - start);
  return token;
}

Token Lexer::makeError(const char *start, const std::string &message) {
  Token token = makeToken(Token::Error, start);
  if (token.spelling.empty() && current < buffer.end())
    token.spelling = llvm::StringRef(start, 1);
  token.stringValue = message;
  return token;
}

void Lexer::skipWhitespaceAndComments() {
  while (current < buffer.end()) {
    char c = *current;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++current;
    } else if (c == '/' && current + 1 < buffer.end() && current[1] == '/') {
      while (current < buffer.end() && *current != '\n')
        ++current;
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  skipWhitespaceAndComments();
  const char *start = current;
  if (current >= buffer.end())
    return makeToken(Token::Eof, start);
  char c = *current++;
  switch (c) {
  case '(': return makeToken(Token::LParen, start);
  case ')': return makeToken(Token::RParen, start);
  case '{': return makeToken(Token::LBrace, start);
  case '}': return makeToken(Token::RBrace, start);
  case '[': return makeToken(Token::LSquare, start);
  case ']': return makeToken(Token::RSquare, start);
  case '<': return makeToken(consumeIf('=') ? Token::LessEq : Token::Less, start);
  case '>':
    return makeToken(consumeIf('=') ? Token::GreaterEq : Token::Greater, start);
  case ',': return makeToken(Token::Comma, start);
  case ':': return makeToken(Token::Colon, start);
  case '=': return makeToken(consumeIf('=') ? Token::EqEq : Token::Equal, start);
  case '|': return makeToken(consumeIf('|') ? Token::OrOr : Token::Pipe, start);
  case '+': return makeToken(Token::Plus, start);
  case '*': return makeToken(Token::Star, start);
  case '!': return makeToken(consumeIf('=') ? Token::NotEq : Token::Bang, start);
  case '&':
    if (consumeIf('&'))
      return makeToken(Token::AndAnd, start);
    return makeError(start, "unexpected character '&'; did you mean '&&'?");
  case '@': return lexName(Token::GlobalName, start);
  case '%': return lexName(Token::LocalName, start);
  case '"': return lexString(start);
  case '-':
    if (current < buffer.end() && *current == '>') {
      ++current;
      return makeToken(Token::Arrow, start);
    }
    if (llvm::StringRef(current, buffer.end() - current).startswith("inf") &&
        (current + 3 >= buffer.end() || !isBareIdentChar(current[3]))) {
      current += 3;
      Token token = makeToken(Token::Float, start);
      token.floatValue = -INFINITY;
      return token;
    }
    if (current < buffer.end() && (isDigit(*current) || *current == '.'))
      return lexNumber(start);
    return makeToken(Token::Minus, start);
  default:
    break;
  }
  if (c == '.' && llvm::StringRef(current, buffer.end() - current).startswith("..")) {
    current += 2;
    return makeToken(Token::Ellipsis, start);
  }
  if (isDigit(c) || c == '.') {
    --current;
    return lexNumber(start);
  }
  if (isIdentStart(c)) {
    while (current < buffer.end() && isBareIdentChar(*current))
      ++current;
    return makeToken(Token::BareIdent, start);
  }
  if (static_cast<unsigned char>(c) >= 0x80)
    return makeError(start, "unexpected non-ASCII character");
  // A control byte (a NUL, an escape) written raw would garble the terminal
  // or cut the message short; spell it in hex.
  if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
    static const char digits[] = "0123456789abcdef";
    return makeError(start, std::string("unexpected character '\\x") +
                                digits[(c >> 4) & 0xf] + digits[c & 0xf] + "'");
  }
  return makeError(start, std::string("unexpected character '") + c + "'");
}

Token Lexer::lexName(Token::Kind kind, const char *start) {
  const char *nameStart = current;
  if (current < buffer.end() && isDigit(*current)) {
    while (current < buffer.end() && isDigit(*current))
      ++current;
  } else if (current < buffer.end() && isIdentStart(*current)) {
    while (current < buffer.end() && isNameChar(*current))
      ++current;
  } else {
    return makeError(start, std::string("expected a name after '") +
                                (kind == Token::GlobalName ? '@' : '%') + "'");
  }
  Token token = makeToken(kind, start);
  token.stringValue = std::string(nameStart, current - nameStart);
  return token;
}

Token Lexer::lexString(const char *start) {
  std::string value;
  while (current < buffer.end()) {
    char c = *current++;
    if (c == '"') {
      Token token = makeToken(Token::String, start);
      token.stringValue = std::move(value);
      return token;
    }
    if (c == '\n' || c == '\r')
      break;
    if (c == '\\') {
      if (current < buffer.end() && (*current == '"' || *current == '\\')) {
        value += *current++;
        continue;
      }
      return makeError(current - 1,
                       "unknown escape in string; only \\\" and \\\\ exist");
    }
    value += c;
  }
  current = start + 1;
  while (current < buffer.end() && *current != '\n' && *current != '\r')
    ++current;
  return makeError(start, "unterminated string literal");
}

Token Lexer::lexNumber(const char *start) {
  const char *digits = *start == '-' ? start + 1 : start;
  current = digits;
  bool isFloat = false;
  bool sawDigit = false;
  while (current < buffer.end() && isDigit(*current))
    ++current, sawDigit = true;
  if (current < buffer.end() && *current == '.') {
    isFloat = true;
    ++current;
    while (current < buffer.end() && isDigit(*current))
      ++current, sawDigit = true;
  }
  if (!sawDigit)
    return makeError(start, "malformed number");
  if (current < buffer.end() && (*current == 'e' || *current == 'E')) {
    const char *exponent = current + 1;
    if (exponent < buffer.end() && (*exponent == '+' || *exponent == '-'))
      ++exponent;
    if (exponent < buffer.end() && isDigit(*exponent)) {
      isFloat = true;
      current = exponent;
      while (current < buffer.end() && isDigit(*current))
        ++current;
    } else {
      ++current;
      return makeError(start, "malformed exponent in number");
    }
  }
  if (current < buffer.end() && isBareIdentChar(*current)) {
    while (current < buffer.end() && isBareIdentChar(*current))
      ++current;
    return makeError(start, "malformed number");
  }
  Token token = makeToken(isFloat ? Token::Float : Token::Integer, start);
  std::string text = token.spelling.str();
  if (isFloat) {
    token.floatValue = std::strtod(text.c_str(), nullptr);
    if (std::isinf(token.floatValue))
      return makeError(start, "float literal is out of range");
    return token;
  }
  errno = 0;
  long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return makeError(start, "integer literal out of range of i64");
  token.intValue = value;
  return token;
}
