//===- TmaTest.cpp - tensor copies, mbarriers, swizzled wgmma on the host -===//
//
// The host backend's Hopper copies (kiln_cuda_host_tma.h) and swizzled
// wgmma operands (kiln_cuda_host_wgmma.h) against the PTX ISA's description
// of them. Each expectation is written here from the ISA's words, not from
// the emulation's code:
// - "Tensor Copy": a tiled load writes its box densely to shared memory,
//   innermost dim fastest, with zeros for elements outside the tensor, and
//   completes the whole box's bytes on its mbarrier;
// - "Tensor Access Modes", swizzling: with a swizzle of S bytes, the
//   16-byte chunk c of each 128-byte line l of the destination lands at
//   chunk c ^ (l % (S / 16)) of that line;
// - "mbarrier": a phase completes when its expected arrivals are in and its
//   transaction bytes are done, and try_wait.parity(p) passes once the
//   phase of parity p has completed;
// - "Shared Memory Matrix Layout": a K-major operand of 128-byte rows
//   swizzled that way, and an MN-major one of 64-column rows, are read with
//   the descriptor fields CUTLASS's make_gmma_desc writes for them; 8-bit
//   operands (float8 E4M3FN, whose values the OCP FP8 specification
//   defines) are K-major, an instruction's k32 the same 32 bytes.
// The kernels build their tensor maps themselves (host C++); how a run
// passes one to a kernel is tested with the GEMM family that takes them.
//
//===----------------------------------------------------------------------===//

#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

using TensorCopies = PrivateCacheSuite;

/// Host C++ shared by the kernels: a 2-d tensor map over `global`.
const char *kMapHelper = R"cuda(
static kiln_tensor_map map2d(const void *global, unsigned elementBytes,
                             unsigned long long d0, unsigned long long d1,
                             unsigned long long rowBytes, unsigned b0, unsigned b1,
                             unsigned swizzle) {
  kiln_tensor_map m;
  memset(&m, 0, sizeof m);
  m.global = (const unsigned char *)global;
  m.rank = 2;
  m.elementBytes = elementBytes;
  m.dims[0] = d0;
  m.dims[1] = d1;
  m.strides[0] = elementBytes;
  m.strides[1] = rowBytes;
  m.box[0] = b0;
  m.box[1] = b1;
  m.swizzleBytes = swizzle;
  return m;
}
)cuda";

/// The float index in shared memory where the element at byte `offset` of
/// a dense box lands under a swizzle of `span` bytes (the ISA's words).
int swizzledIndex(int offset, int span) {
  int line = offset / 128, chunk = offset / 16 % 8, within = offset % 16;
  if (span)
    chunk ^= line % (span / 16);
  return (line * 128 + chunk * 16 + within) / 4;
}

TEST(TensorCopyTables, SwizzleMatchesTheFiguresEntries) {
  // The 128-byte swizzle's figure: row 1's first chunk in chunk 1, row 7's
  // chunk 2 in chunk 5, row 8 (a new 1024-byte pattern) unmoved; the
  // 64-byte swizzle XORs the chunks of line 1 (its rows 2 and 3 of 64
  // bytes) with 1, those of line 3 with 3.
  EXPECT_EQ(swizzledIndex(128 + 0, 128), (128 + 16) / 4);
  EXPECT_EQ(swizzledIndex(7 * 128 + 32, 128), (7 * 128 + 80) / 4);
  EXPECT_EQ(swizzledIndex(8 * 128 + 48, 128), (8 * 128 + 48) / 4);
  EXPECT_EQ(swizzledIndex(128 + 16, 64), (128 + 0) / 4);
  EXPECT_EQ(swizzledIndex(3 * 128 + 4, 64), (3 * 128 + 48 + 4) / 4);
  EXPECT_EQ(swizzledIndex(5 * 128 + 20, 0), (5 * 128 + 20) / 4);
}

