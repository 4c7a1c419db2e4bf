//===- PlanQdqMatmuls.cpp - the plan's steps of 8-bit Q/DQ products -------===//
//
// PlanBuilder's steps for a GEMM kernel that multiplies 8-bit activations
// by 8-bit weights of their kind (integers, or float8 E4M3FN): kiln-fuse put
// in it the activations' dequantization (QuantizedActivations.h) and the
// weights' kiln.dequantize, so the kernel reads both as the bytes they
// are. The Q/DQ GEMM (QdqGemmEmitter.cpp) runs it at every row count, a
// launch step as the packed kernels' are, except runs of enough rows,
// which take its Hopper form (QdqWgmmaEmitter.cpp); its epilogue is the
// GEMM kernel's. A float8 product of a 16-bit model runs its most rows on
// cuBLASLt instead (a matmul step of float8 operands, then the finish of
// QdqCublasLtFinish.cpp), with the Hopper form as the step's rival, which
// the runtime times against the two at a run's first (rt::GemmCandidate::
// withNextLaunch).
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "EmitterSupport.h"
#include "GemmEmitter.h"
#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <set>

using namespace mlir;

namespace kiln::detail {

LogicalResult PlanBuilder::addQdqGemm(KernelOp kernel, MatmulOp matmul,
                                      DequantizeOp dequantize,
                                      const DequantizedActivations &activations,
                                      const MatmulPlan &plan,
                                      llvm::raw_ostream &source) {
  // kiln-fuse took these ops whole, so each operand is a kernel input.
  auto outside = [&](Value v) -> std::optional<uint32_t> {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &kernel.getBody().front())
      return std::nullopt;
    return bufferOf.at(kernel.getInputs()[arg.getArgNumber()]);
  };
  Type element = matmul.getType().getElementType();
  auto ofProduct = [&](Value v) {
    return v && getElementTypeOrSelf(v.getType()) == element;
  };
  std::optional<uint32_t> a = outside(activations.quantized),
                          packed = outside(dequantize.getPacked()),
                          scales = outside(dequantize.getScales()),
                          scale = outside(activations.scale);
  std::optional<uint32_t> zero, weightZero;
  if (activations.zero)
    zero = outside(activations.zero);
  if (Value points = dequantize.getZeroPoints())
    weightZero = outside(points);
  // The activations' scale and zero point are of the type the
  // dequantization computes in (wider than a 16-bit product's, after mixed
  // precision); the weights' scales of the product's.
  Type computed = getElementTypeOrSelf(activations.scale.getType());
  FailureOr<rt::DType> scaleDtype =
      toRuntimeDType(computed, activations.scale.getLoc());
  bool scaleTyped = succeeded(scaleDtype) && (*scaleDtype == rt::DType::F32 ||
                                              *scaleDtype == rt::DType::F16 ||
                                              *scaleDtype == rt::DType::BF16);
  if (!a || !packed || !scales || !scale || !scaleTyped ||
      (activations.zero &&
       (!zero ||
        getElementTypeOrSelf(activations.zero.getType()) != computed)) ||
      (dequantize.getZeroPoints() &&
       (!weightZero || !dequantize.hasIntegerZeroPoints())) ||
      !ofProduct(dequantize.getScales()))
    return kernel.emitOpError("of kind gemm needs its 8-bit operands, their "
                              "scales and zero points as its inputs (the "
                              "weights' of integers), the weights' scales of "
                              "the product's type");
  const rt::MatmulStep &step = plan.step;
  if (step.batch != 1 || step.outerBatch != 1)
    return kernel.emitOpError("of kind gemm of 8-bit operands needs its A to "
                              "be one matrix of rows on the CUDA target");
  const Size &m = plan.sizes[1];
  GemmEpilogueAttr epilogue = kernel.getEpilogueAttr();
  QdqGemmShape shape;
  shape.dtype = step.dtype;
  shape.scaleDtype = *scaleDtype;
  shape.leastM = lowerBound(m.getExpr(), dimRangesOf(func)).value_or(1);
  shape.upperM = m.upper();
  shape.n = plan.sizes[2].upper();
  shape.k = plan.sizes[3].upper();
  shape.rowBytes = dequantize.getBlockBytes();
  // A float8 zero point is 0 (kiln-fuse took no other): not read.
  shape.float8 = isFloat8Activation(activations.quantized);
  shape.unsignedActivations = isUnsignedActivation(activations.quantized);
  shape.zeroPoint = activations.zero && !shape.float8;
  shape.weightZeroPoints = weightZero.has_value();
  shape.bias = epilogue.getBias() >= 0;
  shape.residual = epilogue.getResidual() >= 0;
  shape.activation = step.activation;
  // A row norm after the tail (kiln-fuse's growQdqTailNorm): of the
  // tail's fp32 value by fp32 scale and shift, whatever the product's type
  // (an fp16 build's Q/DQ arithmetic stays fp32).
  Block &body = kernel.getBody().front();
  auto norm = llvm::find_if(body, [](Operation &op) { return isRowNorm(&op); });
  auto isF32 = [](Value v) {
    return getElementTypeOrSelf(v.getType()).isF32();
  };
  if (epilogue.getNormScale() >= 0 && norm != body.end()) {
    if (!isF32(norm->getOperand(0)) || !isF32(rowNormScale(&*norm)) ||
        (rowNormShift(&*norm) && !isF32(rowNormShift(&*norm))))
      return kernel.emitOpError("of kind gemm over 8-bit activations "
                                "normalizes an fp32 tail by fp32 scale and "
                                "shift only on the CUDA target");
    shape.norm = isa<RmsNormOp>(*norm) ? PackedGemvShape::Norm::Rms
                                       : PackedGemvShape::Norm::Layer;
    shape.normShift = epilogue.getNormShift() >= 0;
    shape.normEpsilon = rowNormEpsilon(&*norm).convertToFloat();
  }
  if (shape.k % 16 != 0 || shape.rowBytes % 16 != 0 ||
      dequantize.getBlockCount() != 1)
    return kernel.emitOpError("of kind gemm of 8-bit operands needs rows of "
                              "whole 16-byte chunks and one scale a row");

