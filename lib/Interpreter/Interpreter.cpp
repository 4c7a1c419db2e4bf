//===- Interpreter.cpp - reference executor of kiln IR --------------------===//
//
// Each op is one plain loop nest over row-major indices; shapes are computed
// from the operands' runtime shapes and then checked against the declared
// result types, so a pass that breaks a shape is caught where it happens.
// `kiln.kernel` bodies run on an explicit stack of frames rather than by
// recursion, and each value is freed after its last use.
//
//===----------------------------------------------------------------------===//

#include "kiln/Interpreter/Interpreter.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include "DimValues.h"
#include "ExecuteAttention.h"
#include "ExecuteElementwise.h"
#include "ExecuteIndexing.h"
#include "ExecuteMatmul.h"
#include "ExecuteNormalization.h"
#include "ExecuteQuantized.h"
#include "ExecuteReductions.h"
#include "ExecuteShape.h"
#include "ScalarMath.h"

#include <cmath>
#include <memory>

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Op dispatch
//===----------------------------------------------------------------------===//

/// Whether `op` has N >= 2 operands, or N and more (optional or variadic
/// ones), by the operand-count trait ODS gives it.
template <unsigned N> static bool declaresOperands(Operation *op) {
  return op->hasTrait<mlir::OpTrait::NOperands<N>::template Impl>() ||
         op->hasTrait<mlir::OpTrait::AtLeastNOperands<N>::template Impl>();
}

/// The fewest operands `op` has when it verifies, as its ODS definition
/// declares them; 0 for ops of variadic operands only.
static unsigned fewestOperands(Operation *op) {
  if (op->hasTrait<mlir::OpTrait::OneOperand>() ||
      op->hasTrait<mlir::OpTrait::AtLeastNOperands<1>::Impl>())
    return 1;
  if (declaresOperands<2>(op))
    return 2;
  if (declaresOperands<3>(op))
    return 3;
  if (declaresOperands<4>(op))
    return 4;
  return 0;
}

