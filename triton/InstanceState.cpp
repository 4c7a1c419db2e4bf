//===- InstanceState.cpp - One model instance running requests ------------===//

#include "InstanceState.h"

#include "Padding.h"
#include "RunPlan.h"
#include "TritonErrors.h"

#include "kiln/runtime/DeviceCopy.h"

#include <chrono>

using namespace kiln;
using namespace kiln::triton;

namespace kiln {
namespace triton {

/// One buffer of a request's input, where Triton holds it.
struct InputPiece {
  const void *data = nullptr;
  uint64_t bytes = 0;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  int64_t memoryId = 0;
};

/// Where an output of a request goes: Triton's buffer for it.
struct OutputTarget {
  void *data = nullptr;
  uint64_t bytes = 0;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  int64_t memoryId = 0;
};

/// A request of the batch being executed.
struct PendingRequest {
  TRITONBACKEND_Request *request = nullptr;
  TRITONBACKEND_Response *response = nullptr;
  /// Why the request fails; owned until sent with the response.
  TRITONSERVER_Error *error = nullptr;
  /// Its inputs' shapes and buffers, in the model's input order.
  RequestShapes shapes;
  std::vector<std::vector<InputPiece>> inputs;
  /// Whether each model output was requested.
  std::vector<bool> requested;
  /// Its dims' values, learned from its own inputs.
  std::vector<int64_t> dims;
  /// Its first dim (its batch when the model batches), else 1.
  int64_t batch = 1;
  uint64_t computeStart = 0, computeEnd = 0;
};

} // namespace triton
} // namespace kiln

/// Nanoseconds of the steady clock, which Triton's statistics use.
static uint64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The shape as text: [2, 128].
static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The bytes of a dense tensor of `shape` and `dtype`; false on overflow or
/// a negative dim.
static bool tensorBytes(const std::vector<int64_t> &shape, rt::DType dtype,
                        uint64_t &out) {
  uint64_t bytes = rt::dtypeSize(dtype);
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(bytes, uint64_t(d), &bytes))
      return false;
  out = bytes;
  return true;
}

/// Whether Triton's memory is the host's.
static bool onHost(TRITONSERVER_MemoryType memory) {
  return memory != TRITONSERVER_MEMORY_GPU;
}

TRITONSERVER_Error *InstanceState::create(TRITONBACKEND_ModelInstance *triton,
                                          ModelState &model,
                                          std::unique_ptr<InstanceState> &out) {
  std::unique_ptr<InstanceState> state(new InstanceState(triton, model));
  TRITONSERVER_InstanceGroupKind kind;
  if (TRITONSERVER_Error *error =
          TRITONBACKEND_ModelInstanceKind(triton, &kind))
    return error;
  if (kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    if (TRITONSERVER_Error *error =
            TRITONBACKEND_ModelInstanceDeviceId(triton, &state->gpu))
      return error;
  } else if (kind != TRITONSERVER_INSTANCEGROUPKIND_CPU) {
    return tritonError(TRITONSERVER_ERROR_UNSUPPORTED,
                       "model '" + model.name() +
                           "': the Kiln backend runs instances of kind "
                           "KIND_GPU or KIND_CPU");
  }
  if (TRITONSERVER_Error *error = model.runner(state->gpu, state->runner))
    return error;
  if (TRITONSERVER_Error *error =
          tritonError(state->runner->createContext(state->context),
                      "model '" + model.name() + "': "))
    return error;
  if (TRITONSERVER_Error *error = state->warmUp())
    return error;
  out = std::move(state);
  return nullptr;
}