/// One box of a 40 x 20 fp32 tensor (rows of 160 bytes) at (c0, c1), 16
/// rows of `span` bytes (128 without a swizzle). y's first part is the
/// tile after the copy was issued and before its wait (untouched, -1), its
/// second part the tile after the wait, then zeros to 1024 floats (x and y
/// are as long, and x holds the tensor).
std::string boxSource(int span, int c0, int c1) {
  return std::string(kMapHelper) + "#define SPAN " + std::to_string(span) +
         "\n#define C0 " + std::to_string(c0) + "\n#define C1 " +
         std::to_string(c1) + "\n" + R"cuda(
#define INNER ((SPAN ? SPAN : 128) / 4)
extern "C" __global__ void box(const float *x, float *y) {
  __shared__ __align__(1024) float tile[INNER * 16];
  __shared__ __align__(8) unsigned long long bar;
  const int tid = threadIdx.x;
  for (int i = tid; i < INNER * 16; i += 32) tile[i] = -1.0f;
  if (tid == 0) {
    kiln_mbarrier_init(&bar, 1);
    kiln_fence_mbarrier_init();
  }
  __syncthreads();
  const kiln_tensor_map map = map2d(x, 4, 40, 20, 160, INNER, 16, SPAN);
  if (tid == 0) {
    kiln_mbarrier_arrive_expect_tx(&bar, INNER * 16 * 4);
    kiln_tma_load_2d(tile, map, C0, C1, &bar);
  }
  __syncthreads();
  for (int i = tid; i < INNER * 16; i += 32) y[i] = tile[i];
  __syncthreads();
  kiln_mbarrier_wait(&bar, 0);
  for (int i = tid; i < INNER * 16; i += 32) y[INNER * 16 + i] = tile[i];
  for (int i = 2 * INNER * 16 + tid; i < 1024; i += 32) y[i] = 0.0f;
}
)cuda";
}

TEST_F(TensorCopies, BoxesLandSwizzledWithZerosOutside) {
  std::vector<float> x(1024, 0.0f);
  for (size_t i = 0; i < 40 * 20; ++i)
    x[i] = float(i) + 1.0f;
  // A box inside, one past both ends, one before both starts.
  const int corners[3][2] = {{4, 2}, {16, 10}, {-3, -5}};
  for (int span : {0, 32, 64, 128})
    for (const auto &corner : corners) {
      int inner = (span ? span : 128) / 4, n = inner * 16;
      std::vector<float> want(1024, 0.0f);
      std::fill(want.begin(), want.begin() + 2 * n, -1.0f);
      for (int i1 = 0; i1 < 16; ++i1)
        for (int i0 = 0; i0 < inner; ++i0) {
          int g0 = corner[0] + i0, g1 = corner[1] + i1;
          bool inside = g0 >= 0 && g0 < 40 && g1 >= 0 && g1 < 20;
          want[n + swizzledIndex((i1 * inner + i0) * 4, span)] =
              inside ? x[g1 * 40 + g0] : 0.0f;
        }
      EXPECT_EQ(runOnHost(kernelArtifact(boxSource(span, corner[0], corner[1]),
                                         "box", 1024, 1, 32),
                          x, HostOptions()),
                want)
          << "swizzle " << span << ", box at (" << corner[0] << ", "
          << corner[1] << ")";
    }
}

