//===- PlanMatmuls.cpp - the plan's cuBLASLt steps ------------------------===//
//
// PlanBuilder's matmul steps: a kiln.matmul, or a GEMM kernel (a matmul and
// the epilogue kiln-fuse recorded), as one cuBLASLt call; its extents and
// strides, with the batch dims as at most two levels of strided batches.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "EmitterSupport.h"
#include "GemmEmitter.h"
#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;

namespace kiln::detail {

FailureOr<SmallVector<PlanBuilder::BatchLevel, 2>>
PlanBuilder::batchLevels(MatmulOp op) {
  Sizes result = sizesOf(op.getResult());
  Sizes shapes[3] = {sizesOf(op.getLhs()), sizesOf(op.getRhs()), result};
  size_t batchRank = result.size() - 2;
  SmallVector<BatchLevel, 2> levels;
  Size contiguous[3];
  for (int x = 0; x < 3; ++x)
    contiguous[x] = shapes[x].back() * shapes[x][shapes[x].size() - 2];
  for (size_t j = batchRank; j-- > 0;) {
    if (result[j] == 1)
      continue;
    BatchLevel dim;
    dim.count = result[j];
    for (int x = 0; x < 3; ++x) {
      // Operands are aligned to the result from the right.
      size_t fromEnd = result.size() - j;
      bool present = shapes[x].size() >= fromEnd &&
                     shapes[x][shapes[x].size() - fromEnd] != 1;
      dim.stride[x] = present ? contiguous[x] : Size(0);
      if (present)
        contiguous[x] *= result[j];
    }
    if (!levels.empty()) {
      BatchLevel &inner = levels.back();
      bool continues = llvm::all_of(llvm::seq(0, 3), [&](int x) {
        return dim.stride[x] == inner.stride[x] * inner.count;
      });
      if (continues) {
        inner.count *= dim.count;
        continue;
      }
    }
    levels.push_back(dim);
  }
  if (levels.size() > 2)
    return op.emitOpError("batch dims broadcast in more than two patterns "
                          "are not supported by the CUDA target yet");
  return levels;
}

void PlanBuilder::pushMatmul(MatmulPlan &plan) {
  rt::MatmulStep &m = plan.step;
  std::array<int64_t *, rt::kMatmulFields> fields = rt::matmulFields(m);
  for (unsigned f = 0; f < rt::kMatmulFields; ++f)
    *fields[f] = plan.sizes[f].upper();
  artifact.steps.push_back(rt::Step::ofMatmul(m));
  for (unsigned f = 0; f < rt::kMatmulFields; ++f)
    bind(rt::SizeField::MatmulField, artifact.steps.size() - 1, f,
         plan.sizes[f]);
}

LogicalResult PlanBuilder::addMatmul(MatmulOp op, llvm::raw_ostream &source) {
  if (failed(addResults(op)))
    return failure();
  auto plan = matmulPlan(op);
  if (failed(plan))
    return failure();
  plan->step.a = bufferOf.at(op.getLhs());
  plan->step.b = bufferOf.at(op.getRhs());
  plan->step.c = bufferOf.at(op.getResult());
  addGemmCandidates(*plan, op, source);
  pushMatmul(*plan);
  return success();
}

/// The runtime's form of a GEMM kernel's epilogue activation.
static rt::MatmulActivation matmulActivationOf(GemmActivation activation) {
  switch (activation) {
  case GemmActivation::none:
    return rt::MatmulActivation::None;
  case GemmActivation::relu:
    return rt::MatmulActivation::Relu;
  case GemmActivation::gelu:
    return rt::MatmulActivation::Gelu;
  }
  llvm_unreachable("a GemmActivation the runtime lacks");
}

LogicalResult PlanBuilder::addGemm(KernelOp kernel, llvm::raw_ostream &source) {
  Block &body = kernel.getBody().front();
  // After the dequantize of block-quantized weights, where there is one.
  auto matmul = *body.getOps<MatmulOp>().begin();
  auto dequantize = matmul.getRhs().getDefiningOp<DequantizeOp>();
  // A row norm's kernel may also yield what it normalizes (the verifier
  // checks which value).
  // A cache update's kernel yields the updated caches too (after
  // block-quantized weights: the verifier's verifyGemmCacheUpdate).
  bool normed = kernel.getEpilogueAttr().getNormScale() >= 0;
  bool updates = kernel.getEpilogueAttr().getCacheUpdate();
  if (kernel.getNumResults() != 1 && !updates &&
      !(normed && kernel.getNumResults() == 2))
    return kernel.emitOpError("has ")
           << kernel.getNumResults() << " results; the CUDA target needs one";
  for (Value v : matmul->getOperands())
    if (!symbolicShapeOf(tensorType(v)))
      return kernel.emitOpError("has a dynamic shape without its sizes");
  // Block argument i is kernel input i.
  auto inputOf = [&](Value v) -> FailureOr<uint32_t> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &body)
      return failure();
    return bufferOf.at(kernel.getInputs()[arg.getArgNumber()]);
  };
  auto plan = matmulPlan(matmul);
  // The activation first: the Q/DQ and packed kernels below read it from
  // the step as cuBLASLt's does. GELU's exact form is fp32's own; a 16-bit
  // product takes cuBLASLt's tanh form (kiln-fuse's isEpilogueActivation
  // says why).
  if (succeeded(plan)) {
    rt::MatmulStep &step = plan->step;
    step.activation =
        matmulActivationOf(kernel.getEpilogueAttr().getActivation());
    auto gelus = body.getOps<GeluOp>();
    if (step.activation == rt::MatmulActivation::Gelu &&
        step.dtype == rt::DType::F32 && !gelus.empty() &&
        (*gelus.begin()).getApproximate() == GeluApproximation::none)
      step.activation = rt::MatmulActivation::GeluErf;
    // A 16-bit result cast to an fp32 output, stored widened.
    // (A tail stores its own value, of its own type.)
    step.widen =
        !kernel.getEpilogueAttr().getTail() &&
        tensorType(kernel.getResult(0)).getElementType().isF32() &&
        (step.dtype == rt::DType::F16 || step.dtype == rt::DType::BF16);
    if (step.widen && dequantize)
      return kernel.emitOpError("of kind gemm over quantized weights stores "
                                "its own element type on the CUDA target");
  }
  // 8-bit activations times 8-bit weights: the Q/DQ GEMM.
  bool computedLhs = kernel.getEpilogueAttr().getPrologue();
  if (std::optional<DequantizedActivations> activations =
          dequantize && !computedLhs ? dequantizedActivations(matmul.getLhs())
                                     : std::nullopt) {
    // kiln-fuse puts a norm only after its tail (growQdqTailNorm).
    if (normed && !kernel.getEpilogueAttr().getTail())
      return kernel.emitOpError("of kind gemm over 8-bit activations takes "
                                "a norm only after its tail on the CUDA "
                                "target");
    if (failed(plan) || failed(addResults(kernel)))
      return failure();
    return addQdqGemm(kernel, matmul, dequantize, *activations, *plan, source);
  }
  // A left operand the kernel computes (its prologue) is the packed
  // paths' (addPackedGemm).
  auto a = computedLhs ? FailureOr<uint32_t>(0) : inputOf(matmul.getLhs());
  FailureOr<uint32_t> b =
      dequantize ? FailureOr<uint32_t>(0) : inputOf(matmul.getRhs());
  if (failed(plan) || failed(a) || failed(b))
    return kernel.emitOpError("of kind gemm needs a matmul of its inputs");
  rt::MatmulStep *step = &plan->step;
  std::optional<DimExpr> unpackedWhen;
  std::optional<UnpackedWeights::CacheUpdate> cacheUpdate;
  if (dequantize) {
    if (failed(addResults(kernel)) || failed(addAlias(kernel)))
      return failure();
    auto unpacked = addPackedGemm(kernel, matmul, dequantize, *plan, source);
    if (failed(unpacked))
      return failure();
    if (!*unpacked)
      return success();
    b = (*unpacked)->buffer;
    unpackedWhen = (*unpacked)->when;
    cacheUpdate = (*unpacked)->cacheUpdate;
    if ((*unpacked)->lhs)
      a = *(*unpacked)->lhs;
  }
  step->a = *a;
  step->b = *b;
  GemmEpilogueAttr epilogue = kernel.getEpilogueAttr();
  if (int64_t bias = epilogue.getBias(); bias >= 0)
    step->bias = bufferOf.at(kernel.getInputs()[bias]);
  // A residual of the result's shape: beta = 1 over it, read in the
  // product's element order as the result is written.
  if (int64_t residual = epilogue.getResidual(); residual >= 0) {
    step->residual = bufferOf.at(kernel.getInputs()[residual]);
    step->beta = 1.0f;
  }
  if (int64_t scale = epilogue.getNormScale(); scale >= 0) {
    Operation *norm =
        &*llvm::find_if(body, [](Operation &op) { return isRowNorm(&op); });
    step->normScale = bufferOf.at(kernel.getInputs()[scale]);
    if (int64_t shift = epilogue.getNormShift(); shift >= 0)
      step->normShift = bufferOf.at(kernel.getInputs()[shift]);
    step->normEpsilon = rowNormEpsilon(norm).convertToFloat();
    step->normRms = isa<RmsNormOp>(norm);
    rt::DType dtype = step->dtype;
    bool widen = step->widen;
    step->normKernel =
        gemmKernelIndex(gemmNormName(dtype, widen), [&](llvm::raw_ostream &os) {
          emitGemmNorm(dtype, widen, os);
        });
  }
  if (!dequantize && failed(addResults(kernel)))
    return failure();
  // cuBLASLt has no exact GELU, nor a C of another type than its product:
  // after cuBLASLt's product a kernel applies the GELU, or (without a norm
  // kernel to) widens the product into C.
  rt::DType dtype = step->dtype;
  if (step->activation == rt::MatmulActivation::GeluErf)
    step->finishKernel = gemmKernelIndex(
        gemmGeluErfName(), [&](llvm::raw_ostream &os) { emitGemmGeluErf(os); });
  else if (step->widen && !step->hasNorm())
    step->finishKernel =
        gemmKernelIndex(gemmWidenName(dtype), [&](llvm::raw_ostream &os) {
          emitGemmWiden(dtype, os);
        });
  step->c = bufferOf.at(kernel.getResult(0));
  if (normed && kernel.getNumResults() == 2)
    step->normSum = bufferOf.at(kernel.getResult(1));
  addGemmCandidates(*plan, kernel, source);
  pushMatmul(*plan);
  if (unpackedWhen)
    guardStep(artifact.steps.size() - 1, *unpackedWhen);
  if (cacheUpdate)
    return addCacheUpdateKernel(kernel, cacheUpdate->name, cacheUpdate->when,
                                source);
  return success();
}

