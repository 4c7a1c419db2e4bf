//===- ExecuteQuantized.h - quantized weights on the host -------*- C++ -*-===//

#ifndef KILN_LIB_INTERPRETER_EXECUTEQUANTIZED_H
#define KILN_LIB_INTERPRETER_EXECUTEQUANTIZED_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"

namespace kiln {

/// kiln.dequantize: the packed weights' floats, as the op defines them.
/// `zeroPoints` is null when the op has none.
mlir::FailureOr<HostTensor> executeDequantize(DequantizeOp op,
                                              const HostTensor &packed,
                                              const HostTensor &scales,
                                              const HostTensor *zeroPoints);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_EXECUTEQUANTIZED_H
