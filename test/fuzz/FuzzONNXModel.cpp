//===- FuzzONNXModel.cpp - ONNX bytes through kilnc up to the CUDA source -===//
//
// What `kilnc model.onnx` does short of NVRTC: import (binary or text
// format), the whole pass pipeline and the lowering that writes the kernels'
// CUDA source and the plan. Any input must end in success or in diagnostics;
// a crash, a sanitizer report, a leak, a hang or an allocation past
// libFuzzer's limit is a bug.
//
//===----------------------------------------------------------------------===//

#include "ModelMutator.h"

#include "kiln/Compiler/Compiler.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A context per input: nothing one model interns can change the next run.
  // Threading off, as kilnc's passes would otherwise start a pool each time.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<kiln::KilnDialect, mlir::func::FuncDialect>();
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });

  kiln::CompileOptions options;
  // Dims without values go symbolic (a range that includes empty tensors),
  // so that shape subgraphs over named dims are fuzzed too.
  options.import.unboundDimRange = std::make_pair(int64_t(0), int64_t(8));
  // Kiln's GEMM kernels are emitted too (only emitted: nothing compiles).
  options.gemmKernels = true;
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::importONNX(&context, bytes, "fuzz.onnx", options.import);
  if (!module || mlir::failed(kiln::runPipeline(*module, options)))
    return 0;
  kiln::rt::Artifact artifact;
  (void)kiln::lowerToArtifact(*module, options, /*compile=*/false, artifact);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  // One mutation in five is libFuzzer's own on the raw bytes, so that the
  // wire format and the text-format parser are fuzzed as well.
  if (seed % 5 != 0) {
    std::string bytes(reinterpret_cast<const char *>(data), size);
    if (kiln::fuzz::mutateModel(bytes, maxSize, seed)) {
      std::copy(bytes.begin(), bytes.end(), data);
      return bytes.size();
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}
