//===- GemmEmitter.cpp - Kiln's own GEMM kernels --------------------------===//
//
// The GEMM family: C = act(op(A) op(B) + residual + bias) for float16 and
// bfloat16 matrices, in the layout of a GemmConfig. A block computes one
// tile of C over its share of K: cp.async stages the next A and B tiles into
// shared memory while the warps multiply the current ones (two buffers),
// ldmatrix reads the fragments in mma.sync.m16n8k16's layouts (.trans where
// the stored operand runs the other way), and the products accumulate in
// fp32 registers. Unsplit, the block applies the epilogue and stores C;
// split, it stores its fp32 partial tile and the tile's last block to
// arrive adds the splits in a fixed order (GemmParts.cpp), so a result
// never depends on which block ran first. Tile edges read zeros (cp.async's
// source size) and store nothing past m or n, so any m, n and k run; rows must
// be whole chunks of 8 elements.
//
// fp32 matrices take the fma form: the same tiles, staging and epilogue,
// each thread computing the elements an m16n8 accumulator fragment would
// hand it by fused multiply-adds from shared memory (no TF32 rounding: the
// fp32 contract holds), its A and B elements read from the staged tiles as
// they are stored.
//
// The kernels are written once as text with the layout's constants
// substituted, in the manner of CUTLASS's templates instantiated per tile
// shape; the fragment addressing follows the PTX ISA's figures for
// ldmatrix and mma.m16n8k16, which the host backend emulates
// (kiln_cuda_host_mma.h) and TensorCoresTest checks.
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"
#include "GemmParts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cassert>

namespace kiln {

namespace {

using gemm::HalfSpelling;
using gemm::kIntegerParameters;
using gemm::spellingOf;
using gemm::substitute;

// The epilogue (GemmParts.cpp) runs once for each of the main kernel's
// accumulators, unrolled, so there its choices are constants of the kernel:
// with them read at run time, ptxas took 19 s instead of 2 for a 128 x 128
// layout (128 branching copies).

constexpr const char *kMainKernel = R"cuda(
// Kiln GEMM $LAYOUT: a $TILE_M x $TILE_N tile of C a block, $WARPS_M x $WARPS_N warps
// of $WARP_M x $WARP_N, K in steps of $TILE_K staged by cp.async into two buffers.
$SIGNATURE
  // 16 bytes past each row shift the next row's banks (fp32: a row of 20
  // or 132 floats puts the 8 rows a warp reads at once on 8 banks apart).
  __shared__ __align__(16) $ELEMENT sa[2][$A_ROWS][$A_COLS + $PAD];
  __shared__ __align__(16) $ELEMENT sb[2][$B_ROWS][$B_COLS + $PAD];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = (warp / $WARPS_N) * $WARP_M, warp_n = (warp % $WARPS_N) * $WARP_N;
  const long long row0 = (long long)blockIdx.y * $TILE_M, col0 = (long long)blockIdx.x * $TILE_N;
  const long long split = blockIdx.z % split_k, matrix = blockIdx.z / split_k;
  const long long inner = matrix % batch, outer = matrix / batch;
  const $ELEMENT *a_mat = a + outer * outer_stride_a + inner * stride_a;
  const $ELEMENT *b_mat = b + outer * outer_stride_b + inner * stride_b;
  // This block's k tiles: the split's share, whole tiles each, so only k
  // itself cuts a tile short.
  const long long k_tiles = (k + $TILE_K - 1) / $TILE_K;
  const long long per_split = (k_tiles + split_k - 1) / split_k;
  const long long kt_begin = split * per_split;
  const long long kt_end = kt_begin + per_split < k_tiles ? kt_begin + per_split : k_tiles;
  float acc[$M_TILES][$N_TILES][4];
  #pragma unroll
  for (int mt = 0; mt < $M_TILES; ++mt)
    #pragma unroll
    for (int nt = 0; nt < $N_TILES; ++nt)
      #pragma unroll
      for (int i = 0; i < 4; ++i)
        acc[mt][nt][i] = 0.0f;
$STAGED_LOOP
$MULTIPLY
    __syncthreads();
  }
  // Accumulator i of an m16n8 tile is row lane / 4 (+ 8 for i >= 2),
  // column 2 (lane % 4) + i % 2.
  $C_ELEMENT *c_mat = c + outer * outer_stride_c + inner * stride_c;
  const $ELEMENT *r_mat = residual ? residual + outer * outer_stride_c + inner * stride_c : nullptr;
  float *p_mat = partials ? partials + (matrix * split_k + split) * m * n : nullptr;
  #pragma unroll
  for (int mt = 0; mt < $M_TILES; ++mt)
    #pragma unroll
    for (int nt = 0; nt < $N_TILES; ++nt)
      #pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long row = row0 + warp_m + mt * 16 + (lane >> 2) + (i >> 1) * 8;
        const long long col = col0 + warp_n + nt * 8 + (lane & 3) * 2 + (i & 1);
        if (row >= m || col >= n)
          continue;
        float v = acc[mt][nt][i];
        // A split's partial, or the sum the norm finish reads.
        if (p_mat) {
          p_mat[row * n + col] = v;
          continue;
        }
$FINISH
      }$ARRIVALS
}
)cuda";

