//===- ScalarMath.h - per-element integer and float functions ---*- C++ -*-===//
//
// The scalar functions that the elementwise ops (and matmul) apply to each
// element: integer arithmetic that wraps and cannot trap, and the float
// functions that are not one call into <cmath>.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_INTERPRETER_SCALARMATH_H
#define KILN_LIB_INTERPRETER_SCALARMATH_H

#include <cmath>
#include <cstdint>
#include <limits>

namespace kiln {

//===----------------------------------------------------------------------===//
// Integer arithmetic
//===----------------------------------------------------------------------===//

// Integer ops wrap modulo 2^64 through uint64_t (signed overflow is undefined
// behaviour); storing the result then wraps it to the element width.

/// `a + b`, wrapping.
inline int64_t wrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}

/// `a - b`, wrapping.
inline int64_t wrappingSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}

/// `a * b`, wrapping.
inline int64_t wrappingMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

/// `a / b` truncated toward zero. ONNX leaves division by zero undefined; it
/// gives 0 here so that a hostile constant cannot trap the host, and
/// INT64_MIN / -1 wraps like the other ops.
inline int64_t truncatingDiv(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return wrappingSub(0, a);
  return a / b;
}

/// `a / b` of unsigned values; a division by zero is 0, as for signed ones.
inline uint64_t unsignedDiv(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : a / b;
}

/// The remainder of unsigned `a / b` (ONNX Mod with either fmod, which agree
/// on values without a sign); a remainder by zero is 0.
inline uint64_t unsignedRem(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : a % b;
}

/// The larger of `a` and `b`, for integers of either signedness.
template <typename T> inline T larger(T a, T b) { return a > b ? a : b; }

/// The smaller of `a` and `b`, for integers of either signedness.
template <typename T> inline T smaller(T a, T b) { return a < b ? a : b; }

/// `|a|`, wrapping: the most negative value stays itself, as in two's
/// complement hardware.
inline int64_t wrappingAbs(int64_t a) { return a < 0 ? wrappingSub(0, a) : a; }

/// The remainder of `a / b` with the sign of `a` (C's `%`, ONNX Mod with
/// fmod = 1). A remainder by zero is 0, as a division by zero is.
inline int64_t truncatingRem(int64_t a, int64_t b) {
  // b == -1 always leaves 0; testing it first avoids INT64_MIN % -1, which
  // traps on x86.
  if (b == 0 || b == -1)
    return 0;
  return a % b;
}

/// The remainder of `a / b` with the sign of `b` (Python's `%`, ONNX Mod
/// with fmod = 0).
inline int64_t flooringRem(int64_t a, int64_t b) {
  int64_t r = truncatingRem(a, b);
  if (r != 0 && (r < 0) != (b < 0))
    r += b;
  return r;
}

//===----------------------------------------------------------------------===//
// Float functions
//===----------------------------------------------------------------------===//

/// -1, 0 or 1 by the sign of `x`; NaN and zeros are returned as they are.
inline double floatSign(double x) {
  if (x > 0.0)
    return 1.0;
  if (x < 0.0)
    return -1.0;
  return x;
}

/// The larger of `a` and `b`; NaN if either is NaN (numpy.maximum).
inline double nanMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}

/// The smaller of `a` and `b`; NaN if either is NaN (numpy.minimum).
inline double nanMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a < b ? a : b;
}

/// Gelu with the exact Gaussian CDF: `0.5 x (1 + erf(x / sqrt(2)))`.
inline double geluErf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

/// Gelu with the tanh approximation of the CDF.
inline double geluTanh(double x) {
  const double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2 / pi)
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_SCALARMATH_H
