//===- FloatBitsTest.cpp - fast float conversions against APFloat ---------===//

#include "kiln/ConstantData/FloatBits.h"
#include "kiln/runtime/Float8.h"

#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

using namespace kiln;

namespace {

/// APFloat's bits of `value` in `semantics`, rounded to nearest even.
uint16_t reference(const llvm::fltSemantics &semantics, float value) {
  llvm::APFloat converted(value);
  bool losesInfo = false;
  (void)converted.convert(semantics, llvm::APFloat::rmNearestTiesToEven,
                          &losesInfo);
  return uint16_t(converted.bitcastToAPInt().getZExtValue());
}

/// Whether 16 bits of `semantics` are a NaN.
bool isNaN(const llvm::fltSemantics &semantics, uint16_t bits) {
  return llvm::APFloat(semantics, llvm::APInt(16, bits)).isNaN();
}

/// Every float bit pattern at a prime stride, and the neighbours of every
/// half and bfloat16 rounding boundary near the edges of their ranges.
TEST(FloatBits, MatchAPFloatOnEveryKindOfValue) {
  size_t checked = 0;
  auto check = [&](uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    uint16_t half = halfBitsOf(value), bf = bfloat16BitsOf(value);
    if (std::isnan(value)) {
      EXPECT_TRUE(isNaN(llvm::APFloat::IEEEhalf(), half)) << bits;
      EXPECT_TRUE(isNaN(llvm::APFloat::BFloat(), bf)) << bits;
      return;
    }
    ++checked;
    ASSERT_EQ(half, reference(llvm::APFloat::IEEEhalf(), value))
        << "half of " << value << " (bits " << bits << ")";
    ASSERT_EQ(bf, reference(llvm::APFloat::BFloat(), value))
        << "bfloat16 of " << value << " (bits " << bits << ")";
  };
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099)
    check(uint32_t(bits));
  // Ties and their neighbours: every half subnormal and normal step near
  // 0, 1, the largest finite value and the subnormal boundary.
  for (float anchor : {0.0f, 6.1035156e-05f, 5.9604645e-08f, 1.0f, 65504.0f,
                       65520.0f, 3.3895314e38f})
    for (int sign = 0; sign < 2; ++sign) {
      uint32_t base;
      float signed_anchor = sign ? -anchor : anchor;
      std::memcpy(&base, &signed_anchor, sizeof(base));
      for (int delta = -9000; delta <= 9000; ++delta)
        check(base + uint32_t(delta));
    }
  EXPECT_GT(checked, 1000000u);
}

TEST(FloatBits, ClampsFiniteValuesToTheLimit) {
  const float src[] = {1e6f, -1e6f, INFINITY, 2.0f};
  uint16_t dst[4];
  convertToHalfBits(src, dst, 4, /*bfloat16=*/false, 65504.0f);
  EXPECT_EQ(dst[0], 0x7bffu); // 65504
  EXPECT_EQ(dst[1], 0xfbffu);
  EXPECT_EQ(dst[2], 0x7c00u); // infinity stays infinite
  EXPECT_EQ(dst[3], 0x4000u);
}

} // namespace

namespace {

/// Every half and bfloat16 back to a float, against APFloat; a round trip
/// gives the bits again (NaNs stay NaNs).
TEST(FloatBits, WidenEverySixteenBitValueExactly) {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    for (bool bfloat : {false, true}) {
      const llvm::fltSemantics &semantics =
          bfloat ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf();
      llvm::APFloat wide(semantics, llvm::APInt(16, bits));
      bool losesInfo = false;
      (void)wide.convert(llvm::APFloat::IEEEsingle(),
                         llvm::APFloat::rmNearestTiesToEven, &losesInfo);
      float got = bfloat ? floatOfBfloat16Bits(uint16_t(bits))
                         : floatOfHalfBits(uint16_t(bits));
      if (wide.isNaN()) {
        ASSERT_TRUE(std::isnan(got)) << bits;
        continue;
      }
      ASSERT_EQ(got, wide.convertToFloat()) << bits << (bfloat ? " bf16" : "");
      ASSERT_EQ(std::signbit(got), wide.isNegative()) << bits;
      ASSERT_EQ(bfloat ? bfloat16BitsOf(got) : halfBitsOf(got), bits);
    }
  }
}

} // namespace

/// float8 against APFloat: every pattern decodes exactly, and floats at a
/// prime stride, every value, every midpoint between neighbours and its two
/// neighbouring floats encode as APFloat rounds them (ties to even) after
/// the saturation of finite values (|x| clamped to the largest value);
/// E5M2 keeps its infinities.
TEST(FloatBits, Float8MatchesAPFloat) {
  for (bool e5m2 : {false, true}) {
    const llvm::fltSemantics &semantics =
        e5m2 ? llvm::APFloat::Float8E5M2() : llvm::APFloat::Float8E4M3FN();
    float largest = e5m2 ? 57344.0f : 448.0f;
    auto expected = [&](float value) -> uint8_t {
      float clamped = e5m2 && std::isinf(value)
                          ? std::fabs(value)
                          : std::fmin(std::fabs(value), largest);
      llvm::APFloat converted(std::signbit(value) ? -clamped : clamped);
      bool losesInfo = false;
      (void)converted.convert(semantics, llvm::APFloat::rmNearestTiesToEven,
                              &losesInfo);
      return uint8_t(converted.bitcastToAPInt().getZExtValue());
    };
    auto check = [&](float value) {
      uint8_t bits = rt::float8BitsOf(value, e5m2);
      if (std::isnan(value)) {
        EXPECT_TRUE(std::isnan(rt::floatOfFloat8Bits(bits, e5m2)));
        return;
      }
      ASSERT_EQ(bits, expected(value))
          << (e5m2 ? "e5m2" : "e4m3fn") << " of " << value;
    };
    std::vector<float> values;
    for (int bits = 0; bits < 256; ++bits) {
      llvm::APFloat exact(semantics, llvm::APInt(8, bits));
      float decoded = rt::floatOfFloat8Bits(uint8_t(bits), e5m2);
      if (exact.isNaN()) {
        EXPECT_TRUE(std::isnan(decoded)) << bits;
        continue;
      }
      ASSERT_EQ(decoded, exact.convertToFloat()) << bits;
      values.push_back(decoded);
    }
    std::sort(values.begin(), values.end());
    for (size_t i = 0; i < values.size(); ++i) {
      check(values[i]);
      if (i + 1 < values.size() && std::isfinite(values[i + 1])) {
        float middle = (values[i] + values[i + 1]) / 2;
        check(middle);
        check(std::nextafter(middle, -INFINITY));
        check(std::nextafter(middle, INFINITY));
      }
    }
    for (float beyond :
         {largest * 1.03f, largest * 1.1f, 1e30f, INFINITY, -INFINITY, NAN})
      check(beyond);
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 65537) {
      float value;
      uint32_t word = uint32_t(bits);
      std::memcpy(&value, &word, sizeof(value));
      check(value);
    }
  }
}
