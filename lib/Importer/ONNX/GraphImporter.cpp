//===- GraphImporter.cpp - ONNX graphs to func.func -----------------------===//

#include "GraphImporter.h"

#include "DimBindings.h"
#include "TextFormat.h"

#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/Importer/ONNX/TensorProto.h"
#include "kiln/Interpreter/Interpreter.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"


#include <queue>

using namespace mlir;

namespace kiln {

/// Graphs with more nodes than this, in the file or once Loops are
/// unrolled, are rejected as hostile.
static constexpr int kMaxNodes = 1 << 20;

/// The newest default-domain opset Kiln knows (ONNX 1.20's, the newest in
/// the conformance corpus); a model asking for a newer one may use semantics
/// Kiln does not implement, as onnxruntime also refuses.
static constexpr int64_t kMaxDefaultOpset = 28;

LogicalResult GraphImporter::countNode(const onnx::NodeProto &node) {
  if (++convertedNodes <= kMaxNodes)
    return success();
  return emitError(nodeLoc(node), "the model unrolls to more than ")
         << kMaxNodes << " nodes (nested Loops); refused";
}

GraphImporter::GraphImporter(ModuleOp module, StringRef filename,
                             const onnx::ModelProto &model,
                             const ImportOptions &options)
    : module(module), b(module.getContext()),
      fileLoc(FileLineColLoc::get(module.getContext(), filename, 0, 0)),
      model(model), options(options),
      externalData(llvm::sys::path::parent_path(filename)) {
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    if (isDefaultDomain(opset.domain()))
      defaultOpset = opset.version();
  ranges = options.dimRanges;
  rangeLookup =
      [&ranges = ranges](
          StringRef name) -> std::optional<std::pair<int64_t, int64_t>> {
    auto it = ranges.find(name);
    if (it == ranges.end())
      return std::nullopt;
    return it->second;
  };
}

/// The node's name, or `OpType->first_output` for unnamed nodes.
static std::string nodeName(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  return node.op_type() + (node.output_size() ? "->" + node.output(0) : "");
}

Location GraphImporter::nodeLoc(const onnx::NodeProto &node) {
  return NameLoc::get(b.getStringAttr(nodeName(node)), fileLoc);
}

Value GraphImporter::input(const onnx::NodeProto &node, int i) {
  if (i >= node.input_size() || node.input(i).empty())
    return {};
  return values.lookup(node.input(i));
}

int64_t GraphImporter::graphOutputCount(StringRef name) const {
  return llvm::count_if(model.graph().output(),
                        [&](const onnx::ValueInfoProto &output) {
                          return output.name() == name;
                        });
}

/// Node inputs of `graph` and its subgraphs (a Loop body may read an outer
/// name) that read `name`.
static int64_t readersIn(const onnx::GraphProto &graph, StringRef name) {
  int64_t count = 0;
  for (const onnx::NodeProto &node : graph.node()) {
    count += llvm::count(node.input(), name.str());
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      if (attribute.has_g())
        count += readersIn(attribute.g(), name);
      for (const onnx::GraphProto &body : attribute.graphs())
        count += readersIn(body, name);
    }
  }
  return count;
}

int64_t GraphImporter::readerCount(StringRef name) const {
  return readersIn(model.graph(), name);
}

void GraphImporter::setOutput(const onnx::NodeProto &node, int i, Value value) {
  if (i >= node.output_size() || node.output(i).empty())
    return;
  if (value)
    value = foldConstant(value);
  values[node.output(i)] = value;
  auto result = dyn_cast_or_null<OpResult>(value);
  if (options.recordTensorNames && result &&
      !isa<ConstantOp>(result.getOwner()))
    setTensorName(result, b.getStringAttr(node.output(i)));
}

