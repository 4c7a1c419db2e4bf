//===- TensorFile.cpp - Tensors from .npy and TensorProto files -----------===//

#include "kiln/Compiler/TensorFile.h"

#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/Importer/ONNX/TensorProto.h"
#include "kiln/runtime/Npy.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace mlir;

FailureOr<kiln::HostTensor> kiln::readTensorFile(MLIRContext *context,
                                                 StringRef path) {
  Location loc = FileLineColLoc::get(context, path, 0, 0);
  if (path.ends_with(".pb")) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return emitError(loc)
             << "cannot read '" << path << "': " << buffer.getError().message();
    std::string protoName;
    auto attr = parseTensorProtoFile(loc, (*buffer)->getBuffer(), protoName);
    if (failed(attr))
      return failure();
    return HostTensor::fromElementsAttr(*attr, loc);
  }
  rt::NpyArray array;
  std::string error;
  if (!rt::readNpy(path.str(), array, error))
    return emitError(loc) << error;
  auto tensor = HostTensor::allocate(
      fromRuntimeDType(context, array.dtype),
      SmallVector<int64_t>(array.shape.begin(), array.shape.end()), loc);
  if (failed(tensor))
    return failure();
  if (tensor->bytes.size() != array.data.size())
    return emitError(loc) << "the data of '" << path
                          << "' does not match its shape";
  std::memcpy(tensor->bytes.data(), array.data.data(), array.data.size());
  return tensor;
}

LogicalResult kiln::readNamedTensorFiles(MLIRContext *context,
                                         ArrayRef<std::string> specs,
                                         StringRef flag,
                                         llvm::StringMap<HostTensor> &tensors) {
  for (const std::string &spec : specs) {
    auto [name, path] = StringRef(spec).split('=');
    if (name.empty() || path.empty())
      return emitError(UnknownLoc::get(context))
             << "--" << flag << " expects NAME=FILE, got '" << spec << "'";
    auto tensor = readTensorFile(context, path);
    if (failed(tensor))
      return failure();
    tensors[name] = std::move(*tensor);
  }
  return success();
}

LogicalResult kiln::readConstantInputFiles(MLIRContext *context,
                                           ArrayRef<std::string> specs,
                                           ImportOptions &options) {
  llvm::StringMap<HostTensor> frozen;
  if (failed(readNamedTensorFiles(context, specs, "const-input", frozen)))
    return failure();
  // Plain `dense` attributes, not the raw bytes: MLIR bit-packs booleans,
  // and the importer reads shapes and axes out of them whatever their size.
  for (auto &entry : frozen)
    options.constantInputs[entry.getKey()] =
        llvm::cast<ElementsAttr>(entry.getValue().toDenseElementsAttr());
  return success();
}

std::string kiln::writeNpyFile(StringRef path, const HostTensor &tensor) {
  FailureOr<rt::DType> dtype = toRuntimeDType(tensor.elementType);
  if (failed(dtype))
    return "no .npy type holds the elements of '" + path.str() + "'";
  rt::NpyArray array;
  array.dtype = *dtype;
  array.shape.assign(tensor.shape.begin(), tensor.shape.end());
  array.data.assign(tensor.bytes.begin(), tensor.bytes.end());
  std::string error;
  if (!rt::writeNpy(path.str(), array, error))
    return error;
  return "";
}
