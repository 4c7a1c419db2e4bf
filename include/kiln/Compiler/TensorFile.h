//===- TensorFile.h - Tensors from .npy and TensorProto files ---*- C++ -*-===//
//
// The files tools take tensors from: NumPy `.npy` arrays and serialized ONNX
// TensorProtos (`.pb`, as in the ONNX conformance tests); and the `.npy`
// files they write.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TENSORFILE_H
#define KILN_COMPILER_TENSORFILE_H

#include "kiln/ConstantData/HostTensor.h"
#include "kiln/Importer/ONNX/Importer.h"

#include "llvm/ADT/StringMap.h"

#include <string>

namespace kiln {

/// Reads the tensor in `path` (`.pb`: a TensorProto, else `.npy`). Errors are
/// emitted as diagnostics at the file's location.
mlir::FailureOr<HostTensor> readTensorFile(mlir::MLIRContext *context,
                                           llvm::StringRef path);

/// Reads `NAME=FILE` specs (the `--input` and `--const-input` flags) into
/// `tensors`; `flag` names the flag in the error for a malformed spec.
mlir::LogicalResult readNamedTensorFiles(mlir::MLIRContext *context,
                                         llvm::ArrayRef<std::string> specs,
                                         llvm::StringRef flag,
                                         llvm::StringMap<HostTensor> &tensors);

/// Reads `NAME=FILE` specs (the `--const-input` flag) into the graph inputs
/// that `options` freezes at compile time.
mlir::LogicalResult readConstantInputFiles(mlir::MLIRContext *context,
                                           llvm::ArrayRef<std::string> specs,
                                           ImportOptions &options);

/// Writes `tensor` to `path` as a `.npy` array (atomically: a failed write
/// leaves no partial file). Returns the error in words, or "" on success.
std::string writeNpyFile(llvm::StringRef path, const HostTensor &tensor);

} // namespace kiln

#endif // KILN_COMPILER_TENSORFILE_H
