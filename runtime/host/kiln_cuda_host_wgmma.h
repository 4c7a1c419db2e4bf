//===- kiln_cuda_host_wgmma.h - Hopper's wgmma on the host ------*- C++ -*-===//
//
// `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16` (and .bf16) with A
// from registers or from shared memory and B from shared memory through
// matrix descriptors, and `.m64nNk32.f32.e4m3.e4m3` and `.m64nNk32.s32`
// of .u8 and .s8 with both from shared memory (K-major: the ISA allows no
// other layout for 8-bit operands), with wgmma.fence, commit_group and
// wait_group, emulated over the lanes of kiln_cuda_host.h. Generated code
// reaches them through kiln_wgmma_desc, kiln_wgmma_desc_swizzled,
// kiln_wgmma_fence, kiln_wgmma_commit, kiln_wgmma_wait<N> and the per-shape
// functions TensorCores.cpp emits (kiln_wgmma_m64n<N>k16_<f16|bf16>[_ss]_
// <k|t>, kiln_wgmma_m64n<N>k32_e4m3_ss, kiln_wgmma_m64n<N>k32_<u8|s8><u8|s8>
// _ss), which call kiln_host_wgmma's issue functions.
//
// The layouts, from the PTX ISA ("Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate", its register fragments, "Shared Memory Matrix
// Layout" and "Matrix Descriptor Format"; CUTLASS's make_gmma_desc writes
// the same canonical layouts):
// - A (64x16) in registers: warp w of the warpgroup holds rows 16w to 16w
//   + 15 exactly as mma.m16n8k16 holds its A; D (64xN, f32): warp w holds
//   rows 16w to 16w + 15, element i of a lane at row groupID + 8 * ((i / 2)
//   % 2), column 8 * (i / 4) + 2 * threadID_in_group + i % 2, which is
//   mma.m16n8k16's C layout for each 8 columns. A warp's rows of D depend
//   only on its own rows of A, so each warp is emulated on its own.
// - An operand in shared memory (B, 16xN, or A, 64x16, K-major) is read
//   through its descriptor, element (mn, k) of 16 bits at the descriptor's
//   start plus, with no swizzle (8x8 core matrices of 8 rows of 16
//   contiguous bytes):
//     K-major (imm-trans 0):  (mn / 8) * SBO + (mn % 8) * 16 + (k / 8) * LBO
//                             + (k % 8) * 2;
//     MN-major (imm-trans 1): (mn / 8) * SBO + (mn % 8) * 2 + (k / 8) * LBO
//                             + (k % 8) * 16;
//   and with a swizzle of S bytes (128, 64 or 32; W = S / 16 chunks):
//     K-major:  (mn / 8) * SBO + (mn % 8) * S + (k % 16) * 2 (LBO unused);
//     MN-major: (mn / (8 W)) * LBO + (mn % (8 W)) * 2 + (k / 8) * SBO
//               + (k % 8) * S;
//   the swizzle then XORs the address's 16-byte chunk (bits 4 and up) with
//   its bits 7 and up, log2(W) of them, as a tensor copy with that swizzle
//   writes (kiln_cuda_host_tma.h). So a K-major tile written by such a copy
//   as rows of S bytes is read with SBO = 8 * S, and the descriptor of its
//   k-th 16 columns starts 32 * k bytes in.
//   An 8-bit operand (K-major only) has the same core matrices of 8 rows of
//   16 bytes, each k a byte: (mn / 8) * SBO + (mn % 8) * 16 + (k / 16) * LBO
//   + k % 16 with no swizzle, (mn / 8) * SBO + (mn % 8) * S + k % 32 with
//   one; an instruction's K (32) is 32 bytes, as for 16 bits.
// - The descriptor (64 bits): start address >> 4 in bits 0-13, LBO >> 4 in
//   16-29, SBO >> 4 in 32-45, base offset in 49-51, layout in 62-63 (0 no
//   swizzle, 1 128 bytes, 2 64, 3 32). Host shared memory has no 18-bit
//   window, so here the start travels as a pointer beside the other fields
//   (address bits 0); like the GPU, the emulation ignores its 4 low bits.
//   The base offset must be 0 here: swizzled tiles start at their pattern's
//   boundary.
//
// The product lands when a wait_group lets it (the latest moment the GPU
// may), reading B then: accumulators read before their wait are stale, and
// shared memory overwritten before it changes the product, as on the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_HOST_WGMMA_H
#define KILN_CUDA_HOST_WGMMA_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>

/// A wgmma shared-memory matrix descriptor on the host (see above).
struct kiln_smem_desc {
  const unsigned char *start;
  unsigned long long bits;
};

