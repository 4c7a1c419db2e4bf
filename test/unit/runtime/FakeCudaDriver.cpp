//===- FakeCudaDriver.cpp - A host stand-in for libcuda.so.1 --------------===//
//
// Implements the driver entry points the runtime resolves, on host memory:
// device pointers are host pointers, copies are memcpy, streams are
// synchronous, and "kernels" are host functions looked up by name. A stream
// capture records the work issued on the capturing stream instead of doing
// it, as the real driver does, and a graph launch does the recorded work; the
// fake cuBLASLt queues its matmuls through `fakeCudaEnqueue` for the same
// reason. Counters of captures, instantiations, updates and launches, and the
// stream of the last work done, let tests check how the runtime used them. A
// module image must start with "FAKECUBIN" or "FAKEPTX" to load, so tests can
// make the cubin fail and check the PTX fallback. Loaded by tests through
// KILN_CUDA_DRIVER; never part of the runtime.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

/// b[i] = 2 * a[i] for i < n, n the third argument (a `long long` by value,
/// as a kernel of a plan with a symbolic dim takes it).
void doubleFirstF32(unsigned threads, void **params) {
  auto *a =
      reinterpret_cast<const float *>(*static_cast<DevicePtr *>(params[0]));
  auto *b = reinterpret_cast<float *>(*static_cast<DevicePtr *>(params[1]));
  long long n = *static_cast<long long *>(params[2]);
  for (long long i = 0; i < n && i < threads; ++i)
    b[i] = 2 * a[i];
}

} // namespace

/// The argument values and threads of the last launch of the stand-in Kiln
/// GEMM kernels (kiln_fake_gemm, kiln_fake_gemm_normed,
/// kiln_fake_gemm_maps), which the tests of the CUDA backend's GEMM
/// launches read: they compute nothing.
extern "C" __attribute__((visibility("default")))
DevicePtr fakeGemmArgs[24] = {};
extern "C" __attribute__((visibility("default"))) unsigned fakeGemmThreads = 0;
/// The tensor maps the last launch of kiln_fake_gemm_maps took, as the
/// stand-in cuTensorMapEncodeTiled wrote them.
extern "C" __attribute__((
    visibility("default"))) unsigned long long fakeGemmMaps[2][16] = {};

namespace {

template <unsigned Values> void recordGemm(unsigned threads, void **params) {
  for (unsigned i = 0; i < Values; ++i)
    fakeGemmArgs[i] = *static_cast<DevicePtr *>(params[i]);
  fakeGemmThreads = threads;
}

} // namespace

/// The launches of the stand-in norm kernel after cuBLASLt, which
/// computes nothing.
extern "C" __attribute__((visibility("default"))) unsigned fakeNormLaunches = 0;

