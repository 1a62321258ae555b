//===- TypeInferenceTest.cpp - Elementwise ops and NumPy broadcasting -----===//
//
// Expected types follow NumPy broadcasting and TVM Relax dtype rules (spec
// §4, §9), computed by hand, not taken from fusec's output. Each check writes
// the expected type as the function's return type too (CHECK_INFERS).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "fusec/IR/Ops.h"

#include <catch2/catch.hpp>

using namespace fusec;
using fusec::test::at;
using fusec::test::inferError;
using fusec::test::inferType;

TEST_CASE("unary elementwise ops keep type and shape", "[infer][unary]") {
  for (const char *op : {"negative", "abs", "exp", "log", "sqrt", "rsqrt", "sin",
                         "cos", "tanh", "sigmoid", "erf", "floor", "ceil", "round",
                         "sign", "nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu"}) {
    INFO(op);
    CHECK_INFERS("%x: f16[n,4]", std::string(op) + "(%x)", "f16[n,4]");
    CHECK_INFERS("%x: bf16[]", std::string(op) + "(%x)", "bf16[]");
    CHECK_INFERS("%x: f32[2,0,3]", std::string(op) + "(%x)", "f32[2,0,3]");
  }
  SECTION("ops defined on integers accept them") {
    for (const char *op : {"negative", "abs", "sign", "nn.relu"}) {
      INFO(op);
      CHECK_INFERS("%x: i32[3]", std::string(op) + "(%x)", "i32[3]");
      CHECK_INFERS("%x: i8[3]", std::string(op) + "(%x)", "i8[3]");
    }
  }
  SECTION("logical_not on bool") {
    CHECK_INFERS("%x: bool[2,2]", "logical_not(%x)", "bool[2,2]");
  }
  SECTION("transcendental ops reject integers") {
    CHECK(inferError("%x: i32[4]", "exp(%x)") ==
          at("exp(%x)", "%x", "'exp' requires a floating-point operand, got i32[4]"));
  }
}

// TVM Relax registers floor, ceil and round with require_float_dtype = false
// (src/relax/op/tensor/unary.cc), and NumPy accepts integer input as well.
TEST_CASE("floor, ceil and round accept integer tensors", "[infer][unary]") {
  for (const char *op : {"floor", "ceil", "round"}) {
    INFO(op);
    CHECK_INFERS("%x: i32[3]", std::string(op) + "(%x)", "i32[3]");
  }
}

TEST_CASE("clip and astype", "[infer][unary]") {
  CHECK_INFERS("%x: f16[n,4]", "clip(%x) {min = 0.0, max = 6.0}", "f16[n,4]");
  CHECK_INFERS("%x: i32[5]", "clip(%x) {min = -3, max = 3}", "i32[5]");
  CHECK_INFERS("%x: f32[n,4]", "astype(%x) {dtype = \"f16\"}", "f16[n,4]");
  CHECK_INFERS("%x: f32[3]", "astype(%x) {dtype = \"bool\"}", "bool[3]");
  CHECK_INFERS("%x: i8[2,2]", "astype(%x) {dtype = \"bf16\"}", "bf16[2,2]");
  SECTION("errors") {
    const char *bound = "clip(%x) {min = 0.5, max = 3}";
    CHECK(inferError("%x: i32[5]", bound) ==
          at(bound, "0.5", "clip bound: float literal '0.5' cannot be an i32"));
    const char *order = "clip(%x) {min = 2.0, max = 1.0}";
    CHECK(inferError("%x: f32[5]", order) ==
          at(order, "2.0", "clip requires min <= max"));
    const char *missing = "clip(%x) {min = 2.0}";
    CHECK(inferError("%x: f32[5]", missing) == at(missing, "clip", "'clip' requires attribute 'max'"));
    const char *dtype = "astype(%x) {dtype = \"f64\"}";
    CHECK(inferError("%x: f32[5]", dtype) ==
          at(dtype, "\"f64\"", "attribute 'dtype' of 'astype' must be a dtype string such as \"f16\", got \"f64\""));
  }
}

TEST_CASE("binary ops broadcast the NumPy way", "[infer][binary]") {
  for (const char *op : {"add", "subtract", "multiply", "divide", "power",
                         "maximum", "minimum"}) {
    INFO(op);
    std::string name = op;
    CHECK_INFERS("%a: f32[4,1], %b: f32[3]", name + "(%a, %b)", "f32[4,3]");
    CHECK_INFERS("%a: f16[2,1,5], %b: f16[7,1]", name + "(%a, %b)", "f16[2,7,5]");
    CHECK_INFERS("%a: i64[], %b: i64[6]", name + "(%a, %b)", "i64[6]");
    CHECK_INFERS("%a: i32[2,3]", name + "(%a, 2)", "i32[2,3]");
    CHECK_INFERS("%a: bf16[2,3]", name + "(1.5, %a)", "bf16[2,3]");
  }
  for (const char *op : {"equal", "not_equal", "less", "less_equal", "greater",
                         "greater_equal"}) {
    INFO(op);
    std::string name = op;
    CHECK_INFERS("%a: f32[4,1], %b: f32[3]", name + "(%a, %b)", "bool[4,3]");
    CHECK_INFERS("%a: i32[n]", name + "(%a, 0)", "bool[n]");
    CHECK_INFERS("%a: f16[2,2]", name + "(%a, 0.5)", "bool[2,2]");
    CHECK_INFERS("%a: bool[3], %b: bool[]", name + "(%a, %b)", "bool[3]");
  }
  for (const char *op : {"logical_and", "logical_or"}) {
    INFO(op);
    std::string name = op;
    CHECK_INFERS("%a: bool[4,1], %b: bool[1,5]", name + "(%a, %b)", "bool[4,5]");
    CHECK_INFERS("%a: bool[4]", name + "(%a, true)", "bool[4]");
  }
}

