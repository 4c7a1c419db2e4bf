//===- CudaExecutor.cpp - Run a plan with the CUDA driver API -------------===//
//
// The weights and splat constants are uploaded once per model
// (CudaConstants) and shared by its execution contexts; each context has its
// own stream, arena, staging, cuBLASLt handle and workspace, and its own
// copy of the kernels' module (so its own index check flag). A context's
// first run issues the steps one by one; later runs replay them as a CUDA
// graph (CudaGraphs.h). Host-memory I/O goes through page-locked staging, so
// its copies are asynchronous; the only host synchronization of `run` is at
// its end, and `enqueue` has none.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"
#include "CudaDriver.h"
#include "CudaGraphs.h"
#include "Executor.h"
#include "kiln/runtime/SplatStorage.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

using namespace kiln::rt;

namespace {

/// Alignment cuMemAlloc guarantees, and the most cuBLASLt ever asks for.
constexpr uint32_t kMaxAlign = 256;

/// cuBLASLt workspace; NVIDIA recommends 32 MiB on Hopper.
constexpr size_t kWorkspaceBytes = 32u << 20;
/// Heuristic candidates timed for a matmul, and calls timed of each (after
/// one untimed): small GEMMs differ by microseconds, so several calls
/// average out the event resolution.
constexpr int kAlgoCandidates = 8;
constexpr int kTimedCalls = 5;

/// What an algorithm's validity and speed depend on: the matmul's types,
/// shape, layout and epilogue, and the operands' alignment (not the
/// buffers, nor alpha and beta beyond whether C is read).
std::vector<int64_t> tunedKey(const MatmulStep &m, const uint32_t align[4]) {
  return {static_cast<int64_t>(m.dtype),
          m.transA,
          m.transB,
          m.batch,
          m.m,
          m.n,
          m.k,
          m.strideA,
          m.strideB,
          m.strideC,
          m.bias != kNoBuffer,
          static_cast<int64_t>(m.activation),
          m.tf32,
          m.residual != kNoBuffer || m.beta != 0.0f,
          align[0],
          align[1],
          align[2],
          align[3]};
}
/// Bytes of a splat's value uploaded before the device copies it onward.
constexpr size_t kSplatUploadBytes = 64u << 10;

/// Returns the largest power of two (at most `kMaxAlign`) dividing `value`.
static uint32_t alignmentOf(uint64_t value) {
  if (value == 0)
    return kMaxAlign;
  uint64_t lowBit = value & (~value + 1);
  return static_cast<uint32_t>(std::min<uint64_t>(lowBit, kMaxAlign));
}

/// Makes a context current on this thread for one scope, restoring the
/// caller's context afterwards so that an application's own CUDA work is not
/// disturbed.
class ContextScope {
public:
  /// Pushes `ctx`; `ok()` says whether it worked.
  ContextScope(const cu::DriverApi &api, cu::Context ctx) : api(api) {
    result = api.ctxPushCurrent(ctx);
  }
  /// Pops the context pushed by the constructor.
  ~ContextScope() {
    if (result == cu::kSuccess) {
      cu::Context popped;
      api.ctxPopCurrent(&popped);
    }
  }
  /// The result of the push.
  cu::Result result;

private:
  const cu::DriverApi &api;
};

/// The cuBLASLt objects of one matmul step, in cuBLAS's column-major terms.
struct MatmulPlan {
  /// Index of the step in the plan.
  size_t step = 0;
  /// The operation: fp32 compute and scale, transposes.
  lt::MatmulDesc desc = nullptr;
  /// Layout of cuBLAS's A, which is the plan's B (see `prepareMatmul`).
  lt::MatrixLayout aLayout = nullptr;
  /// Layout of cuBLAS's B, which is the plan's A.
  lt::MatrixLayout bLayout = nullptr;
  /// Layout of C and D (the same memory).
  lt::MatrixLayout cLayout = nullptr;
  /// Batch strides in bytes, which limit the alignment of later matrices.
  uint64_t strideBytes[3] = {0, 0, 0};

  /// An algorithm chosen for one alignment class of the operand pointers
  /// (cuBLAS's A, B, C order, then the bias).
  struct Choice {
    /// Guaranteed alignments the algorithm was chosen for.
    uint32_t align[4];
    /// The algorithm.
    lt::MatmulAlgo algo;
    /// Whether it won a timing among the heuristic's candidates (else it is
    /// the heuristic's first, until a run can time them).
    bool timed;
  };
  /// Algorithms chosen so far; usually one.
  std::vector<Choice> choices;
};

/// The cuBLASLt objects of every matmul step of one plan; `ofStep` maps a
/// step to its plan.
struct MatmulSet {
  std::vector<MatmulPlan> plans;
  std::vector<size_t> ofStep;
  /// What the plan's steps issue at these dims (each launch's kernel, each
  /// matmul's problem shape, each copy), but not the grids or the dims the
  /// kernels take: with the I/O addresses, the run's shape bucket.
  std::vector<cu::DevicePtr> issues;
  /// Whether a run at these dims has issued the steps one by one.
  bool issued = false;
};

/// The CUDA driver backend; see `createCudaExecutor`.
/// What the execution contexts of one model share on the device: the
/// weights and the splat constants, uploaded by the first run of any of
/// them, read-only after.
class CudaConstants {
public:
  explicit CudaConstants(Artifact &artifact) : artifact(artifact) {}
  /// Frees the device memory and releases the primary context.
  ~CudaConstants();

  /// Opens the driver and uploads once; a failure is retried by the next
  /// call. The artifact's host copy of the weights is released after.
  Status ensureUploaded();

  const cu::DriverApi *api = nullptr;
  cu::Device device = 0;
  cu::Context context = nullptr;
  cu::DevicePtr weights = 0;
  /// Storage of the splat buffers, one per slot of `planSplatSlots`.
  std::vector<cu::DevicePtr> splats;
  std::vector<size_t> splatSlotOf;

private:
  Status upload(cu::Stream stream);
  Status uploadSplats(cu::Stream stream);
  void freeMemory();

  Artifact &artifact;
  std::mutex mutex;
  bool ready = false;
  bool hasContext = false;
};

class CudaExecutor : public Executor {
public:
  /// Binds to `artifact`; touches no driver yet.
  CudaExecutor(Artifact &artifact, const CudaOptions &options,
               std::shared_ptr<CudaConstants> constants)
      : artifact(artifact), options(options), constants(std::move(constants)) {}
  /// Releases device resources.
  ~CudaExecutor() override { release(); }

