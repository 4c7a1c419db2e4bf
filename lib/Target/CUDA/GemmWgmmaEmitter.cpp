//===- GemmWgmmaEmitter.cpp - the GEMM family's Hopper form ---------------===//
//
// GemmForm::Wgmma: C = act(A op(B) + residual + bias) for float16 and
// bfloat16 on Hopper's asynchronous units, as CUTLASS's sm90 kernels and
// FlashAttention-3 use them. A block of tileM / 64 warpgroups owns a
// tileM x tileN tile of C over its split's share of K:
// - thread 0 keeps `stages - 1` k tiles of 64 columns in flight: for each,
//   one tensor copy of A's tile (K-major rows of 128 bytes) and one of B's
//   (K-major rows when B is stored n x k; boxes of 64 columns by 64 k rows
//   when it is stored k x n), in the 128-byte swizzle, completing on the
//   stage's mbarrier with the stage's bytes;
// - every warpgroup waits for the stage, issues four m64nNk16 wgmma with A
//   and B read through swizzled descriptors, commits, and waits until the
//   tile before it has been read (wait_group 1), so one tile's products run
//   while the next one's wait begins; a block barrier then frees that
//   tile's stage, which thread 0 fills with the tile `stages - 1` ahead;
// - the accumulators (rows 16 w + lane / 4 (+ 8) of warp w of the
//   warpgroup, mma.m16n8k16's C layout for each 8 columns) get the same
//   epilogue, partial sums and split order as the mma form.
// Tile edges need no code: the copies write zeros outside the matrices,
// and the stores check m and n. The layouts are those of
// kiln_cuda_host_tma.h and kiln_cuda_host_wgmma.h, which the host backend
// runs and TmaTest checks against the PTX ISA.
//
// The kernel takes the family's arguments (rt::GemmCandidate) and then the
// tensor maps of A and B, which the run encodes for its operands: A as
// {k, m} with boxes {64, tileM}; B stored n x k as {k, n} with boxes {64,
// tileN}, stored k x n as {n, k} with boxes {64, 64}. One matrix only
// (batch 1), A not transposed; chooseGemmConfigs offers it so.
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"
#include "GemmParts.h"

#include "kiln/Target/CUDA/TensorCores.h"
#include "llvm/ADT/STLExtras.h"

#include <cassert>

namespace kiln {

namespace {

using gemm::HalfSpelling;
using gemm::kIntegerParameters;
using gemm::spellingOf;
using gemm::substitute;

constexpr const char *kWgmmaKernel = R"cuda(
// Kiln GEMM $NAME: a $TILE_M x $TILE_N tile of C a block, $WARPGROUPS warpgroup(s) of
// 64 rows; K in tiles of 64 brought by tensor copies into $STAGES stages.
extern "C" __global__ void __launch_bounds__($THREADS) $NAME(
    const $ELEMENT *__restrict__ a, const $ELEMENT *__restrict__ b, $C_ELEMENT *c, const $ELEMENT *__restrict__ bias,
    const $ELEMENT *residual, float *__restrict__ partials$NORM_PARAMETERS, $INTEGERS$NORM_INTEGERS,
    const __grid_constant__ kiln_tensor_map a_map, const __grid_constant__ kiln_tensor_map b_map) {
  kiln_pdl_enter();
  // Stage s: A's tile ($TILE_M rows of 64), then B's; each starts on the
  // swizzle's 1024-byte pattern, which the dynamic array is aligned to here.
  KILN_DYNAMIC_SHARED(smem_raw, $SHARED_BYTES);
  unsigned char *smem = (unsigned char *)(((unsigned long long)smem_raw + 1023) & ~1023ull);
  __shared__ __align__(8) unsigned long long full[$STAGES];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, group = warp >> 2;
  const long long row0 = (long long)blockIdx.y * $TILE_M, col0 = (long long)blockIdx.x * $TILE_N;
  // One matrix (rt::GemmCandidate::tensorMaps): the z of a block is its split.
  const long long split = blockIdx.z, matrix = 0, inner = 0, outer = 0;
  const long long k_tiles = (k + 63) / 64;
  const long long per_split = (k_tiles + split_k - 1) / split_k;
  const long long kt_begin = split * per_split;
  const long long kt_end = kt_begin + per_split < k_tiles ? kt_begin + per_split : k_tiles;
  const int tiles = kt_begin < kt_end ? (int)(kt_end - kt_begin) : 0;
  if (tid == 0) {
    kiln_prefetch_tensor_map(a_map);
    kiln_prefetch_tensor_map(b_map);
    #pragma unroll
    for (int s = 0; s < $STAGES; ++s)
      kiln_mbarrier_init(&full[s], 1);
    kiln_fence_mbarrier_init();
  }
  __syncthreads();
  if (tid == 0)
    for (int i = 0; i < $STAGES - 1 && i < tiles; ++i) {
$ISSUE
    }
  float d[$N8][4];
  #pragma unroll
  for (int j = 0; j < $N8; ++j)
    #pragma unroll
    for (int r = 0; r < 4; ++r)
      d[j][r] = 0.0f;
  for (int t = 0; t < tiles; ++t) {
    const int s = t % $STAGES;
    kiln_mbarrier_wait(&full[s], (unsigned)(t / $STAGES) & 1u);
    const $ELEMENT *a_tile = (const $ELEMENT *)(smem + s * $STAGE_BYTES) + group * 64 * 64;
    const $ELEMENT *b_tile = (const $ELEMENT *)(smem + s * $STAGE_BYTES + $A_BYTES);
    kiln_wgmma_hold(d);
    kiln_wgmma_fence();
    #pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      $WGMMA(d, kiln_wgmma_desc_swizzled(a_tile + kk * 16, 16, 1024, 128),
             $B_DESC, 1);
    kiln_wgmma_commit();
    // The tile before this one has been read, by this warpgroup and, after
    // the barrier, by all: its stage takes the tile $STAGES - 1 ahead.
    kiln_wgmma_wait<1>();
    kiln_wgmma_hold(d);
    __syncthreads();
    if (tid == 0 && t + $STAGES - 1 < tiles) {
      const int i = t + $STAGES - 1;
$ISSUE
    }
  }
  kiln_wgmma_wait<0>();
  kiln_wgmma_hold(d);
  // Accumulator r of columns 8 j.. is row lane / 4 (+ 8 for r >= 2) of the
  // warp's 16, column 2 (lane % 4) + r % 2.
  $C_ELEMENT *c_mat = c;
  const $ELEMENT *r_mat = residual;
  float *p_mat = partials ? partials + split * m * n : nullptr;
  #pragma unroll
  for (int j = 0; j < $N8; ++j)
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
      const long long row = row0 + group * 64 + (warp & 3) * 16 + (lane >> 2) + (i >> 1) * 8;
      const long long col = col0 + j * 8 + (lane & 3) * 2 + (i & 1);
      if (row >= m || col >= n)
        continue;
      float v = d[j][i];
      // A split's partial, or the sum the norm finish reads.
      if (p_mat) {
        p_mat[row * n + col] = v;
        continue;
      }
$FINISH
    }$ARRIVALS
}
)cuda";

