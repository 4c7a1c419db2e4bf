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

/// The graph inputs in order: from files where given, random otherwise.
mlir::FailureOr<llvm::SmallVector<kiln::HostTensor>> gatherInputs(
    llvm::ArrayRef<std::pair<std::string, mlir::RankedTensorType>> signature,
    llvm::StringMap<kiln::HostTensor> &given, std::mt19937 &rng);

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
