//===- InstanceState.h - One model instance running requests ---*- C++ -*-===//
//
// A Triton model instance: an execution context of the model on the host
// (KIND_CPU) or on its GPU (KIND_GPU), and the work of
// TRITONBACKEND_ModelInstanceExecute: read each request, check it, group
// the requests into runs (RunPlan.h), gather each run's inputs, run it,
// give each request its slice of the outputs, report statistics, answer
// and release every request. A request's error answers that request alone.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_INSTANCESTATE_H
#define KILN_TRITON_INSTANCESTATE_H

#include "ModelState.h"
#include "RunPlan.h"
#include "TritonApi.h"

#include "kiln/runtime/Model.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace triton {

struct OutputTarget;
struct PendingRequest;

/// One instance of a model.
class InstanceState {
public:
  /// Creates the instance Triton names on its device, with its own
  /// execution context, and runs the model once on zeros so that the
  /// kernels are loaded (compiled, on the host) before Triton calls the
  /// model ready.
  static TRITONSERVER_Error *create(TRITONBACKEND_ModelInstance *triton,
                                    ModelState &model,
                                    std::unique_ptr<InstanceState> &out);

  /// Runs `requests` (Triton's batch), answering and releasing every one.
  void execute(TRITONBACKEND_Request **requests, uint32_t count);

private:
  InstanceState(TRITONBACKEND_ModelInstance *triton, ModelState &model)
      : triton(triton), model(model) {}
  /// One run at the smallest dims on zero inputs.
  TRITONSERVER_Error *warmUp();
  /// Reads and checks the inputs and requested outputs of `p.request`;
  /// sets `p.error` when it cannot run.
  void readRequest(PendingRequest &p);
  /// Gives `p`'s response the outputs it requested, with Triton's buffers
  /// for them in `targets` (one per model output).
  TRITONSERVER_Error *attachOutputs(PendingRequest &p,
                                    std::vector<OutputTarget> &targets);
  /// Runs the requests `run` (indices into `pending`) as one, at the
  /// inputs' `shapes` (RunPlan's runShapes), and gives each its outputs, or
  /// the run's error (after an index fault, each runs alone again);
  /// `computeStart` and `computeEnd` receive the run's times.
  void runTogether(std::vector<PendingRequest> &pending,
                   const std::vector<size_t> &run, const RequestShapes &shapes,
                   uint64_t &computeStart, uint64_t &computeEnd);

  TRITONBACKEND_ModelInstance *triton;
  ModelState &model;
  /// The GPU the instance runs on; -1 for the host.
  int32_t gpu = -1;
  /// The model of the instance's place (owned by `model`).
  rt::Model *runner = nullptr;
  std::unique_ptr<rt::ExecutionContext> context;
};

} // namespace triton
} // namespace kiln

#endif // KILN_TRITON_INSTANCESTATE_H
