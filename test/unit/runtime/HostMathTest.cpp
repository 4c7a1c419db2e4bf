//===- HostMathTest.cpp - CUDA types and math of the host backend ---------===//
//
// Checks kiln_cuda_host_math.h against references built independently of it:
// 16-bit patterns decoded with ldexp, rounding decided by locating the two
// representable neighbours of the exact value, the compiler's own _Float16
// and int/double -> float conversions where available, and naive loops for
// the bit intrinsics.
//
//===----------------------------------------------------------------------===//

#include "kiln_cuda_host_math.h"
// A second time: the include guard makes it harmless.
#include "kiln_cuda_host_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>
#include <vector>

namespace {

/// The rounding directions of CUDA's _rn, _rz, _rd and _ru suffixes.
enum class Mode { Nearest, Zero, Down, Up };

/// A 16-bit IEEE-style format as the references see it.
struct Format {
  int expBits;
  int fracBits;
  int bias() const { return (1 << (expBits - 1)) - 1; }
  unsigned infBits() const { return ((1u << expBits) - 1) << fracBits; }
};
const Format kHalf{5, 10};
const Format kBf16{8, 7};

/// Decodes a pattern as (-1)^s * m * 2^e with ldexp.
double decode(const Format &fmt, unsigned bits) {
  const bool neg = (bits & 0x8000u) != 0;
  const int e = int((bits >> fmt.fracBits) & ((1u << fmt.expBits) - 1));
  const unsigned m = bits & ((1u << fmt.fracBits) - 1);
  double v;
  if (e == (1 << fmt.expBits) - 1)
    v = m != 0 ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp(double(m), 1 - fmt.bias() - fmt.fracBits);
  else
    v = std::ldexp(double(m + (1u << fmt.fracBits)),
                   e - fmt.bias() - fmt.fracBits);
  return neg ? -v : v;
}

/// The value of every positive finite pattern, indexed by pattern, followed
/// by the value the infinity pattern would have if the exponent were
/// unbounded (rounding treats overflow as if it went there).
std::vector<double> ladder(const Format &fmt) {
  std::vector<double> values;
  for (unsigned bits = 0; bits < fmt.infBits(); ++bits)
    values.push_back(decode(fmt, bits));
  values.push_back(std::ldexp(1.0, (1 << fmt.expBits) - 1 - fmt.bias()));
  return values;
}

/// Rounds the exact value x + tail (tail far below x's last place, as left by
/// an inexact double operation) by finding its neighbours on the ladder.
unsigned refRound(const std::vector<double> &lad, double x, Mode mode,
                  double tail = 0) {
  const bool neg = std::signbit(x);
  const unsigned sign = neg ? 0x8000u : 0u;
  const unsigned inf = unsigned(lad.size() - 1);
  const double a = std::fabs(x);
  const double t = neg ? -tail : tail; // tail of the magnitude
  if (std::isinf(a))
    return sign | inf;
  const bool away = (mode == Mode::Up && !neg) || (mode == Mode::Down && neg);
  unsigned lo =
      unsigned(std::upper_bound(lad.begin(), lad.end(), a) - lad.begin()) - 1;
  if (lo == inf) // beyond the largest finite value's rounding range
    return sign | (mode == Mode::Nearest || away ? inf : inf - 1);
  if (lad[lo] == a && t < 0 && lo > 0)
    --lo; // the exact value lies just below a ladder value
  if (lad[lo] == a && t == 0)
    return sign | lo;
  const unsigned hi = lo + 1;
  if (mode != Mode::Nearest)
    return sign | (away ? hi : lo);
  const double mid = (lad[lo] + lad[hi]) / 2; // exact: few significant bits
  if (a < mid || (a == mid && t < 0))
    return sign | lo;
  if (a > mid || (a == mid && t > 0))
    return sign | hi;
  return sign | ((lo & 1) == 0 ? lo : hi);
}

/// Rounds d to float in `mode`, from the host's round-to-nearest conversion.
float refFloat(double d, Mode mode) {
  const float f = float(d);
  if (double(f) == d || std::isnan(d) || mode == Mode::Nearest)
    return f;
  const float lo = double(f) < d ? f : std::nextafter(f, -INFINITY);
  const float hi = double(f) > d ? f : std::nextafter(f, INFINITY);
  if (mode == Mode::Down)
    return lo;
  if (mode == Mode::Up)
    return hi;
  return d > 0 ? lo : hi;
}

unsigned bitsOf(__half h) { return __half_as_ushort(h); }
unsigned bitsOf(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
unsigned bitsOf(float f) { return __float_as_uint(f); }
template <class T> T fromPattern(unsigned bits);
template <> __half fromPattern<__half>(unsigned bits) {
  return __ushort_as_half(static_cast<unsigned short>(bits));
}
template <> __nv_bfloat16 fromPattern<__nv_bfloat16>(unsigned bits) {
  return __ushort_as_bfloat16(static_cast<unsigned short>(bits));
}

/// Whether a 16-bit pattern of `fmt` is a quiet NaN.
bool isQuietNaN(const Format &fmt, unsigned bits) {
  const unsigned quiet = 1u << (fmt.fracBits - 1);
  return (bits & 0x7fffu) > fmt.infBits() && (bits & quiet) != 0;
}

/// One conversion under test from `From`, with the rounding CUDA documents
/// for it; `bits` returns the pattern of its result.
template <class From> struct Conversion {
  Mode mode;
  const char *name;
  unsigned (*bits)(From);
};

/// The table entry for CUDA's conversion FN from FROM, rounding in MODE.
#define CONVERSION(FROM, FN, MODE)                                             \
  {                                                                            \
    Mode::MODE, #FN, [](FROM x) { return bitsOf(FN(x)); }                      \
  }
/// The entries for FN_rn, FN_rz, FN_rd and FN_ru.
#define ROUNDED(FROM, FN)                                                      \
  CONVERSION(FROM, FN##_rn, Nearest), CONVERSION(FROM, FN##_rz, Zero),         \
      CONVERSION(FROM, FN##_rd, Down), CONVERSION(FROM, FN##_ru, Up)

/// Conversions to the 16-bit types; those without a suffix, the constructors
/// and the ones from double round to nearest.
const Conversion<float> kFloatToHalf[] = {
    ROUNDED(float, __float2half), CONVERSION(float, __float2half, Nearest),
    CONVERSION(float, __half, Nearest),
    CONVERSION(float, __double2half, Nearest)};
const Conversion<float> kFloatToBf16[] = {
    ROUNDED(float, __float2bfloat16),
    CONVERSION(float, __float2bfloat16, Nearest),
    CONVERSION(float, __nv_bfloat16, Nearest),
    CONVERSION(float, __double2bfloat16, Nearest)};
const Conversion<int> kIntToHalf[] = {ROUNDED(int, __int2half),
                                      CONVERSION(int, __half, Nearest)};
const Conversion<int> kIntToBf16[] = {ROUNDED(int, __int2bfloat16),
                                      CONVERSION(int, __nv_bfloat16, Nearest)};
const Conversion<long long> kLongLongToBf16[] = {
    ROUNDED(long long, __ll2bfloat16)};
/// Conversions to float.
const Conversion<double> kDoubleToFloat[] = {ROUNDED(double, __double2float)};
const Conversion<int> kIntToFloat[] = {ROUNDED(int, __int2float)};
#undef ROUNDED
#undef CONVERSION

/// The test's random seed: fixed unless KILN_TEST_SEED is set, and printed.
unsigned testSeed() {
  const char *env = std::getenv("KILN_TEST_SEED");
  const unsigned seed = env ? unsigned(std::strtoul(env, nullptr, 10)) : 5489u;
  std::printf("HostMathTest seed %u (set KILN_TEST_SEED to change)\n", seed);
  return seed;
}

/// Floats on and around the rounding boundaries of `lad`: every value, every
/// midpoint (including the overflow threshold) and their float neighbours,
/// values below the smallest subnormal, huge values, and random patterns.
std::vector<float> roundingInputs(const std::vector<double> &lad) {
  std::vector<float> in;
  auto addAround = [&](float f) {
    in.push_back(f);
    in.push_back(std::nextafter(f, -INFINITY));
    in.push_back(std::nextafter(f, INFINITY));
  };
  for (size_t i = 0; i + 1 < lad.size(); ++i) {
    addAround(float(lad[i]));
    addAround(float((lad[i] + lad[i + 1]) / 2));
  }
  addAround(float(lad.back()));
  addAround(float(lad[1] / 4));
  addAround(FLT_MAX);
  in.push_back(FLT_TRUE_MIN);
  in.push_back(INFINITY);
  in.push_back(1e10f);
  std::mt19937 rng(testSeed());
  for (int i = 0; i < (1 << 19); ++i) {
    const float f = __uint_as_float(uint32_t(rng()));
    if (!std::isnan(f))
      in.push_back(f);
  }
  // Random floats concentrated in and around the half range (2^-26..2^17).
  std::uniform_int_distribution<uint32_t> exp(101, 144), frac(0, 0x7fffff);
  for (int i = 0; i < (1 << 18); ++i)
    in.push_back(__uint_as_float(exp(rng) << 23 | frac(rng)));
  const size_t n = in.size();
  for (size_t i = 0; i < n; ++i)
    in.push_back(-in[i]);
  return in;
}

/// Counts mismatches between `got` and `want`, reporting the first few.
class Mismatches {
public:
  void check(unsigned got, unsigned want, double input, const char *what) {
    if (got == want)
      return;
    if (++count_ <= 10)
      ADD_FAILURE() << what << "(" << std::hexfloat << input
                    << std::defaultfloat << "): got 0x" << std::hex << got
                    << ", want 0x" << want;
  }
  ~Mismatches() { EXPECT_EQ(count_, 0u); }

private:
  unsigned count_ = 0;
};

/// Checks every conversion of x to a 16-bit type against the ladder rounding
/// of the exact value double(x) + tail.
template <class From, size_t N>
void checkRounding(Mismatches &bad, const std::vector<double> &lad,
                   const Conversion<From> (&conversions)[N], From x,
                   double tail = 0) {
  for (const Conversion<From> &c : conversions)
    bad.check(c.bits(x), refRound(lad, double(x), c.mode, tail), double(x),
              c.name);
}

/// Checks every conversion of x to float against refFloat.
template <class From, size_t N>
void checkToFloat(Mismatches &bad, const Conversion<From> (&conversions)[N],
                  From x) {
  for (const Conversion<From> &c : conversions)
    bad.check(c.bits(x), bitsOf(refFloat(double(x), c.mode)), double(x),
              c.name);
}

/// Expects every conversion of the NaN `nan` to give a quiet NaN of `fmt`.
template <size_t N>
void expectQuietNaNs(const Format &fmt,
                     const Conversion<float> (&conversions)[N], float nan) {
  for (const Conversion<float> &c : conversions)
    EXPECT_TRUE(isQuietNaN(fmt, c.bits(nan)))
        << c.name << "(0x" << std::hex << __float_as_uint(nan) << ")";
}

/// Checks the sizes and alignments of a 16-bit type T and its pair T2.
template <class T, class T2> void checkTypeLayout() {
  EXPECT_EQ(sizeof(T), 2u);
  EXPECT_EQ(alignof(T), 2u);
  EXPECT_EQ(sizeof(T2), 4u);
  EXPECT_EQ(alignof(T2), 4u);
  EXPECT_TRUE(std::is_trivially_copyable<T>::value);
  EXPECT_TRUE(std::is_trivially_default_constructible<T>::value);
  EXPECT_TRUE(std::is_trivially_copyable<T2>::value);
}

/// Widens every pattern of T (format fmt) and checks the value against
/// decode(); NaNs must stay NaNs, and every conversion from float must give
/// the exact values back unchanged in every rounding direction.
template <class T, size_t N>
void checkWidening(const Format &fmt, float (*widen)(T),
                   const Conversion<float> (&fromFloat)[N]) {
  for (unsigned bits = 0; bits < 0x10000u; ++bits) {
    const T h = fromPattern<T>(bits);
    const float f = widen(h);
    const double want = decode(fmt, bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f)) << bits;
      EXPECT_TRUE(__hisnan(h)) << bits;
      expectQuietNaNs(fmt, fromFloat, f);
      continue;
    }
    ASSERT_EQ(double(f), want) << "pattern 0x" << std::hex << bits;
    ASSERT_EQ(std::signbit(f), std::signbit(want)) << bits;
    EXPECT_FALSE(__hisnan(h));
    for (const Conversion<float> &c : fromFloat)
      EXPECT_EQ(c.bits(f), bits)
          << c.name << "(pattern 0x" << std::hex << bits << ")";
  }
}

/// Checks every conversion from float to a 16-bit type (format fmt) on the
/// rounding inputs of its ladder.
template <size_t N>
void checkFloatRounding(const Format &fmt,
                        const Conversion<float> (&fromFloat)[N]) {
  const std::vector<double> lad = ladder(fmt);
  Mismatches bad;
  for (float f : roundingInputs(lad))
    checkRounding(bad, lad, fromFloat, f);
}

//===----------------------------------------------------------------------===//
// __half
//===----------------------------------------------------------------------===//

TEST(HostMathHalf, TypeLayout) { checkTypeLayout<__half, __half2>(); }

TEST(HostMathHalf, ExhaustiveWidening) {
  checkWidening<__half>(kHalf, __half2float, kFloatToHalf);
}

TEST(HostMathHalf, FloatRoundingMatchesReference) {
  checkFloatRounding(kHalf, kFloatToHalf);
}

#if defined(__FLT16_MANT_DIG__)
unsigned float16Bits(_Float16 h) {
  unsigned short bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

TEST(HostMathHalf, FloatRoundingMatchesFloat16) {
  Mismatches bad;
  for (float f : roundingInputs(ladder(kHalf)))
    bad.check(bitsOf(__float2half_rn(f)), float16Bits(_Float16(f)), f,
              "__float2half_rn vs _Float16");
}
#endif

TEST(HostMathHalf, DoubleRoundsOnce) {
  // Doubles just off a midpoint round to the midpoint in float, and float to
  // half would then break the tie the wrong way half the time.
  const std::vector<double> lad = ladder(kHalf);
  Mismatches bad;
  for (size_t i = 0; i + 1 < lad.size(); ++i) {
    const double mid = (lad[i] + lad[i + 1]) / 2;
    for (double d : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9),
                     -std::nextafter(mid, 1e9)}) {
      bad.check(bitsOf(__double2half(d)), refRound(lad, d, Mode::Nearest), d,
                "__double2half");
      bad.check(bitsOf(__half(d)), refRound(lad, d, Mode::Nearest), d,
                "__half(double)");
#if defined(__FLT16_MANT_DIG__)
      bad.check(bitsOf(__double2half(d)), float16Bits(_Float16(d)), d,
                "__double2half vs _Float16");
#endif
    }
  }
}

TEST(HostMathHalf, Specials) {
  // IEEE overflow: 65504 is the largest half and 65520 the midpoint to the
  // next power of two, which rounds to even, i.e. to infinity.
  EXPECT_EQ(bitsOf(__float2half_rn(65504.0f)), 0x7bffu);
  EXPECT_EQ(bitsOf(__float2half_rn(std::nextafter(65520.0f, 0.0f))), 0x7bffu);
  EXPECT_EQ(bitsOf(__float2half_rn(65520.0f)), 0x7c00u);
  EXPECT_EQ(bitsOf(__float2half_rn(-65520.0f)), 0xfc00u);
  EXPECT_EQ(bitsOf(__float2half_rz(1e30f)), 0x7bffu);
  EXPECT_EQ(bitsOf(__float2half_rz(INFINITY)), 0x7c00u);
  EXPECT_EQ(bitsOf(__float2half_rd(1e30f)), 0x7bffu);
  EXPECT_EQ(bitsOf(__float2half_rd(-1e30f)), 0xfc00u);
  // Signed zero and the subnormal boundary: 2^-25 ties to even (zero).
  EXPECT_EQ(bitsOf(__float2half_rn(-0.0f)), 0x8000u);
  EXPECT_EQ(bitsOf(__float2half_rn(std::ldexp(1.0f, -25))), 0x0000u);
  EXPECT_EQ(bitsOf(__float2half_rn(std::nextafter(std::ldexp(1.0f, -25), 1.f))),
            0x0001u);
  EXPECT_EQ(bitsOf(__float2half_ru(FLT_TRUE_MIN)), 0x0001u);
  EXPECT_EQ(bitsOf(__float2half_rd(-FLT_TRUE_MIN)), 0x8001u);
  // Every kind of NaN stays a quiet NaN, also through double.
  for (uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0xff800001u,
                       0xffc00000u, 0x7f801fffu, 0x7fbfe000u}) {
    const float f = __uint_as_float(nan);
    expectQuietNaNs(kHalf, kFloatToHalf, f);
    EXPECT_TRUE(std::isnan(__half2float(__float2half(f)))) << nan;
  }
}

