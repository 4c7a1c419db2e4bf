//===- KilnOps.cpp - kiln op verifiers and type inference -----------------===//

#include "kiln/Dialect/Kiln/KilnOps.h"

#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Dialect/Kiln/QuantizedActivations.h"
#include "kiln/Dialect/Kiln/RowBias.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln;

/// Pushes an inferred type or propagates the failure.
static LogicalResult pushInferred(FailureOr<RankedTensorType> type,
                                  SmallVectorImpl<Type> &types) {
  if (failed(type))
    return failure();
  types.push_back(*type);
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return emitOptionalError(loc, "expected a ranked tensor value");
  types.push_back(type);
  return success();
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  if (getInput().getType().clone(getType().getElementType()) != getType())
    return emitOpError("expected the same shape, got ")
           << getInput().getType() << " and " << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise math and comparisons
//===----------------------------------------------------------------------===//

LogicalResult ModOp::verify() {
  Type elementType = getType().getElementType();
  // ONNX Mod: "If the input type is floating point, then fmod attribute must
  // be set to 1".
  if (!getFmod() && isa<FloatType>(elementType))
    return emitOpError("expected fmod = true for float element type ")
           << elementType;
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return pushInferred(
      inferWhereType(loc,
                     cast<RankedTensorType>(adaptor.getCondition().getType()),
                     cast<RankedTensorType>(adaptor.getLhs().getType()),
                     cast<RankedTensorType>(adaptor.getRhs().getType())),
      types);
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// Checks an axis attribute read as signed (I64Attr getters are unsigned).
static LogicalResult verifyAxis(Operation *op, IntegerAttr attr,
                                int64_t rank) {
  int64_t axis = attr.getValue().getSExtValue();
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ") << axis << " out of range for rank " << rank;
  return success();
}

/// The result of an arg reduction: the input's shape without (or with 1 at)
/// `axis`.
template <typename ArgOp>
static LogicalResult verifyArgReduce(ArgOp op) {
  auto input = cast<RankedTensorType>(op.getInput().getType());
  if (failed(verifyAxis(op, op.getAxisAttr(), input.getRank())))
    return failure();
  int64_t axis = op.getAxis();
  auto expected = inferReduceType(op.getLoc(), input, {axis}, op.getKeepdims());
  if (failed(expected))
    return failure();
  if (op.getType().clone(expected->getElementType()) != *expected)
    return op.emitOpError("result shape does not match the reduced input");
  return success();
}

LogicalResult ArgMaxOp::verify() { return verifyArgReduce(*this); }
LogicalResult ArgMinOp::verify() { return verifyArgReduce(*this); }

LogicalResult CumSumOp::verify() {
  return verifyAxis(*this, getAxisAttr(), getInput().getType().getRank());
}

LogicalResult TopKOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(verifyAxis(*this, getAxisAttr(), input.getRank())))
    return failure();
  int64_t axis = getAxis();
  int64_t k = getKAttr().getValue().getSExtValue();
  if (k < 0 || (!input.isDynamicDim(axis) && k > input.getDimSize(axis)))
    return emitOpError("k = ") << k << " is outside 0.." << input.getDimSize(axis);
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = k;
  if (getType().getShape() != ArrayRef<int64_t>(shape))
    return emitOpError("result shape must be the input's with k along the axis");
  return success();
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxisAttr(), getInput().getType().getRank());
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxisAttr(), getInput().getType().getRank());
}

