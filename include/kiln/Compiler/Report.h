//===- Report.h - what a compilation produced, for kilnc --report -*- C++ -*-===//
//
// Every launch and library call of a plan with the ONNX nodes it covers, and
// the memory plan's sizes; as text for people and as JSON for tools.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_REPORT_H
#define KILN_COMPILER_REPORT_H

#include "kiln/Target/CUDA/EmitPlan.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {

/// The inputs of a report.
struct CompileReport {
  /// The model file the plan was compiled from.
  std::string model;
  /// The largest sum of buffer sizes live at once (kiln-plan-memory's lower
  /// bound on the arena); -1 when unknown.
  int64_t liveLowerBoundBytes = -1;
  /// One entry per step of the artifact.
  StepOrigins origins;
};

/// The live-set lower bound kiln-plan-memory recorded on the module's
/// function, or -1.
int64_t liveLowerBoundOf(mlir::ModuleOp module);

/// Writes the report as text: one line per launch, then the memory summary.
void printReportText(const rt::Artifact &artifact, const CompileReport &report,
                     llvm::raw_ostream &os);

/// Writes the report as JSON: `launches` (each with `kind`, `name` and
/// `onnx_nodes`), `peak_arena_bytes`, `live_lower_bound_bytes`,
/// `weight_bytes` and counts.
void printReportJson(const rt::Artifact &artifact, const CompileReport &report,
                     llvm::raw_ostream &os);

} // namespace kiln

#endif // KILN_COMPILER_REPORT_H
