//===- TensorCoreTest.cpp - mma.sync, ldmatrix, cp.async on the host ------===//
//
// The host backend's tensor-core instructions (kiln_cuda_host_mma.h) against
// the PTX ISA's fragment figures, lane by lane. Each test writes the figure
// as its own table (spot-checked against entries copied from the figure),
// has each lane of a hand-written kernel load or read its fragment through
// that table, and checks what the instruction computed: a lane that placed
// an element elsewhere than the figure says gets a wrong answer, as on the
// GPU (the transposed-A case shows the check fails then).
//
//===----------------------------------------------------------------------===//

#include "TestArtifacts.h"
#include "kiln/runtime/Float8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// Runs the fragments' kernels on the host backend, which compiles them.
using TensorCores = PrivateCacheSuite;

struct Place {
  int row, col;
  bool operator==(const Place &o) const { return row == o.row && col == o.col; }
};

// The PTX ISA's "Matrix Fragments for mma.m16n8k16 with floating point
// type", .f16/.bf16 A (16x16, row), B (16x8, col), .f32 C and D (16x8):
// groupID = lane / 4, threadID_in_group = lane % 4.
Place aPlace(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  bool lowRow = i < 2 || (i >= 4 && i < 6);
  return {lowRow ? g : g + 8, t * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
Place bPlace(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  return {t * 2 + (i & 1) + (i >= 2 ? 8 : 0), g};
}
Place cPlace(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
}

/// Expects the places `place` gives `lane`'s entries to be `want`, entries
/// read off a PTX ISA figure; `what` names the fragment.
void expectPlaces(Place (*place)(int, int), int lane,
                  const std::vector<Place> &want, const char *what) {
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(place(lane, int(i)), want[i]) << what << i << " of lane " << lane;
}

TEST(TensorCoreTables, MatchTheFiguresEntries) {
  // Entries read off the figures: lane 0, 5 and 31 of A; 0 and 6 of B;
  // 0 and 31 of C.
  expectPlaces(aPlace, 0,
               {{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}},
               "a");
  expectPlaces(
      aPlace, 5,
      {{1, 2}, {1, 3}, {9, 2}, {9, 3}, {1, 10}, {1, 11}, {9, 10}, {9, 11}},
      "a");
  expectPlaces(
      aPlace, 31,
      {{7, 6}, {7, 7}, {15, 6}, {15, 7}, {7, 14}, {7, 15}, {15, 14}, {15, 15}},
      "a");
  expectPlaces(bPlace, 0, {{0, 0}, {1, 0}, {8, 0}, {9, 0}}, "b");
  expectPlaces(bPlace, 6, {{4, 1}, {5, 1}, {12, 1}, {13, 1}}, "b");
  expectPlaces(cPlace, 0, {{0, 0}, {0, 1}, {8, 0}, {8, 1}}, "c");
  expectPlaces(cPlace, 31, {{7, 6}, {7, 7}, {15, 6}, {15, 7}}, "c");
}

/// `name[32][count][2]` as a C array of the places `place` gives.
std::string placeTable(const char *name, int count, Place (*place)(int, int),
                       bool transpose = false) {
  std::string text = std::string("static const int ") + name + "[32][" +
                     std::to_string(count) + "][2] = {";
  for (int lane = 0; lane < 32; ++lane) {
    text += "{";
    for (int i = 0; i < count; ++i) {
      Place p = place(lane, i);
      if (transpose)
        std::swap(p.row, p.col);
      text += "{" + std::to_string(p.row) + "," + std::to_string(p.col) + "},";
    }
    text += "},";
  }
  return text + "};\n";
}

/// One warp: A (16x16), B (16x8) and C (16x8) row-major in x, each lane
/// loading its fragments by the tables, D row-major into y.
std::string mmaSource(bool bf16, bool transposeA) {
  std::string convert = bf16 ? "__bfloat16_as_ushort(__float2bfloat16_rn(v))"
                             : "__half_as_ushort(__float2half_rn(v))";
  return placeTable("kA", 8, aPlace, transposeA) + placeTable("kB", 4, bPlace) +
         placeTable("kC", 4, cPlace) +
         "static unsigned bits16(float v) { return " + convert + "; }\n" +
         R"cuda(
static unsigned pack(float lo, float hi) { return bits16(lo) | bits16(hi) << 16; }
extern "C" __global__ void mma(const float *x, float *y) {
  const float *A = x, *B = x + 256, *C = x + 384;
  int lane = threadIdx.x;
  unsigned a[4], b[2];
  float c[4], d[4];
  for (int r = 0; r < 4; ++r)
    a[r] = pack(A[kA[lane][2 * r][0] * 16 + kA[lane][2 * r][1]],
                A[kA[lane][2 * r + 1][0] * 16 + kA[lane][2 * r + 1][1]]);
  for (int r = 0; r < 2; ++r)
    b[r] = pack(B[kB[lane][2 * r][0] * 8 + kB[lane][2 * r][1]],
                B[kB[lane][2 * r + 1][0] * 8 + kB[lane][2 * r + 1][1]]);
  for (int i = 0; i < 4; ++i) c[i] = C[kC[lane][i][0] * 8 + kC[lane][i][1]];
  MMA(d, a, b, c);
  for (int i = 0; i < 4; ++i) y[kC[lane][i][0] * 8 + kC[lane][i][1]] = d[i];
  for (int k = 0; k < 12; ++k) y[128 + lane * 12 + k] = 0.0f;
}
)cuda";
}

/// The operands of an M x N x K product, row-major one after another in
/// `size` floats (the rest 0): A (M x K), B (K x N) and, `withC`, C (M x N).
/// Small integers and halves: exact in f16, bf16 and TF32, and every product
/// and sum exact in float; `aRowStep` sets the pattern of A's rows.
std::vector<float> mmaOperands(int M, int N, int K, int aRowStep, bool withC,
                               size_t size) {
  std::vector<float> x(size, 0.0f);
  float *A = x.data(), *B = A + M * K, *C = B + K * N;
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      A[m * K + k] = float((m * aRowStep + k * 3) % 7 - 3);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      B[k * N + n] = 0.5f * float((k * N + n * 5) % 5 - 2);
  for (int m = 0; withC && m < M; ++m)
    for (int n = 0; n < N; ++n)
      C[m * N + n] = float(m) - 0.25f * float(n);
  return x;
}

/// D = A B (+ C, `withC`) of the operands `mmaOperands` wrote to x,
/// row-major at the front of `size` floats that are `fill` elsewhere.
std::vector<float> mmaReference(const std::vector<float> &x, int M, int N,
                                int K, bool withC, size_t size, float fill) {
  std::vector<float> d(size, fill);
  const float *A = x.data(), *B = A + M * K, *C = B + K * N;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float sum = withC ? C[m * N + n] : 0.0f;
      for (int k = 0; k < K; ++k)
        sum += A[m * K + k] * B[k * N + n];
      d[m * N + n] = sum;
    }
  return d;
}

