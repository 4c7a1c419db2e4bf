//===- KernelConfig.h - kernel configurations as data -----------*- C++ -*-===//
//
// How a generated kernel is laid out (warps, tiles, pipeline stages, the
// instruction form) is decided by one function per kernel family from the
// kernel's shapes and the target's options, kept as a struct that the
// emitter follows and that the plan and `kilnc --report` print. The options
// are kiln-to-cuda's pass options (kilnc's --attention-* flags); nothing in
// the compiler reads the environment to decide what to emit. IREE keeps a
// kernel's lowering configuration apart from the code that emits it in the
// same way. The data is its own library, apart from the CUDA target that
// chooses it, so that passes needing a tile size (kiln-fuse) ask it too.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELCONFIG_KERNELCONFIG_H
#define KILN_KERNELCONFIG_KERNELCONFIG_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class Operation;
} // namespace mlir

namespace kiln {

/// The discardable attribute that records on a kiln.kernel the
/// configuration it was emitted with (AttentionConfig::text()).
inline constexpr llvm::StringLiteral kKernelConfigAttr = "kiln.kernel_config";

/// kiln-to-cuda's overrides of the tensor-core attention kernel's choices
/// (kilnc --attention-*), for benchmarks that time the forms side by side.
/// 0 (and the defaults of the flags) leave a choice to
/// chooseAttentionConfig.
struct AttentionOverrides {
  /// Warps a block: 4 or 8.
  int64_t warps = 0;
  /// Query rows a warp: 16 (one m-tile) or 32 (two).
  int64_t rowsPerWarp = 0;
  /// Hopper's wgmma for both products (fp16/bf16, head sizes 16 to 128 in
  /// powers of two, not the split kernel).
  bool wgmma = false;
  /// Keys a tile: 32 or 64 (mma.sync), 64 or 128 (wgmma).
  int64_t tileKeys = 0;
  /// Buffers each for key and value tiles: 1 or 2.
  int64_t kvStages = 0;
  /// Barriers a key tile with one buffer each: 4, or 2 in
  /// FlashAttention-2's order (and then one buffer each).
  int64_t barriers = 0;
  /// The running maximum moves only when a row passes it by 2^8.
  bool lazyRescale = true;
};

/// The options of the CUDA target's emitters: kiln-to-cuda's pass options.
struct CudaEmitOptions {
  /// Every gather checks its indices at run time; without, out-of-range
  /// indices are clamped.
  bool checkIndices = true;
  /// fp32 matmuls and attention on the tensor cores with TF32 inputs.
  bool allowTf32 = false;
  /// Each float matmul step offers Kiln's GEMM kernels beside cuBLASLt
  /// (rt::MatmulStep::kernels), which the runtime runs only when asked.
  bool gemmKernels = false;
  /// The fewest rows at which an 8-bit Q/DQ GEMM (integer, or float8 of a
  /// 16-bit product) runs on Hopper's wgmma (kilnc --qdq-wgmma-rows); 0
  /// leaves it to chooseQdqWgmma (where its 128 x 128 tiles fill the GPU),
  /// -1 never.
  int64_t qdqWgmmaRows = 0;
  /// The fewest rows at which an FP8 Q/DQ GEMM of a 16-bit product runs on
  /// cuBLASLt's FP8 kernels, then a kernel of the Q/DQ GEMM's epilogue
  /// (kilnc --qdq-cublaslt-rows); 0 leaves it to chooseQdqCublasLt (where
  /// chooseQdqWgmma's default would start), -1 never.
  int64_t qdqCublasLtRows = 0;
  /// The GPU architecture the kernels are built for (NVRTC's, kilnc
  /// --arch): forms of one architecture only (Hopper's wgmma, sm_90a) are
  /// chosen at compile time only for it.
  std::string arch = "sm_90a";
  AttentionOverrides attention;
};

/// The instructions a tensor-core attention kernel issues.
enum class AttentionForm {
  /// mma.sync.m16n8k16 on f16 or bf16 tiles.
  MmaSync,
  /// mma.sync.m16n8k8 on fp32 tiles rounded to TF32.
  MmaSyncTf32,
  /// wgmma.mma_async.m64nNk16 (Hopper), two warpgroups of 64 rows.
  Wgmma,
};

/// How one tensor-core attention kernel is laid out, as chosen by
/// chooseAttentionConfig (lib/Target/CUDA/AttentionConfig.cpp).
struct AttentionConfig {
  AttentionForm form = AttentionForm::MmaSync;
  /// Flash-decoding's split kernel (keys split across blocks).
  bool split = false;
  int64_t warps = 4;
  /// 16-row m-tiles a warp (1 or 2).
  int64_t mTiles = 1;
  /// Keys a key or value tile.
  int64_t tileKeys = 64;
  /// Buffers each for key and value tiles.
  int64_t kvStages = 1;
  /// Barriers a key tile: 4, or 2 (two buffers each, or FlashAttention-2's
  /// order with one).
  int64_t barriers = 4;
  bool lazyRescale = true;

  /// Query rows one block owns: 16 a warp's m-tile (a wgmma warpgroup's
  /// 64 rows are its four warps' m-tiles).
  int64_t queryRows() const { return 16 * mTiles * warps; }

