//===- kiln_cuda_host_math.h - CUDA device types and math on the host -----===//
//
// The host backend compiles the CUDA C++ that Kiln emits as ordinary C++17
// (g++ or clang++), so that machines without a GPU execute the very kernels a
// GPU would run. This header supplies the *types and math* half of the device
// environment: __half and __nv_bfloat16 with CUDA's rounding, the conversion
// and math intrinsics that host libm lacks, CUDA's global min/max overloads,
// the vector types with their device alignments, and atomics. The execution
// model (__global__, threadIdx, __syncthreads, shuffles, launches) lives in
// kiln_cuda_host.h, which includes this header first.
//
// Everything is defined at global scope under CUDA's own names, using only
// standard headers, so that generated code compiles unchanged. Conversions
// and 16-bit arithmetic are bit exact with the GPU; transcendental functions
// use the host libm and may differ from the GPU's in the last bits.
//
// Why one header of this length: it is embedded in the runtime and shipped
// to the host compiler as one file beside kiln_cuda_host.h, and its parts
// (16-bit types, intrinsics, vectors, atomics) depend on each other in
// declaration order, as CUDA's own cuda_fp16.hpp does.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_HOST_MATH_H
#define KILN_CUDA_HOST_MATH_H

// <math.h> as well as <cmath>: generated code calls expf, erff, isnan, ...
// unqualified, as CUDA declares them at global scope.
#include <math.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

//===----------------------------------------------------------------------===//
// Rounding helpers (not part of CUDA's API)
//===----------------------------------------------------------------------===//

namespace kiln_host_detail {

/// The IEEE rounding directions of CUDA's _rn, _rz, _rd and _ru suffixes.
enum class Round { Nearest, Zero, Down, Up };

/// Reinterprets the bytes of `from` as a `To` of the same size.
template <class To, class From> inline To bitCast(const From &from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "bit cast between sizes");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

/// Rounds `x` once to the IEEE binary format with `ExpBits` exponent and
/// `FracBits` fraction bits (half: 5/10, bfloat16: 8/7, float: 8/23) and
/// returns its bit pattern. This works on bits because the host FPU has no
/// 16-bit formats, and going through float (double -> float -> half) rounds
/// twice, which can differ from one correct rounding. Overflow gives infinity
/// or the largest finite value as IEEE prescribes for `mode`; a NaN gives
/// CUDA's canonical NaN (all ones, sign clear), as the GPU does.
template <int ExpBits, int FracBits>
inline uint32_t roundBits(double x, Round mode) noexcept {
  constexpr uint32_t inf = ((1u << ExpBits) - 1) << FracBits;
  constexpr int bias = (1 << (ExpBits - 1)) - 1;
  constexpr int minExp = 1 - bias; // exponent of the smallest normal
  constexpr uint64_t inf64 = uint64_t(0x7ff) << 52;
  const uint64_t b = bitCast<uint64_t>(x);
  const bool neg = (b >> 63) != 0;
  const uint32_t sign = uint32_t(neg) << (ExpBits + FracBits);
  const uint64_t a = b & ~(uint64_t(1) << 63);
  if (a > inf64)
    return inf | ((1u << FracBits) - 1);
  if (a == inf64 || a == 0)
    return sign | (a == 0 ? 0 : inf);
  // Directed modes round an inexact magnitude up on one side of zero only.
  const bool awayIfInexact =
      (mode == Round::Up && !neg) || (mode == Round::Down && neg);
  const int e = int(a >> 52) - 1023;
  if (e + bias >= int((1u << ExpBits) - 1))
    return sign | (mode == Round::Nearest || awayIfInexact ? inf : inf - 1);
  // The 53-bit significand. A subnormal double only needs to be nonzero:
  // it lies far below half the smallest subnormal of the target.
  const uint64_t sig = (a & ((uint64_t(1) << 52) - 1)) | (uint64_t(1) << 52);
  // Drop the bits below the target's last place, more when the result is
  // subnormal; past 60 everything is a remainder below half an ulp.
  int shift = 52 - FracBits + (e < minExp ? minExp - e : 0);
  shift = shift > 60 ? 60 : shift;
  const uint64_t q = sig >> shift;
  const uint64_t rem = sig & ((uint64_t(1) << shift) - 1);
  const uint64_t halfUlp = uint64_t(1) << (shift - 1);
  const bool up = mode == Round::Nearest
                      ? rem > halfUlp || (rem == halfUlp && (q & 1) != 0)
                      : rem != 0 && awayIfInexact;
  // A normal q still holds the implicit bit, which adds one to the exponent
  // field; a carry out of the fraction bumps the exponent too (up to
  // infinity), and a subnormal that rounds up becomes the smallest normal.
  const uint32_t expField = e >= minExp ? uint32_t(e + bias - 1) : 0u;
  return sign | ((expField << FracBits) + uint32_t(q) + uint32_t(up));
}

/// roundBits to a 16-bit format, to nearest even.
template <int ExpBits, int FracBits>
inline unsigned short nearest16(double x) noexcept {
  return static_cast<unsigned short>(
      roundBits<ExpBits, FracBits>(x, Round::Nearest));
}

/// Converts an integer to double rounding to odd (truncate, then set the last
/// bit if anything was dropped), so that rounding the double again to a
/// format of 51 bits or fewer gives the correctly rounded result.
template <class I> inline double toDoubleOdd(I v) noexcept {
  const bool neg = v < I(1) && v != I(0); // v < 0 without -Wtype-limits
  const uint64_t m = neg ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  int drop = 0;
  while ((m >> drop) >= (uint64_t(1) << 53))
    ++drop;
  const uint64_t kept = (m >> drop) | ((m & ((uint64_t(1) << drop) - 1)) != 0);
  const double d = std::ldexp(double(kept), drop);
  return neg ? -d : d;
}

/// Rounds `x` to float in `mode`.
inline float toFloat(double x, Round mode) noexcept {
  return bitCast<float>(roundBits<8, 23>(x, mode));
}

/// Converts `x` to integer type `I` with PTX cvt semantics: round per `mode`,
/// saturate out-of-range values; a NaN gives 0, except from a double or into
/// a 64-bit integer, where it gives 1 << (bits - 1).
template <class I>
inline I toInt(double x, Round mode, bool fromDouble) noexcept {
  using L = std::numeric_limits<I>;
  if (std::isnan(x))
    return !fromDouble && L::digits < 63 ? I(0)
           : L::is_signed                ? L::min()
                                         : I(L::max() / 2 + 1);
  const double r = mode == Round::Nearest ? std::nearbyint(x)
                   : mode == Round::Zero  ? std::trunc(x)
                   : mode == Round::Down  ? std::floor(x)
                                          : std::ceil(x);
  if (r >= std::ldexp(1.0, L::digits))
    return L::max();
  return r <= double(L::min()) ? L::min() : I(r);
}

/// Computes a * b + c, where a * b is exact in double (true for operands of
/// 16-bit formats), rounding the sum to odd so that a later rounding to a
/// 16-bit format is still correct (a plain double fma could round twice).
inline double fmaOdd(double a, double b, double c) noexcept {
  const double p = a * b;
  const double s = p + c;
  if (!std::isfinite(s))
    return s;
  const double bb = s - p; // TwoSum: err is exactly (p + c) - s
  const double err = (p - (s - bb)) + (c - bb);
  if (err == 0 || (bitCast<uint64_t>(s) & 1) != 0)
    return s;
  return std::nextafter(s, err > 0 ? INFINITY : -INFINITY);
}

/// Widens a binary16 pattern to float exactly; NaNs become CUDA's canonical
/// float NaN, as cuda_fp16.hpp does.
inline float halfBitsToFloat(unsigned short h) noexcept {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
  if (exp == 0x1f)
    return bitCast<float>(frac != 0 ? 0x7fffffffu : sign | 0x7f800000u);
  if (exp != 0)
    return bitCast<float>(sign | ((exp + 112) << 23) | (frac << 13));
  const float mag = float(frac) * 0x1p-24f; // subnormal, exact in float
  return sign != 0 ? -mag : mag;
}

/// Widens a bfloat16 pattern to float: it is the upper half of a float.
inline float bf16BitsToFloat(unsigned short h) noexcept {
  return bitCast<float>(uint32_t(h) << 16);
}

/// Builds a 16-bit float type from its bit pattern.
template <class T> inline T fromBits(uint32_t bits) noexcept {
  T t;
  t.__x = static_cast<unsigned short>(bits);
  return t;
}

/// CUDA's canonical NaN of both 16-bit formats: all ones, sign clear.
template <class T> inline T canonicalNaN() noexcept {
  return fromBits<T>(0x7fffu);
}

/// CUDA's 16-bit max (`isMax`) or min: -0 orders below +0; a NaN operand
/// gives the canonical NaN if `nanWins`, else the other operand (two NaNs
/// still give the canonical NaN).
template <class T> inline T maxOrMin(T a, T b, bool isMax, bool nanWins) {
  const float x = float(a), y = float(b);
  if (std::isnan(x) || std::isnan(y))
    return nanWins || (std::isnan(x) && std::isnan(y)) ? canonicalNaN<T>()
           : std::isnan(x)                             ? b
                                                       : a;
  if (x == y) // equal patterns, or +0 and -0
    return ((a.__x & 0x8000u) != 0) == isMax ? b : a;
  return (x > y) == isMax ? a : b;
}

} // namespace kiln_host_detail

