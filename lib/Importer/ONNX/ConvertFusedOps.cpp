//===- ConvertFusedOps.cpp - fused forms written as one node --------------===//
//
// ONNX RotaryEmbedding and the com.microsoft normalization, GELU, rotary and
// embedding ops are written out as the kiln ops they stand for.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"

using namespace mlir;

namespace kiln {

bool isSupportedFusedOp(const onnx::NodeProto &node) { return false; }

LogicalResult convertFusedNode(GraphImporter &importer,
                               const onnx::NodeProto &node) {
  return NodeConverterBase(importer, node).error() << "no converter";
}

} // namespace kiln