/// The mma form's multiplication of buffer `s`: per k-step of 16, A's
/// fragments of every m-tile, then B's of each pair of n-tiles and their
/// mma.sync.
constexpr const char *kMmaMultiply = R"cuda(    #pragma unroll
    for (int kk = 0; kk < $TILE_K / 16; ++kk) {
      unsigned af[$M_TILES][4];
      #pragma unroll
      for (int mt = 0; mt < $M_TILES; ++mt)
$LOAD_A
      #pragma unroll
      for (int nt = 0; nt < $N_TILES; nt += 2) {
        unsigned bf[4];
$LOAD_B
        #pragma unroll
        for (int mt = 0; mt < $M_TILES; ++mt) {
          $MMA(acc[mt][nt], af[mt], {bf[0], bf[1]}, acc[mt][nt]);
          $MMA(acc[mt][nt + 1], af[mt], {bf[2], bf[3]}, acc[mt][nt + 1]);
        }
      }
    })cuda";

/// The fma form's multiplication of buffer `s`: for each k of the tile,
/// the thread's two rows of each m-tile (lane / 4 and 8 below it) and its
/// two columns of each n-tile (2 (lane % 4) and the next), the elements an
/// m16n8 accumulator fragment holds, so the epilogue below serves both
/// forms. Each sum adds its products in k order, one fused multiply-add
/// each.
constexpr const char *kFmaMultiply = R"cuda(    #pragma unroll
    for (int kk = 0; kk < $TILE_K; ++kk) {
      float av[$M_TILES][2], bv[$N_TILES][2];
      #pragma unroll
      for (int mt = 0; mt < $M_TILES; ++mt)
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = warp_m + mt * 16 + (lane >> 2) + h * 8;
          av[mt][h] = $A_AT;
        }
      #pragma unroll
      for (int nt = 0; nt < $N_TILES; ++nt)
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int cn = warp_n + nt * 8 + (lane & 3) * 2 + h;
          bv[nt][h] = $B_AT;
        }
      #pragma unroll
      for (int mt = 0; mt < $M_TILES; ++mt)
        #pragma unroll
        for (int nt = 0; nt < $N_TILES; ++nt)
          #pragma unroll
          for (int i = 0; i < 4; ++i)
            acc[mt][nt][i] = fmaf(av[mt][i >> 1], bv[nt][i & 1], acc[mt][nt][i]);
    })cuda";

constexpr const char *kFinishKernel = R"cuda(
// Kiln GEMM finish after cuBLASLt: $WHAT, one element a thread.
extern "C" __global__ void $NAME(const $ELEMENT *product, $C_ELEMENT *c, $INTEGERS) {
  kiln_pdl_enter();
  const long long total = batch * outer_batch * m * n;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long col = e % n, row = e / n % m, matrix = e / n / m;
    const long long inner = matrix % batch, outer = matrix / batch;
    const long long at = outer * outer_stride_c + inner * stride_c;
    $C_ELEMENT *c_mat = c + at;
    // cuBLASLt added them: the epilogue below skips them.
    const $ELEMENT *r_mat = nullptr, *bias = nullptr;
    float v = $TO_FLOAT(product[at + row * n + col]);
$FINISH
  }
}
)cuda";

