//===- Diagnostics.h - diagnostics that name the ONNX node ------*- C++ -*-===//
//
// The importer locates each op at NameLoc(node or tensor name) inside a
// FileLineColLoc(model, 0, 0): a protobuf has no lines. MLIR's own printer
// shows such a location as `model.onnx:0:0`, which says nothing; the tools
// print `model.onnx: at 'MatMul_3': error: ...` instead.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_DIAGNOSTICS_H
#define KILN_COMPILER_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace kiln {

/// While alive, prints the diagnostics whose location is in a model file
/// without lines (an ONNX model) as `FILE: at 'NAME': SEVERITY: MESSAGE`, or
/// `FILE: SEVERITY: MESSAGE` when no node or tensor is named, with their
/// notes; any other diagnostic (kiln IR from an `.mlir` file, which has
/// lines) goes on to the handlers registered before it.
class ModelDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  explicit ModelDiagnosticHandler(mlir::MLIRContext *context,
                                  llvm::raw_ostream &os = llvm::errs());

private:
  mlir::LogicalResult print(mlir::Diagnostic &diag);

  llvm::raw_ostream &os;
};

/// While alive, collects the diagnostics of a context as text instead of
/// printing them: a model file's as ModelDiagnosticHandler writes them,
/// kiln IR's with their source lines. For callers that hand the messages on
/// (the Python package's exceptions, the Triton backend's errors).
class CollectedDiagnostics {
public:
  explicit CollectedDiagnostics(mlir::MLIRContext *context);

  /// The messages so far, without trailing whitespace.
  std::string text();

private:
  std::string messages;
  llvm::raw_string_ostream os;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler lines;
  ModelDiagnosticHandler models;
};

/// A library option and the tool flag that sets it.
struct OptionFlag {
  std::string option;
  std::string flag;
};

/// While alive, adds to each diagnostic that names one of `flags`' library
/// options (a pass option such as `keep-op-types`) a note naming the flag
/// of `tool` that sets it: library code names its own options, which a C++
/// or Python caller set, and each tool names its flags. Register it after
/// the handlers that print, so that it is asked first; it prints nothing.
class OptionFlagNotes : public mlir::ScopedDiagnosticHandler {
public:
  OptionFlagNotes(mlir::MLIRContext *context, std::string tool,
                  std::vector<OptionFlag> flags);

private:
  std::string tool;
  std::vector<OptionFlag> flags;
};

} // namespace kiln

#endif // KILN_COMPILER_DIAGNOSTICS_H
