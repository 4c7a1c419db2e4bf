//===- LibraryRunner.cpp - a `.so` run through its C ABI ------------------===//

#include "LibraryRunner.h"
#include "BenchMode.h"
#include "BenchRunners.h"
#include "RunOptions.h"

#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/kiln_model.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

using namespace mlir;
using kiln::HostTensor;

namespace kilnrun {

/// The symbolic dims of a `.so` through its C ABI: which values a run takes
/// (the inputs from files say them; random inputs take --run-dim, else the
/// top of each range), and the shapes they give.
namespace {
struct SymbolicLibrary {
  SymbolicLibrary(void *lib, kiln_model *model) {
    numDimsFn = (decltype(numDimsFn))dlsym(lib, "kiln_model_num_dims");
    dim = (decltype(dim))dlsym(lib, "kiln_model_dim");
    bind = (decltype(bind))dlsym(lib, "kiln_model_bind_dims");
    inputShape = (decltype(inputShape))dlsym(lib, "kiln_model_input_shape");
    outputShapeFn =
        (decltype(outputShapeFn))dlsym(lib, "kiln_model_output_shape");
    runAtDims = (decltype(runAtDims))dlsym(lib, "kiln_model_run_dims");
    lastError = (decltype(lastError))dlsym(lib, "kiln_last_error");
    if (numDimsFn && dim && bind && inputShape && outputShapeFn && runAtDims)
      numDims = numDimsFn(model);
    this->model = model;
  }

  /// Sets `values` and the random inputs' types.
  LogicalResult
  chooseDims(SmallVector<std::pair<std::string, RankedTensorType>> &inputs,
             const llvm::StringMap<HostTensor> &given) {
    llvm::StringMap<int64_t> asked;
    if (failed(parseRunDims(asked)))
      return failure();
    values.resize(numDims);
    for (int32_t d = 0; d < numDims; ++d) {
      const char *name;
      int64_t min, max;
      dim(model, d, &name, &min, &max);
      auto it = asked.find(name);
      values[d] = it == asked.end() ? max : it->second;
      if (it != asked.end())
        asked.erase(it);
    }
    if (!asked.empty())
      return fail("--run-dim: the model has no dim '" +
                  asked.begin()->getKey() + "'"),
             failure();
    // Every input from a file: their shapes say the dims.
    std::vector<std::vector<int64_t>> shapes(inputs.size());
    std::vector<const int64_t *> pointers;
    bool allGiven = true;
    for (auto [i, input] : llvm::enumerate(inputs)) {
      auto file = given.find(input.first);
      allGiven &= file != given.end();
      if (file != given.end())
        shapes[i].assign(file->second.shape.begin(), file->second.shape.end());
      pointers.push_back(shapes[i].data());
    }
    if (allGiven && bind(model, pointers.data(), values.data()) != KILN_OK)
      return fail(lastError()), failure();
    for (auto [i, input] : llvm::enumerate(inputs)) {
      SmallVector<int64_t> shape(input.second.getRank());
      if (inputShape(model, values.data(), i, shape.data()) != KILN_OK)
        return fail(lastError()), failure();
      input.second =
          RankedTensorType::get(shape, input.second.getElementType());
    }
    return success();
  }

  void outputShape(kiln_model *model, int32_t index, int64_t *shape) {
    outputShapeFn(model, values.data(), index, shape);
  }

  kiln_status run(kiln_model *model, const void *const *in, void *const *out) {
    return runAtDims(model, values.data(), in, out, KILN_MEMORY_HOST);
  }

