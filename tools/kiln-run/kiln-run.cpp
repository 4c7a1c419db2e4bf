//===- kiln-run.cpp - run a model on a backend and save its outputs -------===//
//
//   kiln-run model.onnx --backend reference --output-dir out/
//   kiln-run model.so --backend cuda --input x=x.npy --compare-reference
//   kiln-run model.so --backend host --check --reference-model model.onnx
//   kiln-run model.onnx --backend host --precision fp16 --compare-reference \
//            --per-layer --rel-l2 1e-2
//
// Inputs not given on the command line are filled with seeded random data
// (the seed is printed). Outputs are written as DIR/NAME.npy. With
// --compare-reference the run fails when an output leaves the fp32 numerics
// contract (--rtol, --atol); --per-layer also compares every tensor the
// kernels write and names the first that leaves it.
//
//===----------------------------------------------------------------------===//

#include "BenchMode.h"
#include "GenerateMode.h"

#include "kiln/Compiler/CommandLine.h"
#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/Diagnostics.h"
#include "kiln/Compiler/TensorFile.h"
#include "kiln/Compiler/Version.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/Importer/ONNX/TensorProto.h"
#include "kiln/Interpreter/Interpreter.h"
#include "kiln/Target/CUDA/EmitPlan.h"
#include "kiln/Transforms/Passes.h"
#include "kiln/kiln_model.h"
#include "kiln/runtime/ArtifactFile.h"
#include "kiln/runtime/Model.h"
#include "kiln/runtime/Npy.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <optional>

using namespace mlir;
namespace cl = llvm::cl;
using kiln::HostTensor;

namespace {

enum class BackendKind { Reference, Cuda, Host, Auto };

cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx|model.so>"),
                               cl::Required);
cl::opt<BackendKind> backend(
    "backend", cl::desc("where to run"), cl::init(BackendKind::Reference),
    cl::values(clEnumValN(BackendKind::Reference, "reference",
                          "the reference interpreter (.onnx only)"),
               clEnumValN(BackendKind::Cuda, "cuda", "the GPU"),
               clEnumValN(BackendKind::Host, "host",
                          "the generated kernels emulated on the CPU"),
               clEnumValN(BackendKind::Auto, "auto",
                          "the GPU if there is one, else the host backend")));
cl::list<std::string> inputFiles("input", cl::desc("an input from a file"),
                                 cl::value_desc("NAME=FILE.npy|FILE.pb"));
cl::list<std::string> constInputs(
    "const-input",
    cl::desc("freeze a graph input to the value in a file at compile time"),
    cl::value_desc("NAME=FILE.npy|FILE.pb"));
cl::opt<std::string> outputDir(
    "output-dir",
    cl::desc("write the outputs here as NAME.npy, the inputs used under "
             "inputs/ and, with --per-layer, the tensors compared under "
             "layers/"),
    cl::value_desc("dir"));
cl::opt<bool> compareReference(
    "compare-reference",
    cl::desc("also run the reference interpreter and print the error"));
cl::opt<std::string> referenceModel(
    "reference-model",
    cl::desc("the .onnx model a .so came from, for --compare-reference"),
    cl::value_desc("model.onnx"));
cl::opt<bool> perLayer(
    "per-layer",
    cl::desc("with --compare-reference on an .onnx: compile a debugging build "
             "that keeps every tensor the kernels write, compare each with "
             "the fp32 reference's tensor of the same name in the order the "
             "model computes them, and name the first beyond the tolerance "
             "with its ONNX node (the exit status still follows the outputs)"));
cl::opt<bool> comparePipeline(
    "compare-pipeline",
    cl::desc("run the reference interpreter on each function's IR before "
             "and after the Kiln pipeline (the first function on the given "
             "inputs, the others on random ones) and fail when they differ "
             "beyond the fp32 contract (rtol 1e-4, atol 1e-5), or "
             "--rtol/--atol/--rel-l2"));
cl::opt<unsigned> seed("seed", cl::desc("seed of random inputs"), cl::init(0));
cl::list<std::string> runDims(
    "run-dim",
    cl::desc("a model with symbolic dims (--dim NAME=MIN:MAX): the value of "
             "a dim for random inputs (default: the dim's value in the "
             "inputs from files, else the top of its range)"),
    cl::CommaSeparated, cl::value_desc("NAME=N"));
cl::opt<uint64_t> hostSeed(
    "host-seed",
    cl::desc("host backend: seed of the order in which emulated threads run "
             "between barriers"),
    cl::init(0));
cl::opt<bool> checkMode(
    "check",
    cl::desc("host backend: checking mode (each buffer in its own poisoned "
             "allocation, kernels built with AddressSanitizer)"));
cl::opt<bool> cudaGraphs(
    "cuda-graphs",
    cl::desc("CUDA backend: replay each run after the first as a CUDA graph "
             "(--cuda-graphs=false issues every step one by one, as "
             "KILN_CUDA_GRAPHS=0 does for any artifact; without the flag, "
             "that variable decides)"),
    cl::init(true));
cl::opt<bool> tuneMatmuls(
    "tune-matmuls",
    cl::desc("CUDA backend: time several cuBLASLt algorithms for each matmul "
             "at its first run and keep the fastest (--tune-matmuls=false "
             "runs the heuristic's first, as KILN_TUNE_MATMULS=0 does for "
             "any artifact; without the flag, that variable decides)"),
    cl::init(true));
