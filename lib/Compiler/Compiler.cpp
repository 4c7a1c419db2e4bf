//===- Compiler.cpp - ONNX to a runnable Kiln artifact --------------------===//

#include "kiln/Compiler/Compiler.h"

#include "kiln/Compiler/Nvrtc.h"
#include "kiln/Compiler/Pipeline.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "kiln/Target/CUDA/EmitPlan.h"
#include "kiln/Target/CUDA/Passes.h"
#include "kiln/kiln_model.h"
#include "kiln/runtime/SplatStorage.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kiln {

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
  buildKilnPipeline(pm, options.pipeline);
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
                              StepOrigins *origins, WeightTable *weights,
                              std::vector<KernelResources> *resources,
                              KernelConfigs *configs) {
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
  PassManager pm(module.getContext());
  KilnToCudaPassOptions cudaOptions;
  cudaOptions.checkIndices = !options.uncheckedIndices;
  cudaOptions.allowTf32 = options.allowTf32;
  cudaOptions.gemmKernels = options.gemmKernels;
  cudaOptions.qdqWgmmaRows = options.qdqWgmmaRows;
  cudaOptions.qdqCublasLtRows = options.qdqCublasLtRows;
  cudaOptions.arch = options.arch;
  const AttentionOverrides &attention = options.attention;
  cudaOptions.attentionWarps = attention.warps;
  cudaOptions.attentionRowsPerWarp = attention.rowsPerWarp;
  cudaOptions.attentionWgmma = attention.wgmma;
  cudaOptions.attentionTileKeys = attention.tileKeys;
  cudaOptions.attentionKvStages = attention.kvStages;
  cudaOptions.attentionBarriers = attention.barriers;
  cudaOptions.attentionLazyRescale = attention.lazyRescale;
  pm.addPass(
      createKilnToCudaPass(cudaOptions, {&artifact, &table, origins, configs}));
  if (failed(pm.run(module)) ||
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
  if (options.progress) {
    // Distinct: ops of the same code share a kernel.
    llvm::StringSet<> kernels;
    for (const std::string &name : artifact.kernelNames)
      kernels.insert(name);
    options.progress->stage("NVRTC, " + llvm::Twine(kernels.size()) +
                            " kernels for " + options.arch);
  }
  auto compiled = compileCuda(func.getLoc(), artifact.cudaSource, options.arch);
  if (failed(compiled))
    return failure();
  artifact.cubin = std::move(compiled->cubin);
  if (resources)
    *resources = std::move(compiled->resources);
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
