//===- TensorCores.cpp - tensor-core instructions as inline PTX -----------===//
//
// Operand constraints: "r" a 32-bit register, "f" a float register, "l" a
// 64-bit one; shared-memory operands are 32-bit shared-window addresses
// (__cvta_generic_to_shared), as ldmatrix and cp.async's destination take.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CUDA/TensorCores.h"

#include <cassert>
#include <cctype>

namespace kiln {

std::string cudaTensorCorePrelude() {
  return R"cuda(
// Tensor-core instructions (TensorCores.h); the host backend emulates them.
#ifndef KILN_HOST_EMULATION
__device__ __forceinline__ void kiln_mma_m16n8k16_f16(float (&d)[4], const unsigned (&a)[4],
                                                      const unsigned (&b)[2], const float (&c)[4]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
__device__ __forceinline__ void kiln_mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4],
                                                       const unsigned (&b)[2], const float (&c)[4]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
__device__ __forceinline__ void kiln_mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4],
                                                      const unsigned (&b)[2], const float (&c)[4]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
// 8-bit integers: a 32-bit sum that wraps (no .satfinite); each register
// holds four of A's or B's bytes.
__device__ __forceinline__ void kiln_mma_m16n8k32_s8(int (&d)[4], const unsigned (&a)[4],
                                                     const unsigned (&b)[2], const int (&c)[4]) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
}
// float8 E4M3FN, the 8-bit layout of .s8. sm_90 has no float8 mma.sync
// (ptxas widens its operands to f16 and adds each product's sums to C
// outside the tensor cores): widened here, exactly (every E4M3FN value is
// an f16), into two m16n8k16 f16 products chained in the f32 accumulators.
// Each register's low two bytes (k 4t, 4t + 1 of the 8-bit fragment) go to
// the first, its high two (4t + 2, 4t + 3) to the second, in A and B alike.
// Four E4M3FN bytes to f16 pairs: bytes 0 and 1 into `lo`, 2 and 3 into `hi`
// (the halves split in registers: a shift would cost an instruction each).
__device__ __forceinline__ void kiln_e4m3x4_to_f16x2(unsigned four, unsigned &lo, unsigned &hi) {
  asm("{\n  .reg .b16 l, h;\n  mov.b32 {l, h}, %2;\n"
      "  cvt.rn.f16x2.e4m3x2 %0, l;\n  cvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
      : "=r"(lo), "=r"(hi)
      : "r"(four));
}
// Two E4M3FN bytes (the low two of `two`) to an f16 pair, exactly: the low
// byte into the low half.
__device__ __forceinline__ unsigned kiln_e4m3x2_to_f16x2(unsigned two) {
  unsigned pair;
  asm("{\n  .reg .b16 l, h;\n  mov.b32 {l, h}, %1;\n  cvt.rn.f16x2.e4m3x2 %0, l;\n}\n"
      : "=r"(pair)
      : "r"(two));
  return pair;
}
__device__ __forceinline__ void kiln_mma_m16n8k32_e4m3(float (&d)[4], const unsigned (&a)[4],
                                                       const unsigned (&b)[2], const float (&c)[4]) {
  unsigned alo[4], ahi[4], blo[2], bhi[2];
  #pragma unroll
  for (int i = 0; i < 4; ++i)
    kiln_e4m3x4_to_f16x2(a[i], alo[i], ahi[i]);
  #pragma unroll
  for (int i = 0; i < 2; ++i)
    kiln_e4m3x4_to_f16x2(b[i], blo[i], bhi[i]);
  kiln_mma_m16n8k16_f16(d, alo, blo, c);
  kiln_mma_m16n8k16_f16(d, ahi, bhi, d);
}
__device__ __forceinline__ unsigned kiln_to_tf32(float x) {
  unsigned bits;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(x));
  return bits;
}
// 2^x as FlashAttention's softmax takes it (exp2f under --use_fast_math):
// one MUFU.EX2. exp2f itself is ex2.approx.f32 without .ftz, which ptxas
// wraps in a range fix-up (a compare and two multiplies) for results below
// 2^-126; a probability that small is 0 beside a softmax sum of at least 1.
__device__ __forceinline__ float kiln_exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ unsigned kiln_shared_address(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void kiln_ldmatrix_x1(unsigned (&r)[1], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0]) : "r"(kiln_shared_address(row)));
}
__device__ __forceinline__ void kiln_ldmatrix_x2(unsigned (&r)[2], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(kiln_shared_address(row)));
}
__device__ __forceinline__ void kiln_ldmatrix_x4(unsigned (&r)[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(kiln_shared_address(row)));
}
__device__ __forceinline__ void kiln_ldmatrix_x1_trans(unsigned (&r)[1], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0]) : "r"(kiln_shared_address(row)));
}
__device__ __forceinline__ void kiln_ldmatrix_x2_trans(unsigned (&r)[2], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(kiln_shared_address(row)));
}
__device__ __forceinline__ void kiln_ldmatrix_x4_trans(unsigned (&r)[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(kiln_shared_address(row)));
}
// 16 bytes to shared memory, the first srcBytes (at most 16) from global
// memory and zeros after them: a tile's edge reads nothing past the tensor.
__device__ __forceinline__ void kiln_cp_async_16(void *dst, const void *src, unsigned srcBytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :: "r"(kiln_shared_address(dst)), "l"(src), "r"(srcBytes) : "memory");
}
__device__ __forceinline__ void kiln_cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void kiln_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
// Hopper's wgmma (kiln_cuda_host_wgmma.h has the layouts). The descriptor
// of a no-swizzle operand: start, LBO and SBO, each >> 4; a swizzled one
// also has its layout in bits 62-63 (1: 128 bytes, 2: 64, 3: 32).
typedef unsigned long long kiln_smem_desc;
__device__ __forceinline__ kiln_smem_desc kiln_wgmma_desc(const void *start, unsigned lbo,
                                                          unsigned sbo) {
  return (kiln_smem_desc)((kiln_shared_address(start) & 0x3ffffu) >> 4) |
         (kiln_smem_desc)((lbo & 0x3ffffu) >> 4) << 16 |
         (kiln_smem_desc)((sbo & 0x3ffffu) >> 4) << 32;
}
__device__ __forceinline__ kiln_smem_desc kiln_wgmma_desc_swizzled(const void *start, unsigned lbo,
                                                                   unsigned sbo, unsigned swizzle) {
  const kiln_smem_desc layout = swizzle == 128 ? 1 : swizzle == 64 ? 2 : 3;
  return kiln_wgmma_desc(start, lbo, sbo) | layout << 62;
}
// Hopper's tensor copies and mbarriers (kiln_cuda_host_tma.h has their
// semantics). A tensor map is the driver's 128 opaque bytes, taken as a
// __grid_constant__ parameter; mbarriers are 8 bytes of shared memory.
struct __align__(128) kiln_tensor_map {
  unsigned long long opaque[16];
};
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void kiln_mbarrier_init(unsigned long long *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n"
               :: "r"(kiln_shared_address(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void kiln_fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void kiln_prefetch_tensor_map(const kiln_tensor_map &map) {
  asm volatile("prefetch.tensormap [%0];\n" :: "l"(&map) : "memory");
}
__device__ __forceinline__ void kiln_mbarrier_arrive(unsigned long long *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n"
               :: "r"(kiln_shared_address(bar)) : "memory");
}
__device__ __forceinline__ void kiln_mbarrier_arrive_expect_tx(unsigned long long *bar,
                                                               unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
               :: "r"(kiln_shared_address(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void kiln_mbarrier_wait(unsigned long long *bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(kiln_shared_address(bar)), "r"(parity) : "memory");
  } while (!done);
}
__device__ __forceinline__ void kiln_tma_load_2d(void *dst, const kiln_tensor_map &map, int c0,
                                                 int c1, unsigned long long *bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4}], [%2];\n"
               :: "r"(kiln_shared_address(dst)), "l"(&map), "r"(kiln_shared_address(bar)),
                  "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void kiln_tma_load_3d(void *dst, const kiln_tensor_map &map, int c0,
                                                 int c1, int c2, unsigned long long *bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];\n"
               :: "r"(kiln_shared_address(dst)), "l"(&map), "r"(kiln_shared_address(bar)),
                  "r"(c0), "r"(c1), "r"(c2) : "memory");
}
#else
// Before sm_90 there are no tensor copies: a kernel that uses them traps
// (the runtime offers such kernels only on sm_90 and later).
__device__ __forceinline__ void kiln_mbarrier_init(unsigned long long *, unsigned) { __trap(); }
__device__ __forceinline__ void kiln_fence_mbarrier_init() {}
__device__ __forceinline__ void kiln_prefetch_tensor_map(const kiln_tensor_map &) {}
__device__ __forceinline__ void kiln_mbarrier_arrive(unsigned long long *) { __trap(); }
__device__ __forceinline__ void kiln_mbarrier_arrive_expect_tx(unsigned long long *, unsigned) {
  __trap();
}
__device__ __forceinline__ void kiln_mbarrier_wait(unsigned long long *, unsigned) { __trap(); }
__device__ __forceinline__ void kiln_tma_load_2d(void *, const kiln_tensor_map &, int, int,
                                                 unsigned long long *) {
  __trap();
}
__device__ __forceinline__ void kiln_tma_load_3d(void *, const kiln_tensor_map &, int, int, int,
                                                 unsigned long long *) {
  __trap();
}
#endif
// Shared memory written by ordinary stores or cp.async, then read by
// wgmma (the async proxy): each writer fences before the barrier.
__device__ __forceinline__ void kiln_fence_proxy_async() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
__device__ __forceinline__ void kiln_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void kiln_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void kiln_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}
#else
// PTX for other targets (the artifact's portable PTX) has no wgmma: the
// same products run as mma.sync at once, each warp its 16 rows.
__device__ __forceinline__ void kiln_wgmma_fence() {}
__device__ __forceinline__ void kiln_wgmma_commit() {}
template <int N> __device__ __forceinline__ void kiln_wgmma_wait() {}
// Element (mn, k) of the operand a descriptor describes (the layouts of
// kiln_cuda_host_wgmma.h).
__device__ __forceinline__ unsigned kiln_smem_desc_at(kiln_smem_desc desc, bool mn_major,
                                                      unsigned mn, unsigned k) {
  const unsigned lbo = (unsigned)(desc >> 16 & 0x3fff) << 4,
                 sbo = (unsigned)(desc >> 32 & 0x3fff) << 4;
  const unsigned layout = (unsigned)(desc >> 62), span = layout == 0 ? 0 : 256u >> layout;
  unsigned address = (unsigned)((desc & 0x3fff) << 4);
  if (span == 0)
    address += (mn >> 3) * sbo + (k >> 3) * lbo +
               (mn_major ? (k & 7) * 16 + (mn & 7) * 2 : (mn & 7) * 16 + (k & 7) * 2);
  else if (!mn_major)
    address += (mn >> 3) * sbo + (mn & 7) * span + (k & 15) * 2;
  else
    address += mn / (span / 2) * lbo + mn % (span / 2) * 2 + (k >> 3) * sbo + (k & 7) * span;
  if (span)
    address ^= (address >> 7 & (span / 16 - 1)) << 4;
  return *(const unsigned short *)__cvta_shared_to_generic((size_t)address);
}
template <int N, bool TRANS_B, bool BF16>
__device__ __forceinline__ void kiln_wgmma_by_mma(float (&d)[N / 8][4], const unsigned (&a)[4],
                                                  kiln_smem_desc b, int scale_d) {
  const unsigned lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  #pragma unroll
  for (int n8 = 0; n8 < N / 8; ++n8) {
    const unsigned n = n8 * 8 + g;
    const unsigned bb[2] = {kiln_smem_desc_at(b, TRANS_B, n, 2 * t) |
                                kiln_smem_desc_at(b, TRANS_B, n, 2 * t + 1) << 16,
                            kiln_smem_desc_at(b, TRANS_B, n, 2 * t + 8) |
                                kiln_smem_desc_at(b, TRANS_B, n, 2 * t + 9) << 16};
    if (!scale_d)
      d[n8][0] = d[n8][1] = d[n8][2] = d[n8][3] = 0.0f;
    if (BF16)
      kiln_mma_m16n8k16_bf16(d[n8], a, bb, d[n8]);
    else
      kiln_mma_m16n8k16_f16(d[n8], a, bb, d[n8]);
  }
}
// A from shared memory: each warp reads its 16 rows as mma.m16n8k16's A.
template <int N, bool TRANS_B, bool BF16>
__device__ __forceinline__ void kiln_wgmma_ss_by_mma(float (&d)[N / 8][4], kiln_smem_desc a,
                                                     kiln_smem_desc b, int scale_d) {
  const unsigned lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const unsigned row = (threadIdx.x >> 5 & 3) * 16 + g;
  unsigned aa[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r) {
    const unsigned m = row + (r & 1) * 8, k = 2 * t + (r >> 1) * 8;
    aa[r] = kiln_smem_desc_at(a, false, m, k) | kiln_smem_desc_at(a, false, m, k + 1) << 16;
  }
  kiln_wgmma_by_mma<N, TRANS_B, BF16>(d, aa, b, scale_d);
}
// Four consecutive bytes (k to k + 3, k a multiple of 4) of row mn of the
// K-major 8-bit operand a descriptor describes.
__device__ __forceinline__ unsigned kiln_smem_desc_word_at(kiln_smem_desc desc, unsigned mn,
                                                           unsigned k) {
  const unsigned lbo = (unsigned)(desc >> 16 & 0x3fff) << 4,
                 sbo = (unsigned)(desc >> 32 & 0x3fff) << 4;
  const unsigned layout = (unsigned)(desc >> 62), span = layout == 0 ? 0 : 256u >> layout;
  unsigned address = (unsigned)((desc & 0x3fff) << 4) + (mn >> 3) * sbo;
  address += span == 0 ? (mn & 7) * 16 + (k >> 4) * lbo + (k & 15) : (mn & 7) * span + (k & 31);
  if (span)
    address ^= (address >> 7 & (span / 16 - 1)) << 4;
  return *(const unsigned *)__cvta_shared_to_generic((size_t)address);
}
// The .s32 form of 8-bit integers, .u8 or .s8 each: mma.sync's m16n8k32 of
// the same types.
template <bool A_UNSIGNED, bool B_UNSIGNED>
__device__ __forceinline__ void kiln_mma_m16n8k32_int8(int (&d)[4], const unsigned (&a)[4],
                                                       const unsigned (&b)[2]) {
#define KILN_MMA_INT8(TYPES)                                                              \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." TYPES ".s32 {%0, %1, %2, %3}, " \
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                          \
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])                           \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
  if (A_UNSIGNED && B_UNSIGNED)
    KILN_MMA_INT8("u8.u8");
  else if (A_UNSIGNED)
    KILN_MMA_INT8("u8.s8");
  else if (B_UNSIGNED)
    KILN_MMA_INT8("s8.u8");
  else
    KILN_MMA_INT8("s8.s8");
