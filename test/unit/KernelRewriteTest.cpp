//===- KernelRewriteTest.cpp - Index folding, substitution, lane access ---===//
//
// The helpers `lower` builds loops with (lib/IR/KernelRewrite.cpp): folding
// must keep values (checked against direct evaluation over a range), the
// lane classification decides which accesses the CUDA code makes as one
// vector and how the interpreter counts them, so its three answers are
// pinned here.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Kernel.h"

#include <catch2/catch.hpp>

#include <set>

#include <functional>

using namespace fusec;

namespace {
KExprPtr c(int64_t v) { return KExpr::intConst(v); }
KExprPtr v(const char *name) { return KExpr::var(name); }

/// Evaluates an index expression with `x` bound (floor semantics).
int64_t eval(const KExpr &e, int64_t x) {
  auto floorDiv = [](int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  };
  switch (e.kind) {
  case KExpr::IntConst: return e.intValue;
  case KExpr::Var: return x;
  default: break;
  }
  int64_t a = eval(*e.args[0], x), b = eval(*e.args[1], x);
  switch (e.kind) {
  case KExpr::Add: return a + b;
  case KExpr::Sub: return a - b;
  case KExpr::Mul: return a * b;
  case KExpr::FloorDiv: return floorDiv(a, b);
  case KExpr::Mod: return a - floorDiv(a, b) * b;
  case KExpr::Min: return std::min(a, b);
  case KExpr::Max: return std::max(a, b);
  default: return 0;
  }
}
} // namespace

TEST_CASE("foldIndex keeps values and drops identities", "[ir][rewrite]") {
  CHECK(printExpr(*foldIndex(KExpr::Add, v("x"), c(0))) == "x");
  CHECK(printExpr(*foldIndex(KExpr::Mul, c(1), v("x"))) == "x");
  CHECK(printExpr(*foldIndex(KExpr::Mul, v("x"), c(0))) == "0");
  CHECK(printExpr(*foldIndex(KExpr::FloorDiv, v("x"), c(1))) == "x");
  CHECK(printExpr(*foldIndex(KExpr::Mod, v("x"), c(1))) == "0");
  CHECK(printExpr(*foldIndex(KExpr::Mul, c(4), v("x"))) == "x * 4");
  KExprPtr scaled = foldIndex(KExpr::Mul, v("x"), c(8));
  CHECK(printExpr(*foldIndex(KExpr::FloorDiv, scaled, c(4))) == "x * 2");
  CHECK(printExpr(*foldIndex(KExpr::Mod, scaled, c(4))) == "0");
  CHECK(printExpr(*foldIndex(KExpr::Mod, c(-7), c(3))) == "2");     // floor semantics
  CHECK(printExpr(*foldIndex(KExpr::FloorDiv, c(-7), c(2))) == "-4");
  // Whatever folds, the value over a range of x is unchanged.
  std::vector<std::function<KExprPtr()>> builders = {
      [] { return foldIndex(KExpr::FloorDiv, foldIndex(KExpr::Mul, v("x"), c(12)), c(4)); },
      [] { return foldIndex(KExpr::Mod, foldIndex(KExpr::Mul, v("x"), c(6)), c(3)); },
      [] { return foldIndex(KExpr::Add, foldIndex(KExpr::Mul, v("x"), c(1)), c(0)); },
  };
  std::vector<std::function<int64_t(int64_t)>> direct = {
      [](int64_t x) { return (x * 12) / 4; }, [](int64_t x) { return (x * 6) % 3; },
      [](int64_t x) { return x; }};
  for (size_t i = 0; i < builders.size(); ++i)
    for (int64_t x = 0; x < 50; ++x)
      CHECK(eval(*builders[i](), x) == direct[i](x));
}

TEST_CASE("substituteVars binds simultaneously and refolds", "[ir][rewrite]") {
  KExprPtr e = KExpr::binary(KExpr::Add, KExpr::binary(KExpr::Mul, v("i"), c(4)), v("j"));
  KExprPtr bound = substituteVars(e, {{"i", v("j")}, {"j", c(0)}});
  CHECK(printExpr(*bound) == "j * 4"); // j inside i's value is not rebound
}