//===----------------------------------------------------------------------===//
// __nv_bfloat16
//===----------------------------------------------------------------------===//

TEST(HostMathBf16, TypeLayout) {
  checkTypeLayout<__nv_bfloat16, __nv_bfloat162>();
}

TEST(HostMathBf16, ExhaustiveWidening) {
  checkWidening<__nv_bfloat16>(kBf16, __bfloat162float, kFloatToBf16);
}

TEST(HostMathBf16, FloatRoundingMatchesReference) {
  checkFloatRounding(kBf16, kFloatToBf16);
}

TEST(HostMathBf16, Specials) {
  // The largest bf16 is 0x7f7f; FLT_MAX lies beyond the midpoint to 2^128.
  const float bfMax = __uint_as_float(0x7f7f0000u);
  const float overflowTie = __uint_as_float(0x7f7f8000u);
  EXPECT_EQ(bitsOf(__float2bfloat16_rn(bfMax)), 0x7f7fu);
  EXPECT_EQ(bitsOf(__float2bfloat16_rn(std::nextafter(overflowTie, 0.f))),
            0x7f7fu);
  EXPECT_EQ(bitsOf(__float2bfloat16_rn(overflowTie)), 0x7f80u);
  EXPECT_EQ(bitsOf(__float2bfloat16_rn(FLT_MAX)), 0x7f80u);
  EXPECT_EQ(bitsOf(__float2bfloat16_rn(-FLT_MAX)), 0xff80u);
  EXPECT_EQ(bitsOf(__float2bfloat16_rz(FLT_MAX)), 0x7f7fu);
  EXPECT_EQ(bitsOf(__float2bfloat16_rn(-0.0f)), 0x8000u);
  // NaNs whose low half would carry into the exponent if rounded blindly.
  for (uint32_t nan : {0x7f800001u, 0x7f808000u, 0x7f80ffffu, 0x7fffffffu,
                       0xffffffffu, 0xff800001u, 0x7fc00000u})
    expectQuietNaNs(kBf16, kFloatToBf16, __uint_as_float(nan));
}

