//===- GemmParts.cpp - the text both GEMM forms share ---------------------===//

#include "GemmParts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/bit.h"

#include <cassert>

namespace kiln {
namespace gemm {

namespace {

/// The epilogue in cuBLASLt's order: the residual, the bias, then the
/// activation (GELU's tanh form, as cuBLASLt's GELU epilogue and the host
/// backend's stand-in compute it; fp32's exact GELU as kiln.gelu's kernels
/// compute it), then the store.
constexpr const char *kApply = R"cuda(
      if ($HAS_RESIDUAL) v += $TO_FLOAT(r_mat[row * n + col]);
      if ($HAS_BIAS) v += $TO_FLOAT(bias[col]);
      if ($ACTIVATION == 1) v = fmaxf(v, 0.0f);
      else if ($ACTIVATION == 2)
        v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
      else if ($ACTIVATION == 3) v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));)cuda";
constexpr const char *kStore = R"cuda(
      c_mat[row * n + col] = $AS_STORED(v);
)cuda";

/// The zero-point parameter of a kernel over packed weights of `shape`
/// and its $ZERO_POINT (packedValues).
std::pair<std::string, std::string>
packedZeroPoint(const PackedGemvShape &shape) {
  auto str = [](int64_t v) { return std::to_string(v); };
  int64_t perByte = 8 / shape.bits;
  switch (shape.zeroPoints) {
  case PackedGemvShape::ZeroPoints::Middle:
    return {"", shape.float8 ? "0.0f"
                             : str(int64_t(1) << (shape.bits - 1)) + ".0f"};
  case PackedGemvShape::ZeroPoints::Packed:
    return {", const unsigned char *__restrict__ zero_points",
            "live ? (float)((zero_points[col * " +
                str((shape.blocks * shape.bits + 7) / 8) + " + blk / " +
                str(perByte) + "] >> ((blk % " + str(perByte) + ") * " +
                str(shape.bits) + ")) & " + str((1 << shape.bits) - 1) +
                "u) : 0.0f"};
  case PackedGemvShape::ZeroPoints::Float: {
    HalfSpelling h = spellingOf(shape.dtype);
    return {", const " + std::string(h.type) + " *__restrict__ zero_points",
            "live ? " + std::string(h.toFloat) +
                "(zero_points[col * blocks + blk]) : 0.0f"};
  }
  }
  return {"", ""};
}

} // namespace

HalfSpelling spellingOf(rt::DType dtype) {
  // fp32: the integer GEMM's epilogue and split finish (no pairs, no mma).
  if (dtype == rt::DType::F32)
    return {"float", "f32", "", "", "", "", ""};
  assert((dtype == rt::DType::F16 || dtype == rt::DType::BF16) &&
         "Kiln's GEMMs are float16 or bfloat16, their epilogues fp32 too");
  if (dtype == rt::DType::BF16)
    return {"__nv_bfloat16",         "bf16",           "__bfloat162float",
            "__float2bfloat16_rn",   "__nv_bfloat162", "__bfloat1622float2",
            "kiln_mma_m16n8k16_bf16"};
  return {"__half",
          "f16",
          "__half2float",
          "__float2half_rn",
          "__half2",
          "__half22float2",
          "kiln_mma_m16n8k16_f16"};
}

const char *const kIntegerParameters =
    "long long batch, long long m, long long n, long long k, "
    "long long stride_a, long long stride_b, long long stride_c, "
    "long long outer_batch, long long outer_stride_a, "
    "long long outer_stride_b, long long outer_stride_c, "
    "long long activation, long long split_k";

const char *const kMainSignature =
    R"cuda(extern "C" __global__ void __launch_bounds__($THREADS) $NAME(
    const $ELEMENT *__restrict__ a, const $ELEMENT *__restrict__ b, $C_ELEMENT *c, const $ELEMENT *__restrict__ bias,
    const $ELEMENT *residual, float *__restrict__ partials$NORM_PARAMETERS, $INTEGERS$NORM_INTEGERS) {
  kiln_pdl_enter();)cuda";

