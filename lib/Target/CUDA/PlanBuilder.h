//===- PlanBuilder.h - the builder of a function's runtime plan -*- C++ -*-===//
//
// Internal to the CUDA target: the class emitPlan builds an artifact with.
// It walks the planned function (EmitPlan.cpp) and records its dims,
// bindings, buffers and weights (PlanBuffers.cpp), kernel launches
// (PlanLaunches.cpp) and cuBLASLt steps (PlanMatmuls.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_PLANBUILDER_H
#define KILN_LIB_TARGET_CUDA_PLANBUILDER_H

#include "GemmEmitter.h"
#include "KernelEmitter.h"
#include "KernelSizes.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/QuantizedActivations.h"
#include "kiln/Target/CUDA/EmitPlan.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::detail {

/// The floats of scratch a kernel over packed or 8-bit weights of `config`
/// stores for runs of up to `mostRows` rows of `n` columns: each split's
/// sums where it splits or ends in a row norm (`normed`), and then each
/// row's statistics over each column tile (gemm::normFinishValues); else
/// none.
int64_t partialFloats(const GemmConfig &config, int64_t mostRows, int64_t n,
                      bool normed);

/// Weights are aligned like arena buffers, for vector loads and cuBLASLt.
constexpr uint64_t kWeightAlign = 256;

/// Builds the artifact's buffers and steps while walking the function.
class PlanBuilder {
public:
  /// A builder of `func`'s plan into `artifact`, listing its weights in
  /// `weights`; `origins` and `configs` as emitPlan takes them.
  PlanBuilder(mlir::func::FuncOp func, rt::Artifact &artifact,
              StepOrigins *origins, WeightTable &weights,
              const CudaEmitOptions &options, KernelConfigs *configs)
      : func(func), artifact(artifact), origins(origins), weights(weights),
        options(options), checkIndices(options.checkIndices),
        allowTf32(options.allowTf32), configs(configs) {}

  /// Lowers the function into the artifact: the arena, the dims, the
  /// inputs, the CUDA source and a step for each op. Emits an error at the
  /// offending op and returns failure for anything it cannot lower.
  mlir::LogicalResult build();

private:
  //===--------------------------------------------------------------------===//
  // The walk (EmitPlan.cpp)
  //===--------------------------------------------------------------------===//

  /// Appends what top-level `op` becomes, its kernels' code to `source`.
  mlir::LogicalResult addOp(mlir::Operation &op, llvm::raw_ostream &source);

  /// Appends `unit`, the code of the kernels one op created (the entries of
  /// artifact.kernelNames from `namesBefore`), to `source`, unless an
  /// earlier op's kernels have the same code under their own names: then
  /// the entries (and the configurations from `configsBefore`) take those
  /// names, and the op's launches run those kernels (PlanSharedKernels.cpp).
  void shareKernels(llvm::StringRef unit, size_t namesBefore,
                    size_t configsBefore, llvm::raw_ostream &source);

  /// Records on each launch step the dims its launch depends on
  /// (LaunchStep::dimsRead), once every kernel's code is in the source
  /// (PlanDimsRead.cpp).
  void recordDimsRead();

  //===--------------------------------------------------------------------===//
  // Dims, bindings, buffers and weights (PlanBuffers.cpp)
  //===--------------------------------------------------------------------===//

  /// The function's symbolic dims, in the order the kernels take them.
  mlir::LogicalResult addDims();

  /// `size` as the runtime evaluates it: each name as its dim's index.
  rt::SizeFormula formulaOf(const DimExpr &size);

  /// Records that field `axis` of `target` follows `size`, when it is
  /// symbolic.
  void bind(rt::SizeField field, uint32_t target, uint32_t axis,
            const Size &size);

  /// The name of graph input `i`: its `name`, else "inputI".
  std::string argName(size_t i, mlir::StringAttr name);

  /// Appends a buffer of `kind` for `value` at `offset` (the meaning of
  /// which depends on `kind`), with a binding for each symbolic dim, and
  /// records it as `value`'s. Returns its id.
  mlir::FailureOr<uint32_t> addBuffer(mlir::Value value, rt::BufferKind kind,
                                      uint64_t offset, std::string name);

