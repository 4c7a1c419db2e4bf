//===- Nvrtc.h - CUDA C++ to cubin and PTX, cached on disk ------*- C++ -*-===//

#ifndef KILN_COMPILER_NVRTC_H
#define KILN_COMPILER_NVRTC_H

#include "kiln/Compiler/KernelResources.h"
#include "mlir/IR/Location.h"

#include <string>
#include <vector>

namespace kiln {

/// What NVRTC produced for one source.
struct CompiledCuda {
  std::string cubin;
  std::string ptx;
  /// Each kernel's registers, spills and shared memory in the cubin.
  std::vector<KernelResources> resources;
};

/// Compiles `source` for `arch` (e.g. "sm_90a") to a cubin, and for the
/// matching virtual architecture to PTX so that newer GPUs can JIT it. Results
/// are cached in rt::cacheDirectory() by a hash of source, options and NVRTC
/// version; a corrupt cache entry is rebuilt. On failure the error at `loc`
/// carries the NVRTC log.
mlir::FailureOr<CompiledCuda> compileCuda(mlir::Location loc,
                                          llvm::StringRef source,
                                          llvm::StringRef arch);

} // namespace kiln

#endif // KILN_COMPILER_NVRTC_H
