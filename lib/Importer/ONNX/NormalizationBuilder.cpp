//===- NormalizationBuilder.cpp - layer norm statistics as kiln ops -------===//

#include "NormalizationBuilder.h"

#include "kiln/Dialect/Kiln/ShapeInference.h"

using namespace mlir;

namespace kiln {

FailureOr<LayerNormStatistics> buildLayerNormStatistics(GraphImporter &importer,
                                                        Location loc, Value x,
                                                        int64_t axis,
                                                        float epsilon) {
  OpBuilder &b = importer.builder();
  auto xType = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < xType.getRank(); ++d)
    axes.push_back(d);
  auto statType = inferReduceType(loc, xType, axes, true);
  if (failed(statType))
    return failure();
  Type et = xType.getElementType();
  Value mean = ReduceMeanOp::create(b, loc, *statType, x, axes, true);
  Value centered = SubOp::create(b, loc, xType, x, mean);
  Value squared = MulOp::create(b, loc, xType, centered, centered);
  Value variance = ReduceMeanOp::create(b, loc, *statType, squared, axes, true);
  Value shifted = AddOp::create(b, loc, *statType, variance,
                                importer.scalar(loc, et, epsilon));
  Value stddev = SqrtOp::create(b, loc, shifted);
  Value invStdDev =
      DivOp::create(b, loc, *statType, importer.scalar(loc, et, 1.0), stddev);
  return LayerNormStatistics{mean, invStdDev};
}

} // namespace kiln
