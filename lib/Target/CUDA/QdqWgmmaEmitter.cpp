//===- QdqWgmmaEmitter.cpp - 8-bit Q/DQ products on Hopper's wgmma --------===//
//
// The Q/DQ GEMM's Hopper form: 8-bit activations times 8-bit weights on
// wgmma's k32 forms, which run at twice the 16-bit rate, as the mma.sync
// form (QdqGemmEmitter.cpp) cannot for float8 (sm_90 has no float8
// mma.sync, so that form widens every byte to f16) and does through the
// older instruction for integers. Two kinds:
//
// - float8 E4M3FN both (NVIDIA ModelOpt's FP8), `.f32.e4m3.e4m3`: each
//   tile's four products go to `part`, are waited for and added into the
//   fp32 accumulators. The float8 tensor cores keep fewer bits than fp32
//   while they sum (DeepSeek-V3 measured about 14 on Hopper and adds into
//   fp32 registers every 128 values: the interval taken here), so this kind
//   runs only 16-bit products, whose contract is rel-L2 1e-2
//   (chooseQdqWgmma); fp32 products keep the mma.sync form's exact ones;
// - integers (onnxruntime's quantize_static), `.s32` of .u8 or .s8
//   activations (read as they are: no flip) and the weights' bytes as .u8
//   (kiln.dequantize's q + 128 for signed weights), exact 32-bit sums for K
//   up to 32768; the zero points come out through each row's sum of A (A
//   times a tile of ones, n8) and each column's sum of the weights (the
//   weights' rows as an A times the ones), as integerValues says.
//
// A block of tileM / 64 warpgroups owns a tileM x tileN tile of C over its
// split's share of K, in k tiles of 128 bytes:
// - every thread copies 16-byte chunks of A's rows and of the weights'
//   packed rows (n rows of K, K-major as the ISA requires of 8-bit
//   operands) by cp.async into `stages` buffers, each row 128 bytes with
//   its chunks in the 128-byte swizzle (chunk c of row r at c ^ r % 8),
//   zeros past m, n and k. The copies need no tensor maps, so the kernel is
//   a plain launch step of the plan like the mma form;
// - each warpgroup issues four wgmma k32 a tile on swizzled descriptors
//   and waits for them before the next tile's barrier, which frees the
//   stage for the tile `stages - 1` ahead;
// - each sum is scaled by the activations' and its column's scales; the
//   epilogue (bias, residual, activation, the tail), a split's partials
//   and their finish are the mma form's (gemm::qdqValues).
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
/// k tiles a split keeps at least (the packed kernels' rule).
constexpr int64_t kLeastTilesPerSplit = 4;
/// The most K of the integer form: a sum of that many products of unsigned
/// bytes (up to 255 x 255 each) still fits 32 bits.
constexpr int64_t kMostIntegerK = 32768;

constexpr const char *kWgmmaKernel = R"cuda(
// Kiln $KIND GEMM $NAME on Hopper's 8-bit tensor cores ($INSTRUCTION): a
// $TILE_M x $TILE_N tile of C a block, $WARPGROUPS warpgroup(s) of 64 rows; K in tiles
// of 128 bytes staged by cp.async into $STAGES buffers in the 128-byte swizzle;
// $SPLIT splits of K.
extern "C" __global__ void __launch_bounds__($THREADS) $NAME(
    const unsigned char *__restrict__ a, const unsigned char *__restrict__ packed,
    const $ELEMENT *__restrict__ scales, const $A_ELEMENT *__restrict__ a_scale$A_ZERO_PARAMETER$W_ZERO_PARAMETER$BIAS_PARAMETER$RESIDUAL_PARAMETER$TAIL_PARAMETERS$NORM_PARAMETERS,
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
  const int tiles = kt_begin < kt_end ? (int)(kt_end - kt_begin) : 0;$ONES_FILL
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
  $ACCUMULATOR acc[$N8][4]$SECOND_ACCUMULATORS;
  #pragma unroll
  for (int j = 0; j < $N8; ++j)
    #pragma unroll
    for (int r = 0; r < 4; ++r)
      acc[j][r] = $ZEROS;$SUMS_DECLARATION
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
$PRODUCTS
  }
