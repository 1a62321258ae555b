//===- SupportTest.cpp - f16/bf16 rounding and float formatting -----------===//
//
// Expected bit patterns are IEEE 754 binary16 and bfloat16 with
// round-to-nearest-even, worked out by hand from the formats.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/IR.h"
#include "fusec/Support/Support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

using namespace fusec;

static float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

TEST_CASE("float to f16 rounds to nearest even", "[support][f16]") {
  CHECK(floatToHalfBits(0.0f) == 0x0000);
  CHECK(floatToHalfBits(-0.0f) == 0x8000);
  CHECK(floatToHalfBits(1.0f) == 0x3C00);
  CHECK(floatToHalfBits(-2.0f) == 0xC000);
  CHECK(floatToHalfBits(0.5f) == 0x3800);
  CHECK(floatToHalfBits(65504.0f) == 0x7BFF); // largest finite
  CHECK(floatToHalfBits(0.1f) == 0x2E66);
  CHECK(floatToHalfBits(1.0f / 3.0f) == 0x3555);
  SECTION("ties go to the even mantissa") {
    CHECK(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);     // 1 + ulp/2
    CHECK(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02); // 1 + 3ulp/2
    CHECK(floatToHalfBits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3C01);
    CHECK(floatToHalfBits(1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -20)) == 0x3C00);
    CHECK(floatToHalfBits(2047.0f + 0.5f) == 0x6800); // 2047.5 -> 2048
    CHECK(floatToHalfBits(2049.0f) == 0x6800);        // tie between 2048 and 2050
    CHECK(floatToHalfBits(2051.0f) == 0x6802);        // tie between 2050 and 2052
  }
  SECTION("overflow goes to infinity") {
    CHECK(floatToHalfBits(65519.0f) == 0x7BFF);
    CHECK(floatToHalfBits(65520.0f) == 0x7C00); // the tie rounds to even: inf
    CHECK(floatToHalfBits(-65520.0f) == 0xFC00);
    CHECK(floatToHalfBits(1e10f) == 0x7C00);
    CHECK(floatToHalfBits(std::numeric_limits<float>::max()) == 0x7C00);
    CHECK(floatToHalfBits(INFINITY) == 0x7C00);
    CHECK(floatToHalfBits(-INFINITY) == 0xFC00);
  }
  SECTION("nan stays nan") {
    uint16_t bits = floatToHalfBits(NAN);
    CHECK((bits & 0x7C00) == 0x7C00);
    CHECK((bits & 0x03FF) != 0);
  }
  SECTION("subnormals") {
    CHECK(floatToHalfBits(std::ldexp(1.0f, -14)) == 0x0400); // smallest normal
    CHECK(floatToHalfBits(std::ldexp(1.0f, -24)) == 0x0001); // smallest subnormal
    CHECK(floatToHalfBits(-std::ldexp(1.0f, -24)) == 0x8001);
    CHECK(floatToHalfBits(std::ldexp(1023.0f, -24)) == 0x03FF);
    CHECK(floatToHalfBits(std::ldexp(1.0f, -25)) == 0x0000);      // tie: to even 0
    CHECK(floatToHalfBits(std::ldexp(3.0f, -25)) == 0x0002);      // tie: to even 2
    CHECK(floatToHalfBits(std::ldexp(5.0f, -25)) == 0x0002);      // tie: to even 2
    CHECK(floatToHalfBits(std::ldexp(1.0f, -25) * 1.0001f) == 0x0001);
    CHECK(floatToHalfBits(std::ldexp(1.0f, -26)) == 0x0000);
    CHECK(floatToHalfBits(std::ldexp(2047.0f, -25)) == 0x0400); // rounds up into normals
    CHECK(floatToHalfBits(1e-30f) == 0x0000);
  }
}

