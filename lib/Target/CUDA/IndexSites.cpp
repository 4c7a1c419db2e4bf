//===- IndexSites.cpp - the gathers whose indices a run checks ------------===//

#include "IndexSites.h"

#include "EmitterSupport.h"
#include "KernelSizes.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace kiln {

/// Whether `op` is a gather a kernel computes: a site when indices are
/// checked.
static bool isSite(Operation *op) {
  return isa<GatherOp, GatherElementsOp, CheckRangeOp>(op) &&
         op->getParentOfType<KernelOp>();
}

void numberIndexSites(func::FuncOp func) {
  uint32_t count = 0;
  func.walk([&](Operation *op) {
    if (isSite(op))
      op->setAttr(
          kIndexSiteAttr,
          IntegerAttr::get(IntegerType::get(op->getContext(), 32), ++count));
  });
}

FailureOr<std::vector<std::string>> describeIndexSites(func::FuncOp func) {
  std::vector<std::string> sites;
  WalkResult walk = func.walk([&](Operation *op) {
    if (!isSite(op))
      return WalkResult::advance();
    auto number = op->getAttrOfType<IntegerAttr>(kIndexSiteAttr);
    if (!number || number.getInt() != static_cast<int64_t>(sites.size()) + 1) {
      op->emitOpError("has no index site numbered in order (kiln-to-cuda "
                      "numbers them before emission)");
      return WalkResult::interrupt();
    }
    std::string site;
    llvm::raw_string_ostream os(site);
    SmallVector<StringRef> nodes = onnxNodeNames(op->getLoc());
    os << "ONNX node ";
    if (nodes.empty())
      os << "(unnamed)";
    else
      os << "'" << nodes.front() << "'";
    if (auto check = dyn_cast<CheckRangeOp>(op)) {
      os << " (" << check.getWhat() << ")";
      sites.push_back(std::move(site));
      return WalkResult::advance();
    }
    int64_t axis = isa<GatherOp>(op) ? cast<GatherOp>(op).getAxis()
                                     : cast<GatherElementsOp>(op).getAxis();
    Size extent = sizesOf(op->getOperand(0))[axis];
    os << " (" << op->getName().stripDialect() << " over a dim of "
       << extent.getExpr().str() << ")";
    sites.push_back(std::move(site));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return sites;
}

} // namespace kiln
