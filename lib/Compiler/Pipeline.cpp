//===- Pipeline.cpp - the one Kiln pass pipeline --------------------------===//

#include "kiln/Compiler/Pipeline.h"

#include "kiln/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildKilnPipeline(OpPassManager &pm, const PipelineOptions &options) {
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createCanonicalizerPass());
  fpm.addPass(createCSEPass());
  fpm.addPass(createKilnRecomposePass());
  fpm.addPass(createKilnLayoutPass());
  // Composes the transposes recomposition put around keys and values.
  fpm.addPass(createCanonicalizerPass());
  // On recomposed ops and packed weights (converted once, after packing), and
  // before fusion, so that conversions fuse into the kernels around them.
  // fp32 leaves the pipeline as it was.
  if (options.precision != "fp32") {
    KilnMixedPrecisionPassOptions precisionOptions;
    precisionOptions.precision = options.precision;
    precisionOptions.keepIoTypes = options.keepIoTypes;
    precisionOptions.keepOpTypes.assign(options.keepFp32Ops.begin(),
                                        options.keepFp32Ops.end());
    precisionOptions.keepNodeNames.assign(options.keepFp32Nodes.begin(),
                                          options.keepFp32Nodes.end());
    precisionOptions.disableIslands.assign(options.disableFp32Islands.begin(),
                                           options.disableFp32Islands.end());
    fpm.addPass(createKilnMixedPrecisionPass(precisionOptions));
  }
  fpm.addPass(createKilnFusePass());
  // After fusion, so that the kernels are those of a normal build.
  if (options.exposeTensors)
    fpm.addPass(createKilnExposeTensorsPass());
  KilnPlanMemoryPassOptions planOptions;
  planOptions.alignment = options.alignment;
  fpm.addPass(createKilnPlanMemoryPass(planOptions));
}

void registerKilnPipeline() {
  PassPipelineRegistration<PipelineOptions>(
      "kiln-pipeline", "the kilnc pipeline from imported IR to planned kernels",
      buildKilnPipeline);
}

} // namespace kiln
