//===- Model.cpp - A loaded Kiln model ready to run -----------------------===//

#include "kiln/runtime/Model.h"

#include "CudaDriver.h"
#include "Executor.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sstream>

using namespace kiln::rt;

const char *kiln::rt::backendName(Backend backend) {
  switch (backend) {
  case Backend::Auto:
    return "auto";
  case Backend::Cuda:
    return "cuda";
  case Backend::Host:
    return "host";
  }
  return "invalid";
}

Model::Model(Artifact artifact, Backend backend)
    : plan(std::move(artifact)), selectedBackend(backend) {}

Model::~Model() = default;

HostOptions HostOptions::fromEnvironment() {
  HostOptions options;
  if (const char *seed = std::getenv("KILN_HOST_SEED")) {
    char *end = nullptr;
    unsigned long long value = std::strtoull(seed, &end, 10);
    if (end != seed && *end == '\0')
      options.seed = value;
  }
  if (const char *check = std::getenv("KILN_HOST_CHECK"))
    options.checking = std::strcmp(check, "1") == 0;
  if (const char *gemm = std::getenv("KILN_GEMM_KERNEL"))
    options.gemm = gemm;
  return options;
}

CudaOptions CudaOptions::fromEnvironment() {
  CudaOptions options;
  if (const char *graphs = std::getenv("KILN_CUDA_GRAPHS"))
    options.graphs = std::strcmp(graphs, "0") != 0;
  if (const char *updates = std::getenv("KILN_CUDA_GRAPH_UPDATES"))
    options.graphUpdates = std::strcmp(updates, "0") != 0;
  if (const char *tune = std::getenv("KILN_TUNE_MATMULS"))
    options.tuneMatmuls = std::strcmp(tune, "0") != 0;
  if (const char *gemm = std::getenv("KILN_GEMM_KERNEL"))
    options.gemm = gemm;
  if (const char *pdl = std::getenv("KILN_PDL"))
    options.pdl = std::strcmp(pdl, "1") == 0;
  return options;
}

bool kiln::rt::cudaDeviceAvailable(std::string &why) {
  const cu::DriverApi *api = nullptr;
  Status s = cu::loadCudaDriver(api);
  why = s.message;
  return s.isOk();
}

Status Model::create(Artifact artifact, Backend backend,
                     std::unique_ptr<Model> &out,
                     const HostOptions &hostOptions,
                     const CudaOptions &cudaOptions) {
  out.reset();
  std::string error;
  if (!validateArtifact(artifact, error))
    return Status::error(StatusCode::CorruptArtifact, error);
  if (artifact.weightBytes() != 0 && !artifact.weightData())
    return Status::error(
        StatusCode::CorruptArtifact,
        artifact.weightsFile.name.empty()
            ? "the artifact's weights were dropped after their upload to the "
              "GPU (load the artifact again)"
            : "the weights are in the file '" + artifact.weightsFile.name +
                  "', which was not loaded (load the artifact from its .so "
                  "file)");
  std::string fallbackReason;
  switch (backend) {
  case Backend::Cuda:
  case Backend::Host:
    break;
  case Backend::Auto:
    // The driver is opened here rather than at the first run, since the
    // choice of backend depends on it.
    backend =
        cudaDeviceAvailable(fallbackReason) ? Backend::Cuda : Backend::Host;
    break;
  default:
    return Status::error(StatusCode::InvalidArgument,
                         "invalid backend " +
                             std::to_string(static_cast<int>(backend)));
  }
  std::unique_ptr<Model> model(new Model(std::move(artifact), backend));
  if (backend == Backend::Host) {
    if (!fallbackReason.empty()) {
      model->fallbackReason = fallbackReason;
      std::fprintf(stderr,
                   "kiln: %s; running on the host backend (the generated "
                   "kernels emulated on the CPU)\n",
                   fallbackReason.c_str());
    }
    model->executor = createHostExecutor(model->plan, hostOptions);
    model->optionsText = "host seed " + std::to_string(hostOptions.seed) +
                         ", checking " + (hostOptions.checking ? "on" : "off");
    if (!hostOptions.gemm.empty())
      model->optionsText += ", GEMM kernel " + hostOptions.gemm;
  } else {
    model->executor = createCudaExecutor(model->plan, cudaOptions);
    model->deviceOrdinal = cudaOptions.device;
    model->optionsText =
        std::string("CUDA graphs ") + (cudaOptions.graphs ? "on" : "off") +
        ", matmul tuning " + (cudaOptions.tuneMatmuls ? "on" : "off");
    if (!cudaOptions.gemm.empty())
      model->optionsText += ", GEMM kernel " + cudaOptions.gemm;
    if (cudaOptions.pdl)
      model->optionsText += ", programmatic dependent launch";
    if (cudaOptions.device != 0)
      model->optionsText += ", device " + std::to_string(cudaOptions.device);
  }
  out = std::move(model);
  return Status::ok();
}

