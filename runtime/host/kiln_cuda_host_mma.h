//===- kiln_cuda_host_mma.h - Tensor cores on the host ----------*- C++ -*-===//
//
// The warp-collective PTX instructions of tensor-core kernels, emulated over
// the lanes of kiln_cuda_host.h: `mma.sync.aligned.m16n8k16.row.col` with
// f16 or bf16 A and B and f32 C and D, `mma.sync.aligned.m16n8k8.row.col`
// with .tf32 A and B (and cvt.rna.tf32.f32 to make them),
// `mma.sync.aligned.m16n8k32.row.col` with .s8 A and B and .s32 C and D,
// and with .e4m3 A and B and .f32 C and D (as two f16 products: sm_90 has
// no float8 mma.sync),
// `ldmatrix.sync.aligned.m8n8` (.x1, .x2, .x4, with and without .trans),
// `cp.async` with its groups, and the softmax's ex2.approx.ftz.f32.
// Generated code reaches them through kiln_mma_*, kiln_ldmatrix_* and
// kiln_cp_async_* (Prelude.cpp has the same functions as inline PTX for the
// GPU). Each lane holds exactly the fragment elements that the PTX ISA's
// figures give it ("Matrix Fragments for mma.m16n8k16 with floating point
// type", "Matrix Fragments for mma.m16n8k8", "Matrix Fragments for
// mma.m16n8k32", "Warp-level matrix load
// instruction: ldmatrix"); the warp's
// fragments are gathered through its slots, so a kernel whose lanes put
// elements elsewhere computes wrong results here, as it would on the GPU.
// The unit tests check the layouts lane by lane against those figures
// (test/unit/runtime/TensorCoreTest.cpp).
//
// Every lane of a full warp takes part, as the instructions require.
// cp.async copies land when a wait_group lets them (the latest moment the
// GPU may), so shared memory read before its wait is stale here too.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_HOST_MMA_H
#define KILN_CUDA_HOST_MMA_H

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

/// Every lane's `bits`, in `all` (by lane), for a full warp.
inline void kiln_host_gather(unsigned long long bits,
                             unsigned long long (&all)[32]) {
  kiln_host_thread *self = kiln_host_self;
  self->warpSlots[self->lane] = bits;
  kiln_host_wait(KILN_HOST_WAIT_WARP);
  for (unsigned i = 0; i < 32; ++i)
    all[i] = kiln_host_self->warpSlots[i];
  kiln_host_wait(KILN_HOST_WAIT_WARP);
}

