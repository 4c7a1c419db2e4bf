//===- ArenaPlanner.h - place buffers with live intervals in one arena ----===//
//
// The IR-free core of memory planning, so that it can be property-tested on
// random inputs: given each buffer's size and live interval, choose offsets in
// one arena such that no two buffers live at the same time overlap.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ANALYSIS_ARENAPLANNER_H
#define KILN_ANALYSIS_ARENAPLANNER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace kiln {

/// One buffer to place: live from step `start` to step `end`, both inclusive.
struct BufferInterval {
  int64_t start = 0;
  int64_t end = 0;
  uint64_t bytes = 0;
};

/// Where each buffer went and how big the arena is.
struct ArenaPlan {
  /// Byte offset of each buffer, in input order; a multiple of the alignment.
  llvm::SmallVector<uint64_t> offsets;
  /// Bytes the arena needs (the highest end of any placed buffer).
  uint64_t arenaBytes = 0;
  /// The largest sum of aligned sizes of buffers live at one step: no plan can
  /// use less.
  uint64_t liveLowerBound = 0;
};

/// Rounds `bytes` up to a multiple of `alignment` (a power of two).
uint64_t alignTo(uint64_t bytes, uint64_t alignment);

/// Places buffers greedily, largest first, each at the lowest aligned offset
/// that overlaps no already placed buffer whose interval intersects its own.
/// `alignment` must be a power of two.
ArenaPlan planArena(llvm::ArrayRef<BufferInterval> buffers,
                    uint64_t alignment);

} // namespace kiln

#endif // KILN_ANALYSIS_ARENAPLANNER_H