TEST_F(TensorCores, MmaFragmentsFollowThePtxFigures) {
  std::vector<float> x = mmaOperands(16, 8, 16, 16, true, 512),
                     want = mmaReference(x, 16, 8, 16, true, 512, 0.0f);
  for (bool bf16 : {false, true}) {
    std::string source =
        std::string("#define MMA ") +
        (bf16 ? "kiln_mma_m16n8k16_bf16" : "kiln_mma_m16n8k16_f16") + "\n" +
        mmaSource(bf16, false);
    EXPECT_EQ(
        runOnHost(kernelArtifact(source, "mma", 512, 1, 32), x, HostOptions()),
        want)
        << (bf16 ? "bf16" : "f16");
  }
  // Lanes holding A transposed (row and column swapped) compute another
  // product: the layout is checked, not just the arithmetic.
  std::string wrong =
      "#define MMA kiln_mma_m16n8k16_f16\n" + mmaSource(false, true);
  EXPECT_NE(
      runOnHost(kernelArtifact(wrong, "mma", 512, 1, 32), x, HostOptions()),
      want);
}

// The PTX ISA's "Matrix Fragments for mma.m16n8k8", .tf32 A (16x8, row:
// a0 and a2 in row groupID, a1 and a3 in row groupID + 8; a0 and a1 in
// column threadID_in_group, a2 and a3 four columns on) and B (8x8, col: b0
// in row threadID_in_group, b1 in row threadID_in_group + 4; column
// groupID); C and D as for m16n8k16.
Place aPlaceTf32(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  return {(i & 1) ? g + 8 : g, i >= 2 ? t + 4 : t};
}
Place bPlaceTf32(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  return {i ? t + 4 : t, g};
}

