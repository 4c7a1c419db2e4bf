//===- GraphInputs.cpp - graph inputs, initializers and dim bindings ------===//
//
// The values a graph starts from: its initializers as constants, and its
// inputs as the function's arguments, typed from the model's shapes and the
// caller's input shapes, dims and initializer overrides (ImportOptions;
// messages name them as the caller does, ImportOptionNames).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "DimBindings.h"

#include "kiln/Importer/ONNX/TensorProto.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace kiln {

LogicalResult GraphImporter::importInitializers() {
  for (const onnx::TensorProto &tensor : model.graph().initializer()) {
    // An initializer a Constant node defines again is that node's value
    // (checkStructure).
    if (options.overrideInitializers.contains(tensor.name()) ||
        shadowedInitializers.contains(tensor.name()))
      continue;
    Location loc = NameLoc::get(b.getStringAttr(tensor.name()), fileLoc);
    FailureOr<ElementsAttr> value = convertTensor(loc, tensor);
    if (failed(value))
      return failure();
    values[tensor.name()] = ConstantOp::create(b, loc, *value);
  }
  return success();
}

/// Prints a dims list for messages.
static std::string dimsStr(ArrayRef<int64_t> dims) {
  std::string s;
  for (int64_t d : dims)
    s +=
        (s.empty() ? "" : "x") + (d < 0 ? std::string("?") : std::to_string(d));
  return s.empty() ? "scalar" : s;
}