//===----------------------------------------------------------------------===//
// Integer and float conversions
//===----------------------------------------------------------------------===//

TEST(HostMathConvert, IntegersToNarrow) {
  const std::vector<double> half = ladder(kHalf), bf = ladder(kBf16);
  std::mt19937 rng(testSeed());
  Mismatches bad;
  for (int i = 0; i < 200000; ++i) {
    // Magnitudes spread over every width.
    const int v = int(rng()) >> (rng() % 32);
    checkRounding(bad, half, kIntToHalf, v);
    checkRounding(bad, bf, kIntToBf16, v);
    // 64-bit values that double cannot hold: the exact value is d plus the
    // (integer) remainder w - (long long)d.
    const long long w =
        (long long)(uint64_t(rng()) << 32 | rng()) >> (1 + rng() % 63);
    const double d = double(w);
    checkRounding(bad, bf, kLongLongToBf16, w, double(w - (long long)d));
  }
  // 2^60 + 2^52 is a bf16 midpoint; one more must round up, although double
  // rounds the sum back onto the midpoint.
  const long long tie = (1LL << 60) + (1LL << 52);
  EXPECT_EQ(bitsOf(__ll2bfloat16_rn(tie + 1)),
            refRound(bf, double(tie), Mode::Nearest, 1.0));
  EXPECT_NE(bitsOf(__ll2bfloat16_rn(tie + 1)), bitsOf(__ll2bfloat16_rn(tie)));
  EXPECT_EQ(bitsOf(__ull2half_rn(~0ull)), 0x7c00u);
  EXPECT_EQ(bitsOf(__ull2half_rz(~0ull)), 0x7bffu);
}

