//===- InterpreterTest.cpp - The reference interpreter's API --------------===//
//
// Integer exactness at the API: Interpreter::run on i64 tensors beyond 2^53
// (held as int64, not as doubles), and compareResults telling apart two i64
// results that the nearest doubles would call equal.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "fusec/Exec/Exec.h"

#include <catch2/catch.hpp>

using namespace fusec;

static TensorData i64Tensor(std::vector<int64_t> values) {
  TensorData data(DType::i64, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    data.setInt(int64_t(i), values[i]);
  return data;
}

TEST_CASE("interpreter: i64 arithmetic and reductions are exact beyond 2^53", "[exec]") {
  test::Parsed parsed(R"(
kernel @mix(%a: i64[3], %b: i64[3]) -> (%out: i64[3]) {
  %out[i0] = add(multiply(%a[i0], %b[i0]), 9007199254740993)
}

func @main(%a: i64[3], %b: i64[3]) -> (i64[3], i64[], i64[]) {
  %m = call_kernel @mix(%a, %b) : i64[3]
  %low = min(%a)
  %total = sum(%b)
  return (%m, %low, %total)
}
)");
  REQUIRE(parsed.firstError().empty());
  Interpreter interpreter(*parsed.module);
  std::vector<TensorData> outputs;
  std::string error;
  TensorData a = i64Tensor({INT64_MAX, 9007199254740993, 3});
  TensorData b = i64Tensor({1, 1, 4611686018427387904});
  REQUIRE(interpreter.run("main", {a, b}, outputs, error));
  CHECK(error.empty());
  REQUIRE(outputs.size() == 3);
  // INT64_MAX + 2^53 + 1 wraps; (2^53 + 1) * 1 + 2^53 + 1; 3 * 2^62 wraps to -2^62.
  CHECK(outputs[0].getInt(0) == int64_t(uint64_t(INT64_MAX) + 9007199254740993ull));
  CHECK(outputs[0].getInt(1) == 18014398509481986);
  CHECK(outputs[0].getInt(2) == -4611686018427387904 + 9007199254740993);
  CHECK(outputs[1].getInt(0) == 3);
  CHECK(outputs[2].getInt(0) == 4611686018427387906);
  // The min over [INT64_MAX] alone needs the exact init INT64_MAX.
  TensorData top = i64Tensor({INT64_MAX, INT64_MAX, INT64_MAX});
  REQUIRE(interpreter.run("main", {top, b}, outputs, error));
  CHECK(outputs[1].getInt(0) == INT64_MAX);
}

TEST_CASE("interpreter: compareResults compares i64 exactly", "[exec]") {
  TensorData x = i64Tensor({9007199254740993});
  TensorData y = i64Tensor({9007199254740992}); // the same double
  CHECK(compareResults({x}, {x}).empty());
  CHECK(compareResults({x}, {y}) ==
        "result 0 element 0 was 9007199254740993 and is now 9007199254740992");
}
