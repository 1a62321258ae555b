//===- TypeInferenceShapeTest.cpp - Injective ops of spec §4 --------------===//
//
// Expected shapes are NumPy's (np.reshape, np.transpose, np.expand_dims,
// np.squeeze, np.broadcast_to, np.concatenate, np.split, slicing, np.take)
// and TVM Relax's where the spec names it (split by sections).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "fusec/IR/Ops.h"
#include "fusec/Printer/Printer.h"

#include <catch2/catch.hpp>

using fusec::test::at;
using fusec::test::inferError;
using fusec::test::Parsed;
using namespace fusec;

TEST_CASE("reshape", "[infer][injective]") {
  CHECK_INFERS("%x: f32[2,3,4]", "reshape(%x) {shape = [6, 4]}", "f32[6,4]");
  CHECK_INFERS("%x: f32[2,3,4]", "reshape(%x) {shape = [-1, 4]}", "f32[6,4]");
  CHECK_INFERS("%x: f32[2,3,4]", "reshape(%x) {shape = [-1]}", "f32[24]");
  CHECK_INFERS("%x: f32[2,3,4]", "reshape(%x) {shape = [4, -1, 2]}", "f32[4,3,2]");
  CHECK_INFERS("%x: f32[1]", "reshape(%x) {shape = []}", "f32[]");
  CHECK_INFERS("%x: f32[0,4]", "reshape(%x) {shape = [-1, 2]}", "f32[0,2]");
  SECTION("symbolic dims") {
    CHECK_INFERS("%x: f32[n,128]", "reshape(%x) {shape = [n, -1]}", "f32[n,128]");
    CHECK_INFERS("%x: f32[n,4,8]", "reshape(%x) {shape = [n, -1]}", "f32[n,32]");
    CHECK_INFERS("%x: f32[n,4,8]", "reshape(%x) {shape = [-1, 32]}", "f32[n,32]");
    CHECK_INFERS("%x: f32[n,4]", "reshape(%x) {shape = [n, 2, -1]}", "f32[n,2,2]");
    CHECK_INFERS("%x: f16[b,s,64]", "reshape(%x) {shape = [b, s, 4, 16]}", "f16[b,s,4,16]");
  }
  SECTION("errors") {
    const char *counts = "reshape(%x) {shape = [4, 2]}";
    CHECK(inferError("%x: f32[2,3]", counts) ==
          at(counts, "reshape", "cannot reshape f32[2,3] to [4, 2]: the element counts differ"));
    const char *twice = "reshape(%x) {shape = [-1, -1]}";
    CHECK(inferError("%x: f32[2,3]", twice) == at(twice, "-1]", "reshape allows at most one -1"));
    const char *indivisible = "reshape(%x) {shape = [4, -1]}";
    CHECK(inferError("%x: f32[2,3]", indivisible) ==
          at(indivisible, "reshape", "cannot reshape f32[2,3] to [4, -1]: the element count "
                                     "is not divisible by the other sizes"));
    const char *other = "reshape(%x) {shape = [m]}";
    CHECK(inferError("%x: f32[n]", other) ==
          at(other, "reshape", "cannot reshape f32[n] to [m]: the element counts differ"));
  }
}

TEST_CASE("permute_dims", "[infer][injective]") {
  CHECK_INFERS("%x: f32[2,3,4]", "permute_dims(%x)", "f32[4,3,2]");
  CHECK_INFERS("%x: f32[2,3,4]", "permute_dims(%x) {axes = [1, 0, 2]}", "f32[3,2,4]");
  CHECK_INFERS("%x: f32[2,3,4]", "permute_dims(%x) {axes = [-1, 0, 1]}", "f32[4,2,3]");
  CHECK_INFERS("%x: f16[n,m]", "permute_dims(%x)", "f16[m,n]");
  CHECK_INFERS("%x: f32[]", "permute_dims(%x)", "f32[]");
  const char *shortAxes = "permute_dims(%x) {axes = [1, 0]}";
  CHECK(inferError("%x: f32[2,3,4]", shortAxes) ==
        at(shortAxes, "[", "permute_dims needs 3 axes for f32[2,3,4]"));
  const char *repeated = "permute_dims(%x) {axes = [0, 0]}";
  CHECK(inferError("%x: f32[2,3]", repeated) == at(repeated, "0]", "axis 0 is repeated"));
}