const char *const kStagedLoop = R"cuda(  if (kt_begin < kt_end) {
    const int st = 0;
    const long long kn = kt_begin;
$STAGE_TILE
    kiln_cp_async_commit();
  }
  for (long long kt = kt_begin; kt < kt_end; ++kt) {
    const int s = (int)((kt - kt_begin) & 1);
    // The next tile streams in while this one is multiplied; the barrier
    // at the end of the last step freed its buffer.
    if (kt + 1 < kt_end) {
      const int st = s ^ 1;
      const long long kn = kt + 1;
$STAGE_TILE
    }
    kiln_cp_async_commit();
    kiln_cp_async_wait<1>();
    __syncthreads();)cuda";

const char *const kFourWarpTileStore =
    R"cuda(  // Accumulator i of an m16n8 tile is row lane / 4 (+ 8 for i >= 2),
  // column 2 (lane % 4) + i % 2.$TILE_LOCALS
  const $ELEMENT *r_mat = $R_MAT;$BIAS_LOCAL
  $C_TYPE *c_mat = c;
  #pragma unroll
  for (int mt = 0; mt < $M_TILES; ++mt)
    #pragma unroll
    for (int nt = 0; nt < 2; ++nt)
      #pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long row = row0 + mt * 16 + (lane >> 2) + (i >> 1) * 8;
        const long long col = col0 + warp * 16 + nt * 8 + (lane & 3) * 2 + (i & 1);
        if (row >= m || col >= n)
          continue;
$TILE_VALUE
$STORE
      }$ARRIVALS
})cuda";

const char *const kGemvColumnStores = R"cuda($EXCHANGE
  const long long row = row0 + held_row;
  // A lane holding a copy of another's sums, or a row past m, stores none
  // (and stays for a split's finish).
  if ((part & copies) == 0 && row < m) {$DECLARATIONS
    #pragma unroll
    for (int t = 0; t < $COLUMNS_PER_LANE; ++t) {
      const long long col = warp_col0 + 4 * t;
      if (col >= n)
        continue;
      float v = acc[0][t];
$STORE
    }
  }$ARRIVALS
}
)cuda";

/// What every end of a split kernel starts with (kSplitFinish,
/// kNormFinish): the arrival at the tile's counter
/// ($ARRIVAL_TILE: the tile's index in the grid, over every matrix of a
/// batch), which every block but the last to arrive leaves by (none where K
/// is not split: a norm's kernel stores its sums unsplit too; $UNSPLIT_TILE
/// says what such a block does), and the loop
/// over the tile's elements in C ($C_MAT: the matrix's) that adds the
/// splits' sums ($PARTIAL_SUMS: the matrix's first split's) into `v` in
/// split order, then $EACH_ELEMENT.
/// Each thread's fence orders its stores before its block's arrival (CUDA's
/// threadFenceReduction sample); the counters are per-context globals that the
/// module's load zeroes and atomicInc's wrap leaves zero again for the next
/// launch; the last block reads the other blocks' sums through L2 (__ldcg).
constexpr const char *kLastOfSplits = R"cuda(    if ($SPLIT > 1) {
      __shared__ bool last_split;
      __threadfence();
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence();
        last_split = atomicInc(&$NAME_arrived[$ARRIVAL_TILE], $SPLIT - 1) == $SPLIT - 1;
      }
      __syncthreads();
      if (!last_split)
        return;
      __threadfence();
    } else {
$UNSPLIT_TILE
    }
    const $ELEMENT *r_mat = $R_MAT;$BIAS_LOCAL
    $C_TYPE *c_mat = $C_MAT;
    float *split_sums = $PARTIAL_SUMS;
    for (int e = threadIdx.x; e < $ARRIVAL_ROWS * $ARRIVAL_COLUMNS; e += blockDim.x) {
      const long long row = (long long)blockIdx.y * $ARRIVAL_ROWS + e / $ARRIVAL_COLUMNS;
      const long long col = (long long)blockIdx.x * $ARRIVAL_COLUMNS + e % $ARRIVAL_COLUMNS;
      if (row >= m || col >= n)
        continue;
      float v = 0.0f;
      #pragma unroll
      for (int s = 0; s < $SPLIT; ++s)
        v += __ldcg(&split_sums[(s * m + row) * n + col]);
$EACH_ELEMENT
    })cuda";

