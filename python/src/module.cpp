//===- module.cpp - kiln._kiln, the Python package's native part ----------===//
//
// A thin layer over the C++ JIT API (kiln::compileModel's steps) and the
// runtime (kiln::rt::Model): the Python side (kiln/__init__.py) turns
// dictionaries, numpy arrays and DLPack tensors into the flat lists these
// functions take. Errors come back as RuntimeError with the message the
// command-line tools print; kiln/__init__.py raises them as CompileError or
// RunError.
//
// Kiln's own code is built without exceptions; this file alone uses them
// (pybind11 needs them), and none crosses Kiln's functions.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/Diagnostics.h"
#include "kiln/Compiler/OptionText.h"
#include "kiln/Compiler/Report.h"
#include "kiln/Compiler/Version.h"
#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/ConstantData/TensorComparison.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/runtime/ArtifactFile.h"
#include "kiln/runtime/Model.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace kiln;

namespace {

/// The DLPack structs (dlpack.h, ABI version 0.x), as `__dlpack__()`
/// returns them in a capsule named "dltensor".
struct DLDevice {
  int32_t deviceType;
  int32_t deviceId;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byteOffset;
};
struct DLManagedTensor {
  DLTensor tensor;
  void *managerContext;
  void (*deleter)(DLManagedTensor *);
};

rt::Backend backendOf(const std::string &name) {
  if (name == "auto")
    return rt::Backend::Auto;
  if (name == "cuda")
    return rt::Backend::Cuda;
  if (name == "host")
    return rt::Backend::Host;
  throw std::invalid_argument(
      "backend must be 'auto', 'cuda' or 'host', not '" + name + "'");
}

/// Pointers in graph order from the integer addresses the Python side
/// passes (it keeps the tensors alive and has checked dtypes and the shapes
/// `shapesAt` gave it).
void checkedPointers(const rt::Model &model, const std::vector<uintptr_t> &in,
                     const std::vector<uintptr_t> &out,
                     std::vector<const void *> &inputs,
                     std::vector<void *> &outputs) {
  if (in.size() != model.numInputs() || out.size() != model.numOutputs())
    throw std::invalid_argument("wrong number of inputs or outputs");
  for (uintptr_t p : in)
    inputs.push_back(reinterpret_cast<const void *>(p));
  for (uintptr_t p : out)
    outputs.push_back(reinterpret_cast<void *>(p));
}

/// A loaded model and, after a compile with report=True, its report.
struct PyModel {
  std::unique_ptr<rt::Model> model;
  std::string report;
  /// The artifact file it was loaded from, if any.
  std::string path;
  /// The same plan on the other backends, made when a run asks for one.
  std::map<rt::Backend, std::unique_ptr<rt::Model>> siblings;

  /// The model that runs on `backend` ("" or "auto": this one).
  rt::Model &on(const std::string &backend) {
    if (backend.empty() || backend == "auto" ||
        backendOf(backend) == model->backend())
      return *model;
    rt::Backend wanted = backendOf(backend);
    std::unique_ptr<rt::Model> &sibling = siblings[wanted];
    if (sibling)
      return *sibling;
    // The plan again: from its file, or from this model while it still holds
    // the weights (the CUDA backend drops its host copy after the upload).
    rt::Artifact plan;
    if (!path.empty()) {
      if (rt::Status s = rt::loadArtifactFile(path, plan); !s.isOk())
        throw std::runtime_error(s.message);
    } else if (model->artifact().weightBytes() == 0 ||
               model->artifact().weightData()) {
      plan = model->artifact();
    } else {
      throw std::runtime_error(
          "this model's weights are on the GPU now; compile it again with "
          "backend='" +
          backend + "' to run it there");
    }
    rt::Status status = rt::Model::create(std::move(plan), wanted, sibling,
                                          rt::HostOptions::fromEnvironment());
    if (!status.isOk())
      throw std::runtime_error(status.message);
    return *sibling;
  }

  py::list describe(bool inputs) const {
    py::list list;
    size_t count = inputs ? model->numInputs() : model->numOutputs();
    for (size_t i = 0; i < count; ++i) {
      const rt::Buffer &b = inputs ? model->input(i) : model->output(i);
      list.append(py::make_tuple(b.name, rt::dtypeName(b.dtype),
                                 py::tuple(py::cast(b.shape))));
    }
    return list;
  }