/// Runs one op that has exactly one result and no region.
static FailureOr<HostTensor> executeOp(Operation *op,
                                       ArrayRef<const HostTensor *> operands) {
  // Verified IR has these counts; checking them keeps unverified IR from
  // reading past the operand list.
  unsigned needed = fewestOperands(op);
  if (operands.size() < needed)
    return op->emitOpError("expected at least ")
           << needed << " operands, got " << operands.size();
  auto operand = [&](unsigned i) -> const HostTensor & { return *operands[i]; };
  if (FloatUnaryFn fn = getFloatUnaryFn(op))
    return executeUnary(op, operand(0), fn, nullptr);
  return llvm::TypeSwitch<Operation *, FailureOr<HostTensor>>(op)
      .Case([&](ConstantOp constant) {
        return HostTensor::fromElementsAttr(constant.getValue(),
                                            constant.getLoc());
      })
      .Case([&](SizesOp sizes) -> FailureOr<HostTensor> {
        FailureOr<HostTensor> result =
            HostTensor::allocate(sizes.getType().getElementType(),
                                 sizes.getType().getShape(), sizes.getLoc());
        if (failed(result))
          return failure();
        for (auto [i, size] : llvm::enumerate(sizes.getSizes())) {
          FailureOr<int64_t> value =
              evaluateSize(sizes, cast<StringAttr>(size).getValue());
          if (failed(value))
            return failure();
          if (isa<FloatType>(result->elementType))
            result->setFromDouble(i, static_cast<double>(*value));
          else
            result->setFromInt(i, *value);
        }
        return result;
      })
      .Case([&](AddOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return a + b; }, wrappingAdd);
      })
      .Case([&](SubOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return a - b; }, wrappingSub);
      })
      .Case([&](MulOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return a * b; }, wrappingMul);
      })
      .Case([&](DivOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return a / b; }, truncatingDiv,
            unsignedDiv);
      })
      .Case([&](PowOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return std::pow(a, b); }, nullptr);
      })
      .Case([&](NegOp) {
        return executeUnary(
            op, operand(0), [](double x) { return -x; },
            [](int64_t x) { return wrappingSub(0, x); });
      })
      .Case([&](ReluOp) {
        // NaN propagates, as numpy's maximum does; an unsigned value is
        // never negative.
        return executeUnary(
            op, operand(0),
            [](double x) { return std::isnan(x) || x > 0.0 ? x : 0.0; },
            [](int64_t x) { return x > 0 ? x : int64_t(0); },
            [](uint64_t x) { return x; });
      })
      // Elementwise math and comparisons.
      .Case([&](AbsOp) {
        return executeUnary(
            op, operand(0), [](double x) { return std::fabs(x); }, wrappingAbs,
            [](uint64_t x) { return x; });
      })
      .Case([&](SignOp) {
        return executeUnary(
            op, operand(0), floatSign,
            [](int64_t x) { return static_cast<int64_t>((x > 0) - (x < 0)); },
            [](uint64_t x) { return static_cast<uint64_t>(x != 0); });
      })
      .Case([&](NotOp) {
        return executeUnary(op, operand(0), nullptr,
                            [](int64_t x) { return int64_t(x == 0); });
      })
      .Case([&](GeluOp gelu) {
        return executeUnary(op, operand(0),
                            gelu.getApproximate() == GeluApproximation::tanh
                                ? geluTanh
                                : geluErf,
                            nullptr);
      })
      .Case([&](IsNaNOp) {
        return executePredicate(op, operand(0),
                                [](double x) { return std::isnan(x); });
      })
      .Case([&](IsInfOp isInf) {
        bool positive = isInf.getDetectPositive();
        bool negative = isInf.getDetectNegative();
        return executePredicate(op, operand(0), [&](double x) {
          return std::isinf(x) && (x > 0 ? positive : negative);
        });
      })
      .Case([&](MaxOp) {
        return executeBinary(op, operand(0), operand(1), nanMax,
                             larger<int64_t>, larger<uint64_t>);
      })
      .Case([&](MinOp) {
        return executeBinary(op, operand(0), operand(1), nanMin,
                             smaller<int64_t>, smaller<uint64_t>);
      })
      .Case([&](ModOp mod) -> FailureOr<HostTensor> {
        if (mod.getFmod())
          return executeBinary(
              op, operand(0), operand(1),
              [](double a, double b) { return std::fmod(a, b); }, truncatingRem,
              unsignedRem);
        if (isa<FloatType>(operand(0).elementType))
          return op->emitOpError("expected fmod = true for float operands");
        return executeBinary(op, operand(0), operand(1), nullptr, flooringRem,
                             unsignedRem);
      })
      .Case([&](AndOp) {
        return executeBinary(
            op, operand(0), operand(1), nullptr,
            [](int64_t a, int64_t b) -> int64_t { return a != 0 && b != 0; });
      })
      .Case([&](OrOp) {
        return executeBinary(
            op, operand(0), operand(1), nullptr,
            [](int64_t a, int64_t b) -> int64_t { return a != 0 || b != 0; });
      })
      .Case([&](XorOp) {
        return executeBinary(op, operand(0), operand(1), nullptr,
                             [](int64_t a, int64_t b) -> int64_t {
                               return (a != 0) != (b != 0);
                             });
      })
      .Case([&](EqualOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a == b; });
      })
      .Case([&](LessOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a < b; });
      })
      .Case([&](LessEqualOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a <= b; });
      })
      .Case([&](GreaterOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a > b; });
      })
      .Case([&](GreaterEqualOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a >= b; });
      })
      .Case([&](WhereOp) {
        return executeWhere(op, operand(0), operand(1), operand(2));
      })
      .Case([&](CastOp cast) { return executeCast(cast, operand(0)); })
      .Case([&](CheckRangeOp check) {
        return executeCheckRange(check, operand(0), operand(1), operand(2));
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(
          [&](Operation *reduce) { return executeReduce(reduce, operand(0)); })
      .Case<ArgMaxOp, ArgMinOp>(
          [&](Operation *arg) { return executeArgReduce(arg, operand(0)); })
      .Case([&](CumSumOp cumsum) { return executeCumSum(cumsum, operand(0)); })
      .Case([&](TopKOp topK) { return executeTopK(topK, operand(0)); })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](Operation *softmax) {
        return executeSoftmax(softmax, operand(0));
      })
      .Case([&](LayerNormOp norm) {
        return executeLayerNorm(norm, operand(0), operand(1),
                                operands.size() > 2 ? operands[2] : nullptr);
      })
      .Case([&](RmsNormOp norm) {
        return executeRmsNorm(norm, operand(0), operand(1));
      })
      .Case([&](AttentionOp attention) {
        return executeAttention(attention, operand(0), operand(1), operand(2),
                                operands.size() > 3 ? operands[3] : nullptr);
      })
      .Case([&](MatmulOp matmul) {
        return executeMatmul(matmul, operand(0), operand(1));
      })
      .Case([&](DequantizeOp dequantize) {
        return executeDequantize(dequantize, operand(0), operand(1),
                                 operands.size() > 2 ? operands[2] : nullptr);
      })
      .Case([&](TransposeOp transpose) {
        return executeTranspose(transpose, operand(0));
      })
      .Case([&](ReshapeOp reshape) {
        return executeReshape(reshape, operand(0));
      })
      .Case([&](ConcatOp concat) { return executeConcat(concat, operands); })
      .Case([&](SliceOp slice) { return executeSlice(slice, operand(0)); })
      .Case([&](UpdateSliceOp update) {
        return executeUpdateSlice(update, operand(0), operand(1),
                                  update.getStarts() ? &operand(2) : nullptr);
      })
      .Case([&](GatherOp gather) {
        return executeGather(gather, operand(0), operand(1));
      })
      .Case([&](ExpandOp expand) { return executeExpand(expand, operand(0)); })
      .Case([&](GatherElementsOp gather) {
        return executeGatherElements(gather, operand(0), operand(1));
      })
      .Default([&](Operation *unknown) -> FailureOr<HostTensor> {
        return unknown->emitOpError(
            "is not supported by the reference interpreter");
      });
}