/// Shape subgraphs compute small integer tensors from constants; folding
/// them as they are imported lets later nodes (Reshape, Expand, Slice) read
/// their shapes and axes. Larger float computations are left to the
/// compiler, and the size caps bound the work a hostile model can ask for.
static constexpr int64_t kMaxFoldElements = int64_t(1) << 16;
/// Float results fold only this small: shape arithmetic that exporters route
/// through floats (Shape -> Cast -> Min -> Cast), not weights or activations.
static constexpr int64_t kMaxFoldFloatElements = 64;
/// Larger float results fold when they are tables computed from constants:
/// elementwise math or a concat, no larger than its operands (a broadcast
/// would grow the weights), up to this many elements each and this many
/// bytes over the model (the folded values live as long as the compile).
/// A rotary embedding's cos and sin of a folded angle table are the case:
/// two kernels on every forward otherwise, with libdevice's slow path for
/// angles past 10^5 rad.
static constexpr int64_t kMaxFoldTableElements = int64_t(1) << 20;
static constexpr int64_t kMaxFoldTableBytes = int64_t(64) << 20;

/// True when `op` computes a table that may fold past kMaxFoldFloatElements:
/// elementwise math whose result is no larger than its largest operand, or a
/// concat (its result is its operands).
static bool isTableOp(Operation *op, int64_t elements) {
  if (isa<ConcatOp>(op))
    return true;
  if (!isElementwise(op))
    return false;
  int64_t largest = 0;
  for (Value operand : op->getOperands())
    if (auto type = dyn_cast<RankedTensorType>(operand.getType());
        type && type.hasStaticShape())
      largest = std::max(largest, type.getNumElements());
  return elements <= largest;
}

Value GraphImporter::foldConstant(Value value, int depth) {
  Operation *op = value.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!op || isa<ConstantOp, SizesOp>(op) || depth > 8 ||
      op->getNumResults() != 1 || op->getNumRegions() != 0 || !type ||
      !type.hasStaticShape())
    return value;
  int64_t elements = type.getNumElements();
  bool isInteger = isa<IntegerType>(type.getElementType());
  int64_t tableBytes = 0;
  if (!isInteger && elements > kMaxFoldFloatElements) {
    tableBytes = elements * ((type.getElementTypeBitWidth() + 7) / 8);
    if (elements > kMaxFoldTableElements || !isTableOp(op, elements) ||
        foldedTableBytes + tableBytes > kMaxFoldTableBytes)
      return value;
  }
  if (isInteger && elements > kMaxFoldElements)
    return value;
  SmallVector<HostTensor> operands;
  SmallVector<Value> foldedOperands;
  for (Value operand : op->getOperands()) {
    Value folded = foldConstant(operand, depth + 1);
    if (!folded.getDefiningOp<ConstantOp>() && !folded.getDefiningOp<SizesOp>())
      return value;
    foldedOperands.push_back(folded);
  }
  if (llvm::any_of(foldedOperands,
                   [](Value v) { return v.getDefiningOp<SizesOp>(); }))
    return foldSymbolicSizes(value, foldedOperands);
  for (Value folded : foldedOperands) {
    auto constant = folded.getDefiningOp<ConstantOp>();
    if (!constant)
      return value;
    auto tensor = HostTensor::fromElementsAttr(constant.getValue());
    if (failed(tensor))
      return value;
    operands.push_back(std::move(*tensor));
  }
  SmallVector<const HostTensor *> pointers;
  for (const HostTensor &t : operands)
    pointers.push_back(&t);
  // A failure here (a constant index out of range, say) is an error of the
  // model, already reported at the op; the import fails.
  auto result = evaluateOp(op, pointers);
  if (failed(result)) {
    foldFailed = true;
    return value;
  }
  foldedTableBytes += tableBytes;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Value constant = ConstantOp::create(
      b, op->getLoc(), cast<ElementsAttr>(result->toDenseElementsAttr()));
  value.replaceAllUsesWith(constant);
  if (op->use_empty())
    op->erase();
  return constant;
}

