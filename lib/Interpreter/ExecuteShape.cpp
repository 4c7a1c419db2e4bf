//===- ExecuteShape.cpp - transpose and reshape on the host ---------------===//
//
// Ops that rearrange elements without computing on them: transpose moves
// raw bytes, reshape keeps them and changes the shape.
//
//===----------------------------------------------------------------------===//

#include "ExecuteShape.h"

#include "DimValues.h"
#include "IndexArithmetic.h"

#include <cstring>

using namespace mlir;

namespace kiln {

FailureOr<HostTensor> executeTranspose(TransposeOp op,
                                       const HostTensor &input) {
  int64_t rank = input.shape.size();
  ArrayRef<int64_t> permutation = op.getPermutation();
  if (static_cast<int64_t>(permutation.size()) != rank)
    return op.emitOpError("expected a permutation of ")
           << rank << " dims, got " << permutation.size();
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> inputStrides = getStrides(input.shape);
  SmallVector<int64_t> resultShape, readStrides;
  for (int64_t p : permutation) {
    if (p < 0 || p >= rank || seen[p])
      return op.emitOpError("invalid permutation entry ") << p;
    seen[p] = true;
    resultShape.push_back(input.shape[p]);
    readStrides.push_back(inputStrides[p]);
  }
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, resultShape, op.getLoc());
  if (failed(result))
    return failure();
  size_t width = getHostElementByteWidth(input.elementType);
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(result->bytes.data() + i * width,
                input.bytes.data() +
                    getOffset(i, resultShape, readStrides) * width,
                width);
  return result;
}

/// The result shape of a reshape: its type's, symbolic dims at their values
/// in this run (verified IR has a size for every dynamic dim).
static FailureOr<SmallVector<int64_t>> resolveReshapeShape(ReshapeOp op,
                                                           const HostTensor &) {
  FailureOr<RankedTensorType> type = concreteType(op, op.getType());
  if (failed(type))
    return failure();
  return SmallVector<int64_t>(type->getShape());
}

FailureOr<HostTensor> executeReshape(ReshapeOp op, const HostTensor &input) {
  if (op.getType().getElementType() != input.elementType)
    return op.emitOpError("expected one element type, got ")
           << input.elementType << " and " << op.getType().getElementType();
  FailureOr<SmallVector<int64_t>> shape = resolveReshapeShape(op, input);
  if (failed(shape))
    return failure();
  FailureOr<int64_t> count = getCheckedNumElements(*shape, op.getLoc());
  if (failed(count))
    return failure();
  if (*count != input.numElements())
    return op.emitOpError("cannot reshape ")
           << input.getType() << " into "
           << RankedTensorType::get(*shape, input.elementType);
  HostTensor result = input;
  result.shape = std::move(*shape);
  return result;
}

} // namespace kiln
