//===- PackedGemmEmitter.cpp - tensor-core GEMM over packed weights -------===//
//
// The product of a run whose rows are too many for the packed GEMV
// (PackedGemvEmitter.cpp) but few enough that the weights' bytes still
// bound its time: a prefill of a short prompt, or a batch of decoders. The
// unpacked path moves each int4 weight's half byte, then two bytes written
// and two read again as fp16 (4.5 bytes); this kernel reads the half byte
// once for every tileM rows, dequantizing in its main loop.
//
// A block computes a tileM x 64 tile of C over its share of K, in steps of
// 64 weights along K, with four warps side by side, each 16 columns. The
// next step's tile of A (16-bit, cp.async in 16-byte chunks) and its tile of
// packed weights (the packed rows' bytes as they are stored, one row a
// column of C) stream into shared memory while the warps multiply the
// current one (two buffers), with each column's scale and zero point of its
// four 16-weight slices. A's fragments come from ldmatrix; B's fragment of
// mma.sync.m16n8k16 is the pairs of weights (2t, 2t + 1) and (2t + 8,
// 2t + 9) of column lane / 4, which a lane decodes from the packed bytes
// and dequantizes as kiln.dequantize defines it (each product rounded once,
// to the activations' type, as the unpacked path's kernel computes them).
// Integer weights with integer zero points (int4; int8 in float16) decode
// in 16-bit pairs, as Marlin does: a byte permute puts the weights in the
// mantissas of a pair of 16-bit floats, one fma or subtraction takes off
// that float's bias and the zero point (exactly) and one multiply applies
// the scale (kPairHelpers), and float8 weights in float16 convert a pair
// at a time (cvt.rn.f16x2.e4m3x2) before the scale's multiply; float zero
// points, int2, and float8 or int8 weights in bfloat16 go one weight at a
// time through fp32. So the weights the tensor cores
// multiply are the unpacked path's, bit for bit.
//
// Marlin also packs the weights at compile time in the fragments' order,
// so that a lane loads its weights straight from global memory and no
// shared memory holds them. This kernel keeps the packed layout every other
// reader of the weights shares (the GEMV, the unpacking kernel): a lane's
// pair of bytes is one 8-byte shared load and one permute away.
//
// The kernels are launch steps, as the GEMV's: the plan guards them to the
// runs whose rows are between the GEMV's and kMostRows. A split's sums go
// to scratch, and the last block of a tile to arrive adds them in split
// order before the epilogue (gemm::splitFinishValues).
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"
#include "GemmParts.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>

