//===- IndexingOps.cpp - verifiers of concat, slice, gather, expand -------===//

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"

using namespace mlir;

namespace kiln {

LogicalResult ConcatOp::verify() {
  SmallVector<RankedTensorType> types;
  for (Value v : getInputs())
    types.push_back(cast<RankedTensorType>(v.getType()));
  auto type = inferConcatType(getLoc(), types, getAxis());
  if (failed(type))
    return failure();
  if (*type != getType())
    return emitOpError("result type ")
           << getType() << " differs from the concatenation " << *type;
  return success();
}

LogicalResult SliceOp::verify() {
  return verifySliceTypes(getLoc(), getInput().getType(), getType(),
                          getStarts(), getStrides());
}

LogicalResult GatherOp::verify() {
  auto type = inferGatherType(getLoc(), getData().getType(),
                              getIndices().getType(), getAxis());
  if (failed(type))
    return failure();
  if (*type != getType())
    return emitOpError("result type ")
           << getType() << " differs from the gathered " << *type;
  return success();
}

LogicalResult GatherElementsOp::verify() {
  auto type = inferGatherElementsType(getLoc(), getData().getType(),
                                      getIndices().getType(), getAxis());
  if (failed(type))
    return failure();
  if (*type != getType())
    return emitOpError("result type ")
           << getType() << " differs from the gathered " << *type;
  return success();
}

LogicalResult ExpandOp::verify() {
  return verifyExpandTypes(getLoc(), getInput().getType(), getType());
}

} // namespace kiln
