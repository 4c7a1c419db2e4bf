//===- ModelState.cpp - One model Triton serves with Kiln -----------------===//

#include "ModelState.h"

#include "CompileOnnx.h"
#include "ModelConfig.h"
#include "TritonErrors.h"

#include "kiln/runtime/ArtifactFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace kiln;
using namespace kiln::triton;

/// Reads the configuration of `triton` (its JSON form) into `out`.
static TRITONSERVER_Error *readConfig(TRITONBACKEND_Model *triton,
                                      llvm::json::Object &out) {
  TRITONSERVER_Message *message = nullptr;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelConfig(triton, /*config_version=*/1, &message))
    return error;
  const char *base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error *error =
      TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  std::string text = error ? "" : std::string(base, size);
  TRITONSERVER_MessageDelete(message);
  if (error)
    return error;
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return tritonError(TRITONSERVER_ERROR_INVALID_ARG,
                       "the model configuration is not JSON: " +
                           llvm::toString(value.takeError()));
  if (!value->getAsObject())
    return tritonError(TRITONSERVER_ERROR_INVALID_ARG,
                       "the model configuration is not a JSON object");
  out = std::move(*value->getAsObject());
  return nullptr;
}

TRITONSERVER_Error *ModelState::create(TRITONBACKEND_Model *triton,
                                       std::unique_ptr<ModelState> &out) {
  std::unique_ptr<ModelState> state(new ModelState());
  const char *name = nullptr;
  uint64_t version = 0;
  TRITONBACKEND_ArtifactType type;
  const char *location = nullptr;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelName(triton, &name))
    return error;
  state->modelName = name;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelVersion(triton, &version))
    return error;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelRepository(triton, &type, &location))
    return error;
  if (type != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    return tritonError(TRITONSERVER_ERROR_UNSUPPORTED,
                       "model '" + state->modelName +
                           "': the Kiln backend reads models from a "
                           "file system repository only");

  llvm::json::Object config;
  ServingConfig serving;
  if (TRITONSERVER_Error *error = readConfig(triton, config))
    return error;
  if (std::string error = readServingConfig(config, serving); !error.empty())
    return tritonError(TRITONSERVER_ERROR_INVALID_ARG,
                       "model '" + state->modelName + "': " + error);

  llvm::SmallString<256> folder(location);
  llvm::sys::path::append(folder, std::to_string(version));
  if (TRITONSERVER_Error *error = state->loadArtifact(
          folder.str().str(), serving.defaultModelFilename, serving.parameters))
    return error;
  state->modelSignature = signatureOf(state->artifact);
  std::string where = "model '" + state->modelName + "': ";
  if (std::string error =
          planPadding(state->artifact, state->modelSignature, serving.padDim,
                      serving.padMask, state->runPadding);
      !error.empty())
    return tritonError(TRITONSERVER_ERROR_INVALID_ARG, where + error);
  for (size_t i = 0; i < state->runPadding.inputAxis.size(); ++i)
    state->modelSignature.inputs[i].ragged =
        state->runPadding.inputAxis[i] >= 0;
  if (TRITONSERVER_Error *error = state->checkConfiguration(triton, config))
    return error;
  if (state->configMaxBatchSize == 0 && state->runPadding.enabled())
    return tritonError(TRITONSERVER_ERROR_INVALID_ARG,
                       where + "parameter 'pad_dim': padding needs "
                               "max_batch_size > 0");
  out = std::move(state);
  return nullptr;
}

TRITONSERVER_Error *
ModelState::loadArtifact(const std::string &folder, const std::string &fileName,
                         const std::map<std::string, std::string> &parameters) {
  std::string file = fileName;
  if (file.empty()) {
    for (const char *candidate : {"model.so", "model.onnx"}) {
      llvm::SmallString<256> path(folder);
      llvm::sys::path::append(path, candidate);
      if (file.empty() && llvm::sys::fs::exists(path))
        file = candidate;
    }
    if (file.empty())
      return tritonError(TRITONSERVER_ERROR_NOT_FOUND, "model '" + modelName +
                                                           "': no model.so or "
                                                           "model.onnx in " +
                                                           folder);
  }
  llvm::SmallString<256> path(folder);
  llvm::sys::path::append(path, file);
  std::string where = "model '" + modelName + "' (" + path.str().str() + "): ";
  if (llvm::StringRef(file).ends_with(".onnx")) {
    logMessage(TRITONSERVER_LOG_INFO, where + "compiling");
    if (std::string error = compileOnnx(path.str().str(), parameters, artifact);
        !error.empty())
      return tritonError(TRITONSERVER_ERROR_INVALID_ARG, where + error);
    return nullptr;
  }
  if (!parameters.empty())
    return tritonError(TRITONSERVER_ERROR_INVALID_ARG,
                       where + "parameter '" + parameters.begin()->first +
                           "' is an option of compiling model.onnx; a .so "
                           "keeps what kilnc compiled into it");
  // The runtime's message names the file.
  return tritonError(rt::loadArtifactFile(path.str().str(), artifact),
                     "model '" + modelName + "': ");
}

TRITONSERVER_Error *ModelState::checkConfiguration(TRITONBACKEND_Model *triton,
                                                   llvm::json::Object &config) {
  bool autoComplete = false;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelAutoCompleteConfig(triton, &autoComplete))
    return error;
  bool changed = false;
  std::string where = "model '" + modelName + "': ";
  if (std::string error = checkConfig(config, modelSignature, autoComplete,
                                      changed, configMaxBatchSize);
      !error.empty())
    return tritonError(TRITONSERVER_ERROR_INVALID_ARG, where + error);
  if (!changed)
    return nullptr;

  std::string completed =
      llvm::formatv("{0}", llvm::json::Value(std::move(config))).str();
  TRITONSERVER_Message *message = nullptr;
  if (TRITONSERVER_Error *error = TRITONSERVER_MessageNewFromSerializedJson(
          &message, completed.data(), completed.size()))
    return error;
  TRITONSERVER_Error *error =
      TRITONBACKEND_ModelSetConfig(triton, /*config_version=*/1, message);
  TRITONSERVER_MessageDelete(message);
  if (error)
    return error;
  logMessage(TRITONSERVER_LOG_VERBOSE,
             where + "completed the configuration: " + completed);
  // Triton fills in more of what it was given; check what it keeps.
  llvm::json::Object kept;
  if (TRITONSERVER_Error *error = readConfig(triton, kept))
    return error;
  if (std::string error =
          checkConfig(kept, modelSignature,
                      /*autoComplete=*/false, changed, configMaxBatchSize);
      !error.empty())
    return tritonError(TRITONSERVER_ERROR_INVALID_ARG, where + error);
  return nullptr;
}

TRITONSERVER_Error *ModelState::runner(int32_t gpu, rt::Model *&out) {
  std::lock_guard<std::mutex> lock(runnersMutex);
  std::unique_ptr<rt::Model> &model = runners[gpu < 0 ? -1 : gpu];
  if (!model) {
    rt::CudaOptions cuda = rt::CudaOptions::fromEnvironment();
    cuda.device = gpu;
    // Each place gets its own copy of the plan: the CUDA backend releases
    // the host copy of the weights once they are on its GPU.
    rt::Status status = rt::Model::create(
        artifact, gpu < 0 ? rt::Backend::Host : rt::Backend::Cuda, model,
        rt::HostOptions::fromEnvironment(), cuda);
    if (!status.isOk())
      return tritonError(status, "model '" + modelName + "': ");
  }
  out = model.get();
  return nullptr;
}
