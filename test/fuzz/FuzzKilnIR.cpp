//===- FuzzKilnIR.cpp - Textual kiln IR through kilnc ---------------------===//
//
// What `kilnc model.mlir` does short of NVRTC: parse the textual IR that
// kiln-opt also reads, run the dialect's verifiers, then the pass pipeline
// and the lowering to CUDA source on whatever verifies. A verifier that lets
// through IR a pass cannot handle shows up here as a crash.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<kiln::KilnDialect, mlir::func::FuncDialect>();
  // Ops of dialects that are not loaded are refused, as in kilnc.
  context.allowUnregisteredDialects(false);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });

  // MLIR's lexer stops at the NUL after the buffer, as every file kilnc
  // reads has: the fuzzer's bytes get one too.
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context, "fuzz.mlir");
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  kiln::CompileOptions options;
  // Kiln's GEMM kernels are emitted too (only emitted: nothing compiles).
  options.gemmKernels = true;
  if (mlir::failed(kiln::runPipeline(*module, options)))
    return 0;
  kiln::rt::Artifact artifact;
  (void)kiln::lowerToArtifact(*module, options, /*compile=*/false, artifact);
  return 0;
}