constexpr const char *kNormKernel = R"cuda(
// Kiln GEMM's norm after cuBLASLt: a group of threads a row of C reads the
// row cuBLASLt finished with its epilogue, from `sum` where the step stores
// the sum (a pre-norm block's residual stream, as its later readers see
// it) or keeps its 16-bit product apart (a widened step), else from C, and
// normalizes it as kiln.layer_norm does (the mean shifted by the row's
// first element, the centered variance, one rsqrt, then the scale and the
// shift) or, with `rms`, as kiln.rms_norm does (the mean square, one rsqrt,
// the scale), written over C. Rows of up to 1,024 columns take a warp
// each, eight a block, their sums shuffles with no barrier (a block a row
// took three barriers a row); wider rows take the block, so that a row of
// a decoding step is not one warp's walk. Each thread keeps its first 32
// elements in registers and reads the rest again in each pass. (Kiln's own
// GEMM kernels finish their norms themselves.)
extern "C" __global__ void $NAME($C_ELEMENT *c,
    const $ELEMENT *__restrict__ norm_scale, const $ELEMENT *__restrict__ norm_bias,
    const $ELEMENT *sum, $INTEGERS, long long epsilon_bits, long long rms) {
  kiln_pdl_enter();
  // Epsilon's float bits: kernels of both backends take pointers and
  // integers.
  const float epsilon = __int_as_float((int)epsilon_bits);
  // The row's group: a warp, or the block (gemmNormBlocks launches as
  // many blocks as the choice needs).
  const bool warp_rows = n <= 1024;
  const int lanes = warp_rows ? 32 : (int)blockDim.x;
  const int lane = warp_rows ? (int)(threadIdx.x & 31) : (int)threadIdx.x;
  const int groups = warp_rows ? (int)(blockDim.x >> 5) : 1;
  const int group = warp_rows ? (int)(threadIdx.x >> 5) : 0;
  __shared__ float warp_sums[32];
  // The sum of `v` over the group; every thread of it gets it.
  auto group_sum = [&](float v) {
    v = kiln_warp_sum(v);
    if (warp_rows)
      return v;
    if ((threadIdx.x & 31) == 0)
      warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w)
      total += warp_sums[w];
    __syncthreads();
    return total;
  };
  const long long rows = batch * outer_batch * m;
  for (long long r = (long long)blockIdx.x * groups + group; r < rows;
       r += (long long)gridDim.x * groups) {
    const long long row = r % m, matrix = r / m;
    const long long inner = matrix % batch, outer = matrix / batch;
    const long long at = outer * outer_stride_c + inner * stride_c;
    $C_ELEMENT *c_row = c + at + row * n;
    const $ELEMENT *sum_row = sum ? sum + at + row * n : nullptr;
    auto load = [&](long long col) -> float {
      return sum_row ? $TO_FLOAT(sum_row[col]) : $C_TO_FLOAT(c_row[col]);
    };
    const long long cached_columns = 32ll * lanes;
    float cached[32];
    #pragma unroll
    for (int t = 0; t < 32; ++t) {
      const long long col = lane + (long long)t * lanes;
      cached[t] = col < n ? load(col) : 0.0f;
    }
    float mean = 0.0f;
    if (!rms) {
      const float shift = load(0);
      float shifted = 0.0f;
      #pragma unroll
      for (int t = 0; t < 32; ++t)
        if (lane + (long long)t * lanes < n)
          shifted += cached[t] - shift;
      for (long long col = lane + cached_columns; col < n; col += lanes)
        shifted += load(col) - shift;
      mean = shift + group_sum(shifted) / (float)n;
    }
    float squares = 0.0f;
    #pragma unroll
    for (int t = 0; t < 32; ++t)
      if (lane + (long long)t * lanes < n) {
        const float centered = cached[t] - mean;
        squares += centered * centered;
      }
    for (long long col = lane + cached_columns; col < n; col += lanes) {
      const float centered = load(col) - mean;
      squares += centered * centered;
    }
    const float inv_std = rsqrtf(group_sum(squares) / (float)n + epsilon);
    auto store = [&](long long col, float v) {
      float y = (v - mean) * inv_std * $TO_FLOAT(norm_scale[col]);
      if (norm_bias)
        y += $TO_FLOAT(norm_bias[col]);
      c_row[col] = $AS_STORED(y);
    };
    // Past the cached columns each element is read before it is written,
    // by the same thread.
    for (long long col = lane + cached_columns; col < n; col += lanes)
      store(col, load(col));
    #pragma unroll
    for (int t = 0; t < 32; ++t)
      if (lane + (long long)t * lanes < n)
        store(lane + (long long)t * lanes, cached[t]);
  }
}
)cuda";