  /// A Splat buffer for a splat constant, else a Weight buffer over its
  /// bytes in the weights image.
  mlir::LogicalResult addWeight(ConstantOp constant);

  /// A splat's element as a Splat buffer holds it: its bytes, least
  /// significant first, in a u64. The runtime fills the storage, so a
  /// constant of any shape costs nothing here (ConstantOfShape of a hostile
  /// shape must not cost gigabytes of memory or of artifact).
  mlir::FailureOr<uint64_t> splatValue(ConstantOp constant,
                                       mlir::DenseElementsAttr splat);

  /// The bytes of a constant as the runtime stores them: a resource blob's
  /// own bytes when they are already in that form (no copy of a large
  /// weight), else converted into `weights.owned`.
  mlir::FailureOr<llvm::ArrayRef<char>> weightBytes(ConstantOp constant);

  /// A reshape reads and writes nothing: a second buffer over the same bytes.
  mlir::LogicalResult addView(ReshapeOp reshape);

  /// Buffers for the results of an op that memory planning placed.
  mlir::LogicalResult addResults(mlir::Operation *op);

  /// The name of graph output `i`: its kiln.name, else "outputI".
  std::string outputName(int64_t i);

  /// A cache update kernel writes only its new rows: the rest of its result
  /// is its destination's, which must be the same storage. So the update
  /// goes from a graph input into a graph output, which the artifact
  /// records as an alias (the caller's one buffer for both, or a copy).
  mlir::LogicalResult addAlias(KernelOp kernel);

  /// A buffer of `elements` elements of `dtype` of scratch memory, past the
  /// planned arena: the scratch of every kernel starts there (each is read
  /// only by the steps of the op that writes it, which run one after the
  /// other), and the arena grows by the largest. A buffer that another of
  /// the same op's is live with starts `after` bytes past the start.
  uint32_t addScratch(int64_t elements, rt::DType dtype = rt::DType::F32,
                      uint64_t after = 0);

  /// Outputs that memory planning could not write in place (graph inputs,
  /// weights, or a buffer returned twice) are copied at the end.
  mlir::LogicalResult addOutputs(mlir::func::ReturnOp ret);

  //===--------------------------------------------------------------------===//
  // Kernel launches (PlanLaunches.cpp)
  //===--------------------------------------------------------------------===//

  /// Emits `kernel`'s CUDA code to `source` and appends its launch (or the
  /// launches of its split attention, each guarded where the query length
  /// decides) over its buffers.
  mlir::LogicalResult addLaunch(KernelOp kernel, llvm::raw_ostream &source);

  /// Step `step` runs only where `condition` is at least 1.
  void guardStep(size_t step, const DimExpr &condition);

  /// Appends a launch of kernel `name` (emitted from `kernel`) over `args`,
  /// with a binding for each symbolic grid dim.
  void pushLaunch(KernelOp kernel, const std::string &name,
                  const LaunchGeometry &geometry,
                  llvm::ArrayRef<uint32_t> args);

  //===--------------------------------------------------------------------===//
  // Matmul and GEMM steps (PlanMatmuls.cpp)
  //===--------------------------------------------------------------------===//

  /// One loop over batch matrices: how many, and the elements between
  /// consecutive matrices of A, B and C (0 when the operand broadcasts).
  struct BatchLevel {
    Size count = 1;
    Size stride[3] = {0, 0, 0};
  };

  /// The batch dims of `op` as at most two levels (the plan's inner and
  /// outer batch). Adjacent dims merge into one level when every operand
  /// continues its stride across them (or broadcasts over both), so
  /// [2, 3] x [2, 3] is one level and [2, 1] x [1, 3] two.
  mlir::FailureOr<llvm::SmallVector<BatchLevel, 2>> batchLevels(MatmulOp op);

  /// A cuBLASLt step and its extents and strides as sizes, in the order of
  /// rt::SizeField::MatmulField's fields.
  struct MatmulPlan {
    rt::MatmulStep step;
    Size sizes[rt::kMatmulFields] = {1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0};
  };