#undef KILN_MMA_INT8
}
// The m16n8k32 products the 8-bit forms fall back to.
struct kiln_mma_e4m3_op {
  __device__ __forceinline__ void operator()(float (&d)[4], const unsigned (&a)[4],
                                             const unsigned (&b)[2]) const {
    kiln_mma_m16n8k32_e4m3(d, a, b, d);
  }
};
template <bool A_UNSIGNED, bool B_UNSIGNED> struct kiln_mma_int8_op {
  __device__ __forceinline__ void operator()(int (&d)[4], const unsigned (&a)[4],
                                             const unsigned (&b)[2]) const {
    kiln_mma_m16n8k32_int8<A_UNSIGNED, B_UNSIGNED>(d, a, b);
  }
};
// An 8-bit k32 form by MMA: each warp's 16 rows of A as mma.m16n8k32's
// 8-bit A (bytes 4t.. and 16 + 4t.. of rows g and g + 8), B's column g
// likewise.
template <int N, class T, class MMA>
__device__ __forceinline__ void kiln_wgmma_8bit_ss_by_mma(T (&d)[N / 8][4], kiln_smem_desc a,
                                                          kiln_smem_desc b, int scale_d) {
  const unsigned lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const unsigned row = (threadIdx.x >> 5 & 3) * 16 + g;
  unsigned aa[4];
  #pragma unroll
  for (int r = 0; r < 4; ++r)
    aa[r] = kiln_smem_desc_word_at(a, row + (r & 1) * 8, 4 * t + (r >> 1) * 16);
  #pragma unroll
  for (int n8 = 0; n8 < N / 8; ++n8) {
    const unsigned bb[2] = {kiln_smem_desc_word_at(b, n8 * 8 + g, 4 * t),
                            kiln_smem_desc_word_at(b, n8 * 8 + g, 4 * t + 16)};
    if (!scale_d)
      d[n8][0] = d[n8][1] = d[n8][2] = d[n8][3] = T(0);
    MMA()(d[n8], aa, bb);
  }
}
#endif
// Keeps the compiler from moving in-flight accumulators (CUTLASS's
// warpgroup_fence_operand).
template <int M> __device__ __forceinline__ void kiln_wgmma_hold(float (&d)[M][4]) {
  #pragma unroll
  for (int i = 0; i < M; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
      asm volatile("" : "+f"(d[i][j]) :: "memory");
}
template <int M> __device__ __forceinline__ void kiln_wgmma_hold(int (&d)[M][4]) {
  #pragma unroll
  for (int i = 0; i < M; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
      asm volatile("" : "+r"(d[i][j]) :: "memory");
}
#endif
)cuda";
}