//===----------------------------------------------------------------------===//
// __half and __nv_bfloat16
//===----------------------------------------------------------------------===//

/// Declares a 16-bit float type T holding its bit pattern, with CUDA's
/// constructors (round to nearest even, once, from any arithmetic type), its
/// raw struct and its conversion to float. Trivially copyable and trivially
/// default constructible, so it can live in __shared__ arrays.
#define KILN_NARROW_TYPE(T, RAW, EB, FB, WIDEN)                                \
  struct RAW {                                                                 \
    unsigned short x;                                                          \
  };                                                                           \
  struct alignas(2) T {                                                        \
    unsigned short __x;                                                        \
    T() = default;                                                             \
    constexpr T(const RAW &r) noexcept : __x(r.x) {}                           \
    T(double d) noexcept : __x(kiln_host_detail::nearest16<EB, FB>(d)) {}      \
    T(float f) noexcept : T(double(f)) {}                                      \
    T(short v) noexcept : T(double(v)) {}                                      \
    T(unsigned short v) noexcept : T(double(v)) {}                             \
    T(int v) noexcept : T(double(v)) {}                                        \
    T(unsigned int v) noexcept : T(double(v)) {}                               \
    T(long v) noexcept : T(kiln_host_detail::toDoubleOdd(v)) {}                \
    T(unsigned long v) noexcept : T(kiln_host_detail::toDoubleOdd(v)) {}       \
    T(long long v) noexcept : T(kiln_host_detail::toDoubleOdd(v)) {}           \
    T(unsigned long long v) noexcept : T(kiln_host_detail::toDoubleOdd(v)) {}  \
    constexpr operator RAW() const noexcept { return RAW{__x}; }               \
    operator float() const noexcept { return kiln_host_detail::WIDEN(__x); }   \
  };
KILN_NARROW_TYPE(__half, __half_raw, 5, 10, halfBitsToFloat)
KILN_NARROW_TYPE(__nv_bfloat16, __nv_bfloat16_raw, 8, 7, bf16BitsToFloat)
#undef KILN_NARROW_TYPE

typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