Status Model::checkInputs(const void *const *inputs,
                          const Artifact *shaped) const {
  const Artifact &sizes = shaped ? *shaped : plan;
  if (numInputs() && !inputs)
    return Status::error(StatusCode::InvalidArgument,
                         "inputs is null but the model has " +
                             std::to_string(numInputs()) + " inputs");
  for (size_t i = 0; i < numInputs(); ++i)
    if (!inputs[i] && sizes.buffers[sizes.inputs[i]].bytes)
      return Status::error(StatusCode::InvalidArgument,
                           "input " + std::to_string(i) + " ('" +
                               input(i).name + "') is null");
  return Status::ok();
}

Status Model::checkRunArguments(const void *const *inputs, void *const *outputs,
                                Memory memory, const Artifact *shaped) const {
  const Artifact &sizes = shaped ? *shaped : plan;
  if (memory != Memory::Host && memory != Memory::Device)
    return Status::error(StatusCode::InvalidArgument,
                         "invalid memory kind " +
                             std::to_string(static_cast<int>(memory)));
  if (Status s = checkInputs(inputs, shaped); !s.isOk())
    return s;
  if (numOutputs() && !outputs)
    return Status::error(StatusCode::InvalidArgument,
                         "outputs is null but the model has " +
                             std::to_string(numOutputs()) + " outputs");
  for (size_t i = 0; i < numOutputs(); ++i)
    if (!outputs[i] && sizes.buffers[sizes.outputs[i]].bytes)
      return Status::error(StatusCode::InvalidArgument,
                           "output " + std::to_string(i) + " ('" +
                               output(i).name + "') is null");
  return Status::ok();
}

/// Most plans a model keeps for the dims its runs used. Past it the plan
/// least recently used (a decoding loop's oldest length; not a prompt
/// length that interleaved requests keep using) is written again for the
/// new dims, in place where nothing holds it (reinstantiatePlan: only the
/// fields that follow the dims, where the same steps run), so a loop that
/// visits each length once pays no copy of the plan a step.
constexpr size_t kMaxShapedPlans = 8;

bool Model::keepsPlanFor(const std::vector<int64_t> &dims) const {
  std::lock_guard<std::mutex> lock(shapedPlansMutex);
  return shapedPlans.count(dims) != 0;
}

Status Model::bindDims(const std::vector<std::vector<int64_t>> &inputShapes,
                       std::vector<int64_t> &dims) const {
  std::string error;
  if (!kiln::rt::bindDims(plan, inputShapes, dims, error))
    return Status::error(StatusCode::InvalidArgument, error);
  return Status::ok();
}

std::vector<int64_t> Model::inputShape(size_t index,
                                       const std::vector<int64_t> &dims) const {
  std::vector<int64_t> shape;
  shapeAt(plan, plan.inputs[index], dims, shape);
  return shape;
}