LogicalResult AttentionOp::verify() {
  if (getSoftcap().isNegative())
    return emitOpError("softcap must not be negative");
  if (std::optional<ArrayRef<float>> sink = getSink()) {
    int64_t heads = cast<RankedTensorType>(getQuery().getType()).getDimSize(1);
    if (sink->size() != 1 && static_cast<int64_t>(sink->size()) != heads)
      return emitOpError("sink holds ")
             << sink->size() << " logits; expected 1 or one per query head ("
             << heads << ")";
  }
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType mask;
  if (adaptor.getMask())
    mask = cast<RankedTensorType>(adaptor.getMask().getType());
  return pushInferred(
      inferAttentionType(loc,
                         cast<RankedTensorType>(adaptor.getQuery().getType()),
                         cast<RankedTensorType>(adaptor.getKey().getType()),
                         cast<RankedTensorType>(adaptor.getValue().getType()),
                         mask),
      types);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  RankedTensorType bias;
  if (adaptor.getBias())
    bias = cast<RankedTensorType>(adaptor.getBias().getType());
  return pushInferred(
      inferLayerNormType(loc,
                         cast<RankedTensorType>(adaptor.getInput().getType()),
                         cast<RankedTensorType>(adaptor.getScale().getType()),
                         bias, adaptor.getAxis()),
      types);
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return pushInferred(
      inferLayerNormType(loc,
                         cast<RankedTensorType>(adaptor.getInput().getType()),
                         cast<RankedTensorType>(adaptor.getScale().getType()),
                         RankedTensorType(), adaptor.getAxis()),
      types);
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return pushInferred(
      inferMatmulType(loc, cast<RankedTensorType>(adaptor.getLhs().getType()),
                      cast<RankedTensorType>(adaptor.getRhs().getType()),
                      adaptor.getTransposeLhs(), adaptor.getTransposeRhs()),
      types);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return pushInferred(
      inferTransposeType(loc,
                         cast<RankedTensorType>(adaptor.getInput().getType()),
                         adaptor.getPermutation()),
      types);
}

LogicalResult ReshapeOp::verify() {
  return verifyReshapeTypes(getLoc(), getInput().getType(),
                            getResult().getType());
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

YieldOp KernelOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

/// A GEMM kernel's tail (#kiln.gemm_epilogue's `tail`): from `it` on, the
/// ops that follow the epilogue's chain (which ends at `last`, moved to the
/// tail's end), each an elementwise op or a reshape. An op that reads the
/// chain reads it at its own element (that operand of its own shape: the
/// CUDA target computes the tail where it stores the element); its other
/// operands are kernel inputs or values of earlier tail ops that do not
/// read the chain (scalars computed from inputs). Over 8-bit activations
/// only (the Q/DQ GEMM, which takes it on the CUDA target), after the
/// product and its bias alone. With a norm (its scale and shift inputs),
/// the tail's end is followed by its layer_norm or rms_norm of each row,
/// of the product's columns, and the ops after the norm read it as the
/// chain (nothing before it).
static LogicalResult verifyGemmTail(KernelOp kernel, bool readsActivations,
                                    Block::iterator &it, Block::iterator end,
                                    Value &last) {
  GemmEpilogueAttr epilogue = kernel.getEpilogueAttr();
  if (!readsActivations || epilogue.getResidual() >= 0 ||
      epilogue.getActivation() != GemmActivation::none)
    return kernel.emitOpError("of kind gemm has a tail only over 8-bit "
                              "activations, after its product and bias "
                              "alone");
  Block &body = kernel.getBody().front();
  int64_t columns = cast<RankedTensorType>(last.getType()).getShape().back();
  auto argOf = [&](int64_t input) {
    return input >= 0 ? body.getArgument(input) : Value();
  };
  bool normed = false;
  llvm::SmallPtrSet<Value, 16> chain = {last}, side;
  for (; it != end; ++it) {
    Operation &op = *it;
    if (isRowNorm(&op) && epilogue.getNormScale() >= 0 && !normed) {
      auto type = cast<RankedTensorType>(op.getResult(0).getType());
      if (op.getOperand(0) != last || rowNormAxis(&op) != type.getRank() - 1 ||
          type.getShape().back() != columns ||
          rowNormScale(&op) != argOf(epilogue.getNormScale()) ||
          rowNormShift(&op) != argOf(epilogue.getNormShift()))
        return kernel.emitOpError("of kind gemm has a norm that is not of its "
                                  "tail's end's rows by its norm inputs");
      normed = true;
      last = op.getResult(0);
      chain = {last};
      continue;
    }
    bool reshape = isa<ReshapeOp>(op);
    if (!reshape && !isElementwise(&op))
      return kernel.emitOpError("of kind gemm has a tail op that is neither "
                                "elementwise nor a reshape: ")
             << op.getName();
    bool readsChain = false;
    for (Value operand : op.getOperands()) {
      if (chain.contains(operand)) {
        readsChain = true;
        // Symbolic dims compare by their sizes too (the encoding).
        auto from = cast<RankedTensorType>(operand.getType());
        auto to = cast<RankedTensorType>(op.getResult(0).getType());
        if (!reshape && (from.getShape() != to.getShape() ||
                         from.getEncoding() != to.getEncoding()))
          return kernel.emitOpError("of kind gemm has a tail op that reads "
                                    "its product at another element: ")
                 << op.getName();
        continue;
      }
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!(arg && arg.getOwner() == &body) && !side.contains(operand))
        return kernel.emitOpError("of kind gemm has a tail op that reads "
                                  "other than its product, its inputs and "
                                  "values of them: ")
               << op.getName();
    }
    (readsChain ? chain : side).insert(op.getResult(0));
    if (readsChain)
      last = op.getResult(0);
  }
  if (epilogue.getNormScale() >= 0 && !normed)
    return kernel.emitOpError("of kind gemm has no layer_norm or rms_norm of "
                              "its tail's end where its epilogue says");
  return success();
}

