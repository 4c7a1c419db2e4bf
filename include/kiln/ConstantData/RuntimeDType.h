//===- RuntimeDType.h - MLIR element types <-> runtime dtypes ---*- C++ -*-===//
//
// The runtime names element types with `rt::DType` (the artifact encoding and
// the C ABI's `kiln_dtype`); the compiler with MLIR types. The CUDA target
// converts when it writes an artifact, and the tools when they read or write
// a tensor for a compiled model (`.npy` files, a `.so`'s signature).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONSTANTDATA_RUNTIMEDTYPE_H
#define KILN_CONSTANTDATA_RUNTIMEDTYPE_H

#include "kiln/runtime/DType.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace kiln {

/// The runtime element type of `type`, or failure (with an error at `loc`
/// when given) for types the runtime does not have.
mlir::FailureOr<rt::DType>
toRuntimeDType(mlir::Type type, std::optional<mlir::Location> loc = {});

/// The MLIR element type of a runtime element type.
mlir::Type fromRuntimeDType(mlir::MLIRContext *context, rt::DType dtype);

} // namespace kiln

#endif // KILN_CONSTANTDATA_RUNTIMEDTYPE_H