TEST(TensorCoreTables, Tf32MatchesTheFiguresEntries) {
  expectPlaces(aPlaceTf32, 0, {{0, 0}, {8, 0}, {0, 4}, {8, 4}}, "a");
  expectPlaces(aPlaceTf32, 7, {{1, 3}, {9, 3}, {1, 7}, {9, 7}}, "a");
  expectPlaces(aPlaceTf32, 30, {{7, 2}, {15, 2}, {7, 6}, {15, 6}}, "a");
  expectPlaces(bPlaceTf32, 0, {{0, 0}, {4, 0}}, "b");
  expectPlaces(bPlaceTf32, 13, {{1, 3}, {5, 3}}, "b");
}

/// One warp: A (16x8), B (8x8) and C (16x8) row-major in x, each lane
/// loading its .tf32 fragments by the tables, D row-major into y.
std::string mmaTf32Source(bool transposeA) {
  return placeTable("kA", 4, aPlaceTf32) + placeTable("kB", 2, bPlaceTf32) +
         placeTable("kC", 4, cPlace) +
         std::string(transposeA ? "#define TRANSPOSE_A 1\n"
                                : "#define TRANSPOSE_A 0\n") +
         R"cuda(
extern "C" __global__ void mma(const float *x, float *y) {
  const float *A = x, *B = x + 128, *C = x + 192;
  int lane = threadIdx.x;
  unsigned a[4], b[2];
  float c[4], d[4];
  for (int i = 0; i < 4; ++i) {
    int row = kA[lane][i][0], col = kA[lane][i][1];
    // Transposed: row and column swapped within the 8x8 top half.
    if (TRANSPOSE_A && row < 8) { int r = row; row = col; col = r; }
    a[i] = kiln_to_tf32(A[row * 8 + col]);
  }
  for (int i = 0; i < 2; ++i) b[i] = kiln_to_tf32(B[kB[lane][i][0] * 8 + kB[lane][i][1]]);
  for (int i = 0; i < 4; ++i) c[i] = C[kC[lane][i][0] * 8 + kC[lane][i][1]];
  kiln_mma_m16n8k8_tf32(d, a, b, c);
  for (int i = 0; i < 4; ++i) y[kC[lane][i][0] * 8 + kC[lane][i][1]] = d[i];
  for (int k = 0; k < 8; ++k) y[128 + lane * 8 + k] = 0.0f;
}
)cuda";
}

TEST_F(TensorCores, Tf32MmaFragmentsFollowThePtxFigures) {
  std::vector<float> x = mmaOperands(16, 8, 8, 8, true, 384),
                     want = mmaReference(x, 16, 8, 8, true, 384, 0.0f);
  EXPECT_EQ(runOnHost(kernelArtifact(mmaTf32Source(false), "mma", 384, 1, 32),
                      x, HostOptions()),
            want);
  EXPECT_NE(runOnHost(kernelArtifact(mmaTf32Source(true), "mma", 384, 1, 32), x,
                      HostOptions()),
            want);
}

TEST_F(TensorCores, Tf32RoundsToNearestTiesAwayFromZero) {
  // cvt.rna.tf32.f32 keeps 10 mantissa bits: 1 + 2^-11 is halfway between
  // 1 and 1 + 2^-10 and goes away from zero (for either sign); 1 + 2^-12
  // goes to 1; just past halfway goes up; infinity and 3 stay.
  const char *source = R"cuda(
extern "C" __global__ void round_tf32(const float *x, float *y) {
  int lane = threadIdx.x;
  unsigned bits = kiln_to_tf32(x[lane]);
  y[lane] = __uint_as_float(bits);
}
)cuda";
  std::vector<float> x(32, 0.0f);
  x[0] = 1.0f + 0x1p-11f;
  x[1] = -(1.0f + 0x1p-11f);
  x[2] = 1.0f + 0x1p-12f;
  x[3] = 1.0f + 0x1p-11f + 0x1p-20f;
  x[4] = INFINITY;
  x[5] = 3.0f;
  std::vector<float> y = runOnHost(
      kernelArtifact(source, "round_tf32", 32, 1, 32), x, HostOptions());
  EXPECT_EQ(y[0], 1.0f + 0x1p-10f);
  EXPECT_EQ(y[1], -(1.0f + 0x1p-10f));
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_EQ(y[3], 1.0f + 0x1p-10f);
  EXPECT_EQ(y[4], INFINITY);
  EXPECT_EQ(y[5], 3.0f);
}