  /// The symbolic dims: (name, min, max) each; empty for a static model.
  py::list dims() const {
    py::list list;
    for (const rt::DimRange &d : model->dims())
      list.append(py::make_tuple(d.name, d.min, d.max));
    return list;
  }

  /// The outputs kept in an input's storage (KV caches appended in place):
  /// (output index, input index, axis) each.
  py::list aliases() const {
    py::list list;
    for (const rt::OutputAlias &a : model->artifact().aliases)
      list.append(py::make_tuple(a.output, a.input, a.axis));
    return list;
  }

  /// The dims' values for inputs of `shapes` (one per input, graph order).
  std::vector<int64_t>
  bindDims(const std::vector<std::vector<int64_t>> &shapes) const {
    std::vector<int64_t> values;
    if (rt::Status s = model->bindDims(shapes, values); !s.isOk())
      throw std::runtime_error(s.message);
    return values;
  }

  /// The input and output shapes at the dims' `values` (from bindDims).
  py::tuple shapesAt(const std::vector<int64_t> &values) const {
    py::list inputs, outputs;
    for (size_t i = 0; i < model->numInputs(); ++i)
      inputs.append(py::tuple(py::cast(model->inputShape(i, values))));
    for (size_t i = 0; i < model->numOutputs(); ++i)
      outputs.append(py::tuple(py::cast(model->outputShape(i, values))));
    return py::make_tuple(inputs, outputs);
  }

  /// Runs on host buffers (or device pointers when `device`), given as
  /// integer addresses in graph order, at the dims' `dims` (none for a
  /// static model); the Python side keeps them alive and has checked their
  /// dtypes and shapes.
  void run(const std::vector<uintptr_t> &in, const std::vector<uintptr_t> &out,
           bool device, const std::string &backend,
           const std::vector<int64_t> &dims) {
    rt::Model &runner = on(backend);
    std::vector<const void *> inputs;
    std::vector<void *> outputs;
    checkedPointers(runner, in, out, inputs, outputs);
    rt::Status status;
    {
      py::gil_scoped_release release;
      status = runner.run(dims, inputs.data(), outputs.data(),
                          device ? rt::Memory::Device : rt::Memory::Host);
    }
    if (!status.isOk())
      throw std::runtime_error(status.message);
  }
};

/// One execution context of a PyModel, for runs from several threads (the
/// GIL is released while it runs).
struct PyRunContext {
  const rt::Model *model = nullptr;
  std::unique_ptr<rt::ExecutionContext> context;

  void run(const std::vector<uintptr_t> &in, const std::vector<uintptr_t> &out,
           bool device, const std::vector<int64_t> &dims) {
    std::vector<const void *> inputs;
    std::vector<void *> outputs;
    checkedPointers(*model, in, out, inputs, outputs);
    rt::Status status;
    {
      py::gil_scoped_release release;
      status = context->run(dims, inputs.data(), outputs.data(),
                            device ? rt::Memory::Device : rt::Memory::Host);
    }
    if (!status.isOk())
      throw std::runtime_error(status.message);
  }

  /// Queues a run on the CUDA stream `stream` (a CUstream as an integer)
  /// without waiting; see ExecutionContext::enqueue.
  void enqueue(const std::vector<uintptr_t> &in,
               const std::vector<uintptr_t> &out, uintptr_t stream,
               const std::vector<int64_t> &dims) {
    std::vector<const void *> inputs;
    std::vector<void *> outputs;
    checkedPointers(*model, in, out, inputs, outputs);
    rt::Status status;
    {
      py::gil_scoped_release release;
      status = context->enqueue(dims, inputs.data(), outputs.data(),
                                reinterpret_cast<void *>(stream));
    }
    if (!status.isOk())
      throw std::runtime_error(status.message);
  }

