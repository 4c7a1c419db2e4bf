//===- ExecuteElementwise.cpp - elementwise ops on the host ---------------===//
//
// Arithmetic, math functions, predicates, comparisons, where and cast, one
// element at a time over numpy-broadcast operands. Floats compute in double
// and round once to the storage type; integers go through int64_t (or
// uint64_t where the signedness changes the result).
//
//===----------------------------------------------------------------------===//

#include "ExecuteElementwise.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace kiln {

LogicalResult checkFloat(Operation *op, const HostTensor &tensor) {
  if (isa<FloatType>(tensor.elementType))
    return success();
  return op->emitOpError("expected a float element type, got ")
         << tensor.elementType;
}

LogicalResult checkOneElementType(Operation *op, const HostTensor &lhs,
                                  const HostTensor &rhs) {
  if (lhs.elementType == rhs.elementType)
    return success();
  return op->emitOpError("expected operands of one element type, got ")
         << lhs.elementType << " and " << rhs.elementType;
}

FailureOr<HostTensor> executeBinary(Operation *op, const HostTensor &lhs,
                                    const HostTensor &rhs,
                                    FloatBinaryFn floatFn, IntBinaryFn intFn,
                                    UnsignedBinaryFn unsignedFn) {
  if (failed(checkOneElementType(op, lhs, rhs)))
    return failure();
  bool isFloat = isa<FloatType>(lhs.elementType);
  if (!intFn && failed(checkFloat(op, lhs)))
    return failure();
  if (!floatFn && isFloat)
    return op->emitOpError("expected an integer element type, got ")
           << lhs.elementType;
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(op->getLoc(), lhs.shape, rhs.shape);
  if (failed(shape))
    return failure();
  FailureOr<HostTensor> result =
      HostTensor::allocate(lhs.elementType, *shape, op->getLoc());
  if (failed(result))
    return failure();
  SmallVector<int64_t> lhsStrides = getBroadcastStrides(lhs.shape, *shape);
  SmallVector<int64_t> rhsStrides = getBroadcastStrides(rhs.shape, *shape);
  bool useUnsigned = unsignedFn && lhs.elementType.isUnsignedInteger();
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t l = getOffset(i, *shape, lhsStrides);
    int64_t r = getOffset(i, *shape, rhsStrides);
    if (isFloat)
      result->setFromDouble(i, floatFn(lhs.getAsDouble(l), rhs.getAsDouble(r)));
    else if (useUnsigned)
      result->setFromUnsigned(
          i, unsignedFn(static_cast<uint64_t>(lhs.getAsInt(l)),
                        static_cast<uint64_t>(rhs.getAsInt(r))));
    else
      result->setFromInt(i, intFn(lhs.getAsInt(l), rhs.getAsInt(r)));
  }
  return result;
}

FailureOr<HostTensor> executeUnary(Operation *op, const HostTensor &input,
                                   FloatUnaryFn floatFn, IntUnaryFn intFn,
                                   UnsignedUnaryFn unsignedFn) {
  bool isFloat = isa<FloatType>(input.elementType);
  if (!intFn && failed(checkFloat(op, input)))
    return failure();
  if (!floatFn && isFloat)
    return op->emitOpError("expected an integer element type, got ")
           << input.elementType;
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, input.shape, op->getLoc());
  if (failed(result))
    return failure();
  bool useUnsigned = unsignedFn && input.elementType.isUnsignedInteger();
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i) {
    if (isFloat)
      result->setFromDouble(i, floatFn(input.getAsDouble(i)));
    else if (useUnsigned)
      result->setFromUnsigned(
          i, unsignedFn(static_cast<uint64_t>(input.getAsInt(i))));
    else
      result->setFromInt(i, intFn(input.getAsInt(i)));
  }
  return result;
}

/// `x` rounded to the nearest integer, halves to even, keeping the sign of
/// a zero result (`round(-0.4) = -0`). Spelled out rather than left to
/// std::nearbyint so it does not depend on the rounding mode.
static double roundHalfToEven(double x) {
  if (!std::isfinite(x))
    return x;
  double lower = std::floor(x);
  double fraction = x - lower;
  double rounded;
  if (fraction < 0.5)
    rounded = lower;
  else if (fraction > 0.5)
    rounded = lower + 1.0;
  else
    rounded = std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
  return rounded == 0.0 ? std::copysign(0.0, x) : rounded;
}