TEST_F(TensorCores, Exp2FlushesSubnormalResultsToZero) {
  // ex2.approx.ftz.f32 (PTX ISA: subnormal results flush to sign-preserving
  // zero): 2^-126 is the least normal and stays, 2^-127 and 2^-149 would be
  // subnormal and become +0; -inf gives +0, NaN stays NaN; a subnormal
  // input is 0, whose power is 1; within 2 ulp elsewhere.
  const char *source = R"cuda(
extern "C" __global__ void exp2_ftz(const float *x, float *y) {
  y[threadIdx.x] = kiln_exp2_ftz(x[threadIdx.x]);
}
)cuda";
  std::vector<float> x(32, 0.0f);
  x[0] = -126.0f;
  x[1] = -127.0f;
  x[2] = -149.0f;
  x[3] = -INFINITY;
  x[4] = NAN;
  x[5] = 0x1p-140f;
  x[6] = 10.0f;
  x[7] = -0.5f;
  std::vector<float> y = runOnHost(
      kernelArtifact(source, "exp2_ftz", 32, 1, 32), x, HostOptions());
  EXPECT_EQ(y[0], 0x1p-126f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_FALSE(std::signbit(y[1]));
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 1.0f);
  EXPECT_EQ(y[6], 1024.0f);
  EXPECT_NEAR(y[7], 0.70710678f, 2 * 0x1p-24f);
}

// The PTX ISA's "Matrix Fragments for mma.m16n8k32", .s8 A (16x32, row:
// bytes a0..a3 and a8..a11 in row groupID, the others in row groupID + 8;
// columns threadID_in_group * 4 + (i & 3), plus 16 from a8) and B (32x8,
// col: rows threadID_in_group * 4 + (i & 3), plus 16 from b4; column
// groupID); C and D (.s32) as for m16n8k16.
Place aPlaceS8(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  return {(i & 4) ? g + 8 : g, t * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
}
Place bPlaceS8(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  return {t * 4 + (i & 3) + (i >= 4 ? 16 : 0), g};
}

TEST(TensorCoreTables, S8MatchesTheFiguresEntries) {
  expectPlaces(aPlaceS8, 0,
               {{0, 0},
                {0, 1},
                {0, 2},
                {0, 3},
                {8, 0},
                {8, 1},
                {8, 2},
                {8, 3},
                {0, 16},
                {0, 17},
                {0, 18},
                {0, 19},
                {8, 16},
                {8, 17},
                {8, 18},
                {8, 19}},
               "a");
  expectPlaces(aPlaceS8, 31,
               {{7, 12},
                {7, 13},
                {7, 14},
                {7, 15},
                {15, 12},
                {15, 13},
                {15, 14},
                {15, 15},
                {7, 28},
                {7, 29},
                {7, 30},
                {7, 31},
                {15, 28},
                {15, 29},
                {15, 30},
                {15, 31}},
               "a");
  expectPlaces(
      bPlaceS8, 6,
      {{8, 1}, {9, 1}, {10, 1}, {11, 1}, {24, 1}, {25, 1}, {26, 1}, {27, 1}},
      "b");
}

/// One warp: A (16x32), B (32x8) and C (16x8) row-major in x as floats,
/// A's and B's holding bytes (integers, or float8 codes 0..255), each lane
/// packing its fragments of 8-bit elements by the tables (the
/// lowest-numbered byte lowest), then `mma` of `accumulator` C and D; D
/// row-major into y.
std::string mmaBytesSource(bool transposeA, const std::string &mma,
                           const std::string &accumulator) {
  return placeTable("kA", 16, aPlaceS8) + placeTable("kB", 8, bPlaceS8) +
         placeTable("kC", 4, cPlace) +
         std::string(transposeA ? "#define TRANSPOSE_A 1\n"
                                : "#define TRANSPOSE_A 0\n") +
         "#define MMA " + mma + "\ntypedef " + accumulator + " acc_t;\n" +
         R"cuda(
extern "C" __global__ void mma(const float *x, float *y) {
  const float *A = x, *B = x + 512, *C = x + 768;
  int lane = threadIdx.x;
  unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  acc_t c[4], d[4];
  for (int i = 0; i < 16; ++i) {
    int row = kA[lane][i][0], col = kA[lane][i][1];
    // Transposed: row and column swapped within the 16x16 left half.
    if (TRANSPOSE_A && col < 16) { int r = row; row = col; col = r; }
    a[i / 4] |= (unsigned)(unsigned char)(signed char)(int)A[row * 32 + col] << (8 * (i % 4));
  }
  for (int i = 0; i < 8; ++i)
    b[i / 4] |= (unsigned)(unsigned char)(signed char)(int)B[kB[lane][i][0] * 8 + kB[lane][i][1]]
                << (8 * (i % 4));
  for (int i = 0; i < 4; ++i) c[i] = (acc_t)C[kC[lane][i][0] * 8 + kC[lane][i][1]];
  MMA(d, a, b, c);
  for (int i = 0; i < 4; ++i) y[kC[lane][i][0] * 8 + kC[lane][i][1]] = (float)d[i];
  for (int k = 0; k < 28; ++k) y[128 + lane * 28 + k] = 0.0f;
}
)cuda";
}

