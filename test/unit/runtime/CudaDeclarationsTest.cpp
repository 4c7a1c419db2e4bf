//===- CudaDeclarationsTest.cpp - The runtime's CUDA ABI vs the headers ---===//
//
// The runtime declares the driver and cuBLASLt types and constants itself so
// that it builds without the toolkit. Where the toolkit headers are
// installed, this file checks those declarations against them at compile
// time; it includes headers only and links nothing of CUDA.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"
#include "CudaDriver.h"

#include <gtest/gtest.h>

#ifdef KILN_HAVE_CUDA_HEADERS
#include <cstddef>
#include <cublasLt.h>
#include <cuda.h>
#include <type_traits>

using namespace kiln::rt;

static_assert(cu::kSuccess == CUDA_SUCCESS, "");
static_assert(cu::kLaunchAttributeProgrammaticStreamSerialization ==
                  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
              "");
static_assert(sizeof(cu::LaunchAttribute) == sizeof(CUlaunchAttribute), "");
static_assert(sizeof(cu::TensorMap) == sizeof(CUtensorMap) &&
                  alignof(cu::TensorMap) == alignof(CUtensorMap),
              "");
static_assert(cu::kTensorMapFloat16 == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 &&
                  cu::kTensorMapBfloat16 == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
              "");
static_assert(cu::kTensorMapL2Promotion128B ==
                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B &&
                  CU_TENSOR_MAP_SWIZZLE_32B == 1 &&
                  CU_TENSOR_MAP_SWIZZLE_64B == 2 &&
                  CU_TENSOR_MAP_SWIZZLE_128B == 3,
              "");
// cuTensorMapEncodeTiled's arrays, as DriverApi declares them.
static_assert(std::is_same<cuuint64_t, uint64_t>::value &&
                  std::is_same<cuuint32_t, unsigned>::value,
              "");
static_assert(offsetof(cu::LaunchAttribute, value) ==
                      offsetof(CUlaunchAttribute, value) &&
                  offsetof(cu::LaunchAttribute, value) ==
                      offsetof(CUlaunchAttribute,
                               value.programmaticStreamSerializationAllowed),
              "");
static_assert(sizeof(cu::LaunchConfig) == sizeof(CUlaunchConfig), "");
static_assert(offsetof(cu::LaunchConfig, sharedBytes) ==
                      offsetof(CUlaunchConfig, sharedMemBytes) &&
                  offsetof(cu::LaunchConfig, stream) ==
                      offsetof(CUlaunchConfig, hStream) &&
                  offsetof(cu::LaunchConfig, attributes) ==
                      offsetof(CUlaunchConfig, attrs) &&
                  offsetof(cu::LaunchConfig, attributeCount) ==
                      offsetof(CUlaunchConfig, numAttrs),
              "");
static_assert(cu::kErrorNoDevice == CUDA_ERROR_NO_DEVICE, "");
static_assert(cu::kStreamNonBlocking == CU_STREAM_NON_BLOCKING, "");
static_assert(cu::kFuncAttributeMaxDynamicSharedSizeBytes ==
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              "");
static_assert(cu::kDeviceAttributeComputeCapabilityMajor ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
              "");
static_assert(cu::kDeviceAttributeComputeCapabilityMinor ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
              "");
static_assert(std::is_same<cu::DevicePtr, CUdeviceptr>::value, "");
static_assert(sizeof(cu::Result) == sizeof(CUresult), "");
static_assert(sizeof(cu::Device) == sizeof(CUdevice), "");
static_assert(lt::kSuccess == CUBLAS_STATUS_SUCCESS, "");
static_assert(lt::kCompute32F == CUBLAS_COMPUTE_32F, "");
static_assert(lt::kCompute32FFastTf32 == CUBLAS_COMPUTE_32F_FAST_TF32, "");
static_assert(lt::kCompute64F == CUBLAS_COMPUTE_64F, "");
static_assert(lt::kR32F == CUDA_R_32F, "");
static_assert(lt::kR16F == CUDA_R_16F, "");
static_assert(lt::kR16BF == CUDA_R_16BF, "");
static_assert(lt::kOpN == CUBLAS_OP_N && lt::kOpT == CUBLAS_OP_T, "");
static_assert(lt::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA, "");
static_assert(lt::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB, "");
static_assert(lt::kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE, "");
static_assert(lt::kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER, "");
static_assert(lt::kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
                  lt::kEpilogueRelu == CUBLASLT_EPILOGUE_RELU &&
                  lt::kEpilogueGelu == CUBLASLT_EPILOGUE_GELU,
              "");
