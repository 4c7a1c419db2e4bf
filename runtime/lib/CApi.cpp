//===- CApi.cpp - The C ABI of a Kiln artifact ----------------------------===//
//
// Thin wrappers over `Model`: arguments checked, every exception caught, and
// failures recorded in a thread-local message, so that nothing but status
// codes crosses the C boundary.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln_model.h"

#include "kiln/runtime/ArtifactFile.h"
#include "kiln/runtime/Model.h"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <new>
#include <string>
#include <vector>

using namespace kiln::rt;

static_assert(static_cast<int>(StatusCode::Internal) == KILN_ERROR_INTERNAL &&
                  static_cast<int>(StatusCode::NoDevice) ==
                      KILN_ERROR_NO_DEVICE,
              "StatusCode must mirror kiln_status");
static_assert(static_cast<int>(DType::Bool) == KILN_DTYPE_BOOL &&
                  static_cast<int>(DType::BF16) == KILN_DTYPE_BF16 &&
                  static_cast<int>(DType::F64) == KILN_DTYPE_F64 &&
                  static_cast<int>(DType::U64) == KILN_DTYPE_U64 &&
                  static_cast<int>(DType::F8E5M2) == KILN_DTYPE_F8E5M2,
              "DType must mirror kiln_dtype");
static_assert(static_cast<int>(Backend::Host) == KILN_BACKEND_HOST &&
                  static_cast<int>(Memory::Device) == KILN_MEMORY_DEVICE,
              "Backend and Memory must mirror kiln_backend and kiln_memory");

/// The C handle: a model plus the strings and shapes its descriptors point
/// to, which must live as long as the model.
struct kiln_model {
  /// The model.
  std::unique_ptr<Model> model;
  /// Descriptors of the inputs, in graph order.
  std::vector<kiln_tensor_desc> inputs;
  /// Descriptors of the outputs, in graph order.
  std::vector<kiln_tensor_desc> outputs;
  /// What `kiln_model_info` returns.
  std::string info;
};

struct kiln_context {
  /// The context.
  std::unique_ptr<ExecutionContext> context;
  /// Its model, which outlives it (for the number of dims a run gives).
  const kiln_model *model = nullptr;
};

/// The message of the last failure on this thread.
static thread_local std::string lastError;

/// Records `status` as this thread's last error and returns its code.
static kiln_status fail(const Status &status) {
  try {
    lastError = status.message;
  } catch (...) {
    // Out of memory while recording the message: keep the code.
  }
  return static_cast<kiln_status>(status.code);
}

/// Records an error with `code` and `message`.
static kiln_status fail(StatusCode code, const char *message) {
  return fail(Status::error(code, message));
}

/// Runs `body`, turning any escaping exception into KILN_ERROR_INTERNAL.
template <typename Fn> static kiln_status guarded(Fn body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(StatusCode::Internal, "out of host memory");
  } catch (const std::exception &e) {
    try {
      return fail(Status::error(StatusCode::Internal,
                                std::string("internal error: ") + e.what()));
    } catch (...) {
      return KILN_ERROR_INTERNAL;
    }
  } catch (...) {
    return fail(StatusCode::Internal, "internal error: unknown exception");
  }
}

/// Fills `desc` from `buffer`; the pointers stay owned by the model.
static kiln_tensor_desc describe(const Buffer &buffer) {
  kiln_tensor_desc desc;
  desc.name = buffer.name.c_str();
  desc.dtype = static_cast<kiln_dtype>(buffer.dtype);
  desc.rank = static_cast<int32_t>(buffer.shape.size());
  desc.shape = buffer.shape.data();
  return desc;
}