/// That `mma` over x (mmaBytesSource's layout) gives `want` on the host
/// when the lanes pack their fragments by the tables, and something else
/// when A's are transposed: the test checks the layout, not only the
/// arithmetic.
void expectBytesMma(const std::string &mma, const std::string &accumulator,
                    const std::vector<float> &x,
                    const std::vector<float> &want) {
  for (bool transposeA : {false, true}) {
    std::vector<float> got =
        runOnHost(kernelArtifact(mmaBytesSource(transposeA, mma, accumulator),
                                 "mma", 1024, 1, 32),
                  x, HostOptions());
    if (transposeA)
      EXPECT_NE(got, want) << mma << " with A transposed";
    else
      EXPECT_EQ(got, want) << mma;
  }
}

TEST_F(TensorCores, S8MmaFragmentsFollowThePtxFigures) {
  // Integers over the whole signed range, so that a byte read unsigned, or
  // its sign lost, changes the sum; every sum is exact in float.
  std::vector<float> x(1024, 0.0f);
  float *A = x.data(), *B = A + 512, *C = B + 256;
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < 32; ++k)
      A[m * 32 + k] = float((m * 37 + k * 11) % 256 - 128);
  for (int k = 0; k < 32; ++k)
    for (int n = 0; n < 8; ++n)
      B[k * 8 + n] = float((k * 13 + n * 29) % 256 - 128);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n)
      C[m * 8 + n] = float(m * 1000 - n * 77);
  std::vector<float> want(1024, 0.0f);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      int sum = int(C[m * 8 + n]);
      for (int k = 0; k < 32; ++k)
        sum += int(A[m * 32 + k]) * int(B[k * 8 + n]);
      want[m * 8 + n] = float(sum);
    }
  expectBytesMma("kiln_mma_m16n8k32_s8", "int", x, want);
}

/// A float8 E4M3FN code's value (kiln/runtime/Float8.h's decoding).
double e4m3Value(int code) {
  return double(kiln::rt::floatOfFloat8Bits(uint8_t(code), /*e5m2=*/false));
}

TEST_F(TensorCores, E4M3MmaFragmentsFollowThePtxFigures) {
  // float8 codes over both signs, subnormals (exponent field 0) and the
  // largest value (0x7e, 448), NaN (0x7f, 0xff) left out. sm_90 computes
  // the tile as two f16 products chained in f32 (TensorCores.cpp), the
  // first over the k with k % 4 < 2: each sum of exact products (exact in
  // double) rounded once to float, as the reference below does.
  std::vector<float> x(1024, 0.0f);
  float *A = x.data(), *B = A + 512, *C = B + 256;
  auto code = [](int v) { return (v & 0x7f) == 0x7f ? v - 1 : v; };
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < 32; ++k)
      A[m * 32 + k] = float(code((m * 37 + k * 11) % 256));
  for (int k = 0; k < 32; ++k)
    for (int n = 0; n < 8; ++n)
      B[k * 8 + n] = float(code((k * 13 + n * 29 + 5) % 256));
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n)
      C[m * 8 + n] = float(m * 1000 - n * 77) + 0.25f;
  std::vector<float> want(1024, 0.0f);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      float d = C[m * 8 + n];
      for (int half = 0; half < 2; ++half) {
        double sum = d;
        for (int k = 0; k < 32; ++k)
          if ((k % 4 >= 2) == (half == 1))
            sum += e4m3Value(int(A[m * 32 + k])) * e4m3Value(int(B[k * 8 + n]));
        d = float(sum);
      }
      want[m * 8 + n] = d;
    }
  expectBytesMma("kiln_mma_m16n8k32_e4m3", "float", x, want);
}