TEST_CASE("expand_dims and squeeze", "[infer][injective]") {
  CHECK_INFERS("%x: f32[3,4]", "expand_dims(%x) {axis = 0}", "f32[1,3,4]");
  CHECK_INFERS("%x: f32[3,4]", "expand_dims(%x) {axis = 1}", "f32[3,1,4]");
  CHECK_INFERS("%x: f32[3,4]", "expand_dims(%x) {axis = -1}", "f32[3,4,1]");
  CHECK_INFERS("%x: f32[3,4]", "expand_dims(%x) {axis = [0, 2]}", "f32[1,3,1,4]");
  CHECK_INFERS("%x: f32[3,4]", "expand_dims(%x) {axis = [0, -1]}", "f32[1,3,4,1]");
  CHECK_INFERS("%x: f32[]", "expand_dims(%x) {axis = [0, 1]}", "f32[1,1]");
  CHECK_INFERS("%x: f32[1,n,1,4]", "squeeze(%x)", "f32[n,4]");
  CHECK_INFERS("%x: f32[1,n,1,4]", "squeeze(%x) {axis = [2]}", "f32[1,n,4]");
  CHECK_INFERS("%x: f32[1,n,1,4]", "squeeze(%x) {axis = -2}", "f32[1,n,4]");
  CHECK_INFERS("%x: f32[1,3,1]", "squeeze(%x) {axis = [0, 2]}", "f32[3]");
  CHECK_INFERS("%x: f32[2,3]", "squeeze(%x)", "f32[2,3]");
  const char *range = "expand_dims(%x) {axis = 3}";
  CHECK(inferError("%x: f32[3,4]", range) ==
        at(range, "3}", "axis 3 is out of range for rank 3 (valid: [-3, 3))"));
  const char *notOne = "squeeze(%x) {axis = [1]}";
  CHECK(inferError("%x: f32[1,n]", notOne) ==
        at(notOne, "[", "cannot squeeze axis 1 of f32[1,n]: its size is n, not 1"));
}

TEST_CASE("broadcast_to", "[infer][injective]") {
  CHECK_INFERS("%x: f32[3]", "broadcast_to(%x) {shape = [2, 3]}", "f32[2,3]");
  CHECK_INFERS("%x: f32[4,1]", "broadcast_to(%x) {shape = [2, 4, 5]}", "f32[2,4,5]");
  CHECK_INFERS("%x: f32[n,1]", "broadcast_to(%x) {shape = [n, 8]}", "f32[n,8]");
  // A symbolic dim the operand lacks: the kernel takes it from a parameter.
  CHECK_INFERS("%x: f32[1], %m: f32[m]", "broadcast_to(%x) {shape = [m]}", "f32[m]");
  CHECK_INFERS("%x: f32[4], %m: i64[2,m]", "broadcast_to(%x) {shape = [m, 3, 4]}",
               "f32[m,3,4]");
  CHECK_INFERS("%x: f32[]", "broadcast_to(%x) {shape = [2, 2]}", "f32[2,2]");
  const char *bad = "broadcast_to(%x) {shape = [4]}";
  CHECK(inferError("%x: f32[3]", bad) ==
        at(bad, "broadcast_to", "cannot broadcast f32[3] to [4]: the operand's dimension 0 (3) faces dimension 0 of the shape (4)"));
  const char *lower = "broadcast_to(%x) {shape = [3]}";
  CHECK(inferError("%x: f32[2,3]", lower) ==
        at(lower, "broadcast_to", "cannot broadcast f32[2,3] to the lower rank 1"));
}

TEST_CASE("a dim an op introduces reaches its kernel through a parameter",
          "[infer][legalize]") {
  // %t binds n only inside a tuple; %x (a tensor) binds n and m; %w binds m.
  Parsed parsed("func @f(%t: (f32[n]), %w: f32[m], %x: f32[m,n], %y: f32[4]) -> f32[n,m,4] {\n"
                "  %b = broadcast_to(%y) {shape = [n, m, 4]}\n"
                "  %c = add(%b, 1.0)\n"
                "  return %c\n"
                "}\n");
  REQUIRE(parsed.module);
  const Binding &b = *parsed.binding("b");
  CHECK(introducedSymbols(b) == std::vector<std::string>{"n", "m"});
  CHECK(introducedSymbols(*parsed.binding("c")).empty());
  // One parameter binds both: the first tensor parameter with n is %x.
  std::vector<Value *> carriers = dimCarriers(parsed.function(), b);
  REQUIRE(carriers.size() == 1);
  CHECK(carriers[0]->name == "x");
  std::unique_ptr<Kernel> kernel = legalizeOp(b, "k", carriers);
  REQUIRE(kernel->inputs.size() == 2);
  CHECK(kernel->inputs[1].name == "b");
  CHECK(kernel->inputs[1].type.str() == "f32[m,n]");
  CHECK(printKernel(*kernel).find("%out[i0, i1, i2] = %a[i2]") != std::string::npos);
}

