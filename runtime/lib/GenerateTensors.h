//===- GenerateTensors.h - Where a decoding loop keeps its tensors -*- C++
//-*-===//
//
// Private to the runtime: the storage of GenerateOverDims.cpp's tensors
// between steps. On a GPU every tensor of a step lives in device memory for
// the whole loop, sized once at the top of its dims' ranges: a step uploads
// the bytes of its inputs that changed (the mask's and the positions' new
// token, the sampling draw) and reads back one token id (kilnc
// --next-token) or one row of logits, while the KV caches and the logits
// never leave the device. On the host backend the same slots are host
// memory.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_GENERATETENSORS_H
#define KILN_RUNTIME_LIB_GENERATETENSORS_H

#include "kiln/runtime/DeviceCopy.h"
#include "kiln/runtime/Model.h"

#include <cstring>
#include <vector>

namespace kiln {
namespace rt {

/// One tensor's storage: host bytes or a device buffer.
class TensorSlot {
public:
  /// Storage of `bytes` in `memory` (device `ordinal`'s when Device),
  /// zeroed.
  Status allocate(Memory memory, size_t bytes, int ordinal) {
    this->memory = memory;
    this->ordinal = ordinal;
    written.clear();
    if (memory == Memory::Host) {
      host.assign(bytes, 0);
      return Status::ok();
    }
    if (Status s = device.allocate(bytes, ordinal); !s.isOk())
      return s;
    std::vector<char> zeros(bytes, 0);
    return upload(zeros);
  }
  void *data() { return memory == Memory::Host ? host.data() : device.data(); }
  size_t size() const {
    return memory == Memory::Host ? host.size() : device.size();
  }
  /// Writes `bytes` at the start of the slot (at most its size).
  Status upload(const std::vector<char> &bytes) {
    return copyMemory(data(), memory, bytes.data(), Memory::Host,
                      std::min(bytes.size(), size()), ordinal);
  }
  /// Queues on `queue` the writes that make the slot's first bytes
  /// `bytes`: only the span where they differ from what the slot's updates
  /// wrote before (a step's mask and positions grow by a token; the
  /// sampling inputs stay), so a decoding step uploads a few bytes.
  Status update(const std::vector<char> &bytes, DeviceQueue &queue) {
    size_t size = std::min(bytes.size(), this->size());
    written.resize(std::max(written.size(), size));
    size_t first = 0, last = size;
    while (first < size && bytes[first] == written[first])
      ++first;
    while (last > first && bytes[last - 1] == written[last - 1])
      --last;
    if (first == last)
      return Status::ok();
    std::memcpy(written.data() + first, bytes.data() + first, last - first);
    return queue.copy(static_cast<char *>(data()) + first,
                      written.data() + first, Memory::Host, last - first);
  }
  /// Reads `bytes` from `offset` into `dst`.
  Status download(size_t offset, size_t bytes, void *dst) {
    return copyMemory(dst, Memory::Host, static_cast<char *>(data()) + offset,
                      memory, bytes, ordinal);
  }

private:
  Memory memory = Memory::Host;
  int ordinal = 0;
  std::vector<char> host;
  DeviceBuffer device;
  /// What `update` wrote; the slot starts zeroed.
  std::vector<char> written;
};

/// The memory a loop over `model` keeps its tensors in.
inline Memory loopMemory(const Model &model) {
  return model.backend() == Backend::Cuda ? Memory::Device : Memory::Host;
}

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_GENERATETENSORS_H
