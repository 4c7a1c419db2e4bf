//===- GemvEmitter.cpp - decoding's GEMV kernels --------------------------===//
//
// The GEMV form of the GEMM family (GemmForm::Gemv): C = act(A B + residual
// + bias) for the few rows of a decoding step, where the tensor cores would
// multiply mostly zeros and the time is the one pass over B's bytes. A
// block owns `tileM` rows of A and a `tileN`-column slab of B over its
// split's share of K; every thread streams B in chunks of 8 elements (16
// bytes of a 16-bit type, 32 of fp32) straight from global memory (no staging:
// each byte of B is read once by one thread), converts to fp32 and accumulates
// each of its columns for each row on the CUDA cores. A's rows are a few KiB
// that every block reads, so they come through L1. The sums are combined in a
// fixed order (warp shuffles, then shared memory in warp order), so a result
// never depends on scheduling, and the epilogue or the split's partial store is
// the GEMM form's (GemmParts.cpp): same arguments, same partials, same
// finish of a split in its last block, so the runtime runs both forms alike
// (rt::GemmCandidate).
//
// Two layouts of B, one kernel each:
// - B stored k x n (a row-major weight): a thread owns 8 adjacent columns
//   and walks K in chunks of 8 rows, `tileN / 8` threads side by side
//   covering the slab (whole rows of it per warp, coalesced), the
//   rest of the block's threads taking other chunks of K;
// - B stored n x k (transB, torch's Linear layout): 8 lanes share a column,
//   each reading 8 consecutive k (128 contiguous bytes a column per step),
//   and each lane owns several columns (tileN / 4 / warps), so one chunk
//   of A feeds them all.
// The operands' rows must be whole chunks, as for the mma form
// (rt::gemmCandidateMisfit checks it at run time); A is not transposed
// (chooseGemmConfigs offers no GEMV otherwise).
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"
#include "GemmParts.h"

#include "llvm/ADT/STLExtras.h"

#include <cassert>

namespace kiln {

namespace {

using gemm::substitute;

/// What both kernels start with: the block's rows, slab, matrix and split
/// of K (in chunks of 8 elements; K is a multiple of 8), and the
/// accumulators.
constexpr const char *kPrologue = R"cuda(
// Kiln GEMV $LAYOUT: $ROWS rows of A a block against a $TILE_N-column slab
// of B ($B_LAYOUT), $WARPS warps streaming B in chunks of 8 elements.
// The 8 elements of a chunk ($WORDS 16-byte words) as floats.
__device__ __forceinline__ void $NAME_floats(const uint4 *words, float *f) {
$CHUNK_FLOATS
}
$SIGNATURE
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long row0 = (long long)blockIdx.y * $ROWS, col0 = (long long)blockIdx.x * $TILE_N;
  const long long split = blockIdx.z % split_k, matrix = blockIdx.z / split_k;
  const long long inner = matrix % batch, outer = matrix / batch;
  const $ELEMENT *a_mat = a + outer * outer_stride_a + inner * stride_a;
  const $ELEMENT *b_mat = b + outer * outer_stride_b + inner * stride_b;
  const long long chunks = k / 8, per_split = (chunks + split_k - 1) / split_k;
  const long long ck_begin = split * per_split;
  const long long ck_end = ck_begin + per_split < chunks ? ck_begin + per_split : chunks;
  // Rows past m read zeros and store nothing.
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  bool row_live[$ROWS];
  #pragma unroll
  for (int r = 0; r < $ROWS; ++r)
    row_live[r] = row0 + r < m;
  $C_ELEMENT *c_mat = c + outer * outer_stride_c + inner * stride_c;
  const $ELEMENT *r_mat = residual ? residual + outer * outer_stride_c + inner * stride_c : nullptr;
  float *p_mat = partials ? partials + (matrix * split_k + split) * m * n : nullptr;
)cuda";

/// Stores element (row, col) from its sum `v`: the partial (of a split,
/// or of a step whose norm the kernel finishes), or the epilogue.
constexpr const char *kStore = R"cuda(
          if (p_mat)
            p_mat[row * n + col] = v;
          else {
$FINISH
          }
)cuda";