/// The end of a kernel split over K (splitFinishValues).
constexpr const char *kSplitFinish = R"cuda(
  // The split's last block to arrive at this tile of C adds the splits'
  // sums and applies the epilogue, which a kernel of its own did before:
  // one launch fewer.
  {
$LAST_OF_SPLITS
  }
)cuda";

/// The end of a kernel whose epilogue ends in a row norm
/// (normFinishValues): every block stores its sums, split or not.
constexpr const char *kNormFinish = R"cuda(
  // The last of the tile's $SPLIT blocks to arrive at its counter adds their
  // sums, applies the epilogue and stores what the norm reads (below), then
  // each of the tile's rows' mean and squared deviations over the tile's
  // columns (a warp a row). The last of the row tile's column tiles to
  // arrive at its counter combines those in column order (Chan's formula)
  // and normalizes its rows: one launch, where a norm kernel would be a
  // second.
  {
$LAST_OF_SPLITS
    // What the norm reads at (row, col), as stored above.
    auto norm_input = [&](long long row, long long col) -> float {
      return $READ_VALUE;
    };
    // (mean, squared deviations) of each row over each column tile, past
    // the splits' sums.
    float *stats = $STATS;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (int)(blockDim.x >> 5);
    const long long col0 = (long long)blockIdx.x * $ARRIVAL_COLUMNS;
    const long long count = n - col0 < $ARRIVAL_COLUMNS ? n - col0 : $ARRIVAL_COLUMNS;
    __threadfence();
    __syncthreads();
    for (int r = warp; r < $ARRIVAL_ROWS; r += warps) {
      const long long row = (long long)blockIdx.y * $ARRIVAL_ROWS + r;
      if (row >= m)
        break;
      float mean = 0.0f;$ROW_MEAN
      float deviations = 0.0f;
      for (long long j = lane; j < count; j += 32) {
        const float x = norm_input(row, col0 + j) - mean;
        deviations += x * x;
      }
      deviations = kiln_warp_sum(deviations);
      if (lane == 0) {
        stats[(row * gridDim.x + blockIdx.x) * 2] = mean;
        stats[(row * gridDim.x + blockIdx.x) * 2 + 1] = deviations;
      }
    }
    __shared__ bool last_tile;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      last_tile = atomicInc(&$NAME_rows_arrived[$ROW_TILE], gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last_tile)
      return;
    __threadfence();
    for (int r = warp; r < $ARRIVAL_ROWS; r += warps) {
      const long long row = (long long)blockIdx.y * $ARRIVAL_ROWS + r;
      if (row >= m)
        break;
      // Each lane combines its tiles in order, then the lanes combine down
      // to lane 0 (the same order in every lane's reading of the result).
      float tally = 0.0f, mean = 0.0f, deviations = 0.0f;
      for (long long t = lane; t < gridDim.x; t += 32) {
        const long long columns = n - t * $ARRIVAL_COLUMNS;
        $NAME_chan((float)(columns < $ARRIVAL_COLUMNS ? columns : $ARRIVAL_COLUMNS),
                      __ldcg(&stats[(row * gridDim.x + t) * 2]),
                      __ldcg(&stats[(row * gridDim.x + t) * 2 + 1]), tally, mean, deviations);
      }
      #pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) {
        const float other_tally = __shfl_down_sync(0xffffffffu, tally, offset);
        const float other_mean = __shfl_down_sync(0xffffffffu, mean, offset);
        const float other_deviations = __shfl_down_sync(0xffffffffu, deviations, offset);
        $NAME_chan(other_tally, other_mean, other_deviations, tally, mean, deviations);
      }
      mean = __shfl_sync(0xffffffffu, mean, 0);
      deviations = __shfl_sync(0xffffffffu, deviations, 0);
      const float inv_std = rsqrtf(deviations / (float)n + $EPSILON_VALUE);
      for (long long col = lane; col < n; col += 32) {
        float y = (norm_input(row, col) - mean) * inv_std * $NORM_TO_FLOAT(norm_scale[col]);$SHIFT_ADD
$NORMED_STATEMENTS        c_mat[row * n + col] = $NORMED_VALUE;
      }
    }
  }
)cuda";