$AFTER_LOOP
  // Accumulator i of columns 8 j.. is row lane / 4 (+ 8 for i >= 2) of the
  // warp's 16, column 2 (lane % 4) + i % 2.
  const float activation_scale = $A_TO_FLOAT(a_scale[0]);$TILE_LOCALS
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
$TILE_VALUE
$STORE
    }$ARRIVALS
}
)cuda";

/// Float8: each tile's four products into `part`, waited for and added
/// into the fp32 accumulators.
constexpr const char *kFloat8Products = R"cuda(    kiln_wgmma_hold(part);
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
        acc[j][r] += part[j][r];)cuda";

/// Integers: exact 32-bit sums straight into the accumulators, with each
/// row's sum of A (A times a B of ones) and, for the activations' zero
/// point, each column's sum of the weights (the weights' rows as an A
/// times the ones).
constexpr const char *kIntegerProducts = R"cuda(    kiln_wgmma_hold(acc);
    kiln_wgmma_hold(row_sum);$HOLD_COLUMN_SUMS
    kiln_wgmma_fence();
    #pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const kiln_smem_desc a_desc = kiln_wgmma_desc_swizzled(a_tile + kk * 32, 16, 1024, 128);
      $WGMMA(acc, a_desc, kiln_wgmma_desc_swizzled(b_tile + kk * 32, 16, 1024, 128), 1);
      $ROW_SUM_WGMMA(row_sum, a_desc, ones_desc, 1);$COLUMN_SUM_WGMMA
    }
    kiln_wgmma_commit();
    kiln_wgmma_wait<0>();
    kiln_wgmma_hold(acc);
    kiln_wgmma_hold(row_sum);$HOLD_COLUMN_SUMS)cuda";

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