// ldmatrix (PTX ISA, "Warp-level matrix load instruction: ldmatrix"): for
// .b16 8x8 matrices, lane 8j + r gives the address of row r of matrix j;
// register j of a lane holds row groupID, columns threadID_in_group * 2 and
// + 1 of matrix j, or with .trans column groupID of rows
// threadID_in_group * 2 and + 1.
Place ldmatrixPlace(int lane, int half, bool trans) {
  int g = lane / 4, t = lane % 4;
  return trans ? Place{2 * t + half, g} : Place{g, 2 * t + half};
}

TEST(TensorCoreTables, LdmatrixMatchesTheFiguresEntries) {
  EXPECT_EQ(ldmatrixPlace(0, 0, false), (Place{0, 0}));
  EXPECT_EQ(ldmatrixPlace(0, 1, false), (Place{0, 1}));
  EXPECT_EQ(ldmatrixPlace(5, 0, false), (Place{1, 2}));
  EXPECT_EQ(ldmatrixPlace(31, 1, false), (Place{7, 7}));
  EXPECT_EQ(ldmatrixPlace(5, 0, true), (Place{2, 1}));
  EXPECT_EQ(ldmatrixPlace(5, 1, true), (Place{3, 1}));
  EXPECT_EQ(ldmatrixPlace(31, 1, true), (Place{7, 7}));
}

TEST_F(TensorCores, LdmatrixGivesEachLaneItsFigureElements) {
  // Four 8x8 matrices in shared memory, element (j, row, col) holding
  // j * 64 + row * 8 + col; each lane writes the halves of its registers
  // (j, half) to y[lane * 8 + j * 2 + half].
  const char *source = R"cuda(
extern "C" __global__ void load(const float *x, float *y) {
  __shared__ unsigned short tile[4][8][8];
  int lane = threadIdx.x;
  for (int e = lane * 8; e < lane * 8 + 8; ++e) (&tile[0][0][0])[e] = (unsigned short)e;
  __syncthreads();
  unsigned r[COUNT];
  LOAD(r, &tile[(lane / 8) % COUNT][lane % 8][0]);
  for (int j = 0; j < 4; ++j) {
    y[lane * 8 + j * 2] = j < COUNT ? (float)(r[j] & 0xffffu) : 0.0f;
    y[lane * 8 + j * 2 + 1] = j < COUNT ? (float)(r[j] >> 16) : 0.0f;
  }
  for (int k = 0; k < 8; ++k) y[256 + lane * 8 + k] = 0.0f;
}
)cuda";
  for (int count : {1, 2, 4})
    for (bool trans : {false, true}) {
      std::string load =
          "kiln_ldmatrix_x" + std::to_string(count) + (trans ? "_trans" : "");
      std::string text = "#define COUNT " + std::to_string(count) +
                         "\n#define LOAD " + load + "\n" + source;
      std::vector<float> want(512, 0.0f);
      for (int lane = 0; lane < 32; ++lane)
        for (int j = 0; j < count; ++j)
          for (int half = 0; half < 2; ++half) {
            Place p = ldmatrixPlace(lane, half, trans);
            want[lane * 8 + j * 2 + half] = float(j * 64 + p.row * 8 + p.col);
          }
      EXPECT_EQ(runOnHost(kernelArtifact(text, "load", 512, 1, 32),
                          std::vector<float>(512, 0.0f), HostOptions()),
                want)
          << load;
    }
}

// The PTX ISA's wgmma figures for .m64nNk16 with f16 A in registers and
// f32 D ("Register fragment layout", "Shared Memory Matrix Layout"): warp
// w of the warpgroup holds rows 16w + (A as mma.m16n8k16's); lane's D
// element i sits at row groupID + 8 * ((i / 2) % 2), column 8 * (i / 4) +
// 2 * threadID_in_group + i % 2. B (16xN) in no-swizzle core matrices of
// 8 rows x 16 bytes: K-major rows are columns of B (8 k each), MN-major
// rows are rows of B (8 n each); LBO steps along K, SBO along N.
Place dPlaceWgmma(int lane, int i) {
  int g = lane / 4, t = lane % 4;
  return {g + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * t + i % 2};
}
int bOffsetWgmma(bool mnMajor, int k, int n, int lbo, int sbo) {
  return (n / 8) * sbo + (k / 8) * lbo +
         (mnMajor ? (k % 8) * 16 + (n % 8) * 2 : (n % 8) * 16 + (k % 8) * 2);
}