TEST(HostMathConvert, NarrowToIntegers) {
  auto sat = [](double r, double lo, double hi) {
    return r < lo ? lo : r > hi ? hi : r;
  };
  for (unsigned bits = 0; bits < 0x10000u; ++bits) {
    const __half h = fromPattern<__half>(bits);
    const __nv_bfloat16 b = fromPattern<__nv_bfloat16>(bits);
    const double x = decode(kHalf, bits), y = decode(kBf16, bits);
    if (std::isnan(x)) {
      // PTX cvt: NaN is 0, except into 64 bits, where it is 1 << 63.
      EXPECT_EQ(__half2int_rn(h), 0);
      EXPECT_EQ(__half2short_rz(h), 0);
      EXPECT_EQ(__half2ll_rz(h), LLONG_MIN);
      EXPECT_EQ(__half2ull_rz(h), 1ull << 63);
    } else {
      EXPECT_EQ(__half2int_rn(h), sat(std::nearbyint(x), INT_MIN, INT_MAX));
      EXPECT_EQ(__half2int_rz(h), sat(std::trunc(x), INT_MIN, INT_MAX));
      EXPECT_EQ(__half2int_rd(h), sat(std::floor(x), INT_MIN, INT_MAX));
      EXPECT_EQ(__half2int_ru(h), sat(std::ceil(x), INT_MIN, INT_MAX));
      EXPECT_EQ(__half2short_rz(h), sat(std::trunc(x), SHRT_MIN, SHRT_MAX));
      EXPECT_EQ(__half2ushort_rn(h), sat(std::nearbyint(x), 0, USHRT_MAX));
      EXPECT_EQ(__half2uint_rz(h), sat(std::trunc(x), 0, UINT_MAX));
    }
    if (std::isnan(y)) {
      EXPECT_EQ(__bfloat162int_rz(b), 0);
    } else {
      EXPECT_EQ(__bfloat162int_rz(b), sat(std::trunc(y), INT_MIN, INT_MAX));
      const double f = std::floor(y);
      EXPECT_EQ(__bfloat162ll_rd(b), f >= 0x1p63    ? LLONG_MAX
                                     : f <= -0x1p63 ? LLONG_MIN
                                                    : (long long)f);
    }
  }
  EXPECT_EQ(__float2int_rn(2.5f), 2);
  EXPECT_EQ(__float2int_rn(3.5f), 4);
  EXPECT_EQ(__float2int_rn(-2.5f), -2);
  EXPECT_EQ(__float2int_rd(-0.5f), -1);
  EXPECT_EQ(__float2int_ru(-0.5f), 0);
  EXPECT_EQ(__float2int_rz(3e9f), INT_MAX);
  EXPECT_EQ(__float2int_rz(-3e9f), INT_MIN);
  EXPECT_EQ(__float2uint_rn(-1.0f), 0u);
  EXPECT_EQ(__float2uint_rz(1e10f), UINT_MAX);
  EXPECT_EQ(__float2ull_rz(1e30f), ~0ull);
  EXPECT_EQ(__float2int_rn(NAN), 0);
  EXPECT_EQ(__float2uint_rn(NAN), 0u);
  EXPECT_EQ(__float2ll_rn(NAN), LLONG_MIN);
  EXPECT_EQ(__double2int_rn(NAN), INT_MIN);
  EXPECT_EQ(__double2uint_rn(NAN), 1u << 31);
}

TEST(HostMathConvert, ToFloat) {
  std::mt19937_64 rng(testSeed());
  Mismatches bad;
  for (int i = 0; i < 200000; ++i) {
    const double d = __longlong_as_double((long long)rng());
    if (std::isnan(d)) { // NaNs become the canonical NaN, not d's payload
      EXPECT_TRUE(std::isnan(__double2float_rz(d)));
      continue;
    }
    const int v = int(rng()) >> (rng() % 32);
    const long long w = (long long)rng() >> (rng() % 64);
    checkToFloat(bad, kDoubleToFloat, d);
    checkToFloat(bad, kIntToFloat, v);
    // The compiler's own int64 -> float conversion rounds once.
    bad.check(__float_as_uint(__ll2float_rn(w)), __float_as_uint(float(w)),
              double(w), "__ll2float_rn");
    bad.check(__float_as_uint(__ull2float_rn(uint64_t(w))),
              __float_as_uint(float(uint64_t(w))), double(w), "__ull2float_rn");
  }
  EXPECT_EQ(__int2float_rz(16777217), 16777216.0f);
  EXPECT_EQ(__int2float_ru(16777217), 16777218.0f);
  EXPECT_TRUE(std::isnan(__double2float_rn(NAN)));
}