/// The staging of k tile `kn` into buffer `st`, one operand's tile (A's or
/// B's) in chunks of 8 elements (one 16-byte cp.async of a 16-bit type,
/// two of fp32); past the matrix's edge a chunk reads fewer bytes (or
/// none) and is zeroed. Written out at both places it runs: as a lambda,
/// ptxas gave the 16 x 64 layout a stack frame and spilled 8 bytes. The
/// chunks a thread copies are a count known at compile time, so the loops
/// unroll; as grid-stride loops from `tid` they stayed loops of 168
/// instructions for 4 cp.async.
constexpr const char *kStageOperand = R"cuda(      #pragma unroll
      for (int i = 0; i < ($ROWS * $COLS / 8 + $THREADS - 1) / $THREADS; ++i) {
        const int e = tid + i * $THREADS;
        if ($ROWS * $COLS / 8 % $THREADS != 0 && e >= $ROWS * $COLS / 8)
          break;
        const int r = e / ($COLS / 8), cc = e % ($COLS / 8) * 8;
$STAGE_CHUNK
$COPY_CHUNK
      }
)cuda";

/// The copy of one chunk: one cp.async of a 16-bit type's 8 elements;
/// fp32's in two halves, the second reading what is left past the first.
std::string copyChunk(bool fp32) {
  if (!fp32)
    return "        kiln_cp_async_16(&$SMEM[st][r][cc], bytes ? src : "
           "$MATRIX, bytes);";
  return "        kiln_cp_async_16(&$SMEM[st][r][cc], bytes ? src : $MATRIX, "
         "bytes < 16u ? bytes : 16u);\n"
         "        kiln_cp_async_16(&$SMEM[st][r][cc + 4], bytes > 16u ? src + "
         "4 "
         ": $MATRIX, bytes > 16u ? bytes - 16u : 0u);";
}

/// The staging of one chunk of A: `src` and its `bytes` (of 16, or 32 for
/// fp32). Tile
/// row r, columns cc.. of a row-major A are (row0 + r, k0 + cc..); of a
/// transposed A (stored k x m), (k0 + r, row0 + cc..).
std::string stageA(bool transA) {
  if (!transA)
    return "        const long long gr = row0 + r, gk = k0 + cc;\n"
           "        const unsigned bytes = gr < m && gk < k ? (unsigned)((k - "
           "gk "
           "< 8 ? k - gk : 8) * $BYTES_EACH) : 0u;\n"
           "        const auto *src = a_mat + gr * k + gk;";
  return "        const long long gk = k0 + r, gr = row0 + cc;\n"
         "        const unsigned bytes = gk < k && gr < m ? (unsigned)((m - gr "
         "< "
         "8 ? m - gr : 8) * $BYTES_EACH) : 0u;\n"
         "        const auto *src = a_mat + gk * m + gr;";
}

/// B likewise: row-major B is k x n (tile row r is k0 + r), a transposed
/// B is n x k (tile row r is column col0 + r).
std::string stageB(bool transB) {
  if (!transB)
    return "        const long long gk = k0 + r, gc = col0 + cc;\n"
           "        const unsigned bytes = gk < k && gc < n ? (unsigned)((n - "
           "gc "
           "< 8 ? n - gc : 8) * $BYTES_EACH) : 0u;\n"
           "        const auto *src = b_mat + gk * n + gc;";
  return "        const long long gc = col0 + r, gk = k0 + cc;\n"
         "        const unsigned bytes = gc < n && gk < k ? (unsigned)((k - gk "
         "< "
         "8 ? k - gk : 8) * $BYTES_EACH) : 0u;\n"
         "        const auto *src = b_mat + gc * k + gk;";
}

/// A's fragment of m-tile mt at k-step kk. ldmatrix.x4 gives registers
/// 0-3 from the 8x8 matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
/// (rows 0-7, k 8-15), (rows 8-15, k 8-15), lane 8j + i naming row i of
/// matrix j; a transposed A's rows are k, so .trans hands each lane the
/// same elements.
std::string loadA(bool transA) {
  if (!transA)
    return "        kiln_ldmatrix_x4(af[mt], &sa[s][warp_m + mt * 16 + (lane & "
           "15)][kk * 16 + (lane >> 4) * 8]);";
  return "        kiln_ldmatrix_x4_trans(af[mt], &sa[s][kk * 16 + (lane >> 4) "
         "* 8 + (lane & 7)][warp_m + mt * 16 + ((lane >> 3) & 1) * 8]);";
}

