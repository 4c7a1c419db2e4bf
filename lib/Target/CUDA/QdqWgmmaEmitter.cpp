//===- QdqWgmmaEmitter.cpp - the FP8 GEMM on Hopper's float8 wgmma --------===//
//
// The Q/DQ GEMM's Hopper form, for float8 E4M3FN activations times float8
// E4M3FN weights (NVIDIA ModelOpt's FP8): Hopper's float8 tensor-core rate
// is wgmma's (`.m64nNk32.f32.e4m3.e4m3`, twice the 16-bit rate), which
// the mma.sync form (QdqGemmEmitter.cpp) cannot reach: sm_90 has no float8
// mma.sync, so that form widens every byte to f16.
//
// A block of tileM / 64 warpgroups owns a tileM x tileN tile of C over its
// split's share of K, in k tiles of 128 bytes (128 float8 values):
// - every thread copies 16-byte chunks of A's rows and of the weights'
//   packed rows (kiln.dequantize's bytes: n rows of K, K-major as the ISA
//   requires of 8-bit operands) by cp.async into `stages` buffers, each
//   row 128 bytes with its chunks in the 128-byte swizzle (chunk c of row r
//   at c ^ r % 8), zeros past m, n and k. The copies need no tensor maps,
//   so the kernel is a plain launch step of the plan like the mma form;
// - each warpgroup issues four wgmma k32 a tile on swizzled descriptors
//   into `part` and waits for them; `part` is then added into the fp32
//   accumulators. The float8 tensor cores keep fewer bits than fp32 while
//   they sum (DeepSeek-V3 measured about 14 on Hopper and adds into fp32
//   registers every 128 values: the interval taken here), so this form
//   runs only 16-bit products, whose contract is rel-L2 1e-2
//   (chooseQdqWgmma); fp32 products keep the mma.sync form's exact
//   products;
// - each sum is scaled by the activations' and its column's scales; the
//   epilogue (bias, residual, activation, the tail), a split's partials
//   and its combine are the mma form's (gemm::qdqValues).
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"
#include "GemmParts.h"

#include "kiln/Target/CUDA/TensorCores.h"

#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>

