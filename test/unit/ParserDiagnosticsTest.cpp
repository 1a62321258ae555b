//===- ParserDiagnosticsTest.cpp - Located errors and round-trip ----------===//
#include "TestUtil.h"

#include <catch2/catch.hpp>

using namespace fusec;
using fusec::test::CapturedDiag;
using fusec::test::Parsed;

/// The first error of parsing `text`, as `line:column: message`.
static std::string errorOf(const std::string &text) {
  Parsed parsed(text);
  CHECK_FALSE(parsed.module);
  CHECK(parsed.numErrors() == 1); // one diagnostic per malformed input
  return parsed.firstError();
}

TEST_CASE("syntax errors point at the offending token", "[parser][diagnostics]") {
  SECTION("unknown operator with a suggestion") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = relu(%x)\n  return %y\n}\n") ==
          "2:7: unknown operator 'relu'; did you mean 'nn.relu'?");
  }
  SECTION("expected X: the caret is at the token found instead") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = add(%x %x)\n  return %y\n}\n") ==
          "2:14: expected ',' or ')' in the operand list, found '%x'");
  }
  SECTION("expected X at the end of the file") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  return %x\n") ==
          "3:0: expected '}' after the return value, found end of file");
  }
  SECTION("a bare dtype is not a type") {
    CHECK(errorOf("func @f(%x: f32) -> f32[] {\n  return %x\n}\n") ==
          "1:15: expected '[' after dtype 'f32', found ')'; a scalar type is written 'f32[]'");
  }
  SECTION("no whitespace between a dtype and '['") {
    CHECK(errorOf("func @f(%x: f32 [4]) -> f32[4] {\n  return %x\n}\n") ==
          "1:16: no whitespace is allowed between a dtype and '['");
  }
  SECTION("no trailing commas") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[] {\n  %y = sum(%x) {axis = [0,]}\n  return %y\n}\n") ==
          "2:26: expected a value after ',', found ']'");
    CHECK(errorOf("func @f(%x: f32[4,]) -> f32[4] {\n  return %x\n}\n") ==
          "1:18: expected a dimension after ',', found ']'");
  }
  SECTION("a lexical error is reported as itself") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = call_extern \"abc(%x) : f32[4]\n  return %y\n}\n") ==
          "2:19: unterminated string literal");
  }
  SECTION("unknown dtype") {
    CHECK(errorOf("func @f(%x: f64[4]) -> f32[4] {\n  return %x\n}\n") ==
          "1:12: unknown dtype 'f64'; the dtypes are f32, f16, bf16, i8, i32, i64 and bool");
  }
  SECTION("columns count bytes and CRLF ends one line") {
    CHECK(errorOf("// \xc3\xa9\xc3\xa9\r\nfunc @f(%x: f32[4]) -> f32[4] {\r\n"
                  "  %y = exp(%x) $\r\n  return %y\r\n}\r\n") ==
          "3:15: unexpected character '$'");
  }
}

TEST_CASE("scoping errors", "[parser][diagnostics]") {
  SECTION("use of an undefined value") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = add(%x, %z)\n  return %y\n}\n") ==
          "2:15: use of undefined value '%z'");
  }
  SECTION("a binding cannot use itself") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = add(%y, %x)\n  return %y\n}\n") ==
          "2:11: use of undefined value '%y'");
  }
  SECTION("redefinition, with a note at the first definition") {
    Parsed parsed("func @f(%x: f32[4]) -> f32[4] {\n  %x = exp(%x)\n  return %x\n}\n");
    CHECK_FALSE(parsed.module);
    REQUIRE(parsed.diags.size() == 2);
    CHECK(parsed.diags[0].str() == "2:2: redefinition of value '%x'");
    CHECK(parsed.diags[1].kind == llvm::SourceMgr::DK_Note);
    CHECK(parsed.diags[1].str() == "1:8: previous definition is here");
  }
  SECTION("a block value not listed in 'output'") {
    Parsed parsed("func @f(%x: f32[4]) -> f32[4] {\n  dataflow {\n    %t = exp(%x)\n  }\n"
                  "  %y = exp(%t)\n  return %y\n}\n");
    CHECK_FALSE(parsed.module);
    REQUIRE(parsed.diags.size() == 2);
    CHECK(parsed.diags[0].str() == "5:11: '%t' is defined inside a dataflow block "
                                   "and not listed in its 'output'");
    CHECK(parsed.diags[1].str() == "3:4: defined here");
  }
  SECTION("'output' lists only values of its block") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  dataflow {\n    %t = exp(%x)\n"
                  "    output %x\n  }\n  return %x\n}\n") ==
          "4:11: 'output' may only list values defined in this dataflow block; '%x' is not");
  }
}

