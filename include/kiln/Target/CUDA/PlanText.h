//===- PlanText.h - a runtime plan as text ----------------------*- C++ -*-===//
//
// One line per buffer and per step, for `kilnc --emit=plan` and the record
// kiln-to-cuda leaves in the module under kiln-opt; stable enough to
// FileCheck.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CUDA_PLANTEXT_H
#define KILN_TARGET_CUDA_PLANTEXT_H

#include "kiln/KernelConfig/KernelConfig.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {

/// When step `step` runs, for a step guarded by the dims
/// (rt::SizeField::StepRuns): "runs if 17 - s >= 1", conditions joined by
/// "and"; empty for a step that always runs.
std::string runsIfText(const rt::Artifact &artifact, size_t step);

/// Prints `artifact`'s arena size, `weightBytes`, buffers and steps; a
/// launch of a kernel in `configs` ends with `config` and its configuration.
void printPlan(const rt::Artifact &artifact, uint64_t weightBytes,
               llvm::raw_ostream &os, const KernelConfigs *configs = nullptr);

} // namespace kiln

#endif // KILN_TARGET_CUDA_PLANTEXT_H
