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

/// Memory of device `ordinal` (in its primary context, where models run),
/// freed with the object.
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

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_DEVICECOPY_H
