//===- HostGemm.cpp - fp32-accumulating batched GEMM on the CPU -----------===//
//
// Each batch converts its operands to row-major panels of the accumulation
// type (fp32, or fp64 for double matrices, as cuBLASLt's COMPUTE_32F and
// COMPUTE_64F) once, then accumulates a row of C at a time over k (i-k-j
// order, so the inner loop streams through B and C contiguously and
// vectorizes). A TF32 step rounds the operands to TF32 first, as the
// tensor cores take them; float8 operands widen exactly.
//
// The accumulation is that of a tuned BLAS, not one naive running sum: each
// product is added with a single rounding (a fused multiply-add, as GPU and
// MLAS kernels do), and k is summed in blocks of kBlockK whose partial sums
// are then added, so the rounding error grows with k / kBlockK + kBlockK
// rather than with k. On ill-conditioned models (attention scores of ~1e3
// from unnormalized random weights) a naive fp32 sum over k = 768 lands
// several times further from the exact result than onnxruntime does.
//
//===----------------------------------------------------------------------===//

#include "HostGemm.h"

// The same fp16/bf16 conversions as the emulated kernels use.
#include "kiln_cuda_host_math.h"

#include "kiln/runtime/Float8.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace kiln::rt;

namespace {

/// The k extent summed into one partial result (MLAS's fp32 k stride).
constexpr int64_t kBlockK = 256;

/// `acc + x * y` rounded once to float: the product of two floats is exact
/// in double, so this is a fused multiply-add (up to a rare double rounding)
/// that vectorizes without FMA instructions.
inline float fusedMultiplyAdd(float x, float y, float acc) {
  return static_cast<float>(static_cast<double>(x) * static_cast<double>(y) +
                            static_cast<double>(acc));
}
inline double fusedMultiplyAdd(double x, double y, double acc) {
  return x * y + acc;
}

/// Element `index` of a float matrix of `dtype`, widened exactly to `Acc`.
template <class Acc> Acc load(DType dtype, const void *base, int64_t index) {
  switch (dtype) {
  case DType::F16:
    return __half2float(static_cast<const __half *>(base)[index]);
  case DType::BF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(base)[index]);
  case DType::F64:
    return static_cast<Acc>(static_cast<const double *>(base)[index]);
  case DType::F8E4M3FN:
    return floatOfFloat8Bits(static_cast<const uint8_t *>(base)[index],
                             /*e5m2=*/false);
  default:
    return static_cast<const float *>(base)[index];
  }
}

/// Rounds `value` once to `dtype` and stores it as element `index`.
template <class Acc>
void store(DType dtype, void *base, int64_t index, Acc value) {
  switch (dtype) {
  case DType::F16:
    static_cast<__half *>(base)[index] = __float2half_rn(value);
    break;
  case DType::BF16:
    static_cast<__nv_bfloat16 *>(base)[index] = __float2bfloat16_rn(value);
    break;
  case DType::F64:
    static_cast<double *>(base)[index] = value;
    break;
  default:
    static_cast<float *>(base)[index] = static_cast<float>(value);
  }
}

/// `x` rounded to TF32 as the tensor cores take fp32 inputs (cvt.rna.tf32:
/// 10 mantissa bits, to nearest, ties away from zero); infinities and NaN
/// pass through.
inline float roundToTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u)
    return x;
  bits = (bits + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &bits, sizeof(bits));
  return x;
}

/// The epilogue's activation of `x`, as cuBLASLt computes it (its GELU is the
/// tanh approximation; it has no exact GELU, which the step's activation
/// kernel applies after it).
template <class Acc> Acc activate(MatmulActivation activation, Acc x) {
  switch (activation) {
  case MatmulActivation::Relu:
    return x > Acc(0) ? x : Acc(0);
  case MatmulActivation::Gelu: {
    const Acc k = Acc(0.7978845608028654); // sqrt(2 / pi)
    return Acc(0.5) * x *
           (Acc(1) + std::tanh(k * (x + Acc(0.044715) * x * x * x)));
  }
  default:
    return x;
  }
}

/// The GEMM with products accumulated in `Acc`.
template <class Acc>
void runGemmIn(const MatmulStep &s, const void *a, const void *b, void *c,
               const void *bias, const void *residual) {
  const int64_t m = s.m, n = s.n, k = s.k;
  const Acc alpha = s.alpha, beta = s.beta;
  std::vector<Acc> lhs(static_cast<size_t>(m * k)),
      rhs(static_cast<size_t>(k * n)), row(static_cast<size_t>(n)),
      partial(static_cast<size_t>(n));
  for (int64_t matrix = 0; matrix < s.outerBatch * s.batch; ++matrix) {
    int64_t outer = matrix / s.batch, inner = matrix % s.batch;
    int64_t aBase = outer * s.outerStrideA + inner * s.strideA,
            bBase = outer * s.outerStrideB + inner * s.strideB,
            cBase = outer * s.outerStrideC + inner * s.strideC;
    // lhs[i][p] = op(A)[i][p]; A is stored m x k, or k x m when transposed.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p)
        lhs[i * k + p] = load<Acc>(s.operandDtype(), a,
                                   aBase + (s.transA ? p * m + i : i * k + p));
    // rhs[p][j] = op(B)[p][j]; B is stored k x n, or n x k when transposed.
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        rhs[p * n + j] = load<Acc>(s.operandDtype(), b,
                                   bBase + (s.transB ? j * k + p : p * n + j));
    if (s.tf32) {
      for (Acc &x : lhs)
        x = roundToTf32(static_cast<float>(x));
      for (Acc &x : rhs)
        x = roundToTf32(static_cast<float>(x));
    }
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), Acc(0));
      for (int64_t block = 0; block < k; block += kBlockK) {
        std::fill(partial.begin(), partial.end(), Acc(0));
        for (int64_t p = block, e = std::min(k, block + kBlockK); p < e; ++p) {
          Acc x = lhs[i * k + p];
          const Acc *r = &rhs[p * n];
          for (int64_t j = 0; j < n; ++j)
            partial[j] = fusedMultiplyAdd(x, r[j], partial[j]);
        }
        for (int64_t j = 0; j < n; ++j)
          row[j] += partial[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        Acc value = alpha * row[j];
        if (beta != Acc(0))
          value += beta * load<Acc>(s.dtype, residual, cBase + i * n + j);
        if (bias)
          value += load<Acc>(s.dtype, bias, j);
        store<Acc>(s.dtype, c, cBase + i * n + j,
                   activate(s.activation, value));
      }
    }
  }
}

} // namespace

void kiln::rt::host::runGemm(const MatmulStep &s, const void *a, const void *b,
                             void *c, const void *bias, const void *residual) {
  if (s.dtype == DType::F64)
    runGemmIn<double>(s, a, b, c, bias, residual);
  else
    runGemmIn<float>(s, a, b, c, bias, residual);
}