TEST(HostMathConvert, BitCasts) {
  EXPECT_EQ(__int_as_float(0xff800000), -INFINITY);
  EXPECT_EQ(__float_as_int(1.0f), 0x3f800000);
  EXPECT_EQ(__float_as_uint(-0.0f), 0x80000000u);
  EXPECT_EQ(__uint_as_float(0x40490fdbu), 3.14159274101257324f);
  EXPECT_EQ(__double_as_longlong(1.0), 0x3ff0000000000000LL);
  EXPECT_EQ(__longlong_as_double(0x4000000000000000LL), 2.0);
  EXPECT_EQ(__half_as_ushort(__ushort_as_half(0x1234)), 0x1234);
  EXPECT_EQ(__bfloat16_as_short(__short_as_bfloat16(-2)), -2);
}

//===----------------------------------------------------------------------===//
// 16-bit arithmetic
//===----------------------------------------------------------------------===//

/// Checks the 16-bit operations of type T (format fmt) on random operands
/// against the ladder rounding of the exact results.
template <class T> void checkArithmetic(const Format &fmt) {
  const std::vector<double> lad = ladder(fmt);
  std::mt19937 rng(testSeed());
  auto make = [](unsigned bits) { return fromPattern<T>(bits & 0xffffu); };
  Mismatches bad;
  for (int i = 0; i < 300000; ++i) {
    const T a = make(rng()), b = make(rng()), c = make(rng());
    const double x = float(a), y = float(b), z = float(c);
    if (std::isnan(x) || std::isnan(y) || std::isnan(z))
      continue;
    auto want = [&](double exact, double tail = 0) {
      return std::isnan(exact) ? 0x7fffu
                               : refRound(lad, exact, Mode::Nearest, tail);
    };
    auto got = [](T h) { return std::isnan(float(h)) ? 0x7fffu : bitsOf(h); };
    // +, - and * of 16-bit values are exact in double.
    bad.check(got(__hadd(a, b)), want(x + y), x, "__hadd");
    bad.check(got(a + b), want(x + y), x, "operator+");
    bad.check(got(__hsub(a, b)), want(x - y), x, "__hsub");
    bad.check(got(__hmul(a, b)), want(x * y), x, "__hmul");
    bad.check(got(a * b), want(x * y), x, "operator*");
    // The exact quotient is q plus a remainder of (x - q*y) / y.
    const double q = x / y;
    const double r = std::isfinite(q) && y != 0 ? std::fma(-q, y, x) / y : 0;
    bad.check(got(__hdiv(a, b)), want(q, r), x, "__hdiv");
    // fma: the product is exact; TwoSum gives the sum's rounding error.
    const double p = x * y, s = p + z;
    const double bb = s - p;
    const double err = std::isfinite(s) ? (p - (s - bb)) + (z - bb) : 0;
    bad.check(got(__hfma(a, b, c)), want(s, err), x, "__hfma");
    EXPECT_EQ(__hlt(a, b), x < y);
    EXPECT_EQ(__hge(a, b), x >= y);
    EXPECT_EQ(a == b, x == y);
    EXPECT_EQ(a != b, x != y);
  }
}

TEST(HostMathHalf, Arithmetic) { checkArithmetic<__half>(kHalf); }
TEST(HostMathBf16, Arithmetic) { checkArithmetic<__nv_bfloat16>(kBf16); }

TEST(HostMathBf16, FmaRoundsOnce) {
  // (1 + 2^-4)^2 = 1 + 2^-3 + 2^-8, a bf16 midpoint; a tiny addend must push
  // it up, though a double fma would land on the midpoint and tie to even.
  const __nv_bfloat16 a = __float2bfloat16(1.0f + 1.0f / 16);
  const __nv_bfloat16 tiny = __float2bfloat16(std::ldexp(1.0f, -100));
  const double mid = 1.0 + 1.0 / 8 + 1.0 / 256;
  EXPECT_EQ(bitsOf(__hfma(a, a, tiny)),
            refRound(ladder(kBf16), mid, Mode::Nearest, 1e-30));
  EXPECT_EQ(double(__bfloat162float(__hfma(a, a, tiny))),
            1.0 + 1.0 / 8 + 1.0 / 128);
}

TEST(HostMathHalf, ComparisonsAndNaN) {
  const __half nan = __float2half(NAN), one = __float2half(1.0f);
  const __half two = __float2half(2.0f);
  EXPECT_FALSE(__heq(nan, nan));
  EXPECT_TRUE(__hneu(nan, nan));
  EXPECT_FALSE(__hne(nan, one));
  EXPECT_TRUE(__hltu(nan, one));
  EXPECT_TRUE(nan != nan);
  EXPECT_FALSE(nan < one);
  EXPECT_TRUE(one < two && two > one && one <= one && two >= one);
  EXPECT_EQ(__hisinf(__float2half(-INFINITY)), -1);
  EXPECT_EQ(__hisinf(__float2half(1e6f)), 1);
  EXPECT_EQ(__hisinf(one), 0);
  // max/min return the number when one input is NaN and order -0 < +0.
  EXPECT_EQ(bitsOf(__hmax(nan, one)), bitsOf(one));
  EXPECT_EQ(bitsOf(__hmin(two, nan)), bitsOf(two));
  EXPECT_TRUE(__hisnan(__hmax(nan, nan)));
  EXPECT_TRUE(__hisnan(__hmax_nan(nan, one)));
  EXPECT_EQ(bitsOf(__hmax(__float2half(-0.0f), __float2half(0.0f))), 0x0000u);
  EXPECT_EQ(bitsOf(__hmin(__float2half(0.0f), __float2half(-0.0f))), 0x8000u);
  EXPECT_EQ(bitsOf(__habs(__float2half(-3.0f))), bitsOf(__float2half(3.0f)));
  EXPECT_EQ(bitsOf(__hneg(one)), bitsOf(__float2half(-1.0f)));
  EXPECT_EQ(bitsOf(-one), bitsOf(__float2half(-1.0f)));
  __half h = one;
  h += two;
  h *= two;
  h -= one;
  h /= two;
  EXPECT_EQ(__half2float(h), 2.5f);
  EXPECT_EQ(__half2float(h++), 2.5f);
  EXPECT_EQ(__half2float(h), 3.5f);
  EXPECT_EQ(__half2float(hsqrt(__float2half(4.0f))), 2.0f);
  EXPECT_EQ(__half2float(hrsqrt(__float2half(4.0f))), 0.5f);
  EXPECT_EQ(__half2float(hexp(__float2half(0.0f))), 1.0f);
  EXPECT_EQ(__half2float(hlog(one)), 0.0f);
  EXPECT_EQ(__half2float(htanh(__float2half(0.0f))), 0.0f);
  EXPECT_EQ(__bfloat162float(hsqrt(__float2bfloat16(9.0f))), 3.0f);
}