TRITONSERVER_Error *InstanceState::warmUp() {
  std::vector<int64_t> dims;
  for (const rt::DimRange &d : runner->dims())
    dims.push_back(d.min);
  std::vector<std::vector<char>> inputs, outputs;
  std::vector<const void *> in;
  std::vector<void *> out;
  for (size_t i = 0; i < runner->numInputs(); ++i) {
    rt::DType dtype = runner->input(i).dtype;
    uint64_t bytes = 0;
    tensorBytes(runner->inputShape(i, dims), dtype, bytes);
    inputs.emplace_back(bytes, 0);
    // Integers are ones (a token id, a mask that keeps every position);
    // floats are zeros.
    if (!rt::isFloatDType(dtype))
      for (uint64_t at = 0; at < bytes; at += rt::dtypeSize(dtype))
        inputs.back()[at] = 1;
    in.push_back(inputs.back().data());
  }
  for (size_t i = 0; i < runner->numOutputs(); ++i) {
    uint64_t bytes = 0;
    tensorBytes(runner->outputShape(i, dims), runner->output(i).dtype, bytes);
    outputs.emplace_back(bytes, 0);
    out.push_back(outputs.back().data());
  }
  rt::Status status =
      context->run(dims, in.data(), out.data(), rt::Memory::Host);
  // Made-up inputs may be out of some model's range (an index fault): the
  // kernels are loaded all the same. Anything else would fail every run.
  if (status.code == rt::StatusCode::InvalidArgument) {
    logMessage(TRITONSERVER_LOG_VERBOSE, "model '" + model.name() +
                                             "': the warm-up run on made-up "
                                             "inputs: " +
                                             status.message);
    return nullptr;
  }
  return tritonError(status,
                     "model '" + model.name() + "': its first run failed: ");
}

void InstanceState::readRequest(PendingRequest &p) {
  const ModelSignature &signature = model.signature();
  auto fail = [&](TRITONSERVER_Error_Code code, const std::string &message) {
    p.error = tritonError(code, "model '" + model.name() + "': " + message);
  };
  for (size_t i = 0; i < signature.inputs.size(); ++i) {
    const TensorSignature &want = signature.inputs[i];
    TRITONBACKEND_Input *input = nullptr;
    if (TRITONSERVER_Error *error =
            TRITONBACKEND_RequestInput(p.request, want.name.c_str(), &input)) {
      TRITONSERVER_ErrorDelete(error);
      return fail(TRITONSERVER_ERROR_INVALID_ARG,
                  "the request lacks input '" + want.name + "'");
    }
    TRITONSERVER_DataType type;
    const int64_t *shape = nullptr;
    uint32_t rank = 0, bufferCount = 0;
    uint64_t byteSize = 0;
    if ((p.error = TRITONBACKEND_InputProperties(
             input, nullptr, &type, &shape, &rank, &byteSize, &bufferCount)))
      return;
    if (type != tritonDataType(want.dtype))
      return fail(TRITONSERVER_ERROR_INVALID_ARG,
                  "input '" + want.name + "' has data type " +
                      TRITONSERVER_DataTypeString(type) + ", the model takes " +
                      TRITONSERVER_DataTypeString(tritonDataType(want.dtype)));
    p.shapes.emplace_back(shape, shape + rank);
    uint64_t bytes = 0;
    if (!tensorBytes(p.shapes.back(), want.dtype, bytes) || bytes != byteSize)
      return fail(TRITONSERVER_ERROR_INVALID_ARG,
                  "input '" + want.name + "' holds " +
                      std::to_string(byteSize) + " bytes, not what its shape " +
                      shapeText(p.shapes.back()) + " takes");
    p.inputs.emplace_back();
    for (uint32_t b = 0; b < bufferCount; ++b) {
      InputPiece piece;
      if ((p.error =
               TRITONBACKEND_InputBuffer(input, b, &piece.data, &piece.bytes,
                                         &piece.memory, &piece.memoryId)))
        return;
      p.inputs.back().push_back(piece);
    }
  }
  // The shapes against each other and the dims' ranges, for this request
  // alone: a request that cannot run must not fail the others of its run.
  if (rt::Status status = runner->bindDims(p.shapes, p.dims); !status.isOk())
    return fail(TRITONSERVER_ERROR_INVALID_ARG, status.message);
  if (model.maxBatchSize() > 0)
    p.batch = p.shapes.front().front();

  p.requested.assign(signature.outputs.size(), false);
  uint32_t count = 0;
  if ((p.error = TRITONBACKEND_RequestOutputCount(p.request, &count)))
    return;
  for (uint32_t r = 0; r < count; ++r) {
    const char *name = nullptr;
    if ((p.error = TRITONBACKEND_RequestOutputName(p.request, r, &name)))
      return;
    bool known = false;
    for (size_t o = 0; o < signature.outputs.size(); ++o)
      if (signature.outputs[o].name == name)
        p.requested[o] = known = true;
    if (!known)
      return fail(TRITONSERVER_ERROR_INVALID_ARG,
                  std::string("the model has no output '") + name + "'");
  }
}