/// The helper kNormFinish calls (beside the prelude's kiln_warp_sum),
/// defined before the kernel.
constexpr const char *kNormHelpers = R"cuda(
// Chan's combination of a part's statistics (its count, mean and squared
// deviations) into the running ones; a part of no elements changes nothing.
__device__ __forceinline__ void $NAME_chan(float count, float mean, float deviations,
                                              float &tally, float &running_mean,
                                              float &running_deviations) {
  if (count == 0.0f)
    return;
  const float total = tally + count, delta = mean - running_mean;
  running_mean += delta * (count / total);
  running_deviations += deviations + delta * delta * (tally * count / total);
  tally = total;
}
)cuda";

/// kLastOfSplits' $UNSPLIT_TILE where the block stored its sums unsplit
/// (a norm's kernel): it reads them back.
constexpr const char *kReadOwnSums =
    "      // A block that owns its tile reads back its own sums.\n"
    "      __syncthreads();";

/// kNormFinish's $ROW_MEAN of a LayerNorm: the mean of the row's values
/// over the tile's columns, a warp's sum.
constexpr const char *kTileRowMean =
    "\n      for (long long j = lane; j < count; j += 32)\n"
    "        mean += norm_input(row, col0 + j);\n"
    "      mean = kiln_warp_sum(mean) / (float)count;";

std::string arrivalCounters(const std::string &name, uint64_t tiles,
                            uint64_t rowTiles) {
  std::string text =
      "// The arrivals of " + name + "'s splits at each tile of C" +
      (rowTiles ? ", and of its column tiles at each row tile" : "") +
      ".\nKILN_PER_CONTEXT unsigned int " + name + "_arrived[" +
      std::to_string(tiles) + "];\n";
  if (rowTiles)
    text += "KILN_PER_CONTEXT unsigned int " + name + "_rows_arrived[" +
            std::to_string(rowTiles) + "];\n";
  return text;
}

/// kLastOfSplits' placeholders in a kernel over packed or 8-bit weights:
/// one matrix, its blocks' z the split.
static std::vector<std::pair<std::string, std::string>> oneMatrixArrivals() {
  return {{"$LAST_OF_SPLITS", kLastOfSplits},
          {"$UNSPLIT_TILE", kReadOwnSums},
          {"$ARRIVAL_TILE", "blockIdx.y * gridDim.x + blockIdx.x"},
          {"$C_MAT", "c"},
          {"$PARTIAL_SUMS", "partials"}};
}

std::vector<std::pair<std::string, std::string>>
splitFinishValues(const std::string &name, int64_t splitK, int64_t tileM,
                  int64_t tileN, int64_t mostRows, int64_t n,
                  std::string &counters) {
  if (splitK <= 1)
    return {{"$ARRIVALS", ""}};
  int64_t tiles = (n + tileN - 1) / tileN * ((mostRows + tileM - 1) / tileM);
  counters = arrivalCounters(name, tiles, 0);
  std::vector<std::pair<std::string, std::string>> values = {
      {"$ARRIVALS", kSplitFinish},
      {"$EACH_ELEMENT", "$FINISH"},
      {"$ARRIVAL_ROWS", std::to_string(tileM)},
      {"$ARRIVAL_COLUMNS", std::to_string(tileN)}};
  llvm::append_range(values, oneMatrixArrivals());
  return values;
}

