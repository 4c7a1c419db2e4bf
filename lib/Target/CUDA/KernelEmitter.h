//===- KernelEmitter.h - one kiln.kernel to one CUDA function ---*- C++ -*-===//

#ifndef KILN_LIB_TARGET_CUDA_KERNELEMITTER_H
#define KILN_LIB_TARGET_CUDA_KERNELEMITTER_H

#include "kiln/Dialect/Kiln/DimExpr.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/KernelConfig/KernelConfig.h"

#include <array>
#include <optional>
#include <string>

namespace kiln {

/// A grid dim that follows from symbolic dims: clamp(ceil(elements /
/// perBlock), 1, highest) blocks.
struct SymbolicGridDim {
  DimExpr elements;
  int64_t perBlock = 1;
  int64_t highest = 1;
};

/// The launch geometry a kernel was generated for. With symbolic dims,
/// `grid` is the grid at the top of their ranges and `symbolicGrid` says
/// how each grid dim that varies follows from them.
struct LaunchGeometry {
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t sharedBytes = 0;
  std::array<std::optional<SymbolicGridDim>, 3> symbolicGrid;
  /// The layout a tensor-core attention kernel was emitted with, for the
  /// plan and the report.
  std::optional<AttentionConfig> attention;
  /// A split reduction's partial results at the top of the dims' ranges,
  /// in 8-byte elements of scratch memory, passed after the results; 0 for
  /// other kernels.
  int64_t splitPartials = 0;
};

/// The helpers every generated source starts with (block reductions), the
/// fp16/bf16 headers when the source uses those types, and the tensor-core
/// instructions (TensorCores.h) when its kernels may issue them.
std::string cudaPrelude(bool needsHalfTypes, bool needsTensorCores);

/// Appends the CUDA function `name` computing `kernel` to `os`. Its parameters
/// are one pointer per kernel input, then one per result. Emits an error at
/// the kernel and returns failure for bodies it cannot generate. `options`
/// are kiln-to-cuda's: with allowTf32 (kilnc --allow-tf32), fp32 attention
/// runs on the tensor cores with TF32 inputs; the attention overrides
/// reach chooseAttentionConfig.
mlir::FailureOr<LaunchGeometry> emitKernel(KernelOp kernel,
                                           llvm::StringRef name,
                                           llvm::raw_ostream &os,
                                           const CudaEmitOptions &options);

/// Appends `kernel`'s cache update (an elementwise kernel yielding
/// kiln.update_slice results that write alike) as a device function `name`
/// of the kernel's parameters, the dim parameters it reads (`dims`, in the
/// model's order), then its first thread and its threads (`long long
/// first_thread, long long threads`): the loop a GEMM's last block runs
/// after its product (#kiln.gemm_epilogue's cache_update), input 0 that
/// product, read through L2.
mlir::LogicalResult
emitCacheUpdateRows(KernelOp kernel, llvm::StringRef name,
                    llvm::raw_ostream &os,
                    llvm::SmallVectorImpl<std::string> &dims);

/// Flash-decoding of an attention kernel (AttentionSplitEmitter.cpp): a
/// kernel whose blocks split the keys, storing partial results in scratch
/// memory, the last split of each tile of query rows merging them into the
/// result.
struct SplitAttention {
  /// The split kernel takes the attention kernel's inputs, then the
  /// scratch, then the result.
  std::string splitName;
  LaunchGeometry split;
  /// f32 elements of scratch at the top of the dims' ranges.
  int64_t scratchElements = 0;
  /// Set when the query length decides at run time: the split runs while
  /// `queries` is at most `mostQueries`, the whole kernel (emitKernel)
  /// otherwise. Unset, the split always runs.
  std::optional<DimExpr> queries;
  int64_t mostQueries = 0;
};

/// Appends the split kernel of attention kernel `kernel` (with its
/// counters and the merge its last blocks run) to `os`, named after `name`;
/// nothing when `kernel` is not attention or its keys are not worth splitting
/// (too few, or too many query rows). Emits an error at the kernel and returns
/// failure for one it cannot generate.
std::optional<mlir::FailureOr<SplitAttention>>
emitSplitAttention(KernelOp kernel, llvm::StringRef name, llvm::raw_ostream &os,
                   const CudaEmitOptions &options);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_KERNELEMITTER_H
