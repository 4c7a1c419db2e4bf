//===- PlanPackedMatmuls.cpp - the plan's steps of quantized weights ------===//
//
// PlanBuilder's steps for a GEMM kernel whose weights are block-quantized
// (kiln-fuse put their kiln.dequantize in it). A decoding step's few rows
// run the packed GEMV (PackedGemvEmitter.cpp), which reads the weights as
// they are stored; up to a hundred or so rows, the packed GEMM
// (PackedGemmEmitter.cpp) reads them as stored too and dequantizes them
// for the tensor cores; a long prefill's many rows reuse each weight
// enough that the weights are unpacked once a run into scratch by the
// dequantize's own kernel (the elementwise family's) and multiplied as
// floats by the matmul step that follows (cuBLASLt, or Kiln's GEMMs).
// Where the dims' ranges allow several, each path's steps are guarded by
// the run's rows, as a split attention's are by its queries, so a run
// takes one. A kernel that computes its product's left operand (its
// prologue, a decoder's SwiGLU) has the GEMV's blocks compute it, and the
// other paths read it from scratch, written by a kernel of the prologue's
// ops before them.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "EmitterSupport.h"
#include "GemmEmitter.h"
#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace kiln::detail {

namespace {

/// A GEMM kernel's prologue: the ops before `matmul` that compute its left
/// operand (all but the weights' dequantize), in order, and the numbers of
/// the block arguments (kernel inputs) they read, ascending.
struct Prologue {
  SmallVector<Operation *> ops;
  SmallVector<unsigned> args;
};

Prologue prologueOf(KernelOp kernel, MatmulOp matmul) {
  Prologue prologue;
  for (Operation &op : kernel.getBody().front()) {
    if (&op == matmul.getOperation())
      break;
    if (!isa<DequantizeOp>(op))
      prologue.ops.push_back(&op);
  }
  prologue.args = blockArgumentsRead(prologue.ops);
  return prologue;
}

/// Emits `ops` of `kernel`, which read its block arguments `args` and
/// compute `result`, as a `kind` kernel of their own named `name` (the
/// dequantize that unpacks the weights; a prologue's left operand); the
/// kernel inputs it reads are `inputs`.
FailureOr<LaunchGeometry>
emitOwnKernel(KernelOp kernel, ArrayRef<Operation *> ops,
              ArrayRef<unsigned> args, Value result, KernelKind kind,
              const std::string &name, llvm::raw_ostream &source,
              const CudaEmitOptions &options, SmallVectorImpl<Value> &inputs) {
  KernelOp own = kernelOfOps(kernel, ops, {}, args, result, kind, inputs);
  FailureOr<LaunchGeometry> geometry = emitKernel(own, name, source, options);
  own.erase();
  return geometry;
}

} // namespace

/// The floats of scratch a kernel over packed weights of `config` stores
/// for runs of up to `mostRows` rows of `n` columns: each split's sums where
/// it splits or ends in a row norm (`normed`), and then each row's
/// statistics over each column tile (gemm::normFinishValues); else none.
int64_t partialFloats(const GemmConfig &config, int64_t mostRows, int64_t n,
                      bool normed) {
  if (config.splitK <= 1 && !normed)
    return 0;
  int64_t floats = config.splitK * mostRows * n;
  if (normed)
    floats += mostRows * ((n + config.tileN - 1) / config.tileN) * 2;
  return floats;
}

SmallVector<unsigned> blockArgumentsRead(ArrayRef<Operation *> ops) {
  SmallVector<unsigned> args;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand))
        args.push_back(arg.getArgNumber());
  llvm::sort(args);
  args.erase(llvm::unique(args), args.end());
  return args;
}

KernelOp kernelOfOps(KernelOp kernel, ArrayRef<Operation *> ops,
                     ArrayRef<std::pair<Value, Value>> leading,
                     ArrayRef<unsigned> args, ValueRange results,
                     KernelKind kind, SmallVectorImpl<Value> &inputs) {
  Block &body = kernel.getBody().front();
  for (auto [inside, outside] : leading)
    inputs.push_back(outside);
  for (unsigned k : args)
    inputs.push_back(kernel.getInputs()[k]);
  OpBuilder builder(kernel);
  auto own = KernelOp::create(builder, kernel.getLoc(), results.getTypes(),
                              KernelKindAttr::get(builder.getContext(), kind),
                              inputs, GemmEpilogueAttr());
  Block *ownBody = builder.createBlock(&own.getBody());
  IRMapping mapping;
  for (auto [inside, outside] : leading)
    mapping.map(inside,
                ownBody->addArgument(inside.getType(), inside.getLoc()));
  for (unsigned k : args)
    mapping.map(body.getArgument(k),
                ownBody->addArgument(body.getArgument(k).getType(),
                                     body.getArgument(k).getLoc()));
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value v : results)
    yielded.push_back(mapping.lookup(v));
  YieldOp::create(builder, kernel.getLoc(), yielded);
  return own;
}

