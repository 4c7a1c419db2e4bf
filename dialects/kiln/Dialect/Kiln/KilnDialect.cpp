//===- KilnDialect.cpp - the kiln dialect ---------------------------------===//

#include "kiln/Dialect/Kiln/KilnDialect.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

#include "kiln/Dialect/Kiln/KilnDialect.cpp.inc"
#include "kiln/Dialect/Kiln/KilnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kiln/KilnAttrs.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Kiln/KilnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/Dialect/Kiln/KilnAttrs.cpp.inc"
      >();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