namespace kiln {

namespace {

using gemm::substitute;

/// The blocks a split aims for, two an SM.
constexpr int64_t kBlocksWanted = 2 * kGemmTargetSMs;
/// The fewest k tiles of 64 weights (or bytes) a split keeps.
constexpr int64_t kLeastTilesPerSplit = 4;
/// The rows past which the weights are unpacked instead. At 128 rows an
/// int4 weight's half byte feeds 256 flops, which the tensor cores of an
/// H200 consume faster than HBM delivers it; the unpacked path adds 4 bytes
/// of fp16 traffic a weight before its GEMM starts. Past a few hundred rows
/// the GEMM's arithmetic hides that, and cuBLASLt's Hopper kernels multiply
/// faster than mma.sync. (A bandwidth argument, not yet a measurement.)
constexpr int64_t kMostRows = 128;

constexpr const char *kMainKernel = R"cuda(
// Kiln packed GEMM: a $TILE_M x 64 tile of C a block against $BITS-bit weights in
// blocks of $BLOCK_SIZE along K, dequantized in the main loop; four warps of 16
// columns, K in steps of 64 staged by cp.async into two buffers; $SPLIT splits of K.
$FRAGMENT_HELPERS
extern "C" __global__ void __launch_bounds__(128) $NAME(
    const $ELEMENT *__restrict__ a, const unsigned char *__restrict__ packed,
    const $ELEMENT *__restrict__ scales$ZERO_PARAMETER$BIAS_PARAMETER$RESIDUAL_PARAMETER$NORM_PARAMETERS,
    $ELEMENT *__restrict__ c$NORMED_OUTPUT$PARTIALS_PARAMETER$DIMS) {
  kiln_pdl_enter();
  const long long m = $EXTENT_M, n = $EXTENT_N, k = $EXTENT_K;
  const long long blocks = $BLOCKS, row_bytes = $ROW_BYTES;
  const bool a_aligned = (reinterpret_cast<unsigned long long>(a) & 15) == 0;
  __shared__ __align__(16) $ELEMENT sa[2][$TILE_M][64 + 8];
  // 16 bytes past each row shift the next row's banks.
  __shared__ __align__(16) unsigned char sq[2][64][$TILE_BYTES + 16];
  // Each column's scale and zero point ($ZERO_HELD) for the tile's four
  // 16-weight slices (a quantization block holds whole slices).
  __shared__ $SLICE_TYPE s_scale[2][64][4], s_zero[2][64][4];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long row0 = (long long)blockIdx.y * $TILE_M, col0 = (long long)blockIdx.x * 64;
  const long long split = blockIdx.z;
  // This block's k tiles; past K, A reads zeros, so the packed rows'
  // padding is multiplied by zero.
  const long long k_tiles = (k + 63) / 64;
  const long long per_split = (k_tiles + $SPLIT - 1) / $SPLIT;
  const long long kt_begin = split * per_split;
  const long long kt_end = kt_begin + per_split < k_tiles ? kt_begin + per_split : k_tiles;
  float acc[$M_TILES][2][4];
  #pragma unroll
  for (int mt = 0; mt < $M_TILES; ++mt)
    #pragma unroll
    for (int nt = 0; nt < 2; ++nt)
      #pragma unroll
      for (int i = 0; i < 4; ++i)
        acc[mt][nt][i] = 0.0f;
$STAGED_LOOP
    #pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      unsigned af[$M_TILES][4];
      #pragma unroll
      for (int mt = 0; mt < $M_TILES; ++mt)
        kiln_ldmatrix_x4(af[mt], &sa[s][mt * 16 + (lane & 15)][kk * 16 + (lane >> 4) * 8]);
      #pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int r = warp * 16 + nt * 8 + (lane >> 2);
$B_FRAGMENTS        #pragma unroll
        for (int mt = 0; mt < $M_TILES; ++mt)
          $MMA(acc[mt][nt], af[mt], bf, acc[mt][nt]);
      }
    }
    __syncthreads();
  }
$TILE_STORE
)cuda";

/// The staging of k tile `kn` into buffer `st`: A's rows (16-byte chunks
/// of 8 values, zeros past m and k; element by element from an A not
/// aligned to 16 bytes), each column's packed bytes of the tile
/// (16-byte chunks, none past the row; the rows are whole chunks), and each
/// column's scales and zero points of the tile's 16-weight slices (written
/// by plain stores: the barrier before the tile's multiplication publishes
/// them). Unrolled, as the mma form's staging is (GemmEmitter.cpp says why).
constexpr const char *kStageTile = R"cuda(    {
      const long long k0 = kn * 64;
      #pragma unroll
      for (int i = 0; i < $TILE_M / 16; ++i) {
        const int e = tid + i * 128;
        const int r = e / 8, cc = e % 8 * 8;
        const long long gr = row0 + r, gk = k0 + cc;
        const unsigned bytes = gr < m && gk < k ? (unsigned)((k - gk < 8 ? k - gk : 8) * 2) : 0u;
        if (a_aligned) {
          kiln_cp_async_16(&sa[st][r][cc], bytes ? a + gr * k + gk : a, bytes);
        } else {
          // A caller's pointer to A may be aligned to its elements only
          // (the packed GEMV's case too): the chunk by its elements.
          unsigned short h[8];
          #pragma unroll
          for (int j = 0; j < 8; ++j)
            h[j] = 2 * j < (int)bytes ? reinterpret_cast<const unsigned short *>(a + gr * k + gk)[j] : 0;
          *reinterpret_cast<uint4 *>(&sa[st][r][cc]) =
              make_uint4(h[0] | (unsigned)h[1] << 16, h[2] | (unsigned)h[3] << 16,
                         h[4] | (unsigned)h[5] << 16, h[6] | (unsigned)h[7] << 16);
        }
      }
      #pragma unroll
      for (int i = 0; i < ($TILE_CHUNKS + 127) / 128; ++i) {
        const int e = tid + i * 128;
        if ($TILE_CHUNKS % 128 != 0 && e >= $TILE_CHUNKS)
          break;
        const int r = e / ($TILE_BYTES / 16), cb = e % ($TILE_BYTES / 16) * 16;
        const long long col = col0 + r, at = kn * $TILE_BYTES + cb;
        const unsigned bytes = col < n && at < row_bytes ? 16u : 0u;
        kiln_cp_async_16(&sq[st][r][cb], bytes ? packed + col * row_bytes + at : packed, bytes);
      }
      #pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int e = tid + i * 128;
        const int r = e / 4, slice = e % 4;
        const long long col = col0 + r;
        const bool live = col < n;
        long long blk = (k0 + slice * 16) / $BLOCK_SIZE;
        blk = blk < blocks ? blk : blocks - 1;
        const float scale = live ? $TO_FLOAT(scales[col * blocks + blk]) : 0.0f;
        const float zero_point = $ZERO_POINT;
        s_scale[st][r][slice] = $SCALE_STORED;
        s_zero[st][r][slice] = $ZERO_STORED;
      }
    })cuda";

