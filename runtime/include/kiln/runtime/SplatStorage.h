//===- SplatStorage.h - Where the runtime keeps splat buffers ---*- C++ -*-===//
//
// A `Splat` buffer stores no bytes in the artifact; each executor allocates
// its storage at load and fills it with the one value. Buffers of the same
// element bytes share one slot as large as the largest of them (they are
// read-only, so sharing cannot be observed); the host backend's checking
// mode asks for a slot per size instead, so that AddressSanitizer sees each
// buffer's exact end.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SPLATSTORAGE_H
#define KILN_RUNTIME_SPLATSTORAGE_H

#include "kiln/runtime/ArtifactFormat.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {
namespace rt {

struct SplatSlots {
  struct Slot {
    /// The element's bytes, least significant first, and how many.
    uint64_t value = 0;
    unsigned width = 0;
    /// Size of the storage: the largest buffer the slot serves.
    uint64_t bytes = 0;
  };
  std::vector<Slot> slots;
  /// The slot of each buffer id; SIZE_MAX for buffers that are not splats.
  std::vector<size_t> slotOf;
};

/// Assigns the splat buffers of a validated `artifact` to slots.
SplatSlots planSplatSlots(const Artifact &artifact, bool slotPerSize);

/// Writes `slot.value` into the slot's storage at `dst`, `slot.bytes` bytes.
void fillSplat(const SplatSlots::Slot &slot, char *dst);

/// Writes into `block` (at most `maxBytes` bytes, at least one element) the
/// slot's value repeated; its size is a multiple of the element's size.
void fillSplatBlock(const SplatSlots::Slot &slot, size_t maxBytes,
                    std::vector<char> &block);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_SPLATSTORAGE_H
