//===- ExecuteNormalization.cpp - kiln.layer_norm on the host -------------===//
//
// Layer normalization over the trailing dims, its statistics in double;
// scale and bias broadcast to the normalized dims.
//
//===----------------------------------------------------------------------===//

#include "ExecuteNormalization.h"

#include "ExecuteElementwise.h"
#include "IndexArithmetic.h"

#include <cmath>

using namespace mlir;

namespace kiln {

/// Checks that a layer_norm parameter broadcasts to the normalized dims
/// without growing them.
static LogicalResult checkNormParam(LayerNormOp op, StringRef what,
                                    const HostTensor &param,
                                    const HostTensor &input,
                                    ArrayRef<int64_t> normShape) {
  if (param.elementType != input.elementType)
    return op.emitOpError("expected ")
           << what << " of element type " << input.elementType << ", got "
           << param.elementType;
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(op.getLoc(), normShape, param.shape);
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) != normShape)
    return op.emitOpError("expected ")
           << what << " of type " << param.getType()
           << " to broadcast to the normalized dims of " << input.getType();
  return success();
}

FailureOr<HostTensor> executeLayerNorm(LayerNormOp op, const HostTensor &input,
                                       const HostTensor &scale,
                                       const HostTensor *bias) {
  if (failed(checkFloat(op, input)))
    return failure();
  int64_t rank = input.shape.size();
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= rank)
    return op.emitOpError("axis ") << axis << " out of range for rank " << rank;
  ArrayRef<int64_t> normShape = ArrayRef<int64_t>(input.shape).drop_front(axis);
  if (failed(checkNormParam(op, "scale", scale, input, normShape)) ||
      (bias && failed(checkNormParam(op, "bias", *bias, input, normShape))))
    return failure();
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, input.shape, op.getLoc());
  if (failed(result))
    return failure();
  double epsilon = op.getEpsilon().convertToDouble();
  SmallVector<int64_t> scaleStrides =
      getBroadcastStrides(scale.shape, normShape);
  SmallVector<int64_t> biasStrides;
  if (bias)
    biasStrides = getBroadcastStrides(bias->shape, normShape);
  int64_t outer = getProduct(ArrayRef<int64_t>(input.shape).take_front(axis));
  int64_t size = getProduct(normShape);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t base = o * size;
    double sum = 0.0;
    for (int64_t j = 0; j < size; ++j)
      sum += input.getAsDouble(base + j);
    double mean = sum / static_cast<double>(size);
    double squares = 0.0;
    for (int64_t j = 0; j < size; ++j) {
      double centered = input.getAsDouble(base + j) - mean;
      squares += centered * centered;
    }
    double variance = squares / static_cast<double>(size);
    double deviation = std::sqrt(variance + epsilon);
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

} // namespace kiln