/// The B fragment of a lane, decoded one weight at a time: each weight's
/// value as a float (its bits shifted and masked, then converted), less its
/// zero point and times its scale in fp32, the pair then rounded.
constexpr const char *kFloatHelpers =
    R"cuda(__device__ __forceinline__ float $NAME_value(const unsigned char *row, int kb) {
$VALUE
}

// Weight `q` dequantized as kiln.dequantize computes it: $MEANING.
__device__ __forceinline__ float $NAME_dequantize(float q, float scale, float zero) {
  return $DEQUANTIZED;
}

// The fragment register of weights kb and kb + 1 of a column, each
// dequantized, then the pair rounded to $ELEMENT, the lower k in the low
// half.
__device__ __forceinline__ unsigned $NAME_pair(const unsigned char *row, int kb, float scale,
                                               float zero) {
  const float lo = $NAME_dequantize($NAME_value(row, kb), scale, zero);
  const float hi = $NAME_dequantize($NAME_value(row, kb + 1), scale, zero);
  const $PAIR_TYPE pair = $FLOATS_TO_PAIR(lo, hi);
  return *reinterpret_cast<const unsigned *>(&pair);
}
)cuda";

constexpr const char *kFloatFragments =
    R"cuda(        const int kb = kk * 16 + 2 * (lane & 3);
        const float scale = s_scale[s][r][kk], zero = s_zero[s][r][kk];
        const unsigned bf[2] = {$NAME_pair(sq[s][r], kb, scale, zero),
                                $NAME_pair(sq[s][r], kb + 8, scale, zero)};
)cuda";

/// The B fragment of a lane, decoded a pair of weights at a time in 16-bit
/// arithmetic (integer weights with integer zero points, as Marlin decodes
/// them): a weight q put in the low mantissa bits of the 16-bit float M
/// (1024 in float16, 128 in bfloat16) is the float M + q, exactly, with no
/// conversion instruction; less M + z it is q - z, exactly; times the
/// scale, one rounding, the rounding of the fp32 path (q - z and the scale
/// are 16-bit values, whose product fp32 holds exactly). So the tensor
/// cores multiply the same weights, bit for bit. The stage holds each
/// slice's scale and M + z as pairs.
constexpr const char *kPairHelpers =
    R"cuda(// `x` twice, as the bits of a pair of $ELEMENT (x is one already: a scale,
// or $MAGIC_VALUE plus a zero point).
__device__ __forceinline__ unsigned $NAME_bits(float x) {
  const $PAIR_TYPE pair = $FLOATS_TO_PAIR(x, x);
  return *reinterpret_cast<const unsigned *>(&pair);
}

// The offsets of float16's int4 pairs for zero point `z`: -(1024 + z) in
// the low half, -(64 + z) in the high.
__device__ __forceinline__ unsigned $NAME_offsets(float z) {
  const $PAIR_TYPE pair = $FLOATS_TO_PAIR(-(1024.0f + z), -(64.0f + z));
  return *reinterpret_cast<const unsigned *>(&pair);
}

