//===- Passes.h - the CUDA target's passes ----------------------*- C++ -*-===//

#ifndef KILN_TARGET_CUDA_PASSES_H
#define KILN_TARGET_CUDA_PASSES_H

#include "kiln/Target/CUDA/EmitPlan.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Target/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Target/CUDA/Passes.h.inc"

/// Where kiln-to-cuda puts its result when the compiler driver runs it; see
/// emitPlan for what each holds. Not owned.
struct CudaLowering {
  rt::Artifact *artifact = nullptr;
  WeightTable *weights = nullptr;
  /// Optional: the ONNX nodes of each step, for `kilnc --report`.
  StepOrigins *origins = nullptr;
  /// Optional: each configured kernel's configuration, for the report.
  KernelConfigs *configs = nullptr;
};

/// kiln-to-cuda writing its result into `lowering` instead of the module.
std::unique_ptr<mlir::Pass>
createKilnToCudaPass(KilnToCudaPassOptions options, CudaLowering lowering);

/// Attribute names under which kiln-to-cuda records its result in the
/// module when it has no CudaLowering (kiln-opt).
inline constexpr llvm::StringLiteral kCudaSourceAttr = "kiln.cuda_source";
inline constexpr llvm::StringLiteral kPlanAttr = "kiln.plan";

} // namespace kiln

#endif // KILN_TARGET_CUDA_PASSES_H
