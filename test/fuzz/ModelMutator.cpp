//===- ModelMutator.cpp - Structure-aware mutations of ONNX models --------===//

#include "ModelMutator.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using namespace kiln::fuzz;

namespace {

/// Integers at the edges importers must check: zero, signs, small counts,
/// and the limits of 32- and 64-bit arithmetic.
const int64_t kInterestingInts[] = {
    0,
    1,
    -1,
    2,
    -2,
    3,
    4,
    7,
    8,
    64,
    255,
    1024,
    65536,
    std::numeric_limits<int32_t>::max(),
    std::numeric_limits<int32_t>::min(),
    int64_t(1) << 31,
    int64_t(1) << 32,
    int64_t(1) << 40,
    int64_t(1) << 62,
    std::numeric_limits<int64_t>::max(),
    std::numeric_limits<int64_t>::min(),
    std::numeric_limits<int64_t>::max() / 2 + 1,
};

/// Floats that break naive arithmetic.
const float kInterestingFloats[] = {
    0.0f,
    -0.0f,
    1.0f,
    -1.0f,
    0.5f,
    1e-30f,
    1e30f,
    3e38f,
    1e-45f,
    std::numeric_limits<float>::infinity(),
    -std::numeric_limits<float>::infinity(),
    std::numeric_limits<float>::quiet_NaN(),
};

/// Op types Kiln imports or refuses by name, to swap a node's type for.
const char *const kOpTypes[] = {
    "Add",
    "Mul",
    "MatMul",
    "Gemm",
    "Reshape",
    "Transpose",
    "Gather",
    "Concat",
    "Slice",
    "Softmax",
    "LayerNormalization",
    "Expand",
    "Cast",
    "ReduceMean",
    "ReduceSum",
    "Where",
    "Shape",
    "ConstantOfShape",
    "Range",
    "Unsqueeze",
    "Squeeze",
    "Split",
    "Attention",
    "Loop",
    "If",
    "Einsum",
    "Pad",
    "Constant",
    "Tile",
    "CumSum",
    "Conv",
    "Trilu",
    "GatherElements",
    "GatherND",
    "ScatterND",
    "QuantizeLinear",
    "DequantizeLinear",
    "RotaryEmbedding",
    "GroupQueryAttention",
    "SkipLayerNormalization",
    "Identity",
    "Flatten",
    "Erf",
    "Sqrt",
    "Pow",
    "Div",
    "Equal",
    "Not",
    "Max",
    "TopK",
};

/// Attribute names Kiln's converters read.
const char *const kAttributeNames[] = {
    "axis",         "axes",        "perm",      "keepdims",  "transA",
    "transB",       "to",          "epsilon",   "num_heads", "kv_num_heads",
    "group",        "pads",        "strides",   "dilations", "kernel_shape",
    "value",        "split",       "mode",      "alpha",     "beta",
    "equation",     "interleaved", "do_rotary", "scale",     "is_causal",
    "upper",        "batch_dims",  "allowzero", "reduction", "block_size",
    "output_dtype",
};

/// Where an external-data tensor could point.
const char *const kLocations[] = {
    "weights.bin", "../weights.bin", "/etc/passwd", "", "a/../../b", ".",
};

/// One mutation of one parsed model, drawn from a seeded generator.
class Mutator {
public:
  Mutator(onnx::ModelProto &model, uint32_t seed) : model(model), rng(seed) {
    // The graphs of If/Loop bodies are mutated like the main graph; a
    // worklist, as hostile models nest deeply.
    std::vector<onnx::GraphProto *> work = {model.mutable_graph()};
    while (!work.empty() && graphs.size() < 64) {
      onnx::GraphProto *graph = work.back();
      work.pop_back();
      graphs.push_back(graph);
      for (onnx::NodeProto &node : *graph->mutable_node())
        for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
          if (attr.has_g())
            work.push_back(attr.mutable_g());
          for (onnx::GraphProto &g : *attr.mutable_graphs())
            work.push_back(&g);
        }
    }
  }

  /// Applies one mutation; false when the drawn one had nothing to act on.
  bool mutate() {
    graph = graphs[pick(graphs.size())];
    switch (pick(14)) {
    case 0:
      return mutateDim();
    case 1:
      return mutateElemType();
    case 2:
    case 3:
      return mutateAttribute();
    case 4:
      return addAttribute();
    case 5:
      return mutateOpType();
    case 6:
    case 7:
      return rewireEdge();
    case 8:
      return changeNodeList();
    case 9:
    case 10:
      return mutateInitializer();
    case 11:
      return mutateOpset();
    case 12:
      return changeGraphInterface();
    default:
      return mutateNodeDomain();
    }
  }

private:
  /// A uniform draw in [0, n); n > 0.
  size_t pick(size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  }
  bool coin() { return pick(2) == 0; }

  int64_t interestingInt() {
    if (pick(4) == 0)
      return std::uniform_int_distribution<int64_t>(-16, 16)(rng);
    return kInterestingInts[pick(std::size(kInterestingInts))];
  }

