//===- IndexingOps.cpp - verifiers of concat, slice, update, gather, expand
//===//

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"

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

LogicalResult CheckRangeOp::verify() {
  RankedTensorType input = getInput().getType();
  for (auto [bound, name] : {std::pair(getLow(), "low"),
                             std::pair(getHigh(), "high")}) {
    auto type = cast<RankedTensorType>(bound.getType());
    if (type.getElementType() != input.getElementType())
      return emitOpError(name) << " has element type " << type.getElementType()
                               << ", expected " << input.getElementType();
    FailureOr<RankedTensorType> joint =
        inferBroadcastType(getLoc(), input, type);
    if (failed(joint))
      return failure();
    if (*joint != input)
      return emitOpError(name) << " of type " << type
                               << " broadcasts beyond the input " << input;
  }
  return success();
}

LogicalResult UpdateSliceOp::verify() {
  RankedTensorType dest = getDest().getType(), update = getUpdate().getType();
  int64_t axis = getAxis();
  if (update.getRank() != dest.getRank() ||
      update.getElementType() != dest.getElementType())
    return emitOpError("update differs from dest in rank or element type");
  if (axis < 0 || axis >= dest.getRank())
    return emitOpError("axis ")
           << axis << " is outside rank " << dest.getRank();
  std::optional<SymbolicShape> to = symbolicShapeOf(dest),
                               from = symbolicShapeOf(update);
  if (!to || !from)
    return emitOpError("has a dynamic dim without its size");
  for (int64_t d = 0; d < dest.getRank(); ++d)
    if (d != axis && (*to)[d] != (*from)[d])
      return emitOpError("update's dim ")
             << d << " (" << (*from)[d].str() << ") differs from dest's ("
             << (*to)[d].str() << ")";
  if (Value starts = getStarts()) {
    auto type = cast<RankedTensorType>(starts.getType());
    auto integer = dyn_cast<IntegerType>(type.getElementType());
    if (!integer || integer.getWidth() == 1)
      return emitOpError("starts must be integers, got ") << type;
    std::optional<SymbolicShape> per = symbolicShapeOf(type);
    if (!per || type.getRank() != dest.getRank())
      return emitOpError("starts must have dest's rank, got ") << type;
    for (int64_t d = 0; d < dest.getRank(); ++d) {
      bool one = (*per)[d] == DimExpr::constant(1);
      if (d == axis ? !one : !one && (*per)[d] != (*from)[d])
        return emitOpError("starts' dim ")
               << d << " (" << (*per)[d].str() << ") must be 1"
               << (d == axis ? " (the axis)" : " or the update's");
    }
  }
  std::string error;
  std::optional<DimExpr> offset = DimExpr::parse(getOffset(), error);
  if (!offset)
    return emitOpError("offset '") << getOffset() << "': " << error;
  if (offset->str() != getOffset())
    return emitOpError("offset '")
           << getOffset() << "' is not in canonical form ('" << offset->str()
           << "')";
  // A window known at compile time is checked here; a symbolic one when
  // the dims' values are known.
  std::optional<int64_t> start = offset->getConstant(),
                         rows = (*from)[axis].getConstant(),
                         size = (*to)[axis].getConstant();
  // Starts known only at run time: each element's window is checked
  // there (kernels write no row outside dest).
  if (start &&
      (*start < 0 || (!getStarts() && rows && size && *start + *rows > *size)))
    return emitOpError("writes rows outside dest's dim ") << axis;
  return success();
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
