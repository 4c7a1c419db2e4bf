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
  int mantissaBits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  float largest = e5m2 ? 57344.0f : 448.0f;
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  if (std::isnan(value))
    return sign | 0x7f;
  if (e5m2 && std::isinf(value))
    return sign | 0x7c;
  float magnitude = std::fmin(std::fabs(value), largest);
  if (magnitude < std::ldexp(1.0f, 1 - bias)) // Subnormal: exact scaling.
    return sign | uint8_t(std::nearbyint(
                      std::ldexp(magnitude, bias - 1 + mantissaBits)));
  int exponent;
  float fraction = std::frexp(magnitude, &exponent); // In [0.5, 1).
  // A mantissa that rounds up to 2^mantissaBits carries into the exponent.
  int mantissa = int(std::nearbyint((2 * fraction - 1) * (1 << mantissaBits)));
  return sign | uint8_t(((exponent - 1 + bias) << mantissaBits) + mantissa);
}

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_FLOAT8_H