/// A GEMM kernel's `prologue`: `ops` compute the left operand of `matmul`,
/// a product of the weights `dequantize` unpacks (which only the product
/// reads), from the kernel's inputs: elementwise ops and data movement
/// other than gathers, whose values nothing but these ops and the product
/// reads.
static LogicalResult verifyGemmPrologue(KernelOp kernel, MatmulOp matmul,
                                        DequantizeOp dequantize,
                                        ArrayRef<Operation *> ops) {
  if (!dequantize)
    return kernel.emitOpError("of kind gemm computes its left operand only "
                              "for a product of block-quantized weights");
  if (!dequantize->hasOneUse())
    return kernel.emitOpError("of kind gemm has a prologue that reads the "
                              "weights it dequantizes");
  Operation *lhs = matmul.getLhs().getDefiningOp();
  if (!lhs || !llvm::is_contained(ops, lhs))
    return kernel.emitOpError("of kind gemm has a prologue that does not "
                              "compute its product's left operand");
  for (Operation *op : ops) {
    if (!isElementwise(op) &&
        !(isDataMovement(op) && !isa<GatherOp, GatherElementsOp>(op)))
      return kernel.emitOpError("of kind gemm computes its left operand "
                                "with an op other than elementwise ops and "
                                "data movement: ")
             << op->getName();
    for (Operation *user : op->getUsers())
      if (user != matmul.getOperation() && !llvm::is_contained(ops, user))
        return kernel.emitOpError("of kind gemm has a prologue value read "
                                  "past its product: ")
               << op->getName();
  }
  return success();
}

/// A GEMM kernel's `cache_update`: from `it` on, after the chain's end
/// `last` (the product of block-quantized weights, maybe with a bias,
/// residual or activation, never a norm or tail), elementwise ops, data
/// movement and one or two kiln.update_slice that write alike (one shape,
/// axis, offset and starts), which read `last`, the kernel's inputs and
/// each other's values; each update's destination is a kernel input, and
/// the kernel yields `last` and then the updates, the later first (as a
/// paired update kernel does).
static LogicalResult verifyGemmCacheUpdate(KernelOp kernel,
                                           DequantizeOp dequantize,
                                           bool readsActivations,
                                           Block::iterator it,
                                           Block::iterator end, Value last) {
  GemmEpilogueAttr epilogue = kernel.getEpilogueAttr();
  if (!dequantize || readsActivations || epilogue.getTail() ||
      epilogue.getNormScale() >= 0)
    return kernel.emitOpError("of kind gemm updates a cache only after a "
                              "product of block-quantized weights with "
                              "neither norm nor tail");
  Block &body = kernel.getBody().front();
  llvm::SmallPtrSet<Value, 16> computed = {last};
  SmallVector<UpdateSliceOp, 2> updates;
  for (; it != end; ++it) {
    Operation &op = *it;
    auto update = dyn_cast<UpdateSliceOp>(op);
    if (!update && !isElementwise(&op) && !isDataMovement(&op))
      return kernel.emitOpError("of kind gemm computes its cache update with "
                                "an op other than elementwise ops and data "
                                "movement: ")
             << op.getName();
    for (Value operand : op.getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!computed.contains(operand) && !(arg && arg.getOwner() == &body))
        return kernel.emitOpError("of kind gemm has a cache update op that "
                                  "reads other than the end of its "
                                  "epilogue, its inputs and values of them: ")
               << op.getName();
    }
    if (update) {
      if (!isa<BlockArgument>(update.getDest()))
        return kernel.emitOpError("of kind gemm updates a cache that is not "
                                  "one of its inputs");
      updates.push_back(update);
    } else {
      computed.insert(op.getResult(0));
    }
  }
  OperandRange yielded = cast<YieldOp>(body.getTerminator()).getValues();
  // kiln-fuse's writeAlike: shapes, symbolic sizes included, not types.
  auto shapeOf = [](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    return std::make_pair(type.getShape(), type.getEncoding());
  };
  auto writesAlike = [&](UpdateSliceOp a, UpdateSliceOp b) {
    return shapeOf(a.getUpdate()) == shapeOf(b.getUpdate()) &&
           shapeOf(a.getDest()) == shapeOf(b.getDest()) &&
           a.getAxis() == b.getAxis() && a.getOffset() == b.getOffset() &&
           a.getStarts() == b.getStarts();
  };
  if (updates.empty() || updates.size() > 2 ||
      (updates.size() == 2 && !writesAlike(updates[0], updates[1])))
    return kernel.emitOpError("of kind gemm updates one or two caches that "
                              "write alike (one shape, axis, offset and "
                              "starts)");
  if (yielded.size() != 1 + updates.size() || yielded.front() != last ||
      yielded.back() != updates.front().getResult() ||
      yielded[1] != updates.back().getResult())
    return kernel.emitOpError("of kind gemm must yield the end of its "
                              "epilogue, then its cache updates, the later "
                              "first");
  return success();
}