cl::opt<bool> printInfo(
    "info",
    cl::desc("print the model's summary before running it (kiln_model_info: "
             "Kiln version, arch, backend and the run-time options in "
             "effect), for an .onnx as for a .so"));
cl::opt<double> relTolerance("rtol", cl::desc("relative tolerance of the comparison"),
                     cl::init(1e-4));
cl::opt<double> absTolerance("atol", cl::desc("absolute tolerance of the comparison"),
                     cl::init(1e-5));
cl::opt<double> relL2Tolerance(
    "rel-l2",
    cl::desc("compare by the relative L2 error of each output instead (the "
             "fp16/bf16 contract: 1e-2); non-finite values where the "
             "reference is finite still fail"),
    cl::init(0.0));

int fail(const llvm::Twine &message) {
  // After what was printed so far, also where both streams meet.
  llvm::outs().flush();
  llvm::errs() << "kiln-run: " << message << "\n";
  return 1;
}

/// The graph inputs in order: from files where given, random otherwise.
FailureOr<SmallVector<HostTensor>>
gatherInputs(ArrayRef<std::pair<std::string, RankedTensorType>> signature,
             llvm::StringMap<HostTensor> &given, std::mt19937 &rng) {
  SmallVector<HostTensor> result;
  for (auto &[name, type] : signature) {
    auto it = given.find(name);
    if (it == given.end()) {
      result.push_back(kiln::randomTensor(type, rng));
      continue;
    }
    // Symbolic dims take the file's sizes; the interpreter checks that
    // inputs agree on them.
    RankedTensorType fileType = it->second.getType();
    bool fits = fileType.getElementType() == type.getElementType() &&
                fileType.getRank() == type.getRank();
    for (int64_t d = 0; fits && d < type.getRank(); ++d)
      fits =
          type.isDynamicDim(d) || type.getDimSize(d) == fileType.getDimSize(d);
    if (!fits) {
      std::string given, expected;
      llvm::raw_string_ostream(given) << it->second.getType();
      llvm::raw_string_ostream(expected) << type;
      fail("input '" + name + "' is " + given + ", the model takes " +
           expected);
      return failure();
    }
    result.push_back(it->second);
  }
  return result;
}

/// `t` with elements of type `elementType`, converted through double when
/// both are floats of different widths (otherwise `t` as it is).
HostTensor inElementType(const HostTensor &t, Type elementType) {
  if (t.elementType == elementType || !isa<FloatType>(t.elementType) ||
      !isa<FloatType>(elementType))
    return t;
  HostTensor converted = *HostTensor::allocate(elementType, t.shape);
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    converted.setFromDouble(i, t.getAsDouble(i));
  return converted;
}

/// Writes tensors as DIR/FOLDER/NAME.npy (DIR/NAME.npy without a folder).
LogicalResult writeTensors(ArrayRef<std::string> names,
                           ArrayRef<HostTensor> tensors,
                           StringRef folder = "") {
  if (outputDir.empty() || (tensors.empty() && !folder.empty()))
    return success();
  std::string dir = outputDir + (folder.empty() ? "" : "/" + folder.str());
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    fail("cannot create '" + dir + "': " + ec.message());
    return failure();
  }
  for (auto [name, tensor] : llvm::zip(names, tensors)) {
    kiln::rt::NpyArray array;
    array.dtype = *kiln::toRuntimeDType(tensor.elementType);
    array.shape.assign(tensor.shape.begin(), tensor.shape.end());
    array.data.assign(tensor.bytes.begin(), tensor.bytes.end());
    // Tensor names may hold any character; they make no folders.
    std::string safe = name;
    for (char &c : safe)
      if (c == '/' || c == '\\')
        c = '_';
    std::string error;
    if (!kiln::rt::writeNpy(dir + "/" + safe + ".npy", array, error)) {
      fail(error);
      return failure();
    }
  }
  return success();
}

/// Element `i` of `tensor` as text: floats with nine significant digits
/// (seventeen for f64), integers exactly (unsigned ones as unsigned).
std::string formatElement(const HostTensor &tensor, int64_t i) {
  Type type = tensor.elementType;
  std::string text;
  llvm::raw_string_ostream os(text);
  if (isa<FloatType>(type))
    os << llvm::format(type.isF64() ? "%.17g" : "%.9g", tensor.getAsDouble(i));
  else if (type.isUnsignedInteger())
    os << static_cast<uint64_t>(tensor.getAsInt(i));
  else
    os << tensor.getAsInt(i);
  return text;
}

/// How far one tensor is from its reference.
struct TensorError {
  double maxAbs = 0, maxRel = 0, relL2 = 0;
  /// The first element outside the per-element check, or -1.
  int64_t firstBad = -1;
  /// Whether the tensor meets the tolerance.
  bool within = true;
};