QdqWgmmaChoice chooseQdqWgmma(const QdqGemmShape &shape, int64_t fewestRows,
                              llvm::StringRef arch) {
  QdqWgmmaChoice choice;
  // Off Hopper the form would run its mma.sync fallback in 129 KiB of
  // shared memory, which smaller GPUs refuse at load.
  if (arch != "sm_90a")
    choice.refusal = "wgmma is sm_90a's, the target " + arch.str() + "'s not";
  else if (shape.float8 && shape.dtype != rt::DType::F16 &&
           shape.dtype != rt::DType::BF16)
    choice.refusal = "the float8 tensor cores sum with fewer bits than an "
                     "fp32 product's contract allows";
  else if (!shape.float8 && shape.k > kMostIntegerK)
    choice.refusal = "K = " + std::to_string(shape.k) + ": sums of more than " +
                     std::to_string(kMostIntegerK) +
                     " products of unsigned bytes could leave 32 bits";
  else if (fewestRows < 0)
    choice.refusal = "--qdq-wgmma-rows=-1";
  if (!choice.refusal.empty())
    return choice;
  int64_t columnTiles = llvm::divideCeil(shape.n, kTileN);
  int64_t kTiles = llvm::divideCeil(shape.k, 128);
  int64_t mostSplits = std::max<int64_t>(
      1, int64_t(llvm::bit_floor(uint64_t(
             std::min(kGemmMostSplits, kTiles / kLeastTilesPerSplit)))));
  // By default from the rows whose 128 x 128 tiles, split as far as K
  // allows, fill the GPU, a block an SM (a block takes 129 KiB of shared
  // memory): below, the mma form's smaller tiles do better.
  if (fewestRows == 0)
    fewestRows =
        128 * llvm::divideCeil(kGemmTargetSMs, columnTiles * mostSplits);
  fewestRows = std::max(fewestRows, shape.leastM);
  if (shape.upperM < fewestRows) {
    choice.refusal = "no run has " + std::to_string(fewestRows) + " rows";
    return choice;
  }
  int64_t tileM = shape.upperM >= 128 ? 128 : 64;
  GemmConfig config = {GemmForm::Wgmma,  tileM, kTileN, 128,
                       4 * (tileM / 64), 1,     1,      kStages};
  int64_t blocks = llvm::divideCeil(fewestRows, tileM) * columnTiles;
  while (blocks * config.splitK < kGemmTargetSMs &&
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

namespace {

/// The placeholders of the float8 form: products promoted to fp32 each
/// tile, each sum scaled.
std::vector<std::pair<std::string, std::string>>
float8Values(const GemmConfig &config) {
  return {{"$KIND", "FP8"},
          {"$INSTRUCTION", "wgmma .e4m3, each tile's sums added in fp32"},
          {"$ONES_FILL", ""},
          {"$ACCUMULATOR", "float"},
          {"$SECOND_ACCUMULATORS", ", part[$N8][4]"},
          {"$ZEROS", "part[j][r] = 0.0f"},
          {"$SUMS_DECLARATION", ""},
          {"$PRODUCTS", kFloat8Products},
          {"$WGMMA", wgmmaE4M3FunctionName(config.tileN)},
          {"$AFTER_LOOP", ""},
          {"$TILE_LOCALS", ""},
          {"$A_ZERO_PARAMETER", ""},
          {"$W_ZERO_PARAMETER", ""},
          {"$TILE_VALUE", "      float v = __fmul_rn(__fmul_rn(acc[j][i], "
                          "activation_scale), $TO_FLOAT(scales[col]));"}};
}

/// The placeholders of the integer form: A .u8 or .s8, the weights' bytes
/// .u8 (kiln.dequantize's q + 128 for signed weights, whose zero point is
/// then 128; their own zero points otherwise), and
///   sum_k (q_a - z_a)(b - z_b) = sum_k q_a b - z_b sum_k q_a - z_a sum_k b
///                                + K z_a z_b
/// from the products, the rows' sums of A and (where z_a is not known to
/// be 0) the columns' sums of the weights.
std::vector<std::pair<std::string, std::string>>
integerValues(const QdqGemmShape &shape, const GemmConfig &config) {
  bool columnSums = shape.zeroPoint;
  std::string scaleElement = gemm::spellingOf(shape.scaleDtype).type;
  return {
      {"$KIND", "integer"},
      {"$INSTRUCTION", std::string("wgmma .s32 of ") +
                           (shape.unsignedActivations ? ".u8" : ".s8") +
                           " A and .u8 B, exact"},
      {"$ONES_FILL",
       "\n  // Ones (8 rows of 32 bytes, no swizzle: core matrices of 16 "
       "bytes, 128\n  // apart along K) for the sums of rows and "
       "columns.\n"
       "  __shared__ __align__(128) unsigned char ones[256];\n"
       "  for (int i = tid; i < 256; i += $THREADS)\n"
       "    ones[i] = 1;\n"
       "  const kiln_smem_desc ones_desc = kiln_wgmma_desc(ones, 128, 128);"},
      {"$ACCUMULATOR", "int"},
      {"$SECOND_ACCUMULATORS", ""},
      {"$ZEROS", "0"},
      {"$SUMS_DECLARATION",
       std::string("\n  // Each row's sum of A over this split's K (every "
                   "column of the n8\n  // product holds it).\n"
                   "  int row_sum[1][4] = {{0, 0, 0, 0}};") +
           (columnSums ? "\n  // Each column's sum of the weights: the "
                         "tile's rows of B as two A of\n  // 64 rows times "
                         "the ones (every warpgroup: a branch around them\n"
                         "  // would make ptxas serialize all the "
                         "products).\n"
                         "  int col_sum_lo[1][4] = {{0, 0, 0, 0}}, "
                         "col_sum_hi[1][4] = {{0, 0, 0, 0}};"
                       : "")},
      {"$PRODUCTS", kIntegerProducts},
      {"$HOLD_COLUMN_SUMS", columnSums ? "\n    kiln_wgmma_hold(col_sum_lo);\n"
                                         "    kiln_wgmma_hold(col_sum_hi);"
                                       : ""},
      {"$COLUMN_SUM_WGMMA",
       columnSums
           ? "\n      $COLUMN_WGMMA(col_sum_lo, kiln_wgmma_desc_swizzled("
             "b_tile + kk * 32, 16, 1024, 128), ones_desc, 1);\n"
             "      $COLUMN_WGMMA(col_sum_hi, kiln_wgmma_desc_swizzled("
             "b_tile + 64 * 128 + kk * 32, 16, 1024, 128),\n"
             "                    ones_desc, 1);"
           : ""},
      {"$WGMMA",
       wgmmaInt8FunctionName(config.tileN, shape.unsignedActivations, true)},
      {"$ROW_SUM_WGMMA",
       wgmmaInt8FunctionName(8, shape.unsignedActivations, true)},
      {"$COLUMN_WGMMA", wgmmaInt8FunctionName(8, true, true)},
      {"$AFTER_LOOP",
       columnSums
           ? "  // The first warpgroup's column sums (rows lane / 4 (+ 8) of "
             "warp w's 16\n  // of each n8 product) to every thread.\n"
             "  __shared__ int col_sums[$TILE_N];\n"
             "  if (group == 0 && (lane & 3) == 0) {\n"
             "    const int cn = (warp & 3) * 16 + (lane >> 2);\n"
             "    col_sums[cn] = col_sum_lo[0][0];\n"
             "    col_sums[cn + 8] = col_sum_lo[0][2];\n"
             "    col_sums[64 + cn] = col_sum_hi[0][0];\n"
             "    col_sums[64 + cn + 8] = col_sum_hi[0][2];\n"
             "  }\n"
             "  __syncthreads();"
           : ""},
      {"$TILE_LOCALS",
       columnSums
           ? "\n  // Whole: a cast of an 8-bit integer.\n"
             "  const unsigned activation_zero = "
             "(unsigned)(int)$A_TO_FLOAT(a_zero[0]);\n"
             "  // This split's share of K (A is zeros past it).\n"
             "  const long long k_begin = kt_begin * 128, k_end = kt_end * "
             "128 < k ? kt_end * 128 : k;\n"
             "  const unsigned k_split = k_end > k_begin ? (unsigned)(k_end "
             "- k_begin) : 0u;"
           : ""},
      {"$A_ZERO_PARAMETER",
       shape.zeroPoint ? ", const " + scaleElement + " *__restrict__ a_zero"
                       : ""},
      {"$W_ZERO_PARAMETER", shape.weightZeroPoints
                                ? ", const unsigned char *__restrict__ w_zero"
                                : ""},
      {"$TILE_VALUE",
       std::string("      // In unsigned arithmetic: two's complement, as "
                   "the accumulators.\n"
                   "      const unsigned weight_zero = ") +
           (shape.weightZeroPoints ? "w_zero[col]" : "128u") +
           ";\n      const int sum = (int)((unsigned)acc[j][i] - weight_zero "
           "* (unsigned)row_sum[0][i & 2]" +
           (columnSums ? " -\n                            activation_zero * "
                         "(unsigned)col_sums[col - col0] +\n"
                         "                            k_split * "
                         "activation_zero * weight_zero"
                       : "") +
           ");\n      float v = __fmul_rn(__fmul_rn((float)sum, "
           "activation_scale), $TO_FLOAT(scales[col]));"}};
}

} // namespace

void emitQdqWgmmaGemm(const QdqGemmShape &shape, const GemmConfig &config,
                      const std::string &name, const std::string &rows,
                      int64_t mostRows, const std::string &dims,
                      const QdqGemmTail *tail, llvm::raw_ostream &os,
                      bool takesPartials) {
  assert(config.form == GemmForm::Wgmma && config.tileN == kTileN &&
         config.tileK == 128 && config.tileM % 64 == 0 && config.tileM <= 128 &&
         config.stages >= 2 && "the Q/DQ GEMM's Hopper layout");
  assert(!(shape.float8 && (shape.zeroPoint || shape.weightZeroPoints)) &&
         "float8 has no zero points");
  auto str = [](int64_t v) { return std::to_string(v); };
  std::vector<std::pair<std::string, std::string>> values =
      gemm::qdqValues(shape, config.splitK, name, rows, dims, tail);
  if (takesPartials)
    for (auto &[placeholder, value] : values)
      if (placeholder == "$PARTIALS_PARAMETER")
        value = ", float *__restrict__ partials";
  std::vector<std::pair<std::string, std::string>> kind =
      shape.float8 ? float8Values(config) : integerValues(shape, config);
  values.insert(values.end(), kind.begin(), kind.end());
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
                 {"$N8", str(config.tileN / 8)}});
  if (shape.float8) {
    os << cudaWgmmaE4M3Function(config.tileN);
  } else {
    os << cudaWgmmaInt8Function(config.tileN, shape.unsignedActivations, true);
    os << cudaWgmmaInt8Function(8, shape.unsignedActivations, true);
    if (shape.zeroPoint)
      os << cudaWgmmaInt8Function(8, true, true);
  }
  std::string counters;
  std::vector<std::pair<std::string, std::string>> finish =
      gemm::qdqFinishValues(shape, name, config.splitK, config.tileM,
                            config.tileN, mostRows, tail, counters);
  values.insert(values.end(), finish.begin(), finish.end());
  os << counters << substitute(kWgmmaKernel, values);
}

} // namespace kiln
