//===- GemmEmitter.h - Kiln's own GEMM kernels ------------------*- C++ -*-===//
//
// Internal to the CUDA target: the GEMM kernel family, which a matmul step
// may run in place of cuBLASLt, in its four forms (tensor-core tiles and
// fp32's CUDA-core tiles, GemmEmitter.cpp; decoding's GEMV,
// GemvEmitter.cpp; Hopper's tensor copies and wgmma,
// GemmWgmmaEmitter.cpp), and the one function
// that chooses its layouts for a step (GemmConfig.cpp). The kernels take
// the step's extents and strides as arguments, so one kernel serves every
// step of its element type, transposes, epilogue and layout, and every
// split count (rt::GemmCandidate says how they are called); a split's last
// block to arrive finishes its tile.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_GEMMEMITTER_H
#define KILN_LIB_TARGET_CUDA_GEMMEMITTER_H

#include "KernelSizes.h"

#include "kiln/KernelConfig/KernelConfig.h"
#include "kiln/runtime/ArtifactSteps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// SMs of the H100 SXM and the H200, the GPUs Kiln is tuned for: the
/// blocks a split of K aims to fill, in both choices of layout.
constexpr int64_t kGemmTargetSMs = 132;
/// The most blocks either form splits K across.
constexpr int64_t kGemmMostSplits = 16;
/// A matmul step as chooseGemmConfigs sees it.
struct GemmShape {
  rt::DType dtype = rt::DType::F32;
  /// Rows of C at the least and the top of the dims' ranges.
  int64_t leastM = 1, upperM = 1;
  /// Columns of C and the contracted extent, at the top of the ranges.
  int64_t n = 1, k = 1;
  /// Matrices of the batch (both levels), at the top of the ranges.
  int64_t batch = 1;
  /// Whether A and B are stored transposed (k x m, n x k).
  bool transA = false, transB = false;
  /// The sizes the kernels read in 16-byte chunks, each with what it is:
  /// A's and B's row pitches and batch strides.
  llvm::SmallVector<std::pair<std::string, Size>, 6> chunked;
};

/// Kiln's GEMM layouts for a step of `shape`, or none and why.
struct GemmChoice {
  std::vector<GemmConfig> configs;
  /// Why there are none ("" when there are).
  std::string refusal;
};

/// The candidates a step of `shape` offers besides cuBLASLt's.
GemmChoice chooseGemmConfigs(const GemmShape &shape);

/// What a main kernel is specialized for besides its layout: the element
/// type, the transposes and the epilogue (whose choices are constants of
/// the kernel; GemmEmitter.cpp says why).
struct GemmKernelKind {
  rt::DType dtype = rt::DType::F16;
  bool transA = false, transB = false;
  bool bias = false, residual = false;
  rt::MatmulActivation activation = rt::MatmulActivation::None;
  /// Whether C is float32, each value rounded to `dtype` first
  /// (rt::MatmulStep::widen).
  bool widen = false;
  /// Whether the kernel ends in the step's row norm (rt::MatmulStep's
  /// normScale), taking the norm's arguments (gemm::familyFinishValues).
  bool norm = false;
};

/// The main kernel's name for `config`'s layout (any split) and `kind`:
/// `kiln_gemm_f16_nt_mma_64x64x32_w2x2_bias_gelu`.
std::string gemmKernelName(const GemmConfig &config,
                           const GemmKernelKind &kind);
/// The names of the kernels that finish a step after cuBLASLt
/// (rt::MatmulStep::finishKernel): fp32's exact GELU over C in place
/// (emitGemmGeluErf), and a `dtype` product widened into an fp32 C
/// (emitGemmWiden).
std::string gemmGeluErfName();
std::string gemmWidenName(rt::DType dtype);
/// The name of the kernel that finishes a `dtype` GEMM step's norm after
/// cuBLASLt (emitGemmNorm).
std::string gemmNormName(rt::DType dtype, bool widen = false);

/// Appends the main kernel of `config`'s layout for `kind` to `os`, named
/// as gemmKernelName says, in any form. `kind.dtype` is F16 or BF16 for
/// the mma and wgmma forms, F32 for the fma form, any of them for the GEMV.
void emitGemmKernel(const GemmConfig &config, const GemmKernelKind &kind,
                    llvm::raw_ostream &os);
/// The same for the GEMV form (GemvEmitter.cpp); `kind.transA` is false.
void emitGemvKernel(const GemmConfig &config, const GemmKernelKind &kind,
                    llvm::raw_ostream &os);
/// The same for the wgmma form (GemmWgmmaEmitter.cpp); `kind.transA` is
/// false and the step has one matrix.
void emitWgmmaGemmKernel(const GemmConfig &config, const GemmKernelKind &kind,
                         llvm::raw_ostream &os);