namespace kiln_host_mma {

/// Lane `lane`'s group (its row in a fragment) and its place in the group.
inline unsigned groupOf(unsigned lane) { return lane >> 2; }
inline unsigned threadInGroup(unsigned lane) { return lane & 3u; }

/// Where element `i` (0..7) of lane `lane`'s A fragment sits in the 16x16 A:
/// rows groupID (i = 0, 1, 4, 5) or groupID + 8, columns
/// threadID_in_group * 2 + (i & 1), plus 8 from i = 4.
inline void aElement(unsigned lane, unsigned i, unsigned &row, unsigned &col) {
  row = groupOf(lane) + ((i & 2u) ? 8u : 0u);
  col = threadInGroup(lane) * 2u + (i & 1u) + (i >= 4u ? 8u : 0u);
}

/// Where element `i` (0..3) of a B fragment sits in the 16x8 B (k x n):
/// row threadID_in_group * 2 + (i & 1), plus 8 from i = 2; column groupID.
inline void bElement(unsigned lane, unsigned i, unsigned &row, unsigned &col) {
  row = threadInGroup(lane) * 2u + (i & 1u) + (i >= 2u ? 8u : 0u);
  col = groupOf(lane);
}

/// Where element `i` (0..3) of a C or D fragment sits in the 16x8 C: row
/// groupID, plus 8 from i = 2; column threadID_in_group * 2 + (i & 1).
inline void cElement(unsigned lane, unsigned i, unsigned &row, unsigned &col) {
  row = groupOf(lane) + (i >= 2u ? 8u : 0u);
  col = threadInGroup(lane) * 2u + (i & 1u);
}

/// Element `half` (0: the low 16 bits, the lower-numbered element) of a
/// 32-bit register holding two 16-bit values.
inline unsigned short halfOf(unsigned pair, unsigned half) {
  return static_cast<unsigned short>(half ? pair >> 16 : pair & 0xffffu);
}

/// This lane's four elements of D = A * B + C (cElement), from the warp's
/// gathered A (16 x K) and B (K x 8): the products exact in double, the sum
/// rounded once to float. `d` may be `c`.
template <unsigned K>
inline void multiplyAtLane(float (&d)[4], const float (&A)[16][K],
                           const float (&B)[K][8], const float (&c)[4]) {
  unsigned lane = kiln_host_self->lane;
  float result[4];
  for (unsigned i = 0; i < 4; ++i) {
    unsigned row, col;
    cElement(lane, i, row, col);
    double sum = c[i];
    for (unsigned k = 0; k < K; ++k)
      sum += double(A[row][k]) * double(B[k][col]);
    result[i] = float(sum);
  }
  for (unsigned i = 0; i < 4; ++i)
    d[i] = result[i];
}

/// A 16-bit value's bits as a float.
template <bool BF16> inline float widen(unsigned short bits) {
  return BF16 ? kiln_host_detail::bf16BitsToFloat(bits)
              : kiln_host_detail::halfBitsToFloat(bits);
}

/// The warp's 16x16 A of m16n8k16 (also a warp's rows of wgmma's A) from
/// each lane's four registers (aElement), in two rounds of two.
template <bool BF16>
inline void gatherA(const unsigned (&a)[4], float (&A)[16][16]) {
  unsigned long long all[32];
  for (unsigned round = 0; round < 2; ++round) {
    kiln_host_gather(
        a[2 * round] | static_cast<unsigned long long>(a[2 * round + 1]) << 32,
        all);
    for (unsigned lane = 0; lane < 32; ++lane)
      for (unsigned r = 0; r < 2; ++r)
        for (unsigned half = 0; half < 2; ++half) {
          unsigned row, col;
          aElement(lane, (2 * round + r) * 2 + half, row, col);
          A[row][col] =
              widen<BF16>(halfOf(unsigned(all[lane] >> (32 * r)), half));
        }
  }
}

/// D = A * B + C for one m16n8k16 tile of the warp. The products of 16-bit
/// values are exact in double and the sum is rounded once to float; the
/// GPU's summation order and internal width are unspecified, so the two
/// agree to float rounding.
template <bool BF16>
inline void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                const float (&c)[4]) {
  float A[16][16], B[16][8];
  gatherA<BF16>(a, A);
  unsigned long long all[32];
  kiln_host_gather(b[0] | static_cast<unsigned long long>(b[1]) << 32, all);
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned i = 0; i < 4; ++i) {
      unsigned row, col;
      bElement(lane, i, row, col);
      B[row][col] =
          widen<BF16>(halfOf(unsigned(all[lane] >> (32 * (i / 2))), i % 2));
    }
  multiplyAtLane(d, A, B, c);
}

/// Where byte `i` (0..15) of lane `lane`'s A fragment sits in the 16x32 A
/// of `mma.m16n8k32` with .s8 ("Matrix Fragments for mma.m16n8k32"): rows
/// groupID (i = 0..3, 8..11) or groupID + 8; columns threadID_in_group * 4
/// + (i & 3), plus 16 from i = 8. Register r holds bytes 4r..4r+3, the
/// lowest-numbered in its low byte.
inline void aElementS8(unsigned lane, unsigned i, unsigned &row,
                       unsigned &col) {
  row = groupOf(lane) + ((i & 4u) ? 8u : 0u);
  col = threadInGroup(lane) * 4u + (i & 3u) + (i >= 8u ? 16u : 0u);
}

