//===- DeviceCopy.cpp - Copies between host and device memory -------------===//

#include "kiln/runtime/DeviceCopy.h"

#include "CudaDriver.h"
#include "CudaScopes.h"

#include <cstring>

using namespace kiln::rt;
using namespace kiln::rt::detail;

Status kiln::rt::copyMemory(void *dst, Memory dstMemory, const void *src,
                            Memory srcMemory, size_t bytes, int ordinal) {
  if (bytes == 0)
    return Status::ok();
  if (dstMemory == Memory::Host && srcMemory == Memory::Host) {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  const cu::DriverApi *api = nullptr;
  if (Status s = cu::loadCudaDriver(api); !s.isOk())
    return s;
  cu::Device device = 0;
  if (cu::Result r = api->deviceGet(&device, ordinal); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuDeviceGet");
  // The primary context, as the models' executors use: the memory Triton
  // and the models hand over lives there.
  cu::Context context = nullptr;
  if (cu::Result r = api->primaryCtxRetain(&context, device); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuDevicePrimaryCtxRetain");
  Status status;
  {
    ContextScope scope(*api, context);
    cu::Result r = scope.result;
    const char *what = "cuCtxPushCurrent";
    cu::DevicePtr from = reinterpret_cast<cu::DevicePtr>(src);
    cu::DevicePtr to = reinterpret_cast<cu::DevicePtr>(dst);
    if (r == cu::kSuccess && dstMemory == Memory::Host) {
      r = api->memcpyDtoHAsync(dst, from, bytes, nullptr);
      what = "cuMemcpyDtoHAsync";
    } else if (r == cu::kSuccess && srcMemory == Memory::Host) {
      r = api->memcpyHtoDAsync(to, src, bytes, nullptr);
      what = "cuMemcpyHtoDAsync";
    } else if (r == cu::kSuccess) {
      r = api->memcpyDtoDAsync(to, from, bytes, nullptr);
      what = "cuMemcpyDtoDAsync";
    }
    if (r == cu::kSuccess) {
      r = api->streamSynchronize(nullptr);
      what = "cuStreamSynchronize";
    }
    if (r != cu::kSuccess)
      status = cu::cudaError(*api, r, what);
  }
  api->primaryCtxRelease(device);
  return status;
}