  int32_t numDims = 0;
  std::vector<int64_t> values;

private:
  kiln_model *model = nullptr;
  decltype(&kiln_model_num_dims) numDimsFn = nullptr;
  decltype(&kiln_model_dim) dim = nullptr;
  decltype(&kiln_model_bind_dims) bind = nullptr;
  decltype(&kiln_model_input_shape) inputShape = nullptr;
  decltype(&kiln_model_output_shape) outputShapeFn = nullptr;
  decltype(&kiln_model_run_dims) runAtDims = nullptr;
  decltype(&kiln_last_error) lastError = nullptr;
};
} // namespace

FailureOr<SmallVector<HostTensor>>
runLibrary(MLIRContext *ctx, Signature &signature,
           llvm::StringMap<HostTensor> &given, std::mt19937 &rng,
           const llvm::StringMap<int64_t> &bounds) {
  // dlopen searches the library path for a name without a slash.
  std::string path = modelPath.getValue();
  if (path.find('/') == std::string::npos)
    path = "./" + path;
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fail(std::string("cannot load '") + modelPath + "': " + dlerror());
    return failure();
  }
  auto create = (decltype(&kiln_model_create))dlsym(lib, "kiln_model_create");
  auto destroy =
      (decltype(&kiln_model_destroy))dlsym(lib, "kiln_model_destroy");
  auto run = (decltype(&kiln_model_run))dlsym(lib, "kiln_model_run");
  auto lastError = (decltype(&kiln_last_error))dlsym(lib, "kiln_last_error");
  auto numIn =
      (decltype(&kiln_model_num_inputs))dlsym(lib, "kiln_model_num_inputs");
  auto numOut =
      (decltype(&kiln_model_num_outputs))dlsym(lib, "kiln_model_num_outputs");
  auto inDesc =
      (decltype(&kiln_model_input_desc))dlsym(lib, "kiln_model_input_desc");
  auto outDesc =
      (decltype(&kiln_model_output_desc))dlsym(lib, "kiln_model_output_desc");
  if (!create || !destroy || !run || !lastError || !numIn || !numOut ||
      !inDesc || !outDesc) {
    fail("'" + modelPath + "' is not a Kiln artifact (missing kiln_* symbols)");
    return failure();
  }
  // The run-time options go to the artifact's own runtime through the C
  // ABI, as they go to an in-process model (hostOptions, cudaOptions).
  auto createWithOptions = (decltype(&kiln_model_create_with_options))dlsym(
      lib, "kiln_model_create_with_options");
  kiln::rt::HostOptions host = hostOptions();
  kiln::rt::CudaOptions cuda = cudaOptions();
  kiln_model_options options{};
  options.size = sizeof(options);
  options.set = KILN_OPTION_HOST_SEED | KILN_OPTION_HOST_CHECK |
                KILN_OPTION_CUDA_GRAPHS | KILN_OPTION_TUNE_MATMULS;
  // Given only when asked for, so that an artifact from before the field
  // still takes the other options.
  if (!host.gemm.empty()) {
    options.set |= KILN_OPTION_GEMM_KERNEL;
    options.gemm_kernel = host.gemm.c_str();
  }
  options.host_seed = host.seed;
  options.host_check = host.checking;
  options.cuda_graphs = cuda.graphs;
  options.tune_matmuls = cuda.tuneMatmuls;
  if (cuda.pdl) {
    options.set |= KILN_OPTION_PDL;
    options.pdl = 1;
  }
  kiln_model *model = nullptr;
  kiln_status created;
  if (createWithOptions) {
    created = createWithOptions(static_cast<kiln_backend>(runtimeBackend()),
                                &options, &model);
  } else if (hostSeed.getNumOccurrences() || checkMode || !host.gemm.empty() ||
             cudaGraphs.getNumOccurrences() ||
             tuneMatmuls.getNumOccurrences() || pdl.getNumOccurrences()) {
    fail("'" + modelPath +
         "' predates run-time options in the C ABI "
         "(kiln_model_create_with_options): compile it again to use "
         "--host-seed, --check, --gemm, --cuda-graphs, --tune-matmuls or "
         "--pdl");
    return failure();
  } else {
    created = create(static_cast<kiln_backend>(runtimeBackend()), &model);
  }
  if (created != KILN_OK) {
    fail(lastError());
    return failure();
  }
  if (printInfo)
    if (auto info = (decltype(&kiln_model_info))dlsym(lib, "kiln_model_info"))
      llvm::outs() << "model: " << info(model) << "\n";
  auto describe = [&](const kiln_tensor_desc &d) {
    SmallVector<int64_t> shape(d.shape, d.shape + d.rank);
    return RankedTensorType::get(
        shape, kiln::fromRuntimeDType(ctx, kiln::rt::DType(d.dtype)));
  };
  for (int32_t i = 0; i < numIn(model); ++i) {
    kiln_tensor_desc d;
    inDesc(model, i, &d);
    signature.inputs.push_back({d.name, describe(d)});
  }
  // A model with symbolic dims runs at the dims its inputs say.
  SymbolicLibrary symbolic(lib, model);
  if (symbolic.numDims > 0 &&
      failed(symbolic.chooseDims(signature.inputs, given))) {
    destroy(model);
    return failure();
  }
  SmallVector<HostTensor> outputs;
  for (int32_t i = 0; i < numOut(model); ++i) {
    kiln_tensor_desc d;
    outDesc(model, i, &d);
    signature.outputNames.push_back(d.name);
    RankedTensorType type = describe(d);
    SmallVector<int64_t> shape(type.getShape());
    if (symbolic.numDims > 0)
      symbolic.outputShape(model, i, shape.data());
    outputs.push_back(*HostTensor::allocate(type.getElementType(), shape));
  }
  auto inputs = gatherInputs(signature.inputs, given, rng, bounds);
  if (failed(inputs)) {
    destroy(model);
    return failure();
  }
  SmallVector<const void *> in;
  SmallVector<void *> out;
  for (HostTensor &t : *inputs)
    in.push_back(t.bytes.data());
  for (HostTensor &t : outputs)
    out.push_back(t.bytes.data());
  kiln_status status =
      symbolic.numDims > 0
          ? symbolic.run(model, in.data(), out.data())
          : run(model, in.data(), out.data(), KILN_MEMORY_HOST);
  if (status != KILN_OK)
    fail(lastError());
  if (status == KILN_OK && benchRequested() &&
      !benchLibrary(lib, model, symbolic.values, in, outputs))
    status = KILN_ERROR_INTERNAL;
  // Which backend Auto chose, as the model describes itself.
  auto info = (decltype(&kiln_model_info))dlsym(lib, "kiln_model_info");
  bool onCuda = info && StringRef(info(model)).contains("backend cuda");
  destroy(model);
  if (status == KILN_OK && benchRequested() && onCuda &&
      !benchLibraryDevice(symbolic.values, in, outputs))
    status = KILN_ERROR_INTERNAL;
  if (status != KILN_OK)
    return failure();
  given.clear();
  for (auto [i, t] : llvm::enumerate(*inputs))
    given[signature.inputs[i].first] = t;
  return outputs;
}

} // namespace kilnrun
