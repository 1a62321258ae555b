//===- InterpreterTest.cpp - The reference interpreter's API --------------===//
//
// Integer exactness at the API: Interpreter::run on i64 tensors beyond 2^53
// (held as int64, not as doubles), and compareResults telling apart two i64
// results that the nearest doubles would call equal; Float32Evaluation's
// float64 runs and EquivalenceCheck's second opinion on a reordered sum.
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

static TensorData f32Tensor(std::vector<double> values) {
  TensorData data(DType::f32, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    data.set(int64_t(i), values[i]);
  return data;
}

// 1e8 + 1 rounds back to 1e8 in f32 (its ulp there is 8), so the in-order
// sum of [1e8, 1, -1e8] is 0 and the sum taken as (1e8 - 1e8) + 1 is 1; in
// float64 both are 1.
static const char *const kCancellingSums = R"(
func @main(%x: f32[3]) -> f32[] {
  %s = sum(%x)
  return %s
}

func @reordered(%x: f32[3]) -> f32[] {
  %a = strided_slice(%x) {axes = [0], begin = [0], end = [1], strides = [1]}
  %b = strided_slice(%x) {axes = [0], begin = [1], end = [2], strides = [1]}
  %c = strided_slice(%x) {axes = [0], begin = [2], end = [3], strides = [1]}
  %ac = add(%a, %c)
  %acb = add(%ac, %b)
  %s = sum(%acb)
  return %s
}
)";

TEST_CASE("interpreter: Float32Evaluation::Float64 carries f32 values as doubles", "[exec]") {
  test::Parsed parsed(kCancellingSums);
  REQUIRE(parsed.firstError().empty());
  std::vector<TensorData> outputs;
  std::string error;
  TensorData x = f32Tensor({1e8, 1, -1e8});
  REQUIRE(Interpreter(*parsed.module).run("main", {x}, outputs, error));
  CHECK(outputs[0].get(0) == 0);
  REQUIRE(Interpreter(*parsed.module, Float32Evaluation::Float64).run("main", {x}, outputs, error));
  CHECK(outputs[0].get(0) == 1);
  // The float64 run leaves the next rounded run rounded, as a failed one does.
  REQUIRE(Interpreter(*parsed.module).run("main", {x}, outputs, error));
  CHECK(outputs[0].get(0) == 0);
  REQUIRE(Interpreter(*parsed.module).run("reordered", {x}, outputs, error));
  CHECK(outputs[0].get(0) == 1);
}

// 1 + 1e-9 is 1 in f32: the two ops are two kernels, and the value between
// them is a tensor of the graph.
static const char *const kBetweenKernels = R"(
func @main(%x: f32[1]) -> f32[1] {
  %y = add(%x, 1.0)
  %z = subtract(%y, 1.0)
  return %z
}
)";

TEST_CASE("interpreter: a float64 run carries f32 tensors between kernels as doubles", "[exec]") {
  test::Parsed parsed(kBetweenKernels);
  REQUIRE(parsed.firstError().empty());
  std::vector<TensorData> outputs;
  std::string error;
  TensorData x = f32Tensor({1e-9});
  REQUIRE(Interpreter(*parsed.module).run("main", {x}, outputs, error));
  CHECK(outputs[0].get(0) == 0);
  CHECK(!outputs[0].holdsDoubles());
  REQUIRE(Interpreter(*parsed.module, Float32Evaluation::Float64).run("main", {x}, outputs, error));
  CHECK(outputs[0].holdsDoubles());
  CHECK(outputs[0].get(0) == Approx(double(float(1e-9))).epsilon(1e-6));
}

TEST_CASE("tensor data: f32 elements held as doubles", "[exec]") {
  TensorData wide(DType::f32, {2}, TensorData::Float32Storage::Double);
  TensorData narrow(DType::f32, {2});
  wide.set(1, 0.1);
  narrow.set(1, 0.1);
  CHECK(wide.get(1) == 0.1);
  CHECK(narrow.get(1) == double(0.1f));
  CHECK(wide.holdsDoubles());
  CHECK(!narrow.holdsDoubles());
  CHECK(!(wide == narrow));
  // Only f32 has the choice.
  CHECK(!TensorData(DType::f16, {2}, TensorData::Float32Storage::Double).holdsDoubles());
}

TEST_CASE("interpreter: EquivalenceCheck accepts a reordered sum and no other change", "[exec]") {
  test::Parsed reference(kCancellingSums);
  REQUIRE(reference.firstError().empty());
  EquivalenceCheck check;
  std::string difference, error;
  REQUIRE(check.setReference(*reference.module, "main", {f32Tensor({1e8, 1, -1e8})}, error));
  CHECK(check.getReference()[0].get(0) == 0);
  // The same function, summed in another order: 1 in f32, 1 in float64.
  std::string reordered = kCancellingSums;
  reordered.replace(reordered.find("@main"), 5, "@unused");
  reordered.replace(reordered.find("@reordered"), 10, "@main");
  test::Parsed transformed(reordered);
  REQUIRE(transformed.firstError().empty());
  REQUIRE(check.check(*transformed.module, difference, error));
  CHECK(difference.empty());
  // Another function: 2 in f32 and in float64.
  std::string changed = reordered;
  changed.replace(changed.find("%s = sum(%acb)"), 14, "%one = add(%acb, 1.0)\n  %s = sum(%one)");
  test::Parsed wrong(changed);
  REQUIRE(wrong.firstError().empty());
  REQUIRE(check.check(*wrong.module, difference, error));
  CHECK(difference == "result 0 element 0 was 0 and is now 2; with f32 evaluated in "
                      "float64, result 0 element 0 was 1 and is now 2");
}
