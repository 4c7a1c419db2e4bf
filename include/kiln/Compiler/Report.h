//===- Report.h - what a compilation produced, for kilnc --report -*- C++ -*-===//
//
// Every launch and library call of a plan with the ONNX nodes it covers, and
// the memory plan's sizes; as text for people and as JSON for tools.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_REPORT_H
#define KILN_COMPILER_REPORT_H

#include "kiln/Compiler/KernelResources.h"
#include "kiln/Target/CUDA/EmitPlan.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace kiln {

/// A tensor that kiln-mixed-precision kept in fp32, and why.
struct Fp32Kept {
  /// "input" or "output" (a graph tensor), "weight" (a constant) or "op" (the
  /// result of a kiln op).
  std::string kind;
  /// The graph tensor's name, the weight's blob name, or the kiln op.
  std::string name;
  /// The tensor type, e.g. tensor<2x8x1xf32>.
  std::string type;
  /// The ONNX nodes the op came from.
  std::vector<std::string> onnxNodes;
  /// The rule that kept it (kiln-mixed-precision in Passes.td lists them).
  std::string rule;
};

/// A product whose weights kiln-quantize-weights quantized (kilnc
/// --weights).
struct QuantizedWeights {
  /// The weights' shape as the dequantize gives it, N x K.
  std::string shape;
  /// "int4", "int8" or "fp8" (E4M3FN, one block a row).
  std::string format;
  int64_t bits = 0, blockSize = 0;
  /// The relative L2 error of a random row through the weights.
  double error = 0;
  /// The ONNX nodes the product came from.
  std::vector<std::string> onnxNodes;
};

/// The inputs of a report.
struct CompileReport {
  /// The model file the plan was compiled from.
  std::string model;
  /// The largest sum of buffer sizes live at once (kiln-plan-memory's lower
  /// bound on the arena); -1 when unknown.
  int64_t liveLowerBoundBytes = -1;
  /// For symbolic dims: the bytes live at the plan's peak as a formula of
  /// the dims (kiln-plan-memory's kiln.live_peak_bytes); empty otherwise.
  std::string livePeakFormula;
  /// One entry per step of the artifact.
  StepOrigins origins;
  /// The compute precision: fp32, fp16 or bf16.
  std::string precision = "fp32";
  /// Every tensor kept in fp32 under a low precision, in program order.
  std::vector<Fp32Kept> fp32Kept;
  /// The weights quantized at compile time, in program order.
  std::vector<QuantizedWeights> quantizedWeights;
  /// Bytes of weights; -1 for the artifact's own (`weightBytes()`), which is
  /// empty when they were streamed to the `.so` from a WeightTable.
  int64_t weightBytes = -1;
  /// Estimated FLOPs of each generated kiln.kernel (kernelFlopsOf), for the
  /// roofline.
  std::vector<double> kernelFlops;
  /// The GPU whose peaks give the roofline's floor times (findGpuPeaks).
  std::string rooflineGpu = "h200";
  /// What ptxas gave each kernel (empty when no cubin was built).
  std::vector<KernelResources> kernelResources;
  /// The configuration of each kernel that has one (tensor-core
  /// attention), as the emitter followed it.
  KernelConfigs kernelConfigs;
};

/// A report of the pipelined `module` of `model`: the fields that come from
/// the module (live lower bound, fp32 tensors, kernel FLOPs); the caller
/// adds the origins and weights that lowering gives.
CompileReport reportOf(mlir::ModuleOp module, llvm::StringRef model,
                       llvm::StringRef precision);

/// The tensors of a pipelined module that kiln-mixed-precision kept in fp32
/// (the `kiln.fp32` attributes it left): graph inputs, ops and weights in
/// program order (ops inside kernels included), then graph outputs.
std::vector<Fp32Kept> collectFp32Kept(mlir::ModuleOp module);

/// The live-set lower bound kiln-plan-memory recorded on the module's
/// function, or -1.
int64_t liveLowerBoundOf(mlir::ModuleOp module);

/// Writes the report as text: one line per launch (kernels with ptxas's
/// registers, shared memory, spills and sm_90 occupancy), then the summary.
void printReportText(const rt::Artifact &artifact, const CompileReport &report,
                     llvm::raw_ostream &os);

/// Writes the report as JSON: `launches` (each with `kind`, `name` and
/// `onnx_nodes`; kernels also `resources`, ptxas's registers, shared memory,
/// stack and spills with the sm_90 occupancy they allow), `peak_arena_bytes`, `live_lower_bound_bytes`,
/// `weight_bytes`, counts, `precision` and `fp32_kept` (each with `kind`,
/// `name`, `type`, `onnx_nodes` and `rule`).
void printReportJson(const rt::Artifact &artifact, const CompileReport &report,
                     llvm::raw_ostream &os);

} // namespace kiln

#endif // KILN_COMPILER_REPORT_H