LogicalResult GraphImporter::importInputs(SmallVectorImpl<Type> &types,
                                          SmallVectorImpl<std::string> &names) {
  const onnx::GraphProto &graph = model.graph();
  llvm::StringMap<const onnx::TensorProto *> initializers;
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializers[tensor.name()] = &tensor;
  llvm::StringSet<> inputNames;
  for (const onnx::ValueInfoProto &info : graph.input())
    inputNames.insert(info.name());
  for (const auto &name : options.overrideInitializers)
    if (!initializers.count(name.getKey()) ||
        !inputNames.contains(name.getKey()))
      return emitError(fileLoc, options.names.overrideInitializers + " ")
             << name.getKey()
             << ": the model has no initializer of that name that is also a "
                "graph input";
  // Inputs pinned whole first: the names their dims carry get the pinned
  // values, for every other input that shares them.
  DimBindings bindings(options.dimValues, options.dimRanges,
                       options.dimExpressions, options.unboundDimRange,
                       options.names.dims);
  for (const onnx::ValueInfoProto &info : graph.input()) {
    auto bound = options.inputShapes.find(info.name());
    if (bound == options.inputShapes.end() ||
        !info.type().tensor_type().has_shape())
      continue;
    const auto &modelDims = info.type().tensor_type().shape().dim();
    if (modelDims.size() != static_cast<int>(bound->second.size()))
      continue; // Refused below.
    for (int axis = 0; axis < modelDims.size(); ++axis) {
      std::string name =
          DimBindings::nameOf(modelDims[axis], info.name(), axis);
      if (DimBindings::isKnown(modelDims[axis]) ||
          DimBindings::isExpression(name))
        continue;
      std::string error =
          bindings.learn(name, bound->second[axis],
                         options.names.inputShapes + " " + info.name() + "=" +
                             dimsStr(bound->second));
      if (!error.empty())
        return emitError(fileLoc, error);
    }
  }
  std::string unbound;
  for (const onnx::ValueInfoProto &info : graph.input()) {
    // Older exporters list their weights among the inputs as well: they are
    // constants unless the user keeps one as an input.
    auto initializer = initializers.find(info.name());
    bool overridden = options.overrideInitializers.contains(info.name());
    if ((initializer != initializers.end() && !overridden) ||
        options.constantInputs.count(info.name()))
      continue;
    Location loc = NameLoc::get(b.getStringAttr(info.name()), fileLoc);
    if (!info.type().has_tensor_type())
      return emitError(loc, "unsupported element type of input '")
             << info.name() << "': "
             << (info.type().has_sequence_type()   ? "a sequence"
                 : info.type().has_optional_type() ? "an optional"
                 : info.type().has_map_type()      ? "a map"
                                                   : "a non-tensor")
             << " value (Kiln compiles tensors only)";
    const onnx::TypeProto::Tensor &tensorType = info.type().tensor_type();
    Type elementType =
        convertONNXElementType(b.getContext(), tensorType.elem_type());
    if (!elementType)
      return emitError(loc, "unsupported element type ")
             << onnxElementTypeName(tensorType.elem_type()) << " of input '"
             << info.name() << "'";
    SmallVector<int64_t> shape;
    // The sizes of the dims; symbolic ones only without --input-shape.
    SymbolicShape sizes;
    auto bound = options.inputShapes.find(info.name());
    if (bound != options.inputShapes.end()) {
      shape = bound->second;
      if (tensorType.has_shape()) {
        const auto &dims = tensorType.shape().dim();
        bool fits = dims.size() == static_cast<int>(shape.size());
        for (int i = 0; fits && i < dims.size(); ++i)
          fits =
              !DimBindings::isKnown(dims[i]) || dims[i].dim_value() == shape[i];
        if (!fits)
          return emitError(loc, options.names.inputShapes + " ")
                 << info.name() << "=" << dimsStr(shape)
                 << " does not fit the model's shape for that input";
        // A dim named by an expression must agree with the names in it.
        for (int i = 0; i < dims.size(); ++i) {
          std::string name = DimBindings::nameOf(dims[i], info.name(), i);
          if (DimBindings::isKnown(dims[i]) || !DimBindings::isExpression(name))
            continue;
          DimNames missing;
          std::string error;
          std::optional<int64_t> value =
              bindings.evaluate(name, missing, error);
          if (value && *value != shape[i])
            return emitError(loc, options.names.inputShapes + " ")
                   << info.name() << "=" << dimsStr(shape) << " makes dim " << i
                   << " " << shape[i] << ", but its name '" << name
                   << "' evaluates to " << *value;
        }
      }
    } else if (overridden) {
      // An overridden weight is fed with the initializer's shape.
      shape.assign(initializer->second->dims().begin(),
                   initializer->second->dims().end());
    } else if (!tensorType.has_shape()) {
      unbound += "\n  " + info.name() + " (rank unknown)";
      continue;
    } else {
      DimNames missing;
      const auto &modelDims = tensorType.shape().dim();
      for (int axis = 0; axis < modelDims.size(); ++axis) {
        const onnx::TensorShapeProto::Dimension &dim = modelDims[axis];
        if (DimBindings::isKnown(dim) && dim.dim_value() < 0)
          return emitError(loc, "input '")
                 << info.name() << "' has a negative dim " << dim.dim_value();
        if (DimBindings::isKnown(dim)) {
          shape.push_back(dim.dim_value());
          sizes.push_back(DimExpr::constant(dim.dim_value()));
          continue;
        }
        std::string error;
        std::optional<DimExpr> size = bindings.size(
            DimBindings::nameOf(dim, info.name(), axis), missing, error);
        if (!error.empty())
          return emitError(loc, "input '") << info.name() << "': " << error;
        ranges = bindings.symbolRanges();
        std::optional<int64_t> value =
            size ? size->getConstant() : std::nullopt;
        shape.push_back(value ? *value : ShapedType::kDynamic);
        sizes.push_back(size.value_or(DimExpr::constant(-1)));
      }
      if (!missing.empty()) {
        unbound += "\n  " + info.name() + " (" + dimsStr(shape) + "; needs " +
                   llvm::join(missing, ", ") + ")";
        continue;
      }
    }
    // Every size later computed from the shape fits in 64 bits (zero dims
    // counted as one, as strides are; symbolic ones at their maximum).
    int64_t bytes =
        std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
    for (auto [axis, dim] : llvm::enumerate(shape)) {
      if (ShapedType::isDynamic(dim)) {
        auto range = sizes[axis].bounds(dimRanges());
        if (!range)
          return emitError(loc, "input '")
                 << info.name() << "': dim " << axis << " ("
                 << sizes[axis].str() << ") overflows 64 bits at its range";
        dim = range->second;
      }
      std::optional<int64_t> next =
          llvm::checkedMul(bytes, std::max<int64_t>(dim, 1));
      if (!next)
        return emitError(loc, "input '")
               << info.name() << "' has dims " << dimsStr(shape)
               << " whose product overflows 64 bits";
      bytes = *next;
    }
    types.push_back(sizes.size() == shape.size()
                        ? symbolicTensorType(sizes, elementType)
                        : RankedTensorType::get(shape, elementType));
    names.push_back(info.name());
  }
  if (std::vector<std::string> unused = bindings.unusedGiven(); !unused.empty())
    return emitError(fileLoc, options.names.dims + " ")
           << llvm::join(unused, ", ") << ": the model's inputs have no dim "
           << (unused.size() == 1 ? "of that name" : "of those names")
           << " (their named dims: "
           << (bindings.mentioned().empty()
                   ? std::string("none")
                   : llvm::join(bindings.mentioned(), ", "))
           << ")";
  if (!unbound.empty())
    return emitError(fileLoc)
           << "inputs with dynamic dims need a value or a range for each: "
              "give it with "
           << options.names.dims
           << " NAME=N (or NAME=MIN:MAX to keep it symbolic), or an input's "
              "whole shape with "
           << options.names.inputShapes << " NAME=DIMxDIM:" << unbound;
  return success();
}

} // namespace kiln