namespace {

void countNormLaunch(unsigned, void **) { ++fakeNormLaunches; }

/// The stand-in of a GEMM kernel that takes the launch after its step
/// (GemmCandidate::withNextLaunch) on that launch's two pointers: it
/// records them (fakeGemmArgs) and writes kFusedMark to the second's first
/// float, which the launch it stands for would have written otherwise.
constexpr float kFusedMark = 12345.0f;
void markFused(unsigned threads, void **params) {
  recordGemm<2>(threads, params);
  *reinterpret_cast<float *>(*static_cast<DevicePtr *>(params[1])) = kFusedMark;
}

struct FakeFunction {
  const char *name;
  HostKernel kernel;
  unsigned arity;
  /// Trailing parameters of the arity that are 128-byte tensor maps.
  unsigned maps = 0;
  /// The dynamic shared memory the function opted in to
  /// (cuFuncSetAttribute); a launch that asks for more past the default
  /// 48 KiB fails, as on the GPU.
  int sharedOptIn = 0;
};
FakeFunction functions[] = {
    {"add_f32", addF32, 3},
    {"double_f32", doubleF32, 2},
    {"double_first_f32", doubleFirstF32, 3},
    // Six pointers, then the 13 integers.
    {"kiln_fake_gemm", recordGemm<19>, 19},
    // The same, then the tensor maps of A and B (fakeGemmMaps).
    {"kiln_fake_gemm_maps", recordGemm<19>, 21, 2},
    // A norm step's: nine pointers, the integers, epsilon and the kind.
    {"kiln_fake_gemm_normed", recordGemm<24>, 24},
    // The norm kernel after cuBLASLt: four pointers, then 15 integers.
    {"kiln_fake_gemm_norm", countNormLaunch, 19},
    // A GEMM kernel that takes the next launch (double_f32's arguments).
    {"kiln_fake_fused", markFused, 2}};

/// A kernel launch: the function's host kernel, the threads launched and
/// the argument values, copied at the launch as the driver copies them.
struct KernelCall {
  HostKernel kernel;
  unsigned threads;
  std::vector<DevicePtr> values;
};
void runCall(KernelCall call) {
  std::vector<void *> pointers;
  for (DevicePtr &v : call.values)
    pointers.push_back(&v);
  call.kernel(call.threads, pointers.data());
}
/// Work recorded by a capture: a kernel launch (`call`, whose node handle
/// is the captured graph's call) or other work.
struct Op {
  std::function<void()> work;
  std::shared_ptr<KernelCall> call;
  const void *node = nullptr;
  void operator()() const {
    if (call)
      runCall(*call);
    else
      work();
  }
};
using Ops = std::vector<Op>;
struct FakeGraph {
  Ops ops;
};
struct FakeGraphExec {
  Ops ops;
};

/// The stream being captured (one at a time is enough for the tests), and
/// what it recorded so far.
void *capturingStream = nullptr;
Ops captured;

/// Counters read by the tests through `fakeCudaCounter`.
struct Counters {
  int captures = 0;       ///< Successful cuStreamEndCapture calls.
  int instantiations = 0; ///< cuGraphInstantiateWithFlags calls.
  int updates = 0;        ///< Successful cuGraphExecUpdate calls.
  int graphLaunches = 0;  ///< cuGraphLaunch calls.
  int nodeUpdates = 0;    ///< cuGraphExecKernelNodeSetParams calls.
  int eagerKernels = 0;   ///< Kernels run outside a graph.
  int streamWaits = 0;    ///< cuStreamWaitEvent calls.
  int pinned = 0;         ///< Live page-locked allocations.
  int graphs = 0;         ///< Live graphs and executable graphs.
  int deviceCopies = 0;   ///< cuMemcpyDtoDAsync calls.
  /// cuLaunchKernelEx calls with the programmatic stream serialization
  /// attribute set, and cuLaunchKernelEx calls in all.
  int overlappedLaunches = 0;
  int launchesEx = 0;
  /// Matmuls the stand-in cuBLASLt ran with its algorithms 42, 43 and 44.
  int matmulAlgos[3] = {0, 0, 0};
} counters;
/// Milliseconds of "device time": what the stand-in cuBLASLt's matmuls
/// cost (fakeCudaMatmulRan). Events record it, so that timing between
/// events sees which algorithm ran.
double clockMs = 0;
/// The stream of the last work done or launched (not recorded).
void *lastStream = nullptr;
/// Set by tests: cuStreamBeginCapture fails.
int failCapture = 0;
/// Set by tests: cuStreamGetCaptureInfo fails, as a driver that cannot
/// tell a capture's nodes.
int hideCaptureNodes = 0;
/// Set by tests: cuGraphExecKernelNodeSetParams fails.
int failNodeUpdates = 0;

/// Does `op` now, or records it when `stream` is being captured.
void enqueueOp(void *stream, Op op) {
  if (capturingStream && stream == capturingStream) {
    captured.push_back(std::move(op));
    return;
  }
  lastStream = stream;
  op();
}
void enqueue(void *stream, std::function<void()> work) {
  enqueueOp(stream, Op{std::move(work), nullptr, nullptr});
}

/// Counts live allocations so that tests can check that models free memory.
int liveAllocations = 0;
/// The primary context's references: cuDevicePrimaryCtxRetain's less
/// Release's. The driver resets the context when the last one goes, which
/// frees every allocation made in it.
int primaryReferences = 0;
/// Device allocations by address (their bytes): live ones, and those a
/// reset freed, which a copy to or from fails with CUDA_ERROR_INVALID_VALUE
/// as on the GPU.
std::map<DevicePtr, size_t> allocations, lostAllocations;

/// Whether [p, p + bytes) touches an allocation a reset freed. The freed
/// ranges never overlap (an allocation removes those it overlaps), so the
/// last one starting before the end is the only candidate. A copy of no
/// bytes touches nothing.
bool lost(DevicePtr p, size_t bytes) {
  if (bytes == 0)
    return false;
  auto after = lostAllocations.upper_bound(p + bytes - 1);
  if (after == lostAllocations.begin())
    return false;
  auto it = std::prev(after);
  return it->first + it->second > p;
}
int contextDepth = 0;
int moduleMarker = 0;
int streamMarker = 0;
int contextMarker = 0;
} // namespace

