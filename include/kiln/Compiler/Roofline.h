//===- Roofline.h - Work and floor time of each launch ----------*- C++ -*-===//
//
// For `kilnc --report`: the FLOPs and bytes each launch moves, and the least
// time a GPU could take for them, max(FLOPs / peak rate, bytes / memory
// bandwidth). Estimates for people, not a cost model: a kernel's FLOPs count
// one per element of each elementwise op, a few per element of a
// normalization, and the two products of attention; its bytes are its
// operands and result read or written once.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_ROOFLINE_H
#define KILN_COMPILER_ROOFLINE_H

#include "kiln/KernelConfig/KernelConfig.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// A GPU's peak rates and where they come from.
struct GpuPeaks {
  const char *name;
  /// FP32 on the CUDA cores (Kiln's kernels, fp32 GEMMs without TF32).
  double fp32FlopsPerSecond;
  /// Dense FP16/BF16 on the tensor cores (16-bit GEMMs, mma.sync kernels).
  double tensor16FlopsPerSecond;
  /// Dense TF32 on the tensor cores (fp32 GEMMs with --allow-tf32).
  double tf32FlopsPerSecond;
  double bytesPerSecond;
  const char *origin;
};

/// The peaks of `name` ("h100", "h200"), or null.
const GpuPeaks *findGpuPeaks(llvm::StringRef name);

/// The names findGpuPeaks knows, for messages.
std::string knownGpus();

/// The estimated FLOPs of each kiln.kernel of a lowered module that is
/// generated code (not a GEMM), in order.
std::vector<double> kernelFlopsOf(mlir::ModuleOp module);

/// The FLOPs of each of `artifact`'s kernels from `opFlops` (kernelFlopsOf):
/// the kernels generated for one kiln.kernel share the index in their names
/// (kiln_<family>_<index>, then _split and _combine for attention with its
/// keys split), and each form counts the op's FLOPs but the combine, whose
/// merge of the splits is left out.
std::vector<double> flopsOfKernels(const rt::Artifact &artifact,
                                   llvm::ArrayRef<double> opFlops);

/// The work of one step.
struct StepCost {
  double flops = 0;
  double bytes = 0;
  /// A 16-bit GEMM, or a kernel whose PTX issues mma.sync: it runs on the
  /// tensor cores.
  bool tensorCores = false;
  /// An fp32 GEMM or kernel with TF32 inputs, on the tensor cores at the
  /// TF32 rate.
  bool tf32 = false;
  /// A kernel issuing wgmma (sm_90a).
  bool wgmma = false;
};

/// What a kernel's PTX issues on the tensor cores.
enum class MmaUse : uint8_t {
  None,
  /// mma.sync on 16-bit operands.
  Sixteen,
  /// mma.sync on TF32 operands (kilnc --allow-tf32).
  Tf32,
  /// Hopper's wgmma on 16-bit operands (the sm_90a cubin; its portable PTX
  /// issues the same products as mma.sync).
  Wgmma,
};

/// For each kernel of `artifact`, what tensor-core instruction it issues:
/// mma.sync read from its PTX in one pass (the portable PTX issues wgmma's
/// products as mma.sync), wgmma from the kernel's configuration in
/// `configs` (all None when the artifact has no PTX and no configs).
std::vector<MmaUse> kernelsIssuingMmaSync(const rt::Artifact &artifact,
                                          const KernelConfigs &configs);

/// The work of `step`; `kernelFlops` from flopsOfKernels and `mmaSync` from
/// kernelsIssuingMmaSync (either may be empty).
StepCost costOf(const rt::Artifact &artifact, const rt::Step &step,
                llvm::ArrayRef<double> kernelFlops,
                const std::vector<MmaUse> &mmaSync);

/// The least time `cost` can take on `gpu`, in seconds.
double floorSeconds(const StepCost &cost, const GpuPeaks &gpu);

} // namespace kiln

#endif // KILN_COMPILER_ROOFLINE_H