FloatUnaryFn getFloatUnaryFn(Operation *op) {
  static const llvm::DenseMap<TypeID, FloatUnaryFn> table = {
      {TypeID::get<SqrtOp>(), [](double x) { return std::sqrt(x); }},
      {TypeID::get<ErfOp>(), [](double x) { return std::erf(x); }},
      {TypeID::get<TanhOp>(), [](double x) { return std::tanh(x); }},
      {TypeID::get<ExpOp>(), [](double x) { return std::exp(x); }},
      {TypeID::get<SigmoidOp>(),
       [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {TypeID::get<ReciprocalOp>(), [](double x) { return 1.0 / x; }},
      {TypeID::get<LogOp>(), [](double x) { return std::log(x); }},
      {TypeID::get<FloorOp>(), [](double x) { return std::floor(x); }},
      {TypeID::get<CeilOp>(), [](double x) { return std::ceil(x); }},
      {TypeID::get<RoundOp>(), roundHalfToEven},
      {TypeID::get<SinOp>(), [](double x) { return std::sin(x); }},
      {TypeID::get<CosOp>(), [](double x) { return std::cos(x); }},
      {TypeID::get<SoftsignOp>(),
       [](double x) { return x / (1.0 + std::fabs(x)); }},
  };
  return table.lookup(op->getName().getTypeID());
}

FailureOr<HostTensor> executePredicate(Operation *op, const HostTensor &input,
                                       llvm::function_ref<bool(double)> test) {
  if (failed(checkFloat(op, input)))
    return failure();
  FailureOr<HostTensor> result = HostTensor::allocate(
      IntegerType::get(op->getContext(), 1), input.shape, op->getLoc());
  if (failed(result))
    return failure();
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i)
    result->setFromInt(i, test(input.getAsDouble(i)) ? 1 : 0);
  return result;
}

FailureOr<HostTensor> executeWhere(Operation *op, const HostTensor &condition,
                                   const HostTensor &lhs,
                                   const HostTensor &rhs) {
  if (!condition.elementType.isInteger(1))
    return op->emitOpError("expected an i1 condition, got ")
           << condition.elementType;
  if (failed(checkOneElementType(op, lhs, rhs)))
    return failure();
  FailureOr<SmallVector<int64_t>> values =
      broadcastShapes(op->getLoc(), lhs.shape, rhs.shape);
  if (failed(values))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(op->getLoc(), condition.shape, *values);
  if (failed(shape))
    return failure();
  FailureOr<HostTensor> result =
      HostTensor::allocate(lhs.elementType, *shape, op->getLoc());
  if (failed(result))
    return failure();
  size_t width = getHostElementByteWidth(lhs.elementType);
  SmallVector<int64_t> condStrides =
      getBroadcastStrides(condition.shape, *shape);
  SmallVector<int64_t> lhsStrides = getBroadcastStrides(lhs.shape, *shape);
  SmallVector<int64_t> rhsStrides = getBroadcastStrides(rhs.shape, *shape);
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i) {
    bool choose = condition.getAsInt(getOffset(i, *shape, condStrides)) != 0;
    const HostTensor &source = choose ? lhs : rhs;
    int64_t offset = getOffset(i, *shape, choose ? lhsStrides : rhsStrides);
    std::memcpy(result->bytes.data() + i * width,
                source.bytes.data() + offset * width, width);
  }
  return result;
}

FailureOr<HostTensor> executeCheckRange(CheckRangeOp op,
                                        const HostTensor &input,
                                        const HostTensor &low,
                                        const HostTensor &high) {
  for (const HostTensor *bound : {&low, &high}) {
    FailureOr<SmallVector<int64_t>> joint =
        broadcastShapes(op.getLoc(), input.shape, bound->shape);
    if (failed(joint))
      return failure();
    if (*joint != input.shape)
      return op.emitOpError("bounds broadcast beyond the input at run time");
  }
  SmallVector<int64_t> lowStrides = getBroadcastStrides(low.shape, input.shape);
  SmallVector<int64_t> highStrides =
      getBroadcastStrides(high.shape, input.shape);
  for (int64_t i = 0, n = input.numElements(); i < n; ++i) {
    int64_t value = input.getAsInt(i);
    int64_t lo = low.getAsInt(getOffset(i, input.shape, lowStrides));
    int64_t hi = high.getAsInt(getOffset(i, input.shape, highStrides));
    if (value < lo || value >= hi)
      return emitError(op.getLoc())
             << op.getWhat() << ": " << value << " (element " << i
             << ") is outside [" << lo << ", " << hi << ")";
  }
  return input;
}

FailureOr<HostTensor> executeCast(CastOp op, const HostTensor &input) {
  FailureOr<HostTensor> result = HostTensor::allocate(
      op.getType().getElementType(), input.shape, op.getLoc());
  if (failed(result))
    return failure();
  int64_t count = result->numElements();
  dispatchNumericDomain(input.elementType, [&](auto domain) {
    using Domain = decltype(domain);
    for (int64_t i = 0; i < count; ++i)
      Domain::set(*result, i, Domain::get(input, i));
  });
  return result;
}

} // namespace kiln
