//===- EmitPlan.h - planned kiln IR to CUDA C++ and a runtime Plan -*- C++ -*-===//
//
// The input is the output of the Kiln pipeline: every compute op is inside a
// `kiln.kernel` or is a `kiln.matmul`, and memory planning has placed every
// buffer. Each kernel becomes one `extern "C" __global__` function in one CUDA
// C++ source, each matmul a cuBLASLt step, each reshape a view.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CUDA_EMITPLAN_H
#define KILN_TARGET_CUDA_EMITPLAN_H

#include "kiln/KernelConfig/KernelConfig.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>
#include <vector>

namespace kiln {

/// For each step of a plan, the ONNX nodes (location names) of the ops it
/// computes, in program order; what `kilnc --report` prints.
using StepOrigins = std::vector<std::vector<std::string>>;

/// The weights of a plan as the constants' own bytes at their offsets in the
/// weights image (zeros between them), so that an artifact can be written
/// without a second copy of gigabytes of weights in memory. `pieces` point
/// into the constants' resource blobs (and so live as long as the module's
/// context) or into `owned`, for constants converted on the way (literals,
/// booleans). Splat constants are not weights: they become Splat buffers,
/// which the runtime fills.
struct WeightTable {
  struct Piece {
    uint64_t offset;
    llvm::ArrayRef<char> bytes;
  };
  /// In offset order, not overlapping.
  std::vector<Piece> pieces;
  std::vector<std::unique_ptr<std::vector<char>>> owned;
  /// Size of the weights image.
  uint64_t size = 0;

  /// Copies the weights image into `out`.
  void materialize(std::string &out) const;
};

/// The model hash: of the source, the splat buffers' values and the
/// weights image's `rt::weightsChecksum`; the same whether the weights are
/// held in memory or streamed to the file.
std::string modelHashOf(const rt::Artifact &artifact, uint64_t weightsChecksum);

/// Lowers `func` into `artifact`: CUDA source, kernel names, buffers and
/// steps, with the weights listed in `weights` (artifact.weights and the
/// model hash are left to the caller, which may stream the weights instead of
/// copying them). Cubin and PTX are left for the NVRTC driver. Emits an error
/// at the offending op and returns failure for anything it cannot lower.
/// When `origins` is given, it receives one entry per step; `configs`, the
/// configuration of each kernel that has one (tensor-core attention). With
/// `options.checkIndices`, every gather in a kernel checks its indices at
/// run time (artifact.indexSites); without, out-of-range indices are
/// clamped silently. With `options.allowTf32`, fp32 matmuls take TF32
/// inputs on the tensor cores (MatmulStep::tf32).
mlir::LogicalResult emitPlan(mlir::func::FuncOp func, rt::Artifact &artifact,
                             WeightTable &weights,
                             StepOrigins *origins = nullptr,
                             const CudaEmitOptions &options = {},
                             KernelConfigs *configs = nullptr);

} // namespace kiln

#endif // KILN_TARGET_CUDA_EMITPLAN_H