std::vector<int64_t>
Model::outputShape(size_t index, const std::vector<int64_t> &dims) const {
  std::vector<int64_t> shape;
  shapeAt(plan, plan.outputs[index], dims, shape);
  return shape;
}

Status Model::prepareRun(const std::vector<int64_t> &dims,
                         const void *const *inputs, void *const *outputs,
                         Memory memory,
                         std::shared_ptr<const Artifact> &shaped) {
  if (Status s = shapedPlan(dims, shaped); !s.isOk())
    return s;
  return checkRunArguments(inputs, outputs, memory, shaped.get());
}

Status Model::shapedPlan(const std::vector<int64_t> &dims,
                         std::shared_ptr<const Artifact> &shaped) {
  const std::vector<DimRange> &names = plan.symbolic.dims;
  if (dims.size() != names.size()) {
    std::string list;
    for (const DimRange &d : names)
      list += (list.empty() ? "" : ", ") + d.name + " " +
              std::to_string(d.min) + ".." + std::to_string(d.max);
    return Status::error(
        StatusCode::InvalidArgument,
        names.empty() ? "the model has no symbolic dims, but the run gives " +
                            std::to_string(dims.size())
                      : "the model has symbolic dims (" + list +
                            "): a run gives their values (" +
                            std::to_string(dims.size()) + " given)");
  }
  if (names.empty())
    return Status::ok();
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] < names[d].min || dims[d] > names[d].max)
      return Status::error(
          StatusCode::InvalidArgument,
          "dim sizes: '" + names[d].name + "' is " + std::to_string(dims[d]) +
              ", outside its range " + std::to_string(names[d].min) + ".." +
              std::to_string(names[d].max));
  {
    std::lock_guard<std::mutex> lock(shapedPlansMutex);
    auto it = shapedPlans.find(dims);
    if (it != shapedPlans.end()) {
      it->second.lastUse = ++shapedPlanUses;
      shaped = it->second.plan;
    } else {
      std::shared_ptr<Artifact> written;
      std::vector<int64_t> previous;
      auto oldest = shapedPlans.end();
      if (shapedPlans.size() >= kMaxShapedPlans) {
        oldest = std::min_element(shapedPlans.begin(), shapedPlans.end(),
                                  [](const auto &a, const auto &b) {
                                    return a.second.lastUse < b.second.lastUse;
                                  });
        // Held by no run: its storage becomes the new plan's (and is no
        // longer the old dims' plan, whether or not the writing succeeds).
        if (oldest->second.plan.use_count() == 1) {
          // After the last reader's release of it (use_count is relaxed).
          std::atomic_thread_fence(std::memory_order_acquire);
          written = std::const_pointer_cast<Artifact>(oldest->second.plan);
          previous = oldest->first;
          shapedPlans.erase(oldest);
          oldest = shapedPlans.end();
        }
      }
      std::string error;
      bool ok = written
                    ? reinstantiatePlan(plan, previous, dims, *written, error)
                    : instantiatePlan(plan, dims,
                                      *(written = std::make_shared<Artifact>()),
                                      error);
      if (!ok)
        return Status::error(StatusCode::InvalidArgument, error);
      // A held plan makes room only once the new one is written.
      if (oldest != shapedPlans.end())
        shapedPlans.erase(oldest);
      shaped = written;
      shapedPlans[dims] = {std::move(written), ++shapedPlanUses};
    }
  }
  return Status::ok();
}

Status Model::run(const void *const *inputs, void *const *outputs,
                  Memory memory) {
  return run({}, inputs, outputs, memory);
}

Status Model::run(const std::vector<int64_t> &dims, const void *const *inputs,
                  void *const *outputs, Memory memory) {
  std::shared_ptr<const Artifact> shaped;
  if (Status s = prepareRun(dims, inputs, outputs, memory, shaped); !s.isOk())
    return s;
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->run(inputs, outputs, memory,
                       RunShape{shaped.get(), shaped ? &dims : nullptr});
}