/// Compares `got` with `want` (same element count): every element within
/// atol + rtol * |reference| (NaN only where the reference is NaN), or with
/// --rel-l2 the relative L2 error (non-finite only where the reference is);
/// integers and booleans must be equal, compared as integers (a double holds
/// no i64 or ui64 beyond 2^53 exactly).
TensorError compareTensor(const HostTensor &got, const HostTensor &want) {
  TensorError e;
  double errorSquares = 0, referenceSquares = 0;
  bool isFloat = isa<FloatType>(want.elementType);
  for (int64_t i = 0, n = got.numElements(); i < n; ++i) {
    double a = got.getAsDouble(i), b = want.getAsDouble(i);
    // Equal infinities are no error (their difference would be NaN).
    double diff = a == b ? 0.0 : std::fabs(a - b);
    if (std::isfinite(b)) {
      errorSquares += std::isfinite(a) ? diff * diff : INFINITY;
      referenceSquares += b * b;
    }
    bool ok = !isFloat ? got.getAsInt(i) == want.getAsInt(i)
              : (std::isnan(a) && std::isnan(b)) || a == b ||
                  (relL2Tolerance > 0
                       ? std::isfinite(a) || !std::isfinite(b)
                       : diff <= absTolerance + relTolerance * std::fabs(b));
    if (!ok && e.firstBad < 0)
      e.firstBad = i;
    // A NaN that matches a NaN is no error; any other NaN is the worst.
    if (std::isnan(a) && std::isnan(b))
      diff = 0;
    else if (std::isnan(diff))
      diff = INFINITY;
    e.maxAbs = std::max(e.maxAbs, diff);
    e.maxRel = std::max(e.maxRel, diff / std::max(std::fabs(b), 1e-30));
  }
  e.relL2 =
      std::sqrt(errorSquares) / std::max(std::sqrt(referenceSquares), 1e-30);
  e.within = e.firstBad < 0 && (relL2Tolerance <= 0 || e.relL2 <= relL2Tolerance);
  return e;
}

/// Prints `label: max_abs .. max_rel .. rel_l2 ..` and, outside the
/// tolerance, why (with the first offending element).
void printError(const llvm::Twine &label, const TensorError &e,
                const HostTensor &got, const HostTensor &want) {
  llvm::outs() << label << ": max_abs " << llvm::format("%.3e", e.maxAbs)
               << " max_rel " << llvm::format("%.3e", e.maxRel) << " rel_l2 "
               << llvm::format("%.3e", e.relL2);
  if (e.firstBad >= 0)
    llvm::outs() << " FAIL at element " << e.firstBad << ": got "
                 << formatElement(got, e.firstBad) << ", reference "
                 << formatElement(want, e.firstBad);
  else if (!e.within)
    llvm::outs() << " FAIL: rel_l2 above "
                 << llvm::format("%g", relL2Tolerance.getValue());
  llvm::outs() << "\n";
}

/// Prints the error of each output and returns whether all are within the
/// tolerance.
bool printComparison(ArrayRef<std::string> names, ArrayRef<HostTensor> got,
                     ArrayRef<HostTensor> want) {
  bool within = true;
  for (auto [name, g, w] : llvm::zip(names, got, want)) {
    TensorError e = compareTensor(g, w);
    printError("compare " + name, e, g, w);
    within &= e.within;
  }
  return within;
}

/// The tolerance in words, for messages.
std::string toleranceText() {
  char text[64];
  if (relL2Tolerance > 0)
    std::snprintf(text, sizeof(text), "relative L2 %g",
                  relL2Tolerance.getValue());
  else
    std::snprintf(text, sizeof(text), "rtol %g / atol %g",
                  relTolerance.getValue(), absTolerance.getValue());
  return text;
}

/// The ONNX node `value` came from (the first its location names), or "?".
std::string onnxNodeOf(Value value) {
  auto names = kiln::onnxNodeNames(value.getLoc());
  return names.empty() ? "?" : names.front().str();
}

/// The reference's tensors for --per-layer, by ONNX tensor name.
struct ReferenceTensors {
  llvm::StringMap<HostTensor> values;
  llvm::StringMap<std::string> nodes;
};

/// Exposes every named tensor of the imported `func` as an output, runs the
/// reference interpreter, and returns the model's own outputs in `outputs`
/// and the rest by name.
FailureOr<ReferenceTensors> interpretAllTensors(func::FuncOp func,
                                                ArrayRef<HostTensor> inputs,
                                                size_t numOutputs,
                                                SmallVector<HostTensor> &outputs) {
  PassManager pm(func.getContext(), func::FuncOp::getOperationName());
  pm.addPass(kiln::createKilnExposeTensorsPass());
  if (failed(pm.run(func)))
    return failure();
  auto all = kiln::interpretFunction(func, inputs);
  if (failed(all))
    return failure();
  ReferenceTensors reference;
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, tensor] : llvm::enumerate(*all)) {
    if (i < numOutputs) {
      outputs.push_back(std::move(tensor));
      continue;
    }
    auto name = func.getResultAttrOfType<StringAttr>(i, kiln::kNameAttr);
    reference.nodes[name.getValue()] = onnxNodeOf(ret.getOperand(i));
    reference.values[name.getValue()] = std::move(tensor);
  }
  return reference;
}

/// --per-layer: prints the error of each tensor the compiled model kept, in
/// the order it computed them, and names the first beyond the tolerance.
void printPerLayer(ArrayRef<std::string> names, ArrayRef<HostTensor> got,
                   const ReferenceTensors &reference) {
  llvm::outs() << "per-layer: " << names.size()
               << " tensors in memory, in the order the model computes them\n";
  std::string first;
  for (auto [name, g] : llvm::zip(names, got)) {
    auto it = reference.values.find(name);
    if (it == reference.values.end() ||
        it->second.numElements() != g.numElements()) {
      llvm::outs() << "layer " << name << ": no reference tensor of its size\n";
      continue;
    }
    std::string node = reference.nodes.lookup(name);
    TensorError e = compareTensor(g, it->second);
    printError("layer " + name + " (node " + node + ")", e, g, it->second);
    if (!e.within && first.empty())
      first = "'" + name + "' from ONNX node '" + node + "'";
  }
  if (first.empty())
    llvm::outs() << "per-layer: every tensor is within " << toleranceText()
                 << "\n";
  else
    llvm::outs() << "per-layer: first tensor beyond " << toleranceText()
                 << ": " << first << "\n";
}