std::string wgmmaFunctionName(int64_t n, bool bf16, bool transB, bool aShared) {
  return "kiln_wgmma_m64n" + std::to_string(n) + "k16_" +
         (bf16 ? "bf16" : "f16") + (aShared ? "_ss" : "") +
         (transB ? "_t" : "_k");
}

std::string cudaWgmmaFunction(int64_t n, bool bf16, bool transB, bool aShared) {
  std::string name = wgmmaFunctionName(n, bf16, transB, aShared);
  std::string guard = "KILN_" + name;
  for (char &c : guard)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string type = bf16 ? "bf16" : "f16";
  std::string args = std::to_string(n) + ", " + (transB ? "true" : "false") +
                     ", " + (bf16 ? "true" : "false");
  // Operands: the n / 2 accumulators, A's four registers or its descriptor,
  // B's descriptor, then scale-d as a predicate; the scale-a, scale-b,
  // (with A in shared memory) trans-a and trans-b immediates.
  int64_t accumulators = n / 2;
  std::string dList, constraints;
  for (int64_t i = 0; i < accumulators; ++i) {
    dList += (i ? ", %" : "%") + std::to_string(i);
    constraints += std::string(i ? ", " : "") + "\"+f\"(d[" +
                   std::to_string(i / 4) + "][" + std::to_string(i % 4) + "])";
  }
  auto operand = [&](int64_t k) {
    return "%" + std::to_string(accumulators + k);
  };
  int64_t aOperands = aShared ? 1 : 4;
  std::string aList = aShared ? operand(0)
                              : "{" + operand(0) + ", " + operand(1) + ", " +
                                    operand(2) + ", " + operand(3) + "}";
  std::string instruction = "wgmma.mma_async.sync.aligned.m64n" +
                            std::to_string(n) + "k16.f32." + type + "." + type +
                            " {" + dList + "}, " + aList + ", " +
                            operand(aOperands) + ", p, 1, 1, " +
                            (aShared ? "0, " : "") + (transB ? "1" : "0") + ";";
  std::string aParam = aShared ? "kiln_smem_desc a" : "const unsigned (&a)[4]";
  std::string aInputs = aShared ? "\"l\"(a)"
                                : "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), "
                                  "\"r\"(a[3])";
  std::string text;
  text += "#ifndef " + guard + "\n#define " + guard + "\n";
  text += "__device__ __forceinline__ void " + name + "(float (&d)[" +
          std::to_string(n / 8) + "][4], " + aParam +
          ", kiln_smem_desc b, int scale_d) {\n";
  text += "#if defined(KILN_HOST_EMULATION)\n";
  text += std::string("  kiln_host_wgmma::") +
          (aShared ? "issueShared<" : "issue<") + args +
          ">(&d[0][0], a, b, scale_d);\n";
  text += "#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
  text += "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, " +
          operand(aOperands + 1) + ", 0;\\n\"\n";
  text += "               \"" + instruction + "\\n}\\n\"\n";
  text += "               : " + constraints + "\n";
  text += "               : " + aInputs + ", \"l\"(b), \"r\"(scale_d));\n";
  text += "#else\n";
  text += std::string("  ") +
          (aShared ? "kiln_wgmma_ss_by_mma<" : "kiln_wgmma_by_mma<") + args +
          ">(d, a, b, scale_d);\n";
  text += "#endif\n}\n#endif\n";
  return text;
}

