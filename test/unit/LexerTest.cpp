//===- LexerTest.cpp - Tokens of spec §1 and §9 ---------------------------===//
#include "fusec/Parser/Parser.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace fusec;

/// Every token of `text` up to and including Eof (or the first Error).
static std::vector<Token> lexAll(llvm::StringRef text) {
  Lexer lexer(text);
  std::vector<Token> tokens;
  while (true) {
    tokens.push_back(lexer.next());
    if (tokens.back().is(Token::Eof) || tokens.back().is(Token::Error))
      return tokens;
  }
}

/// The single token of `text` (which must lex to one token and Eof).
static Token lexOne(llvm::StringRef text) {
  std::vector<Token> tokens = lexAll(text);
  INFO("lexing '" << text.str() << "'");
  REQUIRE(tokens.size() == 2);
  CHECK(tokens[1].is(Token::Eof));
  return tokens[0];
}

TEST_CASE("integer literals", "[lexer]") {
  struct Case { const char *text; int64_t value; };
  for (Case c : {Case{"0", 0}, Case{"4096", 4096}, Case{"-3", -3},
                 Case{"007", 7}, Case{"9223372036854775807", INT64_MAX},
                 Case{"-9223372036854775808", INT64_MIN}}) {
    Token token = lexOne(c.text);
    INFO(c.text);
    CHECK(token.is(Token::Integer));
    CHECK(token.intValue == c.value);
    CHECK(token.spelling == c.text);
  }
}

TEST_CASE("float literals in every spelling of spec section 9", "[lexer]") {
  struct Case { const char *text; double value; };
  for (Case c : {Case{"1.5", 1.5}, Case{".5", 0.5}, Case{"5.", 5.0},
                 Case{"1e3", 1000.0}, Case{"1E+3", 1000.0}, Case{"0.5", 0.5},
                 Case{"-1e-5", -1e-5}, Case{"-.5", -0.5}, Case{"2.5e-3", 2.5e-3},
                 Case{"1.e2", 100.0}, Case{"-0.0", 0.0}}) {
    Token token = lexOne(c.text);
    INFO(c.text);
    CHECK(token.is(Token::Float));
    CHECK(token.floatValue == c.value);
    CHECK(token.spelling == c.text);
  }
  SECTION("'1' is an integer token; the parser gives it a float dtype") {
    CHECK(lexOne("1").is(Token::Integer));
  }
  SECTION("-0.0 keeps its sign") {
    CHECK(std::signbit(lexOne("-0.0").floatValue));
  }
}

TEST_CASE("inf, -inf and nan", "[lexer]") {
  SECTION("-inf is one float token") {
    Token token = lexOne("-inf");
    CHECK(token.is(Token::Float));
    CHECK(std::isinf(token.floatValue));
    CHECK(token.floatValue < 0);
  }
  SECTION("inf and nan are bare words that the parser reads as floats") {
    for (const char *word : {"inf", "nan"}) {
      Token token = lexOne(word);
      CHECK(token.is(Token::BareIdent));
      CHECK(token.spelling == word);
      CHECK(token.isKeyword(word));
    }
  }
  SECTION("-inf followed by name characters is not -inf") {
    std::vector<Token> tokens = lexAll("-infinity");
    CHECK_FALSE(tokens.front().is(Token::Float));
    CHECK(tokens.front().spelling != "-inf");
  }
  SECTION("-inf before punctuation") {
    std::vector<Token> tokens = lexAll("[-inf,inf]");
    REQUIRE(tokens.size() == 6);
    CHECK(tokens[1].is(Token::Float));
    CHECK(tokens[1].spelling == "-inf");
    CHECK(tokens[2].is(Token::Comma));
    CHECK(tokens[3].is(Token::BareIdent));
  }
}

TEST_CASE("string literals with escapes", "[lexer]") {
  Token plain = lexOne("\"cublaslt.matmul_bias_relu\"");
  CHECK(plain.is(Token::String));
  CHECK(plain.stringValue == "cublaslt.matmul_bias_relu");

  Token quote = lexOne(R"("say \"hi\"")");
  CHECK(quote.is(Token::String));
  CHECK(quote.stringValue == "say \"hi\"");
  CHECK(quote.spelling == R"("say \"hi\"")");

  Token backslash = lexOne(R"("a\\b\\")");
  CHECK(backslash.stringValue == "a\\b\\");

  CHECK(lexOne("\"\"").stringValue.empty());
}

