//===- KernelResources.h - what ptxas gave each kernel ----------*- C++ -*-===//
//
// Registers, spills, stack and shared memory of each generated kernel, as
// ptxas reports them when NVRTC compiles the cubin, its code size in SASS
// instructions, and the occupancy they allow on sm_90: how GPU-side code
// quality is checked without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_KERNELRESOURCES_H
#define KILN_COMPILER_KERNELRESOURCES_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// One kernel's resources, from ptxas's `-v` report.
struct KernelResources {
  std::string name;
  int64_t registers = 0;
  int64_t barriers = 0;
  /// Static shared memory per block.
  int64_t sharedBytes = 0;
  /// Per-thread stack frame (local memory), spills included.
  int64_t stackBytes = 0;
  int64_t spillStoreBytes = 0;
  int64_t spillLoadBytes = 0;
  /// SASS instructions in the cubin: its code size over 16 bytes, the
  /// instruction size from sm_70 on (trailing alignment NOPs included); 0
  /// where unknown. A loop's body counts once, however often it runs.
  int64_t instructions = 0;
};

/// The kernels of a ptxas `-v` log (NVRTC's program log with
/// `--ptxas-options=-v`), in the order ptxas compiled them; fields the log
/// does not state stay 0.
std::vector<KernelResources> parsePtxasInfo(llvm::StringRef log);

/// Sets the `instructions` of `kernels` from the sizes of the cubin's
/// `.text.<name>` sections (an ELF64 little-endian image, as NVRTC writes
/// for sm_70 and later). Leaves them 0 where `cubin` is not such an image
/// or lacks the section: it reads only within `cubin`'s bytes.
void countInstructions(llvm::StringRef cubin,
                       std::vector<KernelResources> &kernels);

/// How many blocks of a kernel fit on one SM, and what limits them.
struct Occupancy {
  int64_t blocksPerSM = 0;
  /// Resident warps over the SM's maximum, in [0, 1].
  double fraction = 0;
  /// "registers", "shared memory", "threads" or "blocks".
  std::string limitedBy;
};

/// The occupancy of `kernel` launched with `threadsPerBlock` threads and
/// `dynamicSharedBytes` of dynamic shared memory (on top of its static
/// arrays) on an sm_90 SM (H100/H200): 64K registers allocated per warp in
/// units of 256, 228 KiB of shared memory (1 KiB of it reserved per block),
/// 2048 threads and 32 blocks (CUDA C Programming Guide, compute capability
/// 9.0).
Occupancy occupancyOnSm90(const KernelResources &kernel,
                          int64_t threadsPerBlock,
                          int64_t dynamicSharedBytes = 0);

} // namespace kiln

#endif // KILN_COMPILER_KERNELRESOURCES_H
