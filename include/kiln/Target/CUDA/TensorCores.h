//===- TensorCores.h - Tensor-core instructions in kernels ------*- C++ -*-===//
//
// The functions through which generated kernels issue tensor-core
// instructions: `kiln_mma_m16n8k16_f16` / `_bf16` (mma.sync.aligned
// .m16n8k16.row.col, f32 accumulators), `kiln_mma_m16n8k8_tf32` (its
// .tf32 m16n8k8 form) with `kiln_to_tf32` (cvt.rna.tf32.f32),
// `kiln_mma_m16n8k32_s8` (.s8 m16n8k32, s32 accumulators),
// `kiln_ldmatrix_x1|x2|x4[_trans]`
// (ldmatrix.sync.aligned.m8n8 .b16 from shared memory) and
// `kiln_cp_async_16`, `kiln_cp_async_commit`, `kiln_cp_async_wait<N>`
// (cp.async.cg of 16 bytes with zero fill, and its groups), and the
// softmax's `kiln_exp2_ftz` (ex2.approx.ftz.f32); for Hopper,
// `kiln_wgmma_desc` (a no-swizzle shared-memory matrix descriptor) and
// `kiln_wgmma_desc_swizzled`,
// `kiln_wgmma_fence`, `kiln_wgmma_commit`, `kiln_wgmma_wait<N>`,
// `kiln_wgmma_hold` and `kiln_fence_proxy_async`, with the per-shape
// functions cudaWgmmaFunction defines; Hopper's tensor copies
// (`kiln_tma_load_2d|3d` of a `kiln_tensor_map`) and mbarriers
// (`kiln_mbarrier_init`, `kiln_fence_mbarrier_init`, `kiln_mbarrier_arrive`,
// `kiln_mbarrier_arrive_expect_tx`, `kiln_mbarrier_wait`,
// `kiln_prefetch_tensor_map`). On the GPU they
// are inline PTX (sm_80 and later); the host backend defines the same names
// as warp-collective emulations with the PTX ISA's fragment layouts
// (runtime/host/kiln_cuda_host_mma.h), so a kernel checked on the host
// issues on the GPU what it was checked with.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CUDA_TENSORCORES_H
#define KILN_TARGET_CUDA_TENSORCORES_H

#include <cstdint>
#include <string>

namespace kiln {

/// CUDA source defining the functions above as inline PTX, for a generated
/// source that uses them (after the prelude). Empty of code on the host
/// backend, whose emulation header defines them.
std::string cudaTensorCorePrelude();

/// The name of the function issuing one `wgmma.mma_async.sync.aligned
/// .m64n<n>k16.f32` with f16 or bf16 A from registers and B from shared
/// memory, K-major or (`transB`) MN-major: `kiln_wgmma_m64n<n>k16_<f16|bf16>
/// _<k|t>(float (&d)[n / 8][4], const unsigned (&a)[4], kiln_smem_desc b,
/// int scale_d)`; with `aShared`, A (K-major) from shared memory too:
/// `kiln_wgmma_m64n<n>k16_<f16|bf16>_ss_<k|t>(float (&d)[n / 8][4],
/// kiln_smem_desc a, kiln_smem_desc b, int scale_d)`.
std::string wgmmaFunctionName(int64_t n, bool bf16, bool transB,
                              bool aShared = false);

/// Its definition, guarded so that a source may hold it more than once:
/// inline PTX on sm_90a, the host backend's emulation
/// (runtime/host/kiln_cuda_host_wgmma.h), mma.sync for other targets.
std::string cudaWgmmaFunction(int64_t n, bool bf16, bool transB,
                              bool aShared = false);

/// The name of the function issuing one `wgmma.mma_async.sync.aligned
/// .m64n<n>k32.f32.e4m3.e4m3`, A and B float8 E4M3FN from shared memory,
/// both K-major (the only layout of 8-bit operands):
/// `kiln_wgmma_m64n<n>k32_e4m3_ss(float (&d)[n / 8][4], kiln_smem_desc a,
/// kiln_smem_desc b, int scale_d)`.
std::string wgmmaE4M3FunctionName(int64_t n);

/// Its definition, guarded as cudaWgmmaFunction's: inline PTX on sm_90a,
/// the host backend's emulation, mma.sync (widened to f16) for other
/// targets.
std::string cudaWgmmaE4M3Function(int64_t n);

/// The name of the function issuing one `wgmma.mma_async.sync.aligned
/// .m64n<n>k32.s32` of 8-bit integers (A .u8 where `aUnsigned`, else .s8;
/// B likewise), both from shared memory, K-major:
/// `kiln_wgmma_m64n<n>k32_<u8|s8><u8|s8>_ss(int (&d)[n / 8][4],
/// kiln_smem_desc a, kiln_smem_desc b, int scale_d)`. `n` is one of the
/// integer form's: 8 to 32 by 8, then 48 to 256 by 16.
std::string wgmmaInt8FunctionName(int64_t n, bool aUnsigned, bool bUnsigned);

/// Its definition, guarded as cudaWgmmaFunction's: inline PTX on sm_90a,
/// the host backend's emulation, mma.sync of the same types for other
/// targets.
std::string cudaWgmmaInt8Function(int64_t n, bool aUnsigned, bool bUnsigned);

} // namespace kiln

#endif // KILN_TARGET_CUDA_TENSORCORES_H