TEST_CASE("f16 bits to float is exact", "[support][f16]") {
  CHECK(halfBitsToFloat(0x3C00) == 1.0f);
  CHECK(halfBitsToFloat(0x7BFF) == 65504.0f);
  CHECK(halfBitsToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(halfBitsToFloat(0x03FF) == std::ldexp(1023.0f, -24));
  CHECK(halfBitsToFloat(0x8001) == -std::ldexp(1.0f, -24));
  CHECK(std::signbit(halfBitsToFloat(0x8000)));
  CHECK(halfBitsToFloat(0x3555) == 0.333251953125f);
  CHECK(halfBitsToFloat(0x7C00) == INFINITY);
  CHECK(halfBitsToFloat(0xFC00) == -INFINITY);
  CHECK(std::isnan(halfBitsToFloat(0x7E00)));
  SECTION("every finite pattern round-trips") {
    std::vector<uint32_t> broken;
    for (uint32_t bits = 0; bits < 0x10000; ++bits)
      if ((bits & 0x7C00) != 0x7C00 &&
          floatToHalfBits(halfBitsToFloat(uint16_t(bits))) != bits)
        broken.push_back(bits);
    CHECK(broken.empty());
  }
}

TEST_CASE("float to bf16 rounds to nearest even", "[support][bf16]") {
  CHECK(floatToBFloat16Bits(1.0f) == 0x3F80);
  CHECK(floatToBFloat16Bits(-2.0f) == 0xC000);
  CHECK(floatToBFloat16Bits(0.1f) == 0x3DCD);
  CHECK(floatToBFloat16Bits(bitsToFloat(0x3F808000)) == 0x3F80); // tie, even below
  CHECK(floatToBFloat16Bits(bitsToFloat(0x3F818000)) == 0x3F82); // tie, even above
  CHECK(floatToBFloat16Bits(bitsToFloat(0x3F808001)) == 0x3F81);
  CHECK(floatToBFloat16Bits(bitsToFloat(0x3F807FFF)) == 0x3F80);
  SECTION("overflow and specials") {
    CHECK(floatToBFloat16Bits(bitsToFloat(0x7F7F7FFF)) == 0x7F7F);
    CHECK(floatToBFloat16Bits(std::numeric_limits<float>::max()) == 0x7F80);
    CHECK(floatToBFloat16Bits(INFINITY) == 0x7F80);
    CHECK(floatToBFloat16Bits(-INFINITY) == 0xFF80);
    uint16_t nan = floatToBFloat16Bits(bitsToFloat(0x7F800001)); // a signalling nan
    CHECK((nan & 0x7F80) == 0x7F80);
    CHECK((nan & 0x007F) != 0);
    CHECK(std::isnan(bfloat16BitsToFloat(nan)));
  }
  SECTION("subnormals") {
    CHECK(floatToBFloat16Bits(bitsToFloat(0x00010000)) == 0x0001);
    CHECK(floatToBFloat16Bits(bitsToFloat(0x00008000)) == 0x0000); // tie to even 0
    CHECK(floatToBFloat16Bits(bitsToFloat(0x00018000)) == 0x0002); // tie to even 2
    CHECK(floatToBFloat16Bits(bitsToFloat(0x807FFFFF)) == 0x8080); // up into normals
  }
  CHECK(bfloat16BitsToFloat(0x3F80) == 1.0f);
  CHECK(bfloat16BitsToFloat(0x7F7F) == bitsToFloat(0x7F7F0000));
  CHECK(bfloat16BitsToFloat(0x0001) == bitsToFloat(0x00010000));
}

/// Round to nearest even at `precision` significant bits through frexp,
/// nearbyint and ldexp: the oracle for roundToDType's bit-level rounding.
static double roundThroughFrexp(double value, int precision, int minExponent,
                                double maxFinite) {
  if (std::isnan(value) || std::isinf(value) || value == 0)
    return value;
  int exponent;
  std::frexp(value, &exponent);
  int quantumExponent = std::max(exponent, minExponent + 1) - precision;
  double rounded =
      std::ldexp(std::nearbyint(std::ldexp(value, -quantumExponent)), quantumExponent);
  return std::fabs(rounded) > maxFinite ? std::copysign(INFINITY, value) : rounded;
}

TEST_CASE("roundToDType f16/bf16 agrees with frexp rounding", "[support][dtype]") {
  // Ties at every position the quantum can take (normal and subnormal f16
  // and bf16; 1.5 * 2^-133 is a bf16 tie whose even neighbour is 2^-132),
  // carries into the exponent, the overflow boundary, tiny and huge
  // doubles, and random bit patterns.
  std::vector<double> values = {65504, 65519.99, 65520, -65520, 65536, 1e300, -1e-300,
                                5e-324, 2.9802322387695312e-08, 5.960464477539063e-08,
                                8.940696716308594e-08, 3.4e38, 3.3961775292304256e38,
                                1.1754943508222875e-38, 9.183549615799121e-41};
  for (int e = -160; e <= 130; ++e)
    for (double m : {1.0, 1.5, 1.0009765625, 1.00048828125, 1.0029296875, 1.99951171875,
                     1.999755859375, 1.00390625, 1.005859375, 1.998046875})
      values.push_back(std::ldexp(m, e)), values.push_back(-std::ldexp(m, e));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 200000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t bits = (state & 0x800fffffffffffffull) |
                    (uint64_t(1023 - 150 + (state >> 40) % 300) << 52); // exponents 2^-150..2^150
    double value;
    std::memcpy(&value, &bits, sizeof value);
    values.push_back(value);
  }
  size_t mismatches = 0;
  for (double value : values) {
    mismatches += roundToDType(value, DType::f16) != roundThroughFrexp(value, 11, -14, 65504.0);
    mismatches += roundToDType(value, DType::bf16) !=
                  roundThroughFrexp(value, 8, -126, std::ldexp(255.0, 120));
  }
  CHECK(mismatches == 0);
  CHECK(roundToDType(std::ldexp(1.5, -133), DType::bf16) == std::ldexp(1.0, -132));
  CHECK(std::isnan(roundToDType(NAN, DType::f16)));
  CHECK(std::signbit(roundToDType(-0.0, DType::f16)));
}