/// Where byte `i` (0..7) of an .s8 B fragment sits in the 32x8 B (k x n):
/// row threadID_in_group * 4 + (i & 3), plus 16 from i = 4; column groupID.
inline void bElementS8(unsigned lane, unsigned i, unsigned &row,
                       unsigned &col) {
  row = threadInGroup(lane) * 4u + (i & 3u) + (i >= 4u ? 16u : 0u);
  col = groupOf(lane);
}

/// Byte `i` of a register holding four, as a signed 8-bit value.
inline int signedByte(unsigned bits, unsigned i) {
  return static_cast<signed char>(static_cast<unsigned char>(bits >> (8 * i)));
}

/// Byte `i` of a register holding four, as a float8 E4M3FN value (3
/// mantissa bits, bias 7, NaN S.1111.111, no infinity): exact in float.
inline float e4m3Byte(unsigned bits, unsigned i) {
  unsigned byte = (bits >> (8 * i)) & 0xffu, mag = byte & 0x7fu;
  unsigned e = mag >> 3, m = mag & 7u;
  float v = mag == 0x7fu ? NAN
            : e == 0     ? std::ldexp(float(m), -9)
                         : std::ldexp(float(8u | m), int(e) - 10);
  return byte & 0x80u ? -v : v;
}

/// The warp's 16x32 A and 32x8 B of an m16n8k32 tile of 8-bit elements
/// (aElementS8, bElementS8: every 8-bit type's layout), each byte read by
/// `value`.
template <class T, class Value>
inline void gatherBytes(T (&A)[16][32], T (&B)[32][8], const unsigned (&a)[4],
                        const unsigned (&b)[2], Value value) {
  unsigned long long all[32];
  for (unsigned round = 0; round < 2; ++round) {
    kiln_host_gather(
        a[2 * round] | static_cast<unsigned long long>(a[2 * round + 1]) << 32,
        all);
    for (unsigned lane = 0; lane < 32; ++lane)
      for (unsigned i = 0; i < 8; ++i) {
        unsigned row, col;
        aElementS8(lane, 8 * round + i, row, col);
        A[row][col] = value(unsigned(all[lane] >> (32 * (i / 4))), i % 4);
      }
  }
  kiln_host_gather(b[0] | static_cast<unsigned long long>(b[1]) << 32, all);
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned i = 0; i < 8; ++i) {
      unsigned row, col;
      bElementS8(lane, i, row, col);
      B[row][col] = value(unsigned(all[lane] >> (32 * (i / 4))), i % 4);
    }
}

/// D = A * B + C for one m16n8k32 .e4m3 tile of the warp with .f32 C and
/// D, as Prelude's kiln_mma_m16n8k32_e4m3 computes it on sm_90: the bytes
/// widened exactly and multiplied as two m16n8k16 products chained in f32,
/// the first of the k with k % 4 < 2 (each register's low two bytes), the
/// second of the rest; each sum of exact products rounded once
/// (multiplyAtLane). `d` may be `c`.
inline void mmaE4M3(float (&d)[4], const unsigned (&a)[4],
                    const unsigned (&b)[2], const float (&c)[4]) {
  float A[16][32], B[32][8];
  gatherBytes(A, B, a, b, e4m3Byte);
  float halves[2][16][16], bHalves[2][16][8];
  for (unsigned k = 0; k < 32; ++k) {
    unsigned half = (k & 2u) ? 1u : 0u, at = k / 4 * 2 + (k & 1u);
    for (unsigned row = 0; row < 16; ++row)
      halves[half][row][at] = A[row][k];
    for (unsigned col = 0; col < 8; ++col)
      bHalves[half][at][col] = B[k][col];
  }
  multiplyAtLane(d, halves[0], bHalves[0], c);
  multiplyAtLane(d, halves[1], bHalves[1], d);
}