FailureOr<HostTensor> kiln::evaluateOp(Operation *op,
                                       ArrayRef<const HostTensor *> operands) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return op->emitOpError("cannot be evaluated on its own");
  return executeOp(op, operands);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

namespace {
/// One block under execution: the function body or a kernel body.
struct Frame {
  /// The block being run.
  Block *block;
  /// The next op to run in `block`.
  Block::iterator next;
  /// The live values of the block; a value is erased after its last use.
  llvm::DenseMap<Value, HostTensor> values;
  /// Uses not yet executed, per value, counted once per operand slot.
  llvm::DenseMap<Value, unsigned> usesLeft;
  /// The kernel whose body this is; null for the function body.
  KernelOp kernel;
};
} // namespace

/// A frame about to run `block`, with its use counts.
static std::unique_ptr<Frame> createFrame(Block &block, KernelOp kernel) {
  auto frame = std::make_unique<Frame>();
  frame->block = &block;
  frame->next = block.begin();
  frame->kernel = kernel;
  for (Operation &op : block)
    for (Value operand : op.getOperands())
      ++frame->usesLeft[operand];
  return frame;
}

/// Stores `tensor` as the value of `value` unless nothing uses it.
static void bindValue(Frame &frame, Value value, HostTensor tensor) {
  if (frame.usesLeft.lookup(value) > 0)
    frame.values[value] = std::move(tensor);
}

/// Collects the tensors of `op`'s operands.
static LogicalResult lookupOperands(Frame &frame, Operation *op,
                                    SmallVectorImpl<const HostTensor *> &out) {
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    auto it = frame.values.find(operand);
    if (it == frame.values.end())
      return op->emitOpError("operand #")
             << index << " has no value in the interpreter (defined outside "
             << "the block or not yet computed)";
    out.push_back(&it->second);
  }
  return success();
}

