//===- CublasLt.h - cuBLASLt, opened at run time ----------------*- C++ -*-===//
//
// The cuBLASLt types, constants and entry points the runtime uses, declared
// here so that the artifact does not link libcublasLt: `loadCublasLt` opens
// it with dlopen at the first matmul. Values follow cublasLt.h and
// library_types.h (CUDA 12/13); a unit test checks them against the real
// headers where they are installed.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_CUBLASLT_H
#define KILN_RUNTIME_LIB_CUBLASLT_H

#include "CudaDriver.h"
#include "kiln/runtime/Status.h"

#include <cstddef>
#include <cstdint>

namespace kiln {
namespace rt {
namespace lt {

/// `cublasStatus_t`: 0 is success.
using LtStatus = int;
/// `cublasLtHandle_t`.
using Handle = struct cublasLtContext *;
/// `cublasLtMatmulDesc_t`.
using MatmulDesc = struct cublasLtMatmulDescOpaque *;
/// `cublasLtMatrixLayout_t`.
using MatrixLayout = struct cublasLtMatrixLayoutOpaque *;
/// `cublasLtMatmulPreference_t`.
using MatmulPreference = struct cublasLtMatmulPreferenceOpaque *;

/// `cublasLtMatmulAlgo_t`: semi-opaque, copied by value.
struct MatmulAlgo {
  /// Opaque contents.
  uint64_t data[8];
};

/// `cublasLtMatmulHeuristicResult_t`.
struct HeuristicResult {
  /// The algorithm.
  MatmulAlgo algo;
  /// Workspace it needs.
  size_t workspaceSize;
  /// Whether the other fields are valid.
  LtStatus state;
  /// Device utilization estimate.
  float wavesCount;
  /// Reserved.
  int reserved[4];
};

/// `CUBLAS_STATUS_SUCCESS`.
constexpr LtStatus kSuccess = 0;
/// `CUBLAS_COMPUTE_32F`.
constexpr int kCompute32F = 68;
/// `CUBLAS_COMPUTE_64F`.
constexpr int kCompute64F = 70;
/// `CUBLAS_COMPUTE_32F_FAST_TF32`: fp32 matrices on the tensor cores, their
/// inputs rounded to TF32.
constexpr int kCompute32FFastTf32 = 77;
/// `CUDA_R_32F`.
constexpr int kR32F = 0;
/// `CUDA_R_64F`.
constexpr int kR64F = 1;
/// `CUDA_R_16F`.
constexpr int kR16F = 2;
/// `CUDA_R_16BF`.
constexpr int kR16BF = 14;
/// `CUDA_R_8F_E4M3`.
constexpr int kR8FE4M3 = 28;
/// `CUBLAS_OP_N`.
constexpr int32_t kOpN = 0;
/// `CUBLAS_OP_T`.
constexpr int32_t kOpT = 1;
/// `CUBLASLT_MATMUL_DESC_TRANSA` (int32_t).
constexpr int kDescTransA = 3;
/// `CUBLASLT_MATMUL_DESC_TRANSB` (int32_t).
constexpr int kDescTransB = 4;
/// `CUBLASLT_MATMUL_DESC_EPILOGUE` (uint32_t).
constexpr int kDescEpilogue = 7;
/// `CUBLASLT_MATMUL_DESC_BIAS_POINTER` (const void *).
constexpr int kDescBiasPointer = 8;
/// `CUBLASLT_EPILOGUE_DEFAULT`.
constexpr uint32_t kEpilogueDefault = 1;
/// `CUBLASLT_EPILOGUE_RELU`.
constexpr uint32_t kEpilogueRelu = 2;
/// `CUBLASLT_EPILOGUE_BIAS`: or-ed into the activations (RELU_BIAS,
/// GELU_BIAS).
constexpr uint32_t kEpilogueBias = 4;
/// `CUBLASLT_EPILOGUE_GELU`.
constexpr uint32_t kEpilogueGelu = 32;
/// `CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT` (int32_t).
constexpr int kLayoutBatchCount = 5;
/// `CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET` (int64_t).
constexpr int kLayoutStridedBatchOffset = 6;
/// `CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES` (uint64_t).
constexpr int kPrefMaxWorkspaceBytes = 1;

/// Entry points of libcublasLt.
struct LtApi {
  /// cublasLtCreate.
  LtStatus (*create)(Handle *handle);
  /// cublasLtDestroy.
  LtStatus (*destroy)(Handle handle);
  /// cublasLtGetStatusString.
  const char *(*getStatusString)(LtStatus status);
  /// cublasLtMatmulDescCreate.
  LtStatus (*matmulDescCreate)(MatmulDesc *desc, int computeType,
                               int scaleType);
  /// cublasLtMatmulDescDestroy.
  LtStatus (*matmulDescDestroy)(MatmulDesc desc);
  /// cublasLtMatmulDescSetAttribute.
  LtStatus (*matmulDescSetAttribute)(MatmulDesc desc, int attr, const void *buf,
                                     size_t size);
  /// cublasLtMatrixLayoutCreate.
  LtStatus (*matrixLayoutCreate)(MatrixLayout *layout, int type, uint64_t rows,
                                 uint64_t cols, int64_t ld);
  /// cublasLtMatrixLayoutDestroy.
  LtStatus (*matrixLayoutDestroy)(MatrixLayout layout);
  /// cublasLtMatrixLayoutSetAttribute.
  LtStatus (*matrixLayoutSetAttribute)(MatrixLayout layout, int attr,
                                       const void *buf, size_t size);
  /// cublasLtMatmulPreferenceCreate.
  LtStatus (*preferenceCreate)(MatmulPreference *pref);
  /// cublasLtMatmulPreferenceDestroy.
  LtStatus (*preferenceDestroy)(MatmulPreference pref);
  /// cublasLtMatmulPreferenceSetAttribute.
  LtStatus (*preferenceSetAttribute)(MatmulPreference pref, int attr,
                                     const void *buf, size_t size);
  /// cublasLtMatmulAlgoGetHeuristic.
  LtStatus (*algoGetHeuristic)(Handle handle, MatmulDesc desc, MatrixLayout a,
                               MatrixLayout b, MatrixLayout c, MatrixLayout d,
                               MatmulPreference pref, int requested,
                               HeuristicResult *results, int *returned);
  /// cublasLtMatmul.
  LtStatus (*matmul)(Handle handle, MatmulDesc desc, const void *alpha,
                     const void *a, MatrixLayout aDesc, const void *b,
                     MatrixLayout bDesc, const void *beta, const void *c,
                     MatrixLayout cDesc, void *d, MatrixLayout dDesc,
                     const MatmulAlgo *algo, void *workspace,
                     size_t workspaceSize, cu::Stream stream);
};

/// Opens cuBLASLt once per process (`KILN_CUBLASLT` when set, else
/// libcublasLt.so.13, then libcublasLt.so) and returns its table in `out`.
/// Fails with `Unsupported` when it cannot be found; retried on the next call.
Status loadCublasLt(const LtApi *&out);

/// Returns a `Cuda` status "`what` failed: CUBLAS_STATUS_X".
Status cublasError(const LtApi &api, LtStatus status, const std::string &what);

} // namespace lt
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_CUBLASLT_H
