//===- Pipeline.h - the one Kiln pass pipeline ------------------*- C++ -*-===//
//
// kilnc, the C++ and Python APIs and kiln-opt all build the pipeline here, so
// the CLI's exact pipeline is testable with lit (`kiln-opt -kiln-pipeline`).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PIPELINE_H
#define KILN_COMPILER_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace kiln {

/// Options of the pipeline; also the options of `-kiln-pipeline` in kiln-opt.
struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  Option<int64_t> alignment{*this, "alignment",
                            llvm::cl::desc("arena buffer alignment in bytes"),
                            llvm::cl::init(256)};
};

/// Adds the passes from imported `kiln` IR to planned kernels, the input of
/// the CUDA target.
void buildKilnPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers `-kiln-pipeline` for kiln-opt.
void registerKilnPipeline();

} // namespace kiln

#endif // KILN_COMPILER_PIPELINE_H
