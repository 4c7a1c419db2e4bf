//===- QdqGemmEmitter.cpp - 8-bit Q/DQ products on the tensor cores -------===//
//
// The product of a Q/DQ graph's 8-bit activations and 8-bit weights:
// activations quantized per tensor (scale s_a, zero point z_a), weights
// with a scale s_w per column of the product. Two kinds:
//
// - integers (ONNX Runtime's quantize_static and quantize_dynamic,
//   quantization-aware training exports). With signed symmetric weights
//   each element of the dequantized product is
//
//     sum_k (q_a - z_a) s_a * q_w s_w = s_a s_w (sum_k q_a q_w - z_a sum_k q_w)
//
//   so the kernel multiplies the bytes themselves (mma.sync m16n8k32 .s8,
//   exact 32-bit sums) and scales each sum once. The sums are exact where
//   the float products' are rounded, so the result is within the float
//   product's own rounding of it.
//
//   Unsigned activations are read as signed ones less 128 (their bytes
//   with the top bit flipped), and their zero point (0 where there is
//   none) less 128 too, which keeps q_a - z_a. A column's sum of its
//   weights, which the zero point multiplies, comes from the tensor cores
//   as well: the product of a fragment of ones (zeros past K) with the
//   same B fragments.
//
//   Weights with a zero point z_w a column (uint8 weights, asymmetric) are
//   read the same way, and
//
//     sum_k (q_a - z_a)(q_w - z_w) = sum_k q_a q_w - z_a sum_k q_w
//                                    - z_w sum_k q_a + K z_a z_w
//
//   takes A's row sums too: the product of A's fragments with a B of
//   ones.
//
// - float8 E4M3FN both (NVIDIA ModelOpt's FP8), z_a 0: s_a s_w sum_k q_a
//   q_w, the fragments of the 8-bit layout widened exactly to f16 and
//   multiplied with f32 sums (kiln_mma_m16n8k32_e4m3: sm_90 has no float8
//   mma.sync, only wgmma).
//
// Either reads half the bytes of A that a 16-bit GEMM reads and a quarter
// of an fp32 one; the integers run at twice the tensor cores' 16-bit
// rate, float8 at it.
//
// The layout is the packed GEMM's (PackedGemmEmitter.cpp): a tileM x 64
// tile of C a block, four warps of 16 columns side by side, K in steps of
// 64 bytes staged by cp.async into two buffers, the weights' packed rows as
// they are stored (kiln.dequantize's bytes: integers q + 128, float8
// values as they are); split K adds its scaled partial sums as the packed
// kernels do, in the last block of a tile to arrive.
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"
#include "GemmParts.h"

#include <cassert>