  /// Appends `plan`'s step, its fields at the top of the ranges, with a
  /// binding for each symbolic one.
  void pushMatmul(MatmulPlan &plan);

  /// Appends the cuBLASLt step of kiln.matmul `op` and its result's buffer.
  mlir::LogicalResult addMatmul(MatmulOp op, llvm::raw_ostream &source);

  /// A GEMM kernel (kiln-fuse) is one cuBLASLt call: its matmul, then the
  /// epilogue kiln-fuse recorded on it (#kiln.gemm_epilogue, which the
  /// kernel's verifier checked against the body). Reshapes between them are
  /// views: the step writes the kernel's (reshaped) result in the product's
  /// element order.
  mlir::LogicalResult addGemm(KernelOp kernel, llvm::raw_ostream &source);

  /// Where a GEMM of block-quantized weights multiplies them unpacked: the
  /// scratch buffer the dequantize's kernel writes them to, and the
  /// condition on the dims under which that path runs (none: every run).
  struct UnpackedWeights {
    uint32_t buffer;
    std::optional<DimExpr> when;
    /// Where the kernel computes its left operand (its prologue), the
    /// scratch those runs read it from.
    std::optional<uint32_t> lhs;
    /// Where the kernel ends in a cache update that the GEMV does not
    /// write every run, the update's own kernel and its runs, for the
    /// caller to launch after the matmul step.
    struct CacheUpdate {
      std::string name;
      std::optional<DimExpr> when;
    };
    std::optional<CacheUpdate> cacheUpdate;
  };

  /// The steps of a GEMM kernel whose weights are block-quantized (a
  /// kiln.dequantize feeding its matmul; PlanPackedMatmuls.cpp): the packed
  /// GEMV's launches where the rows are few, the packed GEMM's where they
  /// are more (up to its most); where they are many, the
  /// dequantize's own kernel writing the weights to scratch, for the matmul
  /// step the caller appends after it. Each path is guarded by the run's
  /// rows where both exist. Nothing is returned where the GEMV covers
  /// every run.
  mlir::FailureOr<std::optional<UnpackedWeights>>
  addPackedGemm(KernelOp kernel, MatmulOp matmul, DequantizeOp dequantize,
                const MatmulPlan &plan, llvm::raw_ostream &source);
  /// The packed GEMV's computed left operand of `kernel` (its prologue,
  /// which computes `matmul`'s left operand), and in `buffers` the inputs
  /// it reads.
  mlir::FailureOr<ComputedOperand>
  computedOperand(KernelOp kernel, MatmulOp matmul,
                  llvm::SmallVectorImpl<uint32_t> &buffers);
  /// A kernel of its own that computes `kernel`'s left operand into
  /// scratch (`after` bytes past the scratch's start) for the runs the
  /// GEMV does not serve (under `when`, where given); the scratch buffer.
  mlir::FailureOr<uint32_t> addOperandKernel(KernelOp kernel, MatmulOp matmul,
                                             const std::string &name,
                                             int64_t elements, uint64_t after,
                                             std::optional<DimExpr> when,
                                             llvm::raw_ostream &source);

  /// The arguments of a kernel over packed or 8-bit weights for `kernel`'s
  /// step (pushPackedLaunches'): `inputs`, the epilogue's bias and
  /// residual, `tailInputs`, the norm's scale and shift, the result (and
  /// the sum a norm also yields), `partials` where there is scratch, then
  /// `updateBuffers`.
  llvm::SmallVector<uint32_t>
  packedLaunchArgs(KernelOp kernel, llvm::ArrayRef<uint32_t> inputs,
                   llvm::ArrayRef<uint32_t> tailInputs,
                   std::optional<uint32_t> partials,
                   llvm::ArrayRef<uint32_t> updateBuffers = {});

