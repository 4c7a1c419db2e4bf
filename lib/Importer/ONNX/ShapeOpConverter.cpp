//===- ShapeOpConverter.cpp - helpers of shape-op converters --------------===//
//
// The helpers that ShapeOpConverter.h declares, shared by the shape, view and
// indexing converters.
//
//===----------------------------------------------------------------------===//

#include "ShapeOpConverter.h"

using namespace mlir;

namespace kiln {

FailureOr<SmallVector<int64_t>>
ShapeOpConverter::constantInput(int i, StringRef what) {
  Value value = importer.input(node, i);
  if (!value)
    return error() << "missing " << what;
  auto ints = importer.constantInts(value);
  if (failed(ints))
    return error() << what
                   << " must be a constant (or computed from shapes only)";
  return ints;
}

FailureOr<SymbolicShape> ShapeOpConverter::sizesInput(int i, StringRef what) {
  Value value = importer.input(node, i);
  if (!value)
    return error() << "missing " << what;
  auto sizes = importer.symbolicInts(value);
  if (failed(sizes))
    return error() << what
                   << " must be a constant (or computed from shapes only)";
  return sizes;
}

Value ShapeOpConverter::slice(Value x, ArrayRef<int64_t> starts,
                              ArrayRef<DimExpr> counts,
                              ArrayRef<int64_t> steps) {
  RankedTensorType type = typeOf(x);
  auto sizes = sizesOf(std::nullopt, type);
  bool whole = succeeded(sizes) && llvm::equal(counts, *sizes) &&
               llvm::all_of(starts, [](int64_t s) { return s == 0; }) &&
               llvm::all_of(steps, [](int64_t s) { return s == 1; });
  if (whole)
    return x;
  return SliceOp::create(b, loc,
                         symbolicTensorType(counts, type.getElementType()), x,
                         starts, steps);
}

LogicalResult ShapeOpConverter::getCheckedShape(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0 || llvm::MulOverflow(count, d, count) ||
        count > (int64_t(1) << 31))
      return error() << "shape is negative or too large";
  return success();
}

} // namespace kiln
