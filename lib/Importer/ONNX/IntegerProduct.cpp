//===- IntegerProduct.cpp - products of 8-bit integers --------------------===//
//
// MatMulInteger's arithmetic, which QLinearMatMul, QGemm and QAttention
// share: the fp32 product of the 8-bit operands less their zero points, and
// the views of a per-row or per-column scale or zero point.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "PackedDequantize.h"

#include "kiln/Dialect/Kiln/QuantizedActivations.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"

using namespace mlir;

namespace kiln {

FailureOr<Value> NodeConverterBase::integerProduct(Value a, Value aZero,
                                                   Value bIn, Value bZero,
                                                   StringRef aZeroName,
                                                   StringRef bZeroName) {
  if (!holdsBytes(a) || !holdsBytes(bIn))
    return error() << "expected 8-bit integer A and B, got "
                   << typeOf(a).getElementType() << " and "
                   << typeOf(bIn).getElementType();
  for (auto [zero, x, name] :
       {std::tuple{aZero, a, aZeroName}, std::tuple{bZero, bIn, bZeroName}})
    if (zero && typeOf(zero).getElementType() != typeOf(x).getElementType())
      return error() << name << " must have its input's type "
                     << typeOf(x).getElementType() << ", got "
                     << typeOf(zero).getElementType();
  Type f32 = b.getF32Type();
  Value lhs = castTo(a, f32);
  if (aZero) {
    auto z =
        perRow(importer.foldConstant(castTo(aZero, f32)), typeOf(a), aZeroName);
    if (failed(z))
      return failure();
    lhs = SubOp::create(b, loc, typeOf(lhs), lhs, *z);
  }
  auto rhs = matmulIntegerWeights(bIn, bZero, bZeroName);
  if (failed(rhs))
    return failure();
  auto type = inferMatmulType(loc, typeOf(lhs), typeOf(*rhs), false, false);
  if (failed(type))
    return failure();
  return MatmulOp::create(b, loc, *type, lhs, *rhs, false, false).getResult();
}

FailureOr<Value> NodeConverterBase::perRow(Value param, RankedTensorType aType,
                                           StringRef what) {
  RankedTensorType type = typeOf(param);
  int64_t rank = aType.getRank();
  Value viewed = param;
  bool fits = holdsOneValue(param);
  if (fits)
    viewed = reshape(param, ArrayRef<int64_t>{});
  else if (rank == 2 && type.getRank() == 1 && type.hasStaticShape()) {
    viewed = reshape(param, {type.getDimSize(0), int64_t(1)});
    fits = true;
  } else {
    fits = type.getRank() == rank && type.getDimSize(rank - 1) == 1;
  }
  auto shape =
      fits ? inferBroadcastType(std::nullopt,
                                aType.clone(typeOf(viewed).getElementType()),
                                typeOf(viewed))
           : FailureOr<RankedTensorType>(failure());
  if (failed(shape) || shape->getShape() != aType.getShape())
    return error() << what << " of shape " << shapeText(type) << " fits A "
                   << shapeText(aType) << " neither per tensor nor per row";
  return viewed;
}

FailureOr<Value> NodeConverterBase::perColumn(Value param,
                                              RankedTensorType bType,
                                              StringRef what) {
  RankedTensorType type = typeOf(param);
  int64_t rank = bType.getRank(), pRank = type.getRank();
  if (holdsOneValue(param))
    return reshape(param, ArrayRef<int64_t>{});
  bool fits =
      rank >= 2 && pRank >= 1 &&
      type.getDimSize(pRank - 1) == bType.getDimSize(rank - 1) &&
      (pRank == 1 || (pRank == rank && type.getDimSize(pRank - 2) == 1));
  auto shape =
      fits ? inferBroadcastType(std::nullopt,
                                bType.clone(type.getElementType()), type)
           : FailureOr<RankedTensorType>(failure());
  if (failed(shape) || shape->getShape() != bType.getShape())
    return error() << what << " of shape " << shapeText(type) << " fits B "
                   << shapeText(bType) << " neither per tensor nor per column";
  return param;
}

FailureOr<Value> NodeConverterBase::matmulIntegerWeights(Value weights,
                                                         Value zero,
                                                         StringRef zeroName) {
  Type f32 = b.getF32Type();
  RankedTensorType wType = typeOf(weights);
  if (wType.getRank() == 2 && wType.hasStaticShape()) {
    int64_t n = wType.getDimSize(1);
    RankedTensorType zType =
        zero ? typeOf(zero) : RankedTensorType::get({}, f32);
    bool oneAColumn = zType.getRank() == 1 && zType.getDimSize(0) == n;
    if (zType.hasStaticShape() && (zType.getNumElements() == 1 || oneAColumn)) {
      auto onesType = RankedTensorType::get(
          oneAColumn ? ArrayRef<int64_t>{n} : ArrayRef<int64_t>{}, f32);
      Value ones = ConstantOp::create(
          b, loc, cast<ElementsAttr>(DenseElementsAttr::get(onesType, 1.0f)));
      if (Value packed = packDequantizeLinear(b, loc, weights, ones, zero,
                                              /*axis=*/1, /*block=*/0))
        return packed;
    }
  }
  Value rhs = castTo(weights, f32);
  if (!zero)
    return rhs;
  auto z = perColumn(importer.foldConstant(castTo(zero, f32)), wType, zeroName);
  if (failed(z))
    return failure();
  return SubOp::create(b, loc, typeOf(rhs), rhs, *z).getResult();
}

} // namespace kiln
