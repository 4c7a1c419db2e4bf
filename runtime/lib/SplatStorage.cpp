//===- SplatStorage.cpp - Where the runtime keeps splat buffers -----------===//

#include "kiln/runtime/SplatStorage.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

using namespace kiln::rt;

SplatSlots kiln::rt::planSplatSlots(const Artifact &artifact,
                                    bool slotPerSize) {
  SplatSlots plan;
  plan.slotOf.assign(artifact.buffers.size(), SIZE_MAX);
  std::map<std::tuple<uint64_t, unsigned, uint64_t>, size_t> slotOfKey;
  for (size_t id = 0; id < artifact.buffers.size(); ++id) {
    const Buffer &b = artifact.buffers[id];
    if (b.kind != BufferKind::Splat)
      continue;
    unsigned width = static_cast<unsigned>(dtypeSize(b.dtype));
    auto key = std::make_tuple(b.offset, width, slotPerSize ? b.bytes : 0);
    auto [it, inserted] = slotOfKey.insert({key, plan.slots.size()});
    if (inserted)
      plan.slots.push_back({b.offset, width, 0});
    SplatSlots::Slot &slot = plan.slots[it->second];
    slot.bytes = std::max(slot.bytes, b.bytes);
    plan.slotOf[id] = it->second;
  }
  return plan;
}

void kiln::rt::fillSplat(const SplatSlots::Slot &slot, char *dst) {
  if (slot.bytes == 0)
    return;
  // The element once (little-endian, as the artifact stores it), then the
  // filled prefix doubled until the slot is full.
  for (unsigned i = 0; i < slot.width; ++i)
    dst[i] = static_cast<char>(slot.value >> (8 * i));
  for (uint64_t filled = slot.width; filled < slot.bytes;) {
    uint64_t take = std::min(filled, slot.bytes - filled);
    std::memcpy(dst + filled, dst, take);
    filled += take;
  }
}

void kiln::rt::fillSplatBlock(const SplatSlots::Slot &slot, size_t maxBytes,
                              std::vector<char> &block) {
  uint64_t bytes = std::min<uint64_t>(slot.bytes, maxBytes);
  bytes = std::max<uint64_t>(bytes / slot.width * slot.width, slot.width);
  block.resize(bytes);
  SplatSlots::Slot prefix = slot;
  prefix.bytes = bytes;
  fillSplat(prefix, block.data());
}