TEST(HostMathHalf, Pairs) {
  const __half2 p = __floats2half2_rn(1.5f, -2.0f);
  EXPECT_EQ(__half2float(__low2half(p)), 1.5f);
  EXPECT_EQ(__half2float(__high2half(p)), -2.0f);
  const float2 f =
      __half22float2(__halves2half2(__high2half(p), __low2half(p)));
  EXPECT_EQ(f.x, -2.0f);
  EXPECT_EQ(f.y, 1.5f);
  EXPECT_EQ(__low2float(__float2half2_rn(0.25f)), 0.25f);
  const float2 s = __half22float2(__hadd2(p, p));
  EXPECT_EQ(s.x, 3.0f);
  EXPECT_EQ(s.y, -4.0f);
  const __nv_bfloat162 b = __floats2bfloat162_rn(3.0f, 0.5f);
  EXPECT_EQ(__bfloat162float(__low2bfloat16(b)), 3.0f);
  EXPECT_EQ(__bfloat162float(__high2bfloat16(b)), 0.5f);
  EXPECT_EQ(__bfloat1622float2(__hmul2(b, b)).x, 9.0f);
}

//===----------------------------------------------------------------------===//
// Float and integer intrinsics
//===----------------------------------------------------------------------===//

/// Distance in units in the last place between two finite floats of a sign.
uint32_t ulps(float a, float b) {
  const uint32_t x = __float_as_uint(a), y = __float_as_uint(b);
  return x > y ? x - y : y - x;
}

TEST(HostMathIntrinsics, Float) {
  std::mt19937 rng(testSeed());
  std::uniform_real_distribution<float> exps(-120.0f, 120.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = std::exp2(exps(rng));
    EXPECT_LE(ulps(rsqrtf(x), 1.0f / std::sqrt(x)), 1u) << x;
  }
  EXPECT_EQ(rsqrtf(0.0f), INFINITY);
  EXPECT_EQ(rsqrtf(-0.0f), -INFINITY);
  EXPECT_EQ(rsqrtf(INFINITY), 0.0f);
  EXPECT_TRUE(std::isnan(rsqrtf(-1.0f)));
  EXPECT_EQ(rsqrt(16.0), 0.25);
  EXPECT_EQ(rcbrtf(8.0f), 0.5f);
  EXPECT_EQ(__saturatef(-3.0f), 0.0f);
  EXPECT_EQ(__saturatef(2.0f), 1.0f);
  EXPECT_EQ(__saturatef(0.25f), 0.25f);
  EXPECT_EQ(__saturatef(INFINITY), 1.0f);
  EXPECT_EQ(__saturatef(NAN), 0.0f);
  EXPECT_FALSE(std::signbit(__saturatef(-0.0f)));
  EXPECT_FLOAT_EQ(normcdff(0.0f), 0.5f);
  EXPECT_NEAR(normcdff(1.0f), 0.8413447f, 1e-6f);
  EXPECT_FLOAT_EQ(__expf(1.0f), std::exp(1.0f));
  EXPECT_FLOAT_EQ(exp10f(2.0f), 100.0f);
  EXPECT_FLOAT_EQ(__exp10f(-1.0f), 0.1f);
  EXPECT_FLOAT_EQ(__logf(std::exp(2.0f)), 2.0f);
  EXPECT_FLOAT_EQ(__powf(2.0f, 10.0f), 1024.0f);
  EXPECT_EQ(__fdividef(1.0f, 4.0f), 0.25f);
  EXPECT_EQ(__frcp_rn(8.0f), 0.125f);
  EXPECT_EQ(__fmaf_rn(2.0f, 3.0f, 1.0f), 7.0f);
  float s = 0, c = 0;
  sincosf(0.0f, &s, &c);
  EXPECT_EQ(s, 0.0f);
  EXPECT_EQ(c, 1.0f);
  __sincosf(0.0f, &s, &c);
  EXPECT_EQ(c, 1.0f);
}

