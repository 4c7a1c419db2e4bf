//===- ComparePipeline.h - kiln-run --compare-pipeline ----------*- C++ -*-===//
//
// The semantics check of every pass: the reference interpreter runs each
// function's IR before and after the Kiln pipeline on the same inputs, and
// the two must agree within the tolerance.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_COMPAREPIPELINE_H
#define KILN_TOOLS_KILN_RUN_COMPAREPIPELINE_H

#include "RunSignature.h"

#include "kiln/Compiler/Compiler.h"
#include "mlir/IR/BuiltinOps.h"

namespace kilnrun {

/// Runs the pipeline of `options` on a copy of `module` and compares every
/// function before and after: the first function on `first` (its prepared
/// run), the others on random inputs from `rng`. Returns the exit status.
int comparePipelineSemantics(mlir::ModuleOp module, const FunctionRun &first,
                             const kiln::CompileOptions &options,
                             std::mt19937 &rng);

} // namespace kilnrun

#endif // KILN_TOOLS_KILN_RUN_COMPAREPIPELINE_H