TEST_F(TensorCopies, MbarrierPhasesWaitForArrivalsAndBytes) {
  // Phase 0 expects two arrivals: thread 0's with two boxes' bytes (two
  // copies), and thread 32's. Phase 1 refills the first box. A wait on
  // parity 1 during phase 0 passes at once (the phase before it is
  // complete); every thread of both warps waits, in the launcher's random
  // order, some before the copies are issued.
  std::string source = std::string(kMapHelper) + R"cuda(
extern "C" __global__ void phases(const float *x, float *y) {
  __shared__ __align__(128) float tile[2][32 * 4];
  __shared__ __align__(8) unsigned long long bar;
  const int tid = threadIdx.x;
  if (tid == 0) {
    kiln_mbarrier_init(&bar, 2);
    kiln_fence_mbarrier_init();
  }
  __syncthreads();
  kiln_mbarrier_wait(&bar, 1);
  // Without this barrier a thread could reach the wait above after phase 0
  // completed, and wait for phase 1, which needs it: a hang on the GPU too.
  __syncthreads();
  const kiln_tensor_map map = map2d(x, 4, 32, 12, 128, 32, 4, 0);
  if (tid == 0) {
    kiln_mbarrier_arrive_expect_tx(&bar, 2 * 512);
    kiln_tma_load_2d(tile[0], map, 0, 0, &bar);
    kiln_tma_load_2d(tile[1], map, 0, 4, &bar);
  }
  if (tid == 32) kiln_mbarrier_arrive(&bar);
  kiln_mbarrier_wait(&bar, 0);
  for (int i = tid; i < 256; i += 64) y[i] = tile[i / 128][i % 128];
  __syncthreads();
  if (tid == 32) {
    kiln_mbarrier_arrive_expect_tx(&bar, 512);
    kiln_tma_load_2d(tile[0], map, 0, 8, &bar);
  }
  if (tid == 0) kiln_mbarrier_arrive(&bar);
  kiln_mbarrier_wait(&bar, 1);
  for (int i = tid; i < 128; i += 64) y[256 + i] = tile[0][i];
}
)cuda";
  std::vector<float> x(32 * 12);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i) * 0.5f;
  std::vector<float> want(384);
  for (int i = 0; i < 256; ++i)
    want[i] = x[i];
  for (int i = 0; i < 128; ++i)
    want[256 + i] = x[256 + i];
  // Several launches: each shuffles the threads' order anew.
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(runOnHost(kernelArtifact(source, "phases", 384, 1, 64), x,
                        HostOptions()),
              want);
}

TEST_F(TensorCopies, AWaitNobodyCompletesStopsWithAMessage) {
  // negative_: phase 0 expects two arrivals and gets one. On the GPU the
  // block hangs; the emulation's spin sees no mbarrier change and stops
  // the process, naming the wait.
  const char *source = R"cuda(
extern "C" __global__ void hang(const float *x, float *y) {
  __shared__ __align__(8) unsigned long long bar;
  if (threadIdx.x == 0) kiln_mbarrier_init(&bar, 2);
  __syncthreads();
  if (threadIdx.x == 0) kiln_mbarrier_arrive(&bar);
  kiln_mbarrier_wait(&bar, 0);
  y[threadIdx.x] = x[threadIdx.x];
}
)cuda";
  std::vector<float> x(32, 1.0f);
  EXPECT_DEATH(
      runOnHost(kernelArtifact(source, "hang", 32, 1, 32), x, HostOptions()),
      "an mbarrier wait can never complete");
}