/// The dynamic shared memory a wgmma-form kernel of `config` takes.
int64_t wgmmaGemmSharedBytes(const GemmConfig &config);
/// A matmul step whose B is block-quantized weights, n x k as MatMulNBits
/// packs them (a kiln.dequantize that kiln-fuse put in its GEMM kernel),
/// as the packed GEMV (PackedGemvEmitter.cpp) and the packed GEMM
/// (PackedGemmEmitter.cpp) see it.
struct PackedGemvShape {
  rt::DType dtype = rt::DType::F16;
  /// Rows of C at the least and the top of the dims' ranges, its columns,
  /// and the contracted extent.
  int64_t leastM = 1, upperM = 1, n = 1, k = 1;
  /// Bits a weight, weights a quantization block, blocks a row of B.
  int64_t bits = 4, blockSize = 32, blocks = 1;
  /// Whether the weights are E4M3FN float8 values (8 bits, no zero point).
  bool float8 = false;
  /// The zero points: the middle of the range, packed like B, or floats.
  enum class ZeroPoints { Middle, Packed, Float };
  ZeroPoints zeroPoints = ZeroPoints::Middle;
  /// The epilogue.
  bool bias = false, residual = false;
  rt::MatmulActivation activation = rt::MatmulActivation::None;
  /// The row norm that ends the epilogue (kiln.layer_norm or kiln.rms_norm
  /// of each row of C), whether it has a
  /// shift, whether the kernel also stores what it normalizes (a pre-norm
  /// block's residual sum, its second result), whether the norm reads
  /// that sum as a float (`wide_norm`: onnxruntime's skip norms) rather
  /// than as stored, and its epsilon.
  enum class Norm { None, Layer, Rms };
  Norm norm = Norm::None;
  bool normShift = false, normSum = false, normWide = false;
  float normEpsilon = 0.0f;
};

/// The packed GEMV's layout for a step of `shape`, and the most rows it
/// runs (the plan unpacks the weights for runs with more); or none, and
/// why.
struct PackedGemvChoice {
  std::optional<GemmConfig> config;
  int64_t mostRows = 0;
  std::string refusal;
};
PackedGemvChoice choosePackedGemv(const PackedGemvShape &shape);

/// A left operand that a packed GEMV computes where it reads it (a GEMM
/// kernel's prologue, PlanPackedMatmuls.cpp): the kernel's parameters for
/// the inputs it reads (`const T *__restrict__ in<k>, ...`, as the body
/// emitter names them), and the statements and expression of its element
/// at flat index `a_index`, as A's type stores it.
struct ComputedOperand {
  std::string parameters, statements, value;
};

/// A cache update that a packed GEMV's last block runs after the product
/// (a GEMM kernel's cache_update, PlanCacheUpdates.cpp): the kernel's
/// parameters for the update's inputs and results (`, const T
/// *__restrict__ update_in1, ...`, after its partials), the statement that
/// calls the update's device function, and the buffers the parameters take,
/// in order.
struct CacheUpdateTail {
  std::string parameters, call;
  std::vector<uint32_t> buffers;
};

/// Whether the packed GEMV of `config` for `shape` may compute its A (a
/// block's rows over its share of K, in at most 16 KiB of shared memory).
bool packedGemvComputesOperand(const PackedGemvShape &shape,
                               const GemmConfig &config);

/// Appends the packed GEMV `name` of `config` for `shape`, a launch step
/// over runs of up to `mostRows` rows: it takes (A, packed B, scales,
/// [zero points], [bias], [residual], C, [the split's float partials]),
/// then `dims` (the model's dim parameters, ", long long kd_..."); `rows`
/// is C's rows as C text over them. With a split, the last block of a
/// tile to arrive adds the splits (gemm::splitFinishValues). With `lhs`
/// (where packedGemvComputesOperand), the block computes A, and its
/// inputs take A's place. With `update`, the last of the grid's tiles to
/// arrive runs the cache update, whose parameters follow the partials.
void emitPackedGemv(const PackedGemvShape &shape, const GemmConfig &config,
                    const std::string &name, const std::string &rows,
                    int64_t mostRows, const std::string &dims,
                    llvm::raw_ostream &os, const ComputedOperand *lhs = nullptr,
                    const CacheUpdateTail *update = nullptr);

/// The packed GEMM's layout (a GemmForm::Mma config: tileM x 64 x 64, one
/// by four warps) for the runs of a step of `shape` with at least
/// `fewestRows` rows (past the packed GEMV's), and the most rows it runs
/// (the plan unpacks the weights for runs with more); or none, and why.
struct PackedGemmChoice {
  std::optional<GemmConfig> config;
  int64_t mostRows = 0;
  std::string refusal;
};
PackedGemmChoice choosePackedGemm(const PackedGemvShape &shape,
                                  int64_t fewestRows);