extern "C" {

KILN_API kiln_status kiln_model_create(kiln_backend backend, kiln_model **out) {
  return kiln_model_create_with_options(backend, nullptr, out);
}

/// The options the environment gives, overridden by the fields `given`
/// sets (read only up to its `size`).
static Status optionsOf(const kiln_model_options *given, HostOptions &host,
                        CudaOptions &cuda) {
  host = HostOptions::fromEnvironment();
  cuda = CudaOptions::fromEnvironment();
  if (!given)
    return Status::ok();
  constexpr uint32_t kKnown =
      KILN_OPTION_HOST_SEED | KILN_OPTION_HOST_CHECK | KILN_OPTION_CUDA_GRAPHS |
      KILN_OPTION_TUNE_MATMULS | KILN_OPTION_GEMM_KERNEL | KILN_OPTION_PDL;
  if (given->size < offsetof(kiln_model_options, host_seed))
    return Status::error(StatusCode::InvalidArgument,
                         "kiln_model_options: size " +
                             std::to_string(given->size) +
                             " is smaller than its first two fields");
  if (given->set & ~kKnown)
    return Status::error(StatusCode::InvalidArgument,
                         "kiln_model_options: unknown bits in set");
  // A field the caller's struct has, and marks as given.
  auto has = [&](uint32_t bit, size_t offset, size_t bytes) {
    return (given->set & bit) && offset + bytes <= given->size;
  };
  if (has(KILN_OPTION_HOST_SEED, offsetof(kiln_model_options, host_seed), 8))
    host.seed = given->host_seed;
  if (has(KILN_OPTION_HOST_CHECK, offsetof(kiln_model_options, host_check), 4))
    host.checking = given->host_check != 0;
  if (has(KILN_OPTION_CUDA_GRAPHS, offsetof(kiln_model_options, cuda_graphs),
          4))
    cuda.graphs = given->cuda_graphs != 0;
  if (has(KILN_OPTION_TUNE_MATMULS, offsetof(kiln_model_options, tune_matmuls),
          4))
    cuda.tuneMatmuls = given->tune_matmuls != 0;
  if (has(KILN_OPTION_GEMM_KERNEL, offsetof(kiln_model_options, gemm_kernel),
          sizeof(const char *)))
    host.gemm = cuda.gemm = given->gemm_kernel ? given->gemm_kernel : "";
  if (has(KILN_OPTION_PDL, offsetof(kiln_model_options, pdl), 4))
    cuda.pdl = given->pdl != 0;
  return Status::ok();
}

KILN_API kiln_status kiln_model_create_with_options(
    kiln_backend backend, const kiln_model_options *options, kiln_model **out) {
  return guarded([&]() -> kiln_status {
    if (!out)
      return fail(StatusCode::InvalidArgument, "out is null");
    *out = nullptr;
    HostOptions hostOptions;
    CudaOptions cudaOptions;
    if (Status s = optionsOf(options, hostOptions, cudaOptions); !s.isOk())
      return fail(s);
    if (backend != KILN_BACKEND_AUTO && backend != KILN_BACKEND_CUDA &&
        backend != KILN_BACKEND_HOST)
      return fail(Status::error(StatusCode::InvalidArgument,
                                "invalid backend " +
                                    std::to_string(static_cast<int>(backend))));
    Artifact artifact;
    if (Status s = loadEmbeddedArtifact(artifact); !s.isOk())
      return fail(s);
    auto handle = std::make_unique<kiln_model>();
    if (Status s =
            Model::create(std::move(artifact), static_cast<Backend>(backend),
                          handle->model, hostOptions, cudaOptions);
        !s.isOk())
      return fail(s);
    const Model &model = *handle->model;
    for (size_t i = 0; i < model.numInputs(); ++i)
      handle->inputs.push_back(describe(model.input(i)));
    for (size_t i = 0; i < model.numOutputs(); ++i)
      handle->outputs.push_back(describe(model.output(i)));
    handle->info = model.info();
    *out = handle.release();
    return KILN_OK;
  });
}

KILN_API void kiln_model_destroy(kiln_model *model) {
  try {
    delete model;
  } catch (...) {
    // Destructors do not throw; this only keeps exceptions out of C.
  }
}

KILN_API int32_t kiln_model_num_inputs(const kiln_model *model) {
  return model ? static_cast<int32_t>(model->inputs.size()) : -1;
}

KILN_API int32_t kiln_model_num_outputs(const kiln_model *model) {
  return model ? static_cast<int32_t>(model->outputs.size()) : -1;
}

/// Shared body of the two descriptor queries.
static kiln_status describeAt(const kiln_model *model, int32_t index,
                              kiln_tensor_desc *out, bool input) {
  return guarded([&]() -> kiln_status {
    if (!model || !out)
      return fail(StatusCode::InvalidArgument, "model or out is null");
    const std::vector<kiln_tensor_desc> &descs =
        input ? model->inputs : model->outputs;
    if (index < 0 || static_cast<size_t>(index) >= descs.size())
      return fail(Status::error(StatusCode::InvalidArgument,
                                std::string(input ? "input" : "output") +
                                    " index " + std::to_string(index) +
                                    " out of range (the model has " +
                                    std::to_string(descs.size()) + ")"));
    *out = descs[static_cast<size_t>(index)];
    return KILN_OK;
  });
}

KILN_API kiln_status kiln_model_input_desc(const kiln_model *model,
                                           int32_t index,
                                           kiln_tensor_desc *out) {
  return describeAt(model, index, out, /*input=*/true);
}

KILN_API kiln_status kiln_model_output_desc(const kiln_model *model,
                                            int32_t index,
                                            kiln_tensor_desc *out) {
  return describeAt(model, index, out, /*input=*/false);
}

KILN_API kiln_status kiln_model_run(kiln_model *model,
                                    const void *const *inputs,
                                    void *const *outputs, kiln_memory memory) {
  // A run without dims: refused, naming them, for a model that has some.
  return kiln_model_run_dims(model, nullptr, inputs, outputs, memory);
}

KILN_API int32_t kiln_model_num_dims(const kiln_model *model) {
  return model ? static_cast<int32_t>(model->model->dims().size()) : -1;
}

KILN_API kiln_status kiln_model_dim(const kiln_model *model, int32_t index,
                                    const char **name, int64_t *min,
                                    int64_t *max) {
  return guarded([&]() -> kiln_status {
    if (!model || !name || !min || !max)
      return fail(StatusCode::InvalidArgument,
                  "model, name, min or max is null");
    const std::vector<DimRange> &dims = model->model->dims();
    if (index < 0 || static_cast<size_t>(index) >= dims.size())
      return fail(Status::error(StatusCode::InvalidArgument,
                                "dim index " + std::to_string(index) +
                                    " out of range (the model has " +
                                    std::to_string(dims.size()) + ")"));
    const DimRange &dim = dims[static_cast<size_t>(index)];
    *name = dim.name.c_str();
    *min = dim.min;
    *max = dim.max;
    return KILN_OK;
  });
}

KILN_API kiln_status kiln_model_bind_dims(const kiln_model *model,
                                          const int64_t *const *input_shapes,
                                          int64_t *dims) {
  return guarded([&]() -> kiln_status {
    if (!model || (!input_shapes && model->model->numInputs()) ||
        (!dims && !model->model->dims().empty()))
      return fail(StatusCode::InvalidArgument,
                  "model, input_shapes or dims is null");
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < model->model->numInputs(); ++i) {
      size_t rank = model->model->input(i).shape.size();
      if (rank && !input_shapes[i])
        return fail(Status::error(StatusCode::InvalidArgument,
                                  "the shape of input " + std::to_string(i) +
                                      " is null"));
      shapes.emplace_back(input_shapes[i], input_shapes[i] + rank);
    }
    std::vector<int64_t> values;
    if (Status s = model->model->bindDims(shapes, values); !s.isOk())
      return fail(s);
    std::copy(values.begin(), values.end(), dims);
    return KILN_OK;
  });
}