namespace kiln {

namespace {

using gemm::substitute;

constexpr const char *kMainKernel = R"cuda(
// Kiln $KIND GEMM: a $TILE_M x 64 tile of C a block, $OPERANDS
// ($INSTRUCTION, $SUMMING), each sum scaled by the activations' scale and its
// column's; four warps of 16 columns, K in steps of 64 bytes staged by cp.async
// into two buffers; $SPLIT splits of K.
extern "C" __global__ void __launch_bounds__(128) $NAME(
    const unsigned char *__restrict__ a, const unsigned char *__restrict__ packed,
    const $ELEMENT *__restrict__ scales, const $A_ELEMENT *__restrict__ a_scale$A_ZERO_PARAMETER$W_ZERO_PARAMETER$BIAS_PARAMETER$RESIDUAL_PARAMETER$TAIL_PARAMETERS$NORM_PARAMETERS,
    $C_TYPE *__restrict__ c$PARTIALS_PARAMETER$DIMS) {
  kiln_pdl_enter();
  const long long m = $EXTENT_M, n = $EXTENT_N, k = $EXTENT_K;
  const long long row_bytes = $ROW_BYTES;
  // 16 bytes past each row shift the next row's banks.
  __shared__ __align__(16) unsigned char sa[2][$TILE_M][64 + 16];
  __shared__ __align__(16) unsigned char sq[2][64][64 + 16];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long row0 = (long long)blockIdx.y * $TILE_M, col0 = (long long)blockIdx.x * 64;
  const long long split = blockIdx.z;
  // This block's k tiles; past K, A reads zeros.
  const long long k_tiles = (k + 63) / 64;
  const long long per_split = (k_tiles + $SPLIT - 1) / $SPLIT;
  const long long kt_begin = split * per_split;
  const long long kt_end = kt_begin + per_split < k_tiles ? kt_begin + per_split : k_tiles;
  $ACCUMULATOR acc[$M_TILES][2][4];
  #pragma unroll
  for (int mt = 0; mt < $M_TILES; ++mt)
    #pragma unroll
    for (int nt = 0; nt < 2; ++nt)
      #pragma unroll
      for (int i = 0; i < 4; ++i)
        acc[mt][nt][i] = 0;$COLUMN_SUM_DECLARATION
$STAGED_LOOP
    #pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      // A's fragment (bytes 4t..4t+3 and 16 on, of rows g and g + 8) is
      // what ldmatrix gives of 8 x 16-byte matrices.
      unsigned af[$M_TILES][4];$LIVE
      #pragma unroll
      for (int mt = 0; mt < $M_TILES; ++mt) {
        kiln_ldmatrix_x4(af[mt], &sa[s][mt * 16 + (lane & 15)][kk * 32 + (lane >> 4) * 16]);$FLIP_A
      }
      #pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        // Column lane / 4's bytes 4t..4t+3 and 16 on$B_STORED.
        const unsigned char *q = &sq[s][warp * 16 + nt * 8 + (lane >> 2)][kk * 32 + 4 * (lane & 3)];
        const unsigned bf[2] = {*reinterpret_cast<const unsigned *>(q)$B_FLIP,
                                *reinterpret_cast<const unsigned *>(q + 16)$B_FLIP};
        #pragma unroll
        for (int mt = 0; mt < $M_TILES; ++mt)
          $MULTIPLY(acc[mt][nt], af[mt], bf, acc[mt][nt]);$ONES$SUM_COLUMNS
      }$SUM_ROWS
    }
    __syncthreads();
  }
$TILE_STORE
)cuda";

/// The staging of k tile `kn` into buffer `st`: A's rows and each column's
/// packed row, 16-byte chunks (K is whole chunks; zeros past m, k and n).
/// Unrolled, as the mma form's staging is (GemmEmitter.cpp says why).
constexpr const char *kStageTile = R"cuda(    {
      const long long k0 = kn * 64;
      #pragma unroll
      for (int i = 0; i < ($TILE_M * 4 + 127) / 128; ++i) {
        const int e = tid + i * 128;
        if (($TILE_M * 4) % 128 != 0 && e >= $TILE_M * 4)
          break;
        const int r = e / 4, cb = e % 4 * 16;
        const long long gr = row0 + r, gk = k0 + cb;
        const unsigned bytes = gr < m && gk < k ? 16u : 0u;
        kiln_cp_async_16(&sa[st][r][cb], bytes ? a + gr * k + gk : a, bytes);
      }
      #pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int e = tid + i * 128;
        const int r = e / 4, cb = e % 4 * 16;
        const long long col = col0 + r, at = k0 + cb;
        const unsigned bytes = col < n && at < row_bytes ? 16u : 0u;
        kiln_cp_async_16(&sq[st][r][cb], bytes ? packed + col * row_bytes + at : packed, bytes);
      }
    })cuda";

} // namespace

namespace gemm {

std::vector<std::pair<std::string, std::string>>
qdqValues(const QdqGemmShape &shape, int64_t splitK, const std::string &name,
          const std::string &rows, const std::string &dims,
          const QdqGemmTail *tail) {
  std::vector<std::pair<std::string, std::string>> values =
      packedValues(qdqPackedShape(shape), splitK, name, rows, dims);
  // A tail computes and stores the element's value of its own type.
  if (tail) {
    GemmKernelKind kind = gemm::qdqEpilogueKind(shape);
    for (auto &[placeholder, value] : values) {
      if (placeholder == "$C_TYPE")
        value = tail->storage;
      else if (placeholder == "$TAIL_PARAMETERS")
        value = tail->parameters;
      else if (placeholder == "$FINISH")
        value = finishThroughTail(kind, *tail);
      else if (placeholder == "$NORM_PARAMETERS" &&
               shape.norm != PackedGemvShape::Norm::None)
        // The norm of the tail's fp32 value, by fp32 scale and shift.
        value =
            std::string(", const float *__restrict__ norm_scale") +
            (shape.normShift ? ", const float *__restrict__ norm_shift" : "");
    }
  }
  HalfSpelling scaleSpelling = spellingOf(shape.scaleDtype);
  values.insert(
      values.end(),
      {{"$A_ELEMENT", scaleSpelling.type},
       {"$A_TO_FLOAT", scaleSpelling.toFloat},
       {"$STORE", splitK > 1 || shape.norm != PackedGemvShape::Norm::None
                      ? "        partials[(split * m + row) * n + col] = v;"
                      : "$FINISH"}});
  return values;
}

} // namespace gemm