void PlanBuilder::addGemmCandidates(MatmulPlan &plan, Operation *op,
                                    llvm::raw_ostream &source) {
  if (!options.gemmKernels)
    return;
  rt::MatmulStep &step = plan.step;
  auto &[batch, m, n, k, strideA, strideB, strideC, outerBatch, outerStrideA,
         outerStrideB, outerStrideC] = plan.sizes;
  GemmShape shape;
  shape.dtype = step.dtype;
  shape.upperM = m.upper();
  shape.leastM = lowerBound(m.getExpr(), dimRangesOf(func)).value_or(1);
  shape.n = n.upper();
  shape.k = k.upper();
  shape.batch = batch.upper() * outerBatch.upper();
  shape.transA = step.transA;
  shape.transB = step.transB;
  shape.chunked = {
      {step.transA ? "A's row (m)" : "A's row (k)", step.transA ? m : k},
      {step.transB ? "B's row (k)" : "B's row (n)", step.transB ? k : n},
      {"A's batch stride", strideA},
      {"B's batch stride", strideB},
      {"A's outer batch stride", outerStrideA},
      {"B's outer batch stride", outerStrideB}};
  GemmChoice choice = chooseGemmConfigs(shape);
  if (choice.configs.empty())
    return;
  // One kernel per element type, transposes, epilogue and layout,
  // whichever steps share them.
  GemmKernelKind kind;
  kind.dtype = step.dtype;
  kind.transA = step.transA;
  kind.transB = step.transB;
  kind.bias = step.bias != rt::kNoBuffer;
  kind.residual = step.residual != rt::kNoBuffer;
  kind.activation = step.activation;
  kind.widen = step.widen;
  kind.norm = step.hasNorm();
  std::vector<GemmConfig> offered;
  for (const GemmConfig &config : choice.configs) {
    rt::GemmCandidate candidate;
    candidate.name = config.name();
    std::string name = gemmKernelName(config, kind);
    // A split's last blocks count their arrivals at each tile of C, and a
    // norm's at each row tile too, at the top of the dims' ranges.
    uint64_t tiles = 0;
    if (config.splitK > 1 || kind.norm) {
      auto tilesOf = [](const Size &extent, int64_t tile) {
        return static_cast<uint64_t>((extent.upper() + tile - 1) / tile);
      };
      tiles = tilesOf(m, config.tileM) * tilesOf(n, config.tileN) *
              batch.upper() * outerBatch.upper();
      // More tiles than a candidate's counters can say: not offered.
      if (tiles > UINT32_MAX)
        continue;
    }
    offered.push_back(config);
    FamilyArrivals &arrivals = familyArrivals[name];
    arrivals.tiles = std::max(arrivals.tiles, tiles);
    arrivals.norm = kind.norm;
    candidate.kernel = gemmKernelIndex(
        name, [&](llvm::raw_ostream &os) { emitGemmKernel(config, kind, os); });
    candidate.arrivals = static_cast<uint32_t>(tiles);
    candidate.tileM = config.tileM;
    candidate.tileN = config.tileN;
    candidate.threads = config.threads();
    candidate.splitK = config.splitK;
    if (config.form == GemmForm::Wgmma) {
      candidate.sharedBytes =
          static_cast<uint32_t>(wgmmaGemmSharedBytes(config));
      candidate.tensorMaps = true;
    }
    step.kernels.push_back(std::move(candidate));
  }
  if (configs && !offered.empty()) {
    KernelConfig record;
    record.kernel = "matmul step " + std::to_string(artifact.steps.size());
    record.op = op;
    record.gemmCandidates = std::move(offered);
    configs->push_back(std::move(record));
  }
}