std::vector<std::pair<std::string, std::string>>
familyFinishValues(const GemmKernelKind &kind, const GemmConfig &config) {
  HalfSpelling h = spellingOf(kind.dtype);
  std::string matrixAt = "outer * outer_stride_c + inner * stride_c";
  std::vector<std::pair<std::string, std::string>> values = {
      {"$LAST_OF_SPLITS", kLastOfSplits},
      {"$SPLIT", "split_k"},
      {"$ARRIVAL_TILE",
       "(matrix * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x"},
      {"$ARRIVAL_ROWS", std::to_string(config.tileM)},
      {"$ARRIVAL_COLUMNS", std::to_string(config.tileN)},
      {"$R_MAT", "residual ? residual + " + matrixAt + " : nullptr"},
      {"$BIAS_LOCAL", ""},
      {"$C_TYPE", "$C_ELEMENT"},
      {"$C_MAT", "c + " + matrixAt},
      {"$PARTIAL_SUMS", "partials + matrix * split_k * m * n"}};
  if (!kind.norm) {
    llvm::append_range(values,
                       std::vector<std::pair<std::string, std::string>>{
                           {"$ARRIVALS", kSplitFinish},
                           {"$UNSPLIT_TILE",
                            "      // The block stored its tile of C itself.\n"
                            "      return;"},
                           {"$EACH_ELEMENT", finishOf(kind)},
                           {"$NORM_PARAMETERS", ""},
                           {"$NORM_INTEGERS", ""}});
    return values;
  }
  // The norm's choices are run-time arguments, as the norm kernel's are:
  // one kernel serves LayerNorm and RMSNorm, any epsilon, with or without
  // a shift and a sum. Where the sum is stored, the norm reads it as
  // stored (rounded: what later steps read), else the float; either kept
  // over split 0's sum of the element, which only this thread reads.
  llvm::append_range(
      values,
      std::vector<std::pair<std::string, std::string>>{
          {"$ARRIVALS", kNormFinish},
          {"$UNSPLIT_TILE", kReadOwnSums},
          {"$EACH_ELEMENT", "$APPLY_EPILOGUE\n$KEEP_VALUE"},
          {"$APPLY_EPILOGUE", applyOf(kind)},
          {"$KEEP_VALUE", "      if (sum) {\n"
                          "        const $ELEMENT written = $FROM_FLOAT(v);\n"
                          "        sum[" +
                              matrixAt +
                              " + row * n + col] = written;\n"
                              "        v = $TO_FLOAT(written);\n"
                              "      }\n"
                              "      split_sums[row * n + col] = v;"},
          {"$READ_VALUE", "__ldcg(&split_sums[row * n + col])"},
          {"$ROW_MEAN",
           "\n      if (!rms) {" + std::string(kTileRowMean) + "\n      }"},
          {"$SHIFT_ADD",
           "\n        if (norm_shift) y += $NORM_TO_FLOAT(norm_shift[col]);"},
          {"$NORM_TO_FLOAT", h.toFloat},
          {"$EPSILON_VALUE", "__int_as_float((int)epsilon_bits)"},
          // Past every matrix's splits, each matrix's rows' statistics.
          {"$STATS", "partials + batch * outer_batch * split_k * m * n + "
                     "matrix * m * gridDim.x * 2"},
          {"$ROW_TILE", "matrix * gridDim.y + blockIdx.y"},
          {"$NORMED_VALUE", storedAs(kind.dtype, kind.widen) + "(y)"},
          {"$NORMED_STATEMENTS", ""},
          {"$TO_FLOAT", h.toFloat},
          {"$FROM_FLOAT", h.fromFloat},
          {"$NORM_PARAMETERS",
           ", const $ELEMENT *__restrict__ norm_scale, const $ELEMENT "
           "*__restrict__ norm_shift, $ELEMENT *sum"},
          {"$NORM_INTEGERS", ", long long epsilon_bits, long long rms"}});
  return values;
}

std::string familyFinishPreamble(const GemmKernelKind &kind,
                                 const std::string &name) {
  return kind.norm ? substitute(kNormHelpers, {{"$NAME", name}}) : "";
}