/// A (64 x 64, K-major) and B (64 x 64) in fp16 through 128-byte swizzled
/// tensor copies; D = A * B by four k16 steps of wgmma with A from shared
/// memory, B K-major (stored n x k) into y[0, 4096) and MN-major (stored
/// k x n) into y[4096, 8192). `aSwizzle` is the swizzle A's descriptor
/// claims.
std::string swizzledWgmmaSource(int aSwizzle) {
  return std::string(kMapHelper) + "#define A_SWIZZLE " +
         std::to_string(aSwizzle) + "\n" + R"cuda(
static unsigned short ga[64 * 64], gbk[64 * 64], gbm[64 * 64];
static unsigned bits16(float v) { return __half_as_ushort(__float2half_rn(v)); }
extern "C" __global__ void product(const float *x, float *y) {
  __shared__ __align__(1024) unsigned short tile_a[64 * 64], tile_bk[64 * 64], tile_bm[64 * 64];
  __shared__ __align__(8) unsigned long long bar;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // x holds A row-major, then B row-major (k x n).
  for (int i = tid; i < 4096; i += 128) {
    ga[i] = bits16(x[i]);
    gbm[i] = bits16(x[4096 + i]);
    gbk[(i % 64) * 64 + i / 64] = bits16(x[4096 + i]);
  }
  if (tid == 0) {
    kiln_mbarrier_init(&bar, 1);
    kiln_fence_mbarrier_init();
  }
  __syncthreads();
  const kiln_tensor_map a = map2d(ga, 2, 64, 64, 128, 64, 64, 128),
                        bk = map2d(gbk, 2, 64, 64, 128, 64, 64, 128),
                        bm = map2d(gbm, 2, 64, 64, 128, 64, 64, 128);
  if (tid == 0) {
    kiln_mbarrier_arrive_expect_tx(&bar, 3 * 8192);
    kiln_tma_load_2d(tile_a, a, 0, 0, &bar);
    kiln_tma_load_2d(tile_bk, bk, 0, 0, &bar);
    kiln_tma_load_2d(tile_bm, bm, 0, 0, &bar);
  }
  kiln_mbarrier_wait(&bar, 0);
  float d[8][4], e[8][4];
  kiln_wgmma_fence();
  for (int ks = 0; ks < 4; ++ks) {
    // K-major: the k-th 16 columns start 32 bytes further; 8 rows of 128
    // bytes a pattern (SBO). MN-major: 16 rows of 128 bytes further; 8 k
    // rows a pattern (SBO); LBO (the next 64 columns) unused at n = 64.
    kiln_smem_desc da = A_SWIZZLE ? kiln_wgmma_desc_swizzled(tile_a + 16 * ks, 16, 1024, A_SWIZZLE)
                                  : kiln_wgmma_desc(tile_a + 16 * ks, 16, 1024);
    kiln_host_wgmma::issueShared<64, false, false>(
        &d[0][0], da, kiln_wgmma_desc_swizzled(tile_bk + 16 * ks, 16, 1024, 128), ks);
    kiln_host_wgmma::issueShared<64, true, false>(
        &e[0][0], da, kiln_wgmma_desc_swizzled(tile_bm + 16 * 64 * ks, 8192, 1024, 128), ks);
  }
  kiln_wgmma_commit();
  kiln_wgmma_wait<0>();
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 32; ++i) {
    const int row = 16 * warp + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
    y[row * 64 + col] = d[i / 4][i % 4];
    y[4096 + row * 64 + col] = e[i / 4][i % 4];
  }
}
)cuda";
}

TEST_F(TensorCopies, WgmmaReadsSwizzledTilesAsTheCopiesWroteThem) {
  // Values of a few bits, so every product and sum is exact in float.
  std::vector<float> x(8192);
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < 64; ++k)
      x[m * 64 + k] = float((m * 7 + k * 3) % 11 - 5) / 4.0f;
  for (int k = 0; k < 64; ++k)
    for (int n = 0; n < 64; ++n)
      x[4096 + k * 64 + n] = float((k * 5 + n * 2) % 9 - 4) / 2.0f;
  std::vector<float> want(8192);
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n) {
      double sum = 0;
      for (int k = 0; k < 64; ++k)
        sum += double(x[m * 64 + k]) * x[4096 + k * 64 + n];
      want[m * 64 + n] = want[4096 + m * 64 + n] = float(sum);
    }
  EXPECT_EQ(runOnHost(kernelArtifact(swizzledWgmmaSource(128), "product", 8192,
                                     1, 128),
                      x, HostOptions()),
            want);
  // negative_: A's descriptor without its swizzle reads other elements.
  EXPECT_NE(
      runOnHost(kernelArtifact(swizzledWgmmaSource(0), "product", 8192, 1, 128),
                x, HostOptions()),
      want);
}

