//===- ExecuteNormalization.cpp - kiln.layer_norm, rms_norm on the host ---===//
//
// Layer and root-mean-square normalization over the trailing dims, their
// statistics in double; scale and bias broadcast to the normalized dims.
//
//===----------------------------------------------------------------------===//

#include "ExecuteNormalization.h"

#include "ExecuteElementwise.h"
#include "IndexArithmetic.h"

#include <cmath>

using namespace mlir;

namespace kiln {

/// Checks that a norm parameter broadcasts to the normalized dims without
/// growing them.
static LogicalResult checkNormParam(Operation *op, StringRef what,
                                    const HostTensor &param,
                                    const HostTensor &input,
                                    ArrayRef<int64_t> normShape) {
  if (param.elementType != input.elementType)
    return op->emitOpError("expected ")
           << what << " of element type " << input.elementType << ", got "
           << param.elementType;
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(op->getLoc(), normShape, param.shape);
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) != normShape)
    return op->emitOpError("expected ")
           << what << " of type " << param.getType()
           << " to broadcast to the normalized dims of " << input.getType();
  return success();
}

/// Normalizes each slice of `input` from row norm `op`'s axis on: subtracts the
/// slice's mean when `centered` (LayerNorm; RMSNorm does not), divides by
/// the root of the mean square of what is left plus `epsilon`, scales and
/// adds `bias` (may be null), all in double.
static FailureOr<HostTensor> normalize(Operation *op, bool centered,
                                       const HostTensor &input,
                                       const HostTensor &scale,
                                       const HostTensor *bias) {
  if (failed(checkFloat(op, input)))
    return failure();
  int64_t rank = input.shape.size();
  int64_t axis = rowNormAxis(op);
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " out of range for rank " << rank;
  ArrayRef<int64_t> normShape = ArrayRef<int64_t>(input.shape).drop_front(axis);
  if (failed(checkNormParam(op, "scale", scale, input, normShape)) ||
      (bias && failed(checkNormParam(op, "bias", *bias, input, normShape))))
    return failure();
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, input.shape, op->getLoc());
  if (failed(result))
    return failure();
  double epsilon = rowNormEpsilon(op).convertToDouble();
  SmallVector<int64_t> scaleStrides =
      getBroadcastStrides(scale.shape, normShape);
  SmallVector<int64_t> biasStrides;
  if (bias)
    biasStrides = getBroadcastStrides(bias->shape, normShape);
  int64_t outer = getProduct(ArrayRef<int64_t>(input.shape).take_front(axis));
  int64_t size = getProduct(normShape);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t base = o * size;
    double mean = 0.0;
    if (centered) {
      double sum = 0.0;
      for (int64_t j = 0; j < size; ++j)
        sum += input.getAsDouble(base + j);
      mean = sum / static_cast<double>(size);
    }
    double squares = 0.0;
    for (int64_t j = 0; j < size; ++j) {
      double centeredValue = input.getAsDouble(base + j) - mean;
      squares += centeredValue * centeredValue;
    }
    double deviation = std::sqrt(squares / static_cast<double>(size) + epsilon);
    for (int64_t j = 0; j < size; ++j) {
      double value = (input.getAsDouble(base + j) - mean) / deviation *
                     scale.getAsDouble(getOffset(j, normShape, scaleStrides));
      if (bias)
        value += bias->getAsDouble(getOffset(j, normShape, biasStrides));
      result->setFromDouble(base + j, value);
    }
  }
  return result;
}

FailureOr<HostTensor> executeLayerNorm(LayerNormOp op, const HostTensor &input,
                                       const HostTensor &scale,
                                       const HostTensor *bias) {
  return normalize(op, /*centered=*/true, input, scale, bias);
}

FailureOr<HostTensor> executeRmsNorm(RmsNormOp op, const HostTensor &input,
                                     const HostTensor &scale) {
  return normalize(op, /*centered=*/false, input, scale, nullptr);
}

} // namespace kiln
