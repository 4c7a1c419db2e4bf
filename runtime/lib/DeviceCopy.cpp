//===- DeviceCopy.cpp - Copies between host and device memory -------------===//

#include "kiln/runtime/DeviceCopy.h"

#include "CudaDriver.h"
#include "CudaScopes.h"

#include <cstring>
#include <utility>

using namespace kiln::rt;
using namespace kiln::rt::detail;

namespace {

/// Runs `body` with device `ordinal`'s primary context current; its
/// driver result, or the setup's, named.
template <class Body>
Status inPrimaryContext(int ordinal, const char *what, Body body) {
  const cu::DriverApi *api = nullptr;
  if (Status s = cu::loadCudaDriver(api); !s.isOk())
    return s;
  cu::Device device = 0;
  if (cu::Result r = api->deviceGet(&device, ordinal); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuDeviceGet");
  cu::Context context = nullptr;
  if (cu::Result r = api->primaryCtxRetain(&context, device); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuDevicePrimaryCtxRetain");
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
  cu::DevicePtr allocated = 0;
  Status s =
      inPrimaryContext(device, "cuMemAlloc", [&](const cu::DriverApi &api) {
        return api.memAlloc(&allocated, size ? size : 1);
      });
  if (!s.isOk())
    return s;
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
  pointer = nullptr;
  bytes = 0;
}
