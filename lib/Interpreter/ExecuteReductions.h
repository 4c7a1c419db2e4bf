//===- ExecuteReductions.h - reductions, scans, top-k -*- C++ -*-===//

#ifndef KILN_LIB_INTERPRETER_EXECUTEREDUCTIONS_H
#define KILN_LIB_INTERPRETER_EXECUTEREDUCTIONS_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"

namespace kiln {

/// kiln.reduce_sum, _mean, _max, _min and _prod.
mlir::FailureOr<HostTensor> executeReduce(mlir::Operation *op,
                                          const HostTensor &input);
/// kiln.arg_max and kiln.arg_min.
mlir::FailureOr<HostTensor> executeArgReduce(mlir::Operation *op,
                                             const HostTensor &input);
/// kiln.cumsum.
mlir::FailureOr<HostTensor> executeCumSum(CumSumOp op, const HostTensor &input);
/// kiln.top_k.
mlir::FailureOr<HostTensor> executeTopK(TopKOp op, const HostTensor &input);
/// kiln.softmax and kiln.log_softmax.
mlir::FailureOr<HostTensor> executeSoftmax(mlir::Operation *op,
                                           const HostTensor &input);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_EXECUTEREDUCTIONS_H