/// A (64 x 128 bytes) and B (64 columns of 128 bytes, stored n x k), both
/// float8 E4M3FN and K-major, through 128-byte swizzled tensor copies of
/// one-byte elements; D = A * B by four k32 steps of the .e4m3 wgmma, each
/// descriptor 32 bytes further. x holds the bytes as floats: A's, then B's.
/// `bSwizzle` is the swizzle B's descriptor claims.
std::string float8WgmmaSource(int bSwizzle) {
  return std::string(kMapHelper) + "#define B_SWIZZLE " +
         std::to_string(bSwizzle) + "\n" + R"cuda(
static unsigned char ga[64 * 128], gb[64 * 128];
extern "C" __global__ void product(const float *x, float *y) {
  __shared__ __align__(1024) unsigned char tile_a[64 * 128], tile_b[64 * 128];
  __shared__ __align__(8) unsigned long long bar;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  for (int i = tid; i < 64 * 128; i += 128) {
    ga[i] = (unsigned char)x[i];
    gb[i] = (unsigned char)x[64 * 128 + i];
  }
  if (tid == 0) {
    kiln_mbarrier_init(&bar, 1);
    kiln_fence_mbarrier_init();
  }
  __syncthreads();
  const kiln_tensor_map a = map2d(ga, 1, 128, 64, 128, 128, 64, 128),
                        b = map2d(gb, 1, 128, 64, 128, 128, 64, 128);
  if (tid == 0) {
    kiln_mbarrier_arrive_expect_tx(&bar, 2 * 8192);
    kiln_tma_load_2d(tile_a, a, 0, 0, &bar);
    kiln_tma_load_2d(tile_b, b, 0, 0, &bar);
  }
  kiln_mbarrier_wait(&bar, 0);
  float d[8][4];
  kiln_wgmma_fence();
  for (int ks = 0; ks < 4; ++ks) {
    // The k-th 32 bytes start 32 bytes further; 8 rows of 128 bytes a
    // pattern (SBO).
    kiln_smem_desc db = B_SWIZZLE ? kiln_wgmma_desc_swizzled(tile_b + 32 * ks, 16, 1024, B_SWIZZLE)
                                  : kiln_wgmma_desc(tile_b + 32 * ks, 16, 1024);
    kiln_host_wgmma::issueSharedE4M3<64>(
        &d[0][0], kiln_wgmma_desc_swizzled(tile_a + 32 * ks, 16, 1024, 128), db, ks);
  }
  kiln_wgmma_commit();
  kiln_wgmma_wait<0>();
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 32; ++i) {
    const int row = 16 * warp + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
    y[row * 64 + col] = d[i / 4][i % 4];
  }
}
)cuda";
}

/// An E4M3FN byte's value as the OCP FP8 specification defines it: bias
/// 7, three mantissa bits, subnormals m 2^-9 (the bytes below are normal).
float e4m3Value(int byte) {
  int e = byte >> 3 & 15, m = byte & 7;
  float v =
      e == 0 ? std::ldexp(float(m), -9) : std::ldexp(1.0f + m / 8.0f, e - 7);
  return byte & 0x80 ? -v : v;
}

TEST_F(TensorCopies, Float8WgmmaReadsKMajorBytesAsTheCopiesWroteThem) {
  // Exponent fields 6 to 8 (0.5 to 3.75) of either sign: every product has
  // a few bits, so every sum of them is exact in float.
  std::vector<float> x(2 * 64 * 128);
  auto byteOf = [](int i, int j, int salt) {
    int e = 6 + (i * 5 + j * 3 + salt) % 3, m = (i * 3 + j * 7 + salt) % 8;
    int sign = (i + 2 * j + salt) % 5 == 0 ? 0x80 : 0;
    return sign | e << 3 | m;
  };
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < 128; ++k) {
      x[r * 128 + k] = float(byteOf(r, k, 0));
      x[64 * 128 + r * 128 + k] = float(byteOf(r, k, 1));
    }
  std::vector<float> want(64 * 64);
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n) {
      double sum = 0;
      for (int k = 0; k < 128; ++k)
        sum += double(e4m3Value(int(x[m * 128 + k]))) *
               e4m3Value(int(x[64 * 128 + n * 128 + k]));
      want[m * 64 + n] = float(sum);
    }
  // x and y are both 2 x 64 x 128 floats: D is y's first 4096.
  auto run = [&](int bSwizzle) {
    std::vector<float> y =
        runOnHost(kernelArtifact(float8WgmmaSource(bSwizzle), "product",
                                 int64_t(x.size()), 1, 128),
                  x, HostOptions());
    y.resize(want.size());
    return y;
  };
  EXPECT_EQ(run(128), want);
  // negative_: B's descriptor without its swizzle reads other bytes.
  EXPECT_NE(run(0), want);
}

