//===- TensorProto.h - ONNX TensorProto to MLIR attributes ------*- C++ -*-===//

#ifndef KILN_IMPORTER_ONNX_TENSORPROTO_H
#define KILN_IMPORTER_ONNX_TENSORPROTO_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Location.h"

#include <string>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace kiln {

class ExternalData;

/// The MLIR element type of an ONNX `TensorProto.DataType`, or null for types
/// Kiln does not support.
mlir::Type convertONNXElementType(mlir::MLIRContext *context, int dataType);

/// Whether `type` is i4 or ui4, which Kiln stores one value a byte (int4
/// sign-extended).
bool isFourBitType(mlir::Type type);

/// Whether `type` is one Kiln stores, casts and moves but does not compute
/// with: the 4-bit integers and float8.
bool isStorageOnlyType(mlir::Type type);

/// The ONNX name of a `TensorProto.DataType` for messages ("float8e4m3fn").
llvm::StringRef onnxElementTypeName(int dataType);

/// Converts a tensor. Tensors with more than `inlineLimit` elements become
/// `dense_resource` blobs named after the tensor (pointing into the mapped
/// file for external data); smaller ones stay readable `dense` literals.
/// External data is read through `externalData` (an error without one).
/// Emits an error at `loc` for unsupported types or inconsistent sizes.
mlir::FailureOr<mlir::ElementsAttr>
convertTensorProto(mlir::Location loc, const onnx::TensorProto &tensor,
                   int64_t inlineLimit = 16,
                   ExternalData *externalData = nullptr);

/// Parses a serialized TensorProto (a conformance `input_0.pb`) and converts
/// it; `name` receives the tensor's name.
mlir::FailureOr<mlir::ElementsAttr> parseTensorProtoFile(mlir::Location loc,
                                                         llvm::StringRef bytes,
                                                         std::string &name);

} // namespace kiln

#endif // KILN_IMPORTER_ONNX_TENSORPROTO_H
