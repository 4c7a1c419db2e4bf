//===- Float8.h - float8 E4M3FN and E5M2 to and from float ------*- C++ -*-===//
//
// Header-only, so that the compiler (constants, the reference interpreter)
// and the runtime (.npy output) convert float8 the same way; the CUDA
// prelude's kiln_f8_to_float and kiln_float_to_f8 compute the same in the
// generated kernels. E4M3FN has 3 mantissa bits, bias 7, no infinity and
// one NaN a sign (S.1111.111); E5M2 has 2 mantissa bits, bias 15, and IEEE
// infinities and NaNs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_FLOAT8_H
#define KILN_RUNTIME_FLOAT8_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln {
namespace rt {

/// The float of float8 E4M3FN (or, with `e5m2`, E5M2) bits; exact.
inline float floatOfFloat8Bits(uint8_t bits, bool e5m2) {
  int mantissaBits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  int magnitude = bits & 0x7f, exponent = magnitude >> mantissaBits;
  int mantissa = magnitude & ((1 << mantissaBits) - 1);
  float value;
  if (e5m2 && exponent == 31)
    value = mantissa ? NAN : INFINITY;
  else if (!e5m2 && magnitude == 0x7f)
    value = NAN;
  else if (exponent == 0)
    value = std::ldexp(float(mantissa), 1 - bias - mantissaBits);
  else
    value = std::ldexp(float((1 << mantissaBits) | mantissa),
                       exponent - bias - mantissaBits);
  return bits & 0x80 ? -value : value;
}

/// The float8 E4M3FN (or E5M2) bits nearest `value`: ties to even, a finite
/// value beyond the largest (448, 57344) the largest of the same sign, an
/// infinity E5M2's infinity and E4M3FN's largest (it has none), NaN a NaN.
/// This is ONNX's saturating cast but for E5M2's infinities, which that
/// cast also saturates (the importer says so where it casts).
inline uint8_t float8BitsOf(float value, bool e5m2) {
  // On the float's bits: a normal result rounds the 23-bit mantissa to 3
  // (or 2) bits by adding half a step less one plus the kept bits' lowest
  // bit (ties to even; a carry moves into the exponent), then rebiases the
  // exponent. kilnc --weights fp8 encodes every weight of a model this way.
  int mantissaBits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  uint32_t word;
  std::memcpy(&word, &value, sizeof(word));
  uint8_t sign = uint8_t((word >> 24) & 0x80);
  uint32_t magnitude = word & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN
    return sign | 0x7f;
  if (e5m2 && magnitude == 0x7f800000u)
    return sign | 0x7c;
  // The largest finite values, 448 (0x43e00000) and 57344 (0x47600000);
  // anything at or beyond them saturates.
  if (magnitude >= (e5m2 ? 0x47600000u : 0x43e00000u))
    return sign | (e5m2 ? 0x7b : 0x7e);
  // Below the least normal, 2^(1 - bias), the value scaled to units of the
  // least subnormal is exact; rounding it to an integer gives the bits (8,
  // or 4, rounds up to the least normal's).
  if (magnitude < uint32_t(127 + 1 - bias) << 23) {
    float units = std::fabs(value) * float(1 << (bias - 1 + mantissaBits));
    return sign | uint8_t(std::nearbyint(units));
  }
  int shift = 23 - mantissaBits;
  uint32_t rounded =
      magnitude + ((1u << (shift - 1)) - 1) + ((magnitude >> shift) & 1);
  return sign |
         uint8_t((rounded >> shift) - (uint32_t(127 - bias) << mantissaBits));
}

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_FLOAT8_H
