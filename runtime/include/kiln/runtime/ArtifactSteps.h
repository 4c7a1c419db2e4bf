//===- ArtifactSteps.h - The steps of a Kiln plan ---------------*- C++ -*-===//
//
// What a compiled model runs, in order on one stream: launches of generated
// kernels, cuBLASLt matmuls and copies, each naming its operands by buffer
// id (`Artifact::buffers`, ArtifactPlan.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACTSTEPS_H
#define KILN_RUNTIME_ARTIFACTSTEPS_H

#include "kiln/runtime/DType.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace rt {

/// Launch of one generated kernel.
struct LaunchStep {
  /// Index into `Artifact::kernelNames`.
  uint32_t kernel = 0;
  /// Grid dimensions in blocks; each at least 1.
  uint32_t grid[3] = {1, 1, 1};
  /// Block dimensions in threads; each at least 1.
  uint32_t block[3] = {1, 1, 1};
  /// Dynamic shared memory in bytes.
  uint32_t sharedBytes = 0;
  /// Buffer ids, each passed to the kernel as a device pointer, in order.
  std::vector<uint32_t> args;
  /// The symbolic dims the launch depends on: bit d for dim d of
  /// `SymbolicPlan::dims` where the kernel's code reads it or its grid
  /// follows it (every kernel takes every dim). All bits where unknown. A
  /// CUDA graph updated in place for new dims updates only the launches
  /// that depend on one that changed.
  uint64_t dimsRead = ~uint64_t(0);
};

/// The activation a matmul applies last (cuBLASLt's epilogue).
enum class MatmulActivation : uint8_t {
  None, ///< The product as it is.
  Relu, ///< max(x, 0).
  /// The tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
  /// which cuBLASLt's GELU epilogue computes.
  Gelu,
  /// GELU's exact form 0.5 x (1 + erf(x / sqrt(2))), float32 steps only:
  /// cuBLASLt has no such epilogue, so after cuBLASLt (its epilogue then
  /// the bias and the residual alone) the step's `finishKernel` applies
  /// it; Kiln's kernels apply it in their epilogue.
  GeluErf,
};

/// The last valid `MatmulActivation`, for range checks of decoded values.
constexpr MatmulActivation kLastMatmulActivation = MatmulActivation::GeluErf;

/// A buffer id that names no buffer (a matmul without a bias).
constexpr uint32_t kNoBuffer = UINT32_MAX;

/// A kernel index that names no kernel (a GEMM candidate without a second
/// kernel).
constexpr uint32_t kNoKernel = UINT32_MAX;

