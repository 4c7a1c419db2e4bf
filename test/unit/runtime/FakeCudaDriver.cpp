//===- FakeCudaDriver.cpp - A host stand-in for libcuda.so.1 --------------===//
//
// Implements the driver entry points the runtime resolves, on host memory:
// device pointers are host pointers, copies are memcpy, the stream is
// synchronous, and "kernels" are host functions looked up by name. A module
// image must start with "FAKECUBIN" or "FAKEPTX" to load, so tests can make
// the cubin fail and check the PTX fallback. Loaded by tests through
// KILN_CUDA_DRIVER; never part of the runtime.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
using Result = int;
using DevicePtr = unsigned long long;

/// A host "kernel": receives the launch geometry and the pointer arguments.
using HostKernel = void (*)(unsigned threads, void **params);

/// c[i] = a[i] + b[i] for every launched thread i (float32).
void addF32(unsigned threads, void **params) {
  auto *a =
      reinterpret_cast<const float *>(*static_cast<DevicePtr *>(params[0]));
  auto *b =
      reinterpret_cast<const float *>(*static_cast<DevicePtr *>(params[1]));
  auto *c = reinterpret_cast<float *>(*static_cast<DevicePtr *>(params[2]));
  for (unsigned i = 0; i < threads; ++i)
    c[i] = a[i] + b[i];
}

/// b[i] = 2 * a[i] for every launched thread i (float32).
void doubleF32(unsigned threads, void **params) {
  auto *a =
      reinterpret_cast<const float *>(*static_cast<DevicePtr *>(params[0]));
  auto *b = reinterpret_cast<float *>(*static_cast<DevicePtr *>(params[1]));
  for (unsigned i = 0; i < threads; ++i)
    b[i] = 2 * a[i];
}

struct FakeFunction {
  const char *name;
  HostKernel kernel;
};
FakeFunction functions[] = {{"add_f32", addF32}, {"double_f32", doubleF32}};

/// Counts live allocations so that tests can check that models free memory.
int liveAllocations = 0;
int contextDepth = 0;
int moduleMarker = 0;
int streamMarker = 0;
int contextMarker = 0;
} // namespace

extern "C" {

/// Returns the number of allocations not yet freed (for tests).
__attribute__((visibility("default"))) int fakeCudaLiveAllocations() {
  return liveAllocations;
}

/// Returns how many contexts are pushed (for tests).
__attribute__((visibility("default"))) int fakeCudaContextDepth() {
  return contextDepth;
}

Result cuInit(unsigned) { return 0; }
Result cuDeviceGetCount(int *count) {
  *count = 1;
  return 0;
}
Result cuDeviceGet(int *device, int ordinal) {
  if (ordinal != 0)
    return 101; // CUDA_ERROR_INVALID_DEVICE
  *device = 0;
  return 0;
}
Result cuDeviceGetAttribute(int *value, int, int) {
  *value = 9;
  return 0;
}
Result cuDevicePrimaryCtxRetain(void **ctx, int) {
  *ctx = &contextMarker;
  return 0;
}
Result cuDevicePrimaryCtxRelease_v2(int) { return 0; }
Result cuCtxPushCurrent_v2(void *) {
  ++contextDepth;
  return 0;
}
Result cuCtxPopCurrent_v2(void **ctx) {
  --contextDepth;
  if (ctx)
    *ctx = &contextMarker;
  return 0;
}
Result cuModuleLoadData(void **module, const void *image) {
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text, "FAKECUBIN", 9) != 0 &&
      std::strncmp(text, "FAKEPTX", 7) != 0)
    return 209; // CUDA_ERROR_NO_BINARY_FOR_GPU
  *module = &moduleMarker;
  return 0;
}
Result cuModuleUnload(void *) { return 0; }
Result cuModuleGetFunction(void **function, void *, const char *name) {
  for (FakeFunction &f : functions)
    if (std::strcmp(f.name, name) == 0) {
      *function = &f;
      return 0;
    }
  return 500; // CUDA_ERROR_NOT_FOUND
}
/// The kernels' run-time index check flag; tests set it to fake a fault.
__attribute__((visibility("default"))) unsigned kiln_fake_index_error = 0;
Result cuModuleGetGlobal_v2(DevicePtr *ptr, size_t *bytes, void *,
                            const char *name) {
  if (std::strcmp(name, "kiln_index_error") != 0)
    return 500; // CUDA_ERROR_NOT_FOUND
  *ptr = reinterpret_cast<DevicePtr>(&kiln_fake_index_error);
  *bytes = sizeof(kiln_fake_index_error);
  return 0;
}
Result cuFuncSetAttribute(void *, int, int) { return 0; }
Result cuMemAlloc_v2(DevicePtr *ptr, size_t bytes) {
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  // Poison fresh memory so that tests notice reads of unwritten data.
  std::memset(p, 0x7f, bytes);
  ++liveAllocations;
  *ptr = reinterpret_cast<DevicePtr>(p);
  return 0;
}
Result cuMemFree_v2(DevicePtr ptr) {
  --liveAllocations;
  std::free(reinterpret_cast<void *>(ptr));
  return 0;
}
Result cuMemcpyHtoDAsync_v2(DevicePtr dst, const void *src, size_t bytes,
                            void *) {
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return 0;
}
Result cuMemcpyDtoHAsync_v2(void *dst, DevicePtr src, size_t bytes, void *) {
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return 0;
}
Result cuMemcpyDtoDAsync_v2(DevicePtr dst, DevicePtr src, size_t bytes,
                            void *) {
  std::memcpy(reinterpret_cast<void *>(dst),
              reinterpret_cast<const void *>(src), bytes);
  return 0;
}
Result cuStreamCreate(void **stream, unsigned) {
  *stream = &streamMarker;
  return 0;
}
Result cuStreamDestroy_v2(void *) { return 0; }
Result cuStreamSynchronize(void *) { return 0; }
Result cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned, void *,
                      void **params, void **) {
  static_cast<FakeFunction *>(function)->kernel(gx * gy * gz * bx * by * bz,
                                                params);
  return 0;
}
Result cuGetErrorName(Result error, const char **name) {
  switch (error) {
  case 209:
    *name = "CUDA_ERROR_NO_BINARY_FOR_GPU";
    return 0;
  case 500:
    *name = "CUDA_ERROR_NOT_FOUND";
    return 0;
  default:
    *name = "CUDA_ERROR_FAKE";
    return 0;
  }
}
Result cuGetErrorString(Result, const char **text) {
  *text = "fake driver error";
  return 0;
}

} // extern "C"