Value GraphImporter::foldSymbolicSizes(Value value, ArrayRef<Value> operands) {
  Operation *op = value.getDefiningOp();
  SmallVector<SymbolicTensor> symbolic;
  for (Value operand : operands) {
    std::optional<SymbolicTensor> t = symbolicValueOf(operand);
    if (!t)
      return value;
    symbolic.push_back(std::move(*t));
  }
  std::optional<SymbolicTensor> result =
      foldSymbolic(op, symbolic, dimRanges());
  if (!result)
    return value;
  // kiln.sizes holds integers: symbolic floats or bools stay ops, computed
  // at run time.
  Type elementType = cast<RankedTensorType>(value.getType()).getElementType();
  bool allConstant = llvm::all_of(
      result->values, [](const DimExpr &v) { return v.isConstant(); });
  if (!allConstant && !elementType.isInteger(64) && !elementType.isInteger(32))
    return value;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Value folded = materializeSizes(op->getLoc(), value.getType(), *result);
  value.replaceAllUsesWith(folded);
  if (op->use_empty())
    op->erase();
  return folded;
}

Value GraphImporter::materializeSizes(Location loc, Type type,
                                      const SymbolicTensor &sizes) {
  auto tensorType = cast<RankedTensorType>(type);
  // All constant: a plain constant of the type (floats and bools too).
  if (llvm::all_of(sizes.values,
                   [](const DimExpr &v) { return v.isConstant(); })) {
    FailureOr<HostTensor> tensor = HostTensor::allocate(
        tensorType.getElementType(), tensorType.getShape(), loc);
    if (succeeded(tensor) &&
        tensor->numElements() == static_cast<int64_t>(sizes.values.size())) {
      bool isFloat = isa<FloatType>(tensorType.getElementType());
      for (auto [i, v] : llvm::enumerate(sizes.values)) {
        int64_t value = *v.getConstant();
        if (isFloat)
          tensor->setFromDouble(i, static_cast<double>(value));
        else
          tensor->setFromInt(i, value);
      }
      return ConstantOp::create(
          b, loc, cast<ElementsAttr>(tensor->toDenseElementsAttr()));
    }
  }
  SmallVector<Attribute> texts;
  for (const DimExpr &size : sizes.values)
    texts.push_back(b.getStringAttr(size.str()));
  return SizesOp::create(b, loc, tensorType, b.getArrayAttr(texts));
}

FailureOr<SymbolicShape> GraphImporter::symbolicInts(Value value) {
  std::optional<SymbolicTensor> t = symbolicValueOf(value);
  if (!t || t->shape.size() > 1)
    return failure();
  return SymbolicShape(t->values.begin(), t->values.end());
}

FailureOr<SmallVector<int64_t>> GraphImporter::constantInts(Value value) {
  auto constant = value ? value.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant || !isa<IntegerType>(
                       cast<ShapedType>(constant.getType()).getElementType()))
    return failure();
  // Initializers above a few elements are dense_resource blobs.
  auto tensor = HostTensor::fromElementsAttr(constant.getValue());
  if (failed(tensor))
    return failure();
  SmallVector<int64_t> result;
  for (int64_t i = 0, e = tensor->numElements(); i < e; ++i)
    result.push_back(tensor->getAsInt(i));
  return result;
}

FailureOr<ElementsAttr>
GraphImporter::convertTensor(Location loc, const onnx::TensorProto &tensor) {
  return convertTensorProto(loc, tensor, /*inlineLimit=*/16, &externalData);
}

Value GraphImporter::scalar(Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr;
  if (isa<FloatType>(elementType))
    attr = DenseElementsAttr::get(type, b.getFloatAttr(elementType, value));
  else
    // Wrapped to the type's width, so that a negative value (a pad value,
    // say) is well defined for an unsigned type too.
    attr = DenseElementsAttr::get(
        type, b.getIntegerAttr(
                  elementType,
                  APInt(elementType.getIntOrFloatBitWidth(),
                        static_cast<uint64_t>(static_cast<int64_t>(value)),
                        /*isSigned=*/false, /*implicitTrunc=*/true)));
  return ConstantOp::create(b, loc, cast<ElementsAttr>(attr));
}

