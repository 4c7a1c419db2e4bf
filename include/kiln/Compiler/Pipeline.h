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
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32 (kiln-mixed-precision does not run), fp16 or bf16"),
      llvm::cl::init("fp32")};
  Option<bool> keepIoTypes{
      *this, "keep-io-types",
      llvm::cl::desc("keep the types of the graph's inputs and outputs"),
      llvm::cl::init(true)};
  ListOption<std::string> keepFp32Ops{*this, "keep-fp32-ops",
                                      llvm::cl::desc("op types kept in f32")};
  ListOption<std::string> keepFp32Nodes{
      *this, "keep-fp32-nodes",
      llvm::cl::desc("ONNX node names whose ops are kept in f32")};
  ListOption<std::string> disableFp32Islands{
      *this, "disable-fp32-islands",
      llvm::cl::desc("fp32 islands turned off, to measure what they buy: all, "
                     "softmax, norm-statistics, reduction, mask, "
                     "from-integer")};
  Option<bool> exposeTensors{
      *this, "expose-tensors",
      llvm::cl::desc("debugging: return every named tensor in memory after "
                     "fusion (kiln-expose-tensors), for kiln-run --per-layer"),
      llvm::cl::init(false)};
};

/// Adds the passes from imported `kiln` IR to planned kernels, the input of
/// the CUDA target.
void buildKilnPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers `-kiln-pipeline` for kiln-opt.
void registerKilnPipeline();

} // namespace kiln

#endif // KILN_COMPILER_PIPELINE_H
