//===- Pipeline.h - the one Kiln pass pipeline ------------------*- C++ -*-===//
//
// kilnc, the C++ and Python APIs and kiln-opt all build the pipeline here, so
// the CLI's exact pipeline is testable with lit (`kiln-opt -kiln-pipeline`).
//
// Options travel in one struct: the command line (CommandLine.h) fills
// CompileOptions::pipeline, and each pass gets its own member of it as is.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PIPELINE_H
#define KILN_COMPILER_PIPELINE_H

#include "kiln/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {

/// What the pipeline runs and with which options.
struct PipelineOptions {
  PipelineOptions() { mixedPrecision.precision = "fp32"; }

  /// kiln-mixed-precision's options. Its `precision` is the pipeline's
  /// compute precision: "fp32" (the default: the pass does not run), "fp16"
  /// or "bf16" (matmuls and attention in that type with fp32 accumulation,
  /// fp32 islands).
  KilnMixedPrecisionPassOptions mixedPrecision;
  /// Weights quantized at compile time (kiln-quantize-weights) where
  /// `quantizeWeights` is set (kilnc --weights): its bits and block size.
  bool quantizeWeights = false;
  KilnQuantizeWeightsPassOptions weights;
  /// kiln-fuse's options (whether a GEMM takes a row norm as its epilogue).
  KilnFusePassOptions fuse;
  /// kiln-plan-memory's options (the arena buffer alignment).
  KilnPlanMemoryPassOptions planMemory;
  /// Debugging: every named tensor in memory becomes an extra graph output
  /// after the model's own (kiln-expose-tensors, after fusion; needs the
  /// importer's `recordTensorNames`).
  bool exposeTensors = false;
  /// KV caches appended in place (kiln-cache-in-place): each cache's input
  /// and output become one buffer of its largest length.
  bool cacheInPlace = false;

  /// The compute precision ("fp32", "fp16" or "bf16").
  llvm::StringRef precision() const { return mixedPrecision.precision; }
};

/// Adds the passes from imported `kiln` IR to planned kernels, the input of
/// the CUDA target.
void buildKilnPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers `-kiln-pipeline` for kiln-opt.
void registerKilnPipeline();

} // namespace kiln

#endif // KILN_COMPILER_PIPELINE_H
