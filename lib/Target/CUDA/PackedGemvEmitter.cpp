//===- PackedGemvEmitter.cpp - GEMV over block-quantized weights ----------===//
//
// Decoding's GEMV for a product whose weights stay block-quantized
// (kiln.dequantize fused into the GEMM by kiln-fuse): each weight is read
// as its `bits` packed bits, once, by one thread, so a decoding step moves
// a quarter (int4) or half (int8) of an fp16 weight's bytes. The layout is
// the n x k GEMV's (GemvEmitter.cpp): a block owns `tileM` rows of A and a
// 64-column slab of B; 8 lanes share a column, each streaming 16-byte
// chunks of its packed row (32 int4, 16 int8 or float8 or 64 int2 weights,
// inside one quantization block), four columns a lane.
//
// A chunk's weights share one scale s and zero point z, so the lane adds
// s (sum a q - z sum a) for the chunk: a weight costs its share of a mask,
// a byte permute that makes it a float, and the multiply-add; the block's
// constants are applied once. The weights enter unrounded (the dequantize
// rounds each to the activations' type, which the unpacked path
// multiplies), and the sums run in another order: the two paths agree
// within the 16-bit contract, not bit for bit.
//
// The kernels are plain launch steps (PlanLaunches.cpp's convention: the
// buffers, then every dim of the model): the plan guards them to the runs
// whose rows are few, where the unpacked path (the dequantize's own kernel,
// then a matmul step) does not run. The sums of a split go to scratch and
// the last block of a tile to arrive adds them in split order before the
// epilogue.
//
// Where the GEMM kernel computes A (its prologue: a decoder's SwiGLU), each
// block first computes its rows over its split's share of K into shared
// memory (kComputedOperand), and the chunk steps read A there.
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"
#include "GemmParts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>