/// Thread 0's copies of k tile kt_begin + i into stage i % stages.
std::string issueText(bool transB, int64_t tileN) {
  std::string text =
      "      const int st = i % $STAGES;\n"
      "      const int kc = (int)((kt_begin + i) * 64);\n"
      "      unsigned char *stage = smem + st * $STAGE_BYTES;\n"
      "      kiln_mbarrier_arrive_expect_tx(&full[st], $STAGE_BYTES);\n"
      "      kiln_tma_load_2d(stage, a_map, kc, (int)row0, &full[st]);\n";
  if (transB)
    return text + "      kiln_tma_load_2d(stage + $A_BYTES, b_map, kc, "
                  "(int)col0, &full[st]);";
  for (int64_t j = 0; j < tileN / 64; ++j)
    text += "      kiln_tma_load_2d(stage + $A_BYTES + " +
            std::to_string(j * 64 * 64 * 2) + ", b_map, (int)col0 + " +
            std::to_string(64 * j) + ", kc, &full[st]);\n";
  text.pop_back();
  return text;
}

} // namespace

int64_t wgmmaGemmSharedBytes(const GemmConfig &config) {
  // Each stage's A and B tiles of 64 16-bit columns, and the slack that
  // aligns the first to 1024 bytes.
  return config.stages * (config.tileM + config.tileN) * 64 * 2 + 1024;
}

void emitWgmmaGemmKernel(const GemmConfig &config, const GemmKernelKind &kind,
                         llvm::raw_ostream &os) {
  assert(config.form == GemmForm::Wgmma && config.tileK == 64 &&
         config.tileM % 64 == 0 && config.tileN % 64 == 0 &&
         config.tileN <= 256 && !kind.transA &&
         "whole warpgroups of 64 rows, boxes of 64 columns");
  HalfSpelling h = spellingOf(kind.dtype);
  bool bf16 = kind.dtype == rt::DType::BF16;
  auto str = [](int64_t v) { return std::to_string(v); };
  // B stored n x k is K-major: rows of 64 k, 8 rows a pattern; stored k x
  // n it is MN-major: boxes of 64 columns (LBO apart), 8 k rows a pattern,
  // the k16 step 16 rows of 128 bytes further.
  std::string bDesc =
      kind.transB
          ? "kiln_wgmma_desc_swizzled(b_tile + kk * 16, 16, 1024, 128)"
          : "kiln_wgmma_desc_swizzled(b_tile + kk * 16 * 64, 8192, 1024, "
            "128)";
  os << cudaWgmmaFunction(config.tileN, bf16, /*transB=*/!kind.transB,
                          /*aShared=*/true);
  std::vector<std::pair<std::string, std::string>> values =
      gemm::familyFinishValues(kind, config);
  llvm::append_range(
      values, std::vector<std::pair<std::string, std::string>>{
                  {"$NAME", gemmKernelName(config, kind)},
                  {"$C_ELEMENT", kind.widen ? "float" : h.type},
                  {"$ELEMENT", h.type},
                  {"$INTEGERS", kIntegerParameters},
                  {"$THREADS", str(config.threads())},
                  {"$WARPGROUPS", str(config.tileM / 64)},
                  {"$TILE_M", str(config.tileM)},
                  {"$TILE_N", str(config.tileN)},
                  {"$STAGES", str(config.stages)},
                  {"$STAGE_BYTES", str((config.tileM + config.tileN) * 64 * 2)},
                  {"$A_BYTES", str(config.tileM * 64 * 2)},
                  {"$SHARED_BYTES", str(wgmmaGemmSharedBytes(config))},
                  {"$N8", str(config.tileN / 8)},
                  {"$ISSUE", issueText(kind.transB, config.tileN)},
                  {"$WGMMA", wgmmaFunctionName(config.tileN, bf16, !kind.transB,
                                               /*aShared=*/true)},
                  {"$B_DESC", bDesc},
                  {"$FINISH", gemm::finishOf(kind)}});
  os << gemm::familyFinishPreamble(kind, gemmKernelName(config, kind))
     << substitute(kWgmmaKernel, values);
}

} // namespace kiln
