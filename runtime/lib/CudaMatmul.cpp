//===- CudaMatmul.cpp - cuBLASLt objects of matmul steps ------------------===//
//
// The cuBLASLt side of the CUDA backend's matmul steps: the descriptors and
// layouts of a step (MatmulPlan), its bias pointer, and their destruction.
// Choosing an algorithm is MatmulChoice.cpp's.
//
//===----------------------------------------------------------------------===//

#include "CudaExecutorImpl.h"

#include <cstdint>
#include <string>

using namespace kiln::rt;
using namespace kiln::rt::detail;

/// Returns the cuBLASLt data type of `dtype`.
static int ltType(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return lt::kR16F;
  case DType::BF16:
    return lt::kR16BF;
  case DType::F64:
    return lt::kR64F;
  case DType::F8E4M3FN:
    return lt::kR8FE4M3;
  default:
    return lt::kR32F;
  }
}

Status CudaExecutor::prepareMatmul(size_t stepIndex, MatmulPlan &plan) {
  const MatmulStep &m = this->plan().steps[stepIndex].matmul;
  plan.step = stepIndex;
  std::string where = "matmul step " + std::to_string(stepIndex);
  for (int64_t v : {m.batch, m.m, m.n, m.k})
    if (v > INT32_MAX)
      return Status::error(StatusCode::Unsupported,
                           where + ": extents above 2^31-1 are not supported "
                                   "by cuBLASLt");
  auto check = [&](lt::LtStatus st, const char *what) {
    return st == lt::kSuccess
               ? Status::ok()
               : lt::cublasError(*ltApi, st, where + ": " + what);
  };
  // Double matrices compute and scale in fp64, all others in fp32 (with
  // TF32 inputs when the step allows it).
  bool isDouble = m.dtype == DType::F64;
  int compute = isDouble ? lt::kCompute64F
                : m.tf32 ? lt::kCompute32FFastTf32
                         : lt::kCompute32F;
  if (Status s =
          check(ltApi->matmulDescCreate(&plan.desc, compute,
                                        isDouble ? lt::kR64F : lt::kR32F),
                "cublasLtMatmulDescCreate");
      !s.isOk())
    return s;
  // cuBLAS is column-major and a row-major matrix is its column-major
  // transpose, so compute C^T = op(B)^T op(A)^T: cuBLAS's A is our B and its
  // B is our A, each with the same transpose flag, and nothing is moved.
  int32_t opA = m.transB ? lt::kOpT : lt::kOpN;
  int32_t opB = m.transA ? lt::kOpT : lt::kOpN;
  if (Status s = check(ltApi->matmulDescSetAttribute(plan.desc, lt::kDescTransA,
                                                     &opA, sizeof(opA)),
                       "setting TRANSA");
      !s.isOk())
    return s;
  if (Status s = check(ltApi->matmulDescSetAttribute(plan.desc, lt::kDescTransB,
                                                     &opB, sizeof(opB)),
                       "setting TRANSB");
      !s.isOk())
    return s;
  // The epilogue: bias (a vector over D's rows, which are our columns),
  // then the activation (none for the exact GELU, which the step's
  // activation kernel applies after the call). The bias pointer is set per
  // call; a stand-in with the largest alignment guides the first choice of
  // algorithm.
  uint32_t epilogue = lt::kEpilogueDefault;
  if (m.activation == MatmulActivation::Relu)
    epilogue = lt::kEpilogueRelu;
  else if (m.activation == MatmulActivation::Gelu)
    epilogue = lt::kEpilogueGelu;
  if (m.bias != kNoBuffer)
    epilogue =
        (epilogue == lt::kEpilogueDefault ? 0 : epilogue) | lt::kEpilogueBias;
  if (epilogue != lt::kEpilogueDefault)
    if (Status s =
            check(ltApi->matmulDescSetAttribute(plan.desc, lt::kDescEpilogue,
                                                &epilogue, sizeof(epilogue)),
                  "setting the epilogue");
        !s.isOk())
      return s;
  if (Status s = setBiasPointer(plan, kMaxAlign); !s.isOk())
    return s;
  // Float8 operands (an FP8 Q/DQ product's) sum into fp32: cuBLASLt's FP8
  // kernels take A and B K-major, which the step's form holds (TN in
  // cuBLAS's terms: its A, our B, transposed).
  int operandType = ltType(m.operandDtype()), cType = ltType(m.dtype);
  uint64_t operandElem = dtypeSize(m.operandDtype()),
           cElem = dtypeSize(m.dtype);
  // Our B is stored row-major as (k x n), or (n x k) when transposed; its
  // column-major view swaps rows and columns.
  uint64_t bRows = m.transB ? m.n : m.k, bCols = m.transB ? m.k : m.n;
  uint64_t aRows = m.transA ? m.k : m.m, aCols = m.transA ? m.m : m.k;
  struct LayoutSpec {
    lt::MatrixLayout *layout;
    uint64_t rows, cols;
    int64_t stride;
    int type;
    uint64_t elem;
  } specs[3] = {
      {&plan.aLayout, bCols, bRows, m.strideB, operandType, operandElem},
      {&plan.bLayout, aCols, aRows, m.strideA, operandType, operandElem},
      {&plan.cLayout, static_cast<uint64_t>(m.n), static_cast<uint64_t>(m.m),
       m.strideC, cType, cElem},
  };
  for (int i = 0; i < 3; ++i) {
    LayoutSpec &spec = specs[i];
    if (Status s = check(ltApi->matrixLayoutCreate(
                             spec.layout, spec.type, spec.rows, spec.cols,
                             static_cast<int64_t>(spec.rows)),
                         "cublasLtMatrixLayoutCreate");
        !s.isOk())
      return s;
    plan.strideBytes[i] = static_cast<uint64_t>(spec.stride) * spec.elem;
    if (m.batch == 1)
      continue;
    int32_t batch = static_cast<int32_t>(m.batch);
    // A stride of 0 makes every batch read the same matrix (broadcast).
    int64_t stride = spec.stride;
    if (Status s = check(ltApi->matrixLayoutSetAttribute(*spec.layout,
                                                         lt::kLayoutBatchCount,
                                                         &batch, sizeof(batch)),
                         "setting the batch count");
        !s.isOk())
      return s;
    if (Status s = check(ltApi->matrixLayoutSetAttribute(
                             *spec.layout, lt::kLayoutStridedBatchOffset,
                             &stride, sizeof(stride)),
                         "setting the batch stride");
        !s.isOk())
      return s;
  }
  // Pick the algorithm for the alignment the arena gives now, so that a
  // shape cuBLASLt cannot run fails at the first run, not later.
  uint32_t align[4] = {kMaxAlign, kMaxAlign, kMaxAlign, kMaxAlign};
  const lt::MatmulAlgo *algo = nullptr;
  Status chosen = chooseAlgo(plan, align, algo);
  // A kernel that takes the next launch runs such a step instead.
  if (!chosen.isOk() && m.takesNextLaunch()) {
    plan.noAlgorithm = true;
    return Status::ok();
  }
  return chosen;
}

Status CudaExecutor::setBiasPointer(MatmulPlan &plan, cu::DevicePtr bias) {
  if (this->plan().steps[plan.step].matmul.bias == kNoBuffer)
    return Status::ok();
  const void *pointer = reinterpret_cast<const void *>(bias);
  if (lt::LtStatus st = ltApi->matmulDescSetAttribute(
          plan.desc, lt::kDescBiasPointer, &pointer, sizeof(pointer));
      st != lt::kSuccess)
    return lt::cublasError(*ltApi, st,
                           "matmul step " + std::to_string(plan.step) +
                               ": setting the bias pointer");
  return Status::ok();
}

void CudaExecutor::destroyMatmuls(MatmulSet &set) {
  for (MatmulPlan &plan : set.plans) {
    for (lt::MatrixLayout layout : {plan.aLayout, plan.bLayout, plan.cLayout})
      if (layout)
        ltApi->matrixLayoutDestroy(layout);
    if (plan.desc)
      ltApi->matmulDescDestroy(plan.desc);
  }
  set.plans.clear();
  set.ofStep.clear();
  set.issues.clear();
}