namespace kiln_host_wgmma {

/// The descriptor fields of `lbo` and `sbo` (bytes, multiples of 16 below
/// 2^18) and the layout of a `swizzle`-byte swizzle (0 for none), base
/// offset 0: bits 16-29, 32-45 and 62-63.
inline unsigned long long descriptorBits(unsigned lbo, unsigned sbo,
                                         unsigned swizzle = 0) {
  unsigned long long layout = swizzle == 128  ? 1
                              : swizzle == 64 ? 2
                              : swizzle == 32 ? 3
                                              : 0;
  return static_cast<unsigned long long>((lbo & 0x3ffffu) >> 4) << 16 |
         static_cast<unsigned long long>((sbo & 0x3ffffu) >> 4) << 32 |
         layout << 62;
}

/// One issued wgmma of a lane: its accumulators, the warp's A rows (or A's
/// descriptor), B's descriptor and layout, and whether D starts from the
/// accumulators.
struct Product {
  float *d;
  unsigned n;
  float a[16][16];
  bool aShared;
  kiln_smem_desc aDesc;
  unsigned warp;
  kiln_smem_desc b;
  bool transB, bf16, accumulate;
  /// Both operands float8 E4M3FN, K-major in shared memory (k32).
  bool e4m3 = false;
  /// Both operands 8-bit integers (each unsigned or signed), K-major in
  /// shared memory (k32), into the 32-bit integer accumulators at `di`.
  bool integer = false, aUnsigned = false, bUnsigned = false;
  int *di = nullptr;
};

[[noreturn]] inline void fail(const char *what) {
  std::fprintf(stderr, "kiln host backend: wgmma: %s\n", what);
  std::abort();
}

/// The swizzle span in bytes of a descriptor's layout (0 for none).
inline unsigned swizzleOf(kiln_smem_desc desc) {
  static const unsigned spans[4] = {0, 128, 64, 32};
  return spans[desc.bits >> 62];
}

/// Element (mn, k) of the operand `desc` describes, MN-major or K-major
/// (the layouts above).
inline float operandAt(kiln_smem_desc desc, bool mnMajor, bool bf16,
                       unsigned mn, unsigned k) {
  size_t lbo = size_t(desc.bits >> 16 & 0x3fffu) << 4,
         sbo = size_t(desc.bits >> 32 & 0x3fffu) << 4;
  unsigned span = swizzleOf(desc);
  size_t offset;
  if (span == 0)
    offset =
        (mn / 8) * sbo + (k / 8) * lbo +
        (mnMajor ? (k % 8) * 16 + (mn % 8) * 2 : (mn % 8) * 16 + (k % 8) * 2);
  else if (!mnMajor)
    offset = (mn / 8) * sbo + (mn % 8) * span + (k % 16) * 2;
  else
    offset = (mn / (span / 2)) * lbo + (mn % (span / 2)) * 2 + (k / 8) * sbo +
             (k % 8) * span;
  uintptr_t start = uintptr_t(desc.start) & ~uintptr_t(15);
  const void *at = reinterpret_cast<const void *>(
      kiln_host_tma::swizzled(start + offset, span));
  unsigned short bits;
  std::memcpy(&bits, at, sizeof bits);
  return bf16 ? kiln_host_mma::widen<true>(bits)
              : kiln_host_mma::widen<false>(bits);
}

/// Byte (mn, k) of the K-major 8-bit operand `desc` describes.
inline unsigned byteAt(kiln_smem_desc desc, unsigned mn, unsigned k) {
  size_t lbo = size_t(desc.bits >> 16 & 0x3fffu) << 4,
         sbo = size_t(desc.bits >> 32 & 0x3fffu) << 4;
  unsigned span = swizzleOf(desc);
  size_t offset = span == 0
                      ? (mn / 8) * sbo + (mn % 8) * 16 + (k / 16) * lbo + k % 16
                      : (mn / 8) * sbo + (mn % 8) * span + k % 32;
  uintptr_t start = uintptr_t(desc.start) & ~uintptr_t(15);
  return *reinterpret_cast<const unsigned char *>(
      kiln_host_tma::swizzled(start + offset, span));
}

/// The same byte as a float8 E4M3FN value (exact in float).
inline float e4m3At(kiln_smem_desc desc, unsigned mn, unsigned k) {
  return kiln_host_mma::e4m3Byte(byteAt(desc, mn, k), 0);
}

/// The same byte as an 8-bit integer, unsigned or signed.
inline int integerAt(kiln_smem_desc desc, bool isUnsigned, unsigned mn,
                     unsigned k) {
  unsigned byte = byteAt(desc, mn, k);
  return isUnsigned ? int(byte) : int(static_cast<signed char>(byte));
}

/// D = A * B (+ D) for an 8-bit form, 64x32 by 32xN: each element read by
/// `read(desc, isA, mn, k)`, the products summed from `start(i)` in `Sum`
/// and the lane's accumulator i written by `store(i, sum)`.
template <class Sum, class Read, class Start, class Store>
inline void landEightBit(const Product &p, Read read, Start start,
                         Store store) {
  unsigned lane = kiln_host_self->lane;
  unsigned g = kiln_host_mma::groupOf(lane),
           t = kiln_host_mma::threadInGroup(lane);
  Sum a[16][32];
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned k = 0; k < 32; ++k)
      a[r][k] = read(p.aDesc, true, 16 * p.warp + r, k);
  for (unsigned i = 0; i < p.n / 2; ++i) {
    unsigned row = g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
    Sum sum = p.accumulate ? start(i) : Sum(0);
    for (unsigned k = 0; k < 32; ++k)
      sum += a[row][k] * read(p.b, false, col, k);
    store(i, sum);
  }
}