/// The product of `shape[begin, end)`.
static uint64_t product(const std::vector<int64_t> &shape, size_t begin,
                        size_t end) {
  uint64_t n = 1;
  for (size_t a = begin; a < end; ++a)
    n *= uint64_t(shape[a]);
  return n;
}

/// Copies the buffers of one request's input, in order, to `to` (host
/// memory).
static rt::Status copyPieces(const std::vector<InputPiece> &pieces, char *to) {
  for (const InputPiece &piece : pieces) {
    rt::Memory from =
        onHost(piece.memory) ? rt::Memory::Host : rt::Memory::Device;
    if (rt::Status s = rt::copyMemory(to, rt::Memory::Host, piece.data, from,
                                      piece.bytes, int(piece.memoryId));
        !s.isOk())
      return s;
    to += piece.bytes;
  }
  return rt::Status::ok();
}

/// Gathers input `i` of the requests `run` into `staging` (host memory), of
/// the run's shape `runShape`, each request padded along `padAxis` (-1:
/// none) to it; returns a pointer to it in `out`. A single host buffer that
/// needs no padding is used in place.
static rt::Status gatherInput(const std::vector<PendingRequest> &pending,
                              const std::vector<size_t> &run, size_t i,
                              const std::vector<int64_t> &runShape,
                              int32_t padAxis, uint64_t elementBytes,
                              std::vector<char> &staging, const void *&out) {
  const std::vector<InputPiece> &pieces = pending[run.front()].inputs[i];
  if (run.size() == 1 && pieces.size() == 1 && onHost(pieces.front().memory)) {
    out = pieces.front().data;
    return rt::Status::ok();
  }
  staging.resize(product(runShape, 0, runShape.size()) * elementBytes);
  char *at = staging.data();
  std::vector<char> unpadded;
  for (size_t r : run) {
    const std::vector<int64_t> &shape = pending[r].shapes[i];
    uint64_t bytes = product(shape, 0, shape.size()) * elementBytes;
    if (padAxis < 0 || shape[padAxis] == runShape[padAxis]) {
      if (rt::Status s = copyPieces(pending[r].inputs[i], at); !s.isOk())
        return s;
      at += bytes;
      continue;
    }
    unpadded.resize(bytes);
    if (rt::Status s = copyPieces(pending[r].inputs[i], unpadded.data());
        !s.isOk())
      return s;
    uint64_t outer = product(shape, 0, padAxis);
    uint64_t inner = product(shape, padAxis + 1, shape.size()) * elementBytes;
    padRows(unpadded.data(), at, outer, uint64_t(shape[padAxis]),
            uint64_t(runShape[padAxis]), inner);
    at += outer * uint64_t(runShape[padAxis]) * inner;
  }
  out = staging.data();
  return rt::Status::ok();
}

/// Creates the outputs `p` requested in its response, shaped for its own
/// dims, and asks Triton for their buffers (on the instance's GPU where
/// Triton gives it) into `targets`.
TRITONSERVER_Error *
InstanceState::attachOutputs(PendingRequest &p,
                             std::vector<OutputTarget> &targets) {
  const ModelSignature &signature = model.signature();
  for (size_t o = 0; o < signature.outputs.size(); ++o) {
    if (!p.requested[o])
      continue;
    const TensorSignature &t = signature.outputs[o];
    std::vector<int64_t> shape = runner->outputShape(o, p.dims);
    OutputTarget &target = targets[o];
    tensorBytes(shape, t.dtype, target.bytes);
    TRITONBACKEND_Output *output = nullptr;
    if (TRITONSERVER_Error *error = TRITONBACKEND_ResponseOutput(
            p.response, &output, t.name.c_str(), tritonDataType(t.dtype),
            shape.data(), uint32_t(shape.size())))
      return error;
    target.memory = gpu < 0 ? TRITONSERVER_MEMORY_CPU : TRITONSERVER_MEMORY_GPU;
    target.memoryId = gpu < 0 ? 0 : gpu;
    if (TRITONSERVER_Error *error =
            TRITONBACKEND_OutputBuffer(output, &target.data, target.bytes,
                                       &target.memory, &target.memoryId))
      return error;
  }
  return nullptr;
}

