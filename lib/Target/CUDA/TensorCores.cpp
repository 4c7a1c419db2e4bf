//===- TensorCores.cpp - tensor-core instructions as inline PTX -----------===//
//
// Operand constraints: "r" a 32-bit register, "f" a float register, "l" a
// 64-bit one; shared-memory operands are 32-bit shared-window addresses
// (__cvta_generic_to_shared), as ldmatrix and cp.async's destination take.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CUDA/TensorCores.h"

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
#endif
)cuda";
}

} // namespace kiln