void emitQdqGemm(const QdqGemmShape &shape, const GemmConfig &config,
                 const std::string &name, const std::string &rows,
                 int64_t mostRows, const std::string &dims,
                 const QdqGemmTail *tail, llvm::raw_ostream &os) {
  assert(config.form == GemmForm::Mma && config.tileN == 64 &&
         config.tileK == 64 && config.warpsM == 1 && config.warpsN == 4 &&
         config.tileM % 16 == 0 && config.tileM <= 64 &&
         "the Q/DQ GEMM's layout");
  auto str = [](int64_t v) { return std::to_string(v); };
  std::vector<std::pair<std::string, std::string>> values =
      gemm::qdqValues(shape, config.splitK, name, rows, dims, tail);
  std::string scaleElement = gemm::spellingOf(shape.scaleDtype).type;
  // A zero point to take out of the activations' sums: theirs, or 128
  // where unsigned bytes are read as signed ones (0 where there is none).
  bool zero = shape.zeroPoint || shape.unsignedActivations;
  bool weightZero = shape.weightZeroPoints;
  bool float8 = shape.float8;
  assert(!(float8 && (zero || weightZero)) && "float8 has no zero points");
  values.insert(
      values.end(),
      {{"$KIND", float8 ? "FP8" : "integer"},
       {"$OPERANDS",
        float8       ? "float8 E4M3FN activations times float8 weights"
        : weightZero ? "8-bit activations times 8-bit weights with zero points"
                     : "8-bit activations times signed 8-bit weights"},
       {"$INSTRUCTION",
        float8 ? "mma.sync m16n8k32 .e4m3" : "mma.sync m16n8k32 .s8"},
       {"$SUMMING", float8 ? "widened to f16, f32 sums" : "32-bit sums"},
       {"$ACCUMULATOR", float8 ? "float" : "int"},
       {"$MULTIPLY",
        float8 ? "kiln_mma_m16n8k32_e4m3" : "kiln_mma_m16n8k32_s8"},
       {"$B_STORED", float8       ? ", float8 values as stored"
                     : weightZero ? ", stored unsigned (read less 128)"
                                  : ", stored q + 128 (read signed)"},
       {"$B_FLIP", float8 ? "" : " ^ 0x80808080u"},
       {"$TILE_M", str(config.tileM)},
       {"$M_TILES", str(config.tileM / 16)},
       {"$STAGED_LOOP", gemm::kStagedLoop},
       {"$TILE_STORE", gemm::kFourWarpTileStore},
       {"$TILE_LOCALS", "\n  const float activation_scale = "
                        "$A_TO_FLOAT(a_scale[0]);$ZERO_LOCAL"},
       {"$TILE_VALUE",
        "$WEIGHT_ZERO_LOCAL        const $ACCUMULATOR sum = "
        "acc[mt][nt][i]$LESS_ZERO$LESS_WEIGHT_ZERO;\n"
        "        float v = __fmul_rn(__fmul_rn((float)sum, activation_scale), "
        "$TO_FLOAT(scales[col]));"},
       {"$STAGE_TILE", kStageTile},
       {"$A_ZERO_PARAMETER",
        shape.zeroPoint ? ", const " + scaleElement + " *__restrict__ a_zero"
                        : ""},
       {"$W_ZERO_PARAMETER",
        weightZero ? ", const unsigned char *__restrict__ w_zero" : ""},
       {"$LIVE",
        shape.unsignedActivations || zero
            ? "\n      // Which of the lane's bytes of A are before K (K is "
              "whole 16-byte\n      // chunks: a lane's four are all in or "
              "all out); past it A and B\n      // read zeros, which the "
              "steps below must keep.\n"
              "      unsigned live[4];\n"
              "      #pragma unroll\n"
              "      for (int i = 0; i < 4; ++i)\n"
              "        live[i] = kt * 64 + kk * 32 + 4 * (lane & 3) + (i >> "
              "1) * 16 < k ? 0xffffffffu : 0u;"
            : ""},
       {"$FLIP_A",
        shape.unsignedActivations
            ? "\n        // Unsigned bytes read as signed ones less 128.\n"
              "        #pragma unroll\n"
              "        for (int i = 0; i < 4; ++i)\n"
              "          af[mt][i] ^= 0x80808080u & live[i];"
            : ""},
       {"$COLUMN_SUM_DECLARATION",
        std::string(zero ? "\n  // Each column's sum of its weights over "
                           "this split's K (every row\n  // of an m16n8 tile "
                           "holds it), for the activations' zero point.\n"
                           "  int col_sum[2][4] = {{0, 0, 0, 0}, {0, 0, 0, "
                           "0}};"
                         : "") +
            (weightZero
                 ? "\n  // Each row's sum of A over this split's K, for the "
                   "weights' zero\n  // points; and the split's share of "
                   "K.\n"
                   "  int row_sum[$M_TILES][4];\n"
                   "  #pragma unroll\n"
                   "  for (int mt = 0; mt < $M_TILES; ++mt)\n"
                   "    #pragma unroll\n"
                   "    for (int i = 0; i < 4; ++i)\n"
                   "      row_sum[mt][i] = 0;\n"
                   "  const long long k_begin = kt_begin * 64, k_end = "
                   "kt_end * 64 < k ? kt_end * 64 : k;\n"
                   "  const long long k_split = k_end > k_begin ? k_end - "
                   "k_begin : 0;"
                 : "")},
       {"$ONES", zero ? "\n        // A row of ones before K: the column's "
                        "sum.\n"
                        "        const unsigned ones[4] = {0x01010101u & "
                        "live[0], 0x01010101u & live[1],\n"
                        "                                  0x01010101u & "
                        "live[2], 0x01010101u & live[3]};"
                      : ""},
       {"$SUM_COLUMNS",
        zero ? "\n        kiln_mma_m16n8k32_s8(col_sum[nt], ones, bf, "
               "col_sum[nt]);"
             : ""},
       {"$ZERO_LOCAL",
        zero ? std::string("\n  // Whole: a cast of an 8-bit integer.\n"
                           "  const int activation_zero = ") +
                   (shape.zeroPoint ? "(int)$A_TO_FLOAT(a_zero[0])" : "0") +
                   (shape.unsignedActivations ? " - 128" : "") + ";"
             : ""},
       {"$LESS_ZERO", zero ? " - activation_zero * col_sum[nt][i]" : ""},
       {"$SUM_ROWS",
        weightZero
            ? "\n      // A's row sums (A's fragments times a B of ones; A "
              "is zeros past K),\n      // for the weights' zero points.\n"
              "      const unsigned ones_b[2] = {0x01010101u, 0x01010101u};\n"
              "      #pragma unroll\n"
              "      for (int mt = 0; mt < $M_TILES; ++mt)\n"
              "        kiln_mma_m16n8k32_s8(row_sum[mt], af[mt], ones_b, "
              "row_sum[mt]);"
            : ""},
       {"$WEIGHT_ZERO_LOCAL",
        weightZero ? "        // The column's zero point, read signed as "
                     "its weights are.\n"
                     "        const int weight_zero = (int)w_zero[col] - "
                     "128;\n"
                   : ""},
       {"$LESS_WEIGHT_ZERO",
        weightZero ? std::string(" - weight_zero * row_sum[mt][i]") +
                         (zero ? " + (int)k_split * activation_zero * "
                                 "weight_zero"
                               : "")
                   : ""}});
  std::string counters;
  std::vector<std::pair<std::string, std::string>> finish =
      gemm::qdqFinishValues(shape, name, config.splitK, config.tileM,
                            config.tileN, mostRows, tail, counters);
  values.insert(values.end(), finish.begin(), finish.end());
  os << counters << substitute(kMainKernel, values);
}

} // namespace kiln