/// D = A * B + C for one m16n8k32 .s8 tile of the warp, in 32-bit two's
/// complement: without .satfinite the sum wraps, as on the GPU (integer
/// sums are exact in any order, so the two agree bit for bit). `d` may be
/// `c`.
inline void mmaS8(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                  const int (&c)[4]) {
  int A[16][32], B[32][8];
  gatherBytes(A, B, a, b, signedByte);
  unsigned lane = kiln_host_self->lane;
  int result[4];
  for (unsigned i = 0; i < 4; ++i) {
    unsigned row, col;
    cElement(lane, i, row, col);
    unsigned sum = static_cast<unsigned>(c[i]);
    for (unsigned k = 0; k < 32; ++k)
      sum += static_cast<unsigned>(A[row][k] * B[k][col]);
    result[i] = static_cast<int>(sum);
  }
  for (unsigned i = 0; i < 4; ++i)
    d[i] = result[i];
}

/// Where element `i` (0..3) of lane `lane`'s A fragment sits in the 16x8 A
/// of `mma.m16n8k8` with .tf32 ("Matrix Fragments for mma.m16n8k8",
/// .tf32): row groupID, plus 8 for i = 1 and 3; column threadID_in_group,
/// plus 4 from i = 2.
inline void aElementTf32(unsigned lane, unsigned i, unsigned &row,
                         unsigned &col) {
  row = groupOf(lane) + ((i & 1u) ? 8u : 0u);
  col = threadInGroup(lane) + (i >= 2u ? 4u : 0u);
}

/// Where element `i` (0..1) of a .tf32 B fragment sits in the 8x8 B (k x
/// n): row threadID_in_group, plus 4 for i = 1; column groupID.
inline void bElementTf32(unsigned lane, unsigned i, unsigned &row,
                         unsigned &col) {
  row = threadInGroup(lane) + (i ? 4u : 0u);
  col = groupOf(lane);
}

