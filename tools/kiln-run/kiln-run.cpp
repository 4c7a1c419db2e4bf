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

#include "AddressSanitizer.h"
#include "BenchMode.h"
#include "BenchRunners.h"
#include "ComparePipeline.h"
#include "GenerateMode.h"
#include "LibraryRunner.h"
#include "PerLayer.h"
#include "RunOptions.h"
#include "RunResults.h"
#include "RunSignature.h"

#include "kiln/Compiler/CommandLine.h"
#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/Diagnostics.h"
#include "kiln/Compiler/TensorFile.h"
#include "kiln/Compiler/Version.h"
#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Interpreter/Interpreter.h"
#include "kiln/runtime/ArtifactFile.h"
#include "kiln/runtime/Model.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

#include <random>

using namespace mlir;
namespace cl = llvm::cl;
using kiln::HostTensor;
using namespace kilnrun;

/// Compiles `module` in process, runs it on the backend --backend names and
/// returns its outputs; a debugging build's further outputs (--per-layer)
/// go to `layerNames` and `layerOutputs`.
static LogicalResult runCompiled(MLIRContext &context, ModuleOp module,
                                 const kiln::CompileOptions &options,
                                 ArrayRef<HostTensor> inputs, size_t numOutputs,
                                 SmallVector<HostTensor> &outputs,
                                 SmallVector<std::string> &layerNames,
                                 SmallVector<HostTensor> &layerOutputs) {
  OwningOpRef<ModuleOp> compiled = module.clone();
  kiln::rt::Artifact artifact;
  if (failed(kiln::runPipeline(*compiled, options)) ||
      failed(kiln::lowerToArtifact(*compiled, options, true, artifact)))
    return failure();
  std::unique_ptr<kiln::rt::Model> model;
  kiln::rt::Status status =
      kiln::rt::Model::create(std::move(artifact), runtimeBackend(), model,
                              hostOptions(), cudaOptions());
  if (!status.isOk())
    return fail(status.message), failure();
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
    std::vector<std::vector<int64_t>> shapes;
    for (HostTensor &t : taken)
      shapes.emplace_back(t.shape.begin(), t.shape.end());
    status = model->bindDims(shapes, dims);
    if (!status.isOk())
      return fail(status.message), failure();
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
    return fail(status.message), failure();
  if (benchRequested() && (!benchModel(*model, dims, in, outputs) ||
                           !benchDevice(*model, dims, in, outputs)))
    return failure();
  // --per-layer: the tensors kept after the model's own outputs.
  for (size_t i = numOutputs; i < outputs.size(); ++i)
    layerNames.push_back(model->output(i).name);
  layerOutputs.assign(outputs.begin() + numOutputs, outputs.end());
  outputs.truncate(numOutputs);
  return success();
}

/// --generate: the model through the C++ API (a .so's artifact, or the
/// .onnx compiled in process), then the decoding loop.
static int generate(MLIRContext &context, bool isLibrary,
                    const kiln::CompileOptions &options) {
  if (backend == BackendKind::Reference)
    return fail("--generate runs a compiled model: use --backend cuda, host "
                "or auto");
  kiln::rt::Artifact artifact;
  if (isLibrary) {
    if (kiln::rt::Status s = kiln::rt::loadArtifactFile(modelPath, artifact);
        !s.isOk())
      return fail(s.message);
  } else if (failed(
                 kiln::compileModel(&context, modelPath, options, artifact))) {
    return 1;
  }
  std::unique_ptr<kiln::rt::Model> model;
  if (kiln::rt::Status s =
          kiln::rt::Model::create(std::move(artifact), runtimeBackend(), model,
                                  hostOptions(), cudaOptions());
      !s.isOk())
    return fail(s.message);
  return runGenerate(*model);
}

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
  kiln::ToolDiagnostics diagnostics(&context, "kiln-run");
  context.loadDialect<kiln::KilnDialect, func::FuncDialect>();

  bool isLibrary = StringRef(modelPath).ends_with(".so");
  if (std::vector<std::string> ignored = kiln::givenCompileOnlyFlags();
      isLibrary && !ignored.empty())
    llvm::errs() << "kiln-run: warning: " << llvm::join(ignored, ", ")
                 << (ignored.size() == 1 ? " changes" : " change")
                 << " what is compiled; a .so keeps what kilnc compiled "
                    "into it, so here "
                 << (ignored.size() == 1 ? "it changes" : "they change")
                 << " nothing\n";
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
  // A run that asks for Kiln's GEMM kernels (--gemm, KILN_GEMM_KERNEL) of a
  // model it compiles compiles them in (kilnc asks --gemm-kernels).
  if (!hostOptions().gemm.empty() || !cudaOptions().gemm.empty())
    options.gemmKernels = true;
  unsigned usedSeed = seed ? seed : std::random_device{}();
  llvm::outs() << "seed " << usedSeed << "\n";
  std::mt19937 rng(usedSeed);

  llvm::StringMap<HostTensor> given;
  if (failed(
          kiln::readConstantInputFiles(&context, constInputs, options.import)))
    return 1;

  if (generateRequested())
    return generate(context, isLibrary, options);

  Signature signature;
  SmallVector<HostTensor> outputs, layerOutputs;
  SmallVector<std::string> layerNames;
  OwningOpRef<ModuleOp> module, reference;
  if (isLibrary) {
    if (backend == BackendKind::Reference)
      return fail("a .so runs on --backend cuda, host or auto");
    if (failed(
            kiln::readNamedTensorFiles(&context, inputFiles, "input", given)))
      return 1;
    // The reference model, when given, says the ranges of random integer
    // inputs (an artifact does not); it is loaded once, for the comparison
    // too.
    llvm::StringMap<int64_t> bounds;
    if (!referenceModel.empty()) {
      reference = kiln::loadModel(&context, referenceModel, options);
      if (!reference)
        return 1;
      bounds = integerInputBounds(*reference->getOps<func::FuncOp>().begin());
    }
    auto result = runLibrary(&context, signature, given, rng, bounds);
    if (failed(result))
      return 1;
    outputs = std::move(*result);
  } else {
    // The model first: it says what its inputs are (a file holding a
    // sequence or optional value is no tensor, and the import says so).
    module = kiln::loadModel(&context, modelPath, options);
    if (!module || failed(kiln::readNamedTensorFiles(&context, inputFiles,
                                                     "input", given)))
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
    if (comparePipeline)
      return comparePipelineSemantics(*module, {signature, inputs}, options,
                                      rng);
    if (backend == BackendKind::Reference) {
      auto result = kiln::interpretFunction(func, inputs);
      if (failed(result))
        return 1;
      outputs = std::move(*result);
    } else if (failed(runCompiled(context, *module, options, inputs,
                                  signature.outputNames.size(), outputs,
                                  layerNames, layerOutputs))) {
      return 1;
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
  std::string refPath =
      isLibrary ? referenceModel.getValue() : modelPath.getValue();
  if (refPath.empty())
    return fail("--compare-reference on a .so needs --reference-model");
  OwningOpRef<ModuleOp> refModule =
      !isLibrary  ? module->clone()
      : reference ? std::move(reference)
                  : kiln::loadModel(&context, refPath, options);
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
  return fail("outputs differ from the reference beyond " + tolerance().text());
}