/// B's fragments of n-tiles nt and nt + 1 at k-step kk: registers 0-1 are
/// tile nt's k 0-7 and 8-15, registers 2-3 tile nt + 1's. A transposed B
/// is stored as mma's "col" operand wants it (n rows of k); a row-major B
/// is read with .trans.
std::string loadB(bool transB) {
  if (transB)
    return "        kiln_ldmatrix_x4(bf, &sb[s][warp_n + (nt + (lane >> 4)) * "
           "8 "
           "+ (lane & 7)][kk * 16 + ((lane >> 3) & 1) * 8]);";
  return "        kiln_ldmatrix_x4_trans(bf, &sb[s][kk * 16 + (lane & 7) + "
         "((lane >> 3) & 1) * 8][warp_n + (nt + (lane >> 4)) * 8]);";
}

/// The fma form's element of A at the thread's tile row `r` and k `kk`,
/// and of B at k `kk` and tile column `cn`, as each is staged.
std::string fmaA(bool transA) {
  return transA ? "sa[s][kk][r]" : "sa[s][r][kk]";
}
std::string fmaB(bool transB) {
  return transB ? "sb[s][cn][kk]" : "sb[s][kk][cn]";
}

/// The staging of k tile `kn` into buffer `st`: kStageOperand for A, then
/// for B, in a block of their own.
std::string stageTile(bool transA, bool transB, bool fp32) {
  auto operand = [&](const char *rows, const char *cols, const char *smem,
                     const char *matrix, const std::string &chunk) {
    return substitute(kStageOperand,
                      {{"$ROWS", rows},
                       {"$COLS", cols},
                       {"$STAGE_CHUNK", chunk},
                       {"$COPY_CHUNK", copyChunk(fp32)},
                       {"$SMEM", smem},
                       {"$MATRIX", matrix}},
                      /*complete=*/false);
  };
  return "    {\n      const long long k0 = kn * $TILE_K;\n" +
         operand("$A_ROWS", "$A_COLS", "sa", "a_mat", stageA(transA)) +
         operand("$B_ROWS", "$B_COLS", "sb", "b_mat", stageB(transB)) +
         "    }";
}

} // namespace

std::string gemmKernelName(const GemmConfig &config,
                           const GemmKernelKind &kind) {
  std::string name = std::string("kiln_gemm_") + spellingOf(kind.dtype).suffix +
                     "_" + (kind.transA ? "t" : "n") +
                     (kind.transB ? "t" : "n") + "_" + config.layoutName();
  if (kind.bias)
    name += "_bias";
  if (kind.residual)
    name += "_residual";
  if (kind.activation == rt::MatmulActivation::Relu)
    name += "_relu";
  else if (kind.activation == rt::MatmulActivation::Gelu)
    name += "_gelu";
  else if (kind.activation == rt::MatmulActivation::GeluErf)
    name += "_gelu_erf";
  if (kind.widen)
    name += "_to_f32";
  if (kind.norm)
    name += "_norm";
  return name;
}

std::string gemmGeluErfName() { return "kiln_gemm_gelu_erf_f32"; }

std::string gemmWidenName(rt::DType dtype) {
  return std::string("kiln_gemm_widen_") + spellingOf(dtype).suffix;
}

std::string familyArrivalCounters(const std::string &name, uint64_t tiles,
                                  bool norm) {
  // The row tiles are fewer than the tiles: as many serve.
  return gemm::arrivalCounters(name, tiles, norm ? tiles : 0);
}

std::string gemmNormName(rt::DType dtype, bool widen) {
  return std::string("kiln_gemm_norm_") + spellingOf(dtype).suffix +
         (widen ? "_to_f32" : "");
}

