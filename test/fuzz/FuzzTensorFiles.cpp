//===- FuzzTensorFiles.cpp - The .npy and TensorProto readers -------------===//
//
// The tensor files `kiln-run --input` and `kilnc --const-input` read: every
// input goes to both readers, the runtime's `.npy` parser and the importer's
// serialized-TensorProto converter (`.pb`, as the ONNX conformance data).
// Each must reject what it cannot read with an error, never read outside the
// input or allocate more than its shape, once checked against the data,
// allows.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Importer/ONNX/TensorProto.h"
#include "kiln/runtime/Npy.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *bytes = reinterpret_cast<const char *>(data);

  kiln::rt::NpyArray array;
  std::string error;
  (void)kiln::rt::parseNpy(bytes, size, array, error);

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<kiln::KilnDialect>();
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  std::string name;
  (void)kiln::parseTensorProtoFile(mlir::UnknownLoc::get(&context),
                                   llvm::StringRef(bytes, size), name);
  return 0;
}