/// Counts one executed use of each operand of `op` and frees the values that
/// have no use left.
static void releaseOperands(Frame &frame, Operation *op) {
  for (Value operand : op->getOperands()) {
    auto it = frame.usesLeft.find(operand);
    if (it != frame.usesLeft.end() && it->second > 0 && --it->second == 0)
      frame.values.erase(operand);
  }
}

/// Checks a computed tensor against the declared type `type`: element type,
/// rank, and each static dim. `what` names the value in the message.
static LogicalResult checkTensorType(function_ref<InFlightDiagnostic()> emit,
                                     StringRef what, Type type,
                                     const HostTensor &tensor) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return emit() << what << ": expected a ranked tensor type, got " << type;
  if (tensor.elementType != tensorType.getElementType())
    return emit() << what << ": expected element type "
                  << tensorType.getElementType() << ", got "
                  << tensor.elementType;
  bool matches =
      tensorType.getRank() == static_cast<int64_t>(tensor.shape.size());
  // Symbolic dims are checked at their values in this run.
  std::optional<SmallVector<int64_t>> shape = concreteShapeOnThread(tensorType);
  for (size_t d = 0; matches && d < tensor.shape.size(); ++d)
    matches = shape ? (*shape)[d] == tensor.shape[d]
                    : ShapedType::isDynamic(tensorType.getDimSize(d)) ||
                          tensorType.getDimSize(d) == tensor.shape[d];
  if (!matches)
    return emit() << what << ": expected shape compatible with " << tensorType
                  << ", got " << tensor.getType();
  return success();
}

/// Checks that a caller-built tensor is self-consistent (supported type,
/// valid shape, right byte count) before its bytes are read.
static LogicalResult checkWellFormed(function_ref<InFlightDiagnostic()> emit,
                                     StringRef what, const HostTensor &tensor,
                                     Location loc) {
  int64_t width = getHostElementByteWidth(tensor.elementType);
  if (width == 0)
    return emit() << what << ": unsupported element type "
                  << tensor.elementType;
  FailureOr<int64_t> count = getCheckedNumElements(tensor.shape, loc);
  if (failed(count))
    return failure();
  if (tensor.bytes.size() != static_cast<size_t>(*count * width))
    return emit() << what << ": expected " << *count * width
                  << " bytes of data, got " << tensor.bytes.size();
  return success();
}

/// Starts running the body of `kernel`, whose operands live in `frame`.
static FailureOr<std::unique_ptr<Frame>> enterKernel(Frame &frame,
                                                     KernelOp kernel) {
  if (kernel.getBody().empty())
    return kernel.emitOpError("expected a body");
  Block &body = kernel.getBody().front();
  if (body.getNumArguments() != kernel->getNumOperands())
    return kernel.emitOpError("expected ")
           << kernel->getNumOperands() << " block arguments, got "
           << body.getNumArguments();
  SmallVector<const HostTensor *> operands;
  if (failed(lookupOperands(frame, kernel, operands)))
    return failure();
  std::unique_ptr<Frame> child = createFrame(body, kernel);
  for (auto [argument, tensor] : llvm::zip(body.getArguments(), operands)) {
    if (failed(checkTensorType([&] { return kernel.emitOpError(); },
                               "block argument", argument.getType(), *tensor)))
      return failure();
    bindValue(*child, argument, *tensor);
  }
  releaseOperands(frame, kernel);
  return child;
}

/// Copies the tensors of `op`'s operands (yield or return values).
static FailureOr<SmallVector<HostTensor>> collectOperands(Frame &frame,
                                                          Operation *op) {
  SmallVector<const HostTensor *> operands;
  if (failed(lookupOperands(frame, op, operands)))
    return failure();
  SmallVector<HostTensor> values;
  for (const HostTensor *tensor : operands)
    values.push_back(*tensor);
  return values;
}