namespace kiln {

namespace {

using gemm::substitute;

/// The blocks a split aims for, two an SM.
constexpr int64_t kBlocksWanted = 2 * kGemmTargetSMs;
/// The fewest 16-byte chunks of a packed row a split keeps (fewer, and the
/// partial sums cost more than the blocks gain).
constexpr int64_t kLeastChunksPerSplit = 16;
/// Rows a block owns at most, and the rows at which the GEMV stops: past
/// 8 passes over the packed weights, unpacking them once (reading them and
/// writing and reading fp16) moves fewer bytes.
constexpr int64_t kMostRows = 8;
constexpr int64_t kMostPasses = 8;
/// The rows past which no packed GEMV is offered (kiln's GEMV rule).
constexpr int64_t kMostLeastRows = 16;

constexpr const char *kMainKernel = R"cuda(
// Kiln packed GEMV: $ROWS rows of A a block against $TILE_N columns of
// $BITS-bit weights in blocks of $BLOCK_SIZE along K, $WARPS warps, $SPLIT splits of K.
__device__ __forceinline__ unsigned $NAME_word(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// The float 0.5 + q / 256 of the value q < 128 in byte `b` of `x`: q as
// byte 2 of 0x3f000000 (2^-1, its exponent's low bit clear). A prmt, where
// a conversion (I2F) issues at an eighth of the rate.
__device__ __forceinline__ float $NAME_half_plus(unsigned x, int b) {
  return __uint_as_float(__byte_perm(x, 0x3f000000u, 0x7054u | (unsigned)b << 8));
}

// The float 2^23 + q of byte `b` of `x` (any byte value).
__device__ __forceinline__ float $NAME_two_23_plus(unsigned x, int b) {
  return __uint_as_float(__byte_perm(x, 0x4b000000u, 0x7650u | (unsigned)b));
}

// The value of the E4M3FN float8 in byte `b` of `x`: the byte at the top of
// a word, its exponent and mantissa moved down to a float's places by an
// arithmetic shift (the sign stays) and the bits between masked, is the
// value times 2^-120, the difference of the exponent biases, subnormals
// included. (0x7f, E4M3FN's NaN, would read as 480: the importer packs no
// NaN weights.)
__device__ __forceinline__ float $NAME_e4m3(unsigned x, int b) {
  const int top = (int)__byte_perm(x, 0u, 0x0444u | (unsigned)b << 12);
  return __uint_as_float((unsigned)(top >> 4) & 0x87f00000u) * 0x1p120f;
}

__device__ __forceinline__ uint4 $NAME_load_a(const $ELEMENT *p, bool aligned) {
  if (aligned)
    return __ldg(reinterpret_cast<const uint4 *>(p));
  // A caller's pointer to A may be aligned to its elements only.
  unsigned short h[8];
  #pragma unroll
  for (int i = 0; i < 8; ++i)
    h[i] = __ldg(reinterpret_cast<const unsigned short *>(p) + i);
  return make_uint4(h[0] | (unsigned)h[1] << 16, h[2] | (unsigned)h[3] << 16,
                    h[4] | (unsigned)h[5] << 16, h[6] | (unsigned)h[7] << 16);
}

extern "C" __global__ void __launch_bounds__($THREADS) $NAME(
    $A_PARAMETERS, const unsigned char *__restrict__ packed,
    const $ELEMENT *__restrict__ scales$ZERO_PARAMETER$BIAS_PARAMETER$RESIDUAL_PARAMETER$NORM_PARAMETERS,
    $ELEMENT *__restrict__ c$NORMED_OUTPUT$PARTIALS_PARAMETER$UPDATE_PARAMETERS$DIMS) {
  kiln_pdl_enter();
  const long long m = $EXTENT_M, n = $EXTENT_N, k = $EXTENT_K;
  const long long blocks = $BLOCKS, row_bytes = $ROW_BYTES;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int part = lane & 7, group = lane >> 3;
  const long long row0 = (long long)blockIdx.y * $ROWS;
  const long long warp_col0 = (long long)blockIdx.x * $TILE_N + warp * $WARP_COLUMNS + group;
  const long long split = blockIdx.z, chunks = $CHUNKS;
  const long long per_split = (chunks + $SPLIT - 1) / $SPLIT;
  const long long ck_begin = split * per_split;
  const long long ck_end = ck_begin + per_split < chunks ? ck_begin + per_split : chunks;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
$A_SETUP
  bool row_live[$ROWS];
  #pragma unroll
  for (int r = 0; r < $ROWS; ++r)
    row_live[r] = row0 + r < m;
  float acc[$ROWS][$COLUMNS_PER_LANE];
  #pragma unroll
  for (int r = 0; r < $ROWS; ++r)
    #pragma unroll
    for (int t = 0; t < $COLUMNS_PER_LANE; ++t)
      acc[r][t] = 0.0f;
  for (long long ck = ck_begin + part; ck < ck_end; ck += 8) {
    // The chunk's first weight along K, and its quantization block.
    const long long k0 = ck * $CHUNK_VALUES, blk = k0 / $BLOCK_SIZE;
    uint4 bw[$COLUMNS_PER_LANE];
    float scale[$COLUMNS_PER_LANE], zero_point[$COLUMNS_PER_LANE];
    #pragma unroll
    for (int t = 0; t < $COLUMNS_PER_LANE; ++t) {
      const long long col = warp_col0 + 4 * t;
      const bool live = col < n;
      bw[t] = live ? __ldg(reinterpret_cast<const uint4 *>(packed + col * row_bytes + ck * 16)) : zero;
      scale[t] = live ? $TO_FLOAT(scales[col * blocks + blk]) : 0.0f;
      zero_point[t] = $ZERO_POINT;
    }
    float dot[$ROWS][$COLUMNS_PER_LANE], a_sum[$ROWS];
    #pragma unroll
    for (int r = 0; r < $ROWS; ++r) {
      a_sum[r] = 0.0f;
      #pragma unroll
      for (int t = 0; t < $COLUMNS_PER_LANE; ++t)
        dot[r][t] = 0.0f;
    }
    // Eight weights of A's row at a time; A past K (the last block's
    // padding) reads as zeros.
    #pragma unroll
    for (int s = 0; s < $CHUNK_VALUES / 8; ++s) {
      const long long kk = k0 + 8 * s;
      #pragma unroll
      for (int r = 0; r < $ROWS; ++r) {
        const uint4 aw = row_live[r] && kk < k ? $A_CHUNK : zero;
        float af[8];
        const $PAIR_TYPE *ap = reinterpret_cast<const $PAIR_TYPE *>(&aw);
        #pragma unroll
        for (int h = 0; h < 4; ++h) {
          const float2 f = $UNPACK_PAIR(ap[h]);
          af[2 * h] = f.x;
          af[2 * h + 1] = f.y;
        }
        #pragma unroll
        for (int j = 0; j < 8; ++j)
          a_sum[r] += af[j];
        #pragma unroll
        for (int t = 0; t < $COLUMNS_PER_LANE; ++t) {
$WEIGHTS
        }
      }
    }
    #pragma unroll
    for (int r = 0; r < $ROWS; ++r)
      #pragma unroll
      for (int t = 0; t < $COLUMNS_PER_LANE; ++t)
        acc[r][t] += scale[t] * ($DOT_SCALE * dot[r][t] - ($DOT_OFFSET + zero_point[t]) * a_sum[r]);
  }
$COLUMN_STORES)cuda";

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// A computed by the block (a GEMM kernel's prologue): `a_value`, the
/// element at flat index `a_index` (the prologue's statements), for each
/// of the block's rows over its split's share of K, once, into shared
/// memory, from which the chunk steps read it as they read A from global
/// memory. Computed where each lane reads it instead, every value would be
/// computed by the 16 lanes of a block that read it (four column groups of
/// four warps), over three times the instructions a byte of weights
/// allows.
constexpr const char *kComputedOperand = R"cuda(
  // A's values, rounded to A's type as the kernel that wrote them did.
  auto a_value = [&](long long a_index) -> $ELEMENT {
$A_STATEMENTS    return $A_VALUE;
  };
  __shared__ __align__(16) $ELEMENT a_slab[$ROWS][$SLAB];
  const long long slab_k0 = ck_begin * $CHUNK_VALUES;
  for (int e = tid; e < $ROWS * $SLAB; e += $THREADS) {
    const int r = e / $SLAB, j = e % $SLAB;
    const long long kk = slab_k0 + j;
    a_slab[r][j] = row0 + r < m && kk < k ? a_value((row0 + r) * k + kk) : $ELEMENT(0.0f);
  }
  __syncthreads();)cuda";

/// A cache update after the product (CacheUpdateTail), past the split's
/// finish: each of the grid's tiles arrives once its product is stored
/// (the last block of a split tile alone), as a split's blocks arrive at
/// their tile, and the last to arrive runs the update's loop over its
/// threads. The update rotates a key from two columns of the product that
/// other blocks may have stored: it cannot run before all have. A decoding
/// step's update is a few hundred elements, which one block's loop covers
/// in a few steps where its own launch would cost more.
constexpr const char *kCacheUpdateTail = R"cuda(
  // The last of the grid's tiles to arrive writes the cache update.
  {
    __shared__ bool last_tile_of_grid;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      const unsigned tiles = gridDim.x * gridDim.y;
      last_tile_of_grid = atomicInc(&$NAME_grid_arrived[0], tiles - 1) == tiles - 1;
    }
    __syncthreads();
    if (!last_tile_of_grid)
      return;
    __threadfence();
    $UPDATE_CALL
  }
)cuda";