namespace kiln {

namespace {

using gemm::substitute;

/// A wgmma tile's columns: wgmma's N, the accumulators' width.
constexpr int64_t kTileN = 128;
/// Shared-memory buffers of k tiles: three in flight while one is read.
constexpr int64_t kStages = 4;
/// Blocks of 128 x 128 that fill the GPU: one an SM (a block takes 129
/// KiB of shared memory).
constexpr int64_t kBlocksWanted = kGemmTargetSMs;
/// k tiles a split keeps at least (the packed kernels' rule).
constexpr int64_t kLeastTilesPerSplit = 4;

constexpr const char *kWgmmaKernel = R"cuda(
// Kiln FP8 GEMM $NAME on Hopper's float8 tensor cores: a $TILE_M x $TILE_N tile of C
// a block, $WARPGROUPS warpgroup(s) of 64 rows; K in tiles of 128 bytes staged
// by cp.async into $STAGES buffers in the 128-byte swizzle; $SPLIT splits of K.
extern "C" __global__ void __launch_bounds__($THREADS) $NAME(
    const unsigned char *__restrict__ a, const unsigned char *__restrict__ packed,
    const $ELEMENT *__restrict__ scales, const $A_ELEMENT *__restrict__ a_scale$BIAS_PARAMETER$RESIDUAL_PARAMETER$TAIL_PARAMETERS,
    $C_TYPE *__restrict__ c$PARTIALS_PARAMETER$DIMS) {
  kiln_pdl_enter();
  const long long m = $EXTENT_M, n = $EXTENT_N, k = $EXTENT_K;
  const long long row_bytes = $ROW_BYTES;
  // Stage s: A's $TILE_M rows of 128 bytes, then B's $TILE_N; each starts on
  // the swizzle's 1024-byte pattern, which the dynamic array is aligned to.
  KILN_DYNAMIC_SHARED(smem_raw, $SHARED_BYTES);
  unsigned char *smem = (unsigned char *)(((unsigned long long)smem_raw + 1023) & ~1023ull);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, group = warp >> 2;
  const long long row0 = (long long)blockIdx.y * $TILE_M, col0 = (long long)blockIdx.x * $TILE_N;
  const long long split = blockIdx.z;
  const long long k_tiles = (k + 127) / 128;
  const long long per_split = (k_tiles + $SPLIT - 1) / $SPLIT;
  const long long kt_begin = split * per_split;
  const long long kt_end = kt_begin + per_split < k_tiles ? kt_begin + per_split : k_tiles;
  const int tiles = kt_begin < kt_end ? (int)(kt_end - kt_begin) : 0;
  // The first $STAGES - 1 tiles start streaming, a group each (empty past
  // the split's tiles, so that every wait below counts the same groups).
  for (int i = 0; i < $STAGES - 1; ++i) {
    if (i < tiles) {
      const int st = i;
      const long long kn = kt_begin + i;
$STAGE_TILE
    }
    kiln_cp_async_commit();
  }
  float acc[$N8][4], part[$N8][4];
  #pragma unroll
  for (int j = 0; j < $N8; ++j)
    #pragma unroll
    for (int r = 0; r < 4; ++r)
      acc[j][r] = part[j][r] = 0.0f;
  for (int t = 0; t < tiles; ++t) {
    const int s = t % $STAGES;
    // Tile t has landed (only the $STAGES - 2 groups after it may still be
    // in flight); each thread fences its copies for wgmma's async proxy
    // before the barrier that shows them to all.
    kiln_cp_async_wait<$IN_FLIGHT>();
    kiln_fence_proxy_async();
    __syncthreads();
    // Every warpgroup waited for tile t - 1's products before the barrier:
    // its buffer takes the tile $STAGES - 1 ahead.
    if (t + $STAGES - 1 < tiles) {
      const int st = (t + $STAGES - 1) % $STAGES;
      const long long kn = kt_begin + t + $STAGES - 1;
$STAGE_TILE
    }
    kiln_cp_async_commit();
    const unsigned char *a_tile = smem + s * $STAGE_BYTES + group * 64 * 128;
    const unsigned char *b_tile = smem + s * $STAGE_BYTES + $A_BYTES;
    kiln_wgmma_hold(part);
    kiln_wgmma_fence();
    // Four k32 steps of 32 bytes; the first starts the tile's sums afresh.
    #pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      $WGMMA(part, kiln_wgmma_desc_swizzled(a_tile + kk * 32, 16, 1024, 128),
             kiln_wgmma_desc_swizzled(b_tile + kk * 32, 16, 1024, 128), kk);
    kiln_wgmma_commit();
    kiln_wgmma_wait<0>();
    kiln_wgmma_hold(part);
    // The tile's 128 products a sum join the fp32 accumulators.
    #pragma unroll
    for (int j = 0; j < $N8; ++j)
      #pragma unroll
      for (int r = 0; r < 4; ++r)
        acc[j][r] += part[j][r];
  }
  // Accumulator i of columns 8 j.. is row lane / 4 (+ 8 for i >= 2) of the
  // warp's 16, column 2 (lane % 4) + i % 2.
  const float activation_scale = $A_TO_FLOAT(a_scale[0]);
  const $ELEMENT *r_mat = $R_MAT;$BIAS_LOCAL
  $C_TYPE *c_mat = c;
  #pragma unroll
  for (int j = 0; j < $N8; ++j)
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
      const long long row = row0 + group * 64 + (warp & 3) * 16 + (lane >> 2) + (i >> 1) * 8;
      const long long col = col0 + j * 8 + (lane & 3) * 2 + (i & 1);
      if (row >= m || col >= n)
        continue;
      float v = __fmul_rn(__fmul_rn(acc[j][i], activation_scale), $TO_FLOAT(scales[col]));
$STORE
    }
}
)cuda";

/// The copies of k tile `kn` into buffer `st`: A's rows, then the weights'
/// packed rows, 16-byte chunks in the 128-byte swizzle (K is whole chunks;
/// zeros past m, n and k, also where a packed row runs on past K).
constexpr const char *kStageTile =
    R"cuda(      unsigned char *stage = smem + st * $STAGE_BYTES;
      const long long k0 = kn * 128;
      #pragma unroll
      for (int i = 0; i < $A_CHUNKS; ++i) {
        const int e = tid + i * $THREADS, r = e >> 3, ch = e & 7;
        const long long gr = row0 + r, gk = k0 + ch * 16;
        const unsigned bytes = gr < m && gk < k ? 16u : 0u;
        kiln_cp_async_16(stage + r * 128 + ((ch ^ (r & 7)) << 4), bytes ? a + gr * k + gk : a, bytes);
      }
      #pragma unroll
      for (int i = 0; i < $B_CHUNKS; ++i) {
        const int e = tid + i * $THREADS, r = e >> 3, ch = e & 7;
        const long long col = col0 + r, at = k0 + ch * 16;
        const unsigned bytes = col < n && at < k ? 16u : 0u;
        kiln_cp_async_16(stage + $A_BYTES + r * 128 + ((ch ^ (r & 7)) << 4),
                         bytes ? packed + col * row_bytes + at : packed, bytes);
      })cuda";

} // namespace

