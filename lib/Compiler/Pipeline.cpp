//===- Pipeline.cpp - the one Kiln pass pipeline --------------------------===//

#include "kiln/Compiler/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassOptions.h"
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
  // After recomposition, which reads attention's keys and values through
  // the concat that this turns into a slice of the cache.
  if (options.cacheInPlace)
    fpm.addPass(createKilnCacheInPlacePass());
  // Before the conversion, told the type it will give the products: the
  // weights are read once as the model stores them (a 1B model's fp16
  // conversion of weights about to be quantized was a third of its build),
  // and their scales are rounded to that type, which the conversion then
  // keeps exactly (the dequantize joins a 16-bit GEMM).
  if (options.quantizeWeights) {
    KilnQuantizeWeightsPassOptions weights = options.weights;
    if (options.precision() != "fp32")
      weights.computeType = options.precision() == "bf16" ? "bf16" : "f16";
    fpm.addPass(createKilnQuantizeWeightsPass(weights));
  }
  // On recomposed ops and packed weights (converted once, after packing), and
  // before fusion, so that conversions fuse into the kernels around them.
  // fp32 leaves the pipeline as it was.
  if (options.precision() != "fp32")
    fpm.addPass(createKilnMixedPrecisionPass(options.mixedPrecision));
  fpm.addPass(createKilnFusePass(options.fuse));
  // After fusion, so that the kernels are those of a normal build.
  if (options.exposeTensors)
    fpm.addPass(createKilnExposeTensorsPass());
  fpm.addPass(createKilnPlanMemoryPass(options.planMemory));
}

namespace {
/// `-kiln-pipeline`'s textual options in kiln-opt, read into
/// PipelineOptions (kilnc's flags are read by CommandLine.cpp).
struct PipelineTextOptions : public PassPipelineOptions<PipelineTextOptions> {
  Option<int64_t> alignment{*this, "alignment",
                            llvm::cl::desc("arena buffer alignment in bytes"),
                            llvm::cl::init(256)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32 (kiln-mixed-precision does not run), fp16 or bf16"),
      llvm::cl::init("fp32")};
  Option<bool> exposeTensors{
      *this, "expose-tensors",
      llvm::cl::desc("debugging: return every named tensor in memory after "
                     "fusion (kiln-expose-tensors)"),
      llvm::cl::init(false)};
  Option<bool> cacheInPlace{
      *this, "cache-in-place",
      llvm::cl::desc("KV caches appended in place (kiln-cache-in-place)"),
      llvm::cl::init(false)};
  Option<int64_t> weightBits{
      *this, "weight-bits",
      llvm::cl::desc("linear weights quantized to 4 or 8 bits "
                     "(kiln-quantize-weights); 0 leaves them"),
      llvm::cl::init(0)};
  Option<int64_t> weightBlockSize{
      *this, "weight-block-size",
      llvm::cl::desc("weights a quantization block along K"),
      llvm::cl::init(32)};
  Option<bool> weightFloat8{
      *this, "weight-float8",
      llvm::cl::desc("linear weights quantized to E4M3FN float8, a scale an "
                     "output column (weight-bits is then 8)"),
      llvm::cl::init(false)};
};
} // namespace

void registerKilnPipeline() {
  PassPipelineRegistration<PipelineTextOptions>(
      "kiln-pipeline", "the kilnc pipeline from imported IR to planned kernels",
      [](OpPassManager &pm, const PipelineTextOptions &text) {
        PipelineOptions options;
        options.planMemory.alignment = text.alignment;
        options.mixedPrecision.precision = text.precision;
        options.exposeTensors = text.exposeTensors;
        options.cacheInPlace = text.cacheInPlace;
        options.quantizeWeights = text.weightBits != 0 || text.weightFloat8;
        options.weights.bits = text.weightFloat8 ? 8 : text.weightBits;
        options.weights.blockSize = text.weightBlockSize;
        options.weights.float8 = text.weightFloat8;
        buildKilnPipeline(pm, options);
      });
}

} // namespace kiln
