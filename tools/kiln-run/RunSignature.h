//===- RunSignature.h - what a run takes and gives --------------*- C++ -*-===//
//
// A model's inputs (names and types) and output names, its symbolic dims
// set to the values a run takes, and the input tensors of the run: from
// files where given, random otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_RUNSIGNATURE_H
#define KILN_TOOLS_KILN_RUN_RUNSIGNATURE_H

#include "kiln/ConstantData/HostTensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <random>
#include <string>
#include <utility>

namespace kilnrun {

/// A model's inputs in order, with their types, and its output names.
struct Signature {
  llvm::SmallVector<std::pair<std::string, mlir::RankedTensorType>> inputs;
  llvm::SmallVector<std::string> outputNames;
};

/// By input name, the exclusive upper bound of the random integers an
/// integer input takes where the graph says one: the rows of the smallest
/// table a gather indexes with it (its values followed through reshapes,
/// casts and other moves), so that a model's first run does not fail its
/// own index check.
llvm::StringMap<int64_t> integerInputBounds(mlir::func::FuncOp func);

/// The graph inputs in order: from files where given, random otherwise:
/// integers within `bounds` (by name) where it has them, 0 or 1 for an input
/// whose name says it is a mask, else in randomTensor's [0, 4).
mlir::FailureOr<llvm::SmallVector<kiln::HostTensor>> gatherInputs(
    llvm::ArrayRef<std::pair<std::string, mlir::RankedTensorType>> signature,
    llvm::StringMap<kiln::HostTensor> &given, std::mt19937 &rng,
    const llvm::StringMap<int64_t> &bounds = {});

/// `t` with elements of type `elementType`, converted through double when
/// both are floats of different widths (otherwise `t` as it is).
kiln::HostTensor inElementType(const kiln::HostTensor &t,
                               mlir::Type elementType);

/// A function's concrete signature and the inputs it runs on: from `given`
/// where named, random otherwise.
struct FunctionRun {
  Signature signature;
  llvm::SmallVector<kiln::HostTensor> inputs;
};

/// The FunctionRun of `func`: its symbolic dims at --run-dim, else what the
/// inputs from files say, else the top of each dim's range.
mlir::FailureOr<FunctionRun>
prepareRun(mlir::func::FuncOp func, llvm::StringMap<kiln::HostTensor> &given,
           std::mt19937 &rng);

} // namespace kilnrun

#endif // KILN_TOOLS_KILN_RUN_RUNSIGNATURE_H
