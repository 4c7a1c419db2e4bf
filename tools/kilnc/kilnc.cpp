//===- kilnc.cpp - compile an ONNX model into a self-contained .so --------===//

#include "kiln/Compiler/CommandLine.h"
#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/Diagnostics.h"
#include "kiln/Compiler/Report.h"
#include "kiln/Compiler/Roofline.h"
#include "kiln/Compiler/TensorFile.h"
#include "kiln/Compiler/Version.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Target/CUDA/EmitPlan.h"
#include "kiln/Target/CUDA/PlanText.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;
namespace cl = llvm::cl;

namespace {

enum class Emit { So, Imported, Mlir, Cuda, Ptx, Plan };
enum class Report { None, Text, Json };

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"),
                               cl::Required);
cl::opt<std::string> outputPath("o", cl::desc("output file ('-' for stdout "
                                              "with --emit=mlir|cuda|ptx|plan)"),
                                cl::value_desc("path"), cl::init("-"));
cl::opt<Emit> emit(
    "emit", cl::desc("what to write"), cl::init(Emit::So),
    cl::values(clEnumValN(Emit::So, "so", "the self-contained shared library"),
               clEnumValN(Emit::Imported, "imported",
                          "kiln IR as imported, before any pass"),
               clEnumValN(Emit::Mlir, "mlir", "kiln IR after the pipeline"),
               clEnumValN(Emit::Cuda, "cuda", "the generated CUDA C++"),
               clEnumValN(Emit::Ptx, "ptx",
                          "the PTX NVRTC made of it (the instructions each "
                          "kernel issues)"),
               clEnumValN(Emit::Plan, "plan", "the runtime plan as text")));
cl::list<std::string> constInputs(
    "const-input",
    cl::desc("freeze a graph input to the value in a file at compile time"),
    cl::value_desc("NAME=FILE.npy|FILE.pb"));
cl::opt<std::string> dumpDir("dump-dir",
                             cl::desc("write every stage's IR and the CUDA "
                                      "source into this folder"),
                             cl::value_desc("dir"));
cl::opt<std::string> arch("arch", cl::desc("GPU architecture for NVRTC"),
                          cl::init("sm_90a"));
cl::opt<std::string> rooflineGpu(
    "roofline-gpu",
    cl::desc("the GPU whose peak rates give --report's floor times (h100, "
             "h200)"),
    cl::init("h200"));
cl::opt<bool> quiet("q", cl::desc("print nothing but errors (no stages on "
                                   "a terminal, no summary)"));
cl::opt<bool> timePasses("time-passes",
                         cl::desc("print MLIR's timing of each pass"));
cl::opt<uint64_t> maxEmbeddedWeightBytes(
    "max-embedded-weight-bytes",
    cl::desc("weights above this many bytes go to a sidecar file "
             "(OUT.kw) beside the .so"),
    cl::init(kiln::kMaxEmbeddedWeightBytes), cl::Hidden);
cl::opt<Report> report(
    "report",
    cl::desc("print every launch and library call with the ONNX nodes it "
             "covers, and the memory plan, to stdout"),
    cl::ValueOptional, cl::init(Report::None),
    cl::values(clEnumValN(Report::Text, "", "as text (the default)"),
               clEnumValN(Report::Text, "text", "as text"),
               clEnumValN(Report::Json, "json", "as JSON, for tools")));