  float interestingFloat() {
    return kInterestingFloats[pick(std::size(kInterestingFloats))];
  }

  /// Every value name of the current graph, plus names that resolve to
  /// nothing or to an omitted optional input.
  std::vector<std::string> valueNames() {
    std::vector<std::string> names = {"", "no_such_value"};
    for (const onnx::ValueInfoProto &v : graph->input())
      names.push_back(v.name());
    for (const onnx::TensorProto &t : graph->initializer())
      names.push_back(t.name());
    for (const onnx::NodeProto &node : graph->node())
      for (const std::string &out : node.output())
        names.push_back(out);
    return names;
  }

  onnx::ValueInfoProto *anyValueInfo() {
    int n =
        graph->input_size() + graph->output_size() + graph->value_info_size();
    if (n == 0)
      return nullptr;
    int i = static_cast<int>(pick(n));
    if (i < graph->input_size())
      return graph->mutable_input(i);
    i -= graph->input_size();
    if (i < graph->output_size())
      return graph->mutable_output(i);
    return graph->mutable_value_info(i - graph->output_size());
  }

  onnx::NodeProto *anyNode() {
    if (graph->node_size() == 0)
      return nullptr;
    return graph->mutable_node(static_cast<int>(pick(graph->node_size())));
  }

  bool mutateDim() {
    onnx::ValueInfoProto *value = anyValueInfo();
    if (!value)
      return false;
    onnx::TensorShapeProto *shape =
        value->mutable_type()->mutable_tensor_type()->mutable_shape();
    switch (pick(4)) {
    case 0:
      shape->add_dim()->set_dim_value(interestingInt());
      return true;
    case 1:
      if (shape->dim_size() == 0)
        return false;
      shape->mutable_dim()->RemoveLast();
      return true;
    default: {
      if (shape->dim_size() == 0)
        return false;
      onnx::TensorShapeProto::Dimension *dim =
          shape->mutable_dim(static_cast<int>(pick(shape->dim_size())));
      if (pick(4) == 0)
        dim->set_dim_param(coin() ? "batch" : "sequence");
      else
        dim->set_dim_value(interestingInt());
      return true;
    }
    }
  }

  bool mutateElemType() {
    onnx::ValueInfoProto *value = anyValueInfo();
    if (!value)
      return false;
    value->mutable_type()->mutable_tensor_type()->set_elem_type(
        static_cast<int32_t>(pick(27)));
    return true;
  }

  bool mutateAttribute() {
    onnx::NodeProto *node = anyNode();
    if (!node || node->attribute_size() == 0)
      return false;
    onnx::AttributeProto *attr =
        node->mutable_attribute(static_cast<int>(pick(node->attribute_size())));
    if (pick(8) == 0) {
      // A type that disagrees with the attribute's name or its fields.
      attr->set_type(
          static_cast<onnx::AttributeProto::AttributeType>(pick(15)));
      return true;
    }
    switch (attr->type()) {
    case onnx::AttributeProto::INT:
      attr->set_i(interestingInt());
      return true;
    case onnx::AttributeProto::FLOAT:
      attr->set_f(interestingFloat());
      return true;
    case onnx::AttributeProto::INTS:
      if (attr->ints_size() == 0 || pick(3) == 0)
        attr->add_ints(interestingInt());
      else if (coin())
        attr->set_ints(static_cast<int>(pick(attr->ints_size())),
                       interestingInt());
      else
        attr->mutable_ints()->RemoveLast();
      return true;
    case onnx::AttributeProto::FLOATS:
      if (attr->floats_size() == 0 || coin())
        attr->add_floats(interestingFloat());
      else
        attr->mutable_floats()->RemoveLast();
      return true;
    case onnx::AttributeProto::STRING:
      attr->set_s(coin() ? "" : "ij,jk->ik...");
      return true;
    case onnx::AttributeProto::TENSOR:
      return mutateTensor(*attr->mutable_t());
    default:
      return false;
    }
  }

  bool addAttribute() {
    onnx::NodeProto *node = anyNode();
    if (!node)
      return false;
    onnx::AttributeProto *attr = node->add_attribute();
    attr->set_name(kAttributeNames[pick(std::size(kAttributeNames))]);
    if (coin()) {
      attr->set_type(onnx::AttributeProto::INT);
      attr->set_i(interestingInt());
    } else {
      attr->set_type(onnx::AttributeProto::INTS);
      for (size_t i = 0, e = pick(5); i < e; ++i)
        attr->add_ints(interestingInt());
    }
    return true;
  }

  bool mutateOpType() {
    onnx::NodeProto *node = anyNode();
    if (!node)
      return false;
    node->set_op_type(kOpTypes[pick(std::size(kOpTypes))]);
    return true;
  }

  bool mutateNodeDomain() {
    onnx::NodeProto *node = anyNode();
    if (!node)
      return false;
    const char *const domains[] = {"", "ai.onnx", "com.microsoft", "x.y"};
    node->set_domain(domains[pick(std::size(domains))]);
    return true;
  }

