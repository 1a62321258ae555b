//===- ParserConstantsTest.cpp - constant forms of spec §3 and §9 ---------===//
#include "TestUtil.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace fusec;
using fusec::test::Parsed;

/// Standard splitmix64, written independently of the implementation.
static uint64_t referenceSplitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Spec §9: element i of random<seed = N> before dtype rounding.
static double referenceRandomFloat(uint64_t seed, uint64_t i) {
  uint64_t u = referenceSplitmix64(seed * (uint64_t(1) << 32) + i);
  return double(u >> 11) * std::ldexp(1.0, -52) - 1.0;
}

/// Correct (single) round-to-nearest-even of a double to f16 or bf16.
static double referenceRoundSmallFloat(double v, int mantissaBits, int minExp,
                                       double maxFinite) {
  if (v == 0 || std::isnan(v) || std::isinf(v))
    return v;
  int e;
  std::frexp(std::fabs(v), &e); // |v| in [2^(e-1), 2^e)
  int exponent = std::max(e - 1, minExp);
  double ulp = std::ldexp(1.0, exponent - mantissaBits);
  double rounded = std::nearbyint(std::fabs(v) / ulp) * ulp;
  if (rounded > maxFinite)
    rounded = INFINITY;
  return std::copysign(rounded, v);
}

/// The constant `%c`'s contents.
static TensorData contents(const Parsed &parsed, const char *name = "c") {
  const Binding *binding = parsed.binding(name);
  REQUIRE(binding);
  REQUIRE(binding->constant);
  return binding->constant->materialize(binding->getType());
}

static std::string constantFunction(const std::string &binding,
                                    const std::string &type) {
  return "func @f() -> " + type + " {\n  %c = " + binding + "\n  return %c\n}\n";
}

TEST_CASE("scalar, dense and splat constants", "[parser][constant]") {
  SECTION("scalar") {
    Parsed parsed(constantFunction("constant 0.5 : f16[]", "f16[]"));
    REQUIRE(parsed.module);
    const Binding &c = *parsed.binding("c");
    CHECK(c.kind == ExprKind::Constant);
    CHECK(c.constant->form == ConstantData::Scalar);
    CHECK(contents(parsed).get(0) == 0.5);
    CHECK(printBinding(c) == "%c = constant 0.5 : f16[]");
  }
  SECTION("scalar inf, -inf, nan, bool and integer") {
    Parsed inf(constantFunction("constant inf : f32[]", "f32[]"));
    REQUIRE(inf.module);
    CHECK(std::isinf(contents(inf).get(0)));
    Parsed minusInf(constantFunction("constant -inf : bf16[]", "bf16[]"));
    REQUIRE(minusInf.module);
    CHECK(contents(minusInf).get(0) == -INFINITY);
    Parsed nan(constantFunction("constant nan : f16[]", "f16[]"));
    REQUIRE(nan.module);
    CHECK(std::isnan(contents(nan).get(0)));
    Parsed flag(constantFunction("constant true : bool[]", "bool[]"));
    REQUIRE(flag.module);
    CHECK(contents(flag).get(0) == 1);
    Parsed integer(constantFunction("constant -7 : i8[]", "i8[]"));
    REQUIRE(integer.module);
    CHECK(contents(integer).get(0) == -7);
  }
  SECTION("dense, row-major") {
    Parsed parsed(constantFunction(
        "constant dense<[[1, 2.5, -3], [4, 5e-1, .5]]> : f32[2,3]", "f32[2,3]"));
    REQUIRE(parsed.module);
    CHECK(parsed.binding("c")->constant->form == ConstantData::Dense);
    TensorData data = contents(parsed);
    CHECK(data.getShape() == std::vector<int64_t>{2, 3});
    std::vector<double> values;
    for (int64_t i = 0; i < data.getNumElements(); ++i)
      values.push_back(data.get(i));
    CHECK(values == std::vector<double>{1, 2.5, -3, 4, 0.5, 0.5});
    CHECK(printBinding(*parsed.binding("c")) ==
          "%c = constant dense<[[1, 2.5, -3], [4, 0.5, 0.5]]> : f32[2,3]");
  }
  SECTION("dense bool and f16 rounding") {
    Parsed flags(constantFunction("constant dense<[true, false, 1]> : bool[3]", "bool[3]"));
    REQUIRE(flags.module);
    CHECK(contents(flags).get(0) == 1);
    CHECK(contents(flags).get(1) == 0);
    Parsed half(constantFunction("constant dense<[0.1]> : f16[1]", "f16[1]"));
    REQUIRE(half.module);
    CHECK(contents(half).get(0) == 0.0999755859375); // nearest f16 to 0.1
  }
  SECTION("splat") {
    Parsed parsed(constantFunction("constant splat<-2.0> : bf16[64]", "bf16[64]"));
    REQUIRE(parsed.module);
    TensorData data = contents(parsed);
    CHECK(data.getNumElements() == 64);
    CHECK(data.get(0) == -2.0);
    CHECK(data.get(63) == -2.0);
  }
}

