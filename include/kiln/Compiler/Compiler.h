//===- Compiler.h - ONNX to a runnable Kiln artifact ------------*- C++ -*-===//
//
// The stages kilnc, the JIT API and the tests share: import, the pass
// pipeline, lowering to a Plan with CUDA source, NVRTC, and writing the `.so`.
// Each stage emits diagnostics and returns failure; nothing is written on
// failure.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_COMPILER_H
#define KILN_COMPILER_COMPILER_H

#include "kiln/Compiler/KernelResources.h"
#include "kiln/Compiler/Pipeline.h"
#include "kiln/Compiler/Progress.h"
#include "kiln/Importer/ONNX/Importer.h"
#include "kiln/Target/CUDA/EmitPlan.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace kiln {

/// The Kiln version written into artifacts.
inline constexpr const char *kKilnVersion = "0.1.0";

/// Options of one compilation.
struct CompileOptions {
  ImportOptions import;
  /// NVRTC target; PTX for its generation is kept as well.
  std::string arch = "sm_90a";
  /// When set, every stage's IR and the CUDA source are written here.
  std::string dumpDir;
  /// The passes' options (precision, alignment, debugging outputs).
  PipelineOptions pipeline;
  /// Clamp out-of-range gather indices silently instead of failing the run
  /// naming the ONNX node (`--unchecked-indices`).
  bool uncheckedIndices = false;
  /// fp32 matmuls and attention on the tensor cores with TF32 inputs
  /// (`--allow-tf32`): faster, outside the fp32 contract (docs/precision.md).
  bool allowTf32 = false;
  /// Each float matmul offers Kiln's GEMM kernels beside cuBLASLt
  /// (`--gemm-kernels`), for the runtime's `gemm` option to run. Off until
  /// a GPU has validated them: up to six kernels a matmul, each built by
  /// NVRTC and, on the host backend, by the host compiler, are most of a
  /// small model's compile time.
  bool gemmKernels = false;
  /// The fewest rows at which an 8-bit Q/DQ GEMM (integer, or float8 of a
  /// 16-bit product) runs on Hopper's wgmma (`--qdq-wgmma-rows`; 0 the
  /// compiler's choice, -1 never).
  int64_t qdqWgmmaRows = 0;
  /// The fewest rows at which an FP8 Q/DQ GEMM of a 16-bit product runs on
  /// cuBLASLt (`--qdq-cublaslt-rows`; 0 the compiler's choice, -1 never).
  int64_t qdqCublasLtRows = 0;
  /// Overrides of the tensor-core attention kernel's configuration
  /// (`--attention-*`, kiln-to-cuda's options): for benchmarks.
  AttentionOverrides attention;
  /// The most device memory a plan may ask for: its arena, and each graph
  /// input and output (`--max-arena`); more is refused at compile time, so
  /// that a hostile model cannot make the runtime allocate without bound.
  uint64_t maxArenaBytes = uint64_t(256) << 30;
  /// The most weight bytes a plan may carry (`--max-weights`).
  uint64_t maxWeightBytes = uint64_t(256) << 30;
  /// When set, the passes, code generation and NVRTC report their stages
  /// to it (kilnc on a terminal); not owned.
  Progress *progress = nullptr;
  /// Print MLIR's pass timing report to stderr after the pipeline
  /// (`--time-passes`).
  bool timePasses = false;
};

/// Imports `path`: binary or text ONNX, or `.mlir` holding kiln IR.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext *context,
                                            llvm::StringRef path,
                                            const CompileOptions &options);

/// Runs the Kiln pipeline on `module` in place.
mlir::LogicalResult runPipeline(mlir::ModuleOp module,
                                const CompileOptions &options);

/// Lowers a pipelined module to a Plan with CUDA source; with `compile`, also
/// runs NVRTC for the cubin and PTX. `origins`, when given, receives the ONNX
/// nodes of each step; `weights`, when given, the weights instead of
/// `artifact.weights` (see emitPlan); `resources`, when given and with
/// `compile`, what ptxas gave each kernel; `configs`, when given, each
/// configured kernel's configuration.
mlir::LogicalResult
lowerToArtifact(mlir::ModuleOp module, const CompileOptions &options,
                bool compile, rt::Artifact &artifact,
                StepOrigins *origins = nullptr, WeightTable *weights = nullptr,
                std::vector<KernelResources> *resources = nullptr,
                KernelConfigs *configs = nullptr);

/// All of the above for one model file.
mlir::LogicalResult compileModel(mlir::MLIRContext *context,
                                 llvm::StringRef path,
                                 const CompileOptions &options,
                                 rt::Artifact &artifact);

/// Writes `bytes` to `path` through a temporary file in the same folder, so
/// that a failure leaves no partial file.
mlir::LogicalResult writeFileAtomically(mlir::Location loc,
                                        llvm::StringRef path,
                                        llvm::StringRef bytes);

/// Weights above this size are not embedded in the `.so` but kept in a
/// sidecar file beside it (DESIGN.md: models over 2 GB).
inline constexpr uint64_t kMaxEmbeddedWeightBytes = uint64_t(1) << 31;

/// Writes the self-contained `.so`: the runtime template with the serialized
/// artifact appended. The weights come from `weights` (streamed, never
/// copied whole) or, without it, from `artifact.weights`. When they exceed
/// `maxEmbeddedWeightBytes` they go to `<stem>.kw` beside the `.so` instead,
/// named in the artifact with its size and checksum. Both files are written
/// through temporary files: a failure leaves neither.
mlir::LogicalResult
writeArtifactLibrary(mlir::Location loc, const rt::Artifact &artifact,
                     llvm::StringRef path, const WeightTable *weights = nullptr,
                     uint64_t maxEmbeddedWeightBytes = kMaxEmbeddedWeightBytes);

} // namespace kiln

#endif // KILN_COMPILER_COMPILER_H