FailureOr<SmallVector<HostTensor>>
kiln::interpretFunction(func::FuncOp func, ArrayRef<HostTensor> inputs) {
  if (func.isExternal())
    return func.emitError("cannot interpret a function without a body");
  if (!func.getBody().hasOneBlock())
    return func.emitError("expected a body of one block, got ")
           << func.getBody().getBlocks().size() << " blocks";
  Block &entry = func.getBody().front();
  if (inputs.size() != entry.getNumArguments())
    return func.emitError("expected ")
           << entry.getNumArguments() << " inputs, got " << inputs.size();

  SmallVector<std::unique_ptr<Frame>> frames;
  frames.push_back(createFrame(entry, KernelOp()));
  for (auto [index, argument, input] :
       llvm::enumerate(entry.getArguments(), inputs)) {
    std::string what = "input #" + std::to_string(index);
    auto emit = [&] { return func.emitError(); };
    if (failed(checkWellFormed(emit, what, input, func.getLoc())) ||
        failed(checkTensorType(emit, what, argument.getType(), input)))
      return failure();
    bindValue(*frames.back(), argument, input);
  }
  llvm::StringMap<int64_t> dimValues;
  if (failed(learnDimValues(func, inputs, dimValues)))
    return failure();
  ScopedDimValues scopedDims(dimValues);

  while (true) {
    Frame &frame = *frames.back();
    if (frame.next == frame.block->end())
      return func.emitError("a block ended without a terminator");
    Operation *op = &*frame.next++;

    if (auto kernel = dyn_cast<KernelOp>(op)) {
      FailureOr<std::unique_ptr<Frame>> child = enterKernel(frame, kernel);
      if (failed(child))
        return failure();
      frames.push_back(std::move(*child));
      continue;
    }

    if (isa<YieldOp>(op)) {
      KernelOp kernel = frame.kernel;
      if (!kernel || frames.size() < 2)
        return op->emitOpError("outside of a kernel body");
      FailureOr<SmallVector<HostTensor>> values = collectOperands(frame, op);
      if (failed(values))
        return failure();
      if (values->size() != kernel->getNumResults())
        return op->emitOpError("yields ")
               << values->size() << " values for a kernel of "
               << kernel->getNumResults() << " results";
      frames.pop_back();
      Frame &parent = *frames.back();
      for (auto [result, tensor] : llvm::zip(kernel->getResults(), *values)) {
        if (failed(checkTensorType([&] { return kernel.emitOpError(); },
                                   "result", result.getType(), tensor)))
          return failure();
        bindValue(parent, result, std::move(tensor));
      }
      continue;
    }

    if (isa<func::ReturnOp>(op)) {
      if (frames.size() != 1)
        return op->emitOpError("inside a kernel body");
      FailureOr<SmallVector<HostTensor>> values = collectOperands(frame, op);
      if (failed(values))
        return failure();
      ArrayRef<Type> resultTypes = func.getFunctionType().getResults();
      if (values->size() != resultTypes.size())
        return op->emitOpError("returns ")
               << values->size() << " values from a function of "
               << resultTypes.size() << " results";
      for (auto [index, type, tensor] : llvm::enumerate(resultTypes, *values))
        if (failed(checkTensorType([&] { return op->emitOpError(); },
                                   "result #" + std::to_string(index), type,
                                   tensor)))
          return failure();
      return values;
    }

    if (op->getNumRegions() != 0 || op->getNumResults() != 1)
      return op->emitOpError("is not supported by the reference interpreter");
    SmallVector<const HostTensor *> operands;
    if (failed(lookupOperands(frame, op, operands)))
      return failure();
    FailureOr<HostTensor> result = executeOp(op, operands);
    if (failed(result))
      return failure();
    if (failed(checkTensorType([&] { return op->emitOpError(); }, "result",
                               op->getResult(0).getType(), *result)))
      return failure();
    bindValue(frame, op->getResult(0), std::move(*result));
    releaseOperands(frame, op);
  }
}