/// The layout of both GEMMs over packed bytes (the packed GEMM and the
/// integer GEMM) for runs of `leastRows` to `upperRows` rows of `n`
/// columns over `k` (weights or bytes): tileM x 64 x 64 with one by four
/// warps, tileM the top of the range as a power of two from 16 to 64 (so
/// the weights are read once for the most rows), K split until there are
/// about two blocks an SM while a split keeps at least 4 tiles of 64.
GemmConfig packedTileConfig(int64_t leastRows, int64_t upperRows, int64_t n,
                            int64_t k);

/// Appends the packed GEMM `name` of `config` for `shape`: a launch step
/// that takes what emitPackedGemv's takes, in the same order.
void emitPackedGemm(const PackedGemvShape &shape, const GemmConfig &config,
                    const std::string &name, const std::string &rows,
                    int64_t mostRows, const std::string &dims,
                    llvm::raw_ostream &os);

/// A matmul step of 8-bit activations (per tensor, a scale and maybe a
/// zero point) and 8-bit weights (a scale a column, rows of `rowBytes`
/// packed bytes: kiln.dequantize's signed integers q + 128, or float8
/// values), as the Q/DQ GEMM (QdqGemmEmitter.cpp) sees it. K is whole
/// 16-byte chunks.
struct QdqGemmShape {
  /// The product's element type, and the activations' scale's and zero
  /// point's: F32, F16 or BF16.
  rt::DType dtype = rt::DType::F32, scaleDtype = rt::DType::F32;
  /// Rows of C at the least and the top of the dims' ranges, its columns,
  /// the contracted extent, and the bytes of a packed row (K or more).
  int64_t leastM = 1, upperM = 1, n = 1, k = 16, rowBytes = 16;
  /// Whether both operands are float8 E4M3FN (else integers); whether
  /// the (integer) activations are unsigned, and have a zero point; whether
  /// the (integer) weights have one a column (stored unsigned, a byte a
  /// packed row).
  bool float8 = false, unsignedActivations = false, zeroPoint = false,
       weightZeroPoints = false;
  /// The epilogue.
  bool bias = false, residual = false;
  rt::MatmulActivation activation = rt::MatmulActivation::None;
  /// The LayerNorm or RMSNorm of each row after the tail, where there is
  /// one (of an fp32 product's fp32 tail), as PackedGemvShape's.
  PackedGemvShape::Norm norm = PackedGemvShape::Norm::None;
  bool normShift = false;
  float normEpsilon = 0.0f;
};

/// The tail of a Q/DQ GEMM's epilogue (#kiln.gemm_epilogue's tail: its
/// requantization and what else follows of each element), as C text: the
/// statements that compute the stored value from `product` (the element
/// of the product with its bias, rounded to the product's type, a float)
/// at `row`, `col` of the n columns; the value; its C storage type; and
/// the pointer parameters of the kernel inputs they read (in<k>, k the
/// kernel input's number), which both kernels take after the residual.
/// Where the tail ends in a row norm (QdqGemmShape::norm), `value` is the
/// norm's input (a float), and `normStatements` and `normValue` compute
/// the stored value from the normalized element `y` (a float).
struct QdqGemmTail {
  std::string statements, value, storage, parameters;
  std::string normStatements, normValue;
};

/// Appends the Q/DQ GEMM `name` of `config` for `shape`, a launch step
/// over runs of up to `mostRows` rows: it takes (A's bytes, the packed
/// weights, their scales, A's scale, [A's zero point], [the weights' zero
/// points], [bias], [residual], [the tail's inputs], [the norm's scale and
/// shift], C, [the float partials of a split or a norm]), then `dims`; `rows`
/// is C's rows as C text over them. C holds the tail's values where there is
/// one. With a split, the last block of a tile to arrive adds the splits
/// (gemm::splitFinishValues); with a norm, every block stores its sums and the
/// norm finishes as the packed kernels' does (gemm::qdqFinishValues), the
/// kernel taking the norm's scale and shift after the tail's inputs.
void emitQdqGemm(const QdqGemmShape &shape, const GemmConfig &config,
                 const std::string &name, const std::string &rows,
                 int64_t mostRows, const std::string &dims,
                 const QdqGemmTail *tail, llvm::raw_ostream &os);

/// Where the Q/DQ GEMM runs on Hopper's wgmma (QdqWgmmaEmitter.cpp): its
/// layout and the fewest rows a run takes it at (the mma.sync form runs
/// fewer), or why it does not run.
struct QdqWgmmaChoice {
  std::optional<GemmConfig> config;
  int64_t fewestRows = 0;
  std::string refusal;
};