/// Writes text output to `-o` (stdout by default), atomically for files.
LogicalResult writeText(Location loc, StringRef text) {
  if (outputPath == "-") {
    llvm::outs() << text;
    return success();
  }
  return kiln::writeFileAtomically(loc, outputPath, text);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --mlir-print-debuginfo and friends, for --emit=imported|mlir.
  mlir::registerAsmPrinterCLOptions();
  kiln::registerPrecisionCLOptions();
  kiln::registerInputCLOptions();
  kiln::registerKernelCLOptions();
  kiln::registerVersionPrinter();
  cl::ParseCommandLineOptions(
      argc, argv,
      "kilnc: compile an ONNX model into a self-contained shared library\n\n"
      "  kilnc model.onnx -o model.so\n"
      "  kilnc model.onnx -o model.so --const-input shape=shape.pb\n");

  kiln::CompileOptions options;
  kiln::applyPrecisionCLOptions(options);
  options.arch = arch;
  options.dumpDir = dumpDir;
  if (std::string error = kiln::applyInputCLOptions(options);
      !error.empty()) {
    llvm::errs() << "kilnc: " << error << "\n";
    return 1;
  }
  if (std::string error = kiln::applyKernelCLOptions(options); !error.empty()) {
    llvm::errs() << "kilnc: " << error << "\n";
    return 1;
  }
  if (!kiln::findGpuPeaks(rooflineGpu)) {
    llvm::errs() << "kilnc: --roofline-gpu: unknown GPU '" << rooflineGpu
                 << "' (known: " << kiln::knownGpus() << ")\n";
    return 1;
  }
  if (emit == Emit::So && outputPath == "-") {
    llvm::errs() << "kilnc: give the output .so with -o\n";
    return 1;
  }
  if (report != Report::None &&
      (emit == Emit::Imported || emit == Emit::Mlir || outputPath == "-")) {
    llvm::errs() << "kilnc: --report prints to stdout; write the output to a "
                    "file with -o (and not --emit=imported|mlir)\n";
    return 1;
  }

  MLIRContext context;
  kiln::ToolDiagnostics diagnostics(&context, "kilnc");
  // The stages, for a person at a terminal: not in logs or pipes.
  std::optional<kiln::Progress> progress;
  if (!quiet && llvm::sys::Process::StandardErrIsDisplayed())
    progress.emplace(llvm::errs(), "kilnc: ");
  options.progress = progress ? &*progress : nullptr;
  options.timePasses = timePasses;
  // A diagnostic starts on a line of its own, after the stage it ends.
  ScopedDiagnosticHandler endStage(&context, [&](Diagnostic &) {
    if (progress)
      progress->end();
    return failure();
  });
  Location loc = FileLineColLoc::get(&context, inputPath, 0, 0);
  if (failed(
          kiln::readConstantInputFiles(&context, constInputs, options.import)))
    return 1;

  if (progress)
    progress->stage("import " + inputPath);
  OwningOpRef<ModuleOp> module = kiln::loadModel(&context, inputPath, options);
  if (!module)
    return 1;
  if (emit != Emit::Imported && failed(kiln::runPipeline(*module, options)))
    return 1;
  if (progress)
    progress->end();
  if (emit == Emit::Imported || emit == Emit::Mlir) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, OpPrintingFlags().elideLargeResourceString());
    return failed(writeText(loc, text)) ? 1 : 0;
  }
  kiln::rt::Artifact artifact;
  bool needsCubin = emit == Emit::So || emit == Emit::Ptx;
  kiln::CompileReport compileReport =
      kiln::reportOf(*module, inputPath, options.pipeline.precision());
  compileReport.rooflineGpu = rooflineGpu;
  // The weights stay in the constants (for external data, the mapped model
  // files) until they are streamed into the output.
  kiln::WeightTable weights;
  if (failed(kiln::lowerToArtifact(*module, options, needsCubin, artifact,
                                   &compileReport.origins, &weights,
                                   &compileReport.kernelResources,
                                   &compileReport.kernelConfigs)))
    return 1;
  if (progress)
    progress->end();
  compileReport.weightBytes = static_cast<int64_t>(weights.size);
  if (report == Report::Text)
    kiln::printReportText(artifact, compileReport, llvm::outs());
  else if (report == Report::Json)
    kiln::printReportJson(artifact, compileReport, llvm::outs());
  if (emit == Emit::Cuda)
    return failed(writeText(loc, artifact.cudaSource)) ? 1 : 0;
  if (emit == Emit::Ptx)
    return failed(writeText(loc, artifact.ptx)) ? 1 : 0;
  if (emit == Emit::Plan) {
    std::string text;
    llvm::raw_string_ostream os(text);
    kiln::printPlan(artifact, weights.size, os, &compileReport.kernelConfigs);
    return failed(writeText(loc, text)) ? 1 : 0;
  }
  if (progress)
    progress->stage("write " + outputPath);
  if (failed(kiln::writeArtifactLibrary(loc, artifact, outputPath, &weights,
                                       maxEmbeddedWeightBytes)))
    return 1;
  if (progress)
    progress->end();
  if (quiet)
    return 0;
  llvm::errs() << "kilnc: wrote " << outputPath << " (" << artifact.steps.size()
               << " steps, peak arena " << artifact.arenaBytes
               << " bytes, weights " << weights.size << " bytes"
               << (weights.size > maxEmbeddedWeightBytes
                       ? " in the sidecar file beside it"
                       : "")
               << ")\n";
  return 0;
}