/// B stored k x n. Thread (slot, q) owns columns col0 + 8q .. + 7 and the
/// chunks of K congruent to its slot; a warp holds 32 / $LANES_N slots,
/// added by shuffles, and the block's warps are added in shared memory.
constexpr const char *kRowMajorB = R"cuda(
  __shared__ float sums[$WARPS][$ROWS][$TILE_N];
  const int q = tid % $LANES_N, slot = tid / $LANES_N;
  const long long col = col0 + 8 * q;
  const bool col_live = col < n;
  float acc[$ROWS][8];
  #pragma unroll
  for (int r = 0; r < $ROWS; ++r)
    #pragma unroll
    for (int j = 0; j < 8; ++j)
      acc[r][j] = 0.0f;
  // 256 bytes of B in flight a thread: two chunks' loads of a 16-bit type,
  // one of fp32 (two unrolled spilled).
  #pragma unroll $CHUNKS_IN_FLIGHT
  for (long long ck = ck_begin + slot; ck < ck_end; ck += $SLOTS) {
    const long long k0 = ck * 8;
    // Eight rows of B's 8 columns, then each row's 8 elements of A: all
    // loads issued before the arithmetic that waits on them.
    uint4 bw[8][$WORDS], aw[$ROWS][$WORDS];
    #pragma unroll
    for (int i = 0; i < 8; ++i)
      #pragma unroll
      for (int w = 0; w < $WORDS; ++w)
        bw[i][w] = col_live ? __ldg(reinterpret_cast<const uint4 *>(b_mat + (k0 + i) * n + col) + w) : zero;
    #pragma unroll
    for (int r = 0; r < $ROWS; ++r)
      #pragma unroll
      for (int w = 0; w < $WORDS; ++w)
        aw[r][w] = row_live[r] ? __ldg(reinterpret_cast<const uint4 *>(a_mat + (row0 + r) * k + k0) + w) : zero;
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
      float bf[8];
      $NAME_floats(bw[i], bf);
      #pragma unroll
      for (int r = 0; r < $ROWS; ++r) {
        const $ELEMENT *ap = reinterpret_cast<const $ELEMENT *>(aw[r]);
        const float av = $TO_FLOAT(ap[i]);
        #pragma unroll
        for (int j = 0; j < 8; ++j)
          acc[r][j] += av * bf[j];
      }
    }
  }
  // The warp's slots (lanes q, q + $LANES_N, ...), then the warps in order.
  #pragma unroll
  for (int r = 0; r < $ROWS; ++r)
    #pragma unroll
    for (int j = 0; j < 8; ++j) {
      float v = acc[r][j];
      #pragma unroll
      for (int o = $LANES_N; o < 32; o <<= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane < $LANES_N)
        sums[warp][r][8 * q + j] = v;
    }
  __syncthreads();
  for (int e = tid; e < $ROWS * $TILE_N; e += $THREADS) {
    const int r = e / $TILE_N;
    const long long row = row0 + r, col = col0 + e % $TILE_N;
    if (row >= m || col >= n)
      continue;
    float v = 0.0f;
    #pragma unroll
    for (int w = 0; w < $WARPS; ++w)
      v += sums[w][r][e % $TILE_N];
$STORE
  }$ARRIVALS
}
)cuda";

/// B stored n x k. Lane (group g, part p) reads chunk ck of K for each of
/// its columns col0 + warp's columns + g + 4 * t; the 8 parts of a column
/// are added by shuffles, after which each holds (and stores) one row.
constexpr const char *kColumnMajorB = R"cuda(
  const int part = lane & 7, group = lane >> 3;
  const long long warp_col0 = col0 + warp * $WARP_COLUMNS + group;
  float acc[$ROWS][$COLUMNS_PER_LANE];
  #pragma unroll
  for (int r = 0; r < $ROWS; ++r)
    #pragma unroll
    for (int t = 0; t < $COLUMNS_PER_LANE; ++t)
      acc[r][t] = 0.0f;
  for (long long ck = ck_begin + part; ck < ck_end; ck += 8) {
    const long long k0 = ck * 8;
    uint4 bw[$COLUMNS_PER_LANE][$WORDS], aw[$ROWS][$WORDS];
    #pragma unroll
    for (int t = 0; t < $COLUMNS_PER_LANE; ++t) {
      const long long col = warp_col0 + 4 * t;
      #pragma unroll
      for (int w = 0; w < $WORDS; ++w)
        bw[t][w] = col < n ? __ldg(reinterpret_cast<const uint4 *>(b_mat + col * k + k0) + w) : zero;
    }
    #pragma unroll
    for (int r = 0; r < $ROWS; ++r)
      #pragma unroll
      for (int w = 0; w < $WORDS; ++w)
        aw[r][w] = row_live[r] ? __ldg(reinterpret_cast<const uint4 *>(a_mat + (row0 + r) * k + k0) + w) : zero;
    #pragma unroll
    for (int r = 0; r < $ROWS; ++r) {
      float af[8];
      $NAME_floats(aw[r], af);
      #pragma unroll
      for (int t = 0; t < $COLUMNS_PER_LANE; ++t) {
        float bf[8];
        $NAME_floats(bw[t], bf);
        #pragma unroll
        for (int j = 0; j < 8; ++j)
          acc[r][t] += af[j] * bf[j];
      }
    }
  }
  // The 8 lanes of a column hold its sums for every row: each exchange
  // halves the rows a lane keeps (the upper half where the lane's mask bit
  // is set), so after three a lane holds one row's whole sum, 7 shuffles a
  // column instead of 3 a row. With fewer than 8 rows, the last exchanges
  // add the whole sum to both lanes, and the lane whose bits are 0 stores.
  // Written out by the emitter (gemvExchangeText): as a loop over the masks,
  // ptxas put the sums in local memory.
$COLUMN_STORES)cuda";

} // namespace

