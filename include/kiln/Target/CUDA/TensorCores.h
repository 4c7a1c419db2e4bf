//===- TensorCores.h - Tensor-core instructions in kernels ------*- C++ -*-===//
//
// The functions through which generated kernels issue tensor-core
// instructions: `kiln_mma_m16n8k16_f16` / `_bf16` (mma.sync.aligned
// .m16n8k16.row.col, f32 accumulators), `kiln_mma_m16n8k8_tf32` (its
// .tf32 m16n8k8 form) with `kiln_to_tf32` (cvt.rna.tf32.f32),
// `kiln_ldmatrix_x1|x2|x4[_trans]`
// (ldmatrix.sync.aligned.m8n8 .b16 from shared memory) and
// `kiln_cp_async_16`, `kiln_cp_async_commit`, `kiln_cp_async_wait<N>`
// (cp.async.cg of 16 bytes with zero fill, and its groups), and the
// softmax's `kiln_exp2_ftz` (ex2.approx.ftz.f32). On the GPU they
// are inline PTX (sm_80 and later); the host backend defines the same names
// as warp-collective emulations with the PTX ISA's fragment layouts
// (runtime/host/kiln_cuda_host_mma.h), so a kernel checked on the host
// issues on the GPU what it was checked with.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CUDA_TENSORCORES_H
#define KILN_TARGET_CUDA_TENSORCORES_H

#include <string>

namespace kiln {

/// CUDA source defining the functions above as inline PTX, for a generated
/// source that uses them (after the prelude). Empty of code on the host
/// backend, whose emulation header defines them.
std::string cudaTensorCorePrelude();

} // namespace kiln

#endif // KILN_TARGET_CUDA_TENSORCORES_H