void InstanceState::runTogether(std::vector<PendingRequest> &pending,
                                const std::vector<size_t> &run,
                                const RequestShapes &shapes,
                                uint64_t &computeStart, uint64_t &computeEnd) {
  const ModelSignature &signature = model.signature();
  computeStart = computeEnd = nowNs();
  auto failAll = [&](TRITONSERVER_Error *error) {
    for (size_t r : run) {
      if (r != run.back())
        pending[r].error = TRITONSERVER_ErrorNew(
            TRITONSERVER_ErrorCode(error), TRITONSERVER_ErrorMessage(error));
      else
        pending[r].error = error;
    }
  };

  const Padding &padding = model.padding();
  std::vector<int64_t> dims;
  std::string where = "model '" + model.name() + "': ";
  if (rt::Status s = runner->bindDims(shapes, dims); !s.isOk())
    return failAll(tritonError(s, where));

  // A request alone gets its output buffers before the run, which writes
  // straight into them; a run of several gets them after it succeeds, so
  // that a failed run can be retried one request at a time.
  bool alone = run.size() == 1;
  std::vector<std::vector<OutputTarget>> targets(
      run.size(), std::vector<OutputTarget>(signature.outputs.size()));
  if (alone)
    if (TRITONSERVER_Error *error = attachOutputs(pending[run[0]], targets[0]))
      return failAll(error);

  // On a GPU, one request whose inputs and outputs all live on it runs in
  // place, without copies.
  bool inPlace = gpu >= 0 && alone;
  for (const std::vector<InputPiece> &pieces : pending[run.front()].inputs)
    inPlace = inPlace && pieces.size() == 1 &&
              pieces.front().memory == TRITONSERVER_MEMORY_GPU &&
              pieces.front().memoryId == gpu;
  for (size_t o = 0; o < signature.outputs.size(); ++o)
    inPlace = inPlace && pending[run.front()].requested[o] &&
              targets[0][o].memory == TRITONSERVER_MEMORY_GPU &&
              targets[0][o].memoryId == gpu;

  std::vector<std::vector<char>> inputStaging(signature.inputs.size());
  std::vector<std::vector<char>> outputStaging(signature.outputs.size());
  std::vector<const void *> inputs(signature.inputs.size());
  std::vector<void *> outputs(signature.outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inPlace) {
      inputs[i] = pending[run.front()].inputs[i].front().data;
      continue;
    }
    int32_t padAxis = padding.enabled() ? padding.inputAxis[i] : -1;
    if (rt::Status s = gatherInput(pending, run, i, shapes[i], padAxis,
                                   rt::dtypeSize(signature.inputs[i].dtype),
                                   inputStaging[i], inputs[i]);
        !s.isOk())
      return failAll(tritonError(s, where + "gathering the inputs: "));
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    const OutputTarget &target = targets[0][o];
    if (inPlace || (alone && target.data && onHost(target.memory))) {
      outputs[o] = target.data;
      continue;
    }
    uint64_t bytes = 0;
    tensorBytes(runner->outputShape(o, dims), signature.outputs[o].dtype,
                bytes);
    outputStaging[o].resize(bytes);
    outputs[o] = outputStaging[o].data();
  }

  if (TRITONSERVER_LogIsEnabled(TRITONSERVER_LOG_VERBOSE)) {
    std::string sizes;
    for (int64_t d : dims)
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(d);
    logMessage(TRITONSERVER_LOG_VERBOSE,
               "model '" + model.name() + "': " + std::to_string(run.size()) +
                   " request(s) in one run at dims (" + sizes + ")" +
                   (inPlace ? ", in place on the GPU" : ""));
  }
  computeStart = nowNs();
  rt::Status status =
      context->run(dims, inputs.data(), outputs.data(),
                   inPlace ? rt::Memory::Device : rt::Memory::Host);
  computeEnd = nowNs();
  if (!status.isOk() && !alone &&
      status.code == rt::StatusCode::InvalidArgument) {
    // An index fault belongs to one request (a token id past the table):
    // each runs alone, so that only its own fails.
    for (size_t r : run) {
      uint64_t start = 0, end = 0;
      runTogether(pending, {r}, pending[r].shapes, start, end);
    }
    computeEnd = nowNs();
    return;
  }
  if (!status.isOk())
    return failAll(tritonError(status, where));
  if (!alone)
    for (size_t m = 0; m < run.size(); ++m)
      pending[run[m]].error = attachOutputs(pending[run[m]], targets[m]);

  // Each request's rows of each staged output, in run order, without the
  // positions padding added.
  std::vector<char> unpadded;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputStaging[o].empty())
      continue;
    int32_t axis = padding.enabled() ? padding.outputAxis[o] : -1;
    uint64_t elementBytes = rt::dtypeSize(signature.outputs[o].dtype);
    std::vector<int64_t> runShape = runner->outputShape(o, dims);
    const char *from = outputStaging[o].data();
    for (size_t m = 0; m < run.size(); ++m) {
      std::vector<int64_t> shape = runner->outputShape(o, pending[run[m]].dims);
      uint64_t bytes = product(shape, 0, shape.size()) * elementBytes;
      const char *rows = from;
      uint64_t staged = bytes;
      if (axis >= 0 && shape[axis] != runShape[axis]) {
        uint64_t outer = product(shape, 0, axis);
        uint64_t inner = product(shape, axis + 1, shape.size()) * elementBytes;
        unpadded.resize(bytes);
        unpadRows(from, unpadded.data(), outer, uint64_t(shape[axis]),
                  uint64_t(runShape[axis]), inner);
        rows = unpadded.data();
        staged = outer * uint64_t(runShape[axis]) * inner;
      }
      const OutputTarget &target = targets[m][o];
      if (target.data && !pending[run[m]].error) {
        rt::Memory to =
            onHost(target.memory) ? rt::Memory::Host : rt::Memory::Device;
        if (rt::Status s =
                rt::copyMemory(target.data, to, rows, rt::Memory::Host, bytes,
                               int(target.memoryId));
            !s.isOk())
          return failAll(tritonError(s, where + "writing the outputs: "));
      }
      from += staged;
    }
  }
}