TEST_CASE("broadcasting with symbolic and zero-size dims", "[infer][binary]") {
  CHECK_INFERS("%a: f32[n,1], %b: f32[1,m]", "add(%a, %b)", "f32[n,m]");
  CHECK_INFERS("%a: f32[n,4], %b: f32[4]", "add(%a, %b)", "f32[n,4]");
  CHECK_INFERS("%a: f32[1], %b: f32[n]", "add(%a, %b)", "f32[n]");
  CHECK_INFERS("%a: f32[n], %b: f32[n]", "add(%a, %b)", "f32[n]");
  CHECK_INFERS("%a: f32[b,s,h], %b: f32[s,1]", "multiply(%a, %b)", "f32[b,s,h]");
  CHECK_INFERS("%a: f32[0,3], %b: f32[1,3]", "add(%a, %b)", "f32[0,3]");
  CHECK_INFERS("%a: f32[0], %b: f32[1]", "add(%a, %b)", "f32[0]");
  SECTION("broadcastShapes directly") {
    std::string error;
    auto shape = broadcastShapes({Dim::named("n"), Dim::of(1)},
                                 {Dim::of(5), Dim::of(1), Dim::of(3)}, error);
    REQUIRE(shape);
    CHECK(Type::tensor(DType::f32, *shape).str() == "f32[5,n,3]");
    CHECK_FALSE(broadcastShapes({Dim::named("n")}, {Dim::of(3)}, error));
    CHECK_FALSE(broadcastShapes({Dim::of(0)}, {Dim::of(3)}, error));
  }
  SECTION("a symbolic dim is never assumed to be 1") {
    const char *expr = "add(%a, %b)";
    CHECK(inferError("%a: f32[n], %b: f32[3]", expr) ==
          at(expr, "add", "'add' cannot broadcast f32[n] and f32[3]: dimension 0 is n vs 3 "
                          "(symbolic dims must be provably equal; a symbolic dim is never assumed to be 1)"));
  }
  SECTION("static mismatch") {
    const char *expr = "multiply(%a, %b)";
    CHECK(inferError("%a: f32[2,3], %b: f32[4]", expr) ==
          at(expr, "multiply", "'multiply' cannot broadcast f32[2,3] and f32[4]: dimension 1 is 3 vs 4"));
  }
}

TEST_CASE("binary dtype rules", "[infer][binary]") {
  SECTION("dtypes do not mix silently") {
    const char *expr = "add(%a, %b)";
    CHECK(inferError("%a: f32[4], %b: f16[4]", expr) ==
          at(expr, "%b", "'add' operands have different dtypes f32 and f16; convert one with 'astype'"));
  }
  SECTION("a float literal with an integer tensor") {
    const char *expr = "multiply(%a, 0.5)";
    CHECK(inferError("%a: i64[4]", expr) == at(expr, "0.5", "float literal '0.5' cannot be an i64"));
  }
  SECTION("an integer literal that overflows the tensor's dtype") {
    const char *expr = "add(%a, 300)";
    CHECK(inferError("%a: i8[4]", expr) == at(expr, "300", "integer literal '300' overflows i8"));
  }
  SECTION("logical ops need bool") {
    const char *expr = "logical_and(%a, %a)";
    CHECK(inferError("%a: f32[4]", expr) ==
          at(expr, "%a", "'logical_and' requires bool operand, got f32[4]"));
  }
  SECTION("arithmetic needs numbers") {
    const char *expr = "add(%a, %a)";
    CHECK(inferError("%a: bool[4]", expr) == at(expr, "%a", "'add' requires numeric operand, got bool[4]"));
  }
  SECTION("operand count") {
    const char *expr = "add(%a)";
    CHECK(inferError("%a: f32[4]", expr) == at(expr, "add", "'add' takes 2 operand(s), but 1 were given"));
  }
  SECTION("literals only") {
    const char *expr = "add(1.0, 2.0)";
    CHECK(inferError("", expr) == at(expr, "1.0", "cannot infer the dtype of this literal: "
                                                  "'add' needs at least one tensor operand"));
  }
}

TEST_CASE("where broadcasts condition and branches", "[infer][ternary]") {
  CHECK_INFERS("%c: bool[4,1], %x: f32[3], %z: f32[]", "where(%c, %x, %z)", "f32[4,3]");
  CHECK_INFERS("%c: bool[n,1], %x: f16[n,8]", "where(%c, %x, 0.0)", "f16[n,8]");
  CHECK_INFERS("%c: bool[2,1,1], %x: i32[5,1], %z: i32[1,6]", "where(%c, %x, %z)", "i32[2,5,6]");
  CHECK_INFERS("%x: f32[3]", "where(true, %x, 1.0)", "f32[3]");
  CHECK_INFERS("%c: bool[3]", "where(%c, %c, false)", "bool[3]");
  SECTION("errors") {
    const char *expr = "where(%c, %x, %x)";
    CHECK(inferError("%c: f32[3], %x: f32[3]", expr) ==
          at(expr, "%c", "'where' requires a bool condition as its first operand, got f32[3]"));
    CHECK(inferError("%c: bool[3], %x: f32[3], %z: i32[3]", "where(%c, %x, %z)") ==
          at("where(%c, %x, %z)", "%z", "'where' operands have different dtypes f32 and i32; "
                                        "convert one with 'astype'"));
    CHECK(inferError("%c: bool[2], %x: f32[3]", expr) ==
          at(expr, "where", "'where' cannot broadcast the condition bool[2] with f32[3]: "
                            "dimension 0 is 2 vs 3"));
  }
}