TEST_CASE("concat", "[infer][injective]") {
  CHECK_INFERS("%a: f32[2,3], %b: f32[4,3]", "concat(%a, %b)", "f32[6,3]");
  CHECK_INFERS("%a: f32[2,3], %b: f32[1,3], %c: f32[4,3]", "concat(%a, %b, %c) {axis = 0}", "f32[7,3]");
  CHECK_INFERS("%a: f32[n,3], %b: f32[n,5]", "concat(%a, %b) {axis = -1}", "f32[n,8]");
  CHECK_INFERS("%a: f16[2,3]", "concat(%a) {axis = [1]}", "f16[2,3]");
  const char *mismatch = "concat(%a, %b) {axis = 1}";
  CHECK(inferError("%a: f32[2,3], %b: f32[4,3]", mismatch) ==
        at(mismatch, "%b", "concat operands differ in dimension 0: f32[2,3] vs f32[4,3]"));
  const char *dtypes = "concat(%a, %b)";
  CHECK(inferError("%a: f32[2], %b: f16[2]", dtypes) ==
        at(dtypes, "%b", "concat operands must have the same dtype and rank: f32[2] vs f16[2]"));
}

TEST_CASE("split returns a tuple (one section: the operand itself, as TVM)",
          "[infer][injective]") {
  SECTION("by sections: ceil-divided, the last takes the rest (TVM Relax)") {
    CHECK_INFERS("%x: f32[9,4]", "split(%x) {indices_or_sections = 3}",
                 "(f32[3,4], f32[3,4], f32[3,4])");
    CHECK_INFERS("%x: f32[10,4]", "split(%x) {indices_or_sections = 3}",
                 "(f32[4,4], f32[4,4], f32[2,4])");
    CHECK_INFERS("%x: f32[10,4]", "split(%x) {indices_or_sections = 4, axis = 0}",
                 "(f32[3,4], f32[3,4], f32[3,4], f32[1,4])");
    CHECK_INFERS("%x: f32[2,8]", "split(%x) {indices_or_sections = 2, axis = -1}",
                 "(f32[2,4], f32[2,4])");
    CHECK_INFERS("%x: f32[n,8]", "split(%x) {indices_or_sections = 1}", "f32[n,8]");
    CHECK_INFERS("%x: f32[n,8]", "split(%x) {indices_or_sections = 2, axis = 1}",
                 "(f32[n,4], f32[n,4])");
  }
  SECTION("by indices (NumPy: out-of-range indices clamp)") {
    CHECK_INFERS("%x: f32[10]", "split(%x) {indices_or_sections = [2, 5]}",
                 "(f32[2], f32[3], f32[5])");
    CHECK_INFERS("%x: f32[10]", "split(%x) {indices_or_sections = [3, 20]}",
                 "(f32[3], f32[7], f32[0])");
    CHECK_INFERS("%x: f32[4,6]", "split(%x) {indices_or_sections = [0, 6], axis = 1}",
                 "(f32[4,0], f32[4,6], f32[4,0])");
    CHECK_INFERS("%x: f32[10]", "split(%x) {indices_or_sections = []}", "f32[10]");
    CHECK_INFERS("%x: f32[n,4]", "split(%x) {indices_or_sections = []}", "f32[n,4]");
  }
  SECTION("by indices out of order (NumPy and TVM: the section between is empty)") {
    CHECK_INFERS("%x: f32[10]", "split(%x) {indices_or_sections = [5, 2]}",
                 "(f32[5], f32[0], f32[8])");
    CHECK_INFERS("%x: f32[10]", "split(%x) {indices_or_sections = [7, 3, 5]}",
                 "(f32[7], f32[0], f32[2], f32[5])");
  }
  SECTION("error") {
    const char *zero = "split(%x) {indices_or_sections = 0}";
    CHECK(inferError("%x: f32[4]", zero) ==
          at(zero, "0}", "split needs a positive number of sections"));
    const char *negative = "split(%x) {indices_or_sections = [2, -1]}";
    CHECK(inferError("%x: f32[4]", negative) ==
          at(negative, "[2, -1]}",
             "split indices must be non-negative (NumPy counts a negative one from the end, "
             "TVM clamps it to 0)"));
  }
}