TEST(TensorCoreTables, WgmmaMatchesTheFiguresEntries) {
  // Lane 0's and lane 29's first eight accumulators of m64n16.
  expectPlaces(dPlaceWgmma, 0,
               {{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}},
               "d");
  expectPlaces(
      dPlaceWgmma, 29,
      {{7, 2}, {7, 3}, {15, 2}, {15, 3}, {7, 10}, {7, 11}, {15, 10}, {15, 11}},
      "d");
}

/// A warpgroup: A (64x16) from x, B (16x16) from x + 1024 laid in shared
/// memory by the table (K-major or MN-major, core matrices LBO and SBO
/// bytes apart), D = A * B into y row-major. Before the wait, y's second
/// half gets what the accumulators held then; y[2048..2051] the
/// descriptor's fields (LBO >> 4 from bit 16, SBO >> 4 from bit 32, the
/// swizzle and base offset bits, and bits 14-15 and 30-31, which are 0).
std::string wgmmaSource(bool mnMajor, int lbo, int sbo, int descLbo,
                        int descSbo) {
  std::string offsets = "static const int kOffset[16][16] = {";
  for (int k = 0; k < 16; ++k) {
    offsets += "{";
    for (int n = 0; n < 16; ++n)
      offsets += std::to_string(bOffsetWgmma(mnMajor, k, n, lbo, sbo)) + ",";
    offsets += "},";
  }
  offsets += "};\n";
  std::string dTable = "static const int kD[32][8][2] = {";
  for (int lane = 0; lane < 32; ++lane) {
    dTable += "{";
    for (int i = 0; i < 8; ++i) {
      Place p = dPlaceWgmma(lane, i);
      dTable +=
          "{" + std::to_string(p.row) + "," + std::to_string(p.col) + "},";
    }
    dTable += "},";
  }
  dTable += "};\n";
  return placeTable("kA", 8, aPlace) + offsets + dTable + "#define TRANS_B " +
         (mnMajor ? "true" : "false") + "\n" + "#define DESC_LBO " +
         std::to_string(descLbo) + "\n" + "#define DESC_SBO " +
         std::to_string(descSbo) + "\n" + R"cuda(
static unsigned bits16(float v) { return __half_as_ushort(__float2half_rn(v)); }
static unsigned pack(float lo, float hi) { return bits16(lo) | bits16(hi) << 16; }
extern "C" __global__ void wg(const float *x, float *y) {
  __shared__ __align__(16) unsigned short b_tile[1024];
  const float *A = x, *B = x + 1024;
  int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  for (int e = tid; e < 256; e += 128)
    b_tile[kOffset[e / 16][e % 16] / 2] = bits16(B[e]);
  __syncthreads();
  unsigned a[4];
  for (int r = 0; r < 4; ++r)
    a[r] = pack(A[(warp * 16 + kA[lane][2 * r][0]) * 16 + kA[lane][2 * r][1]],
                A[(warp * 16 + kA[lane][2 * r + 1][0]) * 16 + kA[lane][2 * r + 1][1]]);
  float d[2][4];
  for (int i = 0; i < 8; ++i) d[i / 4][i % 4] = -7.0f;
  kiln_wgmma_fence();
  kiln_host_wgmma::issue<16, TRANS_B, false>(&d[0][0], a, kiln_wgmma_desc(b_tile, DESC_LBO, DESC_SBO), 0);
  kiln_wgmma_commit();
  for (int i = 0; i < 8; ++i)
    y[1024 + (warp * 16 + kD[lane][i][0]) * 16 + kD[lane][i][1]] = d[i / 4][i % 4];
  kiln_wgmma_wait<0>();
  for (int i = 0; i < 8; ++i)
    y[(warp * 16 + kD[lane][i][0]) * 16 + kD[lane][i][1]] = d[i / 4][i % 4];
  const unsigned long long bits = kiln_wgmma_desc(b_tile, DESC_LBO, DESC_SBO).bits;
  if (tid == 0) {
    y[2048] = float(bits >> 16 & 0x3fff);
    y[2049] = float(bits >> 32 & 0x3fff);
    y[2050] = float(bits >> 49 & 7) + float(bits >> 62);
    y[2051] = float(bits >> 14 & 3) + float(bits >> 30 & 3);
  }
}
)cuda";
}

