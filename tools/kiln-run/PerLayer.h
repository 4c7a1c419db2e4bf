//===- PerLayer.h - kiln-run --per-layer ------------------------*- C++ -*-===//
//
// --per-layer: every tensor the kernels of a debugging build wrote, compared
// with the fp32 reference's tensor of the same name, in the order the model
// computes them; the first beyond the tolerance is named with its ONNX node.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_PERLAYER_H
#define KILN_TOOLS_KILN_RUN_PERLAYER_H

#include "kiln/ConstantData/HostTensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace kilnrun {

/// The reference's tensors for --per-layer, by ONNX tensor name.
struct ReferenceTensors {
  llvm::StringMap<kiln::HostTensor> values;
  llvm::StringMap<std::string> nodes;
};

/// Exposes every named tensor of the imported `func` as an output, runs the
/// reference interpreter, and returns the model's own outputs in `outputs`
/// and the rest by name.
mlir::FailureOr<ReferenceTensors>
interpretAllTensors(mlir::func::FuncOp func,
                    llvm::ArrayRef<kiln::HostTensor> inputs, size_t numOutputs,
                    llvm::SmallVector<kiln::HostTensor> &outputs);

/// Prints the error of each tensor the compiled model kept, in the order it
/// computed them, and names the first beyond the tolerance.
void printPerLayer(llvm::ArrayRef<std::string> names,
                   llvm::ArrayRef<kiln::HostTensor> got,
                   const ReferenceTensors &reference);

} // namespace kilnrun

#endif // KILN_TOOLS_KILN_RUN_PERLAYER_H