  /// Points an input or output at another value: dangling references,
  /// cycles, a tensor produced twice.
  bool rewireEdge() {
    onnx::NodeProto *node = anyNode();
    if (!node)
      return false;
    std::vector<std::string> names = valueNames();
    const std::string &name = names[pick(names.size())];
    switch (pick(4)) {
    case 0:
      node->add_input(name);
      return true;
    case 1:
      if (node->input_size() == 0)
        return false;
      node->mutable_input()->RemoveLast();
      return true;
    case 2:
      if (node->input_size() == 0)
        return false;
      node->set_input(static_cast<int>(pick(node->input_size())), name);
      return true;
    default:
      if (node->output_size() == 0)
        return false;
      node->set_output(static_cast<int>(pick(node->output_size())), name);
      return true;
    }
  }

  bool changeNodeList() {
    int n = graph->node_size();
    if (n == 0)
      return false;
    int i = static_cast<int>(pick(n));
    switch (pick(3)) {
    case 0: // Drop a node: its outputs dangle.
      graph->mutable_node()->DeleteSubrange(i, 1);
      return true;
    case 1: // Duplicate it: its outputs are produced twice.
      *graph->add_node() = graph->node(i);
      return true;
    default: // Move it: order must not matter, or a cycle must be caught.
      graph->mutable_node()->SwapElements(i, static_cast<int>(pick(n)));
      return true;
    }
  }

  bool mutateTensor(onnx::TensorProto &tensor) {
    switch (pick(6)) {
    case 0:
      if (tensor.dims_size() == 0 || coin())
        tensor.add_dims(interestingInt());
      else
        tensor.set_dims(static_cast<int>(pick(tensor.dims_size())),
                        interestingInt());
      return true;
    case 1:
      tensor.set_data_type(static_cast<int32_t>(pick(27)));
      return true;
    case 2: { // Raw data that disagrees with the shape.
      std::string *raw = tensor.mutable_raw_data();
      if (raw->empty() || coin())
        raw->append(pick(17), '\x7f');
      else
        raw->resize(pick(raw->size()));
      return true;
    }
    case 3:
      if (tensor.float_data_size() > 0 && coin())
        tensor.mutable_float_data()->RemoveLast();
      else
        tensor.add_float_data(interestingFloat());
      return true;
    case 4: { // Weights said to live in a file.
      tensor.set_data_location(onnx::TensorProto::EXTERNAL);
      onnx::StringStringEntryProto *entry = tensor.add_external_data();
      const char *const keys[] = {"location", "offset", "length"};
      const char *key = keys[pick(std::size(keys))];
      entry->set_key(key);
      if (std::string(key) == "location")
        entry->set_value(kLocations[pick(std::size(kLocations))]);
      else
        entry->set_value(std::to_string(interestingInt()));
      return true;
    }
    default:
      tensor.clear_dims();
      return true;
    }
  }

  bool mutateInitializer() {
    if (graph->initializer_size() == 0)
      return false;
    return mutateTensor(*graph->mutable_initializer(
        static_cast<int>(pick(graph->initializer_size()))));
  }

  bool mutateOpset() {
    if (model.opset_import_size() == 0 || pick(4) == 0) {
      onnx::OperatorSetIdProto *opset = model.add_opset_import();
      opset->set_domain(coin() ? "" : "com.microsoft");
      opset->set_version(interestingInt());
      return true;
    }
    onnx::OperatorSetIdProto *opset = model.mutable_opset_import(
        static_cast<int>(pick(model.opset_import_size())));
    opset->set_version(coin() ? static_cast<int64_t>(pick(30))
                              : interestingInt());
    return true;
  }

  /// Graph inputs and outputs: removed, duplicated, or naming other values.
  bool changeGraphInterface() {
    std::vector<std::string> names = valueNames();
    switch (pick(4)) {
    case 0:
      if (graph->output_size() == 0)
        return false;
      graph->mutable_output()->RemoveLast();
      return true;
    case 1: {
      onnx::ValueInfoProto *out = graph->add_output();
      out->set_name(names[pick(names.size())]);
      return true;
    }
    case 2:
      if (graph->input_size() == 0)
        return false;
      *graph->add_input() =
          graph->input(static_cast<int>(pick(graph->input_size())));
      return true;
    default:
      if (graph->output_size() == 0)
        return false;
      graph->mutable_output(static_cast<int>(pick(graph->output_size())))
          ->set_name(names[pick(names.size())]);
      return true;
    }
  }

  onnx::ModelProto &model;
  std::mt19937 rng;
  std::vector<onnx::GraphProto *> graphs;
  onnx::GraphProto *graph = nullptr;
};

} // namespace

bool kiln::fuzz::mutateModel(std::string &bytes, size_t maxSize,
                             uint32_t seed) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    return false;
  Mutator mutator(model, seed);
  // A few tries: a drawn mutation may have nothing to act on.
  bool changed = false;
  for (int attempt = 0; attempt < 8 && !changed; ++attempt)
    changed = mutator.mutate();
  if (!changed)
    return false;
  std::string out;
  if (!model.SerializeToString(&out) || out.size() > maxSize)
    return false;
  bytes = std::move(out);
  return true;
}