KILN_API kiln_status kiln_model_output_alias(const kiln_model *model,
                                             int32_t index, int32_t *input,
                                             int32_t *axis) {
  return guarded([&]() -> kiln_status {
    if (!model || !input || !axis)
      return fail(StatusCode::InvalidArgument, "model, input or axis is null");
    if (index < 0 || static_cast<size_t>(index) >= model->model->numOutputs())
      return fail(Status::error(StatusCode::InvalidArgument,
                                "output index " + std::to_string(index) +
                                    " out of range (the model has " +
                                    std::to_string(model->model->numOutputs()) +
                                    ")"));
    *input = -1;
    *axis = -1;
    for (const OutputAlias &alias : model->model->artifact().aliases)
      if (alias.output == static_cast<uint32_t>(index)) {
        *input = static_cast<int32_t>(alias.input);
        *axis = static_cast<int32_t>(alias.axis);
      }
    return KILN_OK;
  });
}

/// The dims' values a caller passes, checked for null.
static std::vector<int64_t> dimValues(const kiln_model *model,
                                      const int64_t *dims) {
  size_t count = model->model->dims().size();
  return dims ? std::vector<int64_t>(dims, dims + count)
              : std::vector<int64_t>();
}

/// kiln_model_input_shape and kiln_model_output_shape.
static kiln_status shapeAtDims(const kiln_model *model, const int64_t *dims,
                               int32_t index, int64_t *shape, bool input) {
  return guarded([&]() -> kiln_status {
    if (!model || !shape)
      return fail(StatusCode::InvalidArgument, "model or shape is null");
    size_t count =
        input ? model->model->numInputs() : model->model->numOutputs();
    if (index < 0 || static_cast<size_t>(index) >= count)
      return fail(Status::error(StatusCode::InvalidArgument,
                                std::string(input ? "input" : "output") +
                                    " index " + std::to_string(index) +
                                    " out of range"));
    std::vector<int64_t> values = dimValues(model, dims);
    const std::vector<DimRange> &names = model->model->dims();
    if (values.size() != names.size())
      return fail(StatusCode::InvalidArgument, "dims is null");
    for (size_t d = 0; d < values.size(); ++d)
      if (values[d] < names[d].min || values[d] > names[d].max)
        return fail(Status::error(StatusCode::InvalidArgument,
                                  "dim '" + names[d].name + "' is " +
                                      std::to_string(values[d]) +
                                      ", outside its range"));
    std::vector<int64_t> result =
        input ? model->model->inputShape(index, values)
              : model->model->outputShape(index, values);
    std::copy(result.begin(), result.end(), shape);
    return KILN_OK;
  });
}