  SmallVector<uint32_t> inputs = {*a, *packed, *scales, *scale};
  if (shape.zeroPoint)
    inputs.push_back(*zero);
  if (shape.weightZeroPoints)
    inputs.push_back(*weightZero);
  // The op's launches share one index (kiln_<family>_<index>_<part>, which
  // the report's roofline reads).
  std::string name = (shape.float8 ? "kiln_gemmf8_" : "kiln_gemmi8_") +
                     std::to_string(artifact.kernelNames.size());
  std::optional<QdqGemmTail> tail;
  SmallVector<uint32_t> tailInputs;
  if (epilogue.getTail()) {
    FailureOr<QdqGemmTail> made = qdqGemmTail(kernel, matmul, tailInputs);
    if (failed(made))
      return failure();
    tail = std::move(*made);
  }
  // Three ranges of rows, each a path whose launches run at the rows of
  // its range (a guard is 1 where it holds, else 0): the mma.sync form up
  // to Hopper's wgmma form, which runs up to cuBLASLt's FP8 kernels. A
  // path a choice refuses, or whose range no run reaches, is left out.
  QdqCublasLtChoice cublas =
      chooseQdqCublasLt(shape, options.qdqCublasLtRows, options.arch);
  int64_t cublasFrom = cublas.runs() ? cublas.fewestRows : shape.upperM + 1;
  QdqWgmmaChoice hopper =
      chooseQdqWgmma(shape, options.qdqWgmmaRows, options.arch);
  int64_t hopperFrom =
      hopper.config ? std::min(hopper.fewestRows, cublasFrom) : cublasFrom;
  // The guards of the runs from `from` rows up to `to`.
  auto between = [&](int64_t from,
                     int64_t to) -> FailureOr<SmallVector<DimExpr, 2>> {
    SmallVector<DimExpr, 2> when;
    if (from > shape.leastM) {
      std::optional<DimExpr> atLeast =
          DimExpr::sub(m.getExpr(), DimExpr::constant(from - 1));
      if (!atLeast)
        return kernel.emitOpError("has rows whose bound overflows");
      when.push_back(*atLeast);
    }
    if (to < shape.upperM) {
      std::optional<DimExpr> atMost =
          DimExpr::sub(DimExpr::constant(to + 1), m.getExpr());
      if (!atMost)
        return kernel.emitOpError("has rows whose bound overflows");
      when.push_back(*atMost);
    }
    return when;
  };
  std::string dims = dimParameters();
  int64_t mmaRows = hopperFrom - 1;
  if (mmaRows >= shape.leastM) {
    FailureOr<SmallVector<DimExpr, 2>> when = between(shape.leastM, mmaRows);
    if (failed(when))
      return failure();
    GemmConfig config =
        packedTileConfig(shape.leastM, mmaRows, shape.n, shape.k);
    emitQdqGemm(shape, config, name, m.str(), mmaRows, dims,
                tail ? &*tail : nullptr, source);
    if (failed(pushPackedLaunches(kernel, name, config, m, shape.n, mmaRows,
                                  *when, inputs, tailInputs)))
      return failure();
  }
  // Where cuBLASLt runs, the Hopper form is its rival at the same rows
  // too: the runtime times both at a run's first (a GEMM kernel of the
  // float8 step that takes the finish's launch). One kernel serves its own
  // range and the rivalry: arrival counters for every row, and the
  // scratch of the cuBLASLt path's sums, which is big enough for its.
  bool rival = cublas.runs() && hopper.config;
  bool normed = epilogue.getNormScale() >= 0;
  std::optional<uint32_t> sums;
  if (cublas.runs())
    sums = addScratch(std::max(
        qdqFinishFloats(shape, shape.upperM),
        rival ? partialFloats(*hopper.config, shape.upperM, shape.n, normed)
              : int64_t(0)));
  std::string hopperName = name + "_wgmma";
  std::optional<uint32_t> hopperKernel;
  if (hopperFrom < cublasFrom || rival) {
    int64_t hopperRows =
        rival ? shape.upperM : std::min(shape.upperM, cublasFrom - 1);
    emitQdqWgmmaGemm(shape, *hopper.config, hopperName, m.str(), hopperRows,
                     dims, tail ? &*tail : nullptr, source, rival);
  }
  if (hopperFrom < cublasFrom) {
    FailureOr<SmallVector<DimExpr, 2>> when =
        between(hopperFrom, cublasFrom - 1);
    if (failed(when))
      return failure();
    int64_t hopperRows = rival ? shape.upperM : cublasFrom - 1;
    if (failed(pushPackedLaunches(
            kernel, hopperName, *hopper.config, m, shape.n,
            std::min(shape.upperM, hopperRows), *when, inputs, tailInputs,
            static_cast<uint32_t>(qdqWgmmaSharedBytes(*hopper.config)), {},
            rival ? sums : std::nullopt)))
      return failure();
    hopperKernel = artifact.steps.back().launch.kernel;
  }
  if (!cublas.runs())
    return success();
  FailureOr<SmallVector<DimExpr, 2>> when = between(cublasFrom, shape.upperM);
  if (failed(when))
    return failure();
  std::optional<rt::GemmCandidate> rivalCandidate;
  if (rival) {
    if (!hopperKernel) {
      hopperKernel = artifact.kernelNames.size();
      artifact.kernelNames.push_back(hopperName);
    }
    const GemmConfig &config = *hopper.config;
    rt::GemmCandidate g;
    g.name = config.name();
    g.kernel = *hopperKernel;
    // Its counters: a tile's splits, and with a norm a row tile's columns.
    if (config.splitK > 1 || normed)
      g.arrivals =
          static_cast<uint32_t>(llvm::divideCeil(shape.n, config.tileN) *
                                llvm::divideCeil(shape.upperM, config.tileM));
    g.tileM = config.tileM;
    g.tileN = config.tileN;
    g.threads = config.threads();
    g.splitK = config.splitK;
    g.sharedBytes = qdqWgmmaSharedBytes(config);
    g.withNextLaunch = true;
    rivalCandidate = g;
  }
  addQdqCublasLt(kernel, plan, shape, name, *when, inputs, tailInputs, *sums,
                 rivalCandidate, tail ? &*tail : nullptr, source);
  return success();
}

