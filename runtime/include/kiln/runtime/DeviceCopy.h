//===- DeviceCopy.h - Device memory and copies for programs -----*- C++ -*-===//
//
// For programs that keep tensors on the GPU between runs of a Kiln model (a
// generate loop's KV cache) or receive them in either kind of memory (a
// Triton backend gathering requests into one batch): device buffers and
// copies through the CUDA driver the runtime already opens, without the
// program linking CUDA itself.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_DEVICECOPY_H
#define KILN_RUNTIME_DEVICECOPY_H

#include "kiln/runtime/Model.h"
#include "kiln/runtime/Status.h"

#include <array>
#include <cstddef>
#include <utility>

namespace kiln {
namespace rt {

/// Copies `bytes` from `src` to `dst` and waits for the copy. Each is host
/// memory or memory of device `ordinal` (a `CUdeviceptr` cast to a pointer),
/// as `srcMemory` and `dstMemory` say; a copy between host buffers needs no
/// driver. Fails with the driver's message (`NoDevice` without one).
Status copyMemory(void *dst, Memory dstMemory, const void *src,
                  Memory srcMemory, size_t bytes, int ordinal);

/// Memory of device `ordinal` (in its primary context, where models run,
/// which it keeps from being reset while it holds the memory), freed with
/// the object.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  /// Allocates `bytes` (at least 1) on device `ordinal`, replacing what
  /// the buffer held. Fails with the driver's message (`NoDevice` without
  /// one).
  Status allocate(size_t bytes, int ordinal);
  /// The memory, as a `CUdeviceptr` cast to a pointer; null when empty.
  void *data() const { return pointer; }
  size_t size() const { return bytes; }

private:
  void release();

  void *pointer = nullptr;
  size_t bytes = 0;
  int ordinal = 0;
};

/// An order of copies and model runs (`Model::enqueue`) on a stream of
/// device `ordinal`'s primary context, or on the calling thread for host
/// memory, with small reads that the program waits for one at a time. A
/// decoding loop queues its next step before it reads the token the last
/// one chose, so the GPU never waits for the host between steps.
class DeviceQueue {
public:
  /// The most bytes a read takes, and the reads that may be in flight.
  static constexpr size_t kReadBytes = 64;
  static constexpr unsigned kReadSlots = 4;

  DeviceQueue() = default;
  ~DeviceQueue() { release(); }
  DeviceQueue(const DeviceQueue &) = delete;
  DeviceQueue &operator=(const DeviceQueue &) = delete;

  /// Starts a queue over `memory`; for device memory, a stream of device
  /// `ordinal`'s primary context and page-locked memory for the reads.
  /// Fails with the driver's message (`NoDevice` without one).
  Status create(Memory memory, int ordinal);
  /// The stream to give `Model::enqueue` (a `CUstream`; null for host
  /// memory).
  void *stream() const { return cuStream; }
  /// Queues a copy of `bytes` from `src` (host memory, or the queue's) to
  /// `dst` (the queue's memory). Host bytes are taken before the call
  /// returns.
  Status copy(void *dst, const void *src, Memory srcMemory, size_t bytes);
  /// Queues the read of `bytes` (at most kReadBytes) at `src`, in the
  /// queue's memory, into read slot `slot` (below kReadSlots): the bytes as
  /// the work queued before it leaves them.
  Status queueRead(unsigned slot, const void *src, size_t bytes);
  /// Waits for slot `slot`'s read, and so for the work queued before it,
  /// and copies its `bytes` to `dst`.
  Status takeRead(unsigned slot, void *dst, size_t bytes);
  /// Waits for everything queued.
  Status synchronize();

private:
  void release();

  Memory memory = Memory::Host;
  int ordinal = 0;
  /// The CUstream, CUcontext (retained), page-locked read slots and one
  /// CUevent a slot, for device memory.
  void *cuStream = nullptr;
  void *context = nullptr;
  void *pinned = nullptr;
  std::array<void *, kReadSlots> readDone{};
  /// The read slots for host memory.
  std::array<std::array<char, kReadBytes>, kReadSlots> hostReads{};
};

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_DEVICECOPY_H
