//===- OpRegistry.h - which ONNX ops Kiln converts, and how -----*- C++ -*-===//
//
// Each converter family (a Convert*.cpp) lists its ops once, in a table of
// (domain, op type, converter); convertNode and isSupportedOp look nodes up
// in the union of the tables, so what is supported cannot drift from what is
// converted.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_OPREGISTRY_H
#define KILN_LIB_IMPORTER_ONNX_OPREGISTRY_H

#include "GraphImporter.h"

namespace kiln {

/// Converts one node of a registered op; emits errors on failure.
using ConvertNodeFn = mlir::LogicalResult (*)(GraphImporter &importer,
                                              const onnx::NodeProto &node);

/// One op a family converts.
struct OpConversion {
  /// "" for the default ONNX domain (which "ai.onnx" also names), else the
  /// op set's domain, e.g. kMicrosoftDomain.
  llvm::StringLiteral domain;
  llvm::StringLiteral opType;
  ConvertNodeFn convert;
};

/// The ConvertNodeFn that builds a `Converter` for the node and calls
/// `Method` on it.
template <typename Converter, mlir::LogicalResult (Converter::*Method)()>
mlir::LogicalResult convertWith(GraphImporter &importer,
                                const onnx::NodeProto &node) {
  return (Converter(importer, node).*Method)();
}

/// The families' tables, one per Convert*.cpp.
llvm::ArrayRef<OpConversion> getCoreConversions();
llvm::ArrayRef<OpConversion> getShapeConversions();
llvm::ArrayRef<OpConversion> getViewConversions();
llvm::ArrayRef<OpConversion> getIndexingConversions();
llvm::ArrayRef<OpConversion> getElementwiseConversions();
llvm::ArrayRef<OpConversion> getReductionConversions();
llvm::ArrayRef<OpConversion> getDataMovementConversions();
llvm::ArrayRef<OpConversion> getScatterConversions();
llvm::ArrayRef<OpConversion> getQuantizedConversions();
llvm::ArrayRef<OpConversion> getQLinearConversions();
llvm::ArrayRef<OpConversion> getConvConversions();
llvm::ArrayRef<OpConversion> getEinsumConversions();
llvm::ArrayRef<OpConversion> getLoopConversions();
llvm::ArrayRef<OpConversion> getAttentionConversions();
llvm::ArrayRef<OpConversion> getGroupQueryAttentionConversions();
llvm::ArrayRef<OpConversion> getMicrosoftAttentionConversions();
llvm::ArrayRef<OpConversion> getFusedConversions();
llvm::ArrayRef<OpConversion> getRotaryEmbeddingConversions();

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_OPREGISTRY_H