TEST_CASE("foldIndexTree folds constant subtrees substituteVars leaves", "[ir][rewrite]") {
  // floordiv(i, 128 * 32): substituting i alone leaves the untouched 128 * 32
  // as written, so the result is no constant; folded first, it is.
  KExprPtr e = KExpr::binary(KExpr::FloorDiv, v("i"), KExpr::binary(KExpr::Mul, c(128), c(32)));
  CHECK(substituteVars(e, {{"i", c(8192)}})->kind != KExpr::IntConst);
  KExprPtr folded = foldIndexTree(e);
  CHECK(printExpr(*folded) == "floordiv(i, 4096)");
  KExprPtr value = substituteVars(folded, {{"i", c(8192)}});
  REQUIRE(value->kind == KExpr::IntConst);
  CHECK(value->intValue == 2);
}

TEST_CASE("knownMultipleOf", "[ir][rewrite]") {
  KExprPtr base = foldIndex(KExpr::Mul, foldIndex(KExpr::Add, foldIndex(KExpr::Mul, v("bx"), c(256)), v("tx")), c(4));
  CHECK(knownMultipleOf(*base) == 4);
  CHECK(knownMultipleOf(*foldIndex(KExpr::Mod, base, c(64))) == 4);
  CHECK(knownMultipleOf(*foldIndex(KExpr::Mod, base, c(6))) == 2);
  CHECK(knownMultipleOf(*v("x")) == 1);
  CHECK(knownMultipleOf(*c(0)) == 0); // 0 is a multiple of everything
}

TEST_CASE("classifyLaneAccess", "[ir][rewrite]") {
  Type f32x64 = Type::tensor(DType::f32, {Dim::of(8), Dim::of(64)});
  Type f32x6 = Type::tensor(DType::f32, {Dim::of(8), Dim::of(6)});
  Type symbolic = Type::tensor(DType::f32, {Dim::of(8), Dim::named("n")});
  KExprPtr start = foldIndex(KExpr::Mul, v("tx"), c(4));
  KExprPtr lane = foldIndex(KExpr::Add, start, v("v"));
  // One aligned vector: base a multiple of the width, last dim too.
  CHECK(classifyLaneAccess({v("bx"), lane}, f32x64, "v", 4) == LaneAccess::Contiguous);
  // Independent of the lane: one scalar for all lanes.
  CHECK(classifyLaneAccess({v("bx"), c(0)}, f32x64, "v", 4) == LaneAccess::Uniform);
  // A last dim that is not a multiple of the width, a symbolic one, an
  // unaligned start, the lane in a leading index: per lane.
  CHECK(classifyLaneAccess({v("bx"), lane}, f32x6, "v", 4) == LaneAccess::Gather);
  CHECK(classifyLaneAccess({v("bx"), lane}, symbolic, "v", 4) == LaneAccess::Gather);
  CHECK(classifyLaneAccess({v("bx"), foldIndex(KExpr::Add, lane, c(1))}, f32x64, "v", 4) ==
        LaneAccess::Gather);
  CHECK(classifyLaneAccess({v("v"), c(0)}, f32x64, "v", 4) == LaneAccess::Gather);
}

TEST_CASE("uniqueValueName gives names that read back", "[ir]") {
  std::set<std::string> used = {"x", "x_1", "7", "v7", "7_max"};
  auto taken = [&](llvm::StringRef name) { return used.count(name.str()) > 0; };
  CHECK(uniqueValueName("y", taken) == "y");
  CHECK(uniqueValueName("x", taken) == "x_2");
  CHECK(uniqueValueName("8", taken) == "8");        // a free number stays one
  CHECK(uniqueValueName("7", taken) == "v7_1");     // never %7_1
  CHECK(uniqueValueName("7_max", taken) == "v7_max"); // %7_max is not a name
}

TEST_CASE("countLoads counts every load of a buffer", "[ir][rewrite]") {
  KExprPtr a = KExpr::load("a", {v("i")}, DType::f32);
  KExprPtr b = KExpr::load("b", {KExpr::load("a", {v("i")}, DType::i64)}, DType::f32);
  KExprPtr sum = KExpr::call("add", {a, KExpr::call("multiply", {a, b}, DType::f32)}, DType::f32);
  CHECK(countLoads(*sum, "a") == 3); // two operands and one index
  CHECK(countLoads(*sum, "b") == 1);
  CHECK(countLoads(*sum, "c") == 0);
  CHECK(loadsBuffer(*sum, "b"));
}
