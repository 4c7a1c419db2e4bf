//===- ShapeInference.cpp - one shape function per kiln op ----------------===//
//
// Every rule works on sizes that may be symbolic (DimExpr): a static dim is
// a constant size, a dynamic one the expression its `#kiln.dims` encoding
// gives. Two sizes are equal when their polynomials are; a rule that would
// need a size to equal another only for some values of the names refuses.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/ShapeInference.h"

#include "kiln/Dialect/Kiln/SymbolicShapes.h"
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

std::string sizesText(ArrayRef<DimExpr> sizes) {
  if (sizes.empty())
    return "scalar";
  std::string text;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    if (i)
      text += "x";
    bool compound = !size.isConstant() && !size.getSymbol();
    text += compound ? "(" + size.str() + ")" : size.str();
  }
  return text;
}

FailureOr<SymbolicShape> sizesOf(std::optional<Location> loc,
                                 RankedTensorType type) {
  std::optional<SymbolicShape> sizes = symbolicShapeOf(type);
  if (!sizes)
    return emitOptionalError(loc, "type ", type,
                             " has a dynamic dim without a size (a "
                             "#kiln.dims encoding names each)");
  return std::move(*sizes);
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

FailureOr<SymbolicShape> broadcastSizes(std::optional<Location> loc,
                                        ArrayRef<DimExpr> lhs,
                                        ArrayRef<DimExpr> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  DimExpr one = DimExpr::constant(1);
  SymbolicShape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    const DimExpr &l =
        i < rank - lhs.size() ? one : lhs[i - (rank - lhs.size())];
    const DimExpr &r =
        i < rank - rhs.size() ? one : rhs[i - (rank - rhs.size())];
    // A named size broadcasts only with 1 and with itself: that it equals
    // another size for some values of the names is not enough.
    if (l == r || r == one)
      result[i] = l;
    else if (l == one)
      result[i] = r;
    else
      return emitOptionalError(loc, "shapes ", sizesText(lhs), " and ",
                               sizesText(rhs), " do not broadcast at dim ", i);
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
  if (lhs.hasStaticShape() && rhs.hasStaticShape()) {
    auto shape = broadcastShapes(loc, lhs.getShape(), rhs.getShape());
    if (failed(shape))
      return failure();
    return RankedTensorType::get(*shape, lhs.getElementType());
  }
  auto l = sizesOf(loc, lhs), r = sizesOf(loc, rhs);
  if (failed(l) || failed(r))
    return failure();
  auto shape = broadcastSizes(loc, *l, *r);
  if (failed(shape))
    return failure();
  return symbolicTensorType(*shape, lhs.getElementType());
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
  auto type =
      inferBroadcastType(loc, condition.clone(lhs.getElementType()), *values);
  if (failed(type))
    return failure();
  return *type;
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
  auto l = sizesOf(loc, lhs), r = sizesOf(loc, rhs);
  if (failed(l) || failed(r))
    return failure();
  const DimExpr &m = (*l)[l->size() - (transposeLhs ? 1 : 2)];
  const DimExpr &kl = (*l)[l->size() - (transposeLhs ? 2 : 1)];
  const DimExpr &kr = (*r)[r->size() - (transposeRhs ? 1 : 2)];
  const DimExpr &n = (*r)[r->size() - (transposeRhs ? 2 : 1)];
  if (kl != kr)
    return emitOptionalError(loc, "expected contracting dims to match, got ",
                             kl.str(), " vs ", kr.str());
  auto batch = broadcastSizes(loc, ArrayRef<DimExpr>(*l).drop_back(2),
                              ArrayRef<DimExpr>(*r).drop_back(2));
  if (failed(batch))
    return failure();
  SymbolicShape shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  return symbolicTensorType(shape, lhs.getElementType());
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
  auto sizes = sizesOf(loc, input);
  if (failed(sizes))
    return failure();
  SymbolicShape shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back((*sizes)[d]);
    else if (keepdims)
      shape.push_back(DimExpr::constant(1));
  }
  return symbolicTensorType(shape, input.getElementType());
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
  auto qs = sizesOf(loc, query), ks = sizesOf(loc, key),
       vs = sizesOf(loc, value);
  if (failed(qs) || failed(ks) || failed(vs))
    return failure();
  const SymbolicShape &q = *qs, &k = *ks, &v = *vs;
  if (k[0] != q[0] || v[0] != q[0])
    return emitOptionalError(loc, "batch sizes differ");
  // Heads group evenly: static counts, or one symbolic count for all.
  std::optional<int64_t> qHeads = q[1].getConstant(),
                         kHeads = k[1].getConstant();
  bool grouped = (qHeads && kHeads && *kHeads >= 1 && *qHeads % *kHeads == 0) ||
                 q[1] == k[1];
  if (k[1] != v[1] || !grouped)
    return emitOptionalError(loc, "query heads (", q[1].str(),
                             ") must be a multiple of key/value heads (",
                             k[1].str(), ")");
  if (k[2] != v[2])
    return emitOptionalError(loc, "key and value sequence lengths differ");
  if (k[3] != q[3])
    return emitOptionalError(loc, "query and key head sizes differ");
  SymbolicShape scores{q[0], q[1], q[2], k[2]};
  if (mask) {
    auto m = sizesOf(loc, mask);
    if (failed(m))
      return failure();
    auto shape = broadcastSizes(loc, *m, scores);
    if (failed(shape))
      return failure();
    if (*shape != scores)
      return emitOptionalError(loc, "mask does not broadcast to the scores");
  }
  return symbolicTensorType({q[0], q[1], q[2], v[3]}, et);
}