namespace {

/// The guarded definition of `name`, one k32 wgmma of 8-bit operands with
/// A and B from shared memory (K-major): `accumulator` ("float" or "int")
/// d[n / 8][4]; PTX `shape` (m64n<n>k32) `types` (".f32.e4m3.e4m3") with
/// `immediates` after scale-d (float8's scale-a and scale-b; none for
/// integers); the host backend's `emulation` and the other targets'
/// `fallback`, each called with (&d[0][0] or d, a, b, scale_d).
std::string eightBitWgmmaFunction(const std::string &name, int64_t n,
                                  const std::string &accumulator,
                                  const std::string &types,
                                  const std::string &immediates,
                                  const std::string &emulation,
                                  const std::string &fallback) {
  std::string guard = "KILN_" + name;
  for (char &c : guard)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // Operands: the n / 2 accumulators, A's and B's descriptors, then scale-d
  // as a predicate (8-bit operands take no transposes).
  int64_t accumulators = n / 2;
  std::string constraint = accumulator == "float" ? "\"+f\"" : "\"+r\"";
  std::string dList, constraints;
  for (int64_t i = 0; i < accumulators; ++i) {
    dList += (i ? ", %" : "%") + std::to_string(i);
    constraints += std::string(i ? ", " : "") + constraint + "(d[" +
                   std::to_string(i / 4) + "][" + std::to_string(i % 4) + "])";
  }
  auto operand = [&](int64_t k) {
    return "%" + std::to_string(accumulators + k);
  };
  std::string instruction = "wgmma.mma_async.sync.aligned.m64n" +
                            std::to_string(n) + "k32" + types + " {" + dList +
                            "}, " + operand(0) + ", " + operand(1) + ", p" +
                            immediates + ";";
  std::string text;
  text += "#ifndef " + guard + "\n#define " + guard + "\n";
  text += "__device__ __forceinline__ void " + name + "(" + accumulator +
          " (&d)[" + std::to_string(n / 8) +
          "][4], kiln_smem_desc a, kiln_smem_desc b, int scale_d) {\n";
  text += "#if defined(KILN_HOST_EMULATION)\n";
  text += "  " + emulation + "(&d[0][0], a, b, scale_d);\n";
  text += "#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
  text += "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, " + operand(2) +
          ", 0;\\n\"\n";
  text += "               \"" + instruction + "\\n}\\n\"\n";
  text += "               : " + constraints + "\n";
  text += "               : \"l\"(a), \"l\"(b), \"r\"(scale_d));\n";
  text += "#else\n";
  text += "  " + fallback + "(d, a, b, scale_d);\n";
  text += "#endif\n}\n#endif\n";
  return text;
}

} // namespace

