//===- KernelEmitter.h - one kiln.kernel to one CUDA function ---*- C++ -*-===//

#ifndef KILN_LIB_TARGET_CUDA_KERNELEMITTER_H
#define KILN_LIB_TARGET_CUDA_KERNELEMITTER_H

#include "kiln/Dialect/Kiln/DimExpr.h"
#include "kiln/Dialect/Kiln/KilnOps.h"

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
};

/// The helpers every generated source starts with (block reductions), and
/// the fp16/bf16 headers when the source uses those types.
std::string cudaPrelude(bool needsHalfTypes);

/// Appends the CUDA function `name` computing `kernel` to `os`. Its parameters
/// are one pointer per kernel input, then one per result. Emits an error at
/// the kernel and returns failure for bodies it cannot generate.
mlir::FailureOr<LaunchGeometry> emitKernel(KernelOp kernel,
                                           llvm::StringRef name,
                                           llvm::raw_ostream &os);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_KERNELEMITTER_H
