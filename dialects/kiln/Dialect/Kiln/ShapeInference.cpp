//===- ShapeInference.cpp - one shape function per kiln op ----------------===//

#include "kiln/Dialect/Kiln/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kiln {

/// Prints a shape as `2x?x4` for diagnostics.
static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      },
      "x");
  if (shape.empty())
    os << "scalar";
  return s;
}

FailureOr<SmallVector<int64_t>> broadcastShapes(std::optional<Location> loc,
                                                ArrayRef<int64_t> lhs,
                                                ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the trailing dim, as numpy does.
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l == r || r == 1)
      result[i] = l;
    else if (l == 1)
      result[i] = r;
    else
      return emitOptionalError(loc, "shapes ", shapeStr(lhs), " and ",
                               shapeStr(rhs), " do not broadcast at dim ", i);
  }
  return result;
}

FailureOr<RankedTensorType> inferBroadcastType(std::optional<Location> loc,
                                               RankedTensorType lhs,
                                               RankedTensorType rhs) {
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "expected operands of one element type, got ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  auto shape = broadcastShapes(loc, lhs.getShape(), rhs.getShape());
  if (failed(shape))
    return failure();
  return RankedTensorType::get(*shape, lhs.getElementType());
}

//===----------------------------------------------------------------------===//
// Elementwise math and comparisons
//===----------------------------------------------------------------------===//

RankedTensorType inferPredicateType(RankedTensorType input) {
  return input.clone(IntegerType::get(input.getContext(), 1));
}

FailureOr<RankedTensorType> inferCompareType(std::optional<Location> loc,
                                             RankedTensorType lhs,
                                             RankedTensorType rhs) {
  auto type = inferBroadcastType(loc, lhs, rhs);
  if (failed(type))
    return failure();
  return inferPredicateType(*type);
}

FailureOr<RankedTensorType> inferWhereType(std::optional<Location> loc,
                                           RankedTensorType condition,
                                           RankedTensorType lhs,
                                           RankedTensorType rhs) {
  if (!condition.getElementType().isInteger(1))
    return emitOptionalError(loc, "expected an i1 condition, got ",
                             condition.getElementType());
  auto values = inferBroadcastType(loc, lhs, rhs);
  if (failed(values))
    return failure();
  auto shape = broadcastShapes(loc, condition.getShape(), values->getShape());
  if (failed(shape))
    return failure();
  return RankedTensorType::get(*shape, lhs.getElementType());
}

FailureOr<RankedTensorType> inferMatmulType(std::optional<Location> loc,
                                            RankedTensorType lhs,
                                            RankedTensorType rhs,
                                            bool transposeLhs,
                                            bool transposeRhs) {
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "expected operands of rank >= 2, got ",
                             lhs.getRank(), " and ", rhs.getRank());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "expected operands of one element type, got ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  int64_t m = l[l.size() - (transposeLhs ? 1 : 2)];
  int64_t kl = l[l.size() - (transposeLhs ? 2 : 1)];
  int64_t kr = r[r.size() - (transposeRhs ? 1 : 2)];
  int64_t n = r[r.size() - (transposeRhs ? 2 : 1)];
  if (!ShapedType::isDynamic(kl) && !ShapedType::isDynamic(kr) && kl != kr)
    return emitOptionalError(loc, "expected contracting dims to match, got ",
                             kl, " vs ", kr);
  auto batch = broadcastShapes(loc, l.drop_back(2), r.drop_back(2));
  if (failed(batch))
    return failure();
  SmallVector<int64_t> shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  return RankedTensorType::get(shape, lhs.getElementType());
}