/// One of Kiln's own GEMM kernels that may run a matmul step in place of
/// cuBLASLt (lib/Target/CUDA/GemmEmitter.cpp, for float32, float16 and
/// bfloat16).
/// The main kernel takes (A, B, C, bias, residual, partials) as pointers
/// (bias and residual null when the step has none; partials the split's
/// float scratch, null without a split unless the step has a norm), then as
/// `long long` the step's extents and strides in MatmulField order, its
/// activation (MatmulActivation's value) and `splitK`; it runs on a grid of
/// (ceil(n / tileN), ceil(m / tileM), batch * outerBatch * splitK) blocks
/// of `threads`. With splitK > 1 it writes splitK partial products of
/// batch * outerBatch * m * n floats each (matrix-major: matrix j's split s
/// at (j * splitK + s) * m * n), and the last block to arrive at a tile of
/// C adds them in split order and applies the epilogue, counting arrivals
/// in counters of its module (`arrivals` of them, one a tile of every
/// matrix). For a step with a norm (MatmulStep::hasNorm) the kernel also
/// takes (normScale, normShift or null, normSum or null) after the partials
/// and (epsilon's float bits, 1 for RMSNorm) after the integers, stores its
/// sums split or not, and finishes the norm itself: past the splits'
/// partials, 2 floats for each row of each matrix and column tile hold
/// its statistics, and the last column tile of a row tile to arrive
/// normalizes it; the step's normKernel then runs only after cuBLASLt.
/// Operands are read in chunks of 8 elements: A's and B's rows and batch
/// strides must be multiples of 8 elements, and addresses of 16 bytes. alpha is
/// 1, and beta 1 with a residual, else 0.
struct GemmCandidate {
  /// The configuration's name (`mma_64x64x32_w2x2_split4`), by which a run
  /// asks for it.
  std::string name;
  /// Index into `Artifact::kernelNames` of the main kernel.
  uint32_t kernel = 0;
  /// The main kernel's arrival counters: at least its tiles of C at the
  /// step's extents (ceil(m / tileM) * ceil(n / tileN) * batch *
  /// outerBatch); 0 when splitK is 1 and the step has no norm.
  uint32_t arrivals = 0;
  /// Rows and columns of C a block computes.
  uint32_t tileM = 0;
  uint32_t tileN = 0;
  /// Threads a block.
  uint32_t threads = 0;
  /// Blocks across K.
  uint32_t splitK = 1;
  /// Dynamic shared memory of the main kernel in bytes (up to the 227 KiB
  /// an sm_90 block may opt in to).
  uint32_t sharedBytes = 0;
  /// Whether the main kernel takes, after its integers, tensor maps of A
  /// and B (`const __grid_constant__` 128-byte CUtensorMaps; the host
  /// backend's kiln_host_tensor_map), which the run encodes for its
  /// operands in the 128-byte swizzle: A stored m x k as dims {k, m} in
  /// boxes of {64, tileM}; B stored n x k as {k, n} in boxes of {64,
  /// tileN}, stored k x n as {n, k} in boxes of {64, 64}
  /// (lib/Target/CUDA/GemmWgmmaEmitter.cpp). Such a kernel runs one matrix
  /// (batch 1) with A not transposed.
  bool tensorMaps = false;
  /// Whether the kernel computes the step and the launch step after it,
  /// which finishes the step after cuBLASLt (an FP8 Q/DQ product's epilogue
  /// after its float8 sums; lib/Target/CUDA/PlanQdqMatmuls.cpp): it takes
  /// that launch's arguments (its buffers, then the dims) in place of the
  /// step's, over gemmGrid's blocks, and the run then skips that launch.
  /// Such a candidate is timed against cuBLASLt and that launch by default
  /// (the runtime's `gemm` option empty), and is the run's way when
  /// cuBLASLt has no algorithm for the step. Its arrival counters, where
  /// it has any, cover its tiles.
  bool withNextLaunch = false;
};

