//===- ExecuteNormalization.h - layer_norm, rms_norm on the host *- C++ -*-===//

#ifndef KILN_LIB_INTERPRETER_EXECUTENORMALIZATION_H
#define KILN_LIB_INTERPRETER_EXECUTENORMALIZATION_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"

namespace kiln {

/// `(x - mean) / sqrt(var + epsilon) * scale + bias` over the dims from
/// `axis` on, with the statistics in double (two passes: the mean, then the
/// variance around it). `bias` may be null.
mlir::FailureOr<HostTensor> executeLayerNorm(LayerNormOp op,
                                             const HostTensor &input,
                                             const HostTensor &scale,
                                             const HostTensor *bias);

/// `x / sqrt(mean(x^2) + epsilon) * scale` over the dims from `axis` on,
/// in double, rounded once.
mlir::FailureOr<HostTensor>
executeRmsNorm(RmsNormOp op, const HostTensor &input, const HostTensor &scale);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_EXECUTENORMALIZATION_H