QdqWgmmaChoice chooseQdqWgmma(const QdqGemmShape &shape, int64_t fewestRows) {
  QdqWgmmaChoice choice;
  if (!shape.float8)
    choice.refusal = "Hopper's form multiplies float8 operands";
  else if (shape.dtype != rt::DType::F16 && shape.dtype != rt::DType::BF16)
    choice.refusal = "the float8 tensor cores sum with fewer bits than an "
                     "fp32 product's contract allows";
  else if (fewestRows < 0)
    choice.refusal = "--fp8-wgmma-rows=-1";
  if (!choice.refusal.empty())
    return choice;
  int64_t columnTiles = llvm::divideCeil(shape.n, kTileN);
  int64_t kTiles = llvm::divideCeil(shape.k, 128);
  int64_t mostSplits = std::max<int64_t>(
      1, int64_t(llvm::bit_floor(uint64_t(
             std::min(kGemmMostSplits, kTiles / kLeastTilesPerSplit)))));
  // By default from the rows whose 128 x 128 tiles, split as far as K
  // allows, fill the GPU: below, the mma form's smaller tiles do better.
  if (fewestRows == 0)
    fewestRows =
        128 * llvm::divideCeil(kBlocksWanted, columnTiles * mostSplits);
  fewestRows = std::max(fewestRows, shape.leastM);
  if (shape.upperM < fewestRows) {
    choice.refusal = "no run has " + std::to_string(fewestRows) + " rows";
    return choice;
  }
  int64_t tileM = shape.upperM >= 128 ? 128 : 64;
  GemmConfig config = {GemmForm::Wgmma,  tileM, kTileN, 128,
                       4 * (tileM / 64), 1,     1,      kStages};
  int64_t blocks = llvm::divideCeil(fewestRows, tileM) * columnTiles;
  while (blocks * config.splitK < kBlocksWanted &&
         config.splitK * 2 <= mostSplits)
    config.splitK *= 2;
  choice.config = config;
  choice.fewestRows = fewestRows;
  return choice;
}

int64_t qdqWgmmaSharedBytes(const GemmConfig &config) {
  // Each stage's rows of 128 bytes, and the slack that aligns the first to
  // 1024 bytes.
  return config.stages * (config.tileM + config.tileN) * 128 + 1024;
}

void emitQdqWgmmaGemm(const QdqGemmShape &shape, const GemmConfig &config,
                      const std::string &name, const std::string &rows,
                      const std::string &dims, const QdqGemmTail *tail,
                      llvm::raw_ostream &os) {
  assert(shape.float8 && config.form == GemmForm::Wgmma &&
         config.tileN == kTileN && config.tileK == 128 &&
         config.tileM % 64 == 0 && config.tileM <= 128 && config.stages >= 2 &&
         "the FP8 GEMM's Hopper layout");
  auto str = [](int64_t v) { return std::to_string(v); };
  std::vector<std::pair<std::string, std::string>> values =
      gemm::qdqValues(shape, config.splitK, name, rows, dims, tail);
  int64_t threads = config.threads();
  values.insert(values.end(),
                {{"$STAGE_TILE", kStageTile},
                 {"$THREADS", str(threads)},
                 {"$WARPGROUPS", str(config.tileM / 64)},
                 {"$TILE_M", str(config.tileM)},
                 {"$TILE_N", str(config.tileN)},
                 {"$STAGES", str(config.stages)},
                 {"$IN_FLIGHT", str(config.stages - 2)},
                 {"$STAGE_BYTES", str((config.tileM + config.tileN) * 128)},
                 {"$A_BYTES", str(config.tileM * 128)},
                 {"$A_CHUNKS", str(config.tileM * 8 / threads)},
                 {"$B_CHUNKS", str(config.tileN * 8 / threads)},
                 {"$SHARED_BYTES", str(qdqWgmmaSharedBytes(config))},
                 {"$N8", str(config.tileN / 8)},
                 {"$WGMMA", wgmmaE4M3FunctionName(config.tileN)}});
  os << cudaWgmmaE4M3Function(config.tileN);
  os << substitute(kWgmmaKernel, values);
  if (config.splitK > 1)
    os << substitute(gemm::kPackedCombineKernel, values);
}

} // namespace kiln
