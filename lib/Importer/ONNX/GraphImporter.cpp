//===- GraphImporter.cpp - ONNX graphs to func.func -----------------------===//
//
// The walk of one graph: checks of its structure and ops, the node order,
// node-by-node dispatch to the converters, the function's results, and the
// entry points that parse a model. Inputs and initializers are in
// GraphInputs.cpp, folding and constants in FoldConstants.cpp.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NextToken.h"

#include "TextFormat.h"

#include "kiln/Dialect/Kiln/TensorNames.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
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

/// What ONNX's checker requires of a graph and an importer must not take on
/// trust: a known default opset, each tensor produced once, output names
/// unique, no sparse initializers (Kiln has no sparse tensors). One
/// exception, as onnxruntime makes it: a constant (an initializer or a
/// Constant node) that a later Constant node defines again is that later
/// definition everywhere, with a warning (older exporters wrote Constant
/// nodes named alike; onnxruntime turns them into initializers and keeps
/// the latest). Any other tensor produced twice is an error.
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
  // Each produced name's producer: a node's index, or one of these.
  constexpr int kGraphInput = -1, kInitializer = -2;
  llvm::StringMap<int> producer;
  for (const onnx::ValueInfoProto &info : graph.input())
    producer.try_emplace(info.name(), kGraphInput);
  for (const onnx::TensorProto &tensor : graph.initializer())
    producer.try_emplace(tensor.name(), kInitializer);
  auto isConstantNode = [&](int index) {
    const onnx::NodeProto &node = graph.node(index);
    return node.op_type() == "Constant" && isDefaultDomain(node.domain());
  };
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (const std::string &output : node.output()) {
      if (output.empty())
        continue;
      auto [it, first] = producer.try_emplace(output, i);
      if (first)
        continue;
      int earlier = it->second;
      bool constants =
          isConstantNode(i) && (earlier == kInitializer ||
                                (earlier >= 0 && isConstantNode(earlier)));
      if (!constants)
        return emitError(nodeLoc(node), "tensor '")
               << output << "' is produced twice (by this node and by a "
               << "graph input, initializer or earlier node)";
      if (earlier == kInitializer)
        shadowedInitializers.insert(output);
      else
        shadowedNodes.insert(earlier);
      emitWarning(nodeLoc(node), "tensor '")
          << output << "' is defined again by this Constant node (first by "
          << (earlier == kInitializer
                  ? std::string("an initializer")
                  : "Constant node '" + nodeName(graph.node(earlier)) + "'")
          << "); the later definition is used everywhere, as onnxruntime "
             "does";
      it->second = i;
    }
  }
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
  // Optimum's merged decoder (decoder_model_merged.onnx) is an If on the
  // graph input use_cache_branch around the decoder without a past and the
  // one with; the export folder holds both apart, which Kiln takes.
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "If" && isDefaultDomain(node.domain()) &&
        node.input_size() == 1 && node.input(0) == "use_cache_branch")
      return emitError(fileLoc)
             << "this is Optimum's merged decoder: an If on use_cache_branch "
                "picks the decoder without or with a past at run time, and "
                "Kiln compiles one graph; give the export's "
                "decoder_with_past_model.onnx (and decoder_model.onnx for "
                "the first step of an encoder-decoder model), or export a "
                "decoder-only model with `optimum-cli export onnx --task "
                "text-generation-with-past`, whose model.onnx takes a past of "
                "length 0 for the first step";
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

/// ONNX requires nodes in topological order, but some exporters and
/// rewriters write them out of order (onnxruntime sorts them too). Kahn's
/// algorithm, taking ready nodes in file order, keeps a sorted graph as it
/// is; an input that nothing produces and a cycle are errors.
FailureOr<SmallVector<int>> GraphImporter::topologicalOrder() {
  const onnx::GraphProto &graph = model.graph();
  int count = graph.node_size();
  // Shadowed Constant nodes (checkStructure) take no part.
  llvm::StringMap<int> producer;
  for (int i = 0; i < count; ++i)
    if (!shadowedNodes.contains(i))
      for (const std::string &output : graph.node(i).output())
        if (!output.empty())
          producer.try_emplace(output, i);
  SmallVector<int> waiting(count, 0);
  SmallVector<SmallVector<int, 2>> consumers(count);
  for (int i = 0; i < count; ++i) {
    if (shadowedNodes.contains(i))
      continue;
    const onnx::NodeProto &node = graph.node(i);
    for (const std::string &input : node.input()) {
      if (input.empty() || values.count(input))
        continue;
      auto it = producer.find(input);
      if (it == producer.end())
        return emitError(nodeLoc(node), "input '")
               << input
               << "' is not produced by any node, graph input or "
                  "initializer";
      ++waiting[i];
      consumers[it->second].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < count; ++i)
    if (waiting[i] == 0 && !shadowedNodes.contains(i))
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
  if (static_cast<int>(order.size() + shadowedNodes.size()) != count) {
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

  if (options.nextTokenTopK > 0)
    if (std::string error = appendNextToken(model, options.nextTokenTopK);
        !error.empty()) {
      emitError(fileLoc, error);
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
