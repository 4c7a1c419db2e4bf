//===- CudaExecutor.cpp - Run a plan with the CUDA driver API -------------===//
//
// The CUDA driver backend's execution context (CudaExecutorImpl.h): its
// creation, set-up and release, its binding to a run's plan and dims, and the
// entry points `run`, `enqueue`, `synchronize` and `timeDeviceRuns`.
//
//===----------------------------------------------------------------------===//

#include "CudaExecutorImpl.h"
#include "CudaScopes.h"
#include "GemmCandidates.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::detail;

Executor::~Executor() = default;

std::unique_ptr<Executor>
kiln::rt::createCudaExecutor(Artifact &artifact, const CudaOptions &options) {
  return std::make_unique<CudaExecutor>(
      artifact, options,
      std::make_shared<CudaConstants>(artifact, options.device));
}

Status CudaExecutor::initialize() {
  if (Status s = cu::loadCudaDriver(api); !s.isOk())
    return s;
  // The device the options name, of what CUDA_VISIBLE_DEVICES exposes; the
  // primary context is shared with the CUDA runtime API, so applications
  // interoperate.
  if (cu::Result r = api->deviceGet(&device, options.device); r != cu::kSuccess)
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
  // The partial sums of the Kiln GEMM kernels that may run (the one asked
  // for by name, or every one timed), at the top of the ranges (the
  // artifact's extents), allocated before any graph is captured.
  uint64_t partialFloats = 0;
  if (!options.gemm.empty())
    for (const Step &step : artifact.steps)
      if (step.kind == Step::Kind::Matmul)
        for (const GemmCandidate &g : step.matmul.kernels)
          // One that takes the next launch uses that launch's scratch.
          if (!g.withNextLaunch &&
              (options.gemm == kTimedGemmKernels || g.name == options.gemm))
            partialFloats =
                std::max(partialFloats, gemmPartialFloats(step.matmul, g));
  if (partialFloats)
    if (cu::Result r = api->memAlloc(&gemmPartials, partialFloats * 4);
        r != cu::kSuccess)
      return cu::cudaError(*api, r,
                           "allocating the GEMM kernels' partial sums");
  // The 16-bit products of widened steps after cuBLASLt, likewise.
  uint64_t widenBytes = 0;
  for (const Step &step : artifact.steps)
    if (step.kind == Step::Kind::Matmul)
      widenBytes = std::max(widenBytes, widenedProductElements(step.matmul) *
                                            dtypeSize(step.matmul.dtype));
  if (widenBytes)
    if (cu::Result r = api->memAlloc(&widenScratch, widenBytes);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "allocating the widened products' scratch");
  // A static plan's matmuls now, so that a shape cuBLASLt cannot run fails
  // at the first run; a symbolic plan's per set of dims, at its first run.
  if (artifact.symbolic.empty())
    return bindRun(RunShape());
  return Status::ok();
}

/// Most matmul shapes whose cuBLASLt objects a context keeps; past it the
/// oldest is destroyed.
constexpr size_t kMaxMatmulSets = 64;

/// What `steps` issue (MatmulSet::issues): each step's kind, each launch's
/// kernel, each matmul's every extent and stride.
static std::vector<cu::DevicePtr> issuesOf(const std::vector<Step> &steps) {
  std::vector<cu::DevicePtr> issues;
  for (const Step &step : steps) {
    issues.push_back(static_cast<cu::DevicePtr>(step.kind));
    if (step.kind == Step::Kind::Launch)
      issues.push_back(step.launch.kernel);
    if (step.kind != Step::Kind::Matmul)
      continue;
    MatmulStep m = step.matmul;
    for (int64_t *field : matmulFields(m))
      issues.push_back(static_cast<cu::DevicePtr>(*field));
  }
  return issues;
}

