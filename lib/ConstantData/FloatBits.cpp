//===- FloatBits.cpp - float32 to 16-bit float bits, fast -----------------===//

#include "kiln/ConstantData/FloatBits.h"

#include <cmath>
#include <cstring>

using namespace kiln;

/// The bits of a float.
static uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// The float of some bits.
static float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t kiln::halfBitsOf(float value) {
  uint32_t bits = bitsOf(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  // At or past 2^16 every value rounds to infinity (65520 and up round
  // there below, through the carry into the exponent); NaN stays NaN.
  if (magnitude >= (127u + 16u) << 23)
    return uint16_t(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (magnitude < 113u << 23) {
    // Below half's smallest normal: adding 2^-1 * 2^(10-(-14))... i.e. a
    // float whose unit in the last place is half's smallest subnormal
    // makes the FPU round to nearest even at that position.
    const float magic = floatOf((127u - 15u + 23u - 10u + 1u) << 23);
    return uint16_t(sign |
                    (bitsOf(floatOf(magnitude) + magic) - bitsOf(magic)));
  }
  // Normal: rebias the exponent and round the 13 dropped bits to nearest,
  // ties to the even kept bit; a carry moves into the exponent correctly.
  uint32_t odd = (magnitude >> 13) & 1u;
  magnitude += ((15u - 127u) << 23) + 0xfffu + odd;
  return uint16_t(sign | (magnitude >> 13));
}

uint16_t kiln::bfloat16BitsOf(float value) {
  uint32_t bits = bitsOf(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x0040u);
  uint32_t odd = (bits >> 16) & 1u;
  return uint16_t((bits + 0x7fffu + odd) >> 16);
}

void kiln::convertToHalfBits(const float *src, uint16_t *dst, size_t count,
                             bool bfloat16, float limit) {
  bool clamp = std::isfinite(limit);
  for (size_t i = 0; i < count; ++i) {
    float v = src[i];
    if (clamp && std::isfinite(v))
      v = v > limit ? limit : v < -limit ? -limit : v;
    dst[i] = bfloat16 ? bfloat16BitsOf(v) : halfBitsOf(v);
  }
}

float kiln::floatOfHalfBits(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) // Infinity or NaN, the payload kept.
    return floatOf(sign | 0x7f800000u | mantissa << 13);
  if (exponent != 0)
    return floatOf(sign | (exponent + 127u - 15u) << 23 | mantissa << 13);
  // Zero or subnormal: mantissa * 2^-24, exact in a float.
  float magnitude = float(mantissa) * floatOf((127u - 24u) << 23);
  return floatOf(sign | bitsOf(magnitude));
}

float kiln::floatOfBfloat16Bits(uint16_t bits) {
  return floatOf(uint32_t(bits) << 16);
}
