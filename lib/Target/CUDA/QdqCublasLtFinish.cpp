//===- QdqCublasLtFinish.cpp - FP8 Q/DQ products on cuBLASLt --------------===//
//
// The product of float8 activations and float8 weights at many rows, where
// cuBLASLt's FP8 kernels (Hopper's wgmma with TMA, tuned per shape) are the
// fastest way to their sums: the Q/DQ GEMM's own Hopper form
// (QdqWgmmaEmitter.cpp) ran at 178-233 TFLOP/s at 4,096 rows of BERT-base's
// shapes on an H200 (bench/results/2026-12-04-h200.md), a fifth of the
// float8 tensor cores' peak.
//
// A matmul step of float8 operands (rt::MatmulStep::float8) leaves each
// element's sum of products, unscaled, in fp32 scratch (the buffer the
// Q/DQ GEMM keeps its split sums in); then the kernel here scales each sum
// by the activations' scale and its column's, as the Q/DQ GEMM's tiles do,
// and finishes it with that GEMM's epilogue (the bias, residual and
// activation, the tail that requantizes it, and a row norm after the tail
// where there is one) from the same text (gemm::qdqValues,
// gemm::qdqFinishValues). It takes the Q/DQ GEMM's parameters, so the
// plan launches it with the GEMM's arguments.
//
// Products of float8 values are exact in fp32 and cuBLASLt sums them in
// fp32 in its own order, so the result is the Q/DQ GEMM's within the
// sums' rounding. As for the Hopper form, only 16-bit products take it:
// the float8 tensor cores sum with fewer bits than fp32's contract allows.
// Where the Hopper form reaches the same rows, the plan offers it as the
// float8 step's rival on this kernel's arguments (PlanQdqMatmuls.cpp), and
// the runtime keeps whichever of the two ways its first run times faster.
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"
#include "GemmParts.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace kiln {

namespace {

using gemm::substitute;

/// Rows of C a block of the finishing kernel covers, 64 columns each.
constexpr int64_t kFinishTileM = 64;

constexpr const char *kFinishKernel = R"cuda(
// Kiln FP8 GEMM's finish after cuBLASLt: each element's sum of float8
// products, which cuBLASLt left in partials, scaled by the activations' scale
// and its column's, then the epilogue; a $TILE_M x 64 tile of C a block.
extern "C" __global__ void __launch_bounds__(128) $NAME(
    const unsigned char *__restrict__ a, const unsigned char *__restrict__ packed,
    const $ELEMENT *__restrict__ scales, const $A_ELEMENT *__restrict__ a_scale$BIAS_PARAMETER$RESIDUAL_PARAMETER$TAIL_PARAMETERS$NORM_PARAMETERS,
    $C_TYPE *__restrict__ c, float *__restrict__ partials$DIMS) {
  kiln_pdl_enter();
  const long long m = $EXTENT_M, n = $EXTENT_N;
  // The sums are split 0's of the Q/DQ GEMM's finish: one split.
  const long long split = 0;
  const float activation_scale = $A_TO_FLOAT(a_scale[0]);
  const $ELEMENT *r_mat = $R_MAT;$BIAS_LOCAL
  $C_TYPE *c_mat = c;
  for (int e = threadIdx.x; e < $TILE_M * 64; e += blockDim.x) {
    const long long row = (long long)blockIdx.y * $TILE_M + e / 64;
    const long long col = (long long)blockIdx.x * 64 + e % 64;
    if (row >= m || col >= n)
      continue;
    float v = __fmul_rn(__fmul_rn(partials[row * n + col], activation_scale), $TO_FLOAT(scales[col]));
$STORE
  }$ARRIVALS
}
)cuda";

} // namespace

QdqCublasLtChoice chooseQdqCublasLt(const QdqGemmShape &shape,
                                    int64_t fewestRows, llvm::StringRef arch) {
  QdqCublasLtChoice choice;
  if (!shape.float8)
    choice.refusal = "cuBLASLt's integer path is not offered (integer "
                     "weights are stored q + 128, and unsigned activations "
                     "need a zero point cuBLASLt does not take)";
  else if (arch != "sm_90a")
    choice.refusal = "the FP8 tensor cores are Hopper's here, the target " +
                     arch.str() + "'s are not";
  else if (shape.dtype != rt::DType::F16 && shape.dtype != rt::DType::BF16)
    choice.refusal = "the float8 tensor cores sum with fewer bits than an "
                     "fp32 product's contract allows";
  else if (shape.rowBytes != shape.k || shape.k % 16 != 0 || shape.n % 4 != 0)
    choice.refusal = "cuBLASLt's FP8 kernels take rows of whole 16-byte "
                     "chunks, unpadded (the operands' K bytes and the fp32 "
                     "sums' N floats)";
  else if (fewestRows < 0)
    choice.refusal = "--qdq-cublaslt-rows=-1";
  if (!choice.refusal.empty())
    return choice;
  // By default from where the Hopper form's 128 x 128 tiles would fill the
  // GPU (chooseQdqWgmma's default): the rows where a GEMM's time is its
  // arithmetic, which cuBLASLt's kernels do faster; below, the Q/DQ GEMM's
  // fused epilogue saves the fp32 sums' round trip and a launch. Neither
  // crossing has been measured on a GPU yet.
  if (fewestRows == 0) {
    QdqWgmmaChoice hopper = chooseQdqWgmma(shape, 0, arch);
    fewestRows = hopper.config ? hopper.fewestRows : shape.upperM + 1;
  }
  fewestRows = std::max(fewestRows, shape.leastM);
  if (shape.upperM < fewestRows) {
    choice.refusal = "no run has " + std::to_string(fewestRows) + " rows";
    return choice;
  }
  choice.fewestRows = fewestRows;
  return choice;
}

GemmConfig qdqFinishConfig() {
  return {GemmForm::Mma, kFinishTileM, 64, 64, 1, 4, 1};
}

int64_t qdqFinishFloats(const QdqGemmShape &shape, int64_t mostRows) {
  int64_t sums = mostRows * shape.n;
  if (shape.norm == PackedGemvShape::Norm::None)
    return sums;
  // Past the sums, each row's statistics over each column tile.
  return sums + mostRows * llvm::divideCeil(shape.n, 64) * 2;
}

void emitQdqFinish(const QdqGemmShape &shape, const std::string &name,
                   const std::string &rows, int64_t mostRows,
                   const std::string &dims, const QdqGemmTail *tail,
                   llvm::raw_ostream &os) {
  std::vector<std::pair<std::string, std::string>> values =
      gemm::qdqValues(shape, 1, name, rows, dims, tail);
  std::string counters;
  std::vector<std::pair<std::string, std::string>> finish =
      gemm::qdqFinishValues(shape, name, 1, kFinishTileM, 64, mostRows, tail,
                            counters);
  values.insert(values.end(), finish.begin(), finish.end());
  values.push_back({"$TILE_M", std::to_string(kFinishTileM)});
  os << counters << substitute(kFinishKernel, values);
}

} // namespace kiln