std::vector<std::pair<std::string, std::string>>
normFinishValues(const PackedGemvShape &shape, const std::string &name,
                 int64_t splitK, int64_t tileM, int64_t tileN, int64_t mostRows,
                 std::string &preamble) {
  assert(shape.norm != PackedGemvShape::Norm::None && "a norm to finish");
  HalfSpelling h = spellingOf(shape.dtype);
  int64_t columnTiles = (shape.n + tileN - 1) / tileN;
  int64_t rowTiles = (mostRows + tileM - 1) / tileM;
  preamble = arrivalCounters(name, columnTiles * rowTiles, rowTiles) +
             substitute(kNormHelpers, {{"$NAME", name}});
  GemmKernelKind kind;
  kind.dtype = shape.dtype;
  kind.bias = shape.bias;
  kind.residual = shape.residual;
  kind.activation = shape.activation;
  std::string element = h.type;
  bool layer = shape.norm == PackedGemvShape::Norm::Layer;
  // The norm reads the sum as stored (rounded: what later steps read), or
  // as a float, kept over split 0's sum of that element (this thread's
  // alone) where it is stored rounded too (onnxruntime's skip norms) or
  // not at all.
  bool readsSum = shape.normSum && !shape.normWide;
  // A wide norm's product (and bias) is a 16-bit value the residual is
  // added to in f32, as onnxruntime computes its skip norm after a
  // MatMulNBits; else the 16-bit chain rounds once, at its end.
  std::string apply = applyOf(kind);
  if (shape.normWide) {
    GemmKernelKind product = kind;
    product.residual = false;
    apply =
        applyOf(product) + "\n      v = $TO_FLOAT($FROM_FLOAT(v));" +
        (shape.residual ? "\n      v += $TO_FLOAT(r_mat[row * n + col]);" : "");
  }
  std::string keep;
  if (shape.normSum)
    keep += "      sum[row * n + col] = $FROM_FLOAT(v);\n";
  if (!readsSum)
    keep += "      partials[row * n + col] = v;\n";
  std::vector<std::pair<std::string, std::string>> values = {
      {"$ARRIVALS", kNormFinish},
      {"$EACH_ELEMENT", "$APPLY_EPILOGUE\n$KEEP_VALUE"},
      {"$ARRIVAL_ROWS", std::to_string(tileM)},
      {"$ARRIVAL_COLUMNS", std::to_string(tileN)},
      {"$APPLY_EPILOGUE", apply},
      {"$KEEP_VALUE", keep},
      {"$READ_VALUE", readsSum ? "$TO_FLOAT(__ldcg(&sum[row * n + col]))"
                               : "__ldcg(&partials[row * n + col])"},
      {"$ROW_MEAN",
       layer ? kTileRowMean : "\n      // RMSNorm: the squares about zero."},
      {"$SHIFT_ADD", shape.normShift
                         ? "\n        y += $NORM_TO_FLOAT(norm_shift[col]);"
                         : ""},
      {"$NORM_TO_FLOAT", "$TO_FLOAT"},
      {"$EPSILON_VALUE",
       "__int_as_float(" +
           std::to_string(llvm::bit_cast<int32_t>(shape.normEpsilon)) + ")"},
      {"$FROM_FLOAT", h.fromFloat},
      {"$STATS", "partials + $SPLIT * m * n"},
      {"$ROW_TILE", "blockIdx.y"},
      {"$NORMED_VALUE", "$FROM_FLOAT(y)"},
      {"$NORMED_STATEMENTS", ""}};
  llvm::append_range(values, oneMatrixArrivals());
  return values;
}

std::vector<std::pair<std::string, std::string>>
packedFinishValues(const PackedGemvShape &shape, const std::string &name,
                   const GemmConfig &config, int64_t mostRows,
                   std::string &preamble) {
  if (shape.norm != PackedGemvShape::Norm::None)
    return normFinishValues(shape, name, config.splitK, config.tileM,
                            config.tileN, mostRows, preamble);
  return splitFinishValues(name, config.splitK, config.tileM, config.tileN,
                           mostRows, shape.n, preamble);
}