KILN_API kiln_status kiln_model_input_shape(const kiln_model *model,
                                            const int64_t *dims, int32_t index,
                                            int64_t *shape) {
  return shapeAtDims(model, dims, index, shape, /*input=*/true);
}

KILN_API kiln_status kiln_model_output_shape(const kiln_model *model,
                                             const int64_t *dims, int32_t index,
                                             int64_t *shape) {
  return shapeAtDims(model, dims, index, shape, /*input=*/false);
}

KILN_API kiln_status kiln_model_run_dims(kiln_model *model, const int64_t *dims,
                                         const void *const *inputs,
                                         void *const *outputs,
                                         kiln_memory memory) {
  return guarded([&]() -> kiln_status {
    if (!model)
      return fail(StatusCode::InvalidArgument, "model is null");
    if (memory != KILN_MEMORY_HOST && memory != KILN_MEMORY_DEVICE)
      return fail(Status::error(StatusCode::InvalidArgument,
                                "invalid memory kind " +
                                    std::to_string(static_cast<int>(memory))));
    Status s = model->model->run(dimValues(model, dims), inputs, outputs,
                                 static_cast<Memory>(memory));
    return s.isOk() ? KILN_OK : fail(s);
  });
}

KILN_API kiln_status kiln_context_create(kiln_model *model,
                                         kiln_context **out) {
  return guarded([&]() -> kiln_status {
    if (!out)
      return fail(StatusCode::InvalidArgument, "out is null");
    *out = nullptr;
    if (!model)
      return fail(StatusCode::InvalidArgument, "model is null");
    auto context = std::make_unique<kiln_context>();
    if (Status s = model->model->createContext(context->context); !s.isOk())
      return fail(s);
    context->model = model;
    *out = context.release();
    return KILN_OK;
  });
}

KILN_API void kiln_context_destroy(kiln_context *context) {
  try {
    delete context;
  } catch (...) {
    // Destructors do not throw; this only keeps exceptions out of C.
  }
}

KILN_API kiln_status kiln_context_run(kiln_context *context,
                                      const void *const *inputs,
                                      void *const *outputs,
                                      kiln_memory memory) {
  return guarded([&]() -> kiln_status {
    if (!context)
      return fail(StatusCode::InvalidArgument, "context is null");
    Status s =
        context->context->run(inputs, outputs, static_cast<Memory>(memory));
    return s.isOk() ? KILN_OK : fail(s);
  });
}

KILN_API kiln_status kiln_context_enqueue(kiln_context *context,
                                          const void *const *inputs,
                                          void *const *outputs, void *stream) {
  return guarded([&]() -> kiln_status {
    if (!context)
      return fail(StatusCode::InvalidArgument, "context is null");
    Status s = context->context->enqueue(inputs, outputs, stream);
    return s.isOk() ? KILN_OK : fail(s);
  });
}

KILN_API kiln_status kiln_context_run_dims(kiln_context *context,
                                           const int64_t *dims,
                                           const void *const *inputs,
                                           void *const *outputs,
                                           kiln_memory memory) {
  return guarded([&]() -> kiln_status {
    if (!context)
      return fail(StatusCode::InvalidArgument, "context is null");
    Status s = context->context->run(dimValues(context->model, dims), inputs,
                                     outputs, static_cast<Memory>(memory));
    return s.isOk() ? KILN_OK : fail(s);
  });
}

KILN_API kiln_status kiln_context_enqueue_dims(kiln_context *context,
                                               const int64_t *dims,
                                               const void *const *inputs,
                                               void *const *outputs,
                                               void *stream) {
  return guarded([&]() -> kiln_status {
    if (!context)
      return fail(StatusCode::InvalidArgument, "context is null");
    Status s = context->context->enqueue(dimValues(context->model, dims),
                                         inputs, outputs, stream);
    return s.isOk() ? KILN_OK : fail(s);
  });
}

KILN_API kiln_status kiln_context_synchronize(kiln_context *context) {
  return guarded([&]() -> kiln_status {
    if (!context)
      return fail(StatusCode::InvalidArgument, "context is null");
    Status s = context->context->synchronize();
    return s.isOk() ? KILN_OK : fail(s);
  });
}

KILN_API const char *kiln_last_error(void) { return lastError.c_str(); }

KILN_API uint32_t kiln_abi_version(void) { return KILN_ABI_VERSION; }

KILN_API const char *kiln_model_info(const kiln_model *model) {
  return model ? model->info.c_str() : "";
}

} // extern "C"