/// The most bytes of shared memory a packed GEMV's computed A takes.
constexpr int64_t kMostOperandBytes = 16 * 1024;

/// The values of A a block of `config` computes for each of its rows: its
/// split's share of K.
int64_t operandSlab(const PackedGemvShape &shape, const GemmConfig &config) {
  int64_t chunkValues = 128 / shape.bits;
  int64_t chunks = shape.blocks * shape.blockSize / chunkValues;
  return ceilDiv(chunks, config.splitK) * chunkValues;
}

/// The products of sub-chunk `s` (eight weights) of column `t` with the
/// row's eight values of A (`af`), added to dot[r][t]. 2- and 4-bit values
/// are masked to one a byte, several bytes at once, and read as
/// 0.5 + q / 256 (the kernel undoes the scale and offset once a chunk:
/// $DOT_SCALE, $DOT_OFFSET); bytes as 2^23 + q less 2^23 (exact); float8
/// bytes as their values.
std::string weightsText(int64_t bits, bool float8) {
  if (float8)
    // Words 2s and 2s + 1, a weight a byte.
    return R"cuda(          #pragma unroll
          for (int h = 0; h < 2; ++h) {
            const unsigned w = $NAME_word(bw[t], 2 * s + h);
            #pragma unroll
            for (int i = 0; i < 4; ++i)
              dot[r][t] += af[4 * h + i] * $NAME_e4m3(w, i);
          }
)cuda";
  switch (bits) {
  case 4:
    // Word s: weights 2i in byte i of its low nibbles, 2i + 1 of its high.
    return R"cuda(          const unsigned w = $NAME_word(bw[t], s);
          const unsigned lo = w & 0x0f0f0f0fu, hi = (w >> 4) & 0x0f0f0f0fu;
          #pragma unroll
          for (int i = 0; i < 4; ++i) {
            dot[r][t] += af[2 * i] * $NAME_half_plus(lo, i);
            dot[r][t] += af[2 * i + 1] * $NAME_half_plus(hi, i);
          }
)cuda";
  case 2:
    // Half of word s / 2: weights j and 4 + j in bytes 0 and 1 of its
    // bits shifted by 2j.
    return R"cuda(          const unsigned w = $NAME_word(bw[t], s / 2) >> (16 * (s % 2));
          #pragma unroll
          for (int j = 0; j < 4; ++j) {
            const unsigned crumbs = (w >> (2 * j)) & 0x03030303u;
            dot[r][t] += af[j] * $NAME_half_plus(crumbs, 0);
            dot[r][t] += af[4 + j] * $NAME_half_plus(crumbs, 1);
          }
)cuda";
  default:
    // Words 2s and 2s + 1, a weight a byte.
    return R"cuda(          #pragma unroll
          for (int h = 0; h < 2; ++h) {
            const unsigned w = $NAME_word(bw[t], 2 * s + h);
            #pragma unroll
            for (int i = 0; i < 4; ++i)
              dot[r][t] += af[4 * h + i] * ($NAME_two_23_plus(w, i) - 8388608.0f);
          }
)cuda";
  }
}

} // namespace

