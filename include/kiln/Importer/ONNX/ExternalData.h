//===- ExternalData.h - ONNX external tensor data ---------------*- C++ -*-===//
//
// ONNX keeps large tensors outside the protobuf (`data_location: EXTERNAL`,
// with `location`, `offset` and `length` entries): the form today's PyTorch
// writes by default and the only one for models over 2 GB. The files are
// resolved under the model's folder only and mapped read-only, so weights
// reach the compiler without being copied.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IMPORTER_ONNX_EXTERNALDATA_H
#define KILN_IMPORTER_ONNX_EXTERNALDATA_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace llvm::sys::fs {
class mapped_file_region;
} // namespace llvm::sys::fs

namespace kiln {

/// A tensor's bytes inside a mapped external data file. `keepAlive` owns the
/// mapping: whoever holds on to `bytes` (a resource blob's deleter) holds it.
struct ExternalBytes {
  llvm::ArrayRef<char> bytes;
  std::shared_ptr<const llvm::sys::fs::mapped_file_region> keepAlive;
};

/// The external data files of one model. Each file is mapped once, on first
/// use, and stays mapped while any tensor read from it is alive.
class ExternalData {
public:
  /// `modelDir` is the folder of the model file; every `location` must name
  /// a regular file beneath it.
  explicit ExternalData(llvm::StringRef modelDir);

  /// The `expectedBytes` bytes of `tensor`'s external data. A location that
  /// is absolute, climbs out with `..`, is or passes through a symlink, or is
  /// not a regular file, and an offset or length outside the file or not
  /// matching `expectedBytes`, are errors at `loc` naming the tensor.
  mlir::FailureOr<ExternalBytes> read(mlir::Location loc,
                                      const onnx::TensorProto &tensor,
                                      int64_t expectedBytes);

private:
  mlir::FailureOr<std::shared_ptr<const llvm::sys::fs::mapped_file_region>>
  map(mlir::Location loc, llvm::StringRef tensorName,
      llvm::StringRef location, uint64_t &fileSize);

  std::string modelDir;
  /// The model folder's real path, computed on first use.
  std::string realModelDir;
  struct MappedFile {
    std::shared_ptr<const llvm::sys::fs::mapped_file_region> region;
    uint64_t size = 0;
  };
  llvm::StringMap<MappedFile> files;
};

} // namespace kiln

#endif // KILN_IMPORTER_ONNX_EXTERNALDATA_H