std::string gemm::gemvExchangeText(int64_t rows, int64_t columns) {
  std::string text, heldRow = "0", copies = "0";
  int64_t count = rows;
  for (int mask = 4; mask >= 1; mask >>= 1) {
    std::string m = std::to_string(mask);
    std::string upper = "(part & " + m + ")";
    if (count == 1) {
      for (int64_t t = 0; t < columns; ++t) {
        std::string v = "acc[0][" + std::to_string(t) + "]";
        text += "  " + v + " += __shfl_xor_sync(0xffffffffu, " + v + ", " + m +
                ");\n";
      }
      copies += " | " + m;
      continue;
    }
    int64_t half = count / 2;
    for (int64_t i = 0; i < half; ++i)
      for (int64_t t = 0; t < columns; ++t) {
        std::string low =
            "acc[" + std::to_string(i) + "][" + std::to_string(t) + "]";
        std::string high =
            "acc[" + std::to_string(i + half) + "][" + std::to_string(t) + "]";
        text += "  " + low + " = (" + upper + " ? " + high + " : " + low +
                ") + __shfl_xor_sync(0xffffffffu, " + upper + " ? " + low +
                " : " + high + ", " + m + ");\n";
      }
    heldRow += " + (" + upper + " ? " + std::to_string(half) + " : 0)";
    count = half;
  }
  return text + "  const int held_row = " + heldRow + ", copies = " + copies +
         ";\n";
}

void emitGemvKernel(const GemmConfig &config, const GemmKernelKind &kind,
                    llvm::raw_ostream &os) {
  assert(config.form == GemmForm::Gemv && !kind.transA &&
         "a GEMV reads A's rows as stored");
  assert(config.tileM <= 8 && (config.tileM & (config.tileM - 1)) == 0 &&
         "a power of two rows, at most one for each lane of a column");
  gemm::HalfSpelling h = gemm::spellingOf(kind.dtype);
  auto str = [](int64_t v) { return std::to_string(v); };
  int64_t warps = config.warpsM * config.warpsN;
  std::string name = gemmKernelName(config, kind);
  bool fp32 = kind.dtype == rt::DType::F32;
  // A chunk's floats: fp32's two words as they are, a 16-bit type's one
  // word as four pairs.
  std::string chunkFloats =
      fp32 ? "  const float *e = reinterpret_cast<const float *>(words);\n"
             "  #pragma unroll\n"
             "  for (int j = 0; j < 8; ++j)\n"
             "    f[j] = e[j];"
           : "  const $PAIR_TYPE *pairs = reinterpret_cast<const $PAIR_TYPE "
             "*>(words);\n"
             "  #pragma unroll\n"
             "  for (int h = 0; h < 4; ++h) {\n"
             "    const float2 v = $UNPACK_PAIR(pairs[h]);\n"
             "    f[2 * h] = v.x;\n"
             "    f[2 * h + 1] = v.y;\n"
             "  }";
  std::vector<std::pair<std::string, std::string>> values =
      gemm::familyFinishValues(kind, config);
  llvm::append_range(
      values,
      std::vector<std::pair<std::string, std::string>>{
          {"$CHUNK_FLOATS", chunkFloats},
          {"$NAME", name},
          {"$LAYOUT", name},
          {"$B_LAYOUT", kind.transB ? "stored n x k" : "stored k x n"},
          {"$C_ELEMENT", kind.widen ? "float" : h.type},
          {"$ELEMENT", h.type},
          {"$UNPACK_PAIR", h.pairToFloat2},
          {"$PAIR_TYPE", h.pair},
          {"$TO_FLOAT", h.toFloat},
          {"$WORDS", fp32 ? "2" : "1"},
          {"$CHUNKS_IN_FLIGHT", fp32 ? "1" : "2"},
          {"$SIGNATURE", gemm::kMainSignature},
          {"$COLUMN_STORES", gemm::kGemvColumnStores},
          {"$DECLARATIONS", ""},
          {"$INTEGERS", gemm::kIntegerParameters},
          {"$THREADS", str(config.threads())},
          {"$WARPS", str(warps)},
          {"$ROWS", str(config.tileM)},
          {"$TILE_N", str(config.tileN)},
          {"$STORE", substitute(kStore, {{"$FINISH", gemm::finishOf(kind)}},
                                /*complete=*/false)}});
  if (kind.transB) {
    // Four columns a warp at a time (8 lanes each), several times.
    int64_t warpColumns = config.tileN / warps;
    assert(warpColumns % 4 == 0 && "whole groups of four columns a warp");
    values.push_back({"$WARP_COLUMNS", str(warpColumns)});
    values.push_back({"$COLUMNS_PER_LANE", str(warpColumns / 4)});
    values.push_back(
        {"$EXCHANGE", gemm::gemvExchangeText(config.tileM, warpColumns / 4)});
  } else {
    int64_t lanesN = config.tileN / 8;
    assert(lanesN <= 32 && 32 % lanesN == 0 && "a warp holds whole slots");
    values.push_back({"$LANES_N", str(lanesN)});
    values.push_back({"$SLOTS", str(config.threads() / lanesN)});
  }
  os << gemm::familyFinishPreamble(kind, name);
  os << substitute(std::string(kPrologue) +
                       (kind.transB ? kColumnMajorB : kRowMajorB),
                   values);
}

} // namespace kiln