/// The .s32 form of 8-bit integers (.u8 or .s8 each): exact, kept to 32
/// bits in two's complement as the GPU's accumulators are.
inline void landInteger(const Product &p) {
  landEightBit<long long>(
      p,
      [&](kiln_smem_desc desc, bool isA, unsigned mn, unsigned k) {
        return (long long)integerAt(desc, isA ? p.aUnsigned : p.bUnsigned, mn,
                                    k);
      },
      [&](unsigned i) { return (long long)p.di[i]; },
      [&](unsigned i, long long sum) {
        p.di[i] = static_cast<int>(static_cast<unsigned>(sum));
      });
}

/// The .e4m3 form: the products exact in double, each sum rounded once to
/// float. The GPU's float8 tensor cores keep fewer bits while they sum
/// (DeepSeek-V3's report measured about 14 on Hopper); a kernel bounds that
/// by adding each few products' sums into its own fp32 registers
/// (QdqWgmmaEmitter.cpp), which no emulation of the ISA's words can model.
inline void landE4M3(const Product &p) {
  landEightBit<double>(
      p,
      [](kiln_smem_desc desc, bool, unsigned mn, unsigned k) {
        return double(e4m3At(desc, mn, k));
      },
      [&](unsigned i) { return double(p.d[i]); },
      [&](unsigned i, double sum) { p.d[i] = float(sum); });
}

/// D = A * B (+ D) for this lane's accumulators: products of 16-bit values
/// exact in double, the sum rounded once to float.
inline void land(const Product &p) {
  if (p.e4m3) {
    landE4M3(p);
    return;
  }
  if (p.integer) {
    landInteger(p);
    return;
  }
  unsigned lane = kiln_host_self->lane;
  unsigned g = kiln_host_mma::groupOf(lane),
           t = kiln_host_mma::threadInGroup(lane);
  float a[16][16];
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned k = 0; k < 16; ++k)
      a[r][k] = p.aShared
                    ? operandAt(p.aDesc, false, p.bf16, 16 * p.warp + r, k)
                    : p.a[r][k];
  for (unsigned i = 0; i < p.n / 2; ++i) {
    unsigned row = g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
    double sum = p.accumulate ? p.d[i] : 0.0;
    for (unsigned k = 0; k < 16; ++k)
      sum +=
          double(a[row][k]) * double(operandAt(p.b, p.transB, p.bf16, col, k));
    p.d[i] = float(sum);
  }
}

/// The product's common fields, after checking the block and descriptor.
template <unsigned N, bool TRANS_B, bool BF16>
inline Product product(float *d, kiln_smem_desc b, int scaleD) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma's N: 8 to 256 by 8");
  if (blockDim.x * blockDim.y * blockDim.z % 128 != 0)
    fail("a block of whole warpgroups (128 threads) issues it");
  if ((b.bits >> 49 & 7u) != 0)
    fail("the emulation reads only descriptors of base offset 0");
  Product p;
  p.d = d;
  p.n = N;
  p.aShared = false;
  p.aDesc = {nullptr, 0};
  unsigned linear = threadIdx.x + threadIdx.y * blockDim.x +
                    threadIdx.z * blockDim.x * blockDim.y;
  p.warp = linear / 32 % 4;
  p.b = b;
  p.transB = TRANS_B;
  p.bf16 = BF16;
  p.accumulate = scaleD != 0;
  return p;
}