// The pair of 16-bit floats of the bits `v` less their bias and zero
// point ($OFFSET_MEANING), times `scale`, as the fragment register.
__device__ __forceinline__ $PAIR_TYPE $NAME_pair_of(unsigned bits) {
  return *reinterpret_cast<const $PAIR_TYPE *>(&bits);
}

__device__ __forceinline__ unsigned $NAME_scaled(unsigned v, unsigned offset, unsigned scale) {
  const $PAIR_TYPE q = $NAME_pair_of(v);
  const $PAIR_TYPE p = __hmul2($UNBIASED, $NAME_pair_of(scale));
  return *reinterpret_cast<const unsigned *>(&p);
}
)cuda";

/// int4: the lane's bytes kk * 8 + t (weights kb, kb + 1) and kk * 8 + t + 4
/// (kb + 8, kb + 9), t = lane % 4, each repeated in a word by one byte
/// permute; its low nibble goes to the low half's mantissa and its high
/// nibble to the high half's ($NIBBLES: in float16 where it stands, 16 q,
/// which the unbiasing's multiply by 1/16 undoes exactly; in bfloat16,
/// whose bit 7 is the exponent's, shifted down 4).
constexpr const char *kInt4Fragments =
    R"cuda(        const uint2 w = *reinterpret_cast<const uint2 *>(&sq[s][r][kk * 8]);
        const unsigned t = lane & 3, scale = s_scale[s][r][kk], offset = s_zero[s][r][kk];
        unsigned bf[2];
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const unsigned x = __byte_perm(w.x, w.y, (t + 4 * h) * 0x1111u);
          bf[h] = $NAME_scaled($NIBBLES, offset, scale);
        }
)cuda";

/// int8 (float16 only: bfloat16's 7 mantissa bits hold no byte): the
/// lane's bytes kk * 16 + 2t, + 1 (weights kb, kb + 1) and 8 further
/// (kb + 8, kb + 9), each pair put under the top byte of 1024's float16
/// by one byte permute.
constexpr const char *kInt8Fragments =
    R"cuda(        const unsigned t = lane & 3, scale = s_scale[s][r][kk], offset = s_zero[s][r][kk];
        const unsigned select = (t & 1) ? 0x4342u : 0x4140u;
        unsigned bf[2];
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const unsigned w =
              *reinterpret_cast<const unsigned *>(&sq[s][r][kk * 16 + 8 * h + (t >> 1) * 4]);
          bf[h] = $NAME_scaled(__byte_perm(w, $MAGIC_BITS, select), offset, scale);
        }
)cuda";

/// float8 E4M3FN weights in float16: the lane's bytes kk * 16 + 2t, + 1 and
/// 8 further, each pair converted to a float16 pair by one instruction
/// (cvt.rn.f16x2.e4m3x2: every E4M3FN value is a float16), with no zero
/// point to take off.
constexpr const char *kFloat8Fragments =
    R"cuda(        const unsigned t = lane & 3, scale = s_scale[s][r][kk];
        unsigned bf[2];
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const unsigned w =
              *reinterpret_cast<const unsigned *>(&sq[s][r][kk * 16 + 8 * h + (t >> 1) * 4]);
          bf[h] = $NAME_scaled(kiln_e4m3x2_to_f16x2(w >> ((t & 1) * 16)), 0u, scale);
        }
)cuda";

/// Whether the lanes decode their fragments in 16-bit pairs (kPairHelpers):
/// integer weights of 4 bits, or of 8 in float16, with integer zero points;
/// float8 weights in float16.
bool decodesPairs(const PackedGemvShape &shape) {
  if (shape.float8)
    return shape.dtype == rt::DType::F16;
  return shape.zeroPoints != PackedGemvShape::ZeroPoints::Float &&
         (shape.bits == 4 ||
          (shape.bits == 8 && shape.dtype == rt::DType::F16));
}

/// The body of $NAME_value: weight `kb` of the tile's row as a float,
/// before its scale and zero point.
std::string valueText(const PackedGemvShape &shape) {
  if (shape.float8)
    // E4M3FN at the top of a word, moved to a float's fields (the GEMV's
    // decoding): the value times 2^-120, then restored.
    return "  const int top = (int)((unsigned)row[kb] << 24);\n"
           "  return __uint_as_float((unsigned)(top >> 4) & 0x87f00000u) * "
           "0x1p120f;";
  if (shape.bits == 8)
    return "  return (float)row[kb];";
  int64_t perByte = 8 / shape.bits;
  return "  return (float)((row[kb / " + std::to_string(perByte) +
         "] >> ((kb % " + std::to_string(perByte) + ") * " +
         std::to_string(shape.bits) + ")) & " +
         std::to_string((1 << shape.bits) - 1) + "u);";
}

} // namespace

