//===- Compiler.cpp - ONNX to a runnable Kiln artifact --------------------===//

#include "kiln/Compiler/Compiler.h"

#include "kiln/Compiler/Nvrtc.h"
#include "kiln/Compiler/Pipeline.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Target/CUDA/EmitPlan.h"
#include "kiln/kiln_model.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
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
  PipelineOptions pipeline;
  pipeline.alignment = options.alignment;
  buildKilnPipeline(pm, pipeline);
  if (failed(pm.run(module)))
    return failure();
  return dumpStage(module, options, "01-planned");
}

LogicalResult lowerToArtifact(ModuleOp module, const CompileOptions &options,
                              bool compile, rt::Artifact &artifact,
                              StepOrigins *origins) {
  auto funcs = module.getOps<func::FuncOp>();
  if (std::distance(funcs.begin(), funcs.end()) != 1)
    return emitError(module.getLoc(), "expected exactly one function");
  func::FuncOp func = *funcs.begin();
  artifact.abiVersion = KILN_ABI_VERSION;
  artifact.kilnVersion = kKilnVersion;
  artifact.arch = options.arch;
  if (failed(emitPlan(func, artifact, origins)))
    return failure();
  if (!options.dumpDir.empty() &&
      failed(writeFileAtomically(module.getLoc(),
                                 options.dumpDir + "/02-kernels.cu",
                                 artifact.cudaSource)))
    return failure();
  if (!compile)
    return success();
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