PackedGemvChoice choosePackedGemv(const PackedGemvShape &shape) {
  PackedGemvChoice choice;
  int64_t chunkValues = 128 / shape.bits;
  if (shape.dtype != rt::DType::F16 && shape.dtype != rt::DType::BF16)
    choice.refusal = "the packed GEMV multiplies float16 and bfloat16";
  else if (shape.leastM > kMostLeastRows)
    choice.refusal =
        "every run has more than " + std::to_string(kMostLeastRows) + " rows";
  else if (shape.blockSize % chunkValues != 0)
    choice.refusal = "blocks of " + std::to_string(shape.blockSize) +
                     " weights are not whole 16-byte chunks of " +
                     std::to_string(shape.bits) + "-bit weights";
  else if (shape.k % 8 != 0)
    choice.refusal =
        "K = " + std::to_string(shape.k) + " is not whole 16-byte chunks of A";
  if (!choice.refusal.empty())
    return choice;
  // A range may start at 0 rows; a block owns at least one.
  int64_t least = std::max<int64_t>(1, shape.leastM);
  int64_t rows = std::min<int64_t>(kMostRows, llvm::PowerOf2Ceil(least));
  // 64 columns a block: four warps of four columns of 8 lanes, four
  // columns a lane.
  GemmConfig config = {GemmForm::Gemv, rows, 64, chunkValues, 1, 4, 1};
  int64_t chunks = shape.blocks * shape.blockSize / chunkValues;
  int64_t blocks = ceilDiv(least, rows) * ceilDiv(shape.n, 64);
  while (blocks * config.splitK < kBlocksWanted &&
         config.splitK * 2 <= kGemmMostSplits &&
         chunks / (config.splitK * 2) >= kLeastChunksPerSplit)
    config.splitK *= 2;
  choice.config = config;
  choice.mostRows = std::min(kMostLeastRows, rows * kMostPasses);
  return choice;
}

bool packedGemvComputesOperand(const PackedGemvShape &shape,
                               const GemmConfig &config) {
  return config.tileM * operandSlab(shape, config) * 2 <= kMostOperandBytes;
}

