//===- Model.cpp - A loaded Kiln model ready to run -----------------------===//

#include "kiln/runtime/Model.h"

#include "CudaDriver.h"
#include "Executor.h"

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
  return options;
}

CudaOptions CudaOptions::fromEnvironment() {
  CudaOptions options;
  if (const char *graphs = std::getenv("KILN_CUDA_GRAPHS"))
    options.graphs = std::strcmp(graphs, "0") != 0;
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
    return Status::error(StatusCode::CorruptArtifact,
                         "the weights are in the file '" +
                             artifact.weightsFile.name +
                             "', which was not loaded (load the artifact from "
                             "its .so file)");
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
  } else {
    model->executor = createCudaExecutor(model->plan, cudaOptions);
  }
  out = std::move(model);
  return Status::ok();
}

Status Model::checkInputs(const void *const *inputs) const {
  if (numInputs() && !inputs)
    return Status::error(StatusCode::InvalidArgument,
                         "inputs is null but the model has " +
                             std::to_string(numInputs()) + " inputs");
  for (size_t i = 0; i < numInputs(); ++i)
    if (!inputs[i] && input(i).bytes)
      return Status::error(StatusCode::InvalidArgument,
                           "input " + std::to_string(i) + " ('" +
                               input(i).name + "') is null");
  return Status::ok();
}

Status Model::checkRunArguments(const void *const *inputs, void *const *outputs,
                                Memory memory) const {
  if (memory != Memory::Host && memory != Memory::Device)
    return Status::error(StatusCode::InvalidArgument,
                         "invalid memory kind " +
                             std::to_string(static_cast<int>(memory)));
  if (Status s = checkInputs(inputs); !s.isOk())
    return s;
  if (numOutputs() && !outputs)
    return Status::error(StatusCode::InvalidArgument,
                         "outputs is null but the model has " +
                             std::to_string(numOutputs()) + " outputs");
  for (size_t i = 0; i < numOutputs(); ++i)
    if (!outputs[i] && output(i).bytes)
      return Status::error(StatusCode::InvalidArgument,
                           "output " + std::to_string(i) + " ('" +
                               output(i).name + "') is null");
  return Status::ok();
}

Status Model::run(const void *const *inputs, void *const *outputs,
                  Memory memory) {
  if (Status s = checkRunArguments(inputs, outputs, memory); !s.isOk())
    return s;
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->run(inputs, outputs, memory);
}

Status Model::timeDeviceRuns(const void *const *hostInputs, unsigned warmup,
                             unsigned iters, std::vector<double> &ms) {
  if (Status s = checkInputs(hostInputs); !s.isOk())
    return s;
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->timeDeviceRuns(hostInputs, warmup, iters, ms);
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
  if (Status s = model.checkRunArguments(inputs, outputs, memory); !s.isOk())
    return s;
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->run(inputs, outputs, memory);
}

Status ExecutionContext::enqueue(const void *const *inputs,
                                 void *const *outputs, void *stream) {
  Memory memory =
      model.backend() == Backend::Cuda ? Memory::Device : Memory::Host;
  if (Status s = model.checkRunArguments(inputs, outputs, memory); !s.isOk())
    return s;
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->enqueue(inputs, outputs, stream);
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
  return os.str();
}