std::string PlanBuilder::dimParameters() {
  std::string dims;
  for (StringRef dim : dimNamesOf(func))
    dims += ", long long " + dimParameterName(dim);
  return dims;
}

SmallVector<uint32_t> PlanBuilder::packedLaunchArgs(
    KernelOp kernel, ArrayRef<uint32_t> inputs, ArrayRef<uint32_t> tailInputs,
    std::optional<uint32_t> partials, ArrayRef<uint32_t> updateBuffers) {
  GemmEpilogueAttr epilogue = kernel.getEpilogueAttr();
  std::optional<uint32_t> bias, residual;
  if (epilogue.getBias() >= 0)
    bias = bufferOf.at(kernel.getInputs()[epilogue.getBias()]);
  if (epilogue.getResidual() >= 0)
    residual = bufferOf.at(kernel.getInputs()[epilogue.getResidual()]);
  SmallVector<uint32_t> args(inputs.begin(), inputs.end());
  if (bias)
    args.push_back(*bias);
  if (residual)
    args.push_back(*residual);
  args.append(tailInputs.begin(), tailInputs.end());
  // A row norm's scale and shift, and the sum it normalizes where the
  // kernel yields that too.
  bool normed = epilogue.getNormScale() >= 0;
  if (normed)
    args.push_back(bufferOf.at(kernel.getInputs()[epilogue.getNormScale()]));
  if (epilogue.getNormShift() >= 0)
    args.push_back(bufferOf.at(kernel.getInputs()[epilogue.getNormShift()]));
  args.push_back(bufferOf.at(kernel.getResult(0)));
  if (normed && kernel.getNumResults() == 2)
    args.push_back(bufferOf.at(kernel.getResult(1)));
  if (partials)
    args.push_back(*partials);
  args.append(updateBuffers.begin(), updateBuffers.end());
  return args;
}

LogicalResult PlanBuilder::pushPackedLaunches(
    KernelOp kernel, const std::string &name, const GemmConfig &config,
    const Size &m, int64_t n, int64_t mostRows, ArrayRef<DimExpr> when,
    ArrayRef<uint32_t> inputs, ArrayRef<uint32_t> tailInputs,
    uint32_t sharedBytes, ArrayRef<uint32_t> updateBuffers,
    std::optional<uint32_t> partials) {
  bool normed = kernel.getEpilogueAttr().getNormScale() >= 0;
  if (!partials)
    if (int64_t floats = partialFloats(config, mostRows, n, normed))
      partials = addScratch(floats);
  SmallVector<uint32_t> args =
      packedLaunchArgs(kernel, inputs, tailInputs, partials, updateBuffers);
  LaunchGeometry main;
  main.grid = {
      static_cast<uint32_t>((n + config.tileN - 1) / config.tileN),
      static_cast<uint32_t>((mostRows + config.tileM - 1) / config.tileM),
      static_cast<uint32_t>(config.splitK)};
  main.block = {static_cast<uint32_t>(config.threads()), 1, 1};
  main.sharedBytes = sharedBytes;
  if (!m.getExpr().isConstant())
    main.symbolicGrid[1] =
        SymbolicGridDim{m.getExpr(), config.tileM, int64_t(main.grid[1])};
  pushLaunch(kernel, name, main, args);
  for (const DimExpr &condition : when)
    guardStep(artifact.steps.size() - 1, condition);
  if (configs) {
    KernelConfig record;
    record.kernel = name;
    record.op = kernel;
    record.gemmCandidates = {config};
    configs->push_back(std::move(record));
  }
  return success();
}

