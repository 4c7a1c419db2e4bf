//===- IndexingOps.cpp - verifiers of concat, slice, gather, expand -------===//

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"

using namespace mlir;

namespace kiln {

/// Checks that `op`'s result type is `inferred`, the `what` its shape rule
/// computes (the rule itself reported a failure to infer).
static LogicalResult verifyResultType(Operation *op,
                                      FailureOr<RankedTensorType> inferred,
                                      StringRef what) {
  if (failed(inferred))
    return failure();
  Type result = op->getResult(0).getType();
  if (*inferred != result)
    return op->emitOpError("result type ")
           << result << " differs from the " << what << " " << *inferred;
  return success();
}

LogicalResult ConcatOp::verify() {
  SmallVector<RankedTensorType> types;
  for (Value v : getInputs())
    types.push_back(cast<RankedTensorType>(v.getType()));
  return verifyResultType(*this, inferConcatType(getLoc(), types, getAxis()),
                          "concatenation");
}

LogicalResult SliceOp::verify() {
  return verifySliceTypes(getLoc(), getInput().getType(), getType(),
                          getStarts(), getStrides());
}

LogicalResult GatherOp::verify() {
  return verifyResultType(*this,
                          inferGatherType(getLoc(), getData().getType(),
                                          getIndices().getType(), getAxis()),
                          "gathered");
}

LogicalResult GatherElementsOp::verify() {
  return verifyResultType(
      *this, inferGatherElementsType(getLoc(), getData().getType(),
                                     getIndices().getType(), getAxis()),
      "gathered");
}

LogicalResult ExpandOp::verify() {
  return verifyExpandTypes(getLoc(), getInput().getType(), getType());
}

} // namespace kiln