TEST_CASE("random constants follow the spec section 9 formula", "[parser][constant]") {
  Parsed parsed(R"fir(
func @f() -> f32[4,1000] {
  %c = constant random<seed = 7> : f32[4,1000]
  %h = constant random<seed = 7> : f16[8]
  %i = constant random<seed = 7> : i8[8]
  %j = constant random<seed = 7> : i32[8]
  %z = constant random<seed = 0> : f32[8]
  return %c
}
)fir");
  REQUIRE(parsed.module);
  const Binding &c = *parsed.binding("c");
  CHECK(c.constant->form == ConstantData::Random);
  CHECK(c.constant->seed == 7);
  CHECK(printBinding(c) == "%c = constant random<seed = 7> : f32[4,1000]");
  TensorData data = contents(parsed);
  for (int64_t i : {0, 1, 2, 999, 1000, 3999}) {
    INFO("element " << i);
    double expected = referenceRandomFloat(7, uint64_t(i));
    CHECK(randomConstantElement(7, i, DType::f32) == expected);
    CHECK(data.get(i) == double(float(expected)));
    CHECK(data.get(i) >= -1.0);
    CHECK(data.get(i) < 1.0);
  }
  for (int64_t i = 0; i < 8; ++i) {
    INFO("element " << i);
    uint64_t u = referenceSplitmix64((uint64_t(7) << 32) + uint64_t(i));
    double integer = double(int64_t(u % 256) - 128);
    CHECK(contents(parsed, "i").get(i) == integer);
    CHECK(contents(parsed, "j").get(i) == integer);
    CHECK(contents(parsed, "h").get(i) ==
          referenceRoundSmallFloat(referenceRandomFloat(7, i), 10, -14, 65504));
    CHECK(contents(parsed, "z").get(i) == double(float(referenceRandomFloat(0, i))));
  }
  SECTION("reproducible across parses") {
    Parsed again(constantFunction("constant random<seed = 7> : f32[4,1000]",
                                  "f32[4,1000]"));
    REQUIRE(again.module);
    CHECK(contents(again) == data);
    Parsed other(constantFunction("constant random<seed = 8> : f32[4,1000]",
                                  "f32[4,1000]"));
    REQUIRE(other.module);
    CHECK_FALSE(contents(other) == data);
  }
}

