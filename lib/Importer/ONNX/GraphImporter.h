//===- GraphImporter.h - state of one ONNX graph import ---------*- C++ -*-===//

#ifndef KILN_LIB_IMPORTER_ONNX_GRAPHIMPORTER_H
#define KILN_LIB_IMPORTER_ONNX_GRAPHIMPORTER_H

#include "SymbolicFolding.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "kiln/Importer/ONNX/ExternalData.h"
#include "kiln/Importer/ONNX/Importer.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/onnx_pb.h>

#include <functional>

namespace kiln {

/// Imports one ONNX graph into a func.func, node by node in graph order.
class GraphImporter {
public:
  GraphImporter(mlir::ModuleOp module, llvm::StringRef filename,
                const onnx::ModelProto &model, const ImportOptions &options);

  /// Builds `@main`; emits diagnostics and returns failure on any problem.
  mlir::LogicalResult importGraph();

  //===--------------------------------------------------------------------===//
  // Used by the op converters (ConvertCoreOps.cpp)
  //===--------------------------------------------------------------------===//

  mlir::OpBuilder &builder() { return b; }
  /// The location of `node`: its name inside the model file's location.
  mlir::Location nodeLoc(const onnx::NodeProto &node);
  /// The opset of the default domain the model imports.
  int64_t opset() const { return defaultOpset; }
  /// The value of input `i` of `node`, or null when absent or empty.
  mlir::Value input(const onnx::NodeProto &node, int i);
  /// Binds output `i` of `node` to `value`, folded to a constant first when
  /// it is computed from constants and small: integers up to 65536 elements,
  /// floats up to 64, or up to 2^20 from elementwise math and concats that
  /// are no larger than their operands (see foldConstant).
  void setOutput(const onnx::NodeProto &node, int i, mlir::Value value);
  /// The value bound to `name` (null when none); subgraph converters (Loop)
  /// bind their bodies' inputs and restore the outer bindings afterwards.
  mlir::Value lookupValue(llvm::StringRef name) const {
    return values.lookup(name);
  }
  void bindValue(llvm::StringRef name, mlir::Value value) {
    values[name] = value;
  }
  /// Counts one converted node (Loop bodies once per unrolled iteration);
  /// fails with an error at the node past kMaxNodes, so that nested Loops
  /// cannot unroll a model without bound.
  mlir::LogicalResult countNode(const onnx::NodeProto &node);
  /// The integers of a constant value (e.g. Reshape's shape), or failure.
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(mlir::Value value);
  /// The sizes a shape value holds (a constant, or a `kiln.sizes` computed
  /// from symbolic dims), or failure.
  mlir::FailureOr<SymbolicShape> symbolicInts(mlir::Value value);
  /// The range of each symbolic dim (`--dim NAME=MIN:MAX`).
  DimRangeFn dimRanges() const { return rangeLookup; }
  /// Converts a tensor of the model (an initializer, a Constant's value),
  /// reading external data from beside the model file.
  mlir::FailureOr<mlir::ElementsAttr>
  convertTensor(mlir::Location loc, const onnx::TensorProto &tensor);
  /// A scalar (rank 0) constant of `elementType`.
  mlir::Value scalar(mlir::Location loc, mlir::Type elementType, double value);
  /// How many times the model's graph names `name` as an output.
  int64_t graphOutputCount(llvm::StringRef name) const;
  /// How many node inputs read `name`, in the graph and its subgraphs.
  int64_t readerCount(llvm::StringRef name) const;
  /// How the caller names the import options, for messages about them.
  const ImportOptionNames &optionNames() const { return options.names; }

  /// `value` as a constant when the op defining it computes from
  /// constants (within the caps FoldConstants.cpp sets), else `value`. Each
  /// node's outputs fold so; a converter folds a value in the middle of its
  /// node with it (a node's output that keeps a graph input stops at that
  /// operand, before folding the ones after it).
  mlir::Value foldConstant(mlir::Value value, int depth = 0);

private:
  /// Folds the op defining `value` over its `operands`' sizes (some from
  /// `kiln.sizes`); returns `value` when it does not fold.
  mlir::Value foldSymbolicSizes(mlir::Value value,
                                llvm::ArrayRef<mlir::Value> operands);

public:
  /// A `kiln.sizes` of `type` holding `sizes`, or a constant when they all
  /// are.
  mlir::Value materializeSizes(mlir::Location loc, mlir::Type type,
                               const SymbolicTensor &sizes);

private:
  mlir::FailureOr<llvm::SmallVector<int>> topologicalOrder();
  mlir::LogicalResult checkStructure();
  mlir::LogicalResult checkSupported();
  mlir::LogicalResult importInputs(llvm::SmallVectorImpl<mlir::Type> &types,
                                   llvm::SmallVectorImpl<std::string> &names);
  mlir::LogicalResult importInitializers();

  mlir::ModuleOp module;
  mlir::OpBuilder b;
  mlir::Location fileLoc;
  const onnx::ModelProto &model;
  const ImportOptions &options;
  ExternalData externalData;
  int64_t defaultOpset = 0;
  llvm::StringMap<mlir::Value> values;
  /// Constant nodes whose output a later Constant node defines again, and
  /// initializers a Constant node defines again: left out, as onnxruntime
  /// keeps the latest definition of a constant (checkStructure).
  llvm::DenseSet<int> shadowedNodes;
  llvm::StringSet<> shadowedInitializers;
  /// Set when folding a constant op failed with a diagnostic.
  bool foldFailed = false;
  /// Bytes of float tables folded so far (foldConstant's budget).
  int64_t foldedTableBytes = 0;
  /// The symbolic dims' ranges: `options.dimRanges`, and the names given
  /// `options.unboundDimRange`.
  llvm::StringMap<std::pair<int64_t, int64_t>> ranges;
  /// Looks up `ranges`; held here so that dimRanges() can lend it.
  std::function<std::optional<std::pair<int64_t, int64_t>>(llvm::StringRef)>
      rangeLookup;
  /// Nodes converted so far, unrolled Loop bodies included.
  int64_t convertedNodes = 0;
};

/// Converts one node whose op is supported; emits errors on failure
/// (OpRegistry.cpp).
mlir::LogicalResult convertNode(GraphImporter &importer,
                                const onnx::NodeProto &node);

/// True when the node's op (type and domain) has a converter.
bool isSupportedOp(const onnx::NodeProto &node);

/// True for the default ONNX domain ("" or "ai.onnx").
bool isDefaultDomain(llvm::StringRef domain);

/// The domain of ONNX Runtime's contrib ops.
inline constexpr llvm::StringLiteral kMicrosoftDomain = "com.microsoft";

/// Reads an attribute of `node` by name.
const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                          llvm::StringRef name);

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_GRAPHIMPORTER_H