/// Issues D (this lane's N / 2 accumulators at `d`) = A * B (+ D): the
/// warp's A gathered now from its registers, B read when it lands.
template <unsigned N, bool TRANS_B, bool BF16>
inline void issue(float *d, const unsigned (&a)[4], kiln_smem_desc b,
                  int scaleD) {
  Product p = product<N, TRANS_B, BF16>(d, b, scaleD);
  kiln_host_mma::gatherA<BF16>(a, p.a);
  kiln_host_mma::pendingOf<Product>().open.push_back(p);
}

/// The same with A (64x16, K-major) in shared memory, read when it lands.
template <unsigned N, bool TRANS_B, bool BF16>
inline void issueShared(float *d, kiln_smem_desc a, kiln_smem_desc b,
                        int scaleD) {
  Product p = product<N, TRANS_B, BF16>(d, b, scaleD);
  if ((a.bits >> 49 & 7u) != 0)
    fail("the emulation reads only descriptors of base offset 0");
  p.aShared = true;
  p.aDesc = a;
  kiln_host_mma::pendingOf<Product>().open.push_back(p);
}

/// An 8-bit form's product (64x32 A and 32xN B, K-major in shared memory),
/// both read when it lands.
template <unsigned N>
inline Product eightBitProduct(kiln_smem_desc a, kiln_smem_desc b, int scaleD) {
  Product p = product<N, false, false>(nullptr, b, scaleD);
  if ((a.bits >> 49 & 7u) != 0)
    fail("the emulation reads only descriptors of base offset 0");
  p.aShared = true;
  p.aDesc = a;
  return p;
}

/// The .e4m3 form.
template <unsigned N>
inline void issueSharedE4M3(float *d, kiln_smem_desc a, kiln_smem_desc b,
                            int scaleD) {
  Product p = eightBitProduct<N>(a, b, scaleD);
  p.d = d;
  p.e4m3 = true;
  kiln_host_mma::pendingOf<Product>().open.push_back(p);
}

/// The .s32 form of 8-bit integers (.u8 or .s8 each).
template <unsigned N, bool A_UNSIGNED, bool B_UNSIGNED>
inline void issueSharedInteger(int *d, kiln_smem_desc a, kiln_smem_desc b,
                               int scaleD) {
  Product p = eightBitProduct<N>(a, b, scaleD);
  p.integer = true;
  p.aUnsigned = A_UNSIGNED;
  p.bUnsigned = B_UNSIGNED;
  p.di = d;
  kiln_host_mma::pendingOf<Product>().open.push_back(p);
}

} // namespace kiln_host_wgmma

/// The descriptor of a no-swizzle B at `start` (16-byte aligned) whose core
/// matrices are `lbo` bytes apart along K and `sbo` along N.
inline kiln_smem_desc kiln_wgmma_desc(const void *start, unsigned lbo,
                                      unsigned sbo) {
  return {static_cast<const unsigned char *>(start),
          kiln_host_wgmma::descriptorBits(lbo, sbo)};
}

/// The descriptor of a K-major or MN-major operand at `start` laid out with
/// a swizzle of `swizzle` bytes (128, 64 or 32; the layouts above).
inline kiln_smem_desc kiln_wgmma_desc_swizzled(const void *start, unsigned lbo,
                                               unsigned sbo, unsigned swizzle) {
  if (swizzle != 128 && swizzle != 64 && swizzle != 32)
    kiln_host_wgmma::fail("a swizzle is 128, 64 or 32 bytes");
  return {static_cast<const unsigned char *>(start),
          kiln_host_wgmma::descriptorBits(lbo, sbo, swizzle)};
}

/// wgmma.fence: orders the warpgroup's register writes before the next
/// wgmma; the emulation gathers A at issue, so there is nothing to order.
inline void kiln_wgmma_fence() {}

/// fence.proxy.async.shared::cta: shared-memory writes seen by the async
/// proxy (wgmma's reads). One memory here.
inline void kiln_fence_proxy_async() {}

/// Keeps the compiler from touching in-flight accumulators on the GPU; the
/// emulation's are only written at the wait.
template <class T> inline void kiln_wgmma_hold(T &) {}

inline void kiln_wgmma_commit() {
  kiln_host_mma::pendingOf<kiln_host_wgmma::Product>().commit();
}

/// wgmma.wait_group N: all but the N most recent committed groups have
/// landed.
template <int N> inline void kiln_wgmma_wait() {
  static_assert(N >= 0, "wait_group takes a count of groups");
  kiln_host_mma::pendingOf<kiln_host_wgmma::Product>().wait(N);
}

#endif // KILN_CUDA_HOST_WGMMA_H