kiln::rt::HostOptions hostOptions() {
  kiln::rt::HostOptions options;
  options.seed = hostSeed;
  options.checking = checkMode;
  return options;
}

kiln::rt::CudaOptions cudaOptions() {
  // The environment's settings (KILN_CUDA_GRAPHS, KILN_TUNE_MATMULS), as
  // for any artifact, unless a flag says otherwise.
  kiln::rt::CudaOptions options = kiln::rt::CudaOptions::fromEnvironment();
  if (cudaGraphs.getNumOccurrences())
    options.graphs = cudaGraphs;
  if (tuneMatmuls.getNumOccurrences())
    options.tuneMatmuls = tuneMatmuls;
  return options;
}

kiln::rt::Backend runtimeBackend() {
  switch (backend) {
  case BackendKind::Cuda:
    return kiln::rt::Backend::Cuda;
  case BackendKind::Host:
    return kiln::rt::Backend::Host;
  default:
    return kiln::rt::Backend::Auto;
  }
}

struct Signature {
  SmallVector<std::pair<std::string, RankedTensorType>> inputs;
  SmallVector<std::string> outputNames;
};

/// The values --run-dim gives, by name, for an .onnx and a .so alike; fails
/// naming a malformed or negative one.
LogicalResult parseRunDims(llvm::StringMap<int64_t> &values) {
  for (const std::string &spec : runDims) {
    auto [name, text] = StringRef(spec).split('=');
    int64_t value;
    if (name.empty() || text.getAsInteger(10, value) || value < 0) {
      fail("--run-dim: expected NAME=N, got '" + spec + "'");
      return failure();
    }
    values[name] = value;
  }
  return success();
}

/// The signature with its symbolic dims at the values random inputs take:
/// --run-dim, else what the inputs from files say, else the top of the
/// dim's range. A dim left without value stays dynamic (drawn as 1).
/// Only the random inputs' types change.
FailureOr<Signature>
concreteSignature(func::FuncOp func, Signature signature,
                  const llvm::StringMap<HostTensor> &given) {
  llvm::StringMap<int64_t> values;
  if (failed(parseRunDims(values)))
    return failure();
  for (auto &[name, type] : signature.inputs) {
    auto file = given.find(name);
    std::optional<kiln::SymbolicShape> sizes = kiln::symbolicShapeOf(type);
    if (file == given.end() || !sizes ||
        sizes->size() != file->second.shape.size())
      continue;
    for (auto [d, size] : llvm::enumerate(*sizes))
      if (std::optional<std::string> symbol = size.getSymbol())
        values.try_emplace(*symbol, file->second.shape[d]);
  }
  if (auto ranges = func->getAttrOfType<DictionaryAttr>(kiln::kDimRangesAttr))
    for (NamedAttribute range : ranges)
      if (auto bounds = dyn_cast<DenseI64ArrayAttr>(range.getValue());
          bounds && bounds.size() == 2)
        values.try_emplace(range.getName().getValue(), bounds[1]);
  auto lookup = [&](StringRef name) -> std::optional<int64_t> {
    auto it = values.find(name);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
  // Inputs from files keep the symbolic type: the interpreter checks them.
  for (auto &[name, type] : signature.inputs)
    if (!given.count(name))
      if (std::optional<SmallVector<int64_t>> shape =
              kiln::concreteShape(type, lookup))
        type = RankedTensorType::get(*shape, type.getElementType());
  return signature;
}

Signature signatureOf(func::FuncOp func) {
  Signature s;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto name = func.getArgAttrOfType<StringAttr>(i, kiln::kNameAttr);
    s.inputs.push_back({name ? name.str() : "input" + std::to_string(i),
                        cast<RankedTensorType>(type)});
  }
  for (size_t i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, kiln::kNameAttr);
    s.outputNames.push_back(name ? name.str() : "output" + std::to_string(i));
  }
  return s;
}

/// A function's concrete signature and the inputs it runs on: from `given`
/// where named, random otherwise.
struct FunctionRun {
  Signature signature;
  SmallVector<HostTensor> inputs;
};
FailureOr<FunctionRun> prepareRun(func::FuncOp func,
                                  llvm::StringMap<HostTensor> &given,
                                  std::mt19937 &rng) {
  FailureOr<Signature> signature =
      concreteSignature(func, signatureOf(func), given);
  if (failed(signature))
    return failure();
  auto inputs = gatherInputs(signature->inputs, given, rng);
  if (failed(inputs))
    return failure();
  return FunctionRun{std::move(*signature), std::move(*inputs)};
}

/// What --bench's times are, for `backend` (the one asked for when a `.so`
/// runs through its C ABI, which does not say which Auto chose).
std::string benchWhat(std::optional<kiln::rt::Backend> backend = std::nullopt) {
  kiln::rt::Backend b = backend.value_or(runtimeBackend());
  std::string what = "wall clock of whole runs with host-memory inputs and "
                     "outputs (their copies included) on backend ";
  what += kiln::rt::backendName(b);
  if (b == kiln::rt::Backend::Host)
    what += ": the host backend emulates the GPU; its times are not GPU times";
  return what;
}

/// One run of a bench runner into its own outputs; false when it failed.
using RunInto = std::function<bool(void *const *outputs)>;

