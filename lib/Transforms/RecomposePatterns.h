//===- RecomposePatterns.h - kiln-recompose's pattern sets ------*- C++ -*-===//
//
// The patterns of kiln-recompose live in more than one file; the pass
// (Recompose.cpp) gathers them here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TRANSFORMS_RECOMPOSEPATTERNS_H
#define KILN_LIB_TRANSFORMS_RECOMPOSEPATTERNS_H

#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace kiln {

/// The value of a splat float constant, if `v` is one.
std::optional<double> splatValue(mlir::Value v);

/// Whether `v` is a float constant whose every value is 1, inline or a
/// `dense_resource` blob (a packed weight's scales of 1 a column).
bool holdsOnlyOnes(mlir::Value v);

/// LayerNorm and RMSNorm from their spelled-out forms (RecomposeNorms.cpp).
void populateRecomposeNormPatterns(mlir::RewritePatternSet &patterns);

/// onnxruntime's dynamically quantized products as products of dequantized
/// operands (RecomposeQuantized.cpp).
void populateRecomposeQuantizedPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_LIB_TRANSFORMS_RECOMPOSEPATTERNS_H