/// The epilogue of a `wide_norm` GEMM kernel from `it`, after its product
/// and bias `last`: the casts of `last`, of the residual and of the norm's
/// scale and shift to f32 and the add of the first two (in an order their
/// operands allow), the norm of that sum, then the norm's cast back to the
/// product's type and maybe the sum's. Leaves `last` at the norm's cast
/// and `normed` at the sum's cast (null where there is none).
static LogicalResult verifyWideNorm(KernelOp kernel, DequantizeOp dequantize,
                                    bool readsActivations, Block::iterator &it,
                                    Block::iterator end, Value &last,
                                    Value &normed) {
  GemmEpilogueAttr epilogue = kernel.getEpilogueAttr();
  Block &body = kernel.getBody().front();
  auto narrow = cast<RankedTensorType>(last.getType());
  if (!dequantize || readsActivations || epilogue.getTail() ||
      epilogue.getActivation() != GemmActivation::none ||
      epilogue.getNormScale() < 0 ||
      !(narrow.getElementType().isF16() || narrow.getElementType().isBF16()))
    return kernel.emitOpError(
        "of kind gemm has a wide norm only over block-quantized weights of a "
        "16-bit product, after its product and bias, with a norm scale");
  auto argOf = [&](int64_t input) {
    return input >= 0 ? body.getArgument(input) : Value();
  };
  Value residual = argOf(epilogue.getResidual());
  Value scale = argOf(epilogue.getNormScale());
  Value shift = argOf(epilogue.getNormShift());
  auto isRow = [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getRank() == 1 && t.getShape()[0] == narrow.getShape().back() &&
           t.getElementType() == narrow.getElementType();
  };
  if ((residual && residual.getType() != narrow) || !isRow(scale) ||
      (shift && !isRow(shift)))
    return kernel.emitOpError("of kind gemm has a wide norm whose residual "
                              "is not of its product's type, or whose scale "
                              "or shift is not one row of it");
  // The f32 casts of the product, the residual, the scale and the shift.
  Value wide[4];
  Value from[4] = {last, residual, scale, shift};
  Value sum;
  Operation *norm = nullptr;
  for (; it != end && !norm; ++it) {
    Operation &op = *it;
    if (auto widen = dyn_cast<CastOp>(op)) {
      auto to = cast<RankedTensorType>(widen.getType());
      auto source = cast<RankedTensorType>(widen.getOperand().getType());
      const Value *match = llvm::find(from, widen.getOperand());
      size_t k = match - from;
      if (k == 4 || !*match || wide[k] || !to.getElementType().isF32() ||
          to.getShape() != source.getShape())
        return kernel.emitOpError("of kind gemm has a wide norm whose cast ")
               << "is not one of its product, residual, scale or shift to f32";
      wide[k] = widen.getResult();
      continue;
    }
    if (auto add = dyn_cast<AddOp>(op);
        add && !sum && wide[0] && wide[1] &&
        ((add.getLhs() == wide[0] && add.getRhs() == wide[1]) ||
         (add.getLhs() == wide[1] && add.getRhs() == wide[0]))) {
      sum = add.getResult();
      continue;
    }
    if (isRowNorm(&op)) {
      norm = &op;
      continue;
    }
    return kernel.emitOpError("of kind gemm has a wide norm with an op other "
                              "than its casts, the residual's add and the "
                              "norm: ")
           << op.getName();
  }
  bool residualAdded = residual ? bool(sum) : true;
  if (!norm || !wide[0] || !residualAdded || !wide[2] ||
      bool(shift) != bool(wide[3]) ||
      norm->getOperand(0) != (residual ? sum : wide[0]) ||
      rowNormScale(norm) != wide[2] || rowNormShift(norm) != wide[3] ||
      rowNormAxis(norm) != narrow.getRank() - 1)
    return kernel.emitOpError("of kind gemm has no f32 norm of its product "
                              "and residual by its scale and shift, over the "
                              "last axis, where its wide norm says");
  Value normedWide = norm->getOperand(0);
  // The norm's cast back, and the sum's, in either order.
  Value narrowed;
  for (; it != end; ++it) {
    auto back = dyn_cast<CastOp>(*it);
    if (!back || back.getType() != narrow)
      break;
    if (back.getOperand() == norm->getResult(0) && !narrowed)
      narrowed = back.getResult();
    else if (back.getOperand() == normedWide && !normed)
      normed = back.getResult();
    else
      break;
  }
  if (!narrowed)
    return kernel.emitOpError("of kind gemm has no cast of its wide norm "
                              "back to its product's type");
  last = narrowed;
  return success();
}