/// --bench over benchThreads() runners: runner t is `makeRun(t)` (null when
/// its execution context could not be made, having said why), run into its
/// own copy of `outputs`, so that threads never share storage.
bool benchRuns(const SmallVector<HostTensor> &outputs,
               function_ref<RunInto(unsigned)> makeRun, StringRef what) {
  unsigned threads = benchThreads();
  std::vector<SmallVector<HostTensor>> storage(threads, outputs);
  std::vector<std::vector<void *>> pointers(threads);
  std::vector<BenchRun> runners;
  for (unsigned t = 0; t < threads; ++t) {
    for (HostTensor &tensor : storage[t])
      pointers[t].push_back(tensor.bytes.data());
    RunInto run = makeRun(t);
    if (!run)
      return false;
    runners.push_back([run, out = pointers[t].data()] { return run(out); });
  }
  return runBench(runners, what);
}

/// --bench on a `.so`: the model's own runs, or with --threads N one
/// execution context per thread (kiln_context_*).
bool benchLibrary(void *lib, kiln_model *model,
                  const SmallVector<const void *> &in,
                  const SmallVector<HostTensor> &outputs) {
  auto run = (decltype(&kiln_model_run))dlsym(lib, "kiln_model_run");
  auto lastError = (decltype(&kiln_last_error))dlsym(lib, "kiln_last_error");
  auto createContext =
      (decltype(&kiln_context_create))dlsym(lib, "kiln_context_create");
  auto destroyContext =
      (decltype(&kiln_context_destroy))dlsym(lib, "kiln_context_destroy");
  auto runContext = (decltype(&kiln_context_run))dlsym(lib, "kiln_context_run");
  bool threaded = benchThreads() > 1;
  if (threaded && (!createContext || !destroyContext || !runContext)) {
    fail("--threads needs an artifact with execution contexts (compile it "
         "again with this kilnc)");
    return false;
  }
  std::vector<kiln_context *> contexts;
  bool ok = benchRuns(
      outputs,
      [&](unsigned) -> RunInto {
        kiln_context *context = nullptr;
        if (threaded) {
          if (createContext(model, &context) != KILN_OK) {
            fail(lastError());
            return nullptr;
          }
          contexts.push_back(context);
        }
        return [=, &in](void *const *out) {
          kiln_status s =
              context ? runContext(context, in.data(), out, KILN_MEMORY_HOST)
                      : run(model, in.data(), out, KILN_MEMORY_HOST);
          if (s != KILN_OK)
            fail(lastError());
          return s == KILN_OK;
        };
      },
      benchWhat());
  for (kiln_context *context : contexts)
    destroyContext(context);
  return ok;
}

/// --bench in process: the model's own runs, or with --threads N one
/// execution context per thread.
bool benchModel(kiln::rt::Model &model, const SmallVector<const void *> &in,
                const SmallVector<HostTensor> &outputs) {
  std::vector<std::unique_ptr<kiln::rt::ExecutionContext>> contexts;
  return benchRuns(
      outputs,
      [&](unsigned) -> RunInto {
        kiln::rt::ExecutionContext *context = nullptr;
        if (benchThreads() > 1) {
          contexts.emplace_back();
          if (kiln::rt::Status s = model.createContext(contexts.back());
              !s.isOk()) {
            fail(s.message);
            return nullptr;
          }
          context = contexts.back().get();
        }
        return [=, &model, &in](void *const *out) {
          kiln::rt::Status s =
              context ? context->run(in.data(), out, kiln::rt::Memory::Host)
                      : model.run(in.data(), out, kiln::rt::Memory::Host);
          if (!s.isOk())
            fail(s.message);
          return s.isOk();
        };
      },
      benchWhat(model.backend()));
}

/// --bench on the CUDA backend, one thread: the GPU's view of a run
/// (device-memory I/O, CUDA events around each run). Does nothing on the
/// host backend, whose wall-clock line is all there is.
bool benchDevice(kiln::rt::Model &model, const SmallVector<const void *> &in) {
  if (model.backend() != kiln::rt::Backend::Cuda || benchThreads() > 1)
    return true;
  std::vector<double> ms;
  if (kiln::rt::Status s =
          model.timeDeviceRuns(in.data(), benchWarmup(), benchIters(), ms);
      !s.isOk()) {
    fail(s.message);
    return false;
  }
  llvm::outs() << llvm::format("bench: device: %zu runs after %u warm-up: ",
                         ms.size(), benchWarmup())
               << latencySummary(std::move(ms)) << "\n"
               << "bench: device: GPU time between CUDA events around each "
                  "run, inputs and outputs in device memory (no host "
                  "copies)\n";
  return true;
}

/// benchDevice for a `.so` that ran on the CUDA backend: its artifact
/// loaded in process (the same plan and kernels), since the C ABI has no
/// timing call of its own.
bool benchLibraryDevice(const SmallVector<const void *> &in) {
  kiln::rt::Artifact artifact;
  std::unique_ptr<kiln::rt::Model> model;
  kiln::rt::Status s = kiln::rt::loadArtifactFile(modelPath, artifact);
  if (s.isOk())
    s = kiln::rt::Model::create(std::move(artifact), kiln::rt::Backend::Cuda,
                                model, hostOptions(), cudaOptions());
  if (!s.isOk()) {
    fail(s.message);
    return false;
  }
  return benchDevice(*model, in);
}

/// --bench times one shape: a model with symbolic dims is refused (its
/// runs take dims the timing loops do not pass yet).
LogicalResult refuseSymbolicBench() {
  if (!benchRequested())
    return success();
  fail("--bench times models compiled with static shapes so far; compile "
       "with each dim pinned (--dim NAME=N)");
  return failure();
}