FailureOr<std::optional<PlanBuilder::UnpackedWeights>>
PlanBuilder::addPackedGemm(KernelOp kernel, MatmulOp matmul,
                           DequantizeOp dequantize, const MatmulPlan &plan,
                           llvm::raw_ostream &source) {
  auto outside = [&](Value v) {
    return bufferOf.at(
        kernel.getInputs()[cast<BlockArgument>(v).getArgNumber()]);
  };
  const rt::MatmulStep &step = plan.step;
  const Size &m = plan.sizes[1];
  GemmEpilogueAttr epilogue = kernel.getEpilogueAttr();
  PackedGemvShape shape;
  shape.dtype = step.dtype;
  shape.leastM = lowerBound(m.getExpr(), dimRangesOf(func)).value_or(1);
  shape.upperM = m.upper();
  shape.n = plan.sizes[2].upper();
  shape.k = plan.sizes[3].upper();
  shape.bits = dequantize.getBits();
  shape.blockSize = dequantize.getBlockSize();
  shape.blocks = dequantize.getBlockCount();
  shape.float8 = dequantize.isFloat8();
  Value zeroPoints = dequantize.getZeroPoints();
  shape.zeroPoints = !zeroPoints ? PackedGemvShape::ZeroPoints::Middle
                     : dequantize.hasIntegerZeroPoints()
                         ? PackedGemvShape::ZeroPoints::Packed
                         : PackedGemvShape::ZeroPoints::Float;
  shape.bias = epilogue.getBias() >= 0;
  shape.residual = epilogue.getResidual() >= 0;
  shape.activation = step.activation;
  if (epilogue.getNormScale() >= 0) {
    Block &body = kernel.getBody().front();
    Operation *norm =
        &*llvm::find_if(body, [](Operation &op) { return isRowNorm(&op); });
    shape.norm = isa<RmsNormOp>(norm) ? PackedGemvShape::Norm::Rms
                                      : PackedGemvShape::Norm::Layer;
    shape.normShift = epilogue.getNormShift() >= 0;
    shape.normSum = kernel.getNumResults() == 2;
    shape.normWide = epilogue.getWideNorm();
    shape.normEpsilon = rowNormEpsilon(norm).convertToFloat();
  }
  // Both packed kernels read A as m rows of k: one matrix (matmulPlan
  // merges a batch of row-major A against one B into its rows). Both load
  // the packed bytes 16 at a time: weights and arena buffers are aligned
  // for it, a caller's input (seen through its reshapes) need not be.
  Value packedSource =
      kernel.getInputs()[cast<BlockArgument>(dequantize.getPacked())
                             .getArgNumber()];
  while (auto view = packedSource.getDefiningOp<ReshapeOp>())
    packedSource = view.getInput();
  std::string refusal = step.batch != 1 || step.outerBatch != 1
                            ? "its A is not one matrix of rows"
                        : isa<BlockArgument>(packedSource)
                            ? "the packed weights are a graph input"
                            : "";
  PackedGemvChoice gemv = refusal.empty()
                              ? choosePackedGemv(shape)
                              : PackedGemvChoice{std::nullopt, 0, refusal};
  int64_t gemvRows = gemv.config ? gemv.mostRows : 0;
  PackedGemmChoice mma =
      !refusal.empty() ? PackedGemmChoice{std::nullopt, 0, refusal}
      : shape.upperM <= gemvRows
          ? PackedGemmChoice{std::nullopt, 0, "the packed GEMV runs every run"}
          : choosePackedGemm(shape, std::max(shape.leastM, gemvRows + 1));
  int64_t packedRows = mma.config ? mma.mostRows : gemvRows;
  bool unpackedRuns = shape.upperM > packedRows;

  // Each path runs at the rows of its range: the GEMV's up to gemvRows,
  // the packed GEMM's up to packedRows, the unpacked one's past. A bound
  // is 1 where it holds, else 0 (clamped); steps with several run where
  // all hold.
  auto atMost = [&](int64_t rows) {
    return DimExpr::sub(DimExpr::constant(rows + 1), m.getExpr());
  };
  auto past = [&](int64_t rows) {
    return DimExpr::sub(m.getExpr(), DimExpr::constant(rows));
  };
  SmallVector<DimExpr, 2> gemvWhen, mmaWhen, unpackedWhen;
  bool fits = true;
  auto bound = [&](SmallVector<DimExpr, 2> &when, std::optional<DimExpr> e) {
    fits = fits && e.has_value();
    if (e)
      when.push_back(*e);
  };
  if (gemv.config && (mma.config || unpackedRuns))
    bound(gemvWhen, atMost(gemvRows));
  if (mma.config && gemv.config)
    bound(mmaWhen, past(gemvRows));
  if (mma.config && unpackedRuns)
    bound(mmaWhen, atMost(mma.mostRows));
  if (unpackedRuns && packedRows > 0)
    bound(unpackedWhen, past(packedRows));
  if (!fits)
    return kernel.emitOpError("has rows whose bound overflows");

  std::string dims = dimParameters();

  // The op's launches share one index (kiln_<family>_<index>_<part>, which
  // the report's roofline reads).
  std::string name =
      "kiln_gemvq_" + std::to_string(artifact.kernelNames.size());
  // A left operand the kernel computes (its prologue): the GEMV's blocks
  // compute it where they fit it in shared memory; the other paths (and a
  // GEMV that does not fit it) read it from scratch, written by a kernel of
  // its own before them.
  bool computedLhs = epilogue.getPrologue();
  bool gemvComputes = computedLhs && gemv.config &&
                      packedGemvComputesOperand(shape, *gemv.config);
  SmallVector<uint32_t> packedInputs = {
      computedLhs ? 0u : outside(matmul.getLhs()),
      outside(dequantize.getPacked()), outside(dequantize.getScales())};
  if (zeroPoints)
    packedInputs.push_back(outside(zeroPoints));
  std::optional<uint32_t> lhsScratch;
  if (computedLhs && !(gemvComputes && shape.upperM <= gemvRows)) {
    // Past the scratch of the steps that read it (their partials, the
    // unpacked weights), each aligned to 256 bytes.
    auto aligned = [](uint64_t bytes) { return (bytes + 255) / 256 * 256; };
    bool normed = shape.norm != PackedGemvShape::Norm::None;
    uint64_t after = 0;
    if (gemv.config && !gemvComputes)
      after =
          aligned(partialFloats(*gemv.config, std::min(shape.upperM, gemvRows),
                                shape.n, normed) *
                  4);
    if (mma.config)
      after = std::max(after, aligned(partialFloats(*mma.config, mma.mostRows,
                                                    shape.n, normed) *
                                      4));
    if (unpackedRuns)
      after = std::max(after, aligned(dequantize.getType().getNumElements() *
                                      rt::dtypeSize(step.dtype)));
    int64_t elements = 1;
    for (const Size &size : sizesOf(matmul.getLhs()))
      elements *= size.upper();
    std::optional<DimExpr> when;
    if (gemvComputes)
      when = past(gemvRows);
    FailureOr<uint32_t> scratch = addOperandKernel(
        kernel, matmul, name + "_lhs", elements, after, when, source);
    if (failed(scratch))
      return failure();
    lhsScratch = *scratch;
    packedInputs.front() = *scratch;
  }
  if (gemv.config) {
    SmallVector<uint32_t> gemvInputs = packedInputs;
    std::optional<ComputedOperand> lhs;
    if (gemvComputes) {
      SmallVector<uint32_t> read;
      FailureOr<ComputedOperand> made = computedOperand(kernel, matmul, read);
      if (failed(made))
        return failure();
      lhs = std::move(*made);
      gemvInputs.erase(gemvInputs.begin());
      gemvInputs.insert(gemvInputs.begin(), read.begin(), read.end());
    }
    // A cache update after the product: the GEMV's last block writes it.
    std::optional<CacheUpdateTail> update;
    if (epilogue.getCacheUpdate()) {
      FailureOr<CacheUpdateTail> tail = cacheUpdateTail(kernel, name, source);
      if (failed(tail))
        return failure();
      update = std::move(*tail);
    }
    int64_t mostRows = std::min(shape.upperM, gemvRows);
    emitPackedGemv(shape, *gemv.config, name, m.str(), mostRows, dims, source,
                   lhs ? &*lhs : nullptr, update ? &*update : nullptr);
    if (failed(pushPackedLaunches(kernel, name, *gemv.config, m, shape.n,
                                  mostRows, gemvWhen, gemvInputs, {}, 0,
                                  update ? ArrayRef<uint32_t>(update->buffers)
                                         : ArrayRef<uint32_t>())))
      return failure();
  }
  if (mma.config) {
    emitPackedGemm(shape, *mma.config, name + "_mma", m.str(), mma.mostRows,
                   dims, source);
    if (failed(pushPackedLaunches(kernel, name + "_mma", *mma.config, m,
                                  shape.n, mma.mostRows, mmaWhen,
                                  packedInputs)))
      return failure();
  }
  // The runs the GEMV does not serve write the cache update in a kernel of
  // its own after their product: the packed GEMM's here, the matmul step's
  // after the caller appends that.
  std::optional<UnpackedWeights::CacheUpdate> update;
  if (epilogue.getCacheUpdate() && (!gemv.config || mma.config || unpackedRuns))
    update = UnpackedWeights::CacheUpdate{
        name + "_update",
        gemv.config ? past(gemvRows) : std::optional<DimExpr>()};
  if (!unpackedRuns) {
    if (update && failed(addCacheUpdateKernel(kernel, update->name,
                                              update->when, source)))
      return failure();
    return std::optional<UnpackedWeights>();
  }

  // The weights as floats, by the dequantize alone in a kernel of its own,
  // emitted as the elementwise family emits it.
  RankedTensorType weights = dequantize.getType();
  uint32_t unpacked = addScratch(weights.getNumElements(), step.dtype);
  SmallVector<unsigned> dequantized;
  for (Value operand : dequantize->getOperands())
    dequantized.push_back(cast<BlockArgument>(operand).getArgNumber());
  SmallVector<Value> inputs;
  FailureOr<LaunchGeometry> geometry = emitOwnKernel(
      kernel, {dequantize.getOperation()}, dequantized, dequantize.getResult(),
      KernelKind::copy, name + "_unpack", source, options, inputs);
  if (failed(geometry))
    return failure();
  SmallVector<uint32_t> args;
  for (Value input : inputs)
    args.push_back(bufferOf.at(input));
  args.push_back(unpacked);
  pushLaunch(kernel, name + "_unpack", *geometry, args);
  std::optional<DimExpr> when;
  if (!unpackedWhen.empty()) {
    guardStep(artifact.steps.size() - 1, unpackedWhen.front());
    when = unpackedWhen.front();
  }
  return std::optional<UnpackedWeights>(
      UnpackedWeights{unpacked, when, lhsScratch, update});
}