/// A .tf32 register's value: its float bits with the 13 low mantissa bits
/// ignored, as the tensor cores read them.
inline float tf32Value(unsigned bits) {
  bits &= 0xffffe000u;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// D = A * B + C for one m16n8k8 .tf32 tile of the warp: products of
/// 11-bit significands are exact in double, the sum rounded once to float.
inline void mmaTf32(float (&d)[4], const unsigned (&a)[4],
                    const unsigned (&b)[2], const float (&c)[4]) {
  float A[16][8], B[8][8];
  unsigned long long all[32];
  for (unsigned round = 0; round < 2; ++round) {
    kiln_host_gather(
        a[2 * round] | static_cast<unsigned long long>(a[2 * round + 1]) << 32,
        all);
    for (unsigned lane = 0; lane < 32; ++lane)
      for (unsigned r = 0; r < 2; ++r) {
        unsigned row, col;
        aElementTf32(lane, 2 * round + r, row, col);
        A[row][col] = tf32Value(unsigned(all[lane] >> (32 * r)));
      }
  }
  kiln_host_gather(b[0] | static_cast<unsigned long long>(b[1]) << 32, all);
  for (unsigned lane = 0; lane < 32; ++lane)
    for (unsigned i = 0; i < 2; ++i) {
      unsigned row, col;
      bElementTf32(lane, i, row, col);
      B[row][col] = tf32Value(unsigned(all[lane] >> (32 * i)));
    }
  multiplyAtLane(d, A, B, c);
}

/// ldmatrix of N 8x8 matrices of 16-bit elements: lane 8j + r gives the
/// address of row r of matrix j; register j of each lane receives, from
/// matrix j, row groupID at columns threadID_in_group * 2 and + 1, or with
/// .trans the elements at column groupID of rows threadID_in_group * 2 and
/// + 1 (the matrix read column-major).
template <unsigned N, bool TRANS>
inline void ldmatrix(unsigned (&r)[N], const void *rowAddress) {
  static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4");
  unsigned long long all[32], mine = 0;
  std::memcpy(&mine, &rowAddress, sizeof(rowAddress));
  kiln_host_gather(mine, all);
  unsigned lane = kiln_host_self->lane;
  unsigned g = groupOf(lane), t = threadInGroup(lane);
  auto rowOf = [&](unsigned j, unsigned row) {
    const unsigned short *p;
    std::memcpy(&p, &all[8 * j + row], sizeof(p));
    return p;
  };
  for (unsigned j = 0; j < N; ++j) {
    unsigned short lo, hi;
    if (TRANS) {
      lo = rowOf(j, 2 * t)[g];
      hi = rowOf(j, 2 * t + 1)[g];
    } else {
      lo = rowOf(j, g)[2 * t];
      hi = rowOf(j, g)[2 * t + 1];
    }
    r[j] = unsigned(lo) | unsigned(hi) << 16;
  }
}

/// One cp.async copy of a thread.
struct AsyncCopy {
  void *dst;
  const void *src;
  unsigned bytes, srcBytes;
};

/// A thread's asynchronous operations of one kind (cp.async copies here,
/// wgmma products in kiln_cuda_host_wgmma.h): those not yet committed, then
/// its committed groups, oldest first. Each lands through `land(op)`.
template <class Op> struct PendingGroups {
  const kiln_host_thread *thread = nullptr;
  unsigned block[3] = {0, 0, 0};
  std::vector<Op> open;
  std::vector<std::vector<Op>> groups;

  void commit() {
    groups.push_back(std::move(open));
    open.clear();
  }
  /// Lands all but the `keep` most recently committed groups.
  void wait(size_t keep) {
    while (groups.size() > keep) {
      for (const Op &op : groups.front())
        land(op);
      groups.erase(groups.begin());
    }
  }
};

/// The running thread's operations of kind `Op`. A block's threads start
/// with none: what a thread left pending when its block ended is dropped
/// with that block's shared memory.
template <class Op> inline PendingGroups<Op> &pendingOf() {
  static thread_local std::vector<PendingGroups<Op>> states;
  kiln_host_thread *self = kiln_host_self;
  unsigned block[3] = {blockIdx.x, blockIdx.y, blockIdx.z};
  for (PendingGroups<Op> &s : states)
    if (s.thread == self) {
      if (std::memcmp(s.block, block, sizeof(block)) != 0) {
        s.open.clear();
        s.groups.clear();
        std::memcpy(s.block, block, sizeof(block));
      }
      return s;
    }
  states.emplace_back();
  states.back().thread = self;
  std::memcpy(states.back().block, block, sizeof(block));
  return states.back();
}

/// The first `srcBytes` bytes from global memory, zeros after them.
inline void land(const AsyncCopy &copy) {
  std::memcpy(copy.dst, copy.src, copy.srcBytes);
  std::memset(static_cast<char *>(copy.dst) + copy.srcBytes, 0,
              copy.bytes - copy.srcBytes);
}

} // namespace kiln_host_mma

inline void kiln_mma_m16n8k16_f16(float (&d)[4], const unsigned (&a)[4],
                                  const unsigned (&b)[2], const float (&c)[4]) {
  kiln_host_mma::mma<false>(d, a, b, c);
}
inline void kiln_mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4],
                                   const unsigned (&b)[2],
                                   const float (&c)[4]) {
  kiln_host_mma::mma<true>(d, a, b, c);
}

