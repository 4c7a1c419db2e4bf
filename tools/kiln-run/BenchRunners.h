//===- BenchRunners.h - what kiln-run --bench times -------------*- C++ -*-===//
//
// The runs --bench times (BenchMode.h times them): a `.so` through its C
// ABI or a model in process, one execution context per --threads, and the
// GPU's own view of a run on the CUDA backend.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_BENCHRUNNERS_H
#define KILN_TOOLS_KILN_RUN_BENCHRUNNERS_H

#include "kiln/ConstantData/HostTensor.h"
#include "kiln/kiln_model.h"
#include "kiln/runtime/Model.h"

namespace kilnrun {

/// --bench on a `.so` (`lib`, loaded, with `model` made): the model's own
/// runs, or with --threads N one execution context per thread
/// (kiln_context_*). Each function here runs a model with symbolic dims at
/// `dims` (the values its inputs' shapes give; empty for a static model).
bool benchLibrary(void *lib, kiln_model *model,
                  const std::vector<int64_t> &dims,
                  const llvm::SmallVector<const void *> &in,
                  const llvm::SmallVector<kiln::HostTensor> &outputs);

/// --bench in process: the model's own runs, or with --threads N one
/// execution context per thread.
bool benchModel(kiln::rt::Model &model, const std::vector<int64_t> &dims,
                const llvm::SmallVector<const void *> &in,
                const llvm::SmallVector<kiln::HostTensor> &outputs);

/// --bench on the CUDA backend, one thread: the GPU's view of a run
/// (device-memory I/O, CUDA events around each run); `outputs` receive the
/// last timed run's outputs, so that what --output-dir writes (and bench/
/// checks) is what was timed. A KV cache kept in place is one device buffer
/// for its past and present, as a decoding loop passes it. Does nothing on
/// the host backend, whose wall-clock line is all there is.
bool benchDevice(kiln::rt::Model &model, const std::vector<int64_t> &dims,
                 const llvm::SmallVector<const void *> &in,
                 llvm::SmallVector<kiln::HostTensor> &outputs);

/// benchDevice for a `.so` that ran on the CUDA backend: its artifact
/// loaded in process (the same plan and kernels), since the C ABI has no
/// timing call of its own.
bool benchLibraryDevice(const std::vector<int64_t> &dims,
                        const llvm::SmallVector<const void *> &in,
                        llvm::SmallVector<kiln::HostTensor> &outputs);

} // namespace kilnrun

#endif // KILN_TOOLS_KILN_RUN_BENCHRUNNERS_H
