//===- Model.cpp - A loaded Kiln model ready to run -----------------------===//

#include "kiln/runtime/Model.h"

#include "Executor.h"

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

Status Model::create(Artifact artifact, Backend backend,
                     std::unique_ptr<Model> &out) {
  out.reset();
  std::string error;
  if (!validateArtifact(artifact, error))
    return Status::error(StatusCode::CorruptArtifact, error);
  switch (backend) {
  case Backend::Auto:
  case Backend::Cuda:
    break;
  case Backend::Host:
    return Status::error(StatusCode::Unsupported,
                         "the host backend is not available yet in this "
                         "runtime; use the cuda backend");
  default:
    return Status::error(StatusCode::InvalidArgument,
                         "invalid backend " +
                             std::to_string(static_cast<int>(backend)));
  }
  std::unique_ptr<Model> model(new Model(std::move(artifact), backend));
  // Until the host backend exists, Auto means CUDA; the device itself is
  // opened by the first run, so this cannot fail for lack of a GPU.
  model->executor = createCudaExecutor(model->plan);
  out = std::move(model);
  return Status::ok();
}

Status Model::run(const void *const *inputs, void *const *outputs,
                  Memory memory) {
  if (memory != Memory::Host && memory != Memory::Device)
    return Status::error(StatusCode::InvalidArgument,
                         "invalid memory kind " +
                             std::to_string(static_cast<int>(memory)));
  if (numInputs() && !inputs)
    return Status::error(StatusCode::InvalidArgument,
                         "inputs is null but the model has " +
                             std::to_string(numInputs()) + " inputs");
  if (numOutputs() && !outputs)
    return Status::error(StatusCode::InvalidArgument,
                         "outputs is null but the model has " +
                             std::to_string(numOutputs()) + " outputs");
  for (size_t i = 0; i < numInputs(); ++i)
    if (!inputs[i] && input(i).bytes)
      return Status::error(StatusCode::InvalidArgument,
                           "input " + std::to_string(i) + " ('" +
                               input(i).name + "') is null");
  for (size_t i = 0; i < numOutputs(); ++i)
    if (!outputs[i] && output(i).bytes)
      return Status::error(StatusCode::InvalidArgument,
                           "output " + std::to_string(i) + " ('" +
                               output(i).name + "') is null");
  std::lock_guard<std::mutex> lock(runMutex);
  return executor->run(inputs, outputs, memory);
}

std::string Model::info() const {
  std::ostringstream os;
  os << "kiln " << (plan.kilnVersion.empty() ? "?" : plan.kilnVersion)
     << "; arch " << (plan.arch.empty() ? "?" : plan.arch) << "; model "
     << (plan.modelHash.empty() ? "?" : plan.modelHash) << "; arena "
     << plan.arenaBytes << " bytes; " << plan.inputs.size() << " inputs, "
     << plan.outputs.size() << " outputs, " << plan.steps.size()
     << " steps; backend " << backendName(selectedBackend);
  return os.str();
}