/// A GEMM kernel's body holds what its epilogue says, as one chain: the
/// matmul, the add of the bias input (one row, straight on the product), the
/// add of the residual input (the result's shape), then the activation,
/// then a layer_norm of each row by the norm inputs, with reshapes (views)
/// between all but the first two, then with `tail` the ops verifyGemmTail
/// takes, and the kernel yields the chain's end. kiln-fuse matched the
/// epilogue; this checks that the body and the record
/// agree, so that the CUDA target (which reads the record) computes what the
/// body says.
static LogicalResult verifyGemmEpilogue(KernelOp kernel,
                                        GemmEpilogueAttr epilogue) {
  Block &body = kernel.getBody().front();
  // The body's ops are verified after the kernel; what is read of them
  // below (a norm's axis, a matmul's operands) must exist first.
  for (Operation &op : body.without_terminator())
    if (std::optional<RegisteredOperationName> info = op.getRegisteredInfo();
        info && failed(info->verifyInvariants(&op)))
      return failure();
  int64_t numInputs = kernel.getInputs().size();
  for (auto [name, index] :
       {std::pair<const char *, int64_t>{"bias", epilogue.getBias()},
        {"residual", epilogue.getResidual()},
        {"norm_scale", epilogue.getNormScale()},
        {"norm_shift", epilogue.getNormShift()}})
    if (index < -1 || index >= numInputs)
      return kernel.emitOpError("epilogue ")
             << name << " " << index << " is not one of its " << numInputs
             << " inputs";
  auto ops = body.without_terminator();
  auto it = ops.begin();
  // Before the product, in either order: block-quantized weights'
  // dequantize (of the kernel's inputs), which the product reads as its
  // transposed right operand, and with 8-bit weights the dequantization of
  // 8-bit activations of their kind (integers, or float8 E4M3FN) that it
  // reads as its left (QuantizedActivations.h).
  SmallVector<Operation *> prologue;
  while (it != ops.end() && !isa<MatmulOp>(*it))
    prologue.push_back(&*it++);
  auto matmul = it == ops.end() ? MatmulOp() : cast<MatmulOp>(*it);
  std::optional<DequantizedActivations> activations =
      matmul ? dequantizedActivations(matmul.getLhs()) : std::nullopt;
  DequantizeOp dequantize;
  bool readsActivations = false;
  SmallVector<Operation *> computesLhs;
  for (Operation *op : prologue) {
    auto weights = dyn_cast<DequantizeOp>(op);
    if (weights && !dequantize) {
      dequantize = weights;
      continue;
    }
    if (epilogue.getPrologue()) {
      computesLhs.push_back(op);
      continue;
    }
    if (!activations || !llvm::is_contained(activations->ops, op))
      return kernel.emitOpError(
          "of kind gemm must start with kiln.matmul (after a dequantize of "
          "its weights and of its 8-bit activations)");
    readsActivations = true;
  }
  if (!matmul)
    return kernel.emitOpError("of kind gemm must start with kiln.matmul "
                              "(after a dequantize of its weights and of its "
                              "8-bit activations)");
  if (epilogue.getPrologue() &&
      failed(verifyGemmPrologue(kernel, matmul, dequantize, computesLhs)))
    return failure();
  if (dequantize && (matmul.getRhs() != dequantize.getResult() ||
                     !matmul.getTransposeRhs() || matmul.getTransposeLhs()))
    return kernel.emitOpError("of kind gemm must multiply by the transpose "
                              "of the weights it dequantizes");
  if (readsActivations &&
      (!dequantize || dequantize.getBits() != 8 ||
       dequantize.isFloat8() != isFloat8Activation(activations->quantized)))
    return kernel.emitOpError("of kind gemm dequantizes 8-bit activations "
                              "for 8-bit weights of their kind only (integers "
                              "or float8 E4M3FN)");
  ++it;
  Value last = matmul.getResult();
  // A tail takes the reshapes and casts after the product itself (its
  // chain starts at the product and its bias).
  bool tail = epilogue.getTail();
  // A cache update's ops may start with a reshape of the product it
  // yields: the chain ends there.
  Value yieldedFirst = body.getTerminator()->getNumOperands()
                           ? body.getTerminator()->getOperand(0)
                           : Value();
  auto skipReshapes = [&]() {
    while (!tail && it != ops.end() && isa<ReshapeOp>(*it) &&
           it->getOperand(0) == last &&
           !(epilogue.getCacheUpdate() && last == yieldedFirst))
      last = (it++)->getResult(0);
  };
  // The add of block argument `input` to the chain so far, at its shape: a
  // bias is one row of it (isRowBias), a residual the whole.
  auto takeAdd = [&](const char *name, int64_t input) -> LogicalResult {
    if (input < 0)
      return success();
    auto add = it == ops.end() ? AddOp() : dyn_cast<AddOp>(*it);
    Value arg = body.getArgument(input);
    if (!add || !((add.getLhs() == arg && add.getRhs() == last) ||
                  (add.getRhs() == arg && add.getLhs() == last)))
      return kernel.emitOpError("of kind gemm has no add of its ")
             << name << " input " << input << " where its epilogue says";
    bool bias = StringRef(name) == "bias";
    if (add.getType() != last.getType() ||
        (bias ? !isRowBias(arg, last) : arg.getType() != last.getType()))
      return kernel.emitOpError("of kind gemm adds a ")
             << name << " of type " << arg.getType() << " to a product of "
             << last.getType();
    last = add.getResult();
    ++it;
    return success();
  };
  if (failed(takeAdd("bias", epilogue.getBias())))
    return failure();
  skipReshapes();
  // The value a row norm reads, which the kernel may also yield.
  Value normed;
  if (epilogue.getWideNorm()) {
    if (failed(verifyWideNorm(kernel, dequantize, readsActivations, it,
                              ops.end(), last, normed)))
      return failure();
  } else {
    if (failed(takeAdd("residual", epilogue.getResidual())))
      return failure();
    skipReshapes();
    GemmActivation activation = epilogue.getActivation();
    if (activation != GemmActivation::none) {
      bool matches = it != ops.end() && it->getNumOperands() == 1 &&
                     it->getOperand(0) == last &&
                     (activation == GemmActivation::relu ? isa<ReluOp>(*it)
                                                         : isa<GeluOp>(*it));
      if (!matches)
        return kernel.emitOpError("of kind gemm has no ")
               << stringifyGemmActivation(activation)
               << " of its product where its epilogue says";
      last = (it++)->getResult(0);
    }
    if (epilogue.getNormShift() >= 0 && epilogue.getNormScale() < 0)
      return kernel.emitOpError("of kind gemm has a norm shift without a norm "
                                "scale");
    // (A tail's norm follows the tail: verifyGemmTail.)
    if (int64_t scale = epilogue.getNormScale(); scale >= 0 && !tail) {
      // A LayerNorm or RMSNorm of each row of the product: over the last axis
      // only, of the product's columns (reshapes before it keep them), its
      // scale and shift kernel inputs of one row.
      skipReshapes();
      Operation *norm = it != ops.end() && isRowNorm(&*it) ? &*it : nullptr;
      int64_t shift = epilogue.getNormShift();
      auto type = cast<RankedTensorType>(last.getType());
      int64_t columns =
          cast<RankedTensorType>(matmul.getType()).getShape().back();
      auto isRow = [&](Value v) {
        auto t = cast<RankedTensorType>(v.getType());
        return t.getRank() == 1 && t.getShape()[0] == columns &&
               t.getElementType() == type.getElementType();
      };
      if (!norm || norm->getOperand(0) != last ||
          rowNormScale(norm) != body.getArgument(scale) ||
          (shift >= 0 ? rowNormShift(norm) != body.getArgument(shift)
                      : bool(rowNormShift(norm))))
        return kernel.emitOpError("of kind gemm has no layer_norm or rms_norm "
                                  "of its product by its norm inputs where its "
                                  "epilogue says");
      if (rowNormAxis(norm) != type.getRank() - 1 ||
          type.getShape().back() != columns || !isRow(rowNormScale(norm)) ||
          (rowNormShift(norm) && !isRow(rowNormShift(norm))))
        return kernel.emitOpError("of kind gemm normalizes other than the "
                                  "product's rows by scale and shift of one "
                                  "row each");
      normed = last;
      last = (it++)->getResult(0);
    }
    // Last, maybe the cast of a 16-bit result to the model's fp32 output
    // (the kernel stores the 16-bit value widened); a cache update's cast
    // of the product is its own.
    if (!tail && !epilogue.getCacheUpdate() && it != ops.end() &&
        isa<CastOp>(*it) && it->getOperand(0) == last) {
      auto from = cast<RankedTensorType>(last.getType());
      auto to = cast<RankedTensorType>(it->getResult(0).getType());
      if (!(from.getElementType().isF16() || from.getElementType().isBF16()) ||
          !to.getElementType().isF32() || from.getShape() != to.getShape())
        return kernel.emitOpError("of kind gemm casts its result other than "
                                  "from 16 bits to f32");
      last = (it++)->getResult(0);
    }
  }
  if (tail &&
      failed(verifyGemmTail(kernel, readsActivations, it, ops.end(), last)))
    return failure();
  if (epilogue.getCacheUpdate())
    return verifyGemmCacheUpdate(kernel, dequantize, readsActivations, it,
                                 ops.end(), last);
  if (it != ops.end())
    return kernel.emitOpError("of kind gemm has an op its epilogue does not "
                              "name: ")
           << it->getName();
  // The end of the epilogue; with a norm, maybe also what it normalizes
  // (a pre-norm block's residual sum, which later layers read).
  OperandRange yielded = cast<YieldOp>(body.getTerminator()).getValues();
  bool alsoNormed = yielded.size() == 2 && normed && yielded[1] == normed;
  if (yielded.empty() || yielded.front() != last ||
      (yielded.size() != 1 && !alsoNormed))
    return kernel.emitOpError("of kind gemm must yield the end of its "
                              "epilogue (and with a norm, maybe what it "
                              "normalizes)");
  return success();
}

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("expected ")
           << getInputs().size() << " block arguments, got "
           << body.getNumArguments();
  for (auto [input, arg] : llvm::zip(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("expected block argument of type ")
             << input.getType() << ", got " << arg.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("expected the body to end in kiln.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("expected yielded types to match the results");
  GemmEpilogueAttr epilogue = getEpilogueAttr();
  if (getKind() != KernelKind::gemm)
    return epilogue ? emitOpError("of kind ") << stringifyKernelKind(getKind())
                                              << " has a GEMM epilogue"
                    : success();
  if (!epilogue)
    return emitOpError("of kind gemm needs its epilogue "
                       "(#kiln.gemm_epilogue, which kiln-fuse records)");
  return verifyGemmEpilogue(*this, epilogue);
}

#define GET_OP_CLASSES
#include "kiln/Dialect/Kiln/KilnOps.cpp.inc"
