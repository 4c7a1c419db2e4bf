//===- RunResults.h - a run's tensors written and compared ------*- C++ -*-===//
//
// What kiln-run does with a run's tensors: writes them under --output-dir as
// `.npy` files and prints how far each is from its reference (the shared
// comparator of kiln/ConstantData/TensorComparison.h, at the tolerance the
// flags set).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_RUNRESULTS_H
#define KILN_TOOLS_KILN_RUN_RUNRESULTS_H

#include "kiln/ConstantData/TensorComparison.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace kilnrun {

/// Writes tensors as DIR/FOLDER/NAME.npy (DIR/NAME.npy without a folder)
/// under --output-dir; does nothing without it.
mlir::LogicalResult writeTensors(llvm::ArrayRef<std::string> names,
                                 llvm::ArrayRef<kiln::HostTensor> tensors,
                                 llvm::StringRef folder = "");

/// Prints `label: max_abs .. max_rel .. rel_l2 ..` and, outside the
/// tolerance, why (with the first offending element).
void printError(const llvm::Twine &label, const kiln::TensorError &e,
                const kiln::HostTensor &got, const kiln::HostTensor &want);

/// Prints the error of each output and returns whether all are within the
/// tolerance.
bool printComparison(llvm::ArrayRef<std::string> names,
                     llvm::ArrayRef<kiln::HostTensor> got,
                     llvm::ArrayRef<kiln::HostTensor> want);

} // namespace kilnrun

#endif // KILN_TOOLS_KILN_RUN_RUNRESULTS_H
