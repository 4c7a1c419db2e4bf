//===- ExecuteIndexing.h - concat, slice, gather, expand on the host -*- C++ -*-===//

#ifndef KILN_LIB_INTERPRETER_EXECUTEINDEXING_H
#define KILN_LIB_INTERPRETER_EXECUTEINDEXING_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"

namespace kiln {

mlir::FailureOr<HostTensor>
executeConcat(ConcatOp op, llvm::ArrayRef<const HostTensor *> inputs);
mlir::FailureOr<HostTensor> executeSlice(SliceOp op, const HostTensor &input);
mlir::FailureOr<HostTensor> executeUpdateSlice(UpdateSliceOp op,
                                               const HostTensor &dest,
                                               const HostTensor &update,
                                               const HostTensor *starts);
mlir::FailureOr<HostTensor> executeGather(GatherOp op, const HostTensor &data,
                                          const HostTensor &indices);
mlir::FailureOr<HostTensor> executeGatherElements(GatherElementsOp op,
                                                  const HostTensor &data,
                                                  const HostTensor &indices);
mlir::FailureOr<HostTensor> executeExpand(ExpandOp op, const HostTensor &input);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_EXECUTEINDEXING_H
