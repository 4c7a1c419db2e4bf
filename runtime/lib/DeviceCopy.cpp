//===- DeviceCopy.cpp - Copies between host and device memory -------------===//

#include "kiln/runtime/DeviceCopy.h"

#include "CudaDriver.h"
#include "CudaScopes.h"

#include <cstring>
#include <utility>

using namespace kiln::rt;
using namespace kiln::rt::detail;

namespace {

/// Retains device `ordinal`'s primary context, where models run; the
/// caller releases it (cuDevicePrimaryCtxRelease of `device`).
Status retainPrimaryContext(int ordinal, const cu::DriverApi *&api,
                            cu::Device &device, cu::Context &context) {
  if (Status s = cu::loadCudaDriver(api); !s.isOk())
    return s;
  if (cu::Result r = api->deviceGet(&device, ordinal); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuDeviceGet");
  if (cu::Result r = api->primaryCtxRetain(&context, device); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuDevicePrimaryCtxRetain");
  return Status::ok();
}

/// Runs `body` with device `ordinal`'s primary context current; its
/// driver result, or the setup's, named.
template <class Body>
Status inPrimaryContext(int ordinal, const char *what, Body body) {
  const cu::DriverApi *api = nullptr;
  cu::Device device = 0;
  cu::Context context = nullptr;
  if (Status s = retainPrimaryContext(ordinal, api, device, context); !s.isOk())
    return s;
  Status status;
  {
    ContextScope scope(*api, context);
    cu::Result r = scope.result;
    if (r == cu::kSuccess)
      r = body(*api);
    else
      what = "cuCtxPushCurrent";
    if (r != cu::kSuccess)
      status = cu::cudaError(*api, r, what);
  }
  api->primaryCtxRelease(device);
  return status;
}

} // namespace

Status kiln::rt::copyMemory(void *dst, Memory dstMemory, const void *src,
                            Memory srcMemory, size_t bytes, int ordinal) {
  if (bytes == 0)
    return Status::ok();
  if (dstMemory == Memory::Host && srcMemory == Memory::Host) {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  cu::DevicePtr from = reinterpret_cast<cu::DevicePtr>(src);
  cu::DevicePtr to = reinterpret_cast<cu::DevicePtr>(dst);
  const char *what = dstMemory == Memory::Host   ? "cuMemcpyDtoHAsync"
                     : srcMemory == Memory::Host ? "cuMemcpyHtoDAsync"
                                                 : "cuMemcpyDtoDAsync";
  // The primary context, as the models' executors use: the memory Triton
  // and the models hand over lives there.
  return inPrimaryContext(ordinal, what, [&](const cu::DriverApi &api) {
    cu::Result r = dstMemory == Memory::Host
                       ? api.memcpyDtoHAsync(dst, from, bytes, nullptr)
                   : srcMemory == Memory::Host
                       ? api.memcpyHtoDAsync(to, src, bytes, nullptr)
                       : api.memcpyDtoDAsync(to, from, bytes, nullptr);
    return r == cu::kSuccess ? api.streamSynchronize(nullptr) : r;
  });
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    pointer = std::exchange(other.pointer, nullptr);
    bytes = std::exchange(other.bytes, 0);
    ordinal = other.ordinal;
  }
  return *this;
}

Status DeviceBuffer::allocate(size_t size, int device) {
  release();
  // The memory lives in the primary context, which the driver resets, and
  // so frees, when its last reference goes: the buffer holds one for as
  // long as it holds the memory. Before a model's first run nothing else
  // may (its context is set up then), and a decoding loop's buffers came
  // back freed at their first copy (CUDA_ERROR_INVALID_VALUE on an H200).
  const cu::DriverApi *api = nullptr;
  cu::Device handle = 0;
  cu::Context context = nullptr;
  if (Status s = retainPrimaryContext(device, api, handle, context); !s.isOk())
    return s;
  cu::DevicePtr allocated = 0;
  Status s =
      inPrimaryContext(device, "cuMemAlloc", [&](const cu::DriverApi &api) {
        return api.memAlloc(&allocated, size ? size : 1);
      });
  if (!s.isOk()) {
    api->primaryCtxRelease(handle);
    return s;
  }
  pointer = reinterpret_cast<void *>(allocated);
  bytes = size;
  ordinal = device;
  return Status::ok();
}

void DeviceBuffer::release() {
  if (!pointer)
    return;
  cu::DevicePtr allocated = reinterpret_cast<cu::DevicePtr>(pointer);
  // A failure to free leaves nothing the caller could do.
  (void)inPrimaryContext(ordinal, "cuMemFree", [&](const cu::DriverApi &api) {
    return api.memFree(allocated);
  });
  // The reference `allocate` took.
  const cu::DriverApi *api = nullptr;
  cu::Device handle = 0;
  if (cu::loadCudaDriver(api).isOk() &&
      api->deviceGet(&handle, ordinal) == cu::kSuccess)
    api->primaryCtxRelease(handle);
  pointer = nullptr;
  bytes = 0;
}

namespace {

/// Runs `body` with `context` current; its driver result, or the push's,
/// named.
template <class Body>
Status inContext(void *context, const char *what, Body body) {
  const cu::DriverApi *api = nullptr;
  if (Status s = cu::loadCudaDriver(api); !s.isOk())
    return s;
  ContextScope scope(*api, static_cast<cu::Context>(context));
  cu::Result r = scope.result;
  if (r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuCtxPushCurrent");
  r = body(*api);
  return r == cu::kSuccess ? Status::ok() : cu::cudaError(*api, r, what);
}

/// Refuses a read slot or size the queue's staging does not have.
Status checkReadSlot(unsigned slot, size_t bytes) {
  if (slot < DeviceQueue::kReadSlots && bytes <= DeviceQueue::kReadBytes)
    return Status::ok();
  return Status::error(StatusCode::InvalidArgument,
                       "a queued read takes a slot below " +
                           std::to_string(DeviceQueue::kReadSlots) +
                           " and at most " +
                           std::to_string(DeviceQueue::kReadBytes) + " bytes");
}

} // namespace

Status DeviceQueue::create(Memory memory, int device) {
  release();
  this->memory = memory;
  ordinal = device;
  if (memory == Memory::Host)
    return Status::ok();
  const cu::DriverApi *api = nullptr;
  cu::Device handle = 0;
  cu::Context retained = nullptr;
  if (Status s = retainPrimaryContext(ordinal, api, handle, retained);
      !s.isOk())
    return s;
  context = retained;
  // Non-blocking: the program's own work on the legacy default stream
  // neither waits for the queue nor holds it up.
  Status status = inContext(context, "cuStreamCreate", [&](auto &api) {
    cu::Stream stream = nullptr;
    cu::Result r = api.streamCreate(&stream, cu::kStreamNonBlocking);
    cuStream = stream;
    return r;
  });
  if (status.isOk())
    status = inContext(context, "cuMemAllocHost", [&](auto &api) {
      return api.memAllocHost(&pinned, kReadSlots * kReadBytes);
    });
  for (void *&event : readDone)
    if (status.isOk())
      status = inContext(context, "cuEventCreate", [&](auto &api) {
        cu::Event created = nullptr;
        cu::Result r = api.eventCreate(&created, cu::kEventDisableTiming);
        event = created;
        return r;
      });
  if (!status.isOk())
    release();
  return status;
}

Status DeviceQueue::copy(void *dst, const void *src, Memory srcMemory,
                         size_t bytes) {
  if (bytes == 0)
    return Status::ok();
  if (memory == Memory::Host) {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  cu::DevicePtr to = reinterpret_cast<cu::DevicePtr>(dst);
  auto stream = static_cast<cu::Stream>(cuStream);
  if (srcMemory == Memory::Host)
    return inContext(context, "cuMemcpyHtoDAsync", [&](auto &api) {
      return api.memcpyHtoDAsync(to, src, bytes, stream);
    });
  return inContext(context, "cuMemcpyDtoDAsync", [&](auto &api) {
    return api.memcpyDtoDAsync(to, reinterpret_cast<cu::DevicePtr>(src), bytes,
                               stream);
  });
}

Status DeviceQueue::queueRead(unsigned slot, const void *src, size_t bytes) {
  if (Status s = checkReadSlot(slot, bytes); !s.isOk())
    return s;
  if (memory == Memory::Host) {
    std::memcpy(hostReads[slot].data(), src, bytes);
    return Status::ok();
  }
  // Into page-locked memory, so the copy is queued rather than waited for.
  void *into = static_cast<char *>(pinned) + slot * kReadBytes;
  auto stream = static_cast<cu::Stream>(cuStream);
  return inContext(context, "cuMemcpyDtoHAsync", [&](auto &api) {
    cu::Result r = api.memcpyDtoHAsync(
        into, reinterpret_cast<cu::DevicePtr>(src), bytes, stream);
    return r == cu::kSuccess
               ? api.eventRecord(static_cast<cu::Event>(readDone[slot]), stream)
               : r;
  });
}

Status DeviceQueue::takeRead(unsigned slot, void *dst, size_t bytes) {
  if (Status s = checkReadSlot(slot, bytes); !s.isOk())
    return s;
  if (memory == Memory::Host) {
    std::memcpy(dst, hostReads[slot].data(), bytes);
    return Status::ok();
  }
  Status s = inContext(context, "waiting for a queued read", [&](auto &api) {
    return api.eventSynchronize(static_cast<cu::Event>(readDone[slot]));
  });
  if (s.isOk())
    std::memcpy(dst, static_cast<char *>(pinned) + slot * kReadBytes, bytes);
  return s;
}

Status DeviceQueue::synchronize() {
  if (!cuStream)
    return Status::ok();
  return inContext(context, "cuStreamSynchronize", [&](auto &api) {
    return api.streamSynchronize(static_cast<cu::Stream>(cuStream));
  });
}

void DeviceQueue::release() {
  if (!context)
    return;
  // Queued work may still write the read slots: wait before freeing them.
  // A failure here leaves nothing the caller could do.
  (void)inContext(context, "releasing a queue", [&](auto &api) {
    if (cuStream)
      api.streamSynchronize(static_cast<cu::Stream>(cuStream));
    for (void *&event : readDone)
      if (event)
        api.eventDestroy(static_cast<cu::Event>(std::exchange(event, nullptr)));
    if (pinned)
      api.memFreeHost(std::exchange(pinned, nullptr));
    if (cuStream)
      api.streamDestroy(
          static_cast<cu::Stream>(std::exchange(cuStream, nullptr)));
    return cu::kSuccess;
  });
  const cu::DriverApi *api = nullptr;
  cu::Device handle = 0;
  if (cu::loadCudaDriver(api).isOk() &&
      api->deviceGet(&handle, ordinal) == cu::kSuccess)
    api->primaryCtxRelease(handle);
  context = nullptr;
}