std::string storedAs(rt::DType dtype, bool widen) {
  if (!widen)
    return spellingOf(dtype).fromFloat;
  return dtype == rt::DType::BF16 ? "kiln_rounded_bf16" : "kiln_rounded_f16";
}

std::string finishOf(const GemmKernelKind &kind) {
  HalfSpelling h = spellingOf(kind.dtype);
  return substitute(std::string(kApply) + kStore,
                    {{"$TO_FLOAT", h.toFloat},
                     {"$AS_STORED", storedAs(kind.dtype, kind.widen)},
                     {"$HAS_RESIDUAL", kind.residual ? "true" : "false"},
                     {"$HAS_BIAS", kind.bias ? "true" : "false"},
                     {"$ACTIVATION", std::to_string(int(kind.activation))}});
}

std::string applyOf(const GemmKernelKind &kind) {
  return substitute(kApply,
                    {{"$TO_FLOAT", spellingOf(kind.dtype).toFloat},
                     {"$HAS_RESIDUAL", kind.residual ? "true" : "false"},
                     {"$HAS_BIAS", kind.bias ? "true" : "false"},
                     {"$ACTIVATION", std::to_string(int(kind.activation))}});
}

/// `kind`'s epilogue, the value rounded to the product's type as
/// `product`, then the tail's statements (finishThroughTail without the
/// store).
static std::string applyThroughTail(const GemmKernelKind &kind,
                                    const QdqGemmTail &tail) {
  HalfSpelling h = spellingOf(kind.dtype);
  std::string rounded =
      kind.dtype == rt::DType::F32 ? "v" : storedAs(kind.dtype, true) + "(v)";
  return substitute(kApply,
                    {{"$TO_FLOAT", h.toFloat},
                     {"$HAS_RESIDUAL", kind.residual ? "true" : "false"},
                     {"$HAS_BIAS", kind.bias ? "true" : "false"},
                     {"$ACTIVATION", std::to_string(int(kind.activation))}}) +
         "\n      // The element as the product's type holds it, then the "
         "tail.\n      const float product = " +
         rounded + ";\n" + tail.statements;
}

std::string finishThroughTail(const GemmKernelKind &kind,
                              const QdqGemmTail &tail) {
  return applyThroughTail(kind, tail) +
         "      c_mat[row * n + col] = " + tail.value + ";\n";
}

PackedGemvShape qdqPackedShape(const QdqGemmShape &shape) {
  PackedGemvShape packed;
  packed.dtype = shape.dtype;
  packed.n = shape.n;
  packed.k = shape.k;
  packed.bits = 8;
  packed.blockSize = shape.rowBytes;
  packed.blocks = 1;
  packed.bias = shape.bias;
  packed.residual = shape.residual;
  packed.activation = shape.activation;
  packed.norm = shape.norm;
  packed.normShift = shape.normShift;
  packed.normEpsilon = shape.normEpsilon;
  return packed;
}

GemmKernelKind qdqEpilogueKind(const QdqGemmShape &shape) {
  GemmKernelKind kind;
  kind.dtype = shape.dtype;
  kind.bias = shape.bias;
  kind.residual = shape.residual;
  kind.activation = shape.activation;
  return kind;
}