/// What ONNX's checker requires of a graph and an importer must not take on
/// trust: a known default opset, each tensor produced once, output names
/// unique, no sparse initializers (Kiln has no sparse tensors).
LogicalResult GraphImporter::checkStructure() {
  const onnx::GraphProto &graph = model.graph();
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    if (isDefaultDomain(opset.domain()) &&
        (opset.version() < 1 || opset.version() > kMaxDefaultOpset))
      return emitError(fileLoc, "the model imports opset ")
             << opset.version() << " of the default ONNX domain; Kiln "
             << "supports opsets 1 to " << kMaxDefaultOpset;
  if (graph.sparse_initializer_size() > 0)
    return emitError(fileLoc, "sparse initializer '")
           << graph.sparse_initializer(0).values().name()
           << "' is not supported (Kiln compiles dense tensors only)";
  llvm::StringSet<> produced;
  for (const onnx::ValueInfoProto &info : graph.input())
    produced.insert(info.name());
  for (const onnx::TensorProto &tensor : graph.initializer())
    produced.insert(tensor.name());
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &output : node.output())
      if (!output.empty() && !produced.insert(output).second)
        return emitError(nodeLoc(node), "tensor '")
               << output << "' is produced twice (by this node and by a "
               << "graph input, initializer or earlier node)";
  llvm::StringSet<> outputs;
  for (const onnx::ValueInfoProto &info : graph.output())
    if (!outputs.insert(info.name()).second)
      return emitError(fileLoc, "graph output '")
             << info.name() << "' is listed twice";
  return success();
}

/// The full list of ops Kiln cannot import, so that the user sees them all at
/// once.
LogicalResult GraphImporter::checkSupported() {
  const onnx::GraphProto &graph = model.graph();
  std::string list;
  llvm::raw_string_ostream os(list);
  int count = 0;
  for (const onnx::NodeProto &node : graph.node()) {
    if (isSupportedOp(node))
      continue;
    bool defaultDomain = isDefaultDomain(node.domain());
    int64_t version = 0;
    for (const onnx::OperatorSetIdProto &opset : model.opset_import())
      if (opset.domain() == node.domain() ||
          (defaultDomain && isDefaultDomain(opset.domain())))
        version = opset.version();
    os << "\n  " << node.op_type() << " (domain '"
       << (defaultDomain ? "ai.onnx" : node.domain()) << "', opset " << version
       << ") at node '" << nodeName(node) << "'";
    ++count;
  }
  if (count == 0)
    return success();
  return emitError(fileLoc) << "model has " << count << " unsupported op"
                            << (count == 1 ? "" : "s") << ":" << list;
}