Status Model::enqueueOn(Executor &runner, std::mutex &mutex,
                        const std::vector<int64_t> &dims,
                        const void *const *inputs, void *const *outputs,
                        void *stream) {
  Memory memory =
      selectedBackend == Backend::Cuda ? Memory::Device : Memory::Host;
  std::shared_ptr<const Artifact> shaped;
  if (Status s = prepareRun(dims, inputs, outputs, memory, shaped); !s.isOk())
    return s;
  std::lock_guard<std::mutex> lock(mutex);
  return runner.enqueue(inputs, outputs, stream,
                        RunShape{shaped.get(), shaped ? &dims : nullptr});
}

Status Model::enqueue(const std::vector<int64_t> &dims,
                      const void *const *inputs, void *const *outputs,
                      void *stream) {
  return enqueueOn(*executor, runMutex, dims, inputs, outputs, stream);
}

Status Model::synchronize() {
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->synchronize();
}

Status Model::timeDeviceRuns(const void *const *hostInputs, unsigned warmup,
                             unsigned iters, std::vector<double> &ms,
                             void *const *hostOutputs) {
  return timeDeviceRuns({}, hostInputs, warmup, iters, ms, hostOutputs);
}

Status Model::timeDeviceRuns(const std::vector<int64_t> &dims,
                             const void *const *hostInputs, unsigned warmup,
                             unsigned iters, std::vector<double> &ms,
                             void *const *hostOutputs) {
  std::shared_ptr<const Artifact> shaped;
  if (Status s = shapedPlan(dims, shaped); !s.isOk())
    return s;
  if (Status s = checkInputs(hostInputs, shaped.get()); !s.isOk())
    return s;
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->timeDeviceRuns(
      hostInputs, warmup, iters, ms, hostOutputs,
      RunShape{shaped.get(), shaped ? &dims : nullptr});
}

Status Model::createContext(std::unique_ptr<ExecutionContext> &out) {
  out.reset(new ExecutionContext(*this, executor->createContext()));
  return Status::ok();
}

ExecutionContext::ExecutionContext(Model &model,
                                   std::unique_ptr<Executor> executor)
    : model(model), executor(std::move(executor)) {}

ExecutionContext::~ExecutionContext() = default;

Status ExecutionContext::run(const void *const *inputs, void *const *outputs,
                             Memory memory) {
  return run({}, inputs, outputs, memory);
}

Status ExecutionContext::run(const std::vector<int64_t> &dims,
                             const void *const *inputs, void *const *outputs,
                             Memory memory) {
  std::shared_ptr<const Artifact> shaped;
  if (Status s = model.prepareRun(dims, inputs, outputs, memory, shaped);
      !s.isOk())
    return s;
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->run(inputs, outputs, memory,
                       RunShape{shaped.get(), shaped ? &dims : nullptr});
}

Status ExecutionContext::enqueue(const void *const *inputs,
                                 void *const *outputs, void *stream) {
  return enqueue({}, inputs, outputs, stream);
}

Status ExecutionContext::enqueue(const std::vector<int64_t> &dims,
                                 const void *const *inputs,
                                 void *const *outputs, void *stream) {
  return model.enqueueOn(*executor, runMutex, dims, inputs, outputs, stream);
}

Status ExecutionContext::synchronize() {
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->synchronize();
}

std::string Model::info() const {
  std::ostringstream os;
  os << "kiln " << (plan.kilnVersion.empty() ? "?" : plan.kilnVersion)
     << "; arch " << (plan.arch.empty() ? "?" : plan.arch) << "; model "
     << (plan.modelHash.empty() ? "?" : plan.modelHash) << "; arena "
     << plan.arenaBytes << " bytes; " << plan.inputs.size() << " inputs, "
     << plan.outputs.size() << " outputs, " << plan.steps.size()
     << " steps; backend " << backendName(selectedBackend);
  if (!fallbackReason.empty())
    os << " (auto: " << fallbackReason << ")";
  os << "; " << optionsText;
  return os.str();
}
