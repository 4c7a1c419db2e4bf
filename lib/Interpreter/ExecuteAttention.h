//===- ExecuteAttention.h - kiln.attention on the host ----------*- C++ -*-===//

#ifndef KILN_LIB_INTERPRETER_EXECUTEATTENTION_H
#define KILN_LIB_INTERPRETER_EXECUTEATTENTION_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"

namespace kiln {

/// softmax(scale * q.k^T + mask).v in double; `mask` may be null.
mlir::FailureOr<HostTensor> executeAttention(AttentionOp op,
                                             const HostTensor &query,
                                             const HostTensor &key,
                                             const HostTensor &value,
                                             const HostTensor *mask);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_EXECUTEATTENTION_H
