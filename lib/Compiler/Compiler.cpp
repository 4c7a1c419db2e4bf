//===- Compiler.cpp - ONNX to a runnable Kiln artifact --------------------===//

#include "kiln/Compiler/Compiler.h"

#include "kiln/Compiler/Nvrtc.h"
#include "kiln/Compiler/Pipeline.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Target/CUDA/EmitPlan.h"
#include "kiln/kiln_model.h"
#include "kiln/runtime/SplatStorage.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ManagedStatic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kiln {

namespace {
/// The precision flags, created when a tool registers them.
struct PrecisionCLOptions {
  enum class Precision { FP32, FP16, BF16 };
  llvm::cl::opt<Precision> precision{
      "precision", llvm::cl::desc("compute precision"),
      llvm::cl::init(Precision::FP32),
      llvm::cl::values(
          clEnumValN(Precision::FP32, "fp32", "fp32 throughout (the default)"),
          clEnumValN(Precision::FP16, "fp16",
                     "matmuls and attention in fp16 with fp32 accumulation; "
                     "fp32 islands (softmax, norm statistics, reductions, "
                     "masks)"),
          clEnumValN(Precision::BF16, "bf16", "as fp16, in bf16"))};
  llvm::cl::opt<bool> keepIoTypes{
      "keep-io-types",
      llvm::cl::desc("with --precision fp16|bf16: keep the model's input and "
                     "output types (default true; =false makes fp32 inputs "
                     "and outputs fp16/bf16)"),
      llvm::cl::init(true)};
  llvm::cl::list<std::string> keepFp32Ops{
      "keep-fp32-ops",
      llvm::cl::desc("with --precision fp16|bf16: op types kept in fp32 "
                     "(kiln op names: matmul, attention, layer_norm, softmax, "
                     "...)"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("op,...")};
  llvm::cl::list<std::string> keepFp32Nodes{
      "keep-fp32-nodes",
      llvm::cl::desc("with --precision fp16|bf16: ONNX node names whose ops "
                     "are kept in fp32"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("name,...")};
  llvm::cl::list<std::string> disableFp32Islands{
      "disable-fp32-islands",
      llvm::cl::desc("with --precision fp16|bf16: fp32 islands to turn off, "
                     "to measure what they buy (results may overflow): all, "
                     "softmax, norm-statistics, reduction, mask, "
                     "from-integer"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("island,...")};
};
} // namespace

namespace {
/// The flags about what a model may do, created when a tool registers them.
struct InputCLOptions {
  llvm::cl::list<std::string> dims{
      "dim",
      llvm::cl::desc("value of a named dim of the model's inputs, for every "
                     "input that has it (e.g. batch=1,sequence=128)"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("NAME=N")};
  llvm::cl::list<std::string> inputShapes{
      "input-shape",
      llvm::cl::desc("static shape of a graph input, e.g. ids=1x128; the "
                     "names of its dims get their values (see --dim)"),
      llvm::cl::value_desc("NAME=DIMxDIM")};
  llvm::cl::list<std::string> overrideInitializers{
      "override-initializer",
      llvm::cl::desc("keep an initializer that is also listed as a graph "
                     "input as a run-time input (by default it is a "
                     "constant)"),
      llvm::cl::value_desc("NAME")};
  llvm::cl::opt<bool> uncheckedIndices{
      "unchecked-indices",
      llvm::cl::desc("clamp out-of-range gather indices (token ids, "
                     "positions) silently instead of failing the run with "
                     "the ONNX node named"),
      llvm::cl::init(false)};
  llvm::cl::opt<uint64_t> maxArena{
      "max-arena",
      llvm::cl::desc("refuse plans whose arena, or any graph input or "
                     "output, needs more bytes than this (default 256 GiB)"),
      llvm::cl::init(CompileOptions().maxArenaBytes)};
  llvm::cl::opt<uint64_t> maxWeights{
      "max-weights",
      llvm::cl::desc("refuse plans with more bytes of weights than this "
                     "(default 256 GiB)"),
      llvm::cl::init(CompileOptions().maxWeightBytes)};
};
} // namespace

static llvm::ManagedStatic<PrecisionCLOptions> precisionCLOptions;
static llvm::ManagedStatic<InputCLOptions> inputCLOptions;

void registerInputCLOptions() { *inputCLOptions; }

std::string applyInputCLOptions(CompileOptions &options) {
  if (!inputCLOptions.isConstructed())
    return "";
  for (const std::string &spec : inputCLOptions->dims)
    if (std::string error = parseDimValue(spec, options.import);
        !error.empty())
      return "--dim: " + error;
  for (const std::string &spec : inputCLOptions->inputShapes)
    if (std::string error = parseInputShape(spec, options.import);
        !error.empty())
      return "--input-shape: " + error;
  for (const std::string &name : inputCLOptions->overrideInitializers)
    options.import.overrideInitializers.insert(name);
  options.uncheckedIndices = inputCLOptions->uncheckedIndices;
  options.maxArenaBytes = inputCLOptions->maxArena;
  options.maxWeightBytes = inputCLOptions->maxWeights;
  return "";
}

void registerPrecisionCLOptions() { *precisionCLOptions; }

void applyPrecisionCLOptions(CompileOptions &options) {
  if (!precisionCLOptions.isConstructed())
    return;
  switch (precisionCLOptions->precision) {
  case PrecisionCLOptions::Precision::FP32:
    options.precision = "fp32";
    break;
  case PrecisionCLOptions::Precision::FP16:
    options.precision = "fp16";
    break;
  case PrecisionCLOptions::Precision::BF16:
    options.precision = "bf16";
    break;
  }
  options.keepIoTypes = precisionCLOptions->keepIoTypes;
  options.keepFp32Ops.assign(precisionCLOptions->keepFp32Ops.begin(),
                             precisionCLOptions->keepFp32Ops.end());
  options.keepFp32Nodes.assign(precisionCLOptions->keepFp32Nodes.begin(),
                               precisionCLOptions->keepFp32Nodes.end());
  options.disableFp32Islands.assign(
      precisionCLOptions->disableFp32Islands.begin(),
      precisionCLOptions->disableFp32Islands.end());
}

OwningOpRef<ModuleOp> loadModel(MLIRContext *context, StringRef path,
                                const CompileOptions &options) {
  context->loadDialect<KilnDialect, func::FuncDialect>();
  if (path.ends_with(".mlir"))
    return parseSourceFile<ModuleOp>(path, context);
  return importONNXFile(context, path, options.import);
}

/// Writes `module` to `<dumpDir>/<name>.mlir` when dumping is on.
static LogicalResult dumpStage(ModuleOp module, const CompileOptions &options,
                               StringRef name) {
  if (options.dumpDir.empty())
    return success();
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().elideLargeResourceString());
  return writeFileAtomically(module.getLoc(),
                             options.dumpDir + "/" + name.str() + ".mlir", text);
}

LogicalResult runPipeline(ModuleOp module, const CompileOptions &options) {
  if (!options.dumpDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(options.dumpDir))
      return emitError(module.getLoc(), "cannot create dump folder '")
             << options.dumpDir << "': " << ec.message();
  }
  if (failed(dumpStage(module, options, "00-imported")))
    return failure();
  PassManager pm(module.getContext());
  PipelineOptions pipeline;
  pipeline.alignment = options.alignment;
  pipeline.precision = options.precision;
  pipeline.keepIoTypes = options.keepIoTypes;
  pipeline.keepFp32Ops = options.keepFp32Ops;
  pipeline.keepFp32Nodes = options.keepFp32Nodes;
  pipeline.disableFp32Islands = options.disableFp32Islands;
  pipeline.exposeTensors = options.exposeTensors;
  buildKilnPipeline(pm, pipeline);
  if (options.progress)
    pm.addInstrumentation(options.progress->passStages());
  if (options.timePasses)
    pm.enableTiming();
  if (failed(pm.run(module)))
    return failure();
  return dumpStage(module, options, "01-planned");
}

/// Refuses a plan that needs more memory than the limits allow, before
/// anything is allocated for it.
static LogicalResult checkMemoryLimits(func::FuncOp func,
                                       const rt::Artifact &artifact,
                                       const CompileOptions &options,
                                       uint64_t weightBytes) {
  if (artifact.arenaBytes > options.maxArenaBytes)
    return emitError(func.getLoc(), "the plan needs an arena of ")
           << artifact.arenaBytes << " bytes, more than --max-arena ("
           << options.maxArenaBytes << ")";
  for (const rt::Buffer &buffer : artifact.buffers)
    if ((buffer.kind == rt::BufferKind::Input ||
         buffer.kind == rt::BufferKind::Output) &&
        buffer.bytes > options.maxArenaBytes)
      return emitError(func.getLoc(), "graph ")
             << (buffer.kind == rt::BufferKind::Input ? "input" : "output")
             << " '" << buffer.name << "' needs " << buffer.bytes
             << " bytes, more than --max-arena (" << options.maxArenaBytes
             << ")";
  // Splat constants take no space in the artifact, but the runtime fills
  // storage for them at load: the slots the executors will allocate.
  uint64_t splatBytes = 0;
  for (const rt::SplatSlots::Slot &slot :
       rt::planSplatSlots(artifact, /*slotPerSize=*/false).slots)
    splatBytes = llvm::SaturatingAdd(splatBytes, slot.bytes);
  uint64_t total = llvm::SaturatingAdd(weightBytes, splatBytes);
  if (total > options.maxWeightBytes) {
    InFlightDiagnostic diag = emitError(func.getLoc(), "the plan has ")
                              << total << " bytes of weights";
    if (splatBytes)
      diag << " (" << splatBytes << " of them splat constants filled at load)";
    return diag << ", more than --max-weights (" << options.maxWeightBytes
                << ")";
  }
  return success();
}

LogicalResult lowerToArtifact(ModuleOp module, const CompileOptions &options,
                              bool compile, rt::Artifact &artifact,
                              StepOrigins *origins, WeightTable *weights) {
  auto funcs = module.getOps<func::FuncOp>();
  if (std::distance(funcs.begin(), funcs.end()) != 1)
    return emitError(module.getLoc(), "expected exactly one function");
  func::FuncOp func = *funcs.begin();
  artifact.abiVersion = KILN_ABI_VERSION;
  artifact.kilnVersion = kKilnVersion;
  artifact.arch = options.arch;
  if (options.progress)
    options.progress->stage("generate CUDA and the plan");
  WeightTable local;
  WeightTable &table = weights ? *weights : local;
  if (failed(emitPlan(func, artifact, table, origins,
                      /*checkIndices=*/!options.uncheckedIndices)) ||
      failed(checkMemoryLimits(func, artifact, options, table.size)))
    return failure();
  if (!weights) {
    // Copied only once the limits have been checked.
    table.materialize(artifact.weights);
    artifact.modelHash = modelHashOf(
        artifact,
        rt::weightsChecksum(artifact.weights.data(), artifact.weights.size()));
  }
  if (!options.dumpDir.empty() &&
      failed(writeFileAtomically(module.getLoc(),
                                 options.dumpDir + "/02-kernels.cu",
                                 artifact.cudaSource)))
    return failure();
  if (!compile)
    return success();
  if (options.progress)
    options.progress->stage("NVRTC, " +
                            llvm::Twine(artifact.kernelNames.size()) +
                            " kernels for " + options.arch);
  auto compiled = compileCuda(func.getLoc(), artifact.cudaSource, options.arch);
  if (failed(compiled))
    return failure();
  artifact.cubin = std::move(compiled->cubin);
  artifact.ptx = std::move(compiled->ptx);
  return success();
}

LogicalResult compileModel(MLIRContext *context, StringRef path,
                           const CompileOptions &options,
                           rt::Artifact &artifact) {
  OwningOpRef<ModuleOp> module = loadModel(context, path, options);
  if (!module || failed(runPipeline(*module, options)))
    return failure();
  return lowerToArtifact(*module, options, /*compile=*/true, artifact);
}

LogicalResult writeFileAtomically(Location loc, StringRef path,
                                  StringRef bytes) {
  auto temp = llvm::sys::fs::TempFile::create(path + "-%%%%%%.tmp");
  if (!temp)
    return emitError(loc, "cannot write '")
           << path << "': " << llvm::toString(temp.takeError());
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    os << bytes;
    os.flush();
    if (os.has_error()) {
      os.clear_error();
      llvm::consumeError(temp->discard());
      return emitError(loc, "cannot write '") << path << "'";
    }
  }
  if (llvm::Error err = temp->keep(path))
    return emitError(loc, "cannot write '")
           << path << "': " << llvm::toString(std::move(err));
  return success();
}

} // namespace kiln
