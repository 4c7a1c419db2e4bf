//===- ExecuteShape.h - transpose and reshape on the host -------*- C++ -*-===//

#ifndef KILN_LIB_INTERPRETER_EXECUTESHAPE_H
#define KILN_LIB_INTERPRETER_EXECUTESHAPE_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"

namespace kiln {

/// Result dim `i` is input dim `permutation[i]`; elements move as raw bytes.
mlir::FailureOr<HostTensor> executeTranspose(TransposeOp op,
                                             const HostTensor &input);

/// Same bytes under the result shape.
mlir::FailureOr<HostTensor> executeReshape(ReshapeOp op,
                                           const HostTensor &input);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_EXECUTESHAPE_H