TEST(HostMathIntrinsics, Integer) {
  std::mt19937_64 rng(testSeed());
  std::vector<uint64_t> values = {
      0, 1, 0x80000000u, 0xffffffffu, ~0ull, 1ull << 63, 0x00ff00ff00ff00ffull};
  for (int i = 0; i < 10000; ++i)
    values.push_back(rng() >> (rng() % 64));
  for (uint64_t v : values) {
    const uint32_t v32 = uint32_t(v);
    int pop = 0, pop64 = 0, clz = 0, clz64 = 0, ffs = 0, ffs64 = 0;
    uint32_t rev = 0;
    uint64_t rev64 = 0;
    for (int b = 0; b < 32; ++b) {
      pop += (v32 >> b) & 1;
      rev |= ((v32 >> b) & 1u) << (31 - b);
    }
    for (int b = 0; b < 64; ++b) {
      pop64 += int((v >> b) & 1);
      rev64 |= ((v >> b) & 1u) << (63 - b);
    }
    while (clz < 32 && !((v32 << clz) & 0x80000000u))
      ++clz;
    while (clz64 < 64 && !((v << clz64) & (1ull << 63)))
      ++clz64;
    for (int b = 0; b < 32 && !ffs; ++b)
      ffs = (v32 >> b) & 1 ? b + 1 : 0;
    for (int b = 0; b < 64 && !ffs64; ++b)
      ffs64 = (v >> b) & 1 ? b + 1 : 0;
    EXPECT_EQ(__popc(v32), pop);
    EXPECT_EQ(__popcll(v), pop64);
    EXPECT_EQ(__clz(int(v32)), clz);
    EXPECT_EQ(__clzll((long long)v), clz64);
    EXPECT_EQ(__ffs(int(v32)), ffs);
    EXPECT_EQ(__ffsll((long long)v), ffs64);
    EXPECT_EQ(__brev(v32), rev);
    EXPECT_EQ(__brevll(v), rev64);
    // Products: 24-bit operands (sign-extended for __mul24), high halves.
    const uint32_t w32 = uint32_t(v >> 32) ^ uint32_t(rng());
    auto sext24 = [](uint32_t x) {
      return int64_t(x & 0xffffffu) - ((x & 0x800000u) ? 0x1000000 : 0);
    };
    EXPECT_EQ(uint32_t(__mul24(int(v32), int(w32))),
              uint32_t(uint64_t(sext24(v32) * sext24(w32))));
    EXPECT_EQ(__umul24(v32, w32),
              uint32_t(uint64_t(v32 & 0xffffffu) * (w32 & 0xffffffu)));
    EXPECT_EQ(__umulhi(v32, w32), uint32_t((uint64_t(v32) * w32) >> 32));
    EXPECT_EQ(__mulhi(int(v32), int(w32)),
              int((int64_t(int(v32)) * int(w32)) >> 32));
    // 64x64 high half by 32-bit limbs.
    const uint64_t w = rng();
    const uint64_t al = uint32_t(v), ah = v >> 32, bl = uint32_t(w),
                   bh = w >> 32;
    const uint64_t mid1 = ah * bl + ((al * bl) >> 32);
    const uint64_t mid2 = al * bh + uint32_t(mid1);
    const uint64_t hi = ah * bh + (mid1 >> 32) + (mid2 >> 32);
    EXPECT_EQ(__umul64hi(v, w), hi);
    const uint64_t shi =
        hi - ((long long)v < 0 ? w : 0) - ((long long)w < 0 ? v : 0);
    EXPECT_EQ(__mul64hi((long long)v, (long long)w), (long long)shi);
  }
}

TEST(HostMathIntrinsics, MinMax) {
  unsigned x = 40;
  static_assert(std::is_same<decltype(min(x, 32)), unsigned>::value,
                "int and unsigned meet as unsigned");
  static_assert(std::is_same<decltype(max(1.0f, 2.0)), double>::value,
                "float and double meet as double");
  static_assert(std::is_same<decltype(min(1, 2)), int>::value, "int");
  EXPECT_EQ(min(x, 32), 32u);
  EXPECT_EQ(max(32, x), 40u);
  EXPECT_EQ(min(-1, 1), -1);
  EXPECT_EQ(min(-1, 1u), 1u); // -1 compares as UINT_MAX
  EXPECT_EQ(max(-1, 1u), UINT_MAX);
  EXPECT_EQ(min(-5LL, 3LL), -5LL);
  EXPECT_EQ(max(2ull, 3ull), 3ull);
  EXPECT_EQ(max(size_t(7), size_t(9)), size_t(9));
  EXPECT_EQ(min(2.0f, 3.0f), 2.0f);
  EXPECT_EQ(min(NAN, 1.0f), 1.0f);
  EXPECT_EQ(max(1.0, NAN), 1.0);
  EXPECT_EQ(umin(3u, 4u), 3u);
  EXPECT_EQ(umax(3u, 4u), 4u);
  EXPECT_EQ(llmin(-3LL, 4LL), -3LL);
  EXPECT_EQ(llmax(-3LL, 4LL), 4LL);
  EXPECT_EQ(ullmin(3ull, 4ull), 3ull);
  EXPECT_EQ(ullmax(3ull, 4ull), 4ull);
}

//===----------------------------------------------------------------------===//
// Vector types
//===----------------------------------------------------------------------===//

static_assert(alignof(float2) == 8 && alignof(float4) == 16, "float vectors");
static_assert(alignof(double2) == 16 && alignof(int4) == 16, "16-byte vectors");
static_assert(alignof(longlong2) == 16 && alignof(float3) == 4, "alignment");
static_assert(sizeof(float3) == 12 && sizeof(char3) == 3, "3-vectors unpadded");