TEST_CASE("local and global names", "[lexer]") {
  struct Case { const char *text; Token::Kind kind; const char *name; };
  for (Case c : {Case{"%0", Token::LocalName, "0"},
                 Case{"%12", Token::LocalName, "12"},
                 Case{"%007", Token::LocalName, "007"},
                 Case{"%a.b$c-d", Token::LocalName, "a.b$c-d"},
                 Case{"%gelu_out", Token::LocalName, "gelu_out"},
                 Case{"%_x", Token::LocalName, "_x"},
                 Case{"@f", Token::GlobalName, "f"},
                 Case{"@cublaslt.matmul_bias_relu", Token::GlobalName,
                      "cublaslt.matmul_bias_relu"},
                 Case{"@0", Token::GlobalName, "0"}}) {
    Token token = lexOne(c.text);
    INFO(c.text);
    CHECK(token.kind == c.kind);
    CHECK(token.stringValue == c.name);
    CHECK(token.spelling == c.text);
  }
  SECTION("%007 and %7 are different names") {
    CHECK(lexOne("%007").stringValue != lexOne("%7").stringValue);
  }
  SECTION("a numeric name stops at the first non-digit") {
    std::vector<Token> tokens = lexAll("%0abc");
    REQUIRE(tokens.size() == 3);
    CHECK(tokens[0].stringValue == "0");
    CHECK(tokens[1].is(Token::BareIdent));
  }
}

TEST_CASE("bare words: keywords, op names, dtypes, dims", "[lexer]") {
  for (const char *word : {"nn.relu", "nn.gelu_tanh", "func", "dataflow",
                           "f16", "bf16", "seq_len", "true", "call_extern"}) {
    Token token = lexOne(word);
    INFO(word);
    CHECK(token.is(Token::BareIdent));
    CHECK(token.spelling == word);
  }
  SECTION("a type is a dtype word glued to '['") {
    std::vector<Token> tokens = lexAll("f16[4096,n]");
    REQUIRE(tokens.size() == 7);
    CHECK(tokens[0].spelling == "f16");
    CHECK(tokens[1].is(Token::LSquare));
    CHECK(tokens[2].intValue == 4096);
    CHECK(tokens[4].is(Token::BareIdent));
    CHECK(tokens[5].is(Token::RSquare));
  }
}

TEST_CASE("punctuation and the arrow", "[lexer]") {
  std::vector<Token> tokens = lexAll("( ) { } [ ] < > , : = -> |");
  std::vector<Token::Kind> expected = {
      Token::LParen,  Token::RParen, Token::LBrace,  Token::RBrace,
      Token::LSquare, Token::RSquare, Token::Less,   Token::Greater,
      Token::Comma,   Token::Colon,  Token::Equal,   Token::Arrow,
      Token::Pipe,    Token::Eof};
  REQUIRE(tokens.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("token " << i);
    CHECK(tokens[i].kind == expected[i]);
  }
  CHECK(tokens[11].spelling == "->");
  SECTION("the arrow needs no spaces around it") {
    std::vector<Token> glued = lexAll(")->f32[]");
    REQUIRE(glued.size() >= 3);
    CHECK(glued[1].is(Token::Arrow));
    CHECK(glued[2].spelling == "f32");
  }
}

TEST_CASE("comments and line endings are skipped", "[lexer]") {
  std::vector<Token> tokens =
      lexAll("// header\r\n%a // trailing\r\n\t  @b// no space\n// last");
  REQUIRE(tokens.size() == 3);
  CHECK(tokens[0].stringValue == "a");
  CHECK(tokens[1].stringValue == "b");
  CHECK(tokens[2].is(Token::Eof));
  SECTION("a token's location points into the buffer") {
    llvm::StringRef text = "  %x";
    Token token = Lexer(text).next();
    CHECK(token.getLoc().getPointer() == text.data() + 2);
    CHECK(token.getRange().End.getPointer() == text.end());
  }
}

TEST_CASE("lexical errors carry a message and point at the text", "[lexer]") {
  struct Case { const char *text; const char *message; size_t offset; };
  for (Case c : {
           Case{"$", "unexpected character '$'", 0},
           Case{"  #", "unexpected character '#'", 2},
           Case{"?x", "unexpected character '?'", 0},
           Case{"\xc3\xa9", "unexpected non-ASCII character", 0},
           Case{"\"abc", "unterminated string literal", 0},
           Case{"\"ab\ncd\"", "unterminated string literal", 0},
           Case{R"("a\nb")", "unknown escape in string; only \\\" and \\\\ exist", 2},
           Case{"%", "expected a name after '%'", 0},
           Case{"% x", "expected a name after '%'", 0},
           Case{"@-f", "expected a name after '@'", 0},
           Case{"1e", "malformed exponent in number", 0},
           Case{"1E+", "malformed exponent in number", 0},
           Case{"12abc", "malformed number", 0},
           Case{"1.5.2", "malformed number", 0},
           Case{".", "malformed number", 0},
           Case{"1e999", "float literal is out of range", 0},
           Case{"-1e999", "float literal is out of range", 0},
           Case{"9223372036854775808", "integer literal out of range of i64", 0},
       }) {
    llvm::StringRef text = c.text;
    std::vector<Token> tokens = lexAll(text);
    INFO("lexing '" << c.text << "'");
    REQUIRE(tokens.back().is(Token::Error));
    CHECK(tokens.back().stringValue == c.message);
    CHECK(tokens.back().spelling.data() == text.data() + c.offset);
    CHECK_FALSE(tokens.back().spelling.empty());
  }
}
