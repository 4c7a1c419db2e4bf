//===- ExecuteMatmul.h - kiln.matmul on the host ----------------*- C++ -*-===//

#ifndef KILN_LIB_INTERPRETER_EXECUTEMATMUL_H
#define KILN_LIB_INTERPRETER_EXECUTEMATMUL_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"

namespace kiln {

/// Batched matrix product; batch dims broadcast, each transpose flag swaps
/// its operand's last two dims. Floats accumulate in double, integers in
/// wrapping int64_t.
mlir::FailureOr<HostTensor> executeMatmul(MatmulOp op, const HostTensor &lhs,
                                          const HostTensor &rhs);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_EXECUTEMATMUL_H