inline void kiln_mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4],
                                  const unsigned (&b)[2], const float (&c)[4]) {
  kiln_host_mma::mmaTf32(d, a, b, c);
}
inline void kiln_mma_m16n8k32_s8(int (&d)[4], const unsigned (&a)[4],
                                 const unsigned (&b)[2], const int (&c)[4]) {
  kiln_host_mma::mmaS8(d, a, b, c);
}
/// cvt.rn.f16x2.e4m3x2 of the low two bytes of `two`: each E4M3FN value
/// (exact in f16) into a half of the pair, the low byte into the low half.
inline unsigned kiln_e4m3x2_to_f16x2(unsigned two) {
  const __half lo(kiln_host_mma::e4m3Byte(two, 0));
  const __half hi(kiln_host_mma::e4m3Byte(two, 1));
  return unsigned(lo.__x) | unsigned(hi.__x) << 16;
}
inline void kiln_mma_m16n8k32_e4m3(float (&d)[4], const unsigned (&a)[4],
                                   const unsigned (&b)[2],
                                   const float (&c)[4]) {
  kiln_host_mma::mmaE4M3(d, a, b, c);
}
/// cvt.rna.tf32.f32: `x` rounded to TF32's 10 mantissa bits, to nearest
/// with ties away from zero, in a float's bits (the 13 low bits zero).
/// Infinities and NaNs pass unchanged.
inline unsigned kiln_to_tf32(float x) {
  unsigned bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u)
    return bits;
  return (bits + 0x1000u) & 0xffffe000u;
}

/// ex2.approx.ftz.f32: 2^x with subnormal inputs and results flushed to
/// zero (a subnormal input gives 2^0 = 1 either way). The GPU's answer is
/// within 2 ulp of libm's; -inf gives +0 and NaN stays NaN, as here.
inline float kiln_exp2_ftz(float x) {
  const float y = exp2f(x);
  return y < 1.17549435e-38f ? 0.0f : y;
}

inline void kiln_ldmatrix_x1(unsigned (&r)[1], const void *row) {
  kiln_host_mma::ldmatrix<1, false>(r, row);
}
inline void kiln_ldmatrix_x2(unsigned (&r)[2], const void *row) {
  kiln_host_mma::ldmatrix<2, false>(r, row);
}
inline void kiln_ldmatrix_x4(unsigned (&r)[4], const void *row) {
  kiln_host_mma::ldmatrix<4, false>(r, row);
}
inline void kiln_ldmatrix_x1_trans(unsigned (&r)[1], const void *row) {
  kiln_host_mma::ldmatrix<1, true>(r, row);
}
inline void kiln_ldmatrix_x2_trans(unsigned (&r)[2], const void *row) {
  kiln_host_mma::ldmatrix<2, true>(r, row);
}
inline void kiln_ldmatrix_x4_trans(unsigned (&r)[4], const void *row) {
  kiln_host_mma::ldmatrix<4, true>(r, row);
}

/// cp.async.cg of 16 bytes to shared `dst` from global `src`: the first
/// `srcBytes` (at most 16) copied, the rest zero-filled (a tile's edge).
inline void kiln_cp_async_16(void *dst, const void *src, unsigned srcBytes) {
  // The PTX ISA: both addresses aligned to the copy's 16 bytes.
  if (((reinterpret_cast<unsigned long long>(dst) |
        reinterpret_cast<unsigned long long>(src)) &
       15) != 0) {
    std::fprintf(stderr, "kiln host backend: cp.async of 16 bytes at an "
                         "address not aligned to 16\n");
    std::abort();
  }
  kiln_host_mma::pendingOf<kiln_host_mma::AsyncCopy>().open.push_back(
      {dst, src, 16u, srcBytes > 16u ? 16u : srcBytes});
}
inline void kiln_cp_async_commit() {
  kiln_host_mma::pendingOf<kiln_host_mma::AsyncCopy>().commit();
}
/// cp.async.wait_group N: all but the N most recent committed groups have
/// landed.
template <int N> inline void kiln_cp_async_wait() {
  static_assert(N >= 0, "wait_group takes a count of groups");
  kiln_host_mma::pendingOf<kiln_host_mma::AsyncCopy>().wait(N);
}

#endif // KILN_CUDA_HOST_MMA_H