uint32_t PlanBuilder::gemmKernelIndex(
    const std::string &name,
    llvm::function_ref<void(llvm::raw_ostream &)> emit) {
  auto [it, inserted] = gemmKernels.try_emplace(name, 0);
  if (inserted) {
    emit(*familySource);
    it->second = artifact.kernelNames.size();
    artifact.kernelNames.push_back(name);
  }
  return it->second;
}

FailureOr<PlanBuilder::MatmulPlan> PlanBuilder::matmulPlan(MatmulOp op) {
  auto resultType = op.getType();
  Sizes shape = sizesOf(op.getResult());
  MatmulPlan plan;
  rt::MatmulStep &step = plan.step;
  auto dtype = toRuntimeDType(resultType.getElementType(), op.getLoc());
  if (failed(dtype))
    return failure();
  // cuBLASLt (and the host backend's GEMM) multiply float matrices only.
  if (!rt::isFloatDType(*dtype)) {
    op.emitOpError("integer matmul is not supported by the CUDA target, "
                   "got element type ")
        << resultType.getElementType();
    return failure();
  }
  step.dtype = *dtype;
  step.tf32 = allowTf32 && *dtype == rt::DType::F32;
  step.transA = op.getTransposeLhs();
  step.transB = op.getTransposeRhs();
  auto &[batch, m, n, k, strideA, strideB, strideC, outerBatch, outerStrideA,
         outerStrideB, outerStrideC] = plan.sizes;
  m = shape[shape.size() - 2];
  n = shape[shape.size() - 1];
  Sizes lhs = sizesOf(op.getLhs());
  k = lhs[lhs.size() - (step.transA ? 2 : 1)];
  auto levels = batchLevels(op);
  if (failed(levels))
    return failure();
  BatchLevel inner = levels->empty() ? BatchLevel() : (*levels)[0];
  BatchLevel outer = levels->size() < 2 ? BatchLevel() : (*levels)[1];
  // A symbolic batch may be 1 at run time; its stride is m * n then too.
  bool batched = inner.count.upper() > 1;
  batch = inner.count;
  strideA = inner.stride[0];
  strideB = inner.stride[1];
  strideC = batched ? inner.stride[2] : m * n;
  outerBatch = outer.count;
  outerStrideA = outer.stride[0];
  outerStrideB = outer.stride[1];
  outerStrideC = outer.stride[2];
  // A batch of row-major A matrices, one after the other, times one B is
  // one GEMM of batch x m rows: what a linear layer over [b, s, h] is.
  // cuBLASLt tiles one tall matrix better than many short ones (decode
  // steps of a batch are m = 1 each).
  if (batched && outerBatch == 1 && strideB == 0 && !step.transA &&
      strideA == m * k && strideC == m * n) {
    m = m * batch;
    batch = 1;
    strideA = 0;
    strideC = m * n;
  }
  step.alpha = 1.0f;
  step.beta = 0.0f;
  return plan;
}

} // namespace kiln::detail