  /// The launches of `kernel`'s step by a kernel over packed weights
  /// `name` of `config` (a grid of n / tileN x rows / tileM x splitK) for
  /// the runs of at most `mostRows` rows (`m`, under each of `when`): the
  /// main kernel on `inputs`, then the kernel's epilogue's bias and
  /// residual, the inputs its tail reads (`tailInputs`), its norm's scale
  /// and shift, the result, the sum its norm normalizes where the kernel
  /// yields that too, and, split or normed, scratch for the partial sums
  /// (gemm::splitFinishValues, gemm::normFinishValues). It takes
  /// `sharedBytes` of dynamic shared memory. Records the configuration.
  /// `updateBuffers` follow the scratch: a cache update's (CacheUpdateTail).
  /// `partials`, where given, is the scratch (which the caller sized).
  mlir::LogicalResult pushPackedLaunches(
      KernelOp kernel, const std::string &name, const GemmConfig &config,
      const Size &m, int64_t n, int64_t mostRows, llvm::ArrayRef<DimExpr> when,
      llvm::ArrayRef<uint32_t> inputs, llvm::ArrayRef<uint32_t> tailInputs = {},
      uint32_t sharedBytes = 0, llvm::ArrayRef<uint32_t> updateBuffers = {},
      std::optional<uint32_t> partials = std::nullopt);

  /// A GEMM kernel's cache update (#kiln.gemm_epilogue's cache_update;
  /// PlanCacheUpdates.cpp) as the packed GEMV `name`'s last block runs it:
  /// its device function, emitted to `source`, and what the GEMV passes it.
  mlir::FailureOr<CacheUpdateTail> cacheUpdateTail(KernelOp kernel,
                                                   const std::string &name,
                                                   llvm::raw_ostream &source);
  /// The launch of a GEMM kernel's cache update as a kernel `name` of its
  /// own, after the product, for the runs under `when` (every run without).
  mlir::LogicalResult addCacheUpdateKernel(KernelOp kernel,
                                           const std::string &name,
                                           std::optional<DimExpr> when,
                                           llvm::raw_ostream &source);

  /// The model's dim parameters as a launch step's kernel takes them after
  /// its buffers (", long long kd_...").
  std::string dimParameters();

  /// The launches of a GEMM kernel of 8-bit activations and 8-bit weights
  /// of one kind, integers or float8 (kiln-fuse put the dequantizations
  /// of both in it; PlanQdqMatmuls.cpp): the Q/DQ GEMM's mma.sync form
  /// for few rows, its Hopper form for more, and for float8 the most on
  /// cuBLASLt (addQdqCublasLt).
  mlir::LogicalResult addQdqGemm(KernelOp kernel, MatmulOp matmul,
                                 DequantizeOp dequantize,
                                 const DequantizedActivations &activations,
                                 const MatmulPlan &plan,
                                 llvm::raw_ostream &source);

  /// The runs of an FP8 Q/DQ GEMM under each of `when` (addQdqGemm's
  /// `plan` and `shape`, its launches `name`, its main kernel's `inputs`
  /// and `tail`): a matmul step of float8 operands (cuBLASLt's FP8
  /// kernels) into the scratch `sums`, offering `rival` (the Q/DQ GEMM's
  /// Hopper form, which takes the finish's launch too) where there is one,
  /// then the kernel that scales its sums and applies the epilogue
  /// (emitQdqFinish).
  void addQdqCublasLt(KernelOp kernel, const MatmulPlan &plan,
                      const QdqGemmShape &shape, const std::string &name,
                      llvm::ArrayRef<DimExpr> when,
                      llvm::ArrayRef<uint32_t> inputs,
                      llvm::ArrayRef<uint32_t> tailInputs, uint32_t sums,
                      const std::optional<rt::GemmCandidate> &rival,
                      const QdqGemmTail *tail, llvm::raw_ostream &source);

  /// The tail of the Q/DQ GEMM `kernel`'s epilogue as C text, and the
  /// buffers of the kernel inputs it reads, in its parameters' order.
  mlir::FailureOr<QdqGemmTail>
  qdqGemmTail(KernelOp kernel, MatmulOp matmul,
              llvm::SmallVectorImpl<uint32_t> &buffers);

  /// Offers Kiln's GEMM kernels for `plan`'s step (chooseGemmConfigs),
  /// appending each kernel to `source` the first time a step needs it, and
  /// records them as `op`'s configuration.
  void addGemmCandidates(MatmulPlan &plan, mlir::Operation *op,
                         llvm::raw_ostream &source);

