//===- ArenaPlanner.cpp - greedy-by-size arena placement ------------------===//

#include "kiln/Analysis/ArenaPlanner.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace kiln {

uint64_t alignTo(uint64_t bytes, uint64_t alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

/// The peak of the sum of live aligned sizes over all steps, by a sweep over
/// interval end points.
static uint64_t liveLowerBound(llvm::ArrayRef<BufferInterval> buffers,
                               uint64_t alignment) {
  // Sizes enter at start and leave after end; std::map keeps steps sorted.
  std::map<int64_t, int64_t> delta;
  for (const BufferInterval &b : buffers) {
    int64_t size = static_cast<int64_t>(alignTo(b.bytes, alignment));
    delta[b.start] += size;
    delta[b.end + 1] -= size;
  }
  int64_t live = 0, peak = 0;
  for (auto &[step, change] : delta) {
    live += change;
    peak = std::max(peak, live);
  }
  return static_cast<uint64_t>(peak);
}

ArenaPlan planArena(llvm::ArrayRef<BufferInterval> buffers,
                    uint64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  plan.liveLowerBound = liveLowerBound(buffers, alignment);

  // Largest first: big buffers are hardest to fit into gaps later. Ties go
  // by earlier start so the result does not depend on sort instability.
  llvm::SmallVector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].start < buffers[b].start;
  });

  llvm::SmallVector<size_t> placed;
  for (size_t index : order) {
    const BufferInterval &buffer = buffers[index];
    uint64_t size = alignTo(buffer.bytes, alignment);
    // The placed buffers that are live at the same time, by offset.
    llvm::SmallVector<size_t> conflicts;
    for (size_t other : placed)
      if (buffers[other].start <= buffer.end &&
          buffer.start <= buffers[other].end)
        conflicts.push_back(other);
    llvm::sort(conflicts, [&](size_t a, size_t b) {
      return plan.offsets[a] < plan.offsets[b];
    });
    // First fit: walk the conflicts by offset and take the first gap.
    uint64_t offset = 0;
    for (size_t other : conflicts) {
      uint64_t otherEnd =
          plan.offsets[other] + alignTo(buffers[other].bytes, alignment);
      if (plan.offsets[other] >= offset + size)
        break;
      offset = std::max(offset, otherEnd);
    }
    plan.offsets[index] = offset;
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
    placed.push_back(index);
  }
  return plan;
}

} // namespace kiln