PackedGemmChoice choosePackedGemm(const PackedGemvShape &shape,
                                  int64_t fewestRows) {
  PackedGemmChoice choice;
  int64_t rowBytes = shape.blocks * shape.blockSize * shape.bits / 8;
  if (shape.dtype != rt::DType::F16 && shape.dtype != rt::DType::BF16)
    choice.refusal = "the packed GEMM multiplies float16 and bfloat16";
  else if (fewestRows > kMostRows)
    choice.refusal =
        "every run has more than " + std::to_string(kMostRows) + " rows";
  else if (shape.blocks > 1 && shape.blockSize % 16 != 0)
    choice.refusal = "blocks of " + std::to_string(shape.blockSize) +
                     " weights split its 16-weight slices";
  else if (rowBytes % 16 != 0)
    choice.refusal = "a packed row of " + std::to_string(rowBytes) +
                     " bytes is not whole 16-byte chunks";
  else if (shape.k % 8 != 0)
    choice.refusal =
        "K = " + std::to_string(shape.k) + " is not whole 16-byte chunks of A";
  if (!choice.refusal.empty())
    return choice;
  int64_t upper = std::min(shape.upperM, kMostRows);
  choice.config = packedTileConfig(fewestRows, upper, shape.n, shape.k);
  choice.mostRows = upper;
  return choice;
}

GemmConfig packedTileConfig(int64_t leastRows, int64_t upperRows, int64_t n,
                            int64_t k) {
  // Enough rows a block that the weights are read once for the most rows
  // of the range, up to 64 (four m-tiles a warp).
  int64_t tileM = std::clamp<int64_t>(llvm::PowerOf2Ceil(upperRows), 16, 64);
  GemmConfig config = {GemmForm::Mma, tileM, 64, 64, 1, 4, 1};
  int64_t tiles = llvm::divideCeil(k, 64);
  int64_t blocks = llvm::divideCeil(std::max<int64_t>(1, leastRows), tileM) *
                   llvm::divideCeil(n, 64);
  while (blocks * config.splitK < kBlocksWanted &&
         config.splitK * 2 <= kGemmMostSplits &&
         tiles / (config.splitK * 2) >= kLeastTilesPerSplit)
    config.splitK *= 2;
  return config;
}