void InstanceState::execute(TRITONBACKEND_Request **requests, uint32_t count) {
  uint64_t execStart = nowNs();
  std::vector<PendingRequest> pending(count);
  std::vector<size_t> valid;
  std::vector<RequestShapes> validShapes;
  for (uint32_t r = 0; r < count; ++r) {
    PendingRequest &p = pending[r];
    p.request = requests[r];
    if ((p.error = TRITONBACKEND_ResponseNew(&p.response, p.request))) {
      logMessage(TRITONSERVER_LOG_ERROR,
                 "model '" + model.name() + "': no response for a request: " +
                     TRITONSERVER_ErrorMessage(p.error));
      continue;
    }
    readRequest(p);
    if (!p.error) {
      valid.push_back(r);
      validShapes.push_back(p.shapes);
    }
  }

  for (const std::vector<size_t> &members :
       planRuns(validShapes, model.maxBatchSize(), model.padding().inputAxis)) {
    std::vector<size_t> run;
    uint64_t batch = 0;
    for (size_t m : members) {
      run.push_back(valid[m]);
      batch += uint64_t(pending[valid[m]].batch);
    }
    uint64_t computeStart = 0, computeEnd = 0;
    runTogether(pending, run,
                runShapes(validShapes, members, model.padding().inputAxis),
                computeStart, computeEnd);
    for (size_t r : run) {
      pending[r].computeStart = computeStart;
      pending[r].computeEnd = computeEnd;
    }
    bool ran = !pending[run.front()].error;
    if (ran)
      if (TRITONSERVER_Error *error =
              TRITONBACKEND_ModelInstanceReportBatchStatistics(
                  triton, batch, execStart, computeStart, computeEnd, nowNs()))
        TRITONSERVER_ErrorDelete(error);
  }

  uint64_t execEnd = nowNs();
  for (PendingRequest &p : pending) {
    bool success = !p.error;
    uint64_t computeStart = p.computeStart ? p.computeStart : execStart;
    uint64_t computeEnd = p.computeEnd ? p.computeEnd : execStart;
    if (TRITONSERVER_Error *error = TRITONBACKEND_ModelInstanceReportStatistics(
            triton, p.request, success, execStart, computeStart, computeEnd,
            execEnd))
      TRITONSERVER_ErrorDelete(error);
    if (p.response) {
      // ResponseSend takes the response; the error stays ours.
      if (TRITONSERVER_Error *error = TRITONBACKEND_ResponseSend(
              p.response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, p.error))
        TRITONSERVER_ErrorDelete(error);
    }
    if (p.error)
      TRITONSERVER_ErrorDelete(p.error);
    if (TRITONSERVER_Error *error = TRITONBACKEND_RequestRelease(
            p.request, TRITONSERVER_REQUEST_RELEASE_ALL))
      TRITONSERVER_ErrorDelete(error);
  }
}
