//===- TensorNames.h - ONNX node and tensor names on kiln IR ----*- C++ -*-===//
//
// The importer locates every op at NameLoc(its ONNX node) (recomposed ops
// carry a FusedLoc of all of theirs); onnxNodeNames reads them back for the
// report, the overrides of kiln-mixed-precision and diagnostics.
//
// For `kiln-run --per-layer`, the importer records which op results are ONNX
// tensors, as the discardable array attribute `kiln.tensors` (one name per
// result, empty for results that are no ONNX tensor). Passes that replace an
// op by another computing the same tensor carry the names over; a result
// without a name is simply not compared. The names only exist when asked
// for: the attribute keeps CSE from merging otherwise equal ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_TENSORNAMES_H
#define KILN_DIALECT_KILN_TENSORNAMES_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace kiln {

/// Name of the function argument and result attribute holding the ONNX
/// tensor name of a graph input or output.
inline constexpr llvm::StringLiteral kNameAttr = "kiln.name";

/// Name of the discardable op attribute holding the ONNX tensor names.
inline constexpr llvm::StringLiteral kTensorNamesAttr = "kiln.tensors";

/// The ONNX node names in `loc`, each once, first appearance first.
llvm::SmallVector<llvm::StringRef> onnxNodeNames(mlir::Location loc);

/// Returns the ONNX tensor name of `value`, or null.
mlir::StringAttr getTensorName(mlir::Value value);

/// Names `result` after an ONNX tensor unless it already has a name: a value
/// that passes through (Identity) keeps the name of the node that made it.
void setTensorName(mlir::OpResult result, mlir::StringAttr name);

/// Gives `to` the tensor names of `from`, which it replaces.
void copyTensorNames(mlir::Operation *from, mlir::Operation *to);

} // namespace kiln

#endif // KILN_DIALECT_KILN_TENSORNAMES_H