TEST_CASE("strided_slice (Python slice lengths)", "[infer][injective]") {
  CHECK_INFERS("%x: f32[10,8]", "strided_slice(%x) {axes = [0], begin = [2], end = [7]}", "f32[5,8]");
  CHECK_INFERS("%x: f32[10,8]", "strided_slice(%x) {axes = [0], begin = [1], end = [10], strides = [3]}",
               "f32[3,8]");
  // range(10)[8:1:-2] = 8, 6, 4, 2
  CHECK_INFERS("%x: f32[10,8]", "strided_slice(%x) {axes = [0], begin = [8], end = [1], strides = [-2]}",
               "f32[4,8]");
  // range(10)[-1:-11:-1] is the whole axis reversed
  CHECK_INFERS("%x: f32[10]", "strided_slice(%x) {axes = [0], begin = [-1], end = [-11], strides = [-1]}",
               "f32[10]");
  // clamping: range(10)[2:100:3] = 2, 5, 8; range(10)[-100:3] = 0, 1, 2
  CHECK_INFERS("%x: f32[10]", "strided_slice(%x) {axes = [0], begin = [2], end = [100], strides = [3]}",
               "f32[3]");
  CHECK_INFERS("%x: f32[10]", "strided_slice(%x) {axes = 0, begin = -100, end = 3}", "f32[3]");
  // range(10)[100:0:-4] = 9, 5, 1
  CHECK_INFERS("%x: f32[10]", "strided_slice(%x) {axes = [0], begin = [100], end = [0], strides = [-4]}",
               "f32[3]");
  // an empty slice
  CHECK_INFERS("%x: f32[10]", "strided_slice(%x) {axes = [0], begin = [5], end = [2]}", "f32[0]");
  CHECK_INFERS("%x: f32[n,10,6]", "strided_slice(%x) {axes = [2, -2], begin = [1, -3], end = [6, 10], strides = [2, 1]}",
               "f32[n,3,3]");
  const char *zero = "strided_slice(%x) {axes = [0], begin = [0], end = [4], strides = [0]}";
  CHECK(inferError("%x: f32[10]", zero) ==
        at(zero, "[0]}", "strided_slice strides must be non-zero"));
  const char *count = "strided_slice(%x) {axes = [0, 1], begin = [0], end = [4, 4]}";
  CHECK(inferError("%x: f32[10,8]", count) ==
        at(count, "strided_slice", "strided_slice needs as many begin, end and strides entries as axes (2)"));
}

TEST_CASE("take", "[infer][injective]") {
  CHECK_INFERS("%x: f32[5], %i: i64[3]", "take(%x, %i)", "f32[3]");
  CHECK_INFERS("%x: f16[4,5,6], %i: i32[2,3]", "take(%x, %i) {axis = 1}", "f16[4,2,3,6]");
  CHECK_INFERS("%x: f32[4,5,6], %i: i64[7]", "take(%x, %i) {axis = -1}", "f32[4,5,7]");
  CHECK_INFERS("%x: f32[n,8], %i: i64[m]", "take(%x, %i) {axis = 0}", "f32[m,8]");
  CHECK_INFERS("%x: f32[4,5], %i: i64[]", "take(%x, %i) {axis = 0}", "f32[5]");
  const char *expr = "take(%x, %i) {axis = 0}";
  CHECK(inferError("%x: f32[5], %i: f32[3]", expr) ==
        at(expr, "%i", "take indices must be i32 or i64, got f32[3]"));
  CHECK(inferError("%x: f32[5], %i: i64[3]", "take(%x, %i) {axis = 1}") ==
        at("take(%x, %i) {axis = 1}", "1}", "axis 1 is out of range for rank 1 (valid: [-1, 1))"));
}