/// The symbolic dims of a `.so` through its C ABI: which values a run takes
/// (the inputs from files say them; random inputs take --run-dim, else the
/// top of each range), and the shapes they give.
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

/// Runs a `.so` through its own C ABI, as a user's program would.
FailureOr<SmallVector<HostTensor>>
runLibrary(MLIRContext *ctx, Signature &signature,
           llvm::StringMap<HostTensor> &given, std::mt19937 &rng) {
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
  auto destroy = (decltype(&kiln_model_destroy))dlsym(lib, "kiln_model_destroy");
  auto run = (decltype(&kiln_model_run))dlsym(lib, "kiln_model_run");
  auto lastError = (decltype(&kiln_last_error))dlsym(lib, "kiln_last_error");
  auto numIn = (decltype(&kiln_model_num_inputs))dlsym(lib, "kiln_model_num_inputs");
  auto numOut = (decltype(&kiln_model_num_outputs))dlsym(lib, "kiln_model_num_outputs");
  auto inDesc = (decltype(&kiln_model_input_desc))dlsym(lib, "kiln_model_input_desc");
  auto outDesc = (decltype(&kiln_model_output_desc))dlsym(lib, "kiln_model_output_desc");
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
  options.host_seed = host.seed;
  options.host_check = host.checking;
  options.cuda_graphs = cuda.graphs;
  options.tune_matmuls = cuda.tuneMatmuls;
  kiln_model *model = nullptr;
  kiln_status created;
  if (createWithOptions) {
    created = createWithOptions(static_cast<kiln_backend>(runtimeBackend()),
                                &options, &model);
  } else if (hostSeed.getNumOccurrences() || checkMode ||
             cudaGraphs.getNumOccurrences() ||
             tuneMatmuls.getNumOccurrences()) {
    fail("'" + modelPath +
         "' predates run-time options in the C ABI "
         "(kiln_model_create_with_options): compile it again to use "
         "--host-seed, --check, --cuda-graphs or --tune-matmuls");
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
    return RankedTensorType::get(shape,
                                 kiln::fromRuntimeDType(ctx, kiln::rt::DType(d.dtype)));
  };
  for (int32_t i = 0; i < numIn(model); ++i) {
    kiln_tensor_desc d;
    inDesc(model, i, &d);
    signature.inputs.push_back({d.name, describe(d)});
  }
  // A model with symbolic dims runs at the dims its inputs say.
  SymbolicLibrary symbolic(lib, model);
  if (symbolic.numDims > 0 &&
      (failed(refuseSymbolicBench()) ||
       failed(symbolic.chooseDims(signature.inputs, given)))) {
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
  auto inputs = gatherInputs(signature.inputs, given, rng);
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
  if (status == KILN_OK && benchRequested() && !benchLibrary(lib, model, in, outputs))
    status = KILN_ERROR_INTERNAL;
  // Which backend Auto chose, as the model describes itself.
  auto info = (decltype(&kiln_model_info))dlsym(lib, "kiln_model_info");
  bool onCuda = info && StringRef(info(model)).contains("backend cuda");
  destroy(model);
  if (status == KILN_OK && benchRequested() && onCuda &&
      !benchLibraryDevice(in))
    status = KILN_ERROR_INTERNAL;
  if (status != KILN_OK)
    return failure();
  given.clear();
  for (auto [i, t] : llvm::enumerate(*inputs))
    given[signature.inputs[i].first] = t;
  return outputs;
}

/// The checking mode needs AddressSanitizer's runtime first in the process;
/// kiln-run is not built with it, so it runs itself again with the runtime
/// preloaded: the one of the compiler that builds the kernels, so the two
/// match. Returns only on failure.
int reexecWithAddressSanitizer(char **argv) {
  const char *named = getenv("KILN_HOST_CXX");
  auto compiler = llvm::sys::findProgramByName(named && *named ? named : "c++");
  if (!compiler)
    return fail("--check needs a C++ compiler to find AddressSanitizer's "
                "runtime (c++ on PATH, or KILN_HOST_CXX)");
  llvm::SmallString<128> outPath;
  if (llvm::sys::fs::createTemporaryFile("kiln-run-asan", "txt", outPath))
    return fail("--check: cannot create a temporary file");
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(outPath),
                                          std::nullopt};
  int rc = llvm::sys::ExecuteAndWait(
      *compiler, {*compiler, "-print-file-name=libasan.so"}, std::nullopt,
      redirects);
  auto text = llvm::MemoryBuffer::getFile(outPath);
  llvm::sys::fs::remove(outPath);
  std::string runtime = text ? (*text)->getBuffer().trim().str() : "";
  if (rc != 0 || runtime.empty() || !llvm::sys::fs::exists(runtime))
    return fail("--check: " + *compiler +
                " does not know AddressSanitizer's runtime (libasan.so)");
  std::string preload = runtime;
  if (const char *old = getenv("LD_PRELOAD"); old && *old)
    preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  // kiln-run's own allocations are not what the check is about.
  std::string options = "detect_leaks=0";
  if (const char *old = getenv("ASAN_OPTIONS"); old && *old)
    options = std::string(old) + ":" + options;
  setenv("ASAN_OPTIONS", options.c_str(), 1);
  setenv("KILN_RUN_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  return fail("--check: cannot run kiln-run again under AddressSanitizer: " +
              llvm::Twine(strerror(errno)));
}