std::vector<std::pair<std::string, std::string>>
qdqFinishValues(const QdqGemmShape &shape, const std::string &name,
                int64_t splitK, int64_t tileM, int64_t tileN, int64_t mostRows,
                const QdqGemmTail *tail, std::string &counters) {
  if (shape.norm == PackedGemvShape::Norm::None)
    return splitFinishValues(name, splitK, tileM, tileN, mostRows, shape.n,
                             counters);
  assert(tail && "a Q/DQ GEMM's norm follows its tail");
  std::vector<std::pair<std::string, std::string>> values = normFinishValues(
      qdqPackedShape(shape), name, splitK, tileM, tileN, mostRows, counters);
  GemmKernelKind kind = qdqEpilogueKind(shape);
  // The element's value is the tail's (fp32), which the norm reads; the
  // normalized value goes through the tail's ops after the norm. The norm's
  // scale and shift are fp32 too, whatever the product's type (qdqValues'
  // $NORM_PARAMETERS).
  for (auto &[placeholder, value] : values) {
    if (placeholder == "$NORM_TO_FLOAT")
      value = "";
    else if (placeholder == "$APPLY_EPILOGUE")
      value = applyThroughTail(kind, *tail) + "      v = " + tail->value + ";";
    else if (placeholder == "$NORMED_STATEMENTS")
      value = tail->normStatements;
    else if (placeholder == "$NORMED_VALUE")
      value = tail->normValue;
  }
  return values;
}

std::vector<std::pair<std::string, std::string>>
packedValues(const PackedGemvShape &shape, int64_t splitK,
             const std::string &name, const std::string &rows,
             const std::string &dims) {
  HalfSpelling h = spellingOf(shape.dtype);
  auto str = [](int64_t v) { return std::to_string(v); };
  auto [zeroParameter, zeroPoint] = packedZeroPoint(shape);
  GemmKernelKind kind;
  kind.dtype = shape.dtype;
  kind.transB = true;
  kind.bias = shape.bias;
  kind.residual = shape.residual;
  kind.activation = shape.activation;
  std::string element = h.type;
  bool normed = shape.norm != PackedGemvShape::Norm::None;
  return {
      {"$NAME", name},
      {"$C_TYPE", element},
      {"$ELEMENT", element},
      {"$TO_FLOAT", h.toFloat},
      {"$SPLIT", str(splitK)},
      {"$BITS", str(shape.bits)},
      {"$BLOCK_SIZE", str(shape.blockSize)},
      {"$BLOCKS", str(shape.blocks)},
      {"$ROW_BYTES", str(shape.blocks * shape.blockSize * shape.bits / 8)},
      {"$EXTENT_M", rows},
      {"$EXTENT_N", str(shape.n)},
      {"$EXTENT_K", str(shape.k)},
      {"$ZERO_PARAMETER", zeroParameter},
      {"$ZERO_POINT", zeroPoint},
      {"$BIAS_PARAMETER",
       shape.bias ? ", const " + element + " *__restrict__ bias" : ""},
      {"$RESIDUAL_PARAMETER",
       shape.residual ? ", const " + element + " *__restrict__ residual" : ""},
      {"$R_MAT", std::string(shape.residual ? "residual" : "nullptr")},
      {"$BIAS_LOCAL",
       shape.bias ? "" : "\n  const " + element + " *bias = nullptr;"},
      {"$PARTIALS_PARAMETER",
       std::string(splitK > 1 || normed ? ", float *__restrict__ partials"
                                        : "")},
      {"$NORM_PARAMETERS",
       !normed ? ""
               : ", const " + element + " *__restrict__ norm_scale" +
                     (shape.normShift
                          ? ", const " + element + " *__restrict__ norm_shift"
                          : "")},
      {"$NORMED_OUTPUT",
       shape.normSum ? ", " + element + " *__restrict__ sum" : ""},
      {"$TAIL_PARAMETERS", ""},
      {"$DIMS", dims},
      {"$FINISH", finishOf(kind)}};
}

std::string
substitute(std::string text,
           const std::vector<std::pair<std::string, std::string>> &values,
           bool complete) {
  for (bool replaced = true; replaced;) {
    replaced = false;
    for (const auto &[name, value] : values)
      for (size_t at = text.find(name); at != std::string::npos;
           at = text.find(name, at + value.size())) {
        text.replace(at, name.size(), value);
        replaced = true;
      }
  }
  assert((!complete || text.find('$') == std::string::npos) &&
         "a placeholder is left");
  return text;
}

} // namespace gemm
} // namespace kiln
