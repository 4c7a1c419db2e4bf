//===- ExposeTensors.cpp - return every named tensor in memory ------------===//
//
// The per-layer comparison reads tensors back as extra graph outputs rather
// than through a hook in the runtime: the artifact stays an ordinary one, runs
// on every backend and through the C ABI, and the planner keeps the exposed
// tensors alive to the end because outputs are never overwritten.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXPOSETENSORSPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct KilnExposeTensorsPass
    : public kiln::impl::KilnExposeTensorsPassBase<KilnExposeTensorsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
    if (!ret)
      return;
    llvm::DenseSet<Value> returned(ret.operand_begin(), ret.operand_end());
    llvm::StringSet<> names;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr))
        names.insert(name.getValue());

    SmallVector<Value> values;
    SmallVector<StringAttr> valueNames;
    auto expose = [&](Value value, StringAttr name) {
      if (!name || returned.contains(value) ||
          !names.insert(name.getValue()).second)
        return;
      values.push_back(value);
      valueNames.push_back(name);
    };
    for (Operation &op : body.without_terminator()) {
      if (isa<ConstantOp, ReshapeOp>(op))
        continue;
      if (auto kernel = dyn_cast<KernelOp>(op)) {
        for (auto [result, yielded] :
             llvm::zip(kernel.getResults(), kernel.getYield().getValues()))
          expose(result, getTensorName(yielded));
        continue;
      }
      for (Value result : op.getResults())
        expose(result, getTensorName(result));
    }
    if (values.empty())
      return;

    OpBuilder b(ret);
    SmallVector<unsigned> indices(values.size(), func.getNumResults());
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    for (auto [value, name] : llvm::zip(values, valueNames)) {
      types.push_back(value.getType());
      attrs.push_back(b.getDictionaryAttr(b.getNamedAttr(kNameAttr, name)));
    }
    if (failed(func.insertResults(indices, types, attrs)))
      return signalPassFailure();
    ret.getOperandsMutable().append(values);
  }
};

} // namespace