/// --generate: the model through the C++ API (a .so's artifact, or the
/// .onnx compiled in process), then the decoding loop.
int generate(MLIRContext &context, bool isLibrary,
             const kiln::CompileOptions &options) {
  if (backend == BackendKind::Reference)
    return fail("--generate runs a compiled model: use --backend cuda, host "
                "or auto");
  kiln::rt::Artifact artifact;
  if (isLibrary) {
    if (kiln::rt::Status s = kiln::rt::loadArtifactFile(modelPath, artifact);
        !s.isOk())
      return fail(s.message);
  } else if (failed(kiln::compileModel(&context, modelPath, options,
                                       artifact))) {
    return 1;
  }
  std::unique_ptr<kiln::rt::Model> model;
  if (kiln::rt::Status s = kiln::rt::Model::create(
          std::move(artifact), runtimeBackend(), model, hostOptions(),
          cudaOptions());
      !s.isOk())
    return fail(s.message);
  return runGenerate(*model);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  kiln::registerPrecisionCLOptions();
  kiln::registerInputCLOptions();
  kiln::registerKernelCLOptions();
  kiln::registerVersionPrinter();
  cl::ParseCommandLineOptions(argc, argv,
                              "kiln-run: run a model and save its outputs\n");
  if (checkMode && !dlsym(RTLD_DEFAULT, "__asan_region_is_poisoned")) {
    if (getenv("KILN_RUN_REEXEC"))
      return fail("--check: AddressSanitizer did not load");
    return reexecWithAddressSanitizer(argv);
  }
  MLIRContext context;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  // Registered last, so asked first: model locations name their node.
  kiln::ModelDiagnosticHandler modelHandler(&context);
  context.loadDialect<kiln::KilnDialect, func::FuncDialect>();

  bool isLibrary = StringRef(modelPath).ends_with(".so");
  if (perLayer) {
    if (isLibrary)
      return fail("--per-layer compiles the model again in a debugging build "
                  "that keeps every tensor: give the .onnx, not a .so");
    if (backend == BackendKind::Reference)
      return fail("--per-layer compares a compiled model with the reference: "
                  "use --backend host, cuda or auto");
    if (comparePipeline)
      return fail("--per-layer and --compare-pipeline do not go together");
    compareReference = true;
  }

  kiln::CompileOptions options;
  kiln::applyPrecisionCLOptions(options);
  options.import.recordTensorNames = perLayer;
  options.pipeline.exposeTensors = perLayer;
  if (std::string error = kiln::applyInputCLOptions(options); !error.empty())
    return fail(error);
  if (std::string error = kiln::applyKernelCLOptions(options); !error.empty())
    return fail(error);
  unsigned usedSeed = seed ? seed : std::random_device{}();
  llvm::outs() << "seed " << usedSeed << "\n";
  std::mt19937 rng(usedSeed);

  llvm::StringMap<HostTensor> given, frozen;
  if (failed(kiln::readNamedTensorFiles(&context, constInputs, "const-input",
                                        frozen)))
    return 1;
  // toDenseElementsAttr, not the raw bytes: MLIR bit-packs booleans.
  for (auto &entry : frozen)
    options.import.constantInputs[entry.getKey()] =
        llvm::cast<ElementsAttr>(entry.getValue().toDenseElementsAttr());

  if (generateRequested())
    return generate(context, isLibrary, options);

  Signature signature;
  SmallVector<HostTensor> outputs, layerOutputs;
  SmallVector<std::string> layerNames;
  OwningOpRef<ModuleOp> module;
  if (isLibrary) {
    if (backend == BackendKind::Reference)
      return fail("a .so runs on --backend cuda, host or auto");
    if (failed(kiln::readNamedTensorFiles(&context, inputFiles, "input",
                                          given)))
      return 1;
    auto result = runLibrary(&context, signature, given, rng);
    if (failed(result))
      return 1;
    outputs = std::move(*result);
  } else {
    // The model first: it says what its inputs are (a file holding a
    // sequence or optional value is no tensor, and the import says so).
    module = kiln::loadModel(&context, modelPath, options);
    if (!module ||
        failed(kiln::readNamedTensorFiles(&context, inputFiles, "input",
                                          given)))
      return 1;
    func::FuncOp func = *module->getOps<func::FuncOp>().begin();
    FailureOr<FunctionRun> prepared = prepareRun(func, given, rng);
    if (failed(prepared))
      return 1;
    signature = std::move(prepared->signature);
    SmallVector<HostTensor> inputs = std::move(prepared->inputs);
    given.clear();
    for (auto [i, t] : llvm::enumerate(inputs))
      given[signature.inputs[i].first] = t;
    if (comparePipeline) {
      // The semantics check of every pass: same inputs, IR before and after.
      // Every function of the module is checked (a lit file of many cases,
      // one function each); those after the first take random inputs.
      OwningOpRef<ModuleOp> after = module->clone();
      if (failed(kiln::runPipeline(*after, options)))
        return 1;
      bool many = llvm::range_size(module->getOps<func::FuncOp>()) > 1;
      for (func::FuncOp original : module->getOps<func::FuncOp>()) {
        FunctionRun checked{signature, inputs};
        if (original != func) {
          llvm::StringMap<HostTensor> none;
          FailureOr<FunctionRun> own = prepareRun(original, none, rng);
          if (failed(own))
            return 1;
          checked = std::move(*own);
        }
        auto planned = after->lookupSymbol<func::FuncOp>(original.getName());
        if (!planned)
          return fail("the pipeline dropped @" + original.getName().str());
        if (many)
          llvm::outs() << "@" << original.getName() << ":\n";
        auto before = kiln::interpretFunction(original, checked.inputs);
        auto result = kiln::interpretFunction(planned, checked.inputs);
        if (failed(before) || failed(result))
          return 1;
        if (!printComparison(checked.signature.outputNames, *result, *before))
          return fail("the pipeline changed the result of @" +
                      original.getName().str());
      }
      llvm::outs() << "pipeline keeps semantics\n";
      return 0;
    }
    if (backend == BackendKind::Reference) {
      auto result = kiln::interpretFunction(func, inputs);
      if (failed(result))
        return 1;
      outputs = std::move(*result);
    } else {
      OwningOpRef<ModuleOp> compiled = module->clone();
      kiln::rt::Artifact artifact;
      if (failed(kiln::runPipeline(*compiled, options)) ||
          failed(kiln::lowerToArtifact(*compiled, options, true, artifact)))
        return 1;
      std::unique_ptr<kiln::rt::Model> model;
      kiln::rt::Status status = kiln::rt::Model::create(
          std::move(artifact), runtimeBackend(), model, hostOptions(),
          cudaOptions());
      if (!status.isOk())
        return fail(status.message);
      if (printInfo)
        llvm::outs() << "model: " << model->info() << "\n";
      // A build with --keep-io-types=false takes 16-bit floats where the
      // model says f32: the inputs rounded to what the artifact takes (the
      // reference keeps the originals).
      SmallVector<HostTensor> taken;
      for (auto [i, t] : llvm::enumerate(inputs))
        taken.push_back(inElementType(
            t, kiln::fromRuntimeDType(&context, model->input(i).dtype)));
      SmallVector<const void *> in;
      SmallVector<void *> out;
      for (HostTensor &t : taken)
        in.push_back(t.bytes.data());
      // Symbolic dims: the values the inputs' shapes give.
      std::vector<int64_t> dims;
      if (!model->dims().empty()) {
        if (failed(refuseSymbolicBench()))
          return 1;
        std::vector<std::vector<int64_t>> shapes;
        for (HostTensor &t : taken)
          shapes.emplace_back(t.shape.begin(), t.shape.end());
        status = model->bindDims(shapes, dims);
        if (!status.isOk())
          return fail(status.message);
      }
      for (size_t i = 0; i < model->numOutputs(); ++i) {
        const kiln::rt::Buffer &b = model->output(i);
        std::vector<int64_t> shape =
            dims.empty() ? b.shape : model->outputShape(i, dims);
        outputs.push_back(*HostTensor::allocate(
            kiln::fromRuntimeDType(&context, b.dtype),
            SmallVector<int64_t>(shape.begin(), shape.end())));
      }
      for (HostTensor &t : outputs)
        out.push_back(t.bytes.data());
      status = model->run(dims, in.data(), out.data(), kiln::rt::Memory::Host);
      if (!status.isOk())
        return fail(status.message);
      if (benchRequested() &&
          (!benchModel(*model, in, outputs) || !benchDevice(*model, in)))
        return 1;
      // --per-layer: the tensors kept after the model's own outputs.
      for (size_t i = signature.outputNames.size(); i < outputs.size(); ++i)
        layerNames.push_back(model->output(i).name);
      layerOutputs.assign(outputs.begin() + signature.outputNames.size(),
                          outputs.end());
      outputs.truncate(signature.outputNames.size());
    }
  }

  // The outputs; the inputs the model ran on, so that other tools can replay
  // them; with --per-layer, the tensors the kernels wrote.
  SmallVector<std::string> inputNames;
  SmallVector<HostTensor> inputValues;
  for (auto &[name, type] : signature.inputs) {
    inputNames.push_back(name);
    inputValues.push_back(given[name]);
  }
  if (failed(writeTensors(signature.outputNames, outputs)) ||
      failed(writeTensors(inputNames, inputValues, "inputs")) ||
      failed(writeTensors(layerNames, layerOutputs, "layers")))
    return 1;
  if (!compareReference)
    return 0;
  std::string refPath = isLibrary ? referenceModel.getValue() : modelPath.getValue();
  if (refPath.empty())
    return fail("--compare-reference on a .so needs --reference-model");
  OwningOpRef<ModuleOp> refModule =
      isLibrary ? kiln::loadModel(&context, refPath, options) : module->clone();
  if (!refModule)
    return 1;
  func::FuncOp refFunc = *refModule->getOps<func::FuncOp>().begin();
  // A .so built with --keep-io-types=false took 16-bit inputs; the
  // reference model takes its own types (f16 to f32 is exact).
  SmallVector<HostTensor> refInputs;
  for (auto [i, input] : llvm::enumerate(signature.inputs)) {
    Type want = refFunc.getNumArguments() > i
                    ? getElementTypeOrSelf(refFunc.getArgument(i).getType())
                    : given[input.first].elementType;
    refInputs.push_back(inElementType(given[input.first], want));
  }
  SmallVector<HostTensor> expected;
  if (perLayer) {
    auto reference = interpretAllTensors(
        refFunc, refInputs, signature.outputNames.size(), expected);
    if (failed(reference))
      return 1;
    printPerLayer(layerNames, layerOutputs, *reference);
  } else {
    auto result = kiln::interpretFunction(refFunc, refInputs);
    if (failed(result))
      return 1;
    expected = std::move(*result);
  }
  if (printComparison(signature.outputNames, outputs, expected))
    return 0;
  return fail("outputs differ from the reference beyond " + toleranceText());
}
