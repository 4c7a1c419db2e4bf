//===- CudaDriver.cpp - Open the CUDA driver with dlopen ------------------===//

#include "CudaDriver.h"
#include "SymbolResolver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

using namespace kiln::rt;
using namespace kiln::rt::cu;

/// Returns the library to open: `KILN_CUDA_DRIVER` when set (a driver in an
/// unusual place, or a stand-in for tests), else the driver's soname.
static const char *driverPath() {
  const char *path = std::getenv("KILN_CUDA_DRIVER");
  return path && *path ? path : "libcuda.so.1";
}

/// Resolves every entry point of `api` in `handle`; on failure names the
/// first missing symbol in `missing`.
static bool resolveAll(void *handle, DriverApi &api, std::string &missing) {
  SymbolResolver resolver(handle);
  auto get = [&](auto &fn, const char *name) { resolver.get(fn, name); };
  get(api.init, "cuInit");
  get(api.deviceGetCount, "cuDeviceGetCount");
  get(api.deviceGet, "cuDeviceGet");
  get(api.deviceGetAttribute, "cuDeviceGetAttribute");
  get(api.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(api.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  get(api.ctxPushCurrent, "cuCtxPushCurrent_v2");
  get(api.ctxPopCurrent, "cuCtxPopCurrent_v2");
  get(api.moduleLoadData, "cuModuleLoadData");
  get(api.moduleUnload, "cuModuleUnload");
  get(api.moduleGetFunction, "cuModuleGetFunction");
  get(api.moduleGetGlobal, "cuModuleGetGlobal_v2");
  get(api.funcSetAttribute, "cuFuncSetAttribute");
  get(api.memAlloc, "cuMemAlloc_v2");
  get(api.memFree, "cuMemFree_v2");
  get(api.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  get(api.memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  get(api.memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  get(api.streamCreate, "cuStreamCreate");
  get(api.streamDestroy, "cuStreamDestroy_v2");
  get(api.streamSynchronize, "cuStreamSynchronize");
  get(api.memAllocHost, "cuMemAllocHost_v2");
  get(api.memFreeHost, "cuMemFreeHost");
  get(api.streamWaitEvent, "cuStreamWaitEvent");
  get(api.eventCreate, "cuEventCreate");
  get(api.eventDestroy, "cuEventDestroy_v2");
  get(api.eventRecord, "cuEventRecord");
  get(api.eventSynchronize, "cuEventSynchronize");
  get(api.eventElapsedTime, "cuEventElapsedTime");
  get(api.streamBeginCapture, "cuStreamBeginCapture_v2");
  get(api.streamEndCapture, "cuStreamEndCapture");
  get(api.graphInstantiate, "cuGraphInstantiateWithFlags");
  get(api.graphExecUpdate, "cuGraphExecUpdate_v2");
  get(api.graphLaunch, "cuGraphLaunch");
  get(api.graphDestroy, "cuGraphDestroy");
  get(api.graphExecDestroy, "cuGraphExecDestroy");
  get(api.launchKernel, "cuLaunchKernel");
  get(api.launchKernelEx, "cuLaunchKernelEx");
  get(api.getErrorName, "cuGetErrorName");
  get(api.getErrorString, "cuGetErrorString");
  missing = resolver.firstMissing();
  // Optional: graphs updated in place need these two (CUDA 12.3 and later).
  api.streamGetCaptureInfo =
      reinterpret_cast<decltype(api.streamGetCaptureInfo)>(
          dlsym(handle, "cuStreamGetCaptureInfo_v3"));
  api.graphExecKernelNodeSetParams =
      reinterpret_cast<decltype(api.graphExecKernelNodeSetParams)>(
          dlsym(handle, "cuGraphExecKernelNodeSetParams_v2"));
  // Optional: only the kernels that take tensor maps need it.
  api.tensorMapEncodeTiled =
      reinterpret_cast<decltype(api.tensorMapEncodeTiled)>(
          dlsym(handle, "cuTensorMapEncodeTiled"));
  return resolver.ok();
}

Result kiln::rt::cu::launch(const DriverApi &api, Function function,
                            const unsigned grid[3], const unsigned block[3],
                            unsigned sharedBytes, Stream stream, void **params,
                            bool overlap) {
  if (!overlap)
    return api.launchKernel(function, grid[0], grid[1], grid[2], block[0],
                            block[1], block[2], sharedBytes, stream, params,
                            nullptr);
  LaunchAttribute attribute{};
  attribute.id = kLaunchAttributeProgrammaticStreamSerialization;
  attribute.value = 1;
  LaunchConfig config{grid[0],  grid[1],     grid[2], block[0],   block[1],
                      block[2], sharedBytes, stream,  &attribute, 1};
  return api.launchKernelEx(&config, function, params, nullptr);
}

Status kiln::rt::cu::loadCudaDriver(const DriverApi *&out) {
  // One driver per process; it is never closed because CUDA keeps threads
  // and state alive until exit.
  static std::mutex mutex;
  static void *handle = nullptr;
  static DriverApi api;
  static bool ready = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (ready) {
    out = &api;
    return Status::ok();
  }
  const char *path = driverPath();
  if (!handle) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      return Status::error(StatusCode::NoDevice,
                           std::string("no CUDA driver found (") + path +
                               "): " + (why ? why : "dlopen failed"));
    }
    std::string missing;
    if (!resolveAll(handle, api, missing)) {
      dlclose(handle);
      handle = nullptr;
      return Status::error(StatusCode::NoDevice,
                           std::string("the CUDA driver (") + path +
                               ") lacks " + missing +
                               "; a driver for CUDA 12 or newer is needed");
    }
  }
  if (Result r = api.init(0); r != kSuccess) {
    StatusCode code =
        r == kErrorNoDevice ? StatusCode::NoDevice : StatusCode::Cuda;
    return Status::error(code, "cuInit failed: " + cudaErrorText(api, r));
  }
  int count = 0;
  if (Result r = api.deviceGetCount(&count); r != kSuccess)
    return cudaError(api, r, "cuDeviceGetCount");
  if (count < 1)
    return Status::error(StatusCode::NoDevice,
                         "the CUDA driver reports no GPU");
  ready = true;
  out = &api;
  return Status::ok();
}

std::string kiln::rt::cu::cudaErrorText(const DriverApi &api, Result result) {
  const char *name = nullptr, *text = nullptr;
  if (!api.getErrorName || api.getErrorName(result, &name) != kSuccess)
    name = nullptr;
  if (!api.getErrorString || api.getErrorString(result, &text) != kSuccess)
    text = nullptr;
  std::string out = name ? name : "CUDA error " + std::to_string(result);
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

Status kiln::rt::cu::cudaError(const DriverApi &api, Result result,
                               const std::string &what) {
  return Status::error(StatusCode::Cuda,
                       what + " failed: " + cudaErrorText(api, result));
}