FailureOr<ComputedOperand>
PlanBuilder::computedOperand(KernelOp kernel, MatmulOp matmul,
                             SmallVectorImpl<uint32_t> &buffers) {
  Block &body = kernel.getBody().front();
  ComputedOperand a;
  llvm::raw_string_ostream os(a.statements);
  BodyEmitter values(kernel, os);
  Value lhs = matmul.getLhs();
  FailureOr<std::string> value = values.getAt(lhs, "a_index", "    ");
  if (failed(value))
    return failure();
  // The inputs the prologue reads, in<k> as the body emitter names them.
  SmallVector<unsigned> read = prologueOf(kernel, matmul).args;
  if (read.empty())
    return kernel.emitOpError("computes its product's left operand from no "
                              "input");
  for (unsigned k : read) {
    Type et = getElementTypeOrSelf(body.getArgument(k).getType());
    a.parameters += std::string(a.parameters.empty() ? "" : ", ") + "const " +
                    storageType(et) + " *__restrict__ in" + std::to_string(k);
    buffers.push_back(bufferOf.at(kernel.getInputs()[k]));
  }
  a.value = storeExpr(getElementTypeOrSelf(lhs.getType()), *value);
  return a;
}

FailureOr<uint32_t> PlanBuilder::addOperandKernel(
    KernelOp kernel, MatmulOp matmul, const std::string &name, int64_t elements,
    uint64_t after, std::optional<DimExpr> when, llvm::raw_ostream &source) {
  Value lhs = matmul.getLhs();
  Prologue prologue = prologueOf(kernel, matmul);
  SmallVector<Value> inputs;
  FailureOr<LaunchGeometry> geometry =
      emitOwnKernel(kernel, prologue.ops, prologue.args, lhs,
                    KernelKind::elementwise, name, source, options, inputs);
  if (failed(geometry))
    return failure();
  FailureOr<rt::DType> dtype =
      toRuntimeDType(getElementTypeOrSelf(lhs.getType()), lhs.getLoc());
  if (failed(dtype))
    return failure();
  uint32_t scratch = addScratch(elements, *dtype, after);
  SmallVector<uint32_t> args;
  for (Value input : inputs)
    args.push_back(bufferOf.at(input));
  args.push_back(scratch);
  pushLaunch(kernel, name, *geometry, args);
  if (when)
    guardStep(artifact.steps.size() - 1, *when);
  return scratch;
}

} // namespace kiln::detail