// Spec §9: the random value is "rounded to the dtype". Rounding the double
// first to f32 and then to f16/bf16 (double rounding) differs from a single
// correct rounding for values just off an f16/bf16 tie.
TEST_CASE("random f16/bf16 constants are rounded once from the exact value",
          "[parser][constant]") {
  Parsed parsed(R"fir(
func @f() -> f16[65536] {
  %c = constant random<seed = 7> : f16[65536]
  %b = constant random<seed = 7> : bf16[65536]
  return %c
}
)fir");
  REQUIRE(parsed.module);
  TensorData half = contents(parsed), brain = contents(parsed, "b");
  int halfMismatches = 0, brainMismatches = 0;
  for (int64_t i = 0; i < half.getNumElements(); ++i) {
    double exact = referenceRandomFloat(7, uint64_t(i));
    halfMismatches += half.get(i) != referenceRoundSmallFloat(exact, 10, -14, 65504);
    brainMismatches +=
        brain.get(i) != referenceRoundSmallFloat(exact, 7, -126, 3.3895313892515355e38);
  }
  CHECK(halfMismatches == 0);
  CHECK(brainMismatches == 0);
}

// Spec §9: dense values must fit the dtype, and every value of i64 does; a
// value above 2^53 must not lose precision on its way into the tensor.
TEST_CASE("i64 constants keep every bit", "[parser][constant]") {
  Parsed parsed(R"fir(
func @f() -> i64[2] {
  %c = constant dense<[9007199254740993, -9223372036854775807]> : i64[2]
  %s = constant 9223372036854775807 : i64[]
  return %c
}
)fir");
  REQUIRE(parsed.module);
  TensorData dense = contents(parsed), scalar = contents(parsed, "s");
  int64_t values[2], max;
  std::memcpy(values, dense.data(), sizeof(values));
  std::memcpy(&max, scalar.data(), sizeof(max));
  CHECK(values[0] == 9007199254740993LL);
  CHECK(values[1] == -9223372036854775807LL);
  CHECK(max == INT64_MAX);
}

/// Writes a version-1 .npy file of float32 values.
static void writeNpy(const std::string &path, const std::string &shape,
                     const std::vector<float> &values) {
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  REQUIRE_FALSE(ec);
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char(header.size() >> 8) << header;
  os.write(reinterpret_cast<const char *>(values.data()), values.size() * 4);
}

TEST_CASE("file constants read .npy contents at parse time", "[parser][constant]") {
  llvm::SmallString<128> directory;
  REQUIRE_FALSE(llvm::sys::fs::createUniqueDirectory("fusec-unit", directory));
  std::string path = (directory + "/w.npy").str();
  writeNpy(path, "(2, 2)", {1.0f, -2.5f, 0.25f, 8.0f});

  Parsed parsed(constantFunction("constant file<\"" + path + "\"> : f32[2,2]", "f32[2,2]"));
  REQUIRE(parsed.module);
  const Binding &c = *parsed.binding("c");
  CHECK(c.constant->form == ConstantData::File);
  CHECK(c.constant->path == path);
  TensorData data = contents(parsed);
  CHECK(data.get(0) == 1.0);
  CHECK(data.get(1) == -2.5);
  CHECK(data.get(3) == 8.0);
  CHECK(printBinding(c) == "%c = constant file<\"" + path + "\"> : f32[2,2]");

  SECTION("the shape must match exactly") {
    Parsed wrong(constantFunction("constant file<\"" + path + "\"> : f32[4]", "f32[4]"));
    CHECK_FALSE(wrong.module);
    CHECK(wrong.firstError() == "2:21: '" + path + "' has shape [2,2], but the constant is f32[4]");
  }
  SECTION("the dtype must match exactly") {
    Parsed wrong(constantFunction("constant file<\"" + path + "\"> : f16[2,2]", "f16[2,2]"));
    CHECK(wrong.firstError() == "2:21: '" + path + "' holds f32 values, but the constant is f16");
  }
  SECTION("a missing file") {
    Parsed missing(constantFunction("constant file<\"no/such.npy\"> : f32[2]", "f32[2]"));
    CHECK(llvm::StringRef(missing.firstError())
              .startswith("2:21: cannot read 'no/such.npy': no such file '"));
    CHECK(llvm::StringRef(missing.firstError())
              .endswith("no/such.npy' (a relative path is read from the .fir file's directory; "
                        "from standard input, the working directory)"));
  }
  llvm::sys::fs::remove(path);
  llvm::sys::fs::remove(directory);
}