/// Checks a family against CUDA's rule: 1 and 3 have the element's
/// alignment, 2 twice the element size, 4 four times it but at most 16.
#define CHECK_FAMILY(NAME, T)                                                  \
  do {                                                                         \
    using E = T; /* one token for casts */                                     \
    const size_t e = sizeof(E);                                                \
    EXPECT_EQ(sizeof(NAME##1), e);                                             \
    EXPECT_EQ(alignof(NAME##1), alignof(E));                                   \
    EXPECT_EQ(sizeof(NAME##2), 2 * e);                                         \
    EXPECT_EQ(alignof(NAME##2), 2 * e);                                        \
    EXPECT_EQ(sizeof(NAME##3), 3 * e);                                         \
    EXPECT_EQ(alignof(NAME##3), alignof(E));                                   \
    EXPECT_EQ(sizeof(NAME##4), 4 * e);                                         \
    EXPECT_EQ(alignof(NAME##4), std::min<size_t>(4 * e, 16));                  \
    const NAME##4 v = make_##NAME##4(E(1), E(2), E(3), E(4));                  \
    EXPECT_TRUE(v.x == E(1) && v.y == E(2) && v.z == E(3) && v.w == E(4));     \
    const NAME##3 u = make_##NAME##3(E(5), E(6), E(7));                        \
    EXPECT_TRUE(u.x == E(5) && u.y == E(6) && u.z == E(7));                    \
    EXPECT_EQ(make_##NAME##2(E(8), E(9)).y, E(9));                             \
    EXPECT_EQ(make_##NAME##1(E(3)).x, E(3));                                   \
  } while (false)

// __byte_perm: each selector nibble's low three bits pick one of x's bytes
// (0 to 3) or y's (4 to 7); the packed GEMV builds floats of packed weights
// with it.
TEST(HostMathIntegers, BytePermute) {
  const unsigned x = 0x33221100u, y = 0x77665544u;
  EXPECT_EQ(__byte_perm(x, y, 0x1234u), 0x11223344u);
  EXPECT_EQ(__byte_perm(x, y, 0x7654u), y);
  EXPECT_EQ(__byte_perm(x, y, 0x3210u), x);
  // Bit 3 of a nibble (prmt's sign replication) is not read.
  EXPECT_EQ(__byte_perm(x, y, 0xcba9u), 0x44332211u);
  // 0.5 + q / 256 for q = 0x0b in byte 2 under 0x3f000000's exponent.
  EXPECT_EQ(__uint_as_float(__byte_perm(0x0bu, 0x3f000000u, 0x7054u)),
            0.5f + 11.0f / 256.0f);
}

TEST(HostMathVectors, LayoutAndMakers) {
  CHECK_FAMILY(char, signed char);
  CHECK_FAMILY(uchar, unsigned char);
  CHECK_FAMILY(short, short);
  CHECK_FAMILY(ushort, unsigned short);
  CHECK_FAMILY(int, int);
  CHECK_FAMILY(uint, unsigned int);
  CHECK_FAMILY(long, long);
  CHECK_FAMILY(ulong, unsigned long);
  CHECK_FAMILY(longlong, long long);
  CHECK_FAMILY(ulonglong, unsigned long long);
  CHECK_FAMILY(float, float);
  CHECK_FAMILY(double, double);
}

TEST(HostMathVectors, Dim3) {
  const dim3 d;
  EXPECT_EQ(d.x, 1u);
  EXPECT_EQ(d.y, 1u);
  EXPECT_EQ(d.z, 1u);
  const dim3 g(4, 2);
  EXPECT_EQ(g.x, 4u);
  EXPECT_EQ(g.z, 1u);
  const uint3 u = g;
  EXPECT_EQ(u.y, 2u);
  EXPECT_EQ(dim3(make_uint3(5, 6, 7)).z, 7u);
  const uint3 plain = {1, 2, 3}; // uint3 stays an aggregate
  EXPECT_EQ(plain.z, 3u);
}

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

TEST(HostMathAtomics, ReturnOldValue) {
  int i = 5;
  EXPECT_EQ(atomicAdd(&i, 3), 5);
  EXPECT_EQ(atomicSub(&i, 10), 8);
  EXPECT_EQ(i, -2);
  EXPECT_EQ(atomicExch(&i, 7), -2);
  EXPECT_EQ(atomicMin(&i, 3), 7);
  EXPECT_EQ(atomicMax(&i, 9), 3);
  EXPECT_EQ(i, 9);
  EXPECT_EQ(atomicCAS(&i, 8, 1), 9); // no match: unchanged
  EXPECT_EQ(i, 9);
  EXPECT_EQ(atomicCAS(&i, 9, 1), 9);
  EXPECT_EQ(i, 1);
  EXPECT_EQ(atomicOr(&i, 6), 1);
  EXPECT_EQ(atomicAnd(&i, 5), 7);
  EXPECT_EQ(atomicXor(&i, 1), 5);
  EXPECT_EQ(i, 4);
  int w = INT_MIN;
  EXPECT_EQ(atomicSub(&w, 1), INT_MIN); // wraps, as on the GPU
  EXPECT_EQ(w, INT_MAX);
  EXPECT_EQ(atomicAdd_block(&w, 1), INT_MAX);
  EXPECT_EQ(w, INT_MIN);
  unsigned long long ull = ~0ull;
  EXPECT_EQ(atomicAdd(&ull, 2ull), ~0ull);
  EXPECT_EQ(ull, 1ull);
  EXPECT_EQ(atomicCAS(&ull, 1ull, 42ull), 1ull);
  EXPECT_EQ(atomicMax(&ull, 7ull), 42ull);
  long long ll = -4;
  EXPECT_EQ(atomicMin(&ll, -9LL), -4LL);
  EXPECT_EQ(ll, -9LL);
  unsigned short us = 3;
  EXPECT_EQ(atomicCAS(&us, static_cast<unsigned short>(3),
                      static_cast<unsigned short>(4)),
            3);
  EXPECT_EQ(us, 4);
  float f = 1.5f;
  EXPECT_EQ(atomicAdd(&f, 2.0f), 1.5f);
  EXPECT_EQ(atomicExch(&f, -1.0f), 3.5f);
  EXPECT_EQ(f, -1.0f);
  double d = 0.25;
  EXPECT_EQ(atomicAdd(&d, 0.5), 0.25);
  EXPECT_EQ(d, 0.75);
  __half h = __float2half(1.0f);
  EXPECT_EQ(__half2float(atomicAdd(&h, __float2half(0.5f))), 1.0f);
  EXPECT_EQ(__half2float(h), 1.5f);
  __nv_bfloat16 b = __float2bfloat16(2.0f);
  EXPECT_EQ(__bfloat162float(atomicAdd(&b, __float2bfloat16(1.0f))), 2.0f);
  EXPECT_EQ(__bfloat162float(b), 3.0f);
}

TEST(HostMathAtomics, IncDecWrap) {
  // atomicInc: ((old >= val) ? 0 : old + 1); atomicDec:
  // ((old == 0) || (old > val)) ? val : old - 1.
  unsigned c = 0;
  std::vector<unsigned> seen;
  for (int i = 0; i < 6; ++i)
    seen.push_back(atomicInc(&c, 3u));
  EXPECT_EQ(seen, (std::vector<unsigned>{0, 1, 2, 3, 0, 1}));
  c = 10;
  EXPECT_EQ(atomicInc(&c, 3u), 10u); // above the limit: wraps to 0
  EXPECT_EQ(c, 0u);
  seen.clear();
  for (int i = 0; i < 5; ++i)
    seen.push_back(atomicDec(&c, 2u));
  EXPECT_EQ(seen, (std::vector<unsigned>{0, 2, 1, 0, 2}));
  c = 9;
  EXPECT_EQ(atomicDec(&c, 2u), 9u); // above the limit: reloads val
  EXPECT_EQ(c, 2u);
  unsigned m = ~0u;
  EXPECT_EQ(atomicInc(&m, ~0u), ~0u); // old == val wraps to 0
  EXPECT_EQ(m, 0u);
}

TEST(HostMathMemory, LoadsAndFences) {
  const float data[2] = {1.0f, 2.0f};
  EXPECT_EQ(__ldg(&data[1]), 2.0f);
  EXPECT_EQ(__ldg(&data[0]), 1.0f);
  float out = 0;
  __stcs(&out, 3.0f);
  __threadfence();
  __threadfence_block();
  __threadfence_system();
  EXPECT_EQ(__ldcs(&out), 3.0f);
  const float4 v = make_float4(1, 2, 3, 4);
  EXPECT_EQ(__ldg(&v).w, 4.0f);
}

} // namespace
