//===- HostGemm.h - The host backend's stand-in for cuBLASLt ----*- C++ -*-===//

#ifndef KILN_RUNTIME_LIB_HOSTGEMM_H
#define KILN_RUNTIME_LIB_HOSTGEMM_H

#include "kiln/runtime/ArtifactFormat.h"

namespace kiln {
namespace rt {
namespace host {

/// Runs `step` on the CPU as cuBLASLt would on the GPU: the same transposes,
/// batch strides, alpha and beta, products accumulated in fp32 (fp64 for
/// float64 matrices), then the bias and the activation of the step's
/// epilogue, and rounded once to the element type. `residual` is what beta
/// scales (C itself when the step has no residual); it is not read when beta
/// is 0. `bias` is null when the step has none.
void runGemm(const MatmulStep &step, const void *a, const void *b, void *c,
             const void *bias, const void *residual);

} // namespace host
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_HOSTGEMM_H
