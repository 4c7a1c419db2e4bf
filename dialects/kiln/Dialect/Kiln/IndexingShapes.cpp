//===- IndexingShapes.cpp - shape rules of concat, slice, gather, expand --===//

#include "kiln/Dialect/Kiln/ShapeInference.h"

#include "kiln/Dialect/Kiln/SymbolicShapes.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kiln {

/// Emits at `loc` when there is one; always returns failure.
static LogicalResult fail(std::optional<Location> loc, const Twine &message) {
  if (loc)
    emitError(*loc) << message;
  return failure();
}

FailureOr<RankedTensorType>
inferConcatType(std::optional<Location> loc, ArrayRef<RankedTensorType> inputs,
                int64_t axis) {
  if (inputs.empty())
    return fail(loc, "concat needs at least one input");
  RankedTensorType first = inputs.front();
  int64_t rank = first.getRank();
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1) || rank == 0)
    return fail(loc, "concat axis " + Twine(axis) + " out of range for rank " +
                         Twine(rank));
  auto firstSizes = sizesOf(loc, first);
  if (failed(firstSizes))
    return failure();
  SymbolicShape shape = *firstSizes;
  shape[axis] = DimExpr::constant(0);
  for (RankedTensorType t : inputs) {
    if (t.getRank() != rank || t.getElementType() != first.getElementType())
      return fail(loc, "concat inputs differ in rank or element type");
    auto sizes = sizesOf(loc, t);
    if (failed(sizes))
      return failure();
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis)
        continue;
      if ((*sizes)[d] != shape[d])
        return fail(loc, "concat inputs differ in dim " + Twine(d) + " (" +
                             (*sizes)[d].str() + " vs " + shape[d].str() + ")");
    }
    std::optional<DimExpr> sum = DimExpr::add(shape[axis], (*sizes)[axis]);
    if (!sum)
      return fail(loc, "concat size along the axis overflows");
    shape[axis] = std::move(*sum);
  }
  return symbolicTensorType(shape, first.getElementType());
}

FailureOr<RankedTensorType> inferGatherType(std::optional<Location> loc,
                                            RankedTensorType data,
                                            RankedTensorType indices,
                                            int64_t axis) {
  int64_t rank = data.getRank();
  if (axis < 0 || axis >= rank)
    return fail(loc, "gather axis " + Twine(axis) + " out of range for rank " +
                         Twine(rank));
  if (!indices.getElementType().isInteger(64) &&
      !indices.getElementType().isInteger(32))
    return fail(loc, "gather indices must be int32 or int64");
  auto d = sizesOf(loc, data), i = sizesOf(loc, indices);
  if (failed(d) || failed(i))
    return failure();
  SymbolicShape shape(d->begin(), d->begin() + axis);
  llvm::append_range(shape, *i);
  shape.insert(shape.end(), d->begin() + axis + 1, d->end());
  return symbolicTensorType(shape, data.getElementType());
}

FailureOr<RankedTensorType>
inferGatherElementsType(std::optional<Location> loc, RankedTensorType data,
                        RankedTensorType indices, int64_t axis) {
  int64_t rank = data.getRank();
  if (axis < 0 || axis >= rank)
    return fail(loc, "gather_elements axis " + Twine(axis) +
                         " out of range for rank " + Twine(rank));
  if (indices.getRank() != rank)
    return fail(loc, "gather_elements indices must have the data's rank");
  // Symbolic sizes are compared at run time (the reference interpreter
  // checks every index); static ones here.
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && !indices.isDynamicDim(d) && !data.isDynamicDim(d) &&
        indices.getDimSize(d) > data.getDimSize(d))
      return fail(loc, "gather_elements indices exceed the data in dim " +
                           Twine(d));
  return indices.clone(data.getElementType());
}

LogicalResult verifySliceTypes(std::optional<Location> loc,
                               RankedTensorType input, RankedTensorType result,
                               ArrayRef<int64_t> starts,
                               ArrayRef<int64_t> strides) {
  int64_t rank = input.getRank();
  if (result.getRank() != rank ||
      result.getElementType() != input.getElementType())
    return fail(loc, "slice result differs from its input in rank or "
                     "element type");
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return fail(loc, "slice needs one start and one stride per dim");
  for (int64_t d = 0; d < rank; ++d) {
    if (strides[d] == 0)
      return fail(loc, "slice stride of dim " + Twine(d) + " is 0");
    int64_t n = result.getDimSize(d), size = input.getDimSize(d);
    if (n == 0 || ShapedType::isDynamic(n) || ShapedType::isDynamic(size))
      continue;
    // The first and last index read; computed in 128 bits against overflow.
    __int128 first = starts[d];
    __int128 last = first + static_cast<__int128>(n - 1) * strides[d];
    if (first < 0 || first >= size || last < 0 || last >= size)
      return fail(loc, "slice of dim " + Twine(d) + " reads outside [0, " +
                           Twine(size) + ")");
  }
  return success();
}

LogicalResult verifyExpandTypes(std::optional<Location> loc,
                                RankedTensorType input,
                                RankedTensorType result) {
  if (input.getElementType() != result.getElementType())
    return fail(loc, "expand changes the element type");
  auto in = sizesOf(loc, input), out = sizesOf(loc, result);
  if (failed(in) || failed(out))
    return failure();
  auto shape = broadcastSizes(loc, *in, *out);
  if (failed(shape))
    return failure();
  if (*shape != *out)
    return fail(loc, "expand result is not the broadcast of its input and "
                     "the requested shape");
  return success();
}

} // namespace kiln
