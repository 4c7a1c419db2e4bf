//===- KilnBackend.cpp - Triton's entry points of the Kiln backend --------===//
//
// The seven functions Triton calls in libtriton_kiln.so (TRITONBACKEND API
// 1.19). Each hands its work to ModelState or InstanceState and keeps their
// objects as Triton's model and instance state.
//
//===----------------------------------------------------------------------===//

#include "InstanceState.h"
#include "ModelState.h"
#include "TritonErrors.h"

#include <memory>
#include <string>

using namespace kiln::triton;

/// The functions Triton looks up by name; the rest of the library is
/// hidden (exports.map).
#define KILN_TRITON_EXPORT extern "C" __attribute__((visibility("default")))

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
  (void)backend;
  uint32_t major = 0, minor = 0;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ApiVersion(&major, &minor))
    return error;
  if (major != KILN_TRITONBACKEND_API_VERSION_MAJOR ||
      minor < KILN_TRITONBACKEND_API_VERSION_MINOR)
    return tritonError(
        TRITONSERVER_ERROR_UNSUPPORTED,
        "the Kiln backend needs Triton's backend API " +
            std::to_string(KILN_TRITONBACKEND_API_VERSION_MAJOR) + "." +
            std::to_string(KILN_TRITONBACKEND_API_VERSION_MINOR) +
            " or a later minor; this server has " + std::to_string(major) +
            "." + std::to_string(minor));
  logMessage(TRITONSERVER_LOG_INFO, "Kiln backend loaded (backend API " +
                                        std::to_string(major) + "." +
                                        std::to_string(minor) + ")");
  return nullptr;
}

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
  std::unique_ptr<ModelState> state;
  if (TRITONSERVER_Error *error = ModelState::create(model, state))
    return error;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelSetState(model, state.get()))
    return error;
  state.release();
  return nullptr;
}

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
  void *state = nullptr;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelState(model, &state))
    return error;
  delete static_cast<ModelState *>(state);
  return nullptr;
}

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance) {
  TRITONBACKEND_Model *model = nullptr;
  void *modelState = nullptr;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelInstanceModel(instance, &model))
    return error;
  if (TRITONSERVER_Error *error = TRITONBACKEND_ModelState(model, &modelState))
    return error;
  std::unique_ptr<InstanceState> state;
  if (TRITONSERVER_Error *error = InstanceState::create(
          instance, *static_cast<ModelState *>(modelState), state))
    return error;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelInstanceSetState(instance, state.get()))
    return error;
  state.release();
  return nullptr;
}

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance) {
  void *state = nullptr;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelInstanceState(instance, &state))
    return error;
  delete static_cast<InstanceState *>(state);
  return nullptr;
}

KILN_TRITON_EXPORT TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                   TRITONBACKEND_Request **requests,
                                   const uint32_t requestCount) {
  void *state = nullptr;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelInstanceState(instance, &state))
    return error;
  // Every request is answered and released here, so Triton gets no error
  // back for the batch as a whole.
  static_cast<InstanceState *>(state)->execute(requests, requestCount);
  return nullptr;
}