FailureOr<RankedTensorType> inferTransposeType(std::optional<Location> loc,
                                               RankedTensorType input,
                                               ArrayRef<int64_t> permutation) {
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(permutation.size()) != rank)
    return emitOptionalError(loc, "expected a permutation of ", rank,
                             " dims, got ", permutation.size());
  auto sizes = sizesOf(loc, input);
  if (failed(sizes))
    return failure();
  SmallVector<bool> seen(rank, false);
  SymbolicShape shape;
  for (int64_t p : permutation) {
    if (p < 0 || p >= rank || seen[p])
      return emitOptionalError(loc, "invalid permutation entry ", p);
    seen[p] = true;
    shape.push_back((*sizes)[p]);
  }
  return symbolicTensorType(shape, input.getElementType());
}

/// Checks that a LayerNorm parameter broadcasts to the normalized dims without
/// growing them.
static LogicalResult checkNormParam(std::optional<Location> loc, StringRef what,
                                    RankedTensorType param,
                                    RankedTensorType input,
                                    ArrayRef<DimExpr> normDims) {
  if (param.getElementType() != input.getElementType())
    return emitOptionalError(loc, "expected ", what, " of element type ",
                             input.getElementType(), ", got ",
                             param.getElementType());
  auto sizes = sizesOf(loc, param);
  if (failed(sizes))
    return failure();
  auto shape = broadcastSizes(std::nullopt, normDims, *sizes);
  if (failed(shape) || ArrayRef<DimExpr>(*shape) != normDims)
    return emitOptionalError(
        loc, "expected ", what, " of shape ", sizesText(*sizes),
        " to broadcast to the normalized dims ", sizesText(normDims));
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
  auto sizes = sizesOf(loc, input);
  if (failed(sizes))
    return failure();
  ArrayRef<DimExpr> normDims = ArrayRef<DimExpr>(*sizes).drop_front(axis);
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
  auto in = sizesOf(loc, input), out = sizesOf(loc, result);
  if (failed(in) || failed(out))
    return failure();
  std::optional<DimExpr> inCount = productOf(*in), outCount = productOf(*out);
  if (inCount && outCount && *inCount != *outCount)
    return emitOptionalError(loc, "cannot reshape ", inCount->str(),
                             " elements (", sizesText(*in), ") into ",
                             outCount->str(), " (", sizesText(*out), ")");
  return success();
}

} // namespace kiln