  /// Waits for the queued runs; see ExecutionContext::synchronize.
  void synchronize() {
    rt::Status status;
    {
      py::gil_scoped_release release;
      status = context->synchronize();
    }
    if (!status.isOk())
      throw std::runtime_error(status.message);
  }
};

PyRunContext createContext(PyModel &model) {
  PyRunContext result;
  result.model = model.model.get();
  if (rt::Status s = model.model->createContext(result.context); !s.isOk())
    throw std::runtime_error(s.message);
  return result;
}

PyModel create(rt::Artifact artifact, const std::string &backend) {
  PyModel result;
  rt::Status status =
      rt::Model::create(std::move(artifact), backendOf(backend), result.model,
                        rt::HostOptions::fromEnvironment());
  if (!status.isOk())
    throw std::runtime_error(status.message);
  return result;
}

/// Compiles the model at `path`, or the serialized model `bytes` (named
/// `path` in messages and resolving external data beside it).
PyModel
compile(const std::string &path, const py::object &bytes,
        const std::string &precision,
        const std::map<std::string, int64_t> &dims,
        const std::map<std::string, std::pair<int64_t, int64_t>> &ranges,
        const std::map<std::string, std::vector<int64_t>> &shapes,
        const std::string &backend, bool report, bool kvCacheInPlace,
        const std::map<std::string, std::string> &expressions, bool allowTf32,
        const std::string &weights, int64_t weightsBlockSize) {
  CompileOptions options;
  options.pipeline.cacheInPlace = kvCacheInPlace;
  options.allowTf32 = allowTf32;
  options.pipeline.mixedPrecision.precision = precision;
  if (precision != "fp32" && precision != "fp16" && precision != "bf16")
    throw std::invalid_argument("precision must be 'fp32', 'fp16' or 'bf16'");
  if (std::string error =
          parseWeights(weights, weightsBlockSize, options.pipeline);
      !error.empty())
    throw std::invalid_argument("weights: " + error);
  // The importer's messages name kiln.compile's arguments.
  options.import.names.dims = "dims";
  options.import.names.inputShapes = "input_shapes";
  for (const auto &[name, value] : dims)
    options.import.dimValues[name] = value;
  for (const auto &[name, range] : ranges) {
    if (range.first < 0 || range.first > range.second)
      throw std::invalid_argument("dim '" + name + "': the range (" +
                                  std::to_string(range.first) + ", " +
                                  std::to_string(range.second) +
                                  ") must have 0 <= min <= max");
    options.import.dimRanges[name] = range;
  }
  for (const auto &[name, expression] : expressions)
    if (std::string error =
            parseDimValue(name + "=" + expression, options.import);
        !error.empty())
      throw std::invalid_argument("dim '" + name + "': " + error);
  for (const auto &[name, shape] : shapes)
    options.import.inputShapes[name] =
        llvm::SmallVector<int64_t>(shape.begin(), shape.end());

  mlir::MLIRContext context;
  context.loadDialect<KilnDialect, mlir::func::FuncDialect>();
  CollectedDiagnostics diagnostics(&context);
  auto failedWith = [&]() { return std::runtime_error(diagnostics.text()); };

  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (bytes.is_none()) {
    module = loadModel(&context, path, options);
  } else {
    std::string data = bytes.cast<std::string>();
    module = importONNX(&context, data, path, options.import);
  }
  if (!module || mlir::failed(runPipeline(*module, options)))
    throw failedWith();
  CompileReport compileReport =
      reportOf(*module, path, options.pipeline.precision());
  rt::Artifact artifact;
  if (mlir::failed(lowerToArtifact(*module, options, /*compile=*/true, artifact,
                                   &compileReport.origins)))
    throw failedWith();
  compileReport.weightBytes = static_cast<int64_t>(artifact.weights.size());
  std::string text;
  if (report) {
    llvm::raw_string_ostream reportOs(text);
    printReportText(artifact, compileReport, reportOs);
  }
  PyModel result = create(std::move(artifact), backend);
  result.report = std::move(text);
  return result;
}

PyModel load(const std::string &path, const std::string &backend) {
  rt::Artifact artifact;
  if (rt::Status s = rt::loadArtifactFile(path, artifact); !s.isOk())
    throw std::runtime_error(s.message);
  PyModel result = create(std::move(artifact), backend);
  result.path = path;
  return result;
}

/// The data pointer, device and element type of a DLPack capsule, which
/// stays with its producer (this reads it; the capsule's owner frees it).
py::tuple dlpackInfo(const py::capsule &capsule) {
  if (std::string(capsule.name() ? capsule.name() : "") != "dltensor")
    throw std::invalid_argument("not an unconsumed DLPack capsule");
  auto *managed = capsule.get_pointer<DLManagedTensor>();
  const DLTensor &t = managed->tensor;
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  py::object strides = py::none();
  if (t.strides)
    strides = py::cast(std::vector<int64_t>(t.strides, t.strides + t.ndim));
  uintptr_t data = reinterpret_cast<uintptr_t>(t.data) + t.byteOffset;
  return py::make_tuple(data, t.device.deviceType, t.device.deviceId,
                        t.dtype.code, t.dtype.bits, t.dtype.lanes,
                        py::tuple(py::cast(shape)), strides);
}

std::string versionText() {
  std::string text;
  llvm::raw_string_ostream os(text);
  printVersion(os);
  return text;
}

} // namespace