/// Conversions of a 16-bit float type T named N (half, bfloat16) that have
/// no rounding suffix, and its bit reinterpretations.
#define KILN_NARROW_CONVERSIONS(N, T)                                          \
  inline float __##N##2float(const T h) noexcept { return float(h); }          \
  inline T __float2##N(const float f) noexcept { return T(f); }                \
  inline T __double2##N(const double d) noexcept { return T(d); }              \
  inline unsigned short __##N##_as_ushort(const T h) noexcept {                \
    return h.__x;                                                              \
  }                                                                            \
  inline short __##N##_as_short(const T h) noexcept { return short(h.__x); }   \
  inline T __ushort_as_##N(const unsigned short u) noexcept {                  \
    return kiln_host_detail::fromBits<T>(u);                                   \
  }                                                                            \
  inline T __short_as_##N(const short s) noexcept {                            \
    return kiln_host_detail::fromBits<T>(static_cast<unsigned short>(s));      \
  }
KILN_NARROW_CONVERSIONS(half, __half)
KILN_NARROW_CONVERSIONS(bfloat16, __nv_bfloat16)
#undef KILN_NARROW_CONVERSIONS

#define KILN_FOR_EACH_ROUNDING(M)                                              \
  M(rn, Nearest) M(rz, Zero) M(rd, Down) M(ru, Up)

/// CUDA's rounding-suffixed conversions between a 16-bit float type and
/// float and the integer types (__float2half_rz, __int2bfloat16_rd,
/// __half2int_rz, ...). Integers arrive as a double rounded to odd, so that
/// 64-bit values are rounded once as well.
#define KILN_NARROW_ROUNDING(MS, MODE, N, T, EB, FB)                           \
  inline T __float2##N##_##MS(const float f) noexcept {                        \
    return kiln_host_detail::fromBits<T>(kiln_host_detail::roundBits<EB, FB>(  \
        f, kiln_host_detail::Round::MODE));                                    \
  }                                                                            \
  KILN_NARROW_INT(MS, MODE, N, T, EB, FB, short, short)                        \
  KILN_NARROW_INT(MS, MODE, N, T, EB, FB, ushort, unsigned short)              \
  KILN_NARROW_INT(MS, MODE, N, T, EB, FB, int, int)                            \
  KILN_NARROW_INT(MS, MODE, N, T, EB, FB, uint, unsigned int)                  \
  KILN_NARROW_INT(MS, MODE, N, T, EB, FB, ll, long long)                       \
  KILN_NARROW_INT(MS, MODE, N, T, EB, FB, ull, unsigned long long)
#define KILN_NARROW_INT(MS, MODE, N, T, EB, FB, I, IT)                         \
  inline T __##I##2##N##_##MS(const IT v) noexcept {                           \
    return kiln_host_detail::fromBits<T>(kiln_host_detail::roundBits<EB, FB>(  \
        kiln_host_detail::toDoubleOdd(v), kiln_host_detail::Round::MODE));     \
  }                                                                            \
  inline IT __##N##2##I##_##MS(const T h) noexcept {                           \
    return kiln_host_detail::toInt<IT>(h, kiln_host_detail::Round::MODE, 0);   \
  }
#define KILN_HALF_ROUNDING(MS, MODE)                                           \
  KILN_NARROW_ROUNDING(MS, MODE, half, __half, 5, 10)
#define KILN_BF16_ROUNDING(MS, MODE)                                           \
  KILN_NARROW_ROUNDING(MS, MODE, bfloat16, __nv_bfloat16, 8, 7)
KILN_FOR_EACH_ROUNDING(KILN_HALF_ROUNDING)
KILN_FOR_EACH_ROUNDING(KILN_BF16_ROUNDING)
#undef KILN_HALF_ROUNDING
#undef KILN_BF16_ROUNDING
#undef KILN_NARROW_INT
#undef KILN_NARROW_ROUNDING

/// Float/double <-> integer conversions (__float2int_rn, __ll2float_rz,
/// __double2float_rd, ...) with PTX cvt's rounding and saturation.
#define KILN_WIDE_ROUNDING(MS, MODE)                                           \
  KILN_WIDE_INT(MS, MODE, int, int)                                            \
  KILN_WIDE_INT(MS, MODE, uint, unsigned int)                                  \
  KILN_WIDE_INT(MS, MODE, ll, long long)                                       \
  KILN_WIDE_INT(MS, MODE, ull, unsigned long long)                             \
  inline float __double2float_##MS(const double d) noexcept {                  \
    return kiln_host_detail::toFloat(d, kiln_host_detail::Round::MODE);        \
  }
#define KILN_WIDE_INT(MS, MODE, I, IT)                                         \
  inline IT __float2##I##_##MS(const float x) noexcept {                       \
    return kiln_host_detail::toInt<IT>(x, kiln_host_detail::Round::MODE, 0);   \
  }                                                                            \
  inline IT __double2##I##_##MS(const double x) noexcept {                     \
    return kiln_host_detail::toInt<IT>(x, kiln_host_detail::Round::MODE, 1);   \
  }                                                                            \
  inline float __##I##2float_##MS(const IT v) noexcept {                       \
    return kiln_host_detail::toFloat(kiln_host_detail::toDoubleOdd(v),         \
                                     kiln_host_detail::Round::MODE);           \
  }
KILN_FOR_EACH_ROUNDING(KILN_WIDE_ROUNDING)
#undef KILN_WIDE_INT
#undef KILN_WIDE_ROUNDING
#undef KILN_FOR_EACH_ROUNDING
#define KILN_TO_DOUBLE(I, IT)                                                  \
  inline double __##I##2double_rn(const IT v) noexcept { return double(v); }
KILN_TO_DOUBLE(int, int)
KILN_TO_DOUBLE(uint, unsigned int)
KILN_TO_DOUBLE(ll, long long)
KILN_TO_DOUBLE(ull, unsigned long long)
#undef KILN_TO_DOUBLE

