//===- ShapeOpConverter.h - helpers of shape-op converters ------*- C++ -*-===//
//
// What the converters of ConvertShapeOps.cpp, ConvertViewOps.cpp and
// ConvertIndexingOps.cpp share: reading the inputs that decide a result's
// shape, slices, and the size check of the tensors they build.
//
// Their ops are those of shape subgraphs (Shape, Gather, Unsqueeze, Concat,
// Slice, ...) and of data movement. Shapes are static once inputs are bound, so
// Shape and Size become constants, and the importer folds every integer op
// whose operands are constants (GraphImporter::setOutput): a subgraph such as
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape leaves only the Reshape.
// Inputs that ONNX passes as tensors but that decide a result's shape (axes,
// starts, the shape of Expand) must therefore be constants after folding.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_SHAPEOPCONVERTER_H
#define KILN_LIB_IMPORTER_ONNX_SHAPEOPCONVERTER_H

#include "NodeConverter.h"

namespace kiln {

/// A NodeConverterBase with the helpers that the shape, view and indexing
/// converters use (ShapeOpConverter.cpp).
struct ShapeOpConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// The integers of constant input `i` (`what` names it in the error).
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantInput(int i, llvm::StringRef what);

  /// The sizes of shape input `i` (constant or symbolic).
  mlir::FailureOr<SymbolicShape> sizesInput(int i, llvm::StringRef what);

  using NodeConverterBase::slice;
  /// A kiln.slice of `x`, or `x` itself when the window is everything.
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> starts,
                    llvm::ArrayRef<DimExpr> counts,
                    llvm::ArrayRef<int64_t> steps);

  /// Dims must be non-negative and the tensor of bounded size.
  mlir::LogicalResult getCheckedShape(llvm::ArrayRef<int64_t> shape);
};

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_SHAPEOPCONVERTER_H