void emitPackedGemv(const PackedGemvShape &shape, const GemmConfig &config,
                    const std::string &name, const std::string &rows,
                    int64_t mostRows, const std::string &dims,
                    llvm::raw_ostream &os, const ComputedOperand *lhs,
                    const CacheUpdateTail *update) {
  assert(config.form == GemmForm::Gemv && config.tileM <= 8 &&
         "a power of two rows, at most one for each lane of a column");
  gemm::HalfSpelling h = gemm::spellingOf(shape.dtype);
  auto str = [](int64_t v) { return std::to_string(v); };
  int64_t warps = config.warpsM * config.warpsN;
  int64_t warpColumns = config.tileN / warps;
  int64_t chunkValues = 128 / shape.bits;
  std::vector<std::pair<std::string, std::string>> values =
      gemm::packedValues(shape, config.splitK, name, rows, dims);
  values.insert(
      values.end(),
      {{"$UNPACK_PAIR", h.pairToFloat2},
       {"$PAIR_TYPE", h.pair},
       {"$THREADS", str(config.threads())},
       {"$WARPS", str(warps)},
       {"$ROWS", str(config.tileM)},
       {"$TILE_N", str(config.tileN)},
       {"$WARP_COLUMNS", str(warpColumns)},
       {"$COLUMNS_PER_LANE", str(warpColumns / 4)},
       {"$EXCHANGE", gemm::gemvExchangeText(config.tileM, warpColumns / 4)},
       {"$COLUMN_STORES", gemm::kGemvColumnStores},
       {"$DECLARATIONS",
        "\n    const $ELEMENT *r_mat = $R_MAT;$BIAS_LOCAL\n    "
        "$ELEMENT *c_mat = c;"},
       {"$WEIGHTS", weightsText(shape.bits, shape.float8)},
       {"$DOT_SCALE", shape.bits == 8 ? "1.0f" : "256.0f"},
       {"$DOT_OFFSET", shape.bits == 8 ? "0.0f" : "128.0f"},
       {"$CHUNKS", str(shape.blocks * shape.blockSize / chunkValues)},
       {"$CHUNK_VALUES", str(chunkValues)},
       {"$STORE", config.splitK > 1 || shape.norm != PackedGemvShape::Norm::None
                      ? "      partials[(split * m + row) * n + col] = v;\n"
                      : "$FINISH"}});
  assert((!lhs || packedGemvComputesOperand(shape, config)) &&
         "a computed A within the shared memory it may take");
  if (lhs)
    values.insert(
        values.end(),
        {{"$A_PARAMETERS", lhs->parameters},
         {"$A_SETUP", kComputedOperand},
         {"$A_STATEMENTS", lhs->statements},
         {"$A_VALUE", lhs->value},
         {"$SLAB", str(operandSlab(shape, config))},
         {"$A_CHUNK", "*reinterpret_cast<const uint4 *>(&a_slab[r][kk - "
                      "slab_k0])"}});
  else
    values.insert(
        values.end(),
        {{"$A_PARAMETERS", "const $ELEMENT *__restrict__ a"},
         {"$A_SETUP", "  const bool a_aligned = (reinterpret_cast<unsigned "
                      "long long>(a) & 15) == 0;"},
         {"$A_CHUNK", "$NAME_load_a(a + (row0 + r) * k + kk, a_aligned)"}});
  std::string counters;
  std::vector<std::pair<std::string, std::string>> finish =
      gemm::packedFinishValues(shape, name, config, mostRows, counters);
  values.insert(values.end(), finish.begin(), finish.end());
  if (update) {
    assert(shape.norm == PackedGemvShape::Norm::None &&
           "a cache update after a product without a norm's finish");
    auto arrivals = llvm::find_if(
        values, [](const auto &value) { return value.first == "$ARRIVALS"; });
    arrivals->second += kCacheUpdateTail;
    counters += "// The arrivals of " + name +
                "'s tiles before its cache update.\n"
                "KILN_PER_CONTEXT unsigned int " +
                name + "_grid_arrived[1];\n";
    values.insert(values.end(), {{"$UPDATE_PARAMETERS", update->parameters},
                                 {"$UPDATE_CALL", update->call}});
  } else {
    values.push_back({"$UPDATE_PARAMETERS", ""});
  }
  os << counters << substitute(kMainKernel, values);
}

} // namespace kiln
