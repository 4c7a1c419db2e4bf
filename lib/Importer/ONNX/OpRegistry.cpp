//===- OpRegistry.cpp - which ONNX ops Kiln converts, and how -------------===//

#include "OpRegistry.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace kiln {

/// The key of an op: its domain ("" for the default one), a NUL, its type.
static std::string opKey(StringRef domain, StringRef opType) {
  return (isDefaultDomain(domain) ? StringRef() : domain).str() + '\0' +
         opType.str();
}

/// Every family's ops, built once.
static const llvm::StringMap<ConvertNodeFn> &registry() {
  static const llvm::StringMap<ConvertNodeFn> table = [] {
    llvm::StringMap<ConvertNodeFn> all;
    for (auto family :
         {getCoreConversions, getShapeConversions, getElementwiseConversions,
          getReductionConversions, getDataMovementConversions,
          getConvConversions, getEinsumConversions, getLoopConversions,
          getAttentionConversions, getGroupQueryAttentionConversions,
          getMicrosoftAttentionConversions, getFusedConversions,
          getRotaryEmbeddingConversions})
      for (const OpConversion &op : family()) {
        bool added = all.try_emplace(opKey(op.domain, op.opType), op.convert)
                         .second;
        assert(added && "an op registered by two families");
        (void)added;
      }
    return all;
  }();
  return table;
}

/// The converter of `node`'s op, or null.
static ConvertNodeFn lookup(const onnx::NodeProto &node) {
  return registry().lookup(opKey(node.domain(), node.op_type()));
}

bool isDefaultDomain(StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

bool isSupportedOp(const onnx::NodeProto &node) {
  return lookup(node) != nullptr;
}

LogicalResult convertNode(GraphImporter &importer, const onnx::NodeProto &node) {
  if (failed(importer.countNode(node)))
    return failure();
  ConvertNodeFn convert = lookup(node);
  if (!convert)
    return emitError(importer.nodeLoc(node))
           << node.op_type() << ": no converter";
  return convert(importer, node);
}

} // namespace kiln
