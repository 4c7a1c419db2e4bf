//===- HostModule.h - Generated CUDA compiled for the host ------*- C++ -*-===//
//
// The host backend compiles an artifact's CUDA source, unchanged, with the
// system C++ compiler against kiln_cuda_host.h into a shared library (a
// kernel module) and loads it. Modules are cached on disk, keyed by the
// source, the headers, the compiler and its flags, like NVRTC output.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_HOSTMODULE_H
#define KILN_RUNTIME_LIB_HOSTMODULE_H

#include "kiln/runtime/ArtifactFormat.h"
#include "kiln/runtime/Status.h"
#include "kiln_host_abi.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace rt {
namespace host {

/// A loaded kernel module: one entry point per kernel of the artifact.
class KernelModule {
public:
  ~KernelModule();
  KernelModule(const KernelModule &) = delete;
  KernelModule &operator=(const KernelModule &) = delete;

  /// Entry point of kernel `index` (an index into `Artifact::kernelNames`).
  kiln_host_entry_fn entry(size_t index) const { return entries[index]; }
  /// Number of pointer parameters of kernel `index`.
  unsigned arity(size_t index) const { return arities[index]; }
  /// The calling thread's instance of the kernels' run-time index check flag
  /// (`kiln_index_error`, one per thread), or null when the artifact has no
  /// index checks.
  unsigned *indexError() const {
    return indexErrorFlag ? indexErrorFlag() : nullptr;
  }

private:
  friend Status loadKernelModule(const Artifact &, bool,
                                 std::unique_ptr<KernelModule> &);
  KernelModule() = default;

  void *handle = nullptr;
  std::vector<kiln_host_entry_fn> entries;
  std::vector<unsigned> arities;
  unsigned *(*indexErrorFlag)(void) = nullptr;
};

/// Compiles (or finds in the cache) and loads the kernels of `artifact`.
/// With `checking`, the kernels are built with AddressSanitizer, which must
/// already be in the process. Environment: KILN_HOST_CXX names the compiler
/// (default: $CXX, then c++, g++, clang++ on PATH); KILN_CACHE_DIR (default
/// $XDG_CACHE_HOME/kiln or ~/.cache/kiln) holds the cache.
Status loadKernelModule(const Artifact &artifact, bool checking,
                        std::unique_ptr<KernelModule> &out);

/// Whether AddressSanitizer's runtime is loaded in this process.
bool addressSanitizerLoaded();

} // namespace host
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_HOSTMODULE_H