/// Bit reinterpretations, through memcpy (no aliasing games).
#define KILN_BIT_CAST(NAME, FROM, TO)                                          \
  inline TO NAME(const FROM v) noexcept {                                      \
    return kiln_host_detail::bitCast<TO>(v);                                   \
  }
KILN_BIT_CAST(__float_as_int, float, int)
KILN_BIT_CAST(__int_as_float, int, float)
KILN_BIT_CAST(__float_as_uint, float, unsigned int)
KILN_BIT_CAST(__uint_as_float, unsigned int, float)
KILN_BIT_CAST(__double_as_longlong, double, long long)
KILN_BIT_CAST(__longlong_as_double, long long, double)
#undef KILN_BIT_CAST

//===----------------------------------------------------------------------===//
// Half and bfloat16 arithmetic
//===----------------------------------------------------------------------===//

/// CUDA's 16-bit intrinsics and operators for type T. Each operation runs in
/// double, where +, - and * of 16-bit values are exact and / and sqrt are
/// precise enough (53 >= 2 * 11 + 2 bits) that rounding the double to T gives
/// the correctly rounded result, as the GPU does; fma rounds to odd first.
#define KILN_NARROW_MATH(T)                                                    \
  KILN_NARROW_BINARY(T, __hadd, x + y)                                         \
  KILN_NARROW_BINARY(T, __hsub, x - y)                                         \
  KILN_NARROW_BINARY(T, __hmul, (x) * (y))                                     \
  KILN_NARROW_BINARY(T, __hdiv, x / y)                                         \
  KILN_NARROW_BINARY(T, __hadd_rn, x + y)                                      \
  KILN_NARROW_BINARY(T, __hsub_rn, x - y)                                      \
  KILN_NARROW_BINARY(T, __hmul_rn, (x) * (y))                                  \
  inline T __hfma(const T a, const T b, const T c) noexcept {                  \
    return T(kiln_host_detail::fmaOdd(float(a), float(b), float(c)));          \
  }                                                                            \
  inline bool __hisnan(const T a) noexcept { return std::isnan(float(a)); }    \
  inline int __hisinf(const T a) noexcept {                                    \
    return std::isinf(float(a)) ? (float(a) < 0 ? -1 : 1) : 0;                 \
  }                                                                            \
  /* Sign flips; a NaN becomes the canonical NaN, as CUDA's do. */             \
  inline T __hneg(const T a) noexcept {                                        \
    return __hisnan(a) ? kiln_host_detail::canonicalNaN<T>()                   \
                       : kiln_host_detail::fromBits<T>(a.__x ^ 0x8000u);       \
  }                                                                            \
  inline T __habs(const T a) noexcept {                                        \
    return __hisnan(a) ? kiln_host_detail::canonicalNaN<T>()                   \
                       : kiln_host_detail::fromBits<T>(a.__x & 0x7fffu);       \
  }                                                                            \
  inline T __hmax(const T a, const T b) noexcept {                             \
    return kiln_host_detail::maxOrMin(a, b, true, false);                      \
  }                                                                            \
  inline T __hmin(const T a, const T b) noexcept {                             \
    return kiln_host_detail::maxOrMin(a, b, false, false);                     \
  }                                                                            \
  inline T __hmax_nan(const T a, const T b) noexcept {                         \
    return kiln_host_detail::maxOrMin(a, b, true, true);                       \
  }                                                                            \
  inline T __hmin_nan(const T a, const T b) noexcept {                         \
    return kiln_host_detail::maxOrMin(a, b, false, true);                      \
  }                                                                            \
  KILN_NARROW_COMPARE(T, eq, ==)                                               \
  KILN_NARROW_COMPARE(T, ne, !=)                                               \
  KILN_NARROW_COMPARE(T, lt, <)                                                \
  KILN_NARROW_COMPARE(T, le, <=)                                               \
  KILN_NARROW_COMPARE(T, gt, >)                                                \
  KILN_NARROW_COMPARE(T, ge, >=)                                               \
  KILN_NARROW_UNARY(T, hsqrt, std::sqrt(x))                                    \
  KILN_NARROW_UNARY(T, hrsqrt, 1.0 / std::sqrt(x))                             \
  KILN_NARROW_UNARY(T, hrcp, 1.0 / x)                                          \
  KILN_NARROW_UNARY(T, hexp, std::exp(x))                                      \
  KILN_NARROW_UNARY(T, hexp2, std::exp2(x))                                    \
  KILN_NARROW_UNARY(T, hexp10, std::pow(10.0, x))                              \
  KILN_NARROW_UNARY(T, hlog, std::log(x))                                      \
  KILN_NARROW_UNARY(T, hlog2, std::log2(x))                                    \
  KILN_NARROW_UNARY(T, hlog10, std::log10(x))                                  \
  KILN_NARROW_UNARY(T, hsin, std::sin(x))                                      \
  KILN_NARROW_UNARY(T, hcos, std::cos(x))                                      \
  KILN_NARROW_UNARY(T, htanh, std::tanh(x))                                    \
  KILN_NARROW_UNARY(T, hfloor, std::floor(x))                                  \
  KILN_NARROW_UNARY(T, hceil, std::ceil(x))                                    \
  KILN_NARROW_UNARY(T, htrunc, std::trunc(x))                                  \
  KILN_NARROW_UNARY(T, hrint, std::nearbyint(x))                               \
  inline T operator+(const T &a) noexcept { return a; }                        \
  inline T operator-(const T &a) noexcept { return __hneg(a); }                \
  KILN_NARROW_OPERATOR(T, +, __hadd)                                           \
  KILN_NARROW_OPERATOR(T, -, __hsub)                                           \
  KILN_NARROW_OPERATOR(T, *, __hmul)                                           \
  KILN_NARROW_OPERATOR(T, /, __hdiv)                                           \
  inline T &operator++(T &a) noexcept { return a = a + T(1.0f); }              \
  inline T &operator--(T &a) noexcept { return a = a - T(1.0f); }              \
  inline T operator++(T &a, int) noexcept {                                    \
    const T old = a;                                                           \
    ++a;                                                                       \
    return old;                                                                \
  }                                                                            \
  inline T operator--(T &a, int) noexcept {                                    \
    const T old = a;                                                           \
    --a;                                                                       \
    return old;                                                                \
  }                                                                            \
  /* Like float's: == is ordered, != unordered. */                             \
  KILN_NARROW_RELATION(T, ==, __heq)                                           \
  KILN_NARROW_RELATION(T, !=, __hneu)                                          \
  KILN_NARROW_RELATION(T, <, __hlt)                                            \
  KILN_NARROW_RELATION(T, <=, __hle)                                           \
  KILN_NARROW_RELATION(T, >, __hgt)                                            \
  KILN_NARROW_RELATION(T, >=, __hge)