extern "C" {

/// Does the work of a fake library call on `stream`, or records it while the
/// stream is captured (the fake cuBLASLt's matmuls). Takes `op`.
__attribute__((visibility("default"))) void
fakeCudaEnqueue(void *stream, std::function<void()> *op) {
  enqueue(stream, std::move(*op));
  delete op;
}

/// The stand-in cuBLASLt ran a matmul with algorithm `algo`, taking `ms`.
__attribute__((visibility("default"))) void fakeCudaMatmulRan(int algo,
                                                              double ms) {
  clockMs += ms;
  if (algo >= 42 && algo <= 44)
    ++counters.matmulAlgos[algo - 42];
}

/// Returns the counter `name` ("captures", "instantiations", "updates",
/// "graphLaunches", "nodeUpdates", "eagerKernels", "streamWaits", "pinned",
/// "graphs", "deviceCopies", "matmulAlgo42" .. "matmulAlgo44"), or -1 for an
/// unknown name.
__attribute__((visibility("default"))) int fakeCudaCounter(const char *name) {
  struct {
    const char *name;
    int value;
  } table[] = {{"captures", counters.captures},
               {"instantiations", counters.instantiations},
               {"updates", counters.updates},
               {"graphLaunches", counters.graphLaunches},
               {"nodeUpdates", counters.nodeUpdates},
               {"eagerKernels", counters.eagerKernels},
               {"streamWaits", counters.streamWaits},
               {"pinned", counters.pinned},
               {"graphs", counters.graphs},
               {"deviceCopies", counters.deviceCopies},
               {"overlappedLaunches", counters.overlappedLaunches},
               {"launchesEx", counters.launchesEx},
               {"matmulAlgo42", counters.matmulAlgos[0]},
               {"matmulAlgo43", counters.matmulAlgos[1]},
               {"matmulAlgo44", counters.matmulAlgos[2]}};
  for (auto &entry : table)
    if (std::strcmp(entry.name, name) == 0)
      return entry.value;
  return -1;
}

/// Resets the counters (not the live ones) and the capture failure switch.
__attribute__((visibility("default"))) void fakeCudaResetCounters() {
  int pinned = counters.pinned, graphs = counters.graphs;
  counters = Counters();
  counters.pinned = pinned;
  counters.graphs = graphs;
  failCapture = 0;
  hideCaptureNodes = 0;
  failNodeUpdates = 0;
  lastStream = nullptr;
  // A test that left a reference (its teardown says so) leaves none to the
  // next.
  primaryReferences = 0;
  lostAllocations.clear();
}

/// Makes every later cuStreamGetCaptureInfo fail (until reset).
__attribute__((visibility("default"))) void fakeCudaHideCaptureNodes() {
  hideCaptureNodes = 1;
}

/// Makes every later cuGraphExecKernelNodeSetParams fail (until reset).
__attribute__((visibility("default"))) void fakeCudaFailNodeUpdates() {
  failNodeUpdates = 1;
}

/// Makes every later cuStreamBeginCapture fail (until reset).
__attribute__((visibility("default"))) void fakeCudaFailCaptures() {
  failCapture = 1;
}

/// Returns the stream of the last work done outside a capture.
__attribute__((visibility("default"))) void *fakeCudaLastStream() {
  return lastStream;
}

/// Returns the number of allocations not yet freed (for tests).
__attribute__((visibility("default"))) int fakeCudaLiveAllocations() {
  return liveAllocations;
}

/// Returns the primary context's references (for tests: none may remain).
__attribute__((visibility("default"))) int fakeCudaPrimaryReferences() {
  return primaryReferences;
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
  ++primaryReferences;
  *ctx = &contextMarker;
  return 0;
}
Result cuDevicePrimaryCtxRelease_v2(int) {
  if (primaryReferences == 0)
    return 201; // CUDA_ERROR_INVALID_CONTEXT
  if (--primaryReferences == 0) {
    // The reset: the memory is gone, though its addresses stay recorded.
    // It still counts as live: the program never freed it, which a test
    // must see, and a cuMemFree after the reset fails.
    for (auto &[p, bytes] : allocations) {
      lostAllocations[p] = bytes;
      std::free(reinterpret_cast<void *>(p));
    }
    allocations.clear();
  }
  return 0;
}
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
Result cuCtxSetCurrent(void *) { return 0; }
Result cuMemcpyHtoD_v2(DevicePtr dst, const void *src, size_t bytes) {
  if (lost(dst, bytes))
    return 1; // CUDA_ERROR_INVALID_VALUE
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return 0;
}
Result cuMemcpyDtoH_v2(void *dst, DevicePtr src, size_t bytes) {
  if (lost(src, bytes))
    return 1; // CUDA_ERROR_INVALID_VALUE
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return 0;
}
Result cuModuleLoadData(void **module, const void *image) {
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text, "FAKECUBIN", 9) != 0 &&
      std::strncmp(text, "FAKEPTX", 7) != 0)
    return 209; // CUDA_ERROR_NO_BINARY_FOR_GPU
  // A module's functions start without opt-ins, whatever an earlier
  // model's asked for.
  for (FakeFunction &f : functions)
    f.sharedOptIn = 0;
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
Result cuFuncSetAttribute(void *function, int attribute, int value) {
  if (attribute == 8) // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    static_cast<FakeFunction *>(function)->sharedOptIn = value;
  return 0;
}
Result cuMemAlloc_v2(DevicePtr *ptr, size_t bytes) {
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  // Poison fresh memory so that tests notice reads of unwritten data.
  std::memset(p, 0x7f, bytes);
  ++liveAllocations;
  *ptr = reinterpret_cast<DevicePtr>(p);
  // The memory may overlap ranges a reset freed: they are live again.
  auto first = lostAllocations.lower_bound(*ptr);
  if (first != lostAllocations.begin() &&
      std::prev(first)->first + std::prev(first)->second > *ptr)
    --first;
  lostAllocations.erase(first, lostAllocations.lower_bound(*ptr + bytes));
  allocations[*ptr] = bytes;
  return 0;
}
Result cuMemFree_v2(DevicePtr ptr) {
  if (!allocations.erase(ptr))
    return 1; // CUDA_ERROR_INVALID_VALUE: freed already, or by a reset
  --liveAllocations;
  std::free(reinterpret_cast<void *>(ptr));
  return 0;
}
Result cuMemAllocHost_v2(void **ptr, size_t bytes) {
  *ptr = std::malloc(bytes ? bytes : 1);
  if (!*ptr)
    return 2; // CUDA_ERROR_OUT_OF_MEMORY
  ++counters.pinned;
  return 0;
}
Result cuMemFreeHost(void *ptr) {
  --counters.pinned;
  std::free(ptr);
  return 0;
}
Result cuMemcpyHtoDAsync_v2(DevicePtr dst, const void *src, size_t bytes,
                            void *stream) {
  if (lost(dst, bytes))
    return 1; // CUDA_ERROR_INVALID_VALUE
  enqueue(stream,
          [=] { std::memcpy(reinterpret_cast<void *>(dst), src, bytes); });
  return 0;
}
Result cuMemcpyDtoHAsync_v2(void *dst, DevicePtr src, size_t bytes,
                            void *stream) {
  if (lost(src, bytes))
    return 1; // CUDA_ERROR_INVALID_VALUE
  enqueue(stream, [=] {
    std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  });
  return 0;
}
Result cuMemcpyDtoDAsync_v2(DevicePtr dst, DevicePtr src, size_t bytes,
                            void *stream) {
  if (lost(dst, bytes) || lost(src, bytes))
    return 1; // CUDA_ERROR_INVALID_VALUE
  ++counters.deviceCopies;
  enqueue(stream, [=] {
    std::memcpy(reinterpret_cast<void *>(dst),
                reinterpret_cast<const void *>(src), bytes);
  });
  return 0;
}
Result cuStreamCreate(void **stream, unsigned) {
  *stream = &streamMarker;
  return 0;
}
// Events: every stream is synchronous, so an event is complete once
// recorded; waits are only counted. An event holds the device clock when
// it was recorded; the time between two is 1 us plus the matmuls' cost.
Result cuEventCreate(void **event, unsigned) {
  *event = new double(0);
  return 0;
}
Result cuEventDestroy_v2(void *event) {
  delete static_cast<double *>(event);
  return 0;
}
Result cuEventRecord(void *event, void *) {
  *static_cast<double *>(event) = clockMs;
  return 0;
}
Result cuEventSynchronize(void *) { return 0; }
Result cuEventElapsedTime(float *ms, void *start, void *end) {
  *ms = 0.001f + static_cast<float>(*static_cast<double *>(end) -
                                    *static_cast<double *>(start));
  return 0;
}
Result cuStreamWaitEvent(void *, void *, unsigned) {
  ++counters.streamWaits;
  return 0;
}
Result cuStreamBeginCapture_v2(void *stream, int mode) {
  // The runtime must not block other threads' CUDA calls (thread-local).
  if (failCapture || capturingStream || mode != 1)
    return 900; // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
  capturingStream = stream;
  captured.clear();
  return 0;
}
Result cuStreamEndCapture(void *stream, void **graph) {
  if (stream != capturingStream)
    return 901; // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
  capturingStream = nullptr;
  *graph = new FakeGraph{std::move(captured)};
  captured.clear();
  ++counters.captures;
  ++counters.graphs;
  return 0;
}
/// The node the next captured work depends on: the last one captured.
Result cuStreamGetCaptureInfo_v3(void *stream, int *status,
                                 unsigned long long *id, void **graph,
                                 const void *const **dependencies,
                                 const void **edgeData, size_t *count) {
  static const void *last = nullptr;
  if (hideCaptureNodes)
    return 1; // CUDA_ERROR_INVALID_VALUE
  bool active = capturingStream && stream == capturingStream;
  *status = active ? 1 : 0;
  if (id)
    *id = 0;
  if (graph)
    *graph = nullptr;
  last = active && !captured.empty() ? captured.back().node : nullptr;
  if (dependencies)
    *dependencies = &last;
  if (edgeData)
    *edgeData = nullptr;
  if (count)
    *count = last ? 1 : 0;
  return 0;
}
Result cuGraphInstantiateWithFlags(void **exec, void *graph,
                                   unsigned long long) {
  // The instance's own copies of the launches, named by the graph's.
  Ops ops = static_cast<FakeGraph *>(graph)->ops;
  for (Op &op : ops)
    if (op.call)
      op.call = std::make_shared<KernelCall>(*op.call);
  *exec = new FakeGraphExec{std::move(ops)};
  ++counters.instantiations;
  ++counters.graphs;
  return 0;
}
Result cuGraphExecUpdate_v2(void *exec, void *graph, void *) {
  // As the driver: only a graph of the same shape can update an instance.
  Ops &target = static_cast<FakeGraphExec *>(exec)->ops;
  const Ops &source = static_cast<FakeGraph *>(graph)->ops;
  if (target.size() != source.size())
    return 910; // CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
  target = source;
  ++counters.updates;
  return 0;
}
struct FakeKernelNodeParams {
  void *function;
  unsigned gx, gy, gz, bx, by, bz, shared;
  void **params;
  void **extra;
  void *kernel;
  void *context;
};
Result cuGraphExecKernelNodeSetParams_v2(void *exec, const void *node,
                                         const FakeKernelNodeParams *p) {
  if (failNodeUpdates)
    return 1; // CUDA_ERROR_INVALID_VALUE
  for (Op &op : static_cast<FakeGraphExec *>(exec)->ops) {
    if (!op.call || op.node != node)
      continue;
    const FakeFunction &f = *static_cast<FakeFunction *>(p->function);
    if (f.kernel != op.call->kernel)
      return 1; // CUDA_ERROR_INVALID_VALUE: another function
    op.call->threads = p->gx * p->gy * p->gz * p->bx * p->by * p->bz;
    op.call->values.clear();
    for (unsigned i = 0; i < f.arity - f.maps; ++i)
      op.call->values.push_back(*static_cast<DevicePtr *>(p->params[i]));
    ++counters.nodeUpdates;
    return 0;
  }
  return 1; // CUDA_ERROR_INVALID_VALUE: not a node of the instance
}
Result cuGraphLaunch(void *exec, void *stream) {
  ++counters.graphLaunches;
  lastStream = stream;
  for (auto &op : static_cast<FakeGraphExec *>(exec)->ops)
    op();
  return 0;
}
Result cuGraphDestroy(void *graph) {
  delete static_cast<FakeGraph *>(graph);
  --counters.graphs;
  return 0;
}
Result cuGraphExecDestroy(void *exec) {
  delete static_cast<FakeGraphExec *>(exec);
  --counters.graphs;
  return 0;
}
Result cuStreamDestroy_v2(void *) { return 0; }
Result cuStreamSynchronize(void *) { return 0; }
/// cuTensorMapEncodeTiled: writes its arguments into the map's words, in
/// order: the data type, rank, address, dims 0 and 1, stride 1, boxes 0
/// and 1, element strides 0 and 1, interleave, swizzle, L2 promotion and
/// out-of-bounds fill; fails while KILN_FAKE_TENSOR_MAP_FAILS is set.
Result cuTensorMapEncodeTiled(unsigned long long *map, int dataType,
                              unsigned rank, void *global,
                              const unsigned long long *dims,
                              const unsigned long long *strides,
                              const unsigned *box,
                              const unsigned *elementStrides, int interleave,
                              int swizzle, int l2Promotion, int oobFill) {
  // A test of the failure path sets this.
  if (std::getenv("KILN_FAKE_TENSOR_MAP_FAILS"))
    return 1; // CUDA_ERROR_INVALID_VALUE
  const unsigned long long words[16] = {(unsigned long long)dataType,
                                        rank,
                                        (unsigned long long)global,
                                        dims[0],
                                        dims[1],
                                        strides[0],
                                        box[0],
                                        box[1],
                                        elementStrides[0],
                                        elementStrides[1],
                                        (unsigned long long)interleave,
                                        (unsigned long long)swizzle,
                                        (unsigned long long)l2Promotion,
                                        (unsigned long long)oobFill,
                                        0,
                                        0};
  std::memcpy(map, words, sizeof(words));
  return 0;
}
Result cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned shared,
                      void *stream, void **params, void **) {
  // As the driver, the argument values are copied at the launch: a graph
  // replays the values it was captured with.
  unsigned threads = gx * gy * gz * bx * by * bz;
  const FakeFunction &f = *static_cast<FakeFunction *>(function);
  if (shared > 48 * 1024 && int(shared) > f.sharedOptIn)
    return 1; // CUDA_ERROR_INVALID_VALUE
  std::vector<DevicePtr> values;
  for (unsigned i = 0; i < f.arity - f.maps; ++i)
    values.push_back(*static_cast<DevicePtr *>(params[i]));
  for (unsigned i = 0; i < f.maps; ++i)
    std::memcpy(fakeGemmMaps[i], params[f.arity - f.maps + i],
                sizeof(fakeGemmMaps[i]));
  if (!capturingStream || stream != capturingStream)
    ++counters.eagerKernels;
  auto call =
      std::make_shared<KernelCall>(KernelCall{f.kernel, threads, values});
  const void *node = call.get();
  enqueueOp(stream, Op{nullptr, std::move(call), node});
  return 0;
}
/// cuLaunchKernelEx: counted, then run as cuLaunchKernel runs it (the
/// stand-in runs kernels in stream order, which a programmatic dependent
/// launch allows too).
struct FakeLaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int value;
  };
};
struct FakeLaunchConfig {
  unsigned gx, gy, gz, bx, by, bz, shared;
  void *stream;
  FakeLaunchAttribute *attrs;
  unsigned count;
};
Result cuLaunchKernelEx(const FakeLaunchConfig *config, void *function,
                        void **params, void **extra) {
  ++counters.launchesEx;
  for (unsigned i = 0; i < config->count; ++i)
    if (config->attrs[i].id == 6 && config->attrs[i].value)
      ++counters.overlappedLaunches;
  return cuLaunchKernel(function, config->gx, config->gy, config->gz,
                        config->bx, config->by, config->bz, config->shared,
                        config->stream, params, extra);
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