  /// The index of Kiln's GEMM-family kernel `name` in artifact.kernelNames,
  /// calling `emit` on the module's source (not the op's: the op's code is
  /// then that of every later op of its shapes, PlanSharedKernels.cpp) the
  /// first time a step needs it: one kernel whichever steps share it.
  uint32_t gemmKernelIndex(const std::string &name,
                           llvm::function_ref<void(llvm::raw_ostream &)> emit);

  /// The cuBLASLt step of `op`'s shapes (operand buffers left to the
  /// caller).
  mlir::FailureOr<MatmulPlan> matmulPlan(MatmulOp op);

  //===--------------------------------------------------------------------===//
  // State
  //===--------------------------------------------------------------------===//

  /// The function being lowered.
  mlir::func::FuncOp func;
  /// What the function lowers into.
  rt::Artifact &artifact;
  /// When given, the ONNX nodes of each step.
  StepOrigins *origins;
  /// Each value's buffer in artifact.buffers.
  llvm::DenseMap<mlir::Value, uint32_t> bufferOf;
  /// Each symbolic dim's index in artifact.symbolic.dims.
  llvm::StringMap<uint32_t> dimIndex;
  /// The weights image the Weight buffers point into.
  WeightTable &weights;
  /// kiln-to-cuda's options, which the kernel generators read.
  const CudaEmitOptions &options;
  /// options.checkIndices: the gathers' index sites go into the artifact.
  bool checkIndices;
  /// options.allowTf32: fp32 matmuls and attention as TF32.
  bool allowTf32;
  /// When given, the configuration of each kernel that has one.
  KernelConfigs *configs;
  /// Kiln's GEMM kernels emitted so far, by name: their kernel index.
  llvm::StringMap<uint32_t> gemmKernels;
  /// The module's CUDA source, where the GEMM family's kernels go.
  llvm::raw_ostream *familySource = nullptr;
  /// The arrival counters each GEMM family kernel needs (the most tiles of
  /// any step's candidate that splits or ends in a norm, at least one; with
  /// a norm, the row tiles' counters too), by name, declared after the
  /// prelude once every step is planned; and where the prelude ends in the
  /// source.
  struct FamilyArrivals {
    uint64_t tiles = 1;
    bool norm = false;
  };
  std::map<std::string, FamilyArrivals> familyArrivals;
  size_t preludeEnd = 0;
  /// Each op's kernel code emitted so far, its names numbered
  /// (PlanSharedKernels.cpp): the names of the kernels it defines.
  llvm::StringMap<std::vector<std::string>> kernelTexts;
  /// Constants seen so far, to name the next "weightN".
  int weightCount = 0;
  /// Where kernels' scratch memory starts (past the planned arena), and the
  /// most any kernel takes.
  uint64_t scratchOffset = 0;
  uint64_t scratchBytes = 0;
};

/// The numbers of the block arguments (kernel inputs) that `ops` read,
/// ascending, each once.
llvm::SmallVector<unsigned>
blockArgumentsRead(llvm::ArrayRef<mlir::Operation *> ops);

/// A kernel of `kind` of part of `kernel`'s body, created before `kernel`
/// for the caller to emit and erase (a step's own kernel of its dequantize,
/// its prologue, its cache update): `ops` cloned, yielding `results`
/// (values of the body). Its inputs are first each `leading` body value,
/// read as the outside value it is paired with (a product, from the
/// kernel's result), then the block arguments `args`; `inputs` gets them
/// all as values outside.
KernelOp
kernelOfOps(KernelOp kernel, llvm::ArrayRef<mlir::Operation *> ops,
            llvm::ArrayRef<std::pair<mlir::Value, mlir::Value>> leading,
            llvm::ArrayRef<unsigned> args, mlir::ValueRange results,
            KernelKind kind, llvm::SmallVectorImpl<mlir::Value> &inputs);

} // namespace kiln::detail

#endif // KILN_LIB_TARGET_CUDA_PLANBUILDER_H