#define KILN_NARROW_BINARY(T, NAME, EXPR)                                      \
  inline T NAME(const T a, const T b) noexcept {                               \
    const double x = float(a), y = float(b);                                   \
    return T(EXPR);                                                            \
  }
#define KILN_NARROW_UNARY(T, NAME, EXPR)                                       \
  inline T NAME(const T a) noexcept {                                          \
    const double x = float(a);                                                 \
    return T(EXPR);                                                            \
  }
// __heq etc. are ordered (false on NaN), __hequ etc. unordered.
#define KILN_NARROW_COMPARE(T, OP, SYM)                                        \
  inline bool __h##OP(const T a, const T b) noexcept {                         \
    return !__hisnan(a) && !__hisnan(b) && float(a) SYM float(b);              \
  }                                                                            \
  inline bool __h##OP##u(const T a, const T b) noexcept {                      \
    return __hisnan(a) || __hisnan(b) || float(a) SYM float(b);                \
  }
#define KILN_NARROW_OPERATOR(T, SYM, NAME)                                     \
  inline T operator SYM(const T &a, const T &b) noexcept {                     \
    return NAME(a, b);                                                         \
  }                                                                            \
  inline T &operator SYM##=(T &a, const T &b) noexcept {                       \
    return a = NAME(a, b);                                                     \
  }
#define KILN_NARROW_RELATION(T, SYM, NAME)                                     \
  inline bool operator SYM(const T &a, const T &b) noexcept {                  \
    return NAME(a, b);                                                         \
  }
KILN_NARROW_MATH(__half)
KILN_NARROW_MATH(__nv_bfloat16)
#undef KILN_NARROW_RELATION
#undef KILN_NARROW_OPERATOR
#undef KILN_NARROW_COMPARE
#undef KILN_NARROW_UNARY
#undef KILN_NARROW_BINARY
#undef KILN_NARROW_MATH

//===----------------------------------------------------------------------===//
// Vector types
//===----------------------------------------------------------------------===//

/// CUDA's vector family NAME1..NAME4 of element type T, with the device
/// alignments (2: twice the element; 4: four times, at most 16; 1 and 3: the
/// element's), and make_NAME1..make_NAME4.
#define KILN_VECTOR_FAMILY(NAME, T)                                            \
  struct NAME##1 {                                                             \
    T x;                                                                       \
  };                                                                           \
  struct alignas(2 * sizeof(T)) NAME##2 {                                      \
    T x, y;                                                                    \
  };                                                                           \
  struct NAME##3 {                                                             \
    T x, y, z;                                                                 \
  };                                                                           \
  struct alignas(4 * sizeof(T) < 16 ? 4 * sizeof(T) : 16) NAME##4 {            \
    T x, y, z, w;                                                              \
  };                                                                           \
  constexpr NAME##1 make_##NAME##1(T x) noexcept { return NAME##1 {x}; }       \
  constexpr NAME##2 make_##NAME##2(T x, T y) noexcept {                        \
    return NAME##2 {x, y};                                                     \
  }                                                                            \
  constexpr NAME##3 make_##NAME##3(T x, T y, T z) noexcept {                   \
    return NAME##3 {x, y, z};                                                  \
  }                                                                            \
  constexpr NAME##4 make_##NAME##4(T x, T y, T z, T w) noexcept {              \
    return NAME##4 {x, y, z, w};                                               \
  }
KILN_VECTOR_FAMILY(char, signed char)
KILN_VECTOR_FAMILY(uchar, unsigned char)
KILN_VECTOR_FAMILY(short, short)
KILN_VECTOR_FAMILY(ushort, unsigned short)
KILN_VECTOR_FAMILY(int, int)
KILN_VECTOR_FAMILY(uint, unsigned int)
KILN_VECTOR_FAMILY(long, long)
KILN_VECTOR_FAMILY(ulong, unsigned long)
KILN_VECTOR_FAMILY(longlong, long long)
KILN_VECTOR_FAMILY(ulonglong, unsigned long long)
KILN_VECTOR_FAMILY(float, float)
KILN_VECTOR_FAMILY(double, double)
#undef KILN_VECTOR_FAMILY

/// Launch dimensions: unspecified components are 1.
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1,
                 unsigned int vz = 1) noexcept
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(const uint3 v) noexcept : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const noexcept { return uint3{x, y, z}; }
};

//===----------------------------------------------------------------------===//
// __half2 and __nv_bfloat162
//===----------------------------------------------------------------------===//