LogicalResult GraphImporter::importInitializers() {
  for (const onnx::TensorProto &tensor : model.graph().initializer()) {
    if (options.overrideInitializers.contains(tensor.name()))
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
    s += (s.empty() ? "" : "x") + (d < 0 ? std::string("?") : std::to_string(d));
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
      return emitError(fileLoc, "--override-initializer ")
             << name.getKey()
             << ": the model has no initializer of that name that is also a "
                "graph input";
  // Inputs pinned whole first: the names their dims carry get the pinned
  // values, for every other input that shares them.
  DimBindings bindings(options.dimValues, options.dimRanges,
                       options.dimExpressions, options.unboundDimRange);
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
      std::string error = bindings.learn(name, bound->second[axis],
                                     "--input-shape " + info.name() + "=" +
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
          fits = !DimBindings::isKnown(dims[i]) ||
                 dims[i].dim_value() == shape[i];
        if (!fits)
          return emitError(loc, "--input-shape ")
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
            return emitError(loc, "--input-shape ")
                   << info.name() << "=" << dimsStr(shape) << " makes dim "
                   << i << " " << shape[i] << ", but its name '" << name
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
    int64_t bytes = std::max<int64_t>(1, elementType.getIntOrFloatBitWidth() / 8);
    for (auto [axis, dim] : llvm::enumerate(shape)) {
      if (ShapedType::isDynamic(dim)) {
        auto range = sizes[axis].bounds(dimRanges());
        if (!range)
          return emitError(loc, "input '")
                 << info.name() << "': dim " << axis << " ("
                 << sizes[axis].str() << ") overflows 64 bits at its range";
        dim = range->second;
      }
      std::optional<int64_t> next = llvm::checkedMul(bytes, std::max<int64_t>(dim, 1));
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
    return emitError(fileLoc, "--dim ")
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
              "give it with --dim NAME=N (or NAME=MIN:MAX to keep it "
              "symbolic), or an input's whole shape with --input-shape "
              "NAME=DIMxDIM:"
           << unbound;
  return success();
}

/// ONNX requires nodes in topological order, but some exporters and
/// rewriters write them out of order (onnxruntime sorts them too). Kahn's
/// algorithm, taking ready nodes in file order, keeps a sorted graph as it
/// is; an input that nothing produces and a cycle are errors.
FailureOr<SmallVector<int>> GraphImporter::topologicalOrder() {
  const onnx::GraphProto &graph = model.graph();
  int count = graph.node_size();
  llvm::StringMap<int> producer;
  for (int i = 0; i < count; ++i)
    for (const std::string &output : graph.node(i).output())
      if (!output.empty())
        producer.try_emplace(output, i);
  SmallVector<int> waiting(count, 0);
  SmallVector<SmallVector<int, 2>> consumers(count);
  for (int i = 0; i < count; ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (const std::string &input : node.input()) {
      if (input.empty() || values.count(input))
        continue;
      auto it = producer.find(input);
      if (it == producer.end())
        return emitError(nodeLoc(node), "input '")
               << input << "' is not produced by any node, graph input or "
                  "initializer";
      ++waiting[i];
      consumers[it->second].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < count; ++i)
    if (waiting[i] == 0)
      ready.push(i);
  SmallVector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int consumer : consumers[i])
      if (--waiting[consumer] == 0)
        ready.push(consumer);
  }
  if (static_cast<int>(order.size()) != count) {
    for (int i = 0; i < count; ++i)
      if (waiting[i] > 0)
        return emitError(nodeLoc(graph.node(i)), "graph has a cycle through ")
               << "this node";
  }
  return order;
}

LogicalResult GraphImporter::importGraph() {
  const onnx::GraphProto &graph = model.graph();
  if (graph.node_size() > kMaxNodes)
    return emitError(fileLoc, "graph has ")
           << graph.node_size() << " nodes, more than the limit " << kMaxNodes;
  if (graph.output_size() == 0)
    return emitError(fileLoc, "graph has no outputs");
  if (failed(checkStructure()) || failed(checkSupported()))
    return failure();

  SmallVector<Type> inputTypes;
  SmallVector<std::string> inputNames;
  if (failed(importInputs(inputTypes, inputNames)))
    return failure();

  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, fileLoc, "main",
                                   b.getFunctionType(inputTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(inputNames)) {
    values[name] = entry->getArgument(i);
    func.setArgAttr(i, kNameAttr, b.getStringAttr(name));
  }
  b.setInsertionPointToStart(entry);
  if (failed(importInitializers()))
    return failure();
  for (const onnx::ValueInfoProto &info : graph.input()) {
    auto frozen = options.constantInputs.find(info.name());
    if (frozen != options.constantInputs.end())
      values[info.name()] = ConstantOp::create(
          b, NameLoc::get(b.getStringAttr(info.name()), fileLoc),
          frozen->second);
  }

  auto order = topologicalOrder();
  if (failed(order))
    return failure();
  for (int index : *order) {
    const onnx::NodeProto &node = graph.node(index);
    if (failed(convertNode(*this, node)) || foldFailed)
      return failure();
  }

  if (!ranges.empty()) {
    SmallVector<NamedAttribute> entries;
    for (const auto &entry : ranges)
      entries.push_back(b.getNamedAttr(
          entry.getKey(),
          b.getDenseI64ArrayAttr({entry.second.first, entry.second.second})));
    func->setAttr(kDimRangesAttr, b.getDictionaryAttr(entries));
  }

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &info : graph.output()) {
    Value value = values.lookup(info.name());
    if (!value)
      return emitError(fileLoc, "graph output '")
             << info.name() << "' is not produced by any node";
    results.push_back(value);
  }
  func::ReturnOp::create(b, fileLoc, results);
  func.setFunctionType(
      b.getFunctionType(inputTypes, ValueRange(results).getTypes()));
  for (auto [i, info] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, kNameAttr, b.getStringAttr(info.name()));
  return success();
}

std::string parseInputShape(StringRef spec, ImportOptions &options) {
  auto [name, dims] = spec.rsplit('=');
  if (name.empty() || name.size() == spec.size())
    return "expected NAME=DIMxDIM..., got '" + spec.str() + "'";
  SmallVector<int64_t> shape;
  if (!dims.empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef part : parts) {
      int64_t dim;
      if (part.getAsInteger(10, dim) || dim < 0)
        return "invalid dim '" + part.str() + "' in '" + spec.str() + "'";
      shape.push_back(dim);
    }
  }
  options.inputShapes[name] = shape;
  return "";
}