void PlanBuilder::addQdqCublasLt(
    KernelOp kernel, const MatmulPlan &plan, const QdqGemmShape &shape,
    const std::string &name, ArrayRef<DimExpr> when, ArrayRef<uint32_t> inputs,
    ArrayRef<uint32_t> tailInputs, uint32_t sums,
    const std::optional<rt::GemmCandidate> &rival, const QdqGemmTail *tail,
    llvm::raw_ostream &source) {
  const Size &m = plan.sizes[1];
  // cuBLASLt sums the float8 bytes as they are (A m x k, the packed
  // weights n x k) into fp32 scratch, unscaled.
  MatmulPlan product = plan;
  rt::MatmulStep &step = product.step;
  step = rt::MatmulStep();
  step.dtype = rt::DType::F32;
  step.float8 = true;
  step.transB = true;
  step.a = inputs[0];
  step.b = inputs[1];
  step.c = sums;
  if (rival)
    step.kernels.push_back(*rival);
  pushMatmul(product);
  for (const DimExpr &condition : when)
    guardStep(artifact.steps.size() - 1, condition);
  // Then the kernel that scales each sum and applies the epilogue, with
  // the Q/DQ GEMM's arguments.
  std::string finishName = name + "_finish";
  emitQdqFinish(shape, finishName, m.str(), shape.upperM, dimParameters(), tail,
                source);
  GemmConfig config = qdqFinishConfig();
  LaunchGeometry geometry;
  geometry.grid = {
      static_cast<uint32_t>(llvm::divideCeil(shape.n, config.tileN)),
      static_cast<uint32_t>(llvm::divideCeil(shape.upperM, config.tileM)), 1};
  geometry.block = {static_cast<uint32_t>(config.threads()), 1, 1};
  if (!m.getExpr().isConstant())
    geometry.symbolicGrid[1] =
        SymbolicGridDim{m.getExpr(), config.tileM, int64_t(geometry.grid[1])};
  pushLaunch(kernel, finishName, geometry,
             packedLaunchArgs(kernel, inputs, tailInputs, sums));
  for (const DimExpr &condition : when)
    guardStep(artifact.steps.size() - 1, condition);
}