  /// One line: `mma.sync warps=4 m_tiles=2 tile_keys=64 kv_stages=2
  /// barriers=2 lazy_rescale=1`, for the plan and the report.
  std::string text() const;
};

/// The fewest query rows a tensor-core attention block owns under any
/// configuration chooseAttentionConfig returns (four warps of one m-tile):
/// what kiln-fuse asks to judge whether an attention's queries may fit one
/// tile.
inline int64_t fewestAttentionQueryRows() {
  AttentionConfig smallest;
  smallest.warps = 4;
  smallest.mTiles = 1;
  return smallest.queryRows();
}

/// The name of `form` as the plan and the report print it.
const char *attentionFormName(AttentionForm form);

/// The forms of Kiln's own GEMM kernels.
enum class GemmForm : uint8_t {
  /// Tensor-core tiles (GemmEmitter.cpp): a block computes a tileM x tileN
  /// tile of C over its share of K in steps of tileK, its warps laid out
  /// warpsM x warpsN, each warp's part of the tile in mma.sync.m16n8k16
  /// instructions on fragments read by ldmatrix from shared memory, which
  /// cp.async fills two tiles ahead (double buffered).
  Mma,
  /// Decoding's few rows (GemvEmitter.cpp): a block of warpsN warps streams
  /// a tileN-column slab of B over its share of K in 16-byte chunks
  /// straight from global memory, multiplying each by the block's tileM
  /// rows of A in fp32 on the CUDA cores; tileK is the chunk (8 elements).
  Gemv,
  /// Hopper's tensor cores (GemmWgmmaEmitter.cpp): a block of tileM / 64
  /// warpgroups (warpsM = 4 of them each, warpsN = 1) computes a tileM x
  /// tileN tile of C; tensor copies (TMA) bring tiles of tileK = 64 columns
  /// of K into `stages` buffers of shared memory in the 128-byte swizzle,
  /// and wgmma multiplies them from there. The run passes the kernel tensor
  /// maps of A and B (rt::GemmCandidate::tensorMaps). The FP8 Q/DQ GEMM's
  /// Hopper form (QdqWgmmaEmitter.cpp) is this form over float8 bytes:
  /// tileK = 128 bytes, staged by cp.async instead, no tensor maps.
  Wgmma,
  /// fp32's tiles on the CUDA cores (GemmEmitter.cpp): the mma form's
  /// tiles, warps, staging and epilogue, each thread computing the
  /// elements an m16n8 accumulator fragment would give it by fp32 fused
  /// multiply-adds from shared memory, so an fp32 product keeps fp32's
  /// accuracy (no TF32 rounding of its operands).
  Fma,
};

/// How one of Kiln's own GEMM kernels is laid out, as chooseGemmConfigs
/// (lib/Target/CUDA/GemmConfig.cpp) offers it; `form` says what the tiles
/// mean. With splitK > 1, K is split across that many blocks, each writing
/// fp32 partial sums, which a second kernel adds in a fixed order (the
/// result does not depend on scheduling) before the epilogue.
struct GemmConfig {
  GemmForm form = GemmForm::Mma;
  int64_t tileM = 64;
  int64_t tileN = 64;
  int64_t tileK = 32;
  int64_t warpsM = 2;
  int64_t warpsN = 2;
  int64_t splitK = 1;
  /// Shared-memory buffers of K tiles in flight (the wgmma form).
  int64_t stages = 2;

  int64_t threads() const { return 32 * warpsM * warpsN; }
  /// Rows and columns of C one warp computes (the mma and fma forms).
  int64_t warpRows() const { return tileM / warpsM; }
  int64_t warpColumns() const { return tileN / warpsN; }

  /// The name of the candidate (`mma_64x64x32_w2x2_split4`,
  /// `gemv_8x128_w4_split8`, `wgmma_128x128x64_s4_split1`,
  /// `fma_64x64x16_w2x2_split1`): what the plan
  /// and the report print, and what
  /// a run asks for by name (kiln-run --gemm).
  std::string name() const;
  /// The name of the kernel that runs every split count of this layout:
  /// the name without its split (`mma_64x64x32_w2x2`).
  std::string layoutName() const;
};

/// The configuration a kernel of the plan was emitted with.
struct KernelConfig {
  /// The kernel's name in the CUDA source and the plan; for a matmul, the
  /// step's name in the plan (`matmul step N`).
  std::string kernel;
  /// The kiln.kernel (or kiln.matmul) it was emitted from, which
  /// kiln-to-cuda marks with the configuration (kKernelConfigAttr) after
  /// emission.
  mlir::Operation *op = nullptr;
  AttentionConfig attention;
  /// For a matmul: Kiln's GEMM kernels its step may run on besides
  /// cuBLASLt's (empty for attention).
  std::vector<GemmConfig> gemmCandidates;

  /// The attention configuration's text, or `gemm` and the candidates'
  /// names.
  std::string text() const;
};
using KernelConfigs = std::vector<KernelConfig>;

/// Checks the values of `overrides` (warps 4 or 8, and so on); on failure
/// returns the offending option and its allowed values, else "".
std::string checkAttentionOverrides(const AttentionOverrides &overrides);

} // namespace kiln

#endif // KILN_KERNELCONFIG_KERNELCONFIG_H