std::string parseDimValue(StringRef spec, ImportOptions &options) {
  auto [name, text] = spec.rsplit('=');
  if (name.empty() || name.size() == spec.size())
    return "expected NAME=N or NAME=MIN:MAX, got '" + spec.str() + "'";
  options.dimValues.erase(name);
  options.dimRanges.erase(name);
  options.dimExpressions.erase(name);
  if (text.contains(':')) {
    auto [minText, maxText] = text.split(':');
    int64_t min, max;
    if (minText.getAsInteger(10, min) || maxText.getAsInteger(10, max) ||
        min < 0 || max < min)
      return "invalid range '" + text.str() + "' in '" + spec.str() +
             "' (expected MIN:MAX with 0 <= MIN <= MAX)";
    // A range of one value is a pinned dim.
    if (min == max)
      options.dimValues[name] = min;
    else
      options.dimRanges[name] = {min, max};
    return "";
  }
  int64_t value;
  if (!text.getAsInteger(10, value)) {
    if (value < 0)
      return "invalid value '" + text.str() + "' in '" + spec.str() + "'";
    options.dimValues[name] = value;
    return "";
  }
  // An expression of other names: a relation the model does not state.
  std::string error;
  std::optional<DimExpr> expr = DimExpr::parse(text, error);
  if (!expr || expr->isConstant() ||
      llvm::is_contained(expr->symbols(), name.str()))
    return "invalid value '" + text.str() + "' in '" + spec.str() +
           "' (expected N, MIN:MAX, or an expression of other dims' names)";
  options.dimExpressions[name] = expr->str();
  return "";
}

OwningOpRef<ModuleOp> importONNX(MLIRContext *context, StringRef bytes,
                                 StringRef filename,
                                 const ImportOptions &options) {
  context->loadDialect<KilnDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(context, filename, 0, 0);
  if (bytes.empty()) {
    emitError(fileLoc, "empty file: not an ONNX model");
    return {};
  }
  onnx::ModelProto model;
  if (bytes.ltrim().starts_with("<")) {
    std::string error = parseONNXText(bytes.str(), model);
    if (!error.empty()) {
      emitError(fileLoc, "cannot parse ONNX text format: ") << error;
      return {};
    }
  } else if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
             !model.ParseFromArray(bytes.data(),
                                   static_cast<int>(bytes.size()))) {
    emitError(fileLoc, "cannot parse ONNX model: the file is truncated or not "
                       "an ONNX protobuf");
    return {};
  }
  if (!model.has_graph() || model.graph().node_size() == 0) {
    emitError(fileLoc, "not an ONNX model: it has no graph nodes");
    return {};
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  GraphImporter importer(*module, filename, model, options);
  if (failed(importer.importGraph()) || failed(verify(*module)))
    return {};
  return module;
}

OwningOpRef<ModuleOp> importONNXFile(MLIRContext *context, StringRef path,
                                     const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(context, path, 0, 0), "cannot read '")
        << path << "': " << buffer.getError().message();
    return {};
  }
  return importONNX(context, (*buffer)->getBuffer(), path, options);
}

} // namespace kiln
