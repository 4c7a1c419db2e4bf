//===- NormalizationBuilder.h - layer norm statistics -----------*- C++ -*-===//
//
// The statistics that LayerNormalization and its com.microsoft relatives
// return besides their result (Mean, InvStdDev), spelled out with kiln ops,
// shared by ConvertCoreOps.cpp and ConvertFusedOps.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_NORMALIZATIONBUILDER_H
#define KILN_LIB_IMPORTER_ONNX_NORMALIZATIONBUILDER_H

#include "GraphImporter.h"

namespace kiln {

/// The mean and the inverse standard deviation of layer normalization.
struct LayerNormStatistics {
  mlir::Value mean;
  mlir::Value invStdDev;
};

/// The statistics of `x` over the dims from `axis` to the last, with those
/// dims kept as 1: `mean(x)` and `1 / sqrt(mean((x - mean)^2) + epsilon)`,
/// in x's element type (callers widen x first for fp32 statistics).
mlir::FailureOr<LayerNormStatistics>
buildLayerNormStatistics(GraphImporter &importer, mlir::Location loc,
                         mlir::Value x, int64_t axis, float epsilon);

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_NORMALIZATIONBUILDER_H
