//===- TensorNames.cpp - ONNX node and tensor names on kiln IR ------------===//

#include "kiln/Dialect/Kiln/TensorNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kiln {

SmallVector<StringRef> onnxNodeNames(Location loc) {
  SmallVector<StringRef> names;
  loc->walk([&](Location inner) {
    // Names are uniqued StringAttrs: the references live with the context.
    if (auto named = dyn_cast<NameLoc>(inner))
      if (!llvm::is_contained(names, named.getName().getValue()))
        names.push_back(named.getName().getValue());
    return WalkResult::advance();
  });
  return names;
}

StringAttr getTensorName(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return {};
  auto names = result.getOwner()->getAttrOfType<ArrayAttr>(kTensorNamesAttr);
  if (!names || result.getResultNumber() >= names.size())
    return {};
  auto name = dyn_cast<StringAttr>(names[result.getResultNumber()]);
  return name && !name.empty() ? name : StringAttr();
}

void setTensorName(OpResult result, StringAttr name) {
  if (!name || name.empty() || getTensorName(result))
    return;
  Operation *op = result.getOwner();
  Builder b(op->getContext());
  SmallVector<Attribute> names(op->getNumResults(), b.getStringAttr(""));
  if (auto old = op->getAttrOfType<ArrayAttr>(kTensorNamesAttr))
    for (auto [i, attr] : llvm::enumerate(old.getValue()))
      if (i < names.size())
        names[i] = attr;
  names[result.getResultNumber()] = name;
  op->setAttr(kTensorNamesAttr, b.getArrayAttr(names));
}

void copyTensorNames(Operation *from, Operation *to) {
  for (auto [source, target] : llvm::zip(from->getResults(), to->getResults()))
    setTensorName(target, getTensorName(source));
}

} // namespace kiln