/// The Hopper form for `shape`: integers with K up to 32768, or float8
/// operands of a 16-bit product, from
/// `fewestRows` rows (kilnc --qdq-wgmma-rows; 0: from where 128 x 128 tiles
/// split as far as K allows fill the GPU; -1: never) when a run reaches
/// them, for `arch` sm_90a (wgmma's) alone; tiles of 128 (64 where no run has
/// 128) rows by 128 columns, K split until the fewest rows' blocks fill the
/// GPU.
QdqWgmmaChoice chooseQdqWgmma(const QdqGemmShape &shape, int64_t fewestRows,
                              llvm::StringRef arch);

/// The dynamic shared memory the Hopper form of `config` takes.
int64_t qdqWgmmaSharedBytes(const GemmConfig &config);

/// Appends the Q/DQ GEMM's Hopper form `name` of `config`: a launch step
/// taking what emitQdqGemm's takes; with `takesPartials` the partial sums'
/// scratch even unsplit and without a norm, as the FP8 finish after
/// cuBLASLt takes it, so that it can run in that finish's place
/// (rt::GemmCandidate::withNextLaunch).
void emitQdqWgmmaGemm(const QdqGemmShape &shape, const GemmConfig &config,
                      const std::string &name, const std::string &rows,
                      int64_t mostRows, const std::string &dims,
                      const QdqGemmTail *tail, llvm::raw_ostream &os,
                      bool takesPartials = false);

/// Where an FP8 Q/DQ GEMM runs on cuBLASLt (QdqCublasLtFinish.cpp): the
/// fewest rows a run takes it at (the Q/DQ GEMM's forms run fewer), or
/// why it does not run.
struct QdqCublasLtChoice {
  int64_t fewestRows = 0;
  std::string refusal;
  bool runs() const { return refusal.empty(); }
};

/// cuBLASLt's FP8 kernels for `shape` (float8 operands of a 16-bit
/// product, unpadded rows of whole 16-byte chunks, `arch` sm_90a) from
/// `fewestRows` rows (kilnc --qdq-cublaslt-rows; 0: where chooseQdqWgmma's
/// default would start; -1: never) when a run reaches them.
QdqCublasLtChoice chooseQdqCublasLt(const QdqGemmShape &shape,
                                    int64_t fewestRows, llvm::StringRef arch);

/// The layout of the kernel that finishes an FP8 Q/DQ product after
/// cuBLASLt (emitQdqFinish): its tile of C a block and its threads.
GemmConfig qdqFinishConfig();

/// The floats of scratch that product takes for runs of up to `mostRows`
/// rows: the sums cuBLASLt writes, then with a norm the rows' statistics.
int64_t qdqFinishFloats(const QdqGemmShape &shape, int64_t mostRows);

/// Appends the kernel `name` that finishes an FP8 Q/DQ product of `shape`
/// after cuBLASLt left its sums in `partials`: each scaled as the Q/DQ
/// GEMM scales its sums, then that GEMM's epilogue and `tail`. It takes
/// what emitQdqGemm's kernel takes, the partials always.
void emitQdqFinish(const QdqGemmShape &shape, const std::string &name,
                   const std::string &rows, int64_t mostRows,
                   const std::string &dims, const QdqGemmTail *tail,
                   llvm::raw_ostream &os);

/// The declaration of the arrival counters of the GEMM family's main
/// kernel `name`, `tiles` of them (one a tile of C of every matrix of the
/// steps it runs split, or with a `norm`; rt::GemmCandidate::arrivals) and
/// with a norm as many for its row tiles, which the module's text must
/// have before the kernel's.
std::string familyArrivalCounters(const std::string &name, uint64_t tiles,
                                  bool norm);

/// Appends the kernels that finish a step after cuBLASLt, named as
/// gemmGeluErfName and gemmWidenName say: each takes (the product, C) and
/// the integers of a split of 1; any grid of one-dimensional blocks.
void emitGemmGeluErf(llvm::raw_ostream &os);
void emitGemmWiden(rt::DType dtype, llvm::raw_ostream &os);

/// Appends the kernel that finishes a step's LayerNorm or RMSNorm after
/// cuBLASLt, named as gemmNormName says: a warp a row (the block a row
/// past 1,024 columns; rt::gemmNormBlocks launches as many), it takes the row
/// cuBLASLt finished (from the sum, or the widened step's 16-bit product,
/// else from C) and normalizes it into C. It takes (C, the norm's scale,
/// its shift or null, the sum or null) and the integers, then epsilon's
/// float bits and 1 for RMSNorm as `long long`s; no dynamic shared memory;
/// any grid of blocks of whole warps.
void emitGemmNorm(rt::DType dtype, bool widen, llvm::raw_ostream &os);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_GEMMEMITTER_H