static_assert((lt::kEpilogueRelu | lt::kEpilogueBias) ==
                      CUBLASLT_EPILOGUE_RELU_BIAS &&
                  (lt::kEpilogueGelu | lt::kEpilogueBias) ==
                      CUBLASLT_EPILOGUE_GELU_BIAS,
              "");
static_assert(cu::kEventDisableTiming == CU_EVENT_DISABLE_TIMING, "");
static_assert(cu::kStreamCaptureModeThreadLocal ==
                  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
              "");
static_assert(sizeof(cu::GraphExecUpdateResultInfo) ==
                  sizeof(CUgraphExecUpdateResultInfo),
              "");
static_assert(cu::kStreamCaptureStatusActive == CU_STREAM_CAPTURE_STATUS_ACTIVE,
              "");
static_assert(sizeof(cu::KernelNodeParams) == sizeof(CUDA_KERNEL_NODE_PARAMS) &&
                  offsetof(cu::KernelNodeParams, sharedBytes) ==
                      offsetof(CUDA_KERNEL_NODE_PARAMS, sharedMemBytes) &&
                  offsetof(cu::KernelNodeParams, params) ==
                      offsetof(CUDA_KERNEL_NODE_PARAMS, kernelParams) &&
                  offsetof(cu::KernelNodeParams, kernel) ==
                      offsetof(CUDA_KERNEL_NODE_PARAMS, kern) &&
                  offsetof(cu::KernelNodeParams, context) ==
                      offsetof(CUDA_KERNEL_NODE_PARAMS, ctx),
              "");
// The entry points resolved by version, as cuda.h maps their names.
static_assert(
    std::is_same<decltype(&cuStreamGetCaptureInfo_v3),
                 CUresult (*)(CUstream, CUstreamCaptureStatus *, cuuint64_t *,
                              CUgraph *, const CUgraphNode **,
                              const CUgraphEdgeData **, size_t *)>::value,
    "");
static_assert(
    std::is_same<decltype(&cuGraphExecKernelNodeSetParams_v2),
                 CUresult (*)(CUgraphExec, CUgraphNode,
                              const CUDA_KERNEL_NODE_PARAMS *)>::value,
    "");
static_assert(lt::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, "");
static_assert(lt::kLayoutStridedBatchOffset ==
                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
              "");
static_assert(lt::kPrefMaxWorkspaceBytes ==
                  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
              "");
// CudaExecutor.cpp sets MIN_ALIGNMENT_{A,B,C,D}_BYTES as 5 + i.
static_assert(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES == 5 &&
                  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES == 6 &&
                  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES == 7 &&
                  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES == 8,
              "");
static_assert(sizeof(lt::MatmulAlgo) == sizeof(cublasLtMatmulAlgo_t), "");
static_assert(sizeof(lt::HeuristicResult) ==
                  sizeof(cublasLtMatmulHeuristicResult_t),
              "");
static_assert(offsetof(lt::HeuristicResult, workspaceSize) ==
                  offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize),
              "");
static_assert(offsetof(lt::HeuristicResult, state) ==
                  offsetof(cublasLtMatmulHeuristicResult_t, state),
              "");

TEST(CudaDeclarations, MatchTheToolkitHeaders) {
  // The checks are the static_asserts above; reaching here means they held.
  SUCCEED();
}
#else
TEST(CudaDeclarations, MatchTheToolkitHeaders) {
  GTEST_SKIP() << "CUDA headers not found at configure time";
}
#endif