std::string wgmmaE4M3FunctionName(int64_t n) {
  return "kiln_wgmma_m64n" + std::to_string(n) + "k32_e4m3_ss";
}

std::string cudaWgmmaE4M3Function(int64_t n) {
  std::string size = std::to_string(n);
  return eightBitWgmmaFunction(
      wgmmaE4M3FunctionName(n), n, "float", ".f32.e4m3.e4m3", ", 1, 1",
      "kiln_host_wgmma::issueSharedE4M3<" + size + ">",
      "kiln_wgmma_8bit_ss_by_mma<" + size + ", float, kiln_mma_e4m3_op>");
}

std::string wgmmaInt8FunctionName(int64_t n, bool aUnsigned, bool bUnsigned) {
  return "kiln_wgmma_m64n" + std::to_string(n) + "k32_" +
         (aUnsigned ? "u8" : "s8") + (bUnsigned ? "u8" : "s8") + "_ss";
}

std::string cudaWgmmaInt8Function(int64_t n, bool aUnsigned, bool bUnsigned) {
  assert(
      (n == 8 || n == 16 || n == 24 || (n % 16 == 0 && n >= 32 && n <= 256)) &&
      "the integer form's N");
  std::string types = std::string(".s32") + (aUnsigned ? ".u8" : ".s8") +
                      (bUnsigned ? ".u8" : ".s8");
  std::string flags = std::string(aUnsigned ? "true" : "false") + ", " +
                      (bUnsigned ? "true" : "false");
  std::string args = std::to_string(n) + ", " + flags;
  return eightBitWgmmaFunction(
      wgmmaInt8FunctionName(n, aUnsigned, bUnsigned), n, "int", types, "",
      "kiln_host_wgmma::issueSharedInteger<" + args + ">",
      "kiln_wgmma_8bit_ss_by_mma<" + std::to_string(n) +
          ", int, kiln_mma_int8_op<" + flags + ">>");
}

} // namespace kiln
