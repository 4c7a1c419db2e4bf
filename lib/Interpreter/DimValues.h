//===- DimValues.h - Values of the named dims during a run -----*- C++ -*-===//
//
// A function with symbolic dims (`#kiln.dims`) learns the names' values from
// its inputs' shapes when it starts; every op whose result type is symbolic
// then reads its concrete shape through them. The values of the function
// being interpreted on this thread are held here, so that the op executors
// keep their signatures.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_INTERPRETER_DIMVALUES_H
#define KILN_LIB_INTERPRETER_DIMVALUES_H

#include "kiln/ConstantData/HostTensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"

namespace kiln {

/// Learns the values of `func`'s named dims from its inputs' shapes: a dim
/// whose size is one name gives the name's value, and a size over several
/// names gives the one still unknown when the others are known and it
/// occurs linearly (`past + sequence`). Fails with a diagnostic at `func`
/// when two inputs disagree on a name, when a size does not evaluate to the
/// input's dim, or when a value is outside the name's range
/// (`kiln.dim_ranges`).
mlir::LogicalResult learnDimValues(mlir::func::FuncOp func,
                                   llvm::ArrayRef<HostTensor> inputs,
                                   llvm::StringMap<int64_t> &values);

/// Makes `values` the dims' values on this thread for its lifetime.
class ScopedDimValues {
public:
  explicit ScopedDimValues(const llvm::StringMap<int64_t> &values);
  ~ScopedDimValues();
  ScopedDimValues(const ScopedDimValues &) = delete;
  ScopedDimValues &operator=(const ScopedDimValues &) = delete;

private:
  const llvm::StringMap<int64_t> *previous;
};

/// `type` with its symbolic dims replaced by their values on this thread;
/// `type` itself when static. Fails with a diagnostic at `op` when a size
/// cannot be evaluated (a name without value, a negative size).
mlir::FailureOr<mlir::RankedTensorType> concreteType(mlir::Operation *op,
                                                     mlir::Type type);

/// The shape of `type` for the dims' values on this thread (`type`'s own
/// when static); nothing when a size cannot be evaluated.
std::optional<llvm::SmallVector<int64_t>>
concreteShapeOnThread(mlir::RankedTensorType type);

/// The value of the size `text` (a DimExpr's canonical text) on this thread.
mlir::FailureOr<int64_t> evaluateSize(mlir::Operation *op,
                                      llvm::StringRef text);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_DIMVALUES_H
