//===- Importer.h - ONNX models to kiln IR ----------------------*- C++ -*-===//
//
// Imports a binary `.onnx` or an ONNX text-format model into one `func.func
// @main` of `kiln` ops. Weights become `dense_resource` blobs, every op gets a
// NameLoc of its ONNX node inside a FileLineColLoc of the model file, and all
// shapes are inferred through the dialect's shape functions.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IMPORTER_ONNX_IMPORTER_H
#define KILN_IMPORTER_ONNX_IMPORTER_H

#include "kiln/Dialect/Kiln/TensorNames.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>

namespace kiln {

/// What the importer needs besides the model.
/// How a caller names the import options in messages about them: a tool
/// names its flags (CommandLine.h sets kilnc's and kiln-run's), the Python
/// package its arguments; by default, the fields of ImportOptions.
struct ImportOptionNames {
  /// For dimValues, dimRanges and dimExpressions (`--dim`).
  std::string dims = "dimValues";
  std::string inputShapes = "inputShapes";
  std::string constantInputs = "constantInputs";
  std::string overrideInitializers = "overrideInitializers";
};

struct ImportOptions {
  /// Static shapes for graph inputs by name (`--input-shape NAME=2x128`); they
  /// bind the model's symbolic or unknown dims.
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// Values of the model's named dims (`--dim batch=1`): every input dim of
  /// that name, and every dim named by an expression over it
  /// (`past_sequence+sequence`), gets it. A dim without a name is called
  /// `<input>.<axis>`.
  llvm::StringMap<int64_t> dimValues;
  /// Named dims left symbolic, each with its range `[min, max]` (`--dim
  /// batch=1:8`): the inputs' types keep them as `?` dims whose sizes are
  /// expressions over the names (`#kiln.dims`), and `@main` records the
  /// ranges in its `kiln.dim_ranges` attribute.
  llvm::StringMap<std::pair<int64_t, int64_t>> dimRanges;
  /// Named dims defined as an expression over other names (`--dim
  /// total=past+sequence`): what an exporter names on its own (dynamo's
  /// `s53` for a KV cache's total length) stated as what it is.
  llvm::StringMap<std::string> dimExpressions;
  /// The range of every named dim that has neither a value, a range nor an
  /// expression; without it such a dim is an error. (The fuzz target sets
  /// it, so that any model with unbound dims goes the symbolic way.)
  std::optional<std::pair<int64_t, int64_t>> unboundDimRange;
  /// Graph inputs frozen to a value at compile time (`--const-input`): they
  /// become constants, as a shape that arrives as an input must be for a
  /// static-shape compiler.
  llvm::StringMap<mlir::ElementsAttr> constantInputs;
  /// Initializers that older exporters also list as graph inputs are
  /// constants (as onnxruntime treats them when not fed); those named here
  /// stay run-time inputs instead (`--override-initializer`).
  llvm::StringSet<> overrideInitializers;
  /// With N > 0, append a decoder's choice of its next token among its N
  /// most likely (`--next-token=N`): an output `next_token` and the inputs
  /// `sampling_*` that steer it (lib/Importer/ONNX/NextToken.cpp).
  int64_t nextTokenTopK = 0;
  /// Name the op results that are ONNX tensors (`kiln.tensors`, see
  /// TensorNames.h), for a tensor-by-tensor comparison (`--per-layer`).
  bool recordTensorNames = false;
  /// How the caller names these options, for messages about them.
  ImportOptionNames names;
};

/// Imports the model in `bytes` (binary protobuf, or text format when it
/// starts with `<`). `filename` names the model in locations and messages.
/// Emits diagnostics and returns null on failure.
mlir::OwningOpRef<mlir::ModuleOp> importONNX(mlir::MLIRContext *context,
                                             llvm::StringRef bytes,
                                             llvm::StringRef filename,
                                             const ImportOptions &options);

/// Reads `path` and imports it; a missing or empty file is an error.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXFile(mlir::MLIRContext *context, llvm::StringRef path,
               const ImportOptions &options);

} // namespace kiln

#endif // KILN_IMPORTER_ONNX_IMPORTER_H