/// A (batched) GEMM run by cuBLASLt: for each batch i, row-major
/// C_i (m x n) = act(alpha * op(A_i) * op(B_i) + beta * R_i + bias), where R_i
/// is the residual's matrix i when the step has one (laid out as C), else
/// C_i's previous contents, op
/// transposes when the flag is set, the optional bias (n elements) is added
/// to every row, and `activation` is applied last, all in fp32 before C is
/// rounded to its type. A_i is stored row-major as m x k (k x m when
/// `transA`), B_i as k x n (n x k when `transB`). Accumulation is in fp32,
/// or fp64 for F64 matrices.
/// The batch has two levels: `outerBatch` repetitions of a strided batch of
/// `batch` matrices, which expresses any broadcast of two batch patterns
/// (e.g. [2, 1] x [1, 3] batch dims); matrix (o, i) of X starts at element
/// o * outerStrideX + i * strideX.
struct MatmulStep {
  /// Element type of A, B and C; F32, F16, BF16 or F64.
  DType dtype = DType::F32;
  /// Whether A is stored transposed (k x m).
  bool transA = false;
  /// Whether B is stored transposed (n x k).
  bool transB = false;
  /// Number of matrices in the batch; at least 1.
  int64_t batch = 1;
  /// Rows of C; at least 1.
  int64_t m = 1;
  /// Columns of C; at least 1.
  int64_t n = 1;
  /// Contracted extent; at least 1.
  int64_t k = 1;
  /// Elements between consecutive A matrices; 0 broadcasts one matrix.
  int64_t strideA = 0;
  /// Elements between consecutive B matrices; 0 broadcasts one matrix.
  int64_t strideB = 0;
  /// Elements between consecutive C matrices; at least m * n if batch > 1.
  int64_t strideC = 0;
  /// Repetitions of the inner batch; at least 1.
  int64_t outerBatch = 1;
  /// Elements between consecutive inner batches of A; 0 broadcasts.
  int64_t outerStrideA = 0;
  /// Elements between consecutive inner batches of B; 0 broadcasts.
  int64_t outerStrideB = 0;
  /// Elements between consecutive inner batches of C; large enough that no
  /// two C matrices overlap.
  int64_t outerStrideC = 0;
  /// Buffer id of A.
  uint32_t a = 0;
  /// Buffer id of B.
  uint32_t b = 0;
  /// Buffer id of C, read (when beta != 0) and written.
  uint32_t c = 0;
  /// Scale of the product.
  float alpha = 1.0f;
  /// Scale of the residual, or of the previous contents of C without one.
  float beta = 0.0f;
  /// Buffer id of a residual the product adds (beta * R, cuBLASLt's C with
  /// the step's C as its D), laid out as C; or kNoBuffer.
  uint32_t residual = kNoBuffer;
  /// Buffer id of the bias (n elements of `dtype`), or kNoBuffer.
  uint32_t bias = kNoBuffer;
  /// Applied to every element last.
  MatmulActivation activation = MatmulActivation::None;
  /// Whether C is float32 where the product is 16-bit: the epilogue ends
  /// in the cast of the 16-bit result to the model's fp32 output, and C
  /// holds each 16-bit value widened. After cuBLASLt the product (its
  /// epilogue applied) lands in 16 bits in the sum where the step has one
  /// (normSum), else in the runtime's scratch, laid out as C
  /// (widenedProductElements), and the norm kernel, else `finishKernel`,
  /// widens it into C.
  bool widen = false;
  /// The kernel that finishes the step after cuBLASLt where neither
  /// cuBLASLt nor a norm kernel does, else kNoKernel: with GeluErf it
  /// applies the GELU (before a norm); with `widen` and no norm it widens
  /// the product into C. It takes (the product cuBLASLt left, C) as
  /// pointers (the same for GeluErf: in place) and the integers of a split
  /// of 1; any grid of one-dimensional blocks.
  uint32_t finishKernel = kNoKernel;
  /// A LayerNorm, or with `normRms` an RMSNorm, of every row of the
  /// result, applied last (kiln-fuse's GEMM kernel with a norm epilogue;
  /// float32, float16 and bfloat16): the buffer ids of its scale and its shift
  /// (n elements of `dtype` each; the shift may be kNoBuffer, and is for an
  /// RMSNorm), or kNoBuffer without one. On cuBLASLt the step then runs in
  /// two, the second `normKernel`, which normalizes each row into C: cuBLASLt
  /// applies the epilogue as without a norm and writes its result to
  /// productBuffer() (`normSum` where there is one, which later steps
  /// read), and the norm kernel reads that buffer's rows (a widened step's
  /// 16-bit product from the runtime's scratch). It takes (C, scale, shift,
  /// sum or the product's scratch or null) as pointers, the integers a
  /// GemmCandidate's kernels take, then `normEpsilon`'s float bits and
  /// `normRms` as `long long`s; blocks of 256 threads, gemmNormBlocks' grid
  /// (a warp a row of up to 1,024 columns, else the block), no dynamic
  /// shared memory. On one of `kernels` the kernel finishes the norm
  /// itself (GemmCandidate).
  uint32_t normScale = kNoBuffer;
  uint32_t normShift = kNoBuffer;
  float normEpsilon = 0.0f;
  uint32_t normKernel = kNoKernel;
  bool normRms = false;
  /// Buffer id of the sum the norm normalizes, laid out as C, where later
  /// steps read it too (a pre-norm block's residual stream), or kNoBuffer.
  /// The norm then normalizes the sum as written, rounded to `dtype`.
  uint32_t normSum = kNoBuffer;
  /// Whether the step ends in a LayerNorm or an RMSNorm.
  bool hasNorm() const { return normScale != kNoBuffer; }
  /// Where the product with its epilogue up to the norm lands: the sum a
  /// norm also writes, else C.
  uint32_t productBuffer() const { return normSum != kNoBuffer ? normSum : c; }
  /// F32 only: A and B enter the tensor cores as TF32 (8-bit exponent,
  /// 10-bit mantissa, rounded to nearest with ties away from zero), the
  /// products accumulating in fp32 (cuBLASLt's
  /// CUBLAS_COMPUTE_32F_FAST_TF32). Off unless compiled with --allow-tf32.
  bool tf32 = false;
  /// A and B are float8 E4M3FN values, a byte each (an FP8 Q/DQ product's
  /// activations and weights), whose products are summed in fp32 into C,
  /// of `dtype` F32, unscaled: a kernel after the step applies the scales
  /// and the rest of the epilogue (lib/Target/CUDA/PlanQdqMatmuls.cpp).
  /// Such a step multiplies one matrix (batch and outerBatch 1), A stored
  /// m x k and B n x k (`transB`: cuBLASLt's FP8 kernels take both
  /// operands K-major), k a multiple of 16, alpha 1 and beta 0, without a
  /// bias, residual, activation, norm, widening or finish kernel, and GEMM
  /// kernels only of those that take the next launch (GemmCandidate::
  /// withNextLaunch).
  bool float8 = false;
  /// The element type of A and B.
  DType operandDtype() const { return float8 ? DType::F8E4M3FN : dtype; }
  /// Kiln's own kernels that compute the same step, which a run may choose
  /// in place of cuBLASLt's (runtime/lib/MatmulChoice.cpp).
  std::vector<GemmCandidate> kernels;
  /// Whether one of `kernels` takes the launch after the step too.
  bool takesNextLaunch() const {
    for (const GemmCandidate &g : kernels)
      if (g.withNextLaunch)
        return true;
    return false;
  }
};