/// The runtime element type NumPy calls `name` ("float32", ...).
static rt::DType dtypeNamed(const std::string &name) {
  for (int code = 0; code <= static_cast<int>(rt::kLastDType); ++code)
    if (name == rt::dtypeName(static_cast<rt::DType>(code)))
      return static_cast<rt::DType>(code);
  throw std::invalid_argument("kiln.compare: no Kiln element type is '" +
                              name + "'");
}

/// An array's C-order bytes as a host tensor of element type `dtype`.
static HostTensor hostTensorOf(mlir::MLIRContext &context,
                               const std::string &bytes,
                               const std::string &dtype,
                               const std::vector<int64_t> &shape) {
  auto tensor = HostTensor::allocate(
      fromRuntimeDType(&context, dtypeNamed(dtype)),
      llvm::SmallVector<int64_t>(shape.begin(), shape.end()));
  if (mlir::failed(tensor) || tensor->bytes.size() != bytes.size())
    throw std::invalid_argument("kiln.compare: the data does not match its "
                                "shape and element type");
  std::memcpy(tensor->bytes.data(), bytes.data(), bytes.size());
  return std::move(*tensor);
}

/// kiln.compare's native half: the numerics contract's comparator (the one
/// kiln-run uses) over two arrays of one shape, given as bytes.
static py::dict compareArrays(const py::bytes &got, const std::string &gotType,
                              const py::bytes &want,
                              const std::string &wantType,
                              const std::vector<int64_t> &shape, double rtol,
                              double atol, double relL2) {
  // Element types only: a context for their uniquing, no dialects.
  static mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  static std::mutex contextMutex;
  std::lock_guard<std::mutex> lock(contextMutex);
  HostTensor g = hostTensorOf(context, got, gotType, shape);
  HostTensor w = hostTensorOf(context, want, wantType, shape);
  Tolerance tolerance{rtol, atol, relL2};
  TensorError e = compareTensors(g, w, tolerance);
  py::dict result;
  result["max_abs"] = e.maxAbs;
  result["max_rel"] = e.maxRel;
  result["rel_l2"] = e.relL2;
  result["first_bad"] = e.firstBad;
  result["within"] = e.within;
  result["text"] = describeError(e, g, w, tolerance);
  result["tolerance"] = tolerance.text();
  return result;
}

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "The native part of the kiln package; use kiln, not this.";
  m.attr("__version__") = kKilnVersion;
  py::class_<PyModel>(m, "Model")
      .def_property_readonly("inputs",
                             [](const PyModel &p) { return p.describe(true); })
      .def_property_readonly("outputs",
                             [](const PyModel &p) { return p.describe(false); })
      .def_property_readonly(
          "backend",
          [](const PyModel &p) { return rt::backendName(p.model->backend()); })
      .def_property_readonly("report",
                             [](const PyModel &p) { return p.report; })
      .def_property_readonly("info",
                             [](const PyModel &p) { return p.model->info(); })
      .def_property_readonly("dims", &PyModel::dims)
      .def_property_readonly("aliases", &PyModel::aliases)
      .def("bind_dims", &PyModel::bindDims)
      .def("shapes_at", &PyModel::shapesAt)
      .def("run", &PyModel::run)
      // The context keeps its model alive.
      .def("context", &createContext, py::keep_alive<0, 1>());
  py::class_<PyRunContext>(m, "Context")
      .def("run", &PyRunContext::run)
      .def("enqueue", &PyRunContext::enqueue)
      .def("synchronize", &PyRunContext::synchronize);
  m.def("compile", &compile);
  m.def("load", &load);
  m.def("dlpack_info", &dlpackInfo);
  m.def("version_text", &versionText);
  m.def("compare", &compareArrays);
}