/// The integer form: the same tiles' bytes as .u8 A times .u8 B into d,
/// and as .s8 A times .u8 B into e (the products written to y as floats,
/// exact below 2^24), both through the swizzled descriptors.
std::string integerWgmmaSource() {
  return std::string(kMapHelper) + R"cuda(
static unsigned char ga[64 * 128], gb[64 * 128];
extern "C" __global__ void product(const float *x, float *y) {
  __shared__ __align__(1024) unsigned char tile_a[64 * 128], tile_b[64 * 128];
  __shared__ __align__(8) unsigned long long bar;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  for (int i = tid; i < 64 * 128; i += 128) {
    ga[i] = (unsigned char)x[i];
    gb[i] = (unsigned char)x[64 * 128 + i];
  }
  if (tid == 0) {
    kiln_mbarrier_init(&bar, 1);
    kiln_fence_mbarrier_init();
  }
  __syncthreads();
  const kiln_tensor_map a = map2d(ga, 1, 128, 64, 128, 128, 64, 128),
                        b = map2d(gb, 1, 128, 64, 128, 128, 64, 128);
  if (tid == 0) {
    kiln_mbarrier_arrive_expect_tx(&bar, 2 * 8192);
    kiln_tma_load_2d(tile_a, a, 0, 0, &bar);
    kiln_tma_load_2d(tile_b, b, 0, 0, &bar);
  }
  kiln_mbarrier_wait(&bar, 0);
  int d[8][4], e[8][4];
  kiln_wgmma_fence();
  for (int ks = 0; ks < 4; ++ks) {
    const kiln_smem_desc da = kiln_wgmma_desc_swizzled(tile_a + 32 * ks, 16, 1024, 128),
                         db = kiln_wgmma_desc_swizzled(tile_b + 32 * ks, 16, 1024, 128);
    kiln_host_wgmma::issueSharedInteger<64, true, true>(&d[0][0], da, db, ks);
    kiln_host_wgmma::issueSharedInteger<64, false, true>(&e[0][0], da, db, ks);
  }
  kiln_wgmma_commit();
  kiln_wgmma_wait<0>();
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 32; ++i) {
    const int row = 16 * warp + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
    y[row * 64 + col] = (float)d[i / 4][i % 4];
    y[4096 + row * 64 + col] = (float)e[i / 4][i % 4];
  }
}
)cuda";
}

TEST_F(TensorCopies, IntegerWgmmaReadsUnsignedAndSignedBytes) {
  // Every byte value, the tiles' rows read as the ISA's .u8 and .s8.
  std::vector<float> x(2 * 64 * 128);
  for (int r = 0; r < 64; ++r)
    for (int k = 0; k < 128; ++k) {
      x[r * 128 + k] = float((r * 37 + k * 11) % 256);
      x[64 * 128 + r * 128 + k] = float((r * 13 + k * 29 + 7) % 256);
    }
  std::vector<float> want(2 * 4096);
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n) {
      long long u = 0, s = 0;
      for (int k = 0; k < 128; ++k) {
        int a = int(x[m * 128 + k]), b = int(x[64 * 128 + n * 128 + k]);
        u += (long long)a * b;
        s += (long long)(a < 128 ? a : a - 256) * b;
      }
      want[m * 64 + n] = float(u);
      want[4096 + m * 64 + n] = float(s);
    }
  std::vector<float> y =
      runOnHost(kernelArtifact(integerWgmmaSource(), "product",
                               int64_t(x.size()), 1, 128),
                x, HostOptions());
  y.resize(want.size());
  EXPECT_EQ(y, want);
}

} // namespace