/// The pair type T2 of 16-bit floats T (named N and N2 in CUDA's function
/// names) and the helpers that pack, unpack, convert and add pairs.
#define KILN_NARROW_PAIR(T, T2, N, N2)                                         \
  struct alignas(4) T2 {                                                       \
    T x, y;                                                                    \
    T2() = default;                                                            \
    constexpr T2(const T &a, const T &b) noexcept : x(a), y(b) {}              \
  };                                                                           \
  inline T2 make_##N2(const T a, const T b) noexcept { return T2(a, b); }      \
  inline T2 __halves2##N2(const T a, const T b) noexcept { return T2(a, b); }  \
  inline T2 __##N##2##N2(const T a) noexcept { return T2(a, a); }              \
  inline T __low2##N(const T2 v) noexcept { return v.x; }                      \
  inline T __high2##N(const T2 v) noexcept { return v.y; }                     \
  inline T2 __lowhigh2highlow(const T2 v) noexcept { return T2(v.y, v.x); }    \
  inline float __low2float(const T2 v) noexcept { return float(v.x); }         \
  inline float __high2float(const T2 v) noexcept { return float(v.y); }        \
  inline T2 __floats2##N2##_rn(const float a, const float b) noexcept {        \
    return T2(T(a), T(b));                                                     \
  }                                                                            \
  inline T2 __float2##N2##_rn(const float a) noexcept { return T2(a, a); }     \
  inline T2 __float22##N2##_rn(const float2 v) noexcept {                      \
    return T2(T(v.x), T(v.y));                                                 \
  }                                                                            \
  inline float2 __##N2##2float2(const T2 v) noexcept {                         \
    return make_float2(float(v.x), float(v.y));                                \
  }                                                                            \
  KILN_PAIRWISE(T2, __hadd2, __hadd(a.x, b.x), __hadd(a.y, b.y))               \
  KILN_PAIRWISE(T2, __hsub2, __hsub(a.x, b.x), __hsub(a.y, b.y))               \
  KILN_PAIRWISE(T2, __hmul2, __hmul(a.x, b.x), __hmul(a.y, b.y))               \
  inline T2 __hfma2(const T2 a, const T2 b, const T2 c) noexcept {             \
    return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));                   \
  }
#define KILN_PAIRWISE(T2, NAME, X, Y)                                          \
  inline T2 NAME(const T2 a, const T2 b) noexcept { return T2(X, Y); }
KILN_NARROW_PAIR(__half, __half2, half, half2)
KILN_NARROW_PAIR(__nv_bfloat16, __nv_bfloat162, bfloat16, bfloat162)
#undef KILN_PAIRWISE
#undef KILN_NARROW_PAIR

typedef __half2 half2;
typedef __nv_bfloat162 nv_bfloat162;

//===----------------------------------------------------------------------===//
// Float intrinsics missing from the host libm
//===----------------------------------------------------------------------===//