FailureOr<RankedTensorType> inferReduceType(std::optional<Location> loc,
                                            RankedTensorType input,
                                            ArrayRef<int64_t> axes,
                                            bool keepdims) {
  int64_t rank = input.getRank();
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis, " out of range for rank ",
                               rank);
    if (i > 0 && axes[i - 1] >= axis)
      return emitOptionalError(loc, "expected sorted unique axes");
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(input.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType> inferAttentionType(std::optional<Location> loc,
                                               RankedTensorType query,
                                               RankedTensorType key,
                                               RankedTensorType value,
                                               RankedTensorType mask) {
  if (query.getRank() != 4 || key.getRank() != 4 || value.getRank() != 4)
    return emitOptionalError(loc, "expected rank-4 query, key and value "
                                  "([batch, heads, sequence, head size])");
  Type et = query.getElementType();
  if (key.getElementType() != et || value.getElementType() != et ||
      (mask && mask.getElementType() != et))
    return emitOptionalError(loc, "expected one element type");
  ArrayRef<int64_t> q = query.getShape(), k = key.getShape(),
                    v = value.getShape();
  if (k[0] != q[0] || v[0] != q[0])
    return emitOptionalError(loc, "batch sizes differ");
  if (k[1] != v[1] || k[1] < 1 || q[1] % k[1] != 0)
    return emitOptionalError(loc, "query heads (", q[1],
                             ") must be a multiple of key/value heads (",
                             k[1], ")");
  if (k[2] != v[2])
    return emitOptionalError(loc, "key and value sequence lengths differ");
  if (k[3] != q[3])
    return emitOptionalError(loc, "query and key head sizes differ");
  SmallVector<int64_t> scores{q[0], q[1], q[2], k[2]};
  if (mask) {
    auto shape = broadcastShapes(loc, mask.getShape(), scores);
    if (failed(shape))
      return failure();
    if (ArrayRef<int64_t>(*shape) != ArrayRef<int64_t>(scores))
      return emitOptionalError(loc, "mask does not broadcast to the scores");
  }
  return RankedTensorType::get({q[0], q[1], q[2], v[3]}, et);
}

FailureOr<RankedTensorType> inferTransposeType(std::optional<Location> loc,
                                               RankedTensorType input,
                                               ArrayRef<int64_t> permutation) {
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(permutation.size()) != rank)
    return emitOptionalError(loc, "expected a permutation of ", rank,
                             " dims, got ", permutation.size());
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t p : permutation) {
    if (p < 0 || p >= rank || seen[p])
      return emitOptionalError(loc, "invalid permutation entry ", p);
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  return RankedTensorType::get(shape, input.getElementType());
}

/// Checks that a LayerNorm parameter broadcasts to the normalized dims without
/// growing them.
static LogicalResult checkNormParam(std::optional<Location> loc,
                                    StringRef what, RankedTensorType param,
                                    RankedTensorType input,
                                    ArrayRef<int64_t> normDims) {
  if (param.getElementType() != input.getElementType())
    return emitOptionalError(loc, "expected ", what, " of element type ",
                             input.getElementType(), ", got ",
                             param.getElementType());
  auto shape = broadcastShapes(std::nullopt, normDims, param.getShape());
  if (failed(shape) || ArrayRef<int64_t>(*shape) != normDims)
    return emitOptionalError(loc, "expected ", what, " of shape ",
                             shapeStr(param.getShape()),
                             " to broadcast to the normalized dims ",
                             shapeStr(normDims));
  return success();
}

FailureOr<RankedTensorType> inferLayerNormType(std::optional<Location> loc,
                                               RankedTensorType input,
                                               RankedTensorType scale,
                                               RankedTensorType bias,
                                               int64_t axis) {
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(loc, "axis ", axis, " out of range for rank ",
                             input.getRank());
  ArrayRef<int64_t> normDims = input.getShape().drop_front(axis);
  if (failed(checkNormParam(loc, "scale", scale, input, normDims)))
    return failure();
  if (bias && failed(checkNormParam(loc, "bias", bias, input, normDims)))
    return failure();
  return input;
}

LogicalResult verifyReshapeTypes(std::optional<Location> loc,
                                 RankedTensorType input,
                                 RankedTensorType result) {
  if (input.getElementType() != result.getElementType())
    return emitOptionalError(loc, "expected one element type, got ",
                             input.getElementType(), " and ",
                             result.getElementType());
  if (input.hasStaticShape() && result.hasStaticShape() &&
      input.getNumElements() != result.getNumElements())
    return emitOptionalError(loc, "cannot reshape ", input.getNumElements(),
                             " elements (", shapeStr(input.getShape()),
                             ") into ", result.getNumElements(), " (",
                             shapeStr(result.getShape()), ")");
  return success();
}

} // namespace kiln