Status CudaExecutor::bindRun(const RunShape &shape) {
  runPlan = shape.plan;
  runDims = shape.dims ? *shape.dims : std::vector<int64_t>();
  // Keyed by what the steps issue, not by the dims: a decoding loop's dims
  // change every token while its matmuls keep their shapes, and its steps
  // reuse one set of cuBLASLt objects.
  std::vector<cu::DevicePtr> issues = issuesOf(plan().steps);
  auto it = matmulSets.find(issues);
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
  auto slot = matmulSets.emplace(issues, MatmulSet()).first;
  MatmulSet &set = slot->second;
  matmuls = &set;
  set.issues = std::move(issues);
  const std::vector<Step> &steps = plan().steps;
  set.ofStep.assign(steps.size(), SIZE_MAX);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != Step::Kind::Matmul)
      continue;
    set.ofStep[i] = set.plans.size();
    set.plans.emplace_back();
    if (Status s = prepareMatmul(i, set.plans.back()); !s.isOk()) {
      destroyMatmuls(set);
      matmulSets.erase(slot);
      matmuls = nullptr;
      return s;
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
    status = queueOutputCopies(out);
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

Status CudaExecutor::timeDeviceRuns(const void *const *hostInputs,
                                    unsigned warmup, unsigned iters,
                                    std::vector<double> &ms,
                                    void *const *hostOutputs,
                                    const RunShape &shape) {
  if (Status s = ensureReady(); !s.isOk())
    return s;
  ContextScope scope(*api, context);
  if (scope.result != cu::kSuccess)
    return cu::cudaError(*api, scope.result, "cuCtxPushCurrent");
  if (Status s = bindRun(shape); !s.isOk())
    return s;
  // The staging buffers are the device-memory I/O: the same addresses on
  // every run, as a server's preallocated tensors would be (sized for the
  // top of the dims' ranges, so any dims fit).
  if (Status s = ensureStaging(inputStaging, artifact.inputs); !s.isOk())
    return s;
  if (Status s = ensureStaging(outputStaging, artifact.outputs); !s.isOk())
    return s;
  const std::vector<cu::DevicePtr> &in = inputStaging.device;
  // An output kept in an input's storage (a KV cache in place) is that
  // input's buffer, as a decoding loop passes its cache: each run writes
  // the same new rows, and no run copies the whole cache.
  std::vector<cu::DevicePtr> out = outputStaging.device;
  for (const OutputAlias &alias : plan().aliases)
    out[alias.output] = in[alias.input];
  TimingEvents events(*api);
  if (cu::Result r = events.create(); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuEventCreate");
  Status status = waitForLastRun(stream);
  if (status.isOk())
    status = stageInputs(hostInputs);
  // An aliased output's buffers are new to the graphs (earlier runs had
  // the output's own staging): the first run at them captures a graph,
  // which is no run to time, warm-up asked for or not.
  unsigned untimed = plan().aliases.empty() ? warmup : std::max(warmup, 1u);
  for (unsigned i = 0; i < untimed && status.isOk(); ++i)
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
  // The last timed run's outputs, for the caller to check.
  if (status.isOk() && hostOutputs)
    status = queueOutputCopies(out);
  cu::Result r = api->streamSynchronize(stream);
  if (status.isOk() && r != cu::kSuccess)
    status = cu::cudaError(*api, r, "running the model");
  if (status.isOk() && indexError)
    status = takeIndexFault(*indexFlagMirror);
  if (status.isOk() && hostOutputs)
    for (size_t i = 0; i < artifact.outputs.size(); ++i)
      if (uint64_t bytes = plan().buffers[plan().outputs[i]].bytes)
        std::memcpy(hostOutputs[i], outputStaging.pinned[i], bytes);
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
    tunedKernels.clear();
    issuedBuckets.clear();
    graphsFailed = false;
    warnedInPlace = false;
    updatesFailed = false;
    for (cu::DevicePtr *p :
         {&arena, &workspace, &gemmPartials, &widenScratch}) {
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