// glibc declares exp10f and sincosf as GNU extensions (g++ and clang++
// define _GNU_SOURCE); define them only where the C library does not.
#if !(defined(__GLIBC__) && defined(__USE_GNU))
inline float exp10f(const float x) noexcept { return std::pow(10.0f, x); }
inline double exp10(const double x) noexcept { return std::pow(10.0, x); }
inline void sincosf(const float x, float *s, float *c) noexcept {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline void sincos(const double x, double *s, double *c) noexcept {
  *s = std::sin(x);
  *c = std::cos(x);
}
#endif

// glibc's <math.h> also declares, without defining, __expf, __logf, ... as
// noexcept extern "C" functions; these definitions match that declaration,
// which is why every function in this header is noexcept. On the GPU the
// __ forms are fast approximations; here they are the accurate libm ones.
#define KILN_LIBM_ALIAS(NAME, FN)                                              \
  inline float NAME(const float x) noexcept { return FN(x); }
KILN_LIBM_ALIAS(__expf, expf)
KILN_LIBM_ALIAS(__exp10f, exp10f)
KILN_LIBM_ALIAS(__logf, logf)
KILN_LIBM_ALIAS(__log2f, log2f)
KILN_LIBM_ALIAS(__log10f, log10f)
KILN_LIBM_ALIAS(__sinf, sinf)
KILN_LIBM_ALIAS(__cosf, cosf)
KILN_LIBM_ALIAS(__tanf, tanf)
KILN_LIBM_ALIAS(__fsqrt_rn, sqrtf)
#undef KILN_LIBM_ALIAS
inline float __powf(const float x, const float y) noexcept {
  return powf(x, y);
}
inline void __sincosf(const float x, float *s, float *c) noexcept {
  sincosf(x, s, c);
}

/// Reciprocal roots through double: within an ulp of the exact value, as
/// accurate as the GPU's (2 ulp), and ±0 give ±infinity.
inline float rsqrtf(const float x) noexcept {
  return float(1.0 / std::sqrt(double(x)));
}
inline double rsqrt(const double x) noexcept { return 1.0 / std::sqrt(x); }
inline float rcbrtf(const float x) noexcept {
  return float(1.0 / std::cbrt(double(x)));
}
/// The standard normal cumulative distribution function.
inline double normcdf(const double x) noexcept {
  return 0.5 * std::erfc(-x * 0.70710678118654752440);
}
inline float normcdff(const float x) noexcept { return float(normcdf(x)); }
/// Clamps to [+0, 1]; NaN gives 0.
inline float __saturatef(const float x) noexcept {
  return !(x > 0.0f) ? 0.0f : (x < 1.0f ? x : 1.0f);
}

// The host rounds to nearest even by default, so the _rn operations are the
// plain ones. CUDA promises never to fuse them into an fma; only
// -ffp-contract=fast (GCC's default in GNU modes, not with -std=c++17) could
// fuse an inlined __fmul_rn into a following add on the host.
#define KILN_BINARY_RN(NAME, T, EXPR)                                          \
  inline T NAME(const T a, const T b) noexcept { return EXPR; }
KILN_BINARY_RN(__fadd_rn, float, a + b)
KILN_BINARY_RN(__fsub_rn, float, a - b)
KILN_BINARY_RN(__fmul_rn, float, (a) * (b))
KILN_BINARY_RN(__fdiv_rn, float, a / b)
KILN_BINARY_RN(__fdividef, float, a / b)
KILN_BINARY_RN(fdividef, float, a / b)
#undef KILN_BINARY_RN
inline float __frcp_rn(const float a) noexcept { return 1.0f / a; }
inline float __fmaf_rn(const float a, const float b, const float c) noexcept {
  return std::fma(a, b, c);
}

//===----------------------------------------------------------------------===//
// Integer intrinsics
//===----------------------------------------------------------------------===//

inline int __popc(const unsigned int x) noexcept {
  return __builtin_popcount(x);
}
inline int __popcll(const unsigned long long x) noexcept {
  return __builtin_popcountll(x);
}
// The builtins are undefined for 0; CUDA defines the count as the width.
inline int __clz(const int x) noexcept {
  return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x));
}
inline int __clzll(const long long x) noexcept {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline int __ffs(const int x) noexcept { return __builtin_ffs(x); }
inline int __ffsll(const long long x) noexcept { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) noexcept {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}
inline unsigned long long __brevll(const unsigned long long x) noexcept {
  return static_cast<unsigned long long>(__brev(unsigned(x))) << 32 |
         __brev(unsigned(x >> 32));
}
/// Byte n of the result is byte (s >> 4n) & 7 of the eight bytes of x (0 to
/// 3, least significant first) then y (4 to 7), as CUDA documents
/// __byte_perm: bits 2:0 of each selector nibble (prmt's sign-replicating
/// bit 3 is not read).
inline unsigned int __byte_perm(const unsigned int x, const unsigned int y,
                                const unsigned int s) noexcept {
  const unsigned long long bytes = static_cast<unsigned long long>(y) << 32 | x;
  unsigned int result = 0;
  for (int n = 0; n < 4; ++n)
    result |= static_cast<unsigned int>((bytes >> (8 * ((s >> (4 * n)) & 7u))) &
                                        0xffu)
              << (8 * n);
  return result;
}
/// Products of the low 24 bits (signed for __mul24); the low 32 bits remain.
inline int __mul24(const int x, const int y) noexcept {
  const int64_t a = int32_t(uint32_t(x) << 8) >> 8;
  const int64_t b = int32_t(uint32_t(y) << 8) >> 8;
  return int(uint32_t(uint64_t(a * b)));
}
inline unsigned int __umul24(const unsigned int x,
                             const unsigned int y) noexcept {
  return (x & 0xffffffu) * (y & 0xffffffu);
}
/// The high halves of full-width products.
inline int __mulhi(const int x, const int y) noexcept {
  return int((int64_t(x) * int64_t(y)) >> 32);
}
inline unsigned int __umulhi(const unsigned int x,
                             const unsigned int y) noexcept {
  return unsigned((uint64_t(x) * uint64_t(y)) >> 32);
}

__extension__ typedef __int128 kiln_host_int128;
__extension__ typedef unsigned __int128 kiln_host_uint128;
inline long long __mul64hi(const long long x, const long long y) noexcept {
  return static_cast<long long>((kiln_host_int128(x) * y) >> 64);
}
inline unsigned long long __umul64hi(const unsigned long long x,
                                     const unsigned long long y) noexcept {
  return static_cast<unsigned long long>((kiln_host_uint128(x) * y) >> 64);
}

//===----------------------------------------------------------------------===//
// min and max
//===----------------------------------------------------------------------===//

// CUDA's global overloads, mixed signedness included: an int and an unsigned
// compare as unsigned, so min(x, 32) with x unsigned is unsigned. The
// floating-point ones ignore a NaN, like fminf/fmaxf.
#define KILN_MINMAX(R, A, B, MIN, MAX)                                         \
  inline R MIN(const A a, const B b) noexcept {                                \
    const R x = static_cast<R>(a), y = static_cast<R>(b);                      \
    return x < y ? x : y;                                                      \
  }                                                                            \
  inline R MAX(const A a, const B b) noexcept {                                \
    const R x = static_cast<R>(a), y = static_cast<R>(b);                      \
    return x > y ? x : y;                                                      \
  }
#define KILN_MINMAX_SIGNS(S, U)                                                \
  KILN_MINMAX(S, S, S, min, max)                                               \
  KILN_MINMAX(U, U, U, min, max)                                               \
  KILN_MINMAX(U, S, U, min, max)                                               \
  KILN_MINMAX(U, U, S, min, max)
KILN_MINMAX_SIGNS(int, unsigned int)
KILN_MINMAX_SIGNS(long, unsigned long)
KILN_MINMAX_SIGNS(long long, unsigned long long)
KILN_MINMAX(unsigned int, unsigned int, unsigned int, umin, umax)
KILN_MINMAX(long long, long long, long long, llmin, llmax)
KILN_MINMAX(unsigned long long, unsigned long long, unsigned long long, ullmin,
            ullmax)
#undef KILN_MINMAX_SIGNS
#undef KILN_MINMAX
#define KILN_MINMAX_REAL(R, A, B, MIN, MAX)                                    \
  inline R min(const A a, const B b) noexcept { return MIN(a, b); }            \
  inline R max(const A a, const B b) noexcept { return MAX(a, b); }
KILN_MINMAX_REAL(float, float, float, fminf, fmaxf)
KILN_MINMAX_REAL(double, double, double, fmin, fmax)
KILN_MINMAX_REAL(double, float, double, fmin, fmax)
KILN_MINMAX_REAL(double, double, float, fmin, fmax)
#undef KILN_MINMAX_REAL

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

// The host emulator runs every thread of a launch on one OS thread and
// switches threads only where one waits (barriers, warp collectives), so
// nothing can interleave with a read-modify-write: a plain load and store is
// atomic. Each returns the old value, as CUDA's do; signed arithmetic wraps,
// as on the GPU.
#define KILN_ATOMIC(NAME, T, NEW)                                              \
  inline T NAME(T *address, const T val) noexcept {                            \
    const T old = *address;                                                    \
    *address = (NEW);                                                          \
    return old;                                                                \
  }
#define KILN_ATOMIC_ORDER(NAME, OP)                                            \
  KILN_ATOMIC(NAME, int, old OP val ? old : val)                               \
  KILN_ATOMIC(NAME, unsigned int, old OP val ? old : val)                      \
  KILN_ATOMIC(NAME, long long, old OP val ? old : val)                         \
  KILN_ATOMIC(NAME, unsigned long long, old OP val ? old : val)
#define KILN_ATOMIC_BITS(NAME, OP)                                             \
  KILN_ATOMIC(NAME, int, old OP val)                                           \
  KILN_ATOMIC(NAME, unsigned int, old OP val)                                  \
  KILN_ATOMIC(NAME, unsigned long long, old OP val)
KILN_ATOMIC(atomicAdd, int, int(unsigned(old) + unsigned(val)))
KILN_ATOMIC(atomicAdd, unsigned int, old + val)
KILN_ATOMIC(atomicAdd, unsigned long long, old + val)
KILN_ATOMIC(atomicAdd, float, old + val)
KILN_ATOMIC(atomicAdd, double, old + val)
KILN_ATOMIC(atomicAdd, __half, __hadd(old, val))
KILN_ATOMIC(atomicAdd, __nv_bfloat16, __hadd(old, val))
KILN_ATOMIC(atomicSub, int, int(unsigned(old) - unsigned(val)))
KILN_ATOMIC(atomicSub, unsigned int, old - val)
KILN_ATOMIC(atomicExch, int, val)
KILN_ATOMIC(atomicExch, unsigned int, val)
KILN_ATOMIC(atomicExch, unsigned long long, val)
KILN_ATOMIC(atomicExch, float, val)
// clang-format off
KILN_ATOMIC_ORDER(atomicMin, <)
KILN_ATOMIC_ORDER(atomicMax, >)
// CUDA's wrapping counters: Inc wraps to 0 past val, Dec to val below 1.
KILN_ATOMIC(atomicInc, unsigned int, old >= val ? 0u : old + 1)
KILN_ATOMIC(atomicDec, unsigned int, old == 0 || old > val ? val : old - 1)
KILN_ATOMIC_BITS(atomicAnd, &)
KILN_ATOMIC_BITS(atomicOr, |)
KILN_ATOMIC_BITS(atomicXor, ^)
// clang-format on
#undef KILN_ATOMIC_BITS
#undef KILN_ATOMIC_ORDER
#undef KILN_ATOMIC

#define KILN_ATOMIC_CAS(T)                                                     \
  inline T atomicCAS(T *address, const T compare, const T val) noexcept {      \
    const T old = *address;                                                    \
    *address = old == compare ? val : old;                                     \
    return old;                                                                \
  }
KILN_ATOMIC_CAS(int)
KILN_ATOMIC_CAS(unsigned int)
KILN_ATOMIC_CAS(unsigned long long)
KILN_ATOMIC_CAS(unsigned short)
#undef KILN_ATOMIC_CAS

// Block- and system-scoped variants are the same single-threaded operation.
#define KILN_ATOMIC_SCOPES(NAME)                                               \
  KILN_ATOMIC_FORWARD(NAME##_block, NAME)                                      \
  KILN_ATOMIC_FORWARD(NAME##_system, NAME)
#define KILN_ATOMIC_FORWARD(SCOPED, NAME)                                      \
  template <class... A> inline auto SCOPED(A... a) noexcept {                  \
    return NAME(a...);                                                         \
  }
KILN_ATOMIC_SCOPES(atomicAdd)
KILN_ATOMIC_SCOPES(atomicSub)
KILN_ATOMIC_SCOPES(atomicExch)
KILN_ATOMIC_SCOPES(atomicMin)
KILN_ATOMIC_SCOPES(atomicMax)
KILN_ATOMIC_SCOPES(atomicInc)
KILN_ATOMIC_SCOPES(atomicDec)
KILN_ATOMIC_SCOPES(atomicCAS)
KILN_ATOMIC_SCOPES(atomicAnd)
KILN_ATOMIC_SCOPES(atomicOr)
KILN_ATOMIC_SCOPES(atomicXor)
#undef KILN_ATOMIC_FORWARD
#undef KILN_ATOMIC_SCOPES

//===----------------------------------------------------------------------===//
// Memory fences, cache-hinted loads and stores, traps
//===----------------------------------------------------------------------===//

// With one OS thread there is no other observer; a fence only has to keep
// the compiler from moving memory accesses across it.
#define KILN_FENCE(NAME)                                                       \
  inline void NAME() noexcept { __asm__ __volatile__("" ::: "memory"); }
KILN_FENCE(__threadfence)
KILN_FENCE(__threadfence_block)
KILN_FENCE(__threadfence_system)
#undef KILN_FENCE

// Cache hints mean nothing on the host.
#define KILN_CACHED_LOAD(NAME)                                                 \
  template <class T> inline T NAME(const T *p) noexcept { return *p; }
#define KILN_CACHED_STORE(NAME)                                                \
  template <class T> inline void NAME(T *p, const T v) noexcept { *p = v; }
KILN_CACHED_LOAD(__ldg)
KILN_CACHED_LOAD(__ldca)
KILN_CACHED_LOAD(__ldcg)
KILN_CACHED_LOAD(__ldcs)
KILN_CACHED_LOAD(__ldlu)
KILN_CACHED_LOAD(__ldcv)
KILN_CACHED_STORE(__stwb)
KILN_CACHED_STORE(__stcg)
KILN_CACHED_STORE(__stcs)
KILN_CACHED_STORE(__stwt)
#undef KILN_CACHED_LOAD
#undef KILN_CACHED_STORE

[[noreturn]] inline void __trap() noexcept { __builtin_trap(); }

#endif // KILN_CUDA_HOST_MATH_H