TEST_CASE("semantic errors after parsing", "[parser][diagnostics]") {
  SECTION("a written type that disagrees with inference") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = exp(%x) : f32[5]\n  return %y\n}\n") ==
          "2:17: type mismatch: 'exp' produces f32[4], but the binding is written f32[5]");
  }
  SECTION("a return type that disagrees with the returned value") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[2] {\n  return %x\n}\n") ==
          "2:2: '@f' declares return type f32[2] but returns f32[4]");
  }
  SECTION("a float literal with an integer tensor") {
    CHECK(errorOf("func @f(%x: i32[4]) -> i32[4] {\n  %y = add(%x, 0.5)\n  return %y\n}\n") ==
          "2:15: float literal '0.5' cannot be an i32");
  }
  SECTION("a float literal that overflows its dtype or cannot be one, quoted as written") {
    CHECK(errorOf("func @f(%x: f16[4]) -> f16[4] {\n  %y = multiply(%x, 70000.0)\n  return %y\n}\n") ==
          "2:20: float literal '70000.0' overflows f16");
    CHECK(errorOf("func @f(%x: i8[4]) -> i8[4] {\n  %y = add(%x, 3e2)\n  return %y\n}\n") ==
          "2:15: float literal '3e2' cannot be an i8");
    CHECK(errorOf("func @f() -> f32[] {\n  %c = constant 1e39 : f32[]\n  return %c\n}\n") ==
          "2:16: float literal '1e39' overflows f32"); // as written
    // A spelling that no longer reads back to the value (a pass changed a
    // copy) is not quoted.
    Attr changed = Attr::makeFloat(2.5);
    changed.text = "1e6";
    CHECK(checkLiteralForDType(changed, DType::i32) == "float literal '2.5' cannot be an i32");
  }
  SECTION("a constant needs its type") {
    CHECK(errorOf("func @f() -> f32[] {\n  %c = constant 1.0\n  return %c\n}\n") ==
          "3:2: a constant needs its type: write 'constant ... : f32[...]', found 'return'");
  }
  SECTION("dense nesting must match the shape") {
    CHECK(errorOf("func @f() -> f32[2,2] {\n  %c = constant dense<[[1, 2], [3]]> : f32[2,2]\n  return %c\n}\n") ==
          "2:31: dense value has 1 elements in dimension 1, but the type says 2");
  }
  SECTION("literals are not call_extern operands") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = call_extern \"lib.fn\"(%x, 1.0) : f32[4]\n  return %y\n}\n") ==
          "2:32: 'call_extern \"lib.fn\"' does not accept literal operands; bind a 'constant' instead");
  }
  SECTION("call_extern needs its type") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = call_extern \"lib.fn\"(%x)\n  return %y\n}\n") ==
          "2:7: 'call_extern \"lib.fn\"' needs its result type written as ': TYPE'");
  }
  SECTION("get out of range") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %t = tuple(%x)\n  %g = get(%t, 1)\n  return %g\n}\n") ==
          "3:15: tuple index 1 is out of range for (f32[4])");
  }
  SECTION("recursion through two functions") {
    CHECK(errorOf("func @f(%x: f32[4]) -> f32[4] {\n  %y = call @g(%x)\n  return %y\n}\n"
                  "func @g(%x: f32[4]) -> f32[4] {\n  %y = call @f(%x)\n  return %y\n}\n") ==
          "6:12: recursive call (@f -> @g -> @f); FIR has no control flow to end it");
  }
  SECTION("symbolic dims must be provably equal") {
    CHECK(errorOf("func @f(%a: f32[n,4], %b: f32[m,4]) -> f32[n,4] {\n  %y = add(%a, %b)\n  return %y\n}\n") ==
          "2:7: 'add' cannot broadcast f32[n,4] and f32[m,4]: dimension 0 is n vs m "
          "(symbolic dims must be provably equal; a symbolic dim is never assumed to be 1)");
  }
  SECTION("sizes: a dim is at most 2^40") {
    CHECK(errorOf("func @f(%x: f32[1099511627777]) -> f32[] {\n  %y = sum(%x)\n  return %y\n}\n") ==
          "1:16: dimension 1099511627777 exceeds the maximum size 2^40");
  }
}