void emitPackedGemm(const PackedGemvShape &shape, const GemmConfig &config,
                    const std::string &name, const std::string &rows,
                    int64_t mostRows, const std::string &dims,
                    llvm::raw_ostream &os) {
  assert(config.form == GemmForm::Mma && config.tileN == 64 &&
         config.tileK == 64 && config.warpsM == 1 && config.warpsN == 4 &&
         config.tileM % 16 == 0 && config.tileM <= 64 &&
         "the packed GEMM's layout");
  gemm::HalfSpelling h = gemm::spellingOf(shape.dtype);
  auto str = [](int64_t v) { return std::to_string(v); };
  bool pairs = decodesPairs(shape), bf16 = shape.dtype == rt::DType::BF16;
  bool halfNibbles = pairs && !bf16 && shape.bits == 4;
  // kiln.dequantize's arithmetic (BodyEmitter::getDequantizedAt), each
  // product rounded on its own (the GPU would contract them into a fused
  // multiply-add); a float zero point's product with the scale is held in
  // its place.
  bool floatZero = shape.zeroPoints == PackedGemvShape::ZeroPoints::Float;
  std::string dequantized = shape.float8 ? "__fmul_rn(q, scale)"
                            : floatZero ? "__fsub_rn(__fmul_rn(q, scale), zero)"
                                        : "__fmul_rn(q - zero, scale)";
  std::string dequantizedAs =
      shape.float8 ? "its value times the scale"
      : floatZero  ? "q times the scale less the zero point's product"
                   : "q less the zero point, times the scale";
  int64_t tileBytes = 64 * shape.bits / 8;
  std::vector<std::pair<std::string, std::string>> values =
      gemm::packedValues(shape, config.splitK, name, rows, dims);
  values.insert(
      values.end(),
      {{"$PAIR_TYPE", h.pair},
       {"$FLOATS_TO_PAIR", shape.dtype == rt::DType::BF16
                               ? "__floats2bfloat162_rn"
                               : "__floats2half2_rn"},
       {"$MMA", h.mma},
       {"$TILE_M", str(config.tileM)},
       {"$M_TILES", str(config.tileM / 16)},
       {"$TILE_BYTES", str(tileBytes)},
       {"$TILE_CHUNKS", str(64 * tileBytes / 16)},
       {"$STAGED_LOOP", gemm::kStagedLoop},
       {"$TILE_STORE", gemm::kFourWarpTileStore},
       {"$TILE_LOCALS", ""},
       {"$TILE_VALUE", "        float v = acc[mt][nt][i];"},
       {"$STAGE_TILE", kStageTile},
       {"$FRAGMENT_HELPERS", pairs ? kPairHelpers : kFloatHelpers},
       {"$B_FRAGMENTS", !pairs            ? kFloatFragments
                        : shape.float8    ? kFloat8Fragments
                        : shape.bits == 4 ? kInt4Fragments
                                          : kInt8Fragments},
       // The 16-bit float whose low mantissa bits take a weight: 1024 in
       // float16 (10 mantissa bits), 128 in bfloat16 (7), both halves,
       // and, for int8's byte permute, its top byte in every byte.
       {"$MAGIC_BITS", shape.bits == 8 ? "0x64646464u"
                       : bf16          ? "0x43004300u"
                                       : "0x64006400u"},
       {"$MAGIC_VALUE", bf16 ? "128" : "1024"},
       // float16's int4 pair is (M + q, M + 16 q'): one fma with (1, 1/16)
       // and the offsets -(M + z), -(M / 16 + z) takes both to q - z.
       {"$NIBBLES", halfNibbles ? "(x & 0x00f0000fu) | $MAGIC_BITS"
                                : "(x & 0xfu) | ((x >> 4) & 0xf0000u) | "
                                  "$MAGIC_BITS"},
       {"$UNBIASED", shape.float8  ? "q"
                     : halfNibbles ? "__hfma2(q, $NAME_pair_of(0x2c003c00u), "
                                     "$NAME_pair_of(offset))"
                                   : "__hsub2(q, $NAME_pair_of(offset))"},
       {"$OFFSET_MEANING",
        shape.float8  ? "none: float8 values in float16 have neither"
        : halfNibbles ? "the low half times 1 and the high times 1/16, "
                        "plus the offsets -(1024 + z) and -(64 + z)"
                      : "less the offset $MAGIC_VALUE + z"},
       {"$SLICE_TYPE", pairs ? "unsigned" : "float"},
       {"$SCALE_STORED", pairs ? "$NAME_bits(scale)" : "scale"},
       {"$VALUE", valueText(shape)},
       {"$MEANING", dequantizedAs},
       {"$DEQUANTIZED", dequantized},
       {"$ZERO_HELD", pairs       ? "as pairs of $ELEMENT: the scale, and "
                                    "$MAGIC_VALUE plus the zero point"
                      : floatZero ? "the zero point times the scale, rounded"
                                  : "the zero point"},
       {"$ZERO_STORED", pairs && shape.float8 ? "0u"
                        : halfNibbles         ? "$NAME_offsets(zero_point)"
                        : pairs     ? "$NAME_bits($MAGIC_VALUE.0f + zero_point)"
                        : floatZero ? "__fmul_rn(zero_point, scale)"
                                    : "zero_point"},
       {"$STORE", config.splitK > 1 || shape.norm != PackedGemvShape::Norm::None
                      ? "        partials[(split * m + row) * n + col] = v;"
                      : "$FINISH"}});
  std::string counters;
  std::vector<std::pair<std::string, std::string>> finish =
      gemm::packedFinishValues(shape, name, config, mostRows, counters);
  values.insert(values.end(), finish.begin(), finish.end());
  os << counters << substitute(kMainKernel, values);
}

} // namespace kiln
