//===- kiln_cuda_host_wgmma.h - Hopper's wgmma on the host ------*- C++ -*-===//
//
// `wgmma.mma_async.sync.aligned.m64nNk16.f32.f16.f16` (and .bf16) with A
// from registers and B from shared memory through a matrix descriptor in
// the no-swizzle layout, with wgmma.fence, commit_group and wait_group,
// emulated over the lanes of kiln_cuda_host.h. Generated code reaches them
// through kiln_wgmma_desc, kiln_wgmma_fence, kiln_wgmma_commit,
// kiln_wgmma_wait<N> and the per-shape functions TensorCores.cpp emits
// (kiln_wgmma_m64n<N>k16_<f16|bf16>_<k|t>), which call kiln_host_wgmma.
//
// The layouts, from the PTX ISA ("Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate", its register fragments and "Shared Memory Matrix
// Layout"):
// - A (64x16, registers): warp w of the warpgroup holds rows 16w to 16w +
//   15 exactly as mma.m16n8k16 holds its A; D (64xN, f32): warp w holds
//   rows 16w to 16w + 15, element i of a lane at row groupID + 8 * ((i / 2)
//   % 2), column 8 * (i / 4) + 2 * threadID_in_group + i % 2, which is
//   mma.m16n8k16's C layout for each 8 columns. A warp's rows of D depend
//   only on its own rows of A, so each warp is emulated on its own.
// - B (16xN) in shared memory, no swizzle: 8x8 core matrices of 16-bit
//   elements, each 8 rows of 16 contiguous bytes. K-major (imm-trans-b 0):
//   a core matrix row is one column n of B, 8 consecutive k;
//   B[k][n] at start + (n / 8) * SBO + (n % 8) * 16 + (k / 8) * LBO + (k % 8)
//   * 2. MN-major (imm-trans-b 1): a core matrix row is one k, 8
//   consecutive n; B[k][n] at start + (n / 8) * SBO + (k % 8) * 16 + (k / 8)
//   * LBO + (n % 8) * 2. The leading byte offset (LBO) steps between core
//   matrices along K, the stride byte offset (SBO) along N.
// - The descriptor (64 bits): start address >> 4 in bits 0-13, LBO >> 4 in
//   16-29, SBO >> 4 in 32-45, base offset in 49-51, swizzle in 62-63. Host
//   shared memory has no 18-bit window, so here the start travels as a
//   pointer beside the other fields (address bits 0); like the GPU, the
//   emulation ignores its 4 low bits.
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
/// 2^18), no swizzle and base offset 0: bits 16-29 and 32-45.
inline unsigned long long descriptorBits(unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((lbo & 0x3ffffu) >> 4) << 16 |
         static_cast<unsigned long long>((sbo & 0x3ffffu) >> 4) << 32;
}

/// One issued wgmma of a lane: its accumulators, the warp's A rows, B's
/// descriptor and layout, and whether D starts from the accumulators.
struct Product {
  float *d;
  unsigned n;
  float a[16][16];
  kiln_smem_desc b;
  bool transB, bf16, accumulate;
};

[[noreturn]] inline void fail(const char *what) {
  std::fprintf(stderr, "kiln host backend: wgmma: %s\n", what);
  std::abort();
}

/// B[k][n] of `p` by its descriptor (the layouts above).
inline float bAt(const Product &p, unsigned k, unsigned n) {
  unsigned lbo = unsigned(p.b.bits >> 16 & 0x3fffu) << 4,
           sbo = unsigned(p.b.bits >> 32 & 0x3fffu) << 4;
  const unsigned char *start = p.b.start - (uintptr_t(p.b.start) & 15u);
  size_t offset =
      (n / 8) * size_t(sbo) + (k / 8) * size_t(lbo) +
      (p.transB ? (k % 8) * 16 + (n % 8) * 2 : (n % 8) * 16 + (k % 8) * 2);
  unsigned short bits;
  std::memcpy(&bits, start + offset, sizeof bits);
  return p.bf16 ? kiln_host_mma::widen<true>(bits)
                : kiln_host_mma::widen<false>(bits);
}

/// D = A * B (+ D) for this lane's accumulators: products of 16-bit values
/// exact in double, the sum rounded once to float.
inline void land(const Product &p) {
  unsigned lane = kiln_host_self->lane;
  unsigned g = kiln_host_mma::groupOf(lane),
           t = kiln_host_mma::threadInGroup(lane);
  for (unsigned i = 0; i < p.n / 2; ++i) {
    unsigned row = g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
    double sum = p.accumulate ? p.d[i] : 0.0;
    for (unsigned k = 0; k < 16; ++k)
      sum += double(p.a[row][k]) * double(bAt(p, k, col));
    p.d[i] = float(sum);
  }
}

/// Issues D (this lane's N / 2 accumulators at `d`) = A * B (+ D): the
/// warp's A gathered now from its registers, B read when it lands.
template <unsigned N, bool TRANS_B, bool BF16>
inline void issue(float *d, const unsigned (&a)[4], kiln_smem_desc b,
                  int scaleD) {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma's N: 8 to 256 by 8");
  if (blockDim.x * blockDim.y * blockDim.z % 128 != 0)
    fail("a block of whole warpgroups (128 threads) issues it");
  if ((b.bits >> 62) != 0 || (b.bits >> 49 & 7u) != 0)
    fail("the emulation reads only the no-swizzle layout at base offset 0");
  Product p;
  p.d = d;
  p.n = N;
  p.b = b;
  p.transB = TRANS_B;
  p.bf16 = BF16;
  p.accumulate = scaleD != 0;
  kiln_host_mma::gatherA<BF16>(a, p.a);
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
