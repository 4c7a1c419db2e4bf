//===- CudaDriver.h - The CUDA driver API, opened at run time ---*- C++ -*-===//
//
// The few driver types and entry points the runtime uses, declared here so
// that the runtime builds without the CUDA toolkit and the artifact does not
// link libcuda: `loadCudaDriver` opens libcuda.so.1 with dlopen at first use.
// Values and signatures follow cuda.h (CUDA 12/13); a unit test checks them
// against the real header where it is installed.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_CUDADRIVER_H
#define KILN_RUNTIME_LIB_CUDADRIVER_H

#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {
namespace rt {
namespace cu {

/// `CUresult`: 0 is success.
using Result = int;
/// `CUdevice`: a device ordinal handle.
using Device = int;
/// `CUdeviceptr`: a device address.
using DevicePtr = unsigned long long;
/// `CUcontext`.
using Context = struct CUctx_st *;
/// `CUmodule`.
using Module = struct CUmod_st *;
/// `CUfunction`.
using Function = struct CUfunc_st *;
/// `CUstream`; also what cuBLASLt takes as `cudaStream_t`.
using Stream = struct CUstream_st *;
/// `CUevent`.
using Event = struct CUevent_st *;
/// `CUgraph`: work recorded by a stream capture.
using Graph = struct CUgraph_st *;
/// `CUgraphExec`: an instantiated graph, ready to launch.
using GraphExec = struct CUgraphExec_st *;

/// `CUgraphNode`: one node of a graph.
using GraphNode = struct CUgraphNode_st *;
/// `CUDA_KERNEL_NODE_PARAMS` (its v2 layout): a kernel node's launch.
struct KernelNodeParams {
  Function function;
  unsigned gridX, gridY, gridZ;
  unsigned blockX, blockY, blockZ;
  unsigned sharedBytes;
  void **params;
  void **extra;
  /// `CUkernel` and `CUcontext`: unused (null) where `function` is set.
  void *kernel;
  Context context;
};
/// `CU_STREAM_CAPTURE_STATUS_ACTIVE`.
constexpr int kStreamCaptureStatusActive = 1;
/// `CUgraphExecUpdateResultInfo`: why `cuGraphExecUpdate` failed.
struct GraphExecUpdateResultInfo {
  /// `CUgraphExecUpdateResult`.
  int result;
  /// `CUgraphNode` of the error, or null.
  void *errorNode;
  /// `CUgraphNode` the error edge comes from, or null.
  void *errorFromNode;
};

/// `CUlaunchAttribute`: one attribute of a cuLaunchKernelEx launch. Only
/// the value's first int is used here; the union is 64 bytes.
struct LaunchAttribute {
  /// `CUlaunchAttributeID`.
  int id;
  char pad[8 - sizeof(int)];
  union {
    char bytes[64];
    /// `programmaticStreamSerializationAllowed` and the other int fields.
    int value;
  };
};
/// `CUlaunchConfig`.
struct LaunchConfig {
  unsigned gridX, gridY, gridZ;
  unsigned blockX, blockY, blockZ;
  unsigned sharedBytes;
  Stream stream;
  LaunchAttribute *attributes;
  unsigned attributeCount;
};
/// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`: the kernel may
/// start before the one ahead of it in the stream has finished, and waits
/// for it itself (griddepcontrol.wait).
constexpr int kLaunchAttributeProgrammaticStreamSerialization = 6;

/// `CUtensorMap`: 128 opaque bytes, aligned to 128 (CUDA 13).
struct alignas(128) TensorMap {
  unsigned long long opaque[16];
};
/// `CU_TENSOR_MAP_DATA_TYPE_FLOAT16` and `_BFLOAT16`.
constexpr int kTensorMapFloat16 = 6;
constexpr int kTensorMapBfloat16 = 9;
/// `CU_TENSOR_MAP_SWIZZLE_NONE`, `_32B`, `_64B`, `_128B` are 0 to 3.
/// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B`.
constexpr int kTensorMapL2Promotion128B = 2;

/// `CUDA_SUCCESS`.
constexpr Result kSuccess = 0;
/// `CUDA_ERROR_NO_DEVICE`.
constexpr Result kErrorNoDevice = 100;
/// `CU_STREAM_NON_BLOCKING`.
constexpr unsigned kStreamNonBlocking = 0x1;
/// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
constexpr int kFuncAttributeMaxDynamicSharedSizeBytes = 8;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
constexpr int kDeviceAttributeComputeCapabilityMajor = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
constexpr int kDeviceAttributeComputeCapabilityMinor = 76;
/// `CU_EVENT_DISABLE_TIMING`.
constexpr unsigned kEventDisableTiming = 0x2;
/// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`: a capture forbids unsafe calls on
/// the capturing thread only, so other threads' contexts keep running.
constexpr int kStreamCaptureModeThreadLocal = 1;
/// `CU_STREAM_LEGACY`: the legacy default stream, which orders against every
/// blocking stream of the context.
inline Stream legacyStream() { return reinterpret_cast<Stream>(0x1); }
/// Dynamic shared memory a kernel may use without opting in.
constexpr unsigned kDefaultMaxDynamicShared = 48 * 1024;

/// Entry points of libcuda.so.1, resolved by their exported (versioned) names.
struct DriverApi {
  /// cuInit.
  Result (*init)(unsigned flags);
  /// cuDeviceGetCount.
  Result (*deviceGetCount)(int *count);
  /// cuDeviceGet.
  Result (*deviceGet)(Device *device, int ordinal);
  /// cuDeviceGetAttribute.
  Result (*deviceGetAttribute)(int *value, int attribute, Device device);
  /// cuDevicePrimaryCtxRetain.
  Result (*primaryCtxRetain)(Context *ctx, Device device);
  /// cuDevicePrimaryCtxRelease_v2.
  Result (*primaryCtxRelease)(Device device);
  /// cuCtxPushCurrent_v2.
  Result (*ctxPushCurrent)(Context ctx);
  /// cuCtxPopCurrent_v2.
  Result (*ctxPopCurrent)(Context *ctx);
  /// cuModuleLoadData.
  Result (*moduleLoadData)(Module *module, const void *image);
  /// cuModuleUnload.
  Result (*moduleUnload)(Module module);
  /// cuModuleGetFunction.
  Result (*moduleGetFunction)(Function *function, Module module,
                              const char *name);
  /// cuModuleGetGlobal_v2.
  Result (*moduleGetGlobal)(DevicePtr *ptr, size_t *bytes, Module module,
                            const char *name);
  /// cuFuncSetAttribute.
  Result (*funcSetAttribute)(Function function, int attribute, int value);
  /// cuMemAlloc_v2.
  Result (*memAlloc)(DevicePtr *ptr, size_t bytes);
  /// cuMemFree_v2.
  Result (*memFree)(DevicePtr ptr);
  /// cuMemcpyHtoDAsync_v2.
  Result (*memcpyHtoDAsync)(DevicePtr dst, const void *src, size_t bytes,
                            Stream stream);
  /// cuMemcpyDtoHAsync_v2.
  Result (*memcpyDtoHAsync)(void *dst, DevicePtr src, size_t bytes,
                            Stream stream);
  /// cuMemcpyDtoDAsync_v2.
  Result (*memcpyDtoDAsync)(DevicePtr dst, DevicePtr src, size_t bytes,
                            Stream stream);
  /// cuStreamCreate.
  Result (*streamCreate)(Stream *stream, unsigned flags);
  /// cuStreamDestroy_v2.
  Result (*streamDestroy)(Stream stream);
  /// cuStreamSynchronize.
  Result (*streamSynchronize)(Stream stream);
  /// cuMemAllocHost_v2: page-locked host memory.
  Result (*memAllocHost)(void **ptr, size_t bytes);
  /// cuMemFreeHost.
  Result (*memFreeHost)(void *ptr);
  /// cuStreamWaitEvent.
  Result (*streamWaitEvent)(Stream stream, Event event, unsigned flags);
  /// cuEventCreate.
  Result (*eventCreate)(Event *event, unsigned flags);
  /// cuEventDestroy_v2.
  Result (*eventDestroy)(Event event);
  /// cuEventRecord.
  Result (*eventRecord)(Event event, Stream stream);
  /// cuEventSynchronize.
  Result (*eventSynchronize)(Event event);
  /// cuEventElapsedTime (milliseconds between two recorded events); the
  /// first version, which every CUDA 12 driver exports.
  Result (*eventElapsedTime)(float *milliseconds, Event start, Event end);
  /// cuStreamBeginCapture_v2.
  Result (*streamBeginCapture)(Stream stream, int mode);
  /// cuStreamEndCapture.
  Result (*streamEndCapture)(Stream stream, Graph *graph);
  /// cuGraphInstantiateWithFlags.
  Result (*graphInstantiate)(GraphExec *exec, Graph graph,
                             unsigned long long flags);
  /// cuGraphExecUpdate_v2: gives `exec` the parameters of `graph`, which
  /// must have the same topology.
  Result (*graphExecUpdate)(GraphExec exec, Graph graph,
                            GraphExecUpdateResultInfo *info);
  /// cuGraphLaunch.
  Result (*graphLaunch)(GraphExec exec, Stream stream);
  /// cuStreamGetCaptureInfo_v3: the nodes the next captured work will
  /// depend on (after a launch, its own node). Optional: null where the
  /// driver lacks it, and then graphs are not updated in place.
  Result (*streamGetCaptureInfo)(Stream stream, int *status,
                                 unsigned long long *id, Graph *graph,
                                 const GraphNode **dependencies,
                                 const void **edgeData, size_t *count);
  /// cuGraphExecKernelNodeSetParams_v2: new grid and arguments for one
  /// kernel node of an executable graph, for its later launches. Optional,
  /// as streamGetCaptureInfo.
  Result (*graphExecKernelNodeSetParams)(GraphExec exec, GraphNode node,
                                         const KernelNodeParams *params);
  /// cuGraphDestroy.
  Result (*graphDestroy)(Graph graph);
  /// cuGraphExecDestroy.
  Result (*graphExecDestroy)(GraphExec exec);
  /// cuLaunchKernel.
  Result (*launchKernel)(Function function, unsigned gridX, unsigned gridY,
                         unsigned gridZ, unsigned blockX, unsigned blockY,
                         unsigned blockZ, unsigned sharedBytes, Stream stream,
                         void **params, void **extra);
  /// cuLaunchKernelEx: a launch with attributes.
  Result (*launchKernelEx)(const LaunchConfig *config, Function function,
                           void **params, void **extra);
  /// cuTensorMapEncodeTiled (CUDA 12 and later); null where the driver
  /// lacks it, and then no GEMM kernel that takes tensor maps runs.
  Result (*tensorMapEncodeTiled)(TensorMap *map, int dataType, unsigned rank,
                                 void *global, const uint64_t *dims,
                                 const uint64_t *strides, const unsigned *box,
                                 const unsigned *elementStrides, int interleave,
                                 int swizzle, int l2Promotion, int oobFill);
  /// cuGetErrorName.
  Result (*getErrorName)(Result error, const char **name);
  /// cuGetErrorString.
  Result (*getErrorString)(Result error, const char **text);
};

/// Launches `function` with `params` on `stream`; with `overlap`, as a
/// programmatic dependent launch
/// (kLaunchAttributeProgrammaticStreamSerialization): Kiln's kernels wait for
/// the kernel before them first thing (kiln_pdl_enter), so their launch may
/// overlap its end.
Result launch(const DriverApi &api, Function function, const unsigned grid[3],
              const unsigned block[3], unsigned sharedBytes, Stream stream,
              void **params, bool overlap);

/// Opens libcuda.so.1 and calls cuInit once per process, then returns the
/// shared table in `out`. Fails with `NoDevice` when the driver is missing,
/// or when it reports no device; a failure is retried on the next call.
Status loadCudaDriver(const DriverApi *&out);

/// Returns "CUDA_ERROR_X (text)" for `result`.
std::string cudaErrorText(const DriverApi &api, Result result);

/// Returns a `Cuda` status "`what` failed: CUDA_ERROR_X (text)".
Status cudaError(const DriverApi &api, Result result, const std::string &what);

} // namespace cu
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_CUDADRIVER_H