// Spec §9: "a tensor's element count must fit in int64". 2^40 * 8388607 =
// 2^63 - 2^40 does; 2^40 * 8388608 = 2^63 does not.
TEST_CASE("element counts up to INT64_MAX are accepted", "[parser][diagnostics]") {
  Parsed fits("func @f(%x: f32[1099511627776,8388607]) -> f32[] {\n  %y = sum(%x)\n  return %y\n}\n");
  CHECK(fits.firstError() == "");
  CHECK(errorOf("func @f(%x: f32[1099511627776,8388608]) -> f32[] {\n  %y = sum(%x)\n  return %y\n}\n") ==
        "1:12: tensor type has more elements than fit in i64");
}

TEST_CASE("print, parse and print again is the identity", "[parser][printer]") {
  const char *text = R"fir(
module @varied

// a comment the printer drops
func @main(%x: f16[4096,1], %b: f16[4096,4096], %w: f32[n,128], %i: i64[3]) -> (f16[4096,4096], f32[n,32], f32[3,128]) {
  %k = constant 0.5 : f16[]
  %d = constant dense<[[1, -2], [3.25, 4]]> : f32[2,2]
  %s = constant splat<-inf> : f32[64]
  %r = constant random<seed = 7> : f16[4,4]
  %q = constant dense<[true, false]> : bool[2]
  dataflow {
    %0 = multiply(%x, 0.5) : f16[4096,1]
    %1 = subtract(%x, %0)
    %2 = exp(%1)
    %y = add(%b, %2)
    %m = maximum(%y, nan)
    output %y, %m
  }
  dataflow {
  }
  dataflow {
    %007 = reshape(%w) {shape = [n, -1, 4]}
    %7 = sum(%007) {axis = -1, keepdims = false}
    %e = clip(%7) {min = -1e-05, max = 100000000000000000000.0}
    output %e
  }
  %t = tuple(%y, %e)
  %none = tuple()
  %g = get(%t, 0)
  %gv = %g
  %a.b$c-d = take(%w, %i) {axis = 0}
  %c = call @helper(%a.b$c-d)
  %ext = call_extern "lib.\"quoted\"\\fn"(%c, %k) {alpha = 1, beta = [1.5, 2], tag = "t"} : f32[3,128]
  return (%gv, %e, %ext)
}

func @helper(%v: f32[3,128]) -> f32[3,128] attributes {primitive = true, composite = "cublaslt.x"} {
  %0 = nn.softmax(%v) {axis = 1}
  return %0
}
)fir";
  Parsed first(text);
  REQUIRE(first.module);
  std::string printed = printModuleToString(*first.module);
  Parsed second(printed);
  INFO(printed);
  REQUIRE(second.module);
  CHECK(printModuleToString(*second.module) == printed);
  CHECK(printed.find("%7 = sum(%007) {axis = [-1], keepdims = false} : f32[n,32]") !=
        std::string::npos);
  CHECK(printed.find("clip(%7) {min = -1e-05, max = 1e+20}") != std::string::npos);
  CHECK(printed.find("return (%gv, %e, %ext)\n") != std::string::npos);
  CHECK(printed.rfind("module @varied\n\nfunc @main(", 0) == 0);
}
