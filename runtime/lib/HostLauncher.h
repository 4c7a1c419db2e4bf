//===- HostLauncher.h - Run a host-compiled kernel like a CUDA launch -*- C++ -*-===//
//
// The execution model of the host backend: the blocks of a grid run one after
// another on the calling OS thread, and the threads of a block run as fibers
// (Boost.Context) that switch only where a thread waits for its block or warp.
// Between two waits, the order in which the fibers of a block run is a
// shuffle drawn from the seed, so a kernel that lacks a barrier reads stale or
// future values under some seeds instead of passing by luck of a fixed order.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_HOSTLAUNCHER_H
#define KILN_RUNTIME_LIB_HOSTLAUNCHER_H

#include "kiln/runtime/Status.h"
#include "kiln_host_abi.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {
namespace rt {
namespace host {

/// Most threads in one block, as on every CUDA GPU.
constexpr uint32_t kMaxThreadsPerBlock = 1024;

/// One launch of one kernel.
struct Launch {
  /// The kernel's entry in its module.
  kiln_host_entry_fn entry = nullptr;
  /// The kernel's name, for diagnostics.
  std::string name;
  /// Arguments: one pointer per kernel parameter.
  void *const *args = nullptr;
  /// Grid and block dimensions; each at least 1.
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  /// Seeds the order in which fibers run between waits.
  uint64_t seed = 0;
};

/// Runs launches; owns the fiber stacks, which are reused from one launch to
/// the next. Not thread-safe: one launcher per executor.
class Launcher {
public:
  /// `stackBytes` is the stack of each emulated thread.
  explicit Launcher(size_t stackBytes);
  ~Launcher();
  Launcher(const Launcher &) = delete;
  Launcher &operator=(const Launcher &) = delete;

  /// Runs every block of `launch` to completion. Fails for a block larger
  /// than `kMaxThreadsPerBlock` and for threads that wait at barriers that
  /// cannot all be reached (a barrier in divergent code).
  Status run(const Launch &launch);

private:
  Status reserveStacks(size_t count);

  size_t stackBytes;
  /// One mapping: a guard page below each stack.
  void *stacks = nullptr;
  size_t stackCount = 0;
  size_t mappedBytes = 0;
};

} // namespace host
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_HOSTLAUNCHER_H