void emitGemmKernel(const GemmConfig &config, const GemmKernelKind &kind,
                    llvm::raw_ostream &os) {
  if (config.form == GemmForm::Gemv)
    return emitGemvKernel(config, kind, os);
  if (config.form == GemmForm::Wgmma)
    return emitWgmmaGemmKernel(config, kind, os);
  bool fma = config.form == GemmForm::Fma;
  assert(config.warpRows() % 16 == 0 && config.warpColumns() % 16 == 0 &&
         config.tileK % (fma ? 8 : 16) == 0 &&
         "whole m16n8k16 tiles (fma: whole chunks of K), n-tiles in pairs");
  assert(fma == (kind.dtype == rt::DType::F32) &&
         "the fma form multiplies fp32, the mma form 16-bit types");
  bool transA = kind.transA, transB = kind.transB;
  HalfSpelling h = spellingOf(kind.dtype);
  auto str = [](int64_t v) { return std::to_string(v); };
  std::string finish = gemm::finishOf(kind);
  std::vector<std::pair<std::string, std::string>> values =
      gemm::familyFinishValues(kind, config);
  llvm::append_range(values,
                     std::vector<std::pair<std::string, std::string>>{
                         {"$NAME", gemmKernelName(config, kind)},
                         {"$LAYOUT", gemmKernelName(config, kind)},
                         {"$C_ELEMENT", kind.widen ? "float" : h.type},
                         {"$ELEMENT", h.type},
                         {"$SIGNATURE", gemm::kMainSignature},
                         {"$INTEGERS", kIntegerParameters},
                         {"$THREADS", str(config.threads())},
                         {"$TILE_M", str(config.tileM)},
                         {"$TILE_N", str(config.tileN)},
                         {"$TILE_K", str(config.tileK)},
                         {"$WARPS_M", str(config.warpsM)},
                         {"$WARPS_N", str(config.warpsN)},
                         {"$WARP_M", str(config.warpRows())},
                         {"$WARP_N", str(config.warpColumns())},
                         {"$M_TILES", str(config.warpRows() / 16)},
                         {"$N_TILES", str(config.warpColumns() / 8)},
                         {"$A_ROWS", str(transA ? config.tileK : config.tileM)},
                         {"$A_COLS", str(transA ? config.tileM : config.tileK)},
                         {"$B_ROWS", str(transB ? config.tileN : config.tileK)},
                         {"$B_COLS", str(transB ? config.tileK : config.tileN)},
                         {"$STAGED_LOOP", gemm::kStagedLoop},
                         {"$STAGE_TILE", stageTile(transA, transB, fma)},
                         {"$BYTES_EACH", str(rt::dtypeSize(kind.dtype))},
                         {"$PAD", str(16 / rt::dtypeSize(kind.dtype))},
                         {"$MULTIPLY", fma ? kFmaMultiply : kMmaMultiply},
                         {"$LOAD_A", loadA(transA)},
                         {"$LOAD_B", loadB(transB)},
                         {"$A_AT", fmaA(transA)},
                         {"$B_AT", fmaB(transB)},
                         {"$MMA", h.mma},
                         {"$FINISH", finish}});
  os << gemm::familyFinishPreamble(kind, gemmKernelName(config, kind))
     << substitute(kMainKernel, values);
}

void emitGemmGeluErf(llvm::raw_ostream &os) {
  GemmKernelKind kind;
  kind.dtype = rt::DType::F32;
  kind.activation = rt::MatmulActivation::GeluErf;
  os << substitute(kFinishKernel,
                   {{"$NAME", gemmGeluErfName()},
                    {"$WHAT", "GELU's exact form over C in place, which "
                              "cuBLASLt's epilogue lacks"},
                    {"$C_ELEMENT", "float"},
                    {"$ELEMENT", "float"},
                    {"$TO_FLOAT", ""},
                    {"$INTEGERS", kIntegerParameters},
                    {"$FINISH", gemm::finishOf(kind)}});
}

void emitGemmWiden(rt::DType dtype, llvm::raw_ostream &os) {
  GemmKernelKind kind;
  kind.dtype = dtype;
  kind.widen = true;
  HalfSpelling h = spellingOf(dtype);
  os << substitute(kFinishKernel,
                   {{"$NAME", gemmWidenName(dtype)},
                    {"$WHAT", "the product, with its epilogue, widened into "
                              "an fp32 C"},
                    {"$C_ELEMENT", "float"},
                    {"$ELEMENT", h.type},
                    {"$TO_FLOAT", h.toFloat},
                    {"$INTEGERS", kIntegerParameters},
                    {"$FINISH", gemm::finishOf(kind)}});
}

void emitGemmNorm(rt::DType dtype, bool widen, llvm::raw_ostream &os) {
  HalfSpelling h = spellingOf(dtype);
  os << substitute(kNormKernel, {{"$NAME", gemmNormName(dtype, widen)},
                                 {"$C_ELEMENT", widen ? "float" : h.type},
                                 {"$C_TO_FLOAT", widen ? "" : h.toFloat},
                                 {"$AS_STORED", gemm::storedAs(dtype, widen)},
                                 {"$ELEMENT", h.type},
                                 {"$INTEGERS", kIntegerParameters},
                                 {"$TO_FLOAT", h.toFloat}});
}

} // namespace kiln