  /// Runs the plan; see `Executor::run`.
  Status run(const void *const *inputs, void *const *outputs, Memory memory,
             const RunShape &shape) override;
  Status enqueue(const void *const *inputs, void *const *outputs, void *stream,
                 const RunShape &shape) override;
  Status synchronize() override;
  Status timeDeviceRuns(const void *const *hostInputs, unsigned warmup,
                        unsigned iters, std::vector<double> &ms) override;
  std::unique_ptr<Executor> createContext() override {
    return std::make_unique<CudaExecutor>(artifact, options, constants);
  }

private:
  Status initialize();
  Status initializeInContext();
  Status loadKernels();
  Status prepareMatmul(size_t stepIndex, MatmulPlan &plan);
  /// Points the executor at the run's plan and dims, preparing that plan's
  /// matmuls on first use.
  Status bindRun(const RunShape &shape);
  void destroyMatmuls(MatmulSet &set);
  const Artifact &plan() const { return runPlan ? *runPlan : artifact; }
  /// How to time a matmul step's candidates: `call` enqueues one call of
  /// the step with a candidate algorithm on `stream`.
  struct CandidateTiming {
    std::function<lt::LtStatus(const lt::MatmulAlgo &)> call;
    cu::Stream stream;
  };
  /// The algorithm for `plan` at `align`: the one chosen before, or the
  /// heuristic's; with `timing`, the fastest of its candidates (timed once
  /// per alignment class).
  Status chooseAlgo(MatmulPlan &plan, const uint32_t align[4],
                    const lt::MatmulAlgo *&algo,
                    const CandidateTiming *timing = nullptr);
  /// The fastest of `candidates` by `timing`, or the first when none can be
  /// timed.
  lt::MatmulAlgo fastestAlgo(const std::vector<lt::MatmulAlgo> &candidates,
                             const CandidateTiming &timing);
  Status setBiasPointer(MatmulPlan &plan, cu::DevicePtr bias);
  /// Device buffers for host-memory I/O, each with a page-locked host
  /// mirror so that the copies between them are asynchronous DMA.
  struct Staging {
    std::vector<cu::DevicePtr> device;
    std::vector<void *> pinned;
  };
  Status ensureStaging(Staging &staging, const std::vector<uint32_t> &ids);
  void freeStaging(Staging &staging);
  Status stageInputs(const void *const *inputs);
  Status queueOutputCopies();
  Status ensureReady();
  Status waitForLastRun(cu::Stream target);
  Status launchPlan(const std::vector<cu::DevicePtr> &in,
                    const std::vector<cu::DevicePtr> &out, cu::Stream target);
  /// The run's shape bucket: its I/O addresses and what its steps issue
  /// (MatmulSet::issues).
  GraphCache::Key bucketOf(const std::vector<cu::DevicePtr> &in,
                           const std::vector<cu::DevicePtr> &out) const;
  Status issueSteps(const std::vector<cu::DevicePtr> &in,
                    const std::vector<cu::DevicePtr> &out, cu::Stream target);
  /// Queues the copy of the kernels' index flag into indexFlagMirror.
  Status queueIndexFlagRead();
  Status takeIndexFault(unsigned fault);
  cu::DevicePtr address(uint32_t id, const std::vector<cu::DevicePtr> &in,
                        const std::vector<cu::DevicePtr> &out) const;
  void release();

  Artifact &artifact;
  const CudaOptions options;
  std::shared_ptr<CudaConstants> constants;
  const cu::DriverApi *api = nullptr;
  const lt::LtApi *ltApi = nullptr;
  bool ready = false;
  bool hasContext = false;
  cu::Device device = 0;
  cu::Context context = nullptr;
  cu::Stream stream = nullptr;
  cu::Module module = nullptr;
  std::vector<cu::Function> functions;
  /// The kernels' `kiln_index_error` flag; 0 without index checks.
  cu::DevicePtr indexError = 0;
  cu::DevicePtr arena = 0;
  cu::DevicePtr workspace = 0;
  lt::Handle ltHandle = nullptr;
  /// The matmul plans per set of dims values (the one empty set of a static
  /// model).
  std::map<std::vector<int64_t>, MatmulSet> matmulSets;
  /// The timed winners by matmul shape and alignment (tunedKey), shared by
  /// the plans of every set of dims: a decoding loop, whose dims change
  /// every token while its matmuls keep their shapes, times each once.
  std::map<std::vector<int64_t>, lt::MatmulAlgo> tunedAlgos;
  /// The current run's set.
  MatmulSet *matmuls = nullptr;
  /// The shape buckets (bucketOf) whose steps a run has issued one by one:
  /// their kernels are loaded and their matmuls timed, so a run at new dims
  /// in one of them can be captured at once.
  std::set<GraphCache::Key> issuedBuckets;
  /// The current run's plan (the artifact's own for a static model) and its
  /// dims' values, which every kernel takes after its pointers.
  /// `runPlan` is valid during the run only (the Model's cache owns it);
  /// the dims are copied.
  const Artifact *runPlan = nullptr;
  std::vector<int64_t> runDims;
  Staging inputStaging;
  Staging outputStaging;
  /// Page-locked word the index check flag is read into.
  unsigned *indexFlagMirror = nullptr;
  /// Recorded at the end of every run on the stream it ran on: the next
  /// run, on whatever stream, waits for it before it reuses the arena.
  cu::Event lastRun = nullptr;
  bool lastRunRecorded = false;
  /// Recorded on the legacy default stream by a synchronous device-memory
  /// run, so that it reads inputs the caller wrote there.
  cu::Event inputsReady = nullptr;
  /// Set while a graph capture records the steps.
  bool capturing = false;
  /// Set when a capture failed: this context issues its steps one by one.
  bool graphsFailed = false;
  GraphCache graphs;
};

} // namespace

Executor::~Executor() = default;

std::unique_ptr<Executor>
kiln::rt::createCudaExecutor(Artifact &artifact, const CudaOptions &options) {
  return std::make_unique<CudaExecutor>(
      artifact, options, std::make_shared<CudaConstants>(artifact));
}