TEST_CASE("roundToDType and fitsDType", "[support][dtype]") {
  CHECK(roundToDType(0.1, DType::f32) == double(0.1f));
  CHECK(roundToDType(0.1, DType::f16) == 0.0999755859375);
  CHECK(roundToDType(0.1, DType::bf16) == 0.10009765625);
  CHECK(roundToDType(70000, DType::f16) == INFINITY);
  CHECK(roundToDType(2.5, DType::boolean) == 1);
  CHECK(fitsDType(65504, DType::f16));
  CHECK_FALSE(fitsDType(65520, DType::f16));
  CHECK(fitsDType(INFINITY, DType::f16));
  CHECK_FALSE(fitsDType(1e39, DType::f32));
  CHECK(fitsDType(3e38, DType::bf16));
  CHECK(fitsDType(127, DType::i8));
  CHECK_FALSE(fitsDType(128, DType::i8));
  CHECK(fitsDType(-128, DType::i8));
  CHECK_FALSE(fitsDType(1.5, DType::i32));
  CHECK(fitsDType(2147483647.0, DType::i32));
  CHECK_FALSE(fitsDType(2147483648.0, DType::i32));
  CHECK_FALSE(fitsDType(NAN, DType::i64));
  CHECK(fitsDType(1, DType::boolean));
  CHECK_FALSE(fitsDType(2, DType::boolean));
}

// A double must be rounded once, directly to the dtype: rounding it to f32
// first can land exactly on an f16/bf16 tie that the exact value is not on.
TEST_CASE("roundToDType rounds a double once", "[support][dtype]") {
  double aboveHalfTie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  CHECK(roundToDType(aboveHalfTie, DType::f16) == 1.0 + std::ldexp(1.0, -10));
  double aboveBf16Tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  CHECK(roundToDType(aboveBf16Tie, DType::bf16) == 1.0 + std::ldexp(1.0, -7));
  // 65519.999 is below the f16 overflow threshold 65520: it is 65504, not inf.
  CHECK(roundToDType(65519.999, DType::f16) == 65504.0);
  CHECK(fitsDType(65519.999, DType::f16));
}

TEST_CASE("formatFloat prints the shortest text that reads back", "[support][format]") {
  CHECK(formatFloat(0.1, false) == "0.1");
  CHECK(formatFloat(-1.5, false) == "-1.5");
  CHECK(formatFloat(1e-5, false) == "1e-05");
  CHECK(formatFloat(2.0, false) == "2");
  CHECK(formatFloat(2.0, true) == "2.0");
  CHECK(formatFloat(-0.0, true) == "-0.0");
  CHECK(formatFloat(123456789.0, true) == "123456789.0");
  CHECK(formatFloat(1e20, true) == "1e+20");
  CHECK(formatFloat(1.0 / 3.0, false) == "0.3333333333333333");
  CHECK(formatFloat(INFINITY, true) == "inf");
  CHECK(formatFloat(-INFINITY, false) == "-inf");
  CHECK(formatFloat(NAN, true) == "nan");
  for (double value : {0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-300, 5e-324, 1.7976931348623157e308,
                       double(0.1f), 65504.0, -123.456e-7, 9007199254740993.0}) {
    INFO(value);
    std::string text = formatFloat(value, true);
    CHECK(std::strtod(text.c_str(), nullptr) == value);
    CHECK(text.find_first_of(".en") != std::string::npos); // lexes as a float
  }
}

TEST_CASE("formatScalar prints a value in its dtype", "[support][format]") {
  CHECK(formatScalar(3, DType::i32) == "3");
  CHECK(formatScalar(-7, DType::i8) == "-7");
  CHECK(formatScalar(-9007199254740992.0, DType::i64) == "-9007199254740992");
  CHECK(formatScalar(1, DType::boolean) == "true");
  CHECK(formatScalar(0, DType::boolean) == "false");
  CHECK(formatScalar(2, DType::f32) == "2.0");
  CHECK(formatScalar(0.5, DType::f16) == "0.5");
  CHECK(formatScalar(1.0, DType::bf16) == "1.0");
  CHECK(formatScalar(0.0999755859375, DType::f16) == "0.1"); // f16 nearest to 0.1
  CHECK(formatScalar(0.10009765625, DType::bf16) == "0.1");
  CHECK(formatScalar(0.333251953125, DType::f16) == "0.3333");
  CHECK(formatScalar(65504, DType::f16) == "65500.0");
  CHECK(formatScalar(INFINITY, DType::f16) == "inf");
  CHECK(formatScalar(-INFINITY, DType::f32) == "-inf");
  CHECK(formatScalar(NAN, DType::bf16) == "nan");
}

// IR.h: formatScalar gives the "shortest text that reads back to the same
// dtype value"; for the f32 value nearest 0.1 that is "0.1".
TEST_CASE("formatScalar is shortest for f32 too", "[support][format]") {
  CHECK(formatScalar(double(0.1f), DType::f32) == "0.1");
  CHECK(formatScalar(double(1e-5f), DType::f32) == "1e-05");
  CHECK(formatScalar(double(1.0f / 3.0f), DType::f32) == "0.33333334");
}