/// A device-to-device copy of the first `bytes` bytes of `src` to `dst`.
struct CopyStep {
  /// Buffer id of the source.
  uint32_t src = 0;
  /// Buffer id of the destination; must not overlap the source.
  uint32_t dst = 0;
  /// Bytes to copy; at most the size of either buffer.
  uint64_t bytes = 0;
};

/// One step of the plan; `kind` says which member is meaningful.
struct Step {
  /// Which of the members below this step uses.
  enum class Kind : uint8_t { Launch, Matmul, Copy };
  /// The step kind.
  Kind kind = Kind::Launch;
  /// Meaningful when `kind == Kind::Launch`.
  LaunchStep launch;
  /// Meaningful when `kind == Kind::Matmul`.
  MatmulStep matmul;
  /// Meaningful when `kind == Kind::Copy`.
  CopyStep copy;

  /// Returns a launch step.
  static Step ofLaunch(LaunchStep s) {
    Step step;
    step.kind = Kind::Launch;
    step.launch = std::move(s);
    return step;
  }
  /// Returns a matmul step.
  static Step ofMatmul(const MatmulStep &s) {
    Step step;
    step.kind = Kind::Matmul;
    step.matmul = s;
    return step;
  }
  /// Returns a copy step.
  static Step ofCopy(const CopyStep &s) {
    Step step;
    step.kind = Kind::Copy;
    step.copy = s;
    return step;
  }
};

/// The last valid `Step::Kind`, for range checks of decoded values.
constexpr Step::Kind kLastStepKind = Step::Kind::Copy;

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_ARTIFACTSTEPS_H