Status CudaConstants::ensureUploaded() {
  std::lock_guard<std::mutex> lock(mutex);
  if (ready)
    return Status::ok();
  if (Status s = cu::loadCudaDriver(api); !s.isOk())
    return s;
  // Device 0 of what CUDA_VISIBLE_DEVICES exposes; the primary context is
  // shared with the CUDA runtime API, so applications interoperate.
  if (!hasContext) {
    if (cu::Result r = api->deviceGet(&device, 0); r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuDeviceGet");
    if (cu::Result r = api->primaryCtxRetain(&context, device);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuDevicePrimaryCtxRetain");
    hasContext = true;
  }
  Status s;
  {
    ContextScope scope(*api, context);
    if (scope.result != cu::kSuccess)
      return cu::cudaError(*api, scope.result, "cuCtxPushCurrent");
    cu::Stream stream = nullptr;
    if (cu::Result r = api->streamCreate(&stream, cu::kStreamNonBlocking);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuStreamCreate");
    s = upload(stream);
    api->streamDestroy(stream);
    if (!s.isOk())
      freeMemory();
  }
  if (!s.isOk())
    return s;
  ready = true;
  // The device holds the weights now; do not keep a second host copy.
  artifact.releaseWeights();
  return Status::ok();
}

Status CudaConstants::upload(cu::Stream stream) {
  if (artifact.weightBytes() != 0) {
    if (cu::Result r = api->memAlloc(&weights, artifact.weightBytes());
        r != cu::kSuccess)
      return cu::cudaError(*api, r,
                           "allocating the weights (" +
                               std::to_string(artifact.weightBytes()) +
                               " bytes)");
    if (cu::Result r = api->memcpyHtoDAsync(weights, artifact.weightData(),
                                            artifact.weightBytes(), stream);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "uploading the weights");
    if (cu::Result r = api->streamSynchronize(stream); r != cu::kSuccess)
      return cu::cudaError(*api, r, "uploading the weights");
  }
  return uploadSplats(stream);
}

void CudaConstants::freeMemory() {
  for (cu::DevicePtr p : splats)
    if (p)
      api->memFree(p);
  splats.clear();
  splatSlotOf.clear();
  if (weights)
    api->memFree(weights);
  weights = 0;
}

CudaConstants::~CudaConstants() {
  if (!api || !hasContext)
    return;
  {
    ContextScope scope(*api, context);
    freeMemory();
  }
  api->primaryCtxRelease(device);
}

Status CudaExecutor::initialize() {
  if (Status s = cu::loadCudaDriver(api); !s.isOk())
    return s;
  // Device 0 of what CUDA_VISIBLE_DEVICES exposes; the primary context is
  // shared with the CUDA runtime API, so applications interoperate.
  if (cu::Result r = api->deviceGet(&device, 0); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuDeviceGet");
  if (cu::Result r = api->primaryCtxRetain(&context, device); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuDevicePrimaryCtxRetain");
  hasContext = true;
  Status s;
  {
    ContextScope scope(*api, context);
    if (scope.result != cu::kSuccess)
      s = cu::cudaError(*api, scope.result, "cuCtxPushCurrent");
    else
      s = initializeInContext();
  }
  // The shared weights last, so that a context that cannot run (kernels
  // that do not load on this GPU, say) uploads nothing.
  if (s.isOk())
    s = constants->ensureUploaded();
  if (!s.isOk()) {
    release();
    return s;
  }
  ready = true;
  return Status::ok();
}

Status CudaExecutor::initializeInContext() {
  if (cu::Result r = api->streamCreate(&stream, cu::kStreamNonBlocking);
      r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuStreamCreate");
  for (cu::Event *event : {&lastRun, &inputsReady})
    if (cu::Result r = api->eventCreate(event, cu::kEventDisableTiming);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuEventCreate");
  graphs.bind(*api);
  if (Status s = loadKernels(); !s.isOk())
    return s;
  if (artifact.arenaBytes) {
    if (cu::Result r = api->memAlloc(&arena, artifact.arenaBytes);
        r != cu::kSuccess)
      return cu::cudaError(*api, r,
                           "allocating the arena (" +
                               std::to_string(artifact.arenaBytes) + " bytes)");
  }
  bool hasMatmul = false;
  for (const Step &step : artifact.steps)
    hasMatmul |= step.kind == Step::Kind::Matmul;
  if (hasMatmul) {
    if (Status s = lt::loadCublasLt(ltApi); !s.isOk())
      return s;
    if (lt::LtStatus st = ltApi->create(&ltHandle); st != lt::kSuccess)
      return lt::cublasError(*ltApi, st, "cublasLtCreate");
    if (cu::Result r = api->memAlloc(&workspace, kWorkspaceBytes);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "allocating the cuBLASLt workspace");
  }
  // A static plan's matmuls now, so that a shape cuBLASLt cannot run fails
  // at the first run; a symbolic plan's per set of dims, at its first run.
  if (artifact.symbolic.empty())
    return bindRun(RunShape());
  return Status::ok();
}

/// Most sets of dims whose cuBLASLt objects a context keeps; past it the
/// oldest is destroyed.
constexpr size_t kMaxMatmulSets = 64;

/// Most shape buckets a context remembers as issued.
constexpr size_t kMaxIssuedBuckets = 64;

Status CudaExecutor::bindRun(const RunShape &shape) {
  runPlan = shape.plan;
  runDims = shape.dims ? *shape.dims : std::vector<int64_t>();
  auto it = matmulSets.find(runDims);
  if (it != matmulSets.end()) {
    matmuls = &it->second;
    return Status::ok();
  }
  if (matmulSets.size() >= kMaxMatmulSets) {
    // The graphs stay: a captured cuBLASLt call keeps its kernels and
    // their arguments, not the descriptors it was made from (only the
    // workspace, which the context keeps).
    destroyMatmuls(matmulSets.begin()->second);
    matmulSets.erase(matmulSets.begin());
  }
  MatmulSet &set = matmulSets[runDims];
  matmuls = &set;
  const std::vector<Step> &steps = plan().steps;
  set.ofStep.assign(steps.size(), SIZE_MAX);
  for (size_t i = 0; i < steps.size(); ++i) {
    set.issues.push_back(static_cast<cu::DevicePtr>(steps[i].kind));
    if (steps[i].kind == Step::Kind::Launch)
      set.issues.push_back(steps[i].launch.kernel);
    if (steps[i].kind != Step::Kind::Matmul)
      continue;
    const MatmulStep &m = steps[i].matmul;
    for (int64_t size : {m.m, m.n, m.k, m.batch, m.outerBatch})
      set.issues.push_back(static_cast<cu::DevicePtr>(size));
    set.ofStep[i] = set.plans.size();
    set.plans.emplace_back();
    if (Status s = prepareMatmul(i, set.plans.back()); !s.isOk()) {
      destroyMatmuls(set);
      matmulSets.erase(runDims);
      matmuls = nullptr;
      return s;
    }
  }
  return Status::ok();
}

void CudaExecutor::destroyMatmuls(MatmulSet &set) {
  for (MatmulPlan &plan : set.plans) {
    for (lt::MatrixLayout layout : {plan.aLayout, plan.bLayout, plan.cLayout})
      if (layout)
        ltApi->matrixLayoutDestroy(layout);
    if (plan.desc)
      ltApi->matmulDescDestroy(plan.desc);
  }
  set.plans.clear();
  set.ofStep.clear();
  set.issues.clear();
}

Status CudaExecutor::loadKernels() {
  // Validation guarantees code whenever a step launches a kernel.
  if (artifact.kernelNames.empty() ||
      (artifact.cubin.empty() && artifact.ptx.empty()))
    return Status::ok();
  // The cubin is exact for `arch`; PTX lets a newer GPU JIT-compile the same
  // kernels when the cubin does not match it.
  std::string errors;
  if (!artifact.cubin.empty()) {
    cu::Result r = api->moduleLoadData(&module, artifact.cubin.data());
    if (r != cu::kSuccess) {
      module = nullptr;
      errors = "cubin for " + artifact.arch + ": " + cu::cudaErrorText(*api, r);
    }
  }
  if (!module && !artifact.ptx.empty()) {
    // cuModuleLoadData needs NUL-terminated PTX text.
    std::string ptx = artifact.ptx;
    ptx.push_back('\0');
    cu::Result r = api->moduleLoadData(&module, ptx.data());
    if (r != cu::kSuccess) {
      module = nullptr;
      errors += (errors.empty() ? "" : "; ") + std::string("PTX: ") +
                cu::cudaErrorText(*api, r);
    }
  }
  if (!module)
    return Status::error(StatusCode::Cuda,
                         "could not load the model's kernels on this GPU (" +
                             errors + ")");
  functions.resize(artifact.kernelNames.size());
  std::vector<uint32_t> sharedNeeded(functions.size(), 0);
  for (const Step &step : artifact.steps)
    if (step.kind == Step::Kind::Launch)
      sharedNeeded[step.launch.kernel] =
          std::max(sharedNeeded[step.launch.kernel], step.launch.sharedBytes);
  for (size_t i = 0; i < functions.size(); ++i) {
    const std::string &name = artifact.kernelNames[i];
    if (cu::Result r =
            api->moduleGetFunction(&functions[i], module, name.c_str());
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "finding kernel '" + name + "'");
    // Above 48 KiB a kernel must opt in to its dynamic shared memory.
    if (sharedNeeded[i] > cu::kDefaultMaxDynamicShared) {
      if (sharedNeeded[i] > static_cast<uint32_t>(INT_MAX))
        return Status::error(StatusCode::Unsupported,
                             "kernel '" + name + "' asks for " +
                                 std::to_string(sharedNeeded[i]) +
                                 " bytes of shared memory");
      if (cu::Result r = api->funcSetAttribute(
              functions[i], cu::kFuncAttributeMaxDynamicSharedSizeBytes,
              static_cast<int>(sharedNeeded[i]));
          r != cu::kSuccess)
        return cu::cudaError(*api, r,
                             "allowing " + std::to_string(sharedNeeded[i]) +
                                 " bytes of shared memory for kernel '" + name +
                                 "'");
    }
  }
  if (!artifact.indexSites.empty()) {
    size_t bytes = 0;
    if (cu::Result r = api->moduleGetGlobal(&indexError, &bytes, module,
                                            "kiln_index_error");
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "finding the index check flag");
    if (bytes != sizeof(unsigned))
      return Status::error(StatusCode::CorruptArtifact,
                           "the kernels' kiln_index_error flag has " +
                               std::to_string(bytes) + " bytes, expected 4");
    void *mirror = nullptr;
    if (cu::Result r = api->memAllocHost(&mirror, sizeof(unsigned));
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "allocating page-locked host memory");
    indexFlagMirror = static_cast<unsigned *>(mirror);
  }
  return Status::ok();
}

/// Returns the cuBLASLt data type of `dtype`.
static int ltType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return lt::kR16F;
  case DType::BF16:
    return lt::kR16BF;
  case DType::F64:
    return lt::kR64F;
  default:
    return lt::kR32F;
  }
}

Status CudaExecutor::prepareMatmul(size_t stepIndex, MatmulPlan &plan) {
  const MatmulStep &m = this->plan().steps[stepIndex].matmul;
  plan.step = stepIndex;
  std::string where = "matmul step " + std::to_string(stepIndex);
  for (int64_t v : {m.batch, m.m, m.n, m.k})
    if (v > INT32_MAX)
      return Status::error(StatusCode::Unsupported,
                           where + ": extents above 2^31-1 are not supported "
                                   "by cuBLASLt");
  auto check = [&](lt::LtStatus st, const char *what) {
    return st == lt::kSuccess
               ? Status::ok()
               : lt::cublasError(*ltApi, st, where + ": " + what);
  };
  // Double matrices compute and scale in fp64, all others in fp32 (with
  // TF32 inputs when the step allows it).
  bool isDouble = m.dtype == DType::F64;
  int compute = isDouble  ? lt::kCompute64F
                : m.tf32 ? lt::kCompute32FFastTf32
                          : lt::kCompute32F;
  if (Status s = check(ltApi->matmulDescCreate(&plan.desc, compute,
                                               isDouble ? lt::kR64F
                                                        : lt::kR32F),
                       "cublasLtMatmulDescCreate");
      !s.isOk())
    return s;
  // cuBLAS is column-major and a row-major matrix is its column-major
  // transpose, so compute C^T = op(B)^T op(A)^T: cuBLAS's A is our B and its
  // B is our A, each with the same transpose flag, and nothing is moved.
  int32_t opA = m.transB ? lt::kOpT : lt::kOpN;
  int32_t opB = m.transA ? lt::kOpT : lt::kOpN;
  if (Status s = check(ltApi->matmulDescSetAttribute(plan.desc, lt::kDescTransA,
                                                     &opA, sizeof(opA)),
                       "setting TRANSA");
      !s.isOk())
    return s;
  if (Status s = check(ltApi->matmulDescSetAttribute(plan.desc, lt::kDescTransB,
                                                     &opB, sizeof(opB)),
                       "setting TRANSB");
      !s.isOk())
    return s;
  // The epilogue: bias (a vector over D's rows, which are our columns),
  // then the activation. The bias pointer is set per call; a stand-in with
  // the largest alignment guides the first choice of algorithm.
  uint32_t epilogue = lt::kEpilogueDefault;
  if (m.activation == MatmulActivation::Relu)
    epilogue = lt::kEpilogueRelu;
  else if (m.activation == MatmulActivation::Gelu)
    epilogue = lt::kEpilogueGelu;
  if (m.bias != kNoBuffer)
    epilogue =
        (epilogue == lt::kEpilogueDefault ? 0 : epilogue) | lt::kEpilogueBias;
  if (epilogue != lt::kEpilogueDefault)
    if (Status s =
            check(ltApi->matmulDescSetAttribute(plan.desc, lt::kDescEpilogue,
                                                &epilogue, sizeof(epilogue)),
                  "setting the epilogue");
        !s.isOk())
      return s;
  if (Status s = setBiasPointer(plan, kMaxAlign); !s.isOk())
    return s;
  int type = ltType(m.dtype);
  uint64_t elem = dtypeSize(m.dtype);
  // Our B is stored row-major as (k x n), or (n x k) when transposed; its
  // column-major view swaps rows and columns.
  uint64_t bRows = m.transB ? m.n : m.k, bCols = m.transB ? m.k : m.n;
  uint64_t aRows = m.transA ? m.k : m.m, aCols = m.transA ? m.m : m.k;
  struct LayoutSpec {
    lt::MatrixLayout *layout;
    uint64_t rows, cols;
    int64_t stride;
  } specs[3] = {
      {&plan.aLayout, bCols, bRows, m.strideB},
      {&plan.bLayout, aCols, aRows, m.strideA},
      {&plan.cLayout, static_cast<uint64_t>(m.n), static_cast<uint64_t>(m.m),
       m.strideC},
  };
  for (int i = 0; i < 3; ++i) {
    LayoutSpec &spec = specs[i];
    if (Status s = check(
            ltApi->matrixLayoutCreate(spec.layout, type, spec.rows, spec.cols,
                                      static_cast<int64_t>(spec.rows)),
            "cublasLtMatrixLayoutCreate");
        !s.isOk())
      return s;
    plan.strideBytes[i] = static_cast<uint64_t>(spec.stride) * elem;
    if (m.batch == 1)
      continue;
    int32_t batch = static_cast<int32_t>(m.batch);
    // A stride of 0 makes every batch read the same matrix (broadcast).
    int64_t stride = spec.stride;
    if (Status s = check(ltApi->matrixLayoutSetAttribute(*spec.layout,
                                                         lt::kLayoutBatchCount,
                                                         &batch, sizeof(batch)),
                         "setting the batch count");
        !s.isOk())
      return s;
    if (Status s = check(ltApi->matrixLayoutSetAttribute(
                             *spec.layout, lt::kLayoutStridedBatchOffset,
                             &stride, sizeof(stride)),
                         "setting the batch stride");
        !s.isOk())
      return s;
  }
  // Pick the algorithm for the alignment the arena gives now, so that a
  // shape cuBLASLt cannot run fails at the first run, not later.
  uint32_t align[4] = {kMaxAlign, kMaxAlign, kMaxAlign, kMaxAlign};
  const lt::MatmulAlgo *algo = nullptr;
  return chooseAlgo(plan, align, algo);
}

Status CudaExecutor::setBiasPointer(MatmulPlan &plan, cu::DevicePtr bias) {
  if (this->plan().steps[plan.step].matmul.bias == kNoBuffer)
    return Status::ok();
  const void *pointer = reinterpret_cast<const void *>(bias);
  if (lt::LtStatus st = ltApi->matmulDescSetAttribute(
          plan.desc, lt::kDescBiasPointer, &pointer, sizeof(pointer));
      st != lt::kSuccess)
    return lt::cublasError(*ltApi, st,
                           "matmul step " + std::to_string(plan.step) +
                               ": setting the bias pointer");
  return Status::ok();
}

Status CudaExecutor::chooseAlgo(MatmulPlan &plan, const uint32_t align[4],
                                const lt::MatmulAlgo *&algo,
                                const CandidateTiming *timing) {
  MatmulPlan::Choice *known = nullptr;
  for (MatmulPlan::Choice &c : plan.choices)
    if (std::equal(c.align, c.align + 4, align))
      known = &c;
  if (known && (known->timed || !timing)) {
    algo = &known->algo;
    return Status::ok();
  }
  // The choice for this alignment class from now on.
  auto choose = [&](const lt::MatmulAlgo &chosen, bool timed) {
    if (!known) {
      plan.choices.push_back({});
      known = &plan.choices.back();
      std::copy(align, align + 4, known->align);
    }
    known->algo = chosen;
    known->timed = timed;
    algo = &known->algo;
  };
  std::vector<int64_t> tuned = tunedKey(this->plan().steps[plan.step].matmul,
                                        align);
  if (auto it = tunedAlgos.find(tuned); it != tunedAlgos.end()) {
    choose(it->second, true);
    return Status::ok();
  }
  std::string where = "matmul step " + std::to_string(plan.step);
  lt::MatmulPreference pref = nullptr;
  if (lt::LtStatus st = ltApi->preferenceCreate(&pref); st != lt::kSuccess)
    return lt::cublasError(*ltApi, st, where + ": creating a preference");
  uint64_t maxWorkspace = kWorkspaceBytes;
  lt::LtStatus st = ltApi->preferenceSetAttribute(
      pref, lt::kPrefMaxWorkspaceBytes, &maxWorkspace, sizeof(maxWorkspace));
  // MIN_ALIGNMENT_{A,B,C,D}_BYTES are attributes 5..8 (uint32_t).
  for (int i = 0; i < 4 && st == lt::kSuccess; ++i) {
    uint32_t a = align[i < 3 ? i : 2];
    st = ltApi->preferenceSetAttribute(pref, 5 + i, &a, sizeof(a));
  }
  lt::HeuristicResult results[kAlgoCandidates] = {};
  int returned = 0;
  if (st == lt::kSuccess)
    st = ltApi->algoGetHeuristic(ltHandle, plan.desc, plan.aLayout,
                                 plan.bLayout, plan.cLayout, plan.cLayout, pref,
                                 timing ? kAlgoCandidates : 1, results,
                                 &returned);
  ltApi->preferenceDestroy(pref);
  if (st != lt::kSuccess)
    return lt::cublasError(*ltApi, st, where + ": choosing an algorithm");
  std::vector<lt::MatmulAlgo> candidates;
  for (int i = 0; i < std::min(returned, kAlgoCandidates); ++i)
    if (results[i].state == lt::kSuccess)
      candidates.push_back(results[i].algo);
  if (candidates.empty()) {
    const MatmulStep &m = this->plan().steps[plan.step].matmul;
    return Status::error(
        StatusCode::Unsupported,
        where + ": cuBLASLt has no algorithm for " + dtypeName(m.dtype) +
            " batch " + std::to_string(m.batch) + " m " + std::to_string(m.m) +
            " n " + std::to_string(m.n) + " k " + std::to_string(m.k) +
            " with operands aligned to " + std::to_string(align[0]) + "/" +
            std::to_string(align[1]) + "/" + std::to_string(align[2]) +
            " bytes");
  }
  choose(timing && candidates.size() > 1 ? fastestAlgo(candidates, *timing)
                                         : candidates.front(),
         timing != nullptr);
  if (timing)
    tunedAlgos[tuned] = *algo;
  return Status::ok();
}

lt::MatmulAlgo
CudaExecutor::fastestAlgo(const std::vector<lt::MatmulAlgo> &candidates,
                          const CandidateTiming &timing) {
  cu::Stream target = timing.stream;
  cu::Event start = nullptr, end = nullptr;
  lt::MatmulAlgo best = candidates.front();
  if (api->eventCreate(&start, 0) != cu::kSuccess)
    return best;
  if (api->eventCreate(&end, 0) != cu::kSuccess) {
    api->eventDestroy(start);
    return best;
  }
  float bestMs = 0;
  bool timedOne = false;
  for (const lt::MatmulAlgo &candidate : candidates) {
    // A candidate that fails to run (or to time) is passed over: the
    // heuristic's list is advice, and the real call below reports errors.
    bool ran = timing.call(candidate) == lt::kSuccess &&
               api->eventRecord(start, target) == cu::kSuccess;
    for (int k = 0; ran && k < kTimedCalls; ++k)
      ran = timing.call(candidate) == lt::kSuccess;
    float ms = 0;
    if (!ran || api->eventRecord(end, target) != cu::kSuccess ||
        api->eventSynchronize(end) != cu::kSuccess ||
        api->eventElapsedTime(&ms, start, end) != cu::kSuccess)
      continue;
    if (!timedOne || ms < bestMs) {
      best = candidate;
      bestMs = ms;
      timedOne = true;
    }
  }
  api->eventDestroy(start);
  api->eventDestroy(end);
  return best;
}

/// Fills each splat slot on the device: one block of the value uploaded,
/// then the filled prefix copied onto the rest, doubling each time.
Status CudaConstants::uploadSplats(cu::Stream stream) {
  SplatSlots plan = planSplatSlots(artifact, /*slotPerSize=*/false);
  splatSlotOf = std::move(plan.slotOf);
  splats.assign(plan.slots.size(), 0);
  // One host block per slot, alive until the one synchronize at the end.
  std::vector<std::vector<char>> blocks(plan.slots.size());
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    std::vector<char> &block = blocks[i];
    const SplatSlots::Slot &slot = plan.slots[i];
    if (slot.bytes == 0)
      continue;
    std::string what =
        "a splat constant (" + std::to_string(slot.bytes) + " bytes)";
    if (cu::Result r = api->memAlloc(&splats[i], slot.bytes); r != cu::kSuccess)
      return cu::cudaError(*api, r, "allocating " + what);
    fillSplatBlock(slot, kSplatUploadBytes, block);
    if (cu::Result r =
            api->memcpyHtoDAsync(splats[i], block.data(), block.size(), stream);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "filling " + what);
    for (uint64_t filled = block.size(); filled < slot.bytes;) {
      uint64_t take = std::min(filled, slot.bytes - filled);
      if (cu::Result r =
              api->memcpyDtoDAsync(splats[i] + filled, splats[i], take, stream);
          r != cu::kSuccess)
        return cu::cudaError(*api, r, "filling " + what);
      filled += take;
    }
  }
  if (cu::Result r = api->streamSynchronize(stream); r != cu::kSuccess)
    return cu::cudaError(*api, r, "filling the splat constants");
  return Status::ok();
}

Status CudaExecutor::ensureStaging(Staging &staging,
                                   const std::vector<uint32_t> &ids) {
  if (staging.device.size() == ids.size())
    return Status::ok();
  staging.device.assign(ids.size(), 0);
  staging.pinned.assign(ids.size(), nullptr);
  for (size_t i = 0; i < ids.size(); ++i) {
    uint64_t bytes = artifact.buffers[ids[i]].bytes;
    if (bytes == 0)
      continue;
    std::string what = std::to_string(bytes) + " bytes of staging for '" +
                       artifact.buffers[ids[i]].name + "'";
    cu::Result r = api->memAlloc(&staging.device[i], bytes);
    if (r != cu::kSuccess) {
      staging.device[i] = 0;
      freeStaging(staging);
      return cu::cudaError(*api, r, "allocating " + what);
    }
    r = api->memAllocHost(&staging.pinned[i], bytes);
    if (r != cu::kSuccess) {
      staging.pinned[i] = nullptr;
      freeStaging(staging);
      return cu::cudaError(*api, r, "allocating page-locked " + what);
    }
  }
  return Status::ok();
}

void CudaExecutor::freeStaging(Staging &staging) {
  for (cu::DevicePtr p : staging.device)
    if (p)
      api->memFree(p);
  for (void *p : staging.pinned)
    if (p)
      api->memFreeHost(p);
  staging.device.clear();
  staging.pinned.clear();
}

cu::DevicePtr
CudaExecutor::address(uint32_t id, const std::vector<cu::DevicePtr> &in,
                      const std::vector<cu::DevicePtr> &out) const {
  const Buffer &b = artifact.buffers[id];
  switch (b.kind) {
  case BufferKind::Arena:
    return arena + b.offset;
  case BufferKind::Weight:
    return constants->weights + b.offset;
  case BufferKind::Input:
    return in[b.offset];
  case BufferKind::Output:
    return out[b.offset];
  case BufferKind::Splat:
    return constants->splats[constants->splatSlotOf[id]];
  }
  return 0;
}

Status CudaExecutor::issueSteps(const std::vector<cu::DevicePtr> &in,
                                const std::vector<cu::DevicePtr> &out,
                                cu::Stream target) {
  std::vector<cu::DevicePtr> argValues;
  std::vector<void *> argPointers;
  // An output kept in an input's storage (OutputAlias) starts as that input:
  // the steps write only its new rows. The caller's one buffer for both
  // costs nothing; two buffers (or host memory, staged) a copy.
  for (const OutputAlias &alias : plan().aliases) {
    cu::DevicePtr src = in[alias.input], dst = out[alias.output];
    uint64_t bytes = plan().buffers[plan().inputs[alias.input]].bytes;
    if (src == dst || !bytes)
      continue;
    if (cu::Result r = api->memcpyDtoDAsync(dst, src, bytes, target);
        r != cu::kSuccess)
      return cu::cudaError(*api, r,
                           "copying input " + std::to_string(alias.input) +
                               " to the output " +
                               std::to_string(alias.output) + " it aliases");
  }
  const std::vector<Step> &steps = plan().steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &step = steps[i];
    std::string where = "step " + std::to_string(i);
    switch (step.kind) {
    case Step::Kind::Launch: {
      const LaunchStep &l = step.launch;
      argValues.clear();
      for (uint32_t id : l.args)
        argValues.push_back(address(id, in, out));
      // cuLaunchKernel takes a pointer to each argument's value.
      argPointers.clear();
      for (cu::DevicePtr &v : argValues)
        argPointers.push_back(&v);
      // Then the dims, by value (`long long` parameters).
      for (const int64_t &dim : runDims)
        argPointers.push_back(const_cast<int64_t *>(&dim));
      if (cu::Result r = api->launchKernel(
              functions[l.kernel], l.grid[0], l.grid[1], l.grid[2], l.block[0],
              l.block[1], l.block[2], l.sharedBytes, target,
              argPointers.empty() ? nullptr : argPointers.data(), nullptr);
          r != cu::kSuccess)
        return cu::cudaError(*api, r,
                             where + ": launching kernel '" +
                                 artifact.kernelNames[l.kernel] + "'");
      break;
    }
    case Step::Kind::Matmul: {
      const MatmulStep &m = step.matmul;
      MatmulPlan &plan = matmuls->plans[matmuls->ofStep[i]];
      // cuBLAS's A, B, C are our B, A, C. One cuBLASLt call per repetition
      // of the inner batch.
      uint64_t elem = dtypeSize(m.dtype);
      const int64_t outerStrides[3] = {m.outerStrideB, m.outerStrideA,
                                       m.outerStrideC};
      cu::DevicePtr base[3] = {address(m.b, in, out), address(m.a, in, out),
                               address(m.c, in, out)};
      // What beta scales: the residual, laid out as C, or C itself.
      cu::DevicePtr residualBase =
          m.residual == kNoBuffer ? base[2] : address(m.residual, in, out);
      cu::DevicePtr bias =
          m.bias == kNoBuffer ? kMaxAlign : address(m.bias, in, out);
      if (Status s = setBiasPointer(plan, bias); !s.isOk())
        return s;
      for (int64_t o = 0; o < m.outerBatch; ++o) {
        cu::DevicePtr ptrs[3];
        uint32_t align[4];
        for (int j = 0; j < 3; ++j) {
          ptrs[j] = base[j] + static_cast<uint64_t>(o * outerStrides[j]) * elem;
          align[j] =
              std::min(alignmentOf(ptrs[j]), alignmentOf(plan.strideBytes[j]));
        }
        cu::DevicePtr residual =
            residualBase + static_cast<uint64_t>(o * m.outerStrideC) * elem;
        align[2] = std::min(align[2], alignmentOf(residual));
        align[3] = alignmentOf(bias);
        void *c = reinterpret_cast<void *>(ptrs[2]);
        // The scale type of a double matmul is fp64: alpha and beta too.
        double alpha64 = m.alpha, beta64 = m.beta;
        bool isDouble = m.dtype == DType::F64;
        const void *alpha = isDouble ? static_cast<const void *>(&alpha64)
                                     : static_cast<const void *>(&m.alpha);
        const void *beta = isDouble ? static_cast<const void *>(&beta64)
                                    : static_cast<const void *>(&m.beta);
        auto call = [&](const lt::MatmulAlgo &algo) {
          return ltApi->matmul(
              ltHandle, plan.desc, alpha,
              reinterpret_cast<const void *>(ptrs[0]), plan.aLayout,
              reinterpret_cast<const void *>(ptrs[1]), plan.bLayout, beta,
              reinterpret_cast<const void *>(residual), plan.cLayout, c,
              plan.cLayout, &algo, reinterpret_cast<void *>(workspace),
              kWorkspaceBytes, target);
        };
        // Candidates are timed on the run's own operands, so each call must
        // leave the same result: not where beta accumulates into C in
        // place (no residual, or one in C's own storage), and not inside a
        // graph capture (nothing runs there).
        // A reference: no copy of the call (nor an allocation) a matmul.
        CandidateTiming timing{std::cref(call), target};
        bool canTime = options.tuneMatmuls && !capturing &&
                       (m.beta == 0.0f || residual != ptrs[2]);
        const lt::MatmulAlgo *algo = nullptr;
        if (Status s = chooseAlgo(plan, align, algo, canTime ? &timing : nullptr);
            !s.isOk())
          return s;
        if (lt::LtStatus st = call(*algo); st != lt::kSuccess)
          return lt::cublasError(*ltApi, st, where + ": cublasLtMatmul");
      }
      break;
    }
    case Step::Kind::Copy: {
      const CopyStep &c = step.copy;
      if (c.bytes == 0)
        break;
      if (cu::Result r =
              api->memcpyDtoDAsync(address(c.dst, in, out),
                                   address(c.src, in, out), c.bytes, target);
          r != cu::kSuccess)
        return cu::cudaError(*api, r, where + ": copy");
      break;
    }
    }
  }
  return Status::ok();
}

/// Sets the context up at its first run (or after a failed one).
Status CudaExecutor::ensureReady() {
  if (!ready)
    if (Status s = initialize(); !s.isOk())
      return s;
  return Status::ok();
}

Status CudaExecutor::waitForLastRun(cu::Stream target) {
  if (!lastRunRecorded)
    return Status::ok();
  if (cu::Result r = api->streamWaitEvent(target, lastRun, 0);
      r != cu::kSuccess)
    return cu::cudaError(*api, r, "ordering the run after the previous one");
  return Status::ok();
}

GraphCache::Key
CudaExecutor::bucketOf(const std::vector<cu::DevicePtr> &in,
                       const std::vector<cu::DevicePtr> &out) const {
  GraphCache::Key key(in);
  key.insert(key.end(), out.begin(), out.end());
  key.insert(key.end(), matmuls->issues.begin(), matmuls->issues.end());
  return key;
}

Status CudaExecutor::launchPlan(const std::vector<cu::DevicePtr> &in,
                                const std::vector<cu::DevicePtr> &out,
                                cu::Stream target) {
  if (!options.graphs || graphsFailed)
    return issueSteps(in, out, target);
  // Graphs per shape bucket: a run whose bucket has issued its steps one by
  // one before is captured even at dims it has not seen (each token of a
  // decoding loop), and its graph takes the place of the least recently
  // used one by cuGraphExecUpdate (CudaGraphs.h). The first run of a bucket
  // issues the steps one by one: its launches load modules lazily (the
  // kernels', cuBLASLt's), which a stream capture does not allow, and time
  // the matmuls' candidates.
  GraphCache::Key bucket = bucketOf(in, out);
  if (!matmuls->issued && !issuedBuckets.count(bucket)) {
    Status s = issueSteps(in, out, target);
    if (s.isOk()) {
      matmuls->issued = true;
      // Bounded: a caller cycling through new buffers starts over.
      if (issuedBuckets.size() >= kMaxIssuedBuckets)
        issuedBuckets.clear();
      issuedBuckets.insert(std::move(bucket));
    }
    return s;
  }
  // A graph holds the grids and kernel arguments of its dims: they key it
  // within the bucket.
  GraphCache::Key key = std::move(bucket);
  for (int64_t dim : runDims)
    key.push_back(static_cast<cu::DevicePtr>(dim));
  cu::GraphExec exec = graphs.find(key);
  if (!exec) {
    // The capture records on the context's own stream; the graph is then
    // launched on the target, which may be the caller's.
    Status s = graphs.capture(
        key, stream,
        [&](cu::Stream target) {
          capturing = true;
          Status issued = issueSteps(in, out, target);
          capturing = false;
          return issued;
        },
        exec);
    if (!s.isOk()) {
      // Graphs are an optimization: the steps one by one do the same work
      // (and report a real error of a step themselves).
      graphsFailed = true;
      std::fprintf(stderr,
                   "kiln: capturing a CUDA graph failed (%s); this context "
                   "issues its steps one by one\n",
                   s.message.c_str());
      return issueSteps(in, out, target);
    }
  }
  if (cu::Result r = api->graphLaunch(exec, target); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuGraphLaunch");
  return Status::ok();
}

Status CudaExecutor::stageInputs(const void *const *inputs) {
  for (size_t i = 0; i < artifact.inputs.size(); ++i) {
    uint64_t bytes = plan().buffers[plan().inputs[i]].bytes;
    if (!bytes)
      continue;
    // The page-locked copy lets the upload run asynchronously; the previous
    // run has finished with it, since `run` waits for its stream.
    std::memcpy(inputStaging.pinned[i], inputs[i], bytes);
    if (cu::Result r = api->memcpyHtoDAsync(
            inputStaging.device[i], inputStaging.pinned[i], bytes, stream);
        r != cu::kSuccess)
      return cu::cudaError(
          *api, r, "copying input " + std::to_string(i) + " to the device");
  }
  return Status::ok();
}

Status CudaExecutor::queueOutputCopies() {
  for (size_t i = 0; i < artifact.outputs.size(); ++i) {
    uint64_t bytes = plan().buffers[plan().outputs[i]].bytes;
    if (!bytes)
      continue;
    if (cu::Result r = api->memcpyDtoHAsync(
            outputStaging.pinned[i], outputStaging.device[i], bytes, stream);
        r != cu::kSuccess)
      return cu::cudaError(
          *api, r, "copying output " + std::to_string(i) + " to the host");
  }
  return Status::ok();
}

Status CudaExecutor::queueIndexFlagRead() {
  if (cu::Result r = api->memcpyDtoHAsync(indexFlagMirror, indexError,
                                          sizeof(unsigned), stream);
      r != cu::kSuccess)
    return cu::cudaError(*api, r, "reading the index check flag");
  return Status::ok();
}

Status CudaExecutor::takeIndexFault(unsigned fault) {
  if (!fault)
    return Status::ok();
  // Cleared so that the next run starts clean.
  static const unsigned zero = 0;
  if (api->memcpyHtoDAsync(indexError, &zero, sizeof(zero), stream) ==
      cu::kSuccess)
    api->streamSynchronize(stream);
  return Status::error(StatusCode::InvalidArgument,
                       indexErrorMessage(artifact, fault));
}

Status CudaExecutor::run(const void *const *inputs, void *const *outputs,
                         Memory memory, const RunShape &shape) {
  if (Status s = ensureReady(); !s.isOk())
    return s;
  ContextScope scope(*api, context);
  if (scope.result != cu::kSuccess)
    return cu::cudaError(*api, scope.result, "cuCtxPushCurrent");
  if (Status s = bindRun(shape); !s.isOk())
    return s;

  std::vector<cu::DevicePtr> in(artifact.inputs.size());
  std::vector<cu::DevicePtr> out(artifact.outputs.size());
  // Runs queued by `enqueue` on other streams use the same arena.
  Status status = waitForLastRun(stream);
  if (status.isOk() && memory == Memory::Device) {
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = reinterpret_cast<cu::DevicePtr>(inputs[i]);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = reinterpret_cast<cu::DevicePtr>(outputs[i]);
    // The caller may have written the inputs on the legacy default stream,
    // which our non-blocking stream does not wait for by itself. (Callers
    // of other streams order their work with `enqueue`.)
    if (cu::Result r = api->eventRecord(inputsReady, cu::legacyStream());
        r != cu::kSuccess)
      status = cu::cudaError(*api, r, "ordering after the default stream");
    else if (cu::Result w = api->streamWaitEvent(stream, inputsReady, 0);
             w != cu::kSuccess)
      status = cu::cudaError(*api, w, "ordering after the default stream");
  } else if (status.isOk()) {
    status = ensureStaging(inputStaging, artifact.inputs);
    if (status.isOk())
      status = ensureStaging(outputStaging, artifact.outputs);
    if (!status.isOk())
      return status;
    in = inputStaging.device;
    out = outputStaging.device;
    status = stageInputs(inputs);
  }
  if (status.isOk())
    status = launchPlan(in, out, stream);
  if (status.isOk() && memory == Memory::Host)
    status = queueOutputCopies();
  // The index checks' flag: one load per run, read with the outputs.
  if (status.isOk() && indexError)
    status = queueIndexFlagRead();
  if (status.isOk() && api->eventRecord(lastRun, stream) == cu::kSuccess)
    lastRunRecorded = true;
  // Always wait, also after a failure: work already queued may still read
  // the caller's buffers.
  cu::Result r = api->streamSynchronize(stream);
  if (status.isOk() && r != cu::kSuccess)
    status = cu::cudaError(*api, r,
                           "running the model (an error here may come from "
                           "any step of this run)");
  if (status.isOk() && memory == Memory::Host)
    for (size_t i = 0; i < out.size(); ++i)
      if (uint64_t bytes = plan().buffers[plan().outputs[i]].bytes)
        std::memcpy(outputs[i], outputStaging.pinned[i], bytes);
  if (status.isOk() && indexError)
    status = takeIndexFault(*indexFlagMirror);
  return status;
}

Status CudaExecutor::enqueue(const void *const *inputs, void *const *outputs,
                             void *callerStream, const RunShape &shape) {
  if (Status s = ensureReady(); !s.isOk())
    return s;
  ContextScope scope(*api, context);
  if (scope.result != cu::kSuccess)
    return cu::cudaError(*api, scope.result, "cuCtxPushCurrent");
  if (Status s = bindRun(shape); !s.isOk())
    return s;
  cu::Stream target = static_cast<cu::Stream>(callerStream);
  std::vector<cu::DevicePtr> in(artifact.inputs.size());
  std::vector<cu::DevicePtr> out(artifact.outputs.size());
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = reinterpret_cast<cu::DevicePtr>(inputs[i]);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = reinterpret_cast<cu::DevicePtr>(outputs[i]);
  if (Status s = waitForLastRun(target); !s.isOk())
    return s;
  if (Status s = launchPlan(in, out, target); !s.isOk())
    return s;
  if (cu::Result r = api->eventRecord(lastRun, target); r != cu::kSuccess)
    return cu::cudaError(*api, r, "recording the end of the run");
  lastRunRecorded = true;
  return Status::ok();
}

Status CudaExecutor::synchronize() {
  if (!ready || !lastRunRecorded)
    return Status::ok();
  ContextScope scope(*api, context);
  if (scope.result != cu::kSuccess)
    return cu::cudaError(*api, scope.result, "cuCtxPushCurrent");
  if (cu::Result r = api->eventSynchronize(lastRun); r != cu::kSuccess)
    return cu::cudaError(*api, r,
                         "running the model (an error here may come from "
                         "any step of the queued runs)");
  if (!indexError)
    return Status::ok();
  // The flag stays set once a kernel sets it, so one read covers every run
  // queued since the last check.
  if (Status s = queueIndexFlagRead(); !s.isOk())
    return s;
  if (cu::Result r = api->streamSynchronize(stream); r != cu::kSuccess)
    return cu::cudaError(*api, r, "reading the index check flag");
  return takeIndexFault(*indexFlagMirror);
}

/// Two timing events, destroyed with the scope.
class TimingEvents {
public:
  explicit TimingEvents(const cu::DriverApi &api) : api(api) {}
  ~TimingEvents() {
    for (cu::Event e : {start, end})
      if (e)
        api.eventDestroy(e);
  }
  /// Creates both (with timing, unlike the ordering events).
  cu::Result create() {
    cu::Result r = api.eventCreate(&start, 0);
    return r == cu::kSuccess ? api.eventCreate(&end, 0) : r;
  }
  cu::Event start = nullptr, end = nullptr;

private:
  const cu::DriverApi &api;
};

Status CudaExecutor::timeDeviceRuns(const void *const *hostInputs,
                                    unsigned warmup, unsigned iters,
                                    std::vector<double> &ms) {
  if (Status s = ensureReady(); !s.isOk())
    return s;
  ContextScope scope(*api, context);
  if (scope.result != cu::kSuccess)
    return cu::cudaError(*api, scope.result, "cuCtxPushCurrent");
  // A static plan (Model refuses to time a symbolic one).
  if (Status s = bindRun(RunShape()); !s.isOk())
    return s;
  // The staging buffers are the device-memory I/O: the same addresses on
  // every run, as a server's preallocated tensors would be.
  if (Status s = ensureStaging(inputStaging, artifact.inputs); !s.isOk())
    return s;
  if (Status s = ensureStaging(outputStaging, artifact.outputs); !s.isOk())
    return s;
  TimingEvents events(*api);
  if (cu::Result r = events.create(); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuEventCreate");
  Status status = waitForLastRun(stream);
  if (status.isOk())
    status = stageInputs(hostInputs);
  const std::vector<cu::DevicePtr> &in = inputStaging.device;
  const std::vector<cu::DevicePtr> &out = outputStaging.device;
  for (unsigned i = 0; i < warmup && status.isOk(); ++i)
    status = launchPlan(in, out, stream);
  ms.clear();
  for (unsigned i = 0; i < iters && status.isOk(); ++i) {
    cu::Result r = api->eventRecord(events.start, stream);
    if (r == cu::kSuccess && (status = launchPlan(in, out, stream)).isOk())
      r = api->eventRecord(events.end, stream);
    if (r == cu::kSuccess && status.isOk())
      r = api->eventSynchronize(events.end);
    float elapsed = 0;
    if (r == cu::kSuccess && status.isOk())
      r = api->eventElapsedTime(&elapsed, events.start, events.end);
    if (r != cu::kSuccess && status.isOk())
      status = cu::cudaError(*api, r, "timing run " + std::to_string(i));
    if (status.isOk())
      ms.push_back(elapsed);
  }
  if (status.isOk() && indexError)
    status = queueIndexFlagRead();
  cu::Result r = api->streamSynchronize(stream);
  if (status.isOk() && r != cu::kSuccess)
    status = cu::cudaError(*api, r, "running the model");
  if (status.isOk() && indexError)
    status = takeIndexFault(*indexFlagMirror);
  return status;
}

void CudaExecutor::release() {
  if (!api || !hasContext)
    return;
  {
    ContextScope scope(*api, context);
    if (stream)
      api->streamSynchronize(stream);
    for (auto &[dims, set] : matmulSets)
      destroyMatmuls(set);
    matmulSets.clear();
    matmuls = nullptr;
    if (ltHandle)
      ltApi->destroy(ltHandle);
    ltHandle = nullptr;
    graphs.clear();
    freeStaging(inputStaging);
    freeStaging(outputStaging);
    if (indexFlagMirror)
      api->memFreeHost(indexFlagMirror);
    indexFlagMirror = nullptr;
    for (cu::Event *event : {&lastRun, &inputsReady}) {
      if (*event)
        api->eventDestroy(*event);
      *event = nullptr;
    }
    lastRunRecorded = false;
    tunedAlgos.clear();
    issuedBuckets.clear();
    graphsFailed = false;
    for (cu::DevicePtr *p : {&arena, &workspace}) {
      if (*p)
        api->memFree(*p);
      *p = 0;
    }
    functions.clear();
    if (module)
      api->moduleUnload(module);
    module = nullptr;
    indexError = 0;
    if (stream)
      api->streamDestroy(stream);
    stream = nullptr;
  }
  api->primaryCtxRelease(device);
  hasContext = false;
  context = nullptr;
  ready = false;
}