FailureOr<QdqGemmTail>
PlanBuilder::qdqGemmTail(KernelOp kernel, MatmulOp matmul,
                         SmallVectorImpl<uint32_t> &buffers) {
  Block &body = kernel.getBody().front();
  // What the epilogue's `v` holds: the product, or its sum with the bias
  // (the add that reads it; the verifier checked the chain).
  Value product = matmul.getResult();
  if (kernel.getEpilogueAttr().getBias() >= 0)
    product = (*product.getUsers().begin())->getResult(0);
  // The tail reads the product at its own element only (the verifier's
  // verifyGemmTail): the element in hand, whatever its index. Where it
  // ends in a row norm, it computes the norm's input, and the ops after
  // the norm read the normalized element `y` alone.
  Operation *norm = nullptr;
  for (Operation &op : body)
    if (isRowNorm(&op) && !norm)
      norm = &op;
  Value end = kernel.getYield().getValues().front();
  QdqGemmTail tail;
  // `v`'s statements at `indent` into `statements`, `bound` the element
  // in hand as `name`.
  auto emit = [&](Value bound, const std::string &name, Value v,
                  const char *indent,
                  std::string &statements) -> FailureOr<std::string> {
    llvm::raw_string_ostream os(statements);
    BodyEmitter values(kernel, os);
    values.bindAtEveryIndex(bound, name);
    return values.getAt(v, "row * n + col", indent);
  };
  bool normed = norm != nullptr;
  FailureOr<std::string> value =
      emit(product, "product", normed ? norm->getOperand(0) : end, "      ",
           tail.statements);
  if (failed(value))
    return failure();
  if (normed) {
    FailureOr<std::string> stored =
        emit(norm->getResult(0), "y", end, "        ", tail.normStatements);
    if (failed(stored))
      return failure();
    tail.normValue = storeExpr(getElementTypeOrSelf(end.getType()), *stored);
  }
  // Its inputs, in<k> as the body emitter names them (the norm's scale and
  // shift are the kernel's norm parameters).
  std::set<unsigned> read;
  for (Operation *op = product.getDefiningOp()->getNextNode();
       op != body.getTerminator(); op = op->getNextNode())
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand);
          arg && !(op == norm && operand != op->getOperand(0)))
        read.insert(arg.getArgNumber());
  for (unsigned k : read) {
    Type et = getElementTypeOrSelf(body.getArgument(k).getType());
    tail.parameters +=
        ", const " + storageType(et) + " *__restrict__ in" + std::to_string(k);
    buffers.push_back(bufferOf.at(kernel.getInputs()[k]));
  }
  Type et = getElementTypeOrSelf(end.getType());
  tail.value = normed ? *value : storeExpr(et, *value);
  tail.storage = storageType(et);
  return tail;
}

} // namespace kiln::detail
