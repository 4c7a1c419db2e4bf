//===- PerLayer.cpp - kiln-run --per-layer --------------------------------===//

#include "PerLayer.h"
#include "RunOptions.h"
#include "RunResults.h"

#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/Interpreter/Interpreter.h"
#include "kiln/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using kiln::HostTensor;

namespace kilnrun {

/// The ONNX node `value` came from (the first its location names), or "?".
static std::string onnxNodeOf(Value value) {
  auto names = kiln::onnxNodeNames(value.getLoc());
  return names.empty() ? "?" : names.front().str();
}

FailureOr<ReferenceTensors>
interpretAllTensors(func::FuncOp func, ArrayRef<HostTensor> inputs,
                    size_t numOutputs, SmallVector<HostTensor> &outputs) {
  PassManager pm(func.getContext(), func::FuncOp::getOperationName());
  pm.addPass(kiln::createKilnExposeTensorsPass());
  if (failed(pm.run(func)))
    return failure();
  auto all = kiln::interpretFunction(func, inputs);
  if (failed(all))
    return failure();
  ReferenceTensors reference;
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, tensor] : llvm::enumerate(*all)) {
    if (i < numOutputs) {
      outputs.push_back(std::move(tensor));
      continue;
    }
    auto name = func.getResultAttrOfType<StringAttr>(i, kiln::kNameAttr);
    reference.nodes[name.getValue()] = onnxNodeOf(ret.getOperand(i));
    reference.values[name.getValue()] = std::move(tensor);
  }
  return reference;
}

void printPerLayer(ArrayRef<std::string> names, ArrayRef<HostTensor> got,
                   const ReferenceTensors &reference) {
  llvm::outs() << "per-layer: " << names.size()
               << " tensors in memory, in the order the model computes them\n";
  std::string first;
  for (auto [name, g] : llvm::zip(names, got)) {
    auto it = reference.values.find(name);
    if (it == reference.values.end() ||
        it->second.numElements() != g.numElements()) {
      llvm::outs() << "layer " << name << ": no reference tensor of its size\n";
      continue;
    }
    std::string node = reference.nodes.lookup(name);
    kiln::TensorError e = kiln::compareTensors(g, it->second, tolerance());
    printError("layer " + name + " (node " + node + ")", e, g, it->second);
    if (!e.within && first.empty())
      first = "'" + name + "' from ONNX node '" + node + "'";
  }
  if (first.empty())
    llvm::outs() << "per-layer: every tensor is within " << tolerance().text()
                 << "\n";
  else
    llvm::outs() << "per-layer: first tensor beyond " << tolerance().text()
                 << ": " << first << "\n";
}

} // namespace kilnrun