TEST_F(TensorCores, WgmmaFollowsThePtxLayouts) {
  std::vector<float> x = mmaOperands(64, 16, 16, 5, false, 2052),
                     want = mmaReference(x, 64, 16, 16, false, 2052, -7.0f);
  // Core matrices apart along K (LBO) and N (SBO) by distinct strides, so
  // that a layout reading one for the other fails; the accumulators hold
  // their old values until the wait (-7 in y's second half).
  for (bool mnMajor : {false, true}) {
    int lbo = mnMajor ? 512 : 128, sbo = mnMajor ? 128 : 512;
    want[2048] = float(lbo >> 4);
    want[2049] = float(sbo >> 4);
    want[2050] = want[2051] = 0.0f;
    EXPECT_EQ(runOnHost(kernelArtifact(wgmmaSource(mnMajor, lbo, sbo, lbo, sbo),
                                       "wg", 2052, 1, 128),
                        x, HostOptions()),
              want)
        << (mnMajor ? "MN-major" : "K-major");
    // negative_: the descriptor's LBO and SBO swapped reads another B.
    EXPECT_NE(runOnHost(kernelArtifact(wgmmaSource(mnMajor, lbo, sbo, sbo, lbo),
                                       "wg", 2052, 1, 128),
                        x, HostOptions()),
              want)
        << (mnMajor ? "MN-major" : "K-major");
  }
}

TEST_F(TensorCores, CpAsyncLandsByGroupAtItsWait) {
  // Two groups of 16-byte copies per lane (the second zero-filling the last
  // lane's upper 8 bytes); after wait_group 1 the first group has landed and
  // the second not yet (on the GPU, reading it then is a race; here it reads
  // what was there); after wait_group 0 both have.
  const char *source = R"cuda(
extern "C" __global__ void copy(const float *x, float *y) {
  __shared__ float stage[2][128];
  int lane = threadIdx.x;
  for (int i = 0; i < 4; ++i) stage[0][lane * 4 + i] = stage[1][lane * 4 + i] = -1.0f;
  __syncthreads();
  kiln_cp_async_16(&stage[0][lane * 4], x + lane * 4, 16);
  kiln_cp_async_commit();
  kiln_cp_async_16(&stage[1][lane * 4], x + 128 + lane * 4, lane == 31 ? 8 : 16);
  kiln_cp_async_commit();
  kiln_cp_async_wait<1>();
  __syncthreads();
  for (int i = 0; i < 4; ++i) {
    y[lane * 4 + i] = stage[0][(lane * 4 + i + 4) % 128];
    y[128 + lane * 4 + i] = stage[1][(lane * 4 + i + 4) % 128];
  }
  __syncthreads();
  kiln_cp_async_wait<0>();
  __syncthreads();
  for (int i = 0; i < 4; ++i) {
    y[256 + lane * 4 + i] = stage[1][(lane * 4 + i + 4) % 128];
    y[384 + lane * 4 + i] = 0.0f;
  }
}
)cuda";
  std::vector<float> x(512);
  for (int i = 0; i < 512; ++i)
    x[i] = float(i) + 0.5f;
  std::vector<float> want(512, 0.0f);
  for (int i = 0; i < 128; ++i) {
    // Each lane reads its neighbour's part: the barrier orders the groups
    // of every lane, not only its own.
    int from = (i + 4) % 128;
    want[i] = x[from];
    want[128 + i] = -1.0f;
    want[256 + i] = from >= 126 ? 0.0f : x[128 + from];
  }
  EXPECT_EQ(
      runOnHost(kernelArtifact(source, "copy", 512, 1, 32), x, HostOptions()),
      want);
}

TEST_F(TensorCores, CpAsyncFromAnUnalignedAddressStopsWithAMessage) {
  // negative_: the PTX ISA asks both addresses of a 16-byte cp.async to be
  // aligned to 16; on the GPU an unaligned source faults. The emulation
  // stops the process, so that a kernel that copies from an address only
  // aligned to its elements (a caller's A) fails on the host too.
  const char *source = R"cuda(
extern "C" __global__ void copy(const float *x, float *y) {
  __shared__ __align__(16) float stage[4];
  kiln_cp_async_16(stage, x + 1, 16);
  kiln_cp_async_commit();
  kiln_cp_async_wait<0>();
  for (int i = 0; i < 4; ++i) y[i] = stage[i];
}
)cuda";
  std::vector<float> x(8, 1.0f);
  EXPECT_DEATH(
      runOnHost(kernelArtifact(source, "copy", 8, 1, 1), x, HostOptions()),
      "cp.async of 16 bytes at an address not aligned to 16");
}

} // namespace
