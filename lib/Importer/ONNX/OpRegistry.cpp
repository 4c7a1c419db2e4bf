//===- OpRegistry.cpp - which ONNX ops Kiln converts, and how -------------===//

#include "OpRegistry.h"

#include "kiln/Importer/ONNX/TensorProto.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

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
         {getCoreConversions, getShapeConversions, getViewConversions,
          getIndexingConversions, getElementwiseConversions,
          getReductionConversions, getDataMovementConversions,
          getScatterConversions, getConvConversions, getEinsumConversions,
          getLoopConversions, getAttentionConversions,
          getGroupQueryAttentionConversions, getMicrosoftAttentionConversions,
          getFusedConversions, getRotaryEmbeddingConversions,
          getQuantizedConversions, getQLinearConversions})
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

/// The ops whose converters carry symbolic dims (`#kiln.dims`) through:
/// they read shapes as DimExprs, or build their results with the shape
/// rules. Any other op meeting a symbolic input is refused by name rather
/// than given a shape it cannot compute.
static bool takesSymbolicDims(const onnx::NodeProto &node) {
  static const llvm::StringSet<> ready = {
      // Elementwise, comparisons, casts.
      "Add", "Sub", "Mul", "Div", "Pow", "Neg", "Sqrt", "Erf", "Tanh", "Exp",
      "Relu", "Sigmoid", "Cast", "CastLike", "Reciprocal", "Log", "Abs",
      "Floor", "Ceil", "Round", "Sin", "Cos", "Softsign", "Sign", "Not",
      "IsNaN", "IsInf", "Gelu", "Sum", "Max", "Min", "Mod", "And", "Or", "Xor",
      "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Where",
      "Clip", "Dropout", "Identity", "Constant",
      // Linear algebra, normalization, reductions.
      "MatMul", "Gemm", "LayerNormalization", "RMSNormalization", "Softmax",
      "LogSoftmax", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
      "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
      "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum", "GlobalAveragePool",
      "GlobalMaxPool", "TopK",
      // Shapes and data movement.
      "Shape", "Size", "Reshape", "Transpose", "Unsqueeze", "Squeeze",
      "Flatten", "Concat", "Slice", "Split", "Gather", "GatherElements",
      "GatherND", "ScatterND", "Expand", "ConstantOfShape", "Range", "Trilu",
      "Tile", "Conv", "ConvInteger", "QLinearConv",
      // onnxruntime's fused forms, in the default domain; RotaryEmbedding
      // (opset 23).
      "SimplifiedLayerNormalization", "RotaryEmbedding",
      // Per-tensor Q/DQ (per axis and in blocks refuse symbolic dims).
      "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
      "MatMulInteger", "QLinearMatMul"};
  static const llvm::StringSet<> readyMicrosoft = {
      "SkipLayerNormalization",
      "SkipSimplifiedLayerNormalization",
      "GroupQueryAttention",
      "Gelu",
      "BiasGelu",
      "FastGelu",
      "QuickGelu",
      "RotaryEmbedding",
      "EmbedLayerNormalization",
      "Attention",
      "MultiHeadAttention",
      "MatMulNBits",
      "GatherBlockQuantized",
      "QLinearAdd",
      "QLinearMul",
      "QLinearSigmoid",
      "QLinearLeakyRelu",
      "QLinearSoftmax",
      "QLinearConcat",
      "QLinearWhere",
      "QLinearGlobalAveragePool",
      "QLinearAveragePool",
      "QGemm",
      "QAttention",
      "QEmbedLayerNormalization"};
  if (node.domain() == kMicrosoftDomain)
    return readyMicrosoft.contains(node.op_type());
  return isDefaultDomain(node.domain()) && ready.contains(node.op_type());
}

LogicalResult convertNode(GraphImporter &importer, const onnx::NodeProto &node) {
  if (failed(importer.countNode(node)))
    return failure();
  ConvertNodeFn convert = lookup(node);
  if (!convert)
    return emitError(importer.nodeLoc(node))
           << node.op_type() << ": no converter";
  // 4-bit integers and float8 are stored, cast and moved, never computed
  // with: only the ops whose ONNX types take them read them.
  static const llvm::StringSet<> readsStorageOnly = {
      "QuantizeLinear", "DequantizeLinear", "Cast",      "CastLike",
      "Identity",       "Reshape",          "Transpose", "Squeeze",
      "Unsqueeze",      "Flatten",          "Shape",     "Size"};
  bool reads = node.domain() == kMicrosoftDomain
                   ? node.op_type() == "GatherBlockQuantized"
                   : readsStorageOnly.contains(node.op_type());
  for (int i = 0; !reads && i < node.input_size(); ++i) {
    Value input = importer.input(node, i);
    auto type = input ? dyn_cast<RankedTensorType>(input.getType())
                      : RankedTensorType();
    if (type && isStorageOnlyType(type.getElementType()))
      return emitError(importer.nodeLoc(node))
             << node.op_type() << ": input " << i << " ('" << node.input(i)
             << "') is " << type.getElementType()
             << ", which Kiln only casts, moves and dequantizes";
  }
  if (!takesSymbolicDims(node))
    for (int i = 0; i < node.input_size(); ++i) {
      Value input = importer.input(node, i);
      auto type = input ? dyn_cast<RankedTensorType>(input.getType())
                        : RankedTensorType();
      if (type && !type.hasStaticShape())
        return emitError(importer.nodeLoc(node))
               << node.op_type() << ": input " << i << " has symbolic dims ("
               << shapeText(type)
               << "), which Kiln does not take through this op yet; pin "
                  "them with "
               << importer.optionNames().dims << " NAME=N";
    }
  return convert(importer, node);
}

} // namespace kiln
