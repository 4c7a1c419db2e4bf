//===- NextToken.cpp - choosing a decoder's next token in the graph -------===//
//
// `kilnc --next-token=K` (ImportOptions::nextTokenTopK): the token a
// decoding step picks from its logits, computed by the model itself, so
// that a generate loop on the GPU reads one token id a step instead of the
// logits, and sampling runs in the same graph replay as the step. The
// importer appends ONNX nodes to the graph before importing it, so the
// choice compiles into kernels like any other node (TopK, Softmax, CumSum,
// reductions) and runs on both backends.
//
// The nodes follow rt::Sampler (runtime/lib/GenerateSupport.h) step for
// step, at the last position of `logits` [batch, length, vocab]:
//   scaled = logits[:, -1, :] / temperature        (fp32)
//   values, ids = TopK(scaled, K)                  (ties: the lower id first)
//   p = softmax(values where rank < top_k, else -inf)
//   keep = rank < top_k and (mass before the rank) < top_p
//   choice = #{rank : cumsum(p where keep) <= uniform * sum(p where keep)},
//            at most the last kept rank
//   next_token = ids[choice]                       ([batch], int64)
// with four new inputs the loop feeds each step: `sampling_temperature`
// [1], `sampling_top_k` [1] (int64, 1 to K; 1 is greedy), `sampling_top_p`
// [1] and `sampling_uniform` [batch, 1] (a draw in [0, 1)). K bounds top_k
// at compile time: the loop samples on the host where a run asks for more.
// A second output, `next_token_candidates` [batch, K], lists the K ids in
// order; its shape is how the loop learns K.
//
//===----------------------------------------------------------------------===//

#include "NextToken.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace kiln {

namespace {

constexpr const char *kPrefix = "kiln_next_token/";

/// Appends nodes and initializers to one graph, naming them with kPrefix.
class GraphAppender {
public:
  explicit GraphAppender(onnx::GraphProto &graph) : graph(graph) {}

  /// A node of `op` reading `inputs`; returns its first output's name.
  std::string node(const std::string &op,
                   std::initializer_list<std::string> inputs,
                   const std::string &name, int outputs = 1) {
    onnx::NodeProto *n = graph.add_node();
    n->set_op_type(op);
    n->set_name(kPrefix + name);
    for (const std::string &in : inputs)
      n->add_input(in);
    for (int i = 0; i < outputs; ++i)
      n->add_output(kPrefix + name + (i ? "." + std::to_string(i) : ""));
    last = n;
    return n->output(0);
  }

  /// Sets an integer attribute of the last node.
  void attribute(const std::string &name, int64_t value) {
    onnx::AttributeProto *a = last->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }

  /// An int64 initializer of `shape` holding `values`.
  std::string ints(const std::string &name, std::vector<int64_t> shape,
                   const std::vector<int64_t> &values) {
    onnx::TensorProto *t = graph.add_initializer();
    t->set_name(kPrefix + name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : shape)
      t->add_dims(d);
    for (int64_t v : values)
      t->add_int64_data(v);
    return t->name();
  }

  /// A float scalar initializer.
  std::string scalar(const std::string &name, float value) {
    onnx::TensorProto *t = graph.add_initializer();
    t->set_name(kPrefix + name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    return t->name();
  }

  /// A graph input of `type` and `dims`.
  void input(const std::string &name, int32_t type,
             const std::vector<onnx::TensorShapeProto::Dimension> &dims) {
    describe(*graph.add_input(), name, type, dims);
  }

  /// A node of `op` reading `inputs` whose one output is the graph output
  /// `name` (not prefixed), int64 of `dims`.
  void output(const std::string &op, std::initializer_list<std::string> inputs,
              const std::string &name,
              const std::vector<onnx::TensorShapeProto::Dimension> &dims) {
    onnx::NodeProto *n = graph.add_node();
    n->set_op_type(op);
    n->set_name(kPrefix + name);
    for (const std::string &in : inputs)
      n->add_input(in);
    n->add_output(name);
    last = n;
    describe(*graph.add_output(), name, onnx::TensorProto::INT64, dims);
  }

private:
  static void
  describe(onnx::ValueInfoProto &v, const std::string &name, int32_t type,
           const std::vector<onnx::TensorShapeProto::Dimension> &dims) {
    v.set_name(name);
    auto *tensor = v.mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    for (const auto &d : dims)
      *tensor->mutable_shape()->add_dim() = d;
  }

  onnx::GraphProto &graph;
  onnx::NodeProto *last = nullptr;
};

onnx::TensorShapeProto::Dimension dimOf(int64_t value) {
  onnx::TensorShapeProto::Dimension d;
  d.set_dim_value(value);
  return d;
}

/// The opset of the default domain, or 0.
int64_t defaultOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      return set.version();
  return 0;
}

} // namespace

std::string appendNextToken(onnx::ModelProto &model, int64_t topK) {
  onnx::GraphProto &graph = *model.mutable_graph();
  if (topK < 1)
    return "--next-token needs a top-k bound of at least 1";
  if (int64_t opset = defaultOpset(model); opset < 13)
    return "--next-token needs ONNX opset 13 or later (the model's is " +
           std::to_string(opset) + ")";
  int logitsIndex = -1;
  for (int i = 0; i < graph.output_size(); ++i)
    if (graph.output(i).name() == "logits" ||
        (graph.output_size() == 1 && logitsIndex < 0))
      logitsIndex = i;
  if (logitsIndex < 0)
    return "--next-token needs an output 'logits' (the model has " +
           std::to_string(graph.output_size()) + " outputs, none so named)";
  const onnx::ValueInfoProto &logits = graph.output(logitsIndex);
  const auto &tensor = logits.type().tensor_type();
  int32_t type = tensor.elem_type();
  if (type != onnx::TensorProto::FLOAT && type != onnx::TensorProto::FLOAT16 &&
      type != onnx::TensorProto::BFLOAT16)
    return "--next-token: output '" + logits.name() +
           "' is not float32, float16 or bfloat16";
  if (!tensor.has_shape() || tensor.shape().dim_size() != 3 ||
      !tensor.shape().dim(2).has_dim_value() ||
      tensor.shape().dim(2).dim_value() < 1)
    return "--next-token: output '" + logits.name() +
           "' must be [batch, length, vocab] with a known vocabulary size";
  for (const char *name :
       {"next_token", "next_token_candidates", "sampling_temperature",
        "sampling_top_k", "sampling_top_p", "sampling_uniform"}) {
    for (const onnx::ValueInfoProto &v : graph.input())
      if (v.name() == name)
        return std::string("--next-token: the model already has an input '") +
               name + "'";
    for (const onnx::ValueInfoProto &v : graph.output())
      if (v.name() == name)
        return std::string("--next-token: the model already has an output '") +
               name + "'";
  }
  int64_t vocab = tensor.shape().dim(2).dim_value();
  int64_t k = std::min(topK, vocab);
  onnx::TensorShapeProto::Dimension batch = tensor.shape().dim(0);

  GraphAppender g(graph);
  g.input("sampling_temperature", onnx::TensorProto::FLOAT, {dimOf(1)});
  g.input("sampling_top_k", onnx::TensorProto::INT64, {dimOf(1)});
  g.input("sampling_top_p", onnx::TensorProto::FLOAT, {dimOf(1)});
  g.input("sampling_uniform", onnx::TensorProto::FLOAT, {batch, dimOf(1)});

  std::string lastAxis = g.ints("last_axis", {}, {-1});
  std::string last = g.node("Gather", {logits.name(), lastAxis}, "last");
  g.attribute("axis", 1);
  std::string wide = g.node("Cast", {last}, "wide");
  g.attribute("to", onnx::TensorProto::FLOAT);
  std::string scaled = g.node("Div", {wide, "sampling_temperature"}, "scaled");
  std::string values =
      g.node("TopK", {scaled, g.ints("k", {1}, {k})}, "top", 2);
  std::string ids = values + ".1";
  g.attribute("axis", -1);
  std::vector<int64_t> ranks(k);
  for (int64_t i = 0; i < k; ++i)
    ranks[i] = i;
  std::string inTopK = g.node(
      "Less", {g.ints("ranks", {k}, ranks), "sampling_top_k"}, "in_top_k");
  std::string masked = g.node(
      "Where", {inTopK, values, g.scalar("minus_inf", -INFINITY)}, "masked");
  std::string probs = g.node("Softmax", {masked}, "probs");
  g.attribute("axis", -1);
  std::string cumulative = g.node("CumSum", {probs, lastAxis}, "cumulative");
  std::string before = g.node("Sub", {cumulative, probs}, "before");
  std::string inTopP = g.node("Less", {before, "sampling_top_p"}, "in_top_p");
  std::string keep = g.node("And", {inTopK, inTopP}, "keep");
  std::string kept =
      g.node("Where", {keep, probs, g.scalar("zero", 0.0f)}, "kept");
  std::string keptCumulative =
      g.node("CumSum", {kept, lastAxis}, "kept_cumulative");
  std::string lastAxes = g.ints("last_axes", {1}, {-1});
  std::string total = g.node("ReduceSum", {kept, lastAxes}, "total");
  g.attribute("keepdims", 1);
  std::string threshold =
      g.node("Mul", {total, "sampling_uniform"}, "threshold");
  std::string below =
      g.node("LessOrEqual", {keptCumulative, threshold}, "below");
  std::string belowCount = g.node("Cast", {below}, "below_count_each");
  g.attribute("to", onnx::TensorProto::INT64);
  std::string count = g.node("ReduceSum", {belowCount, lastAxes}, "count");
  g.attribute("keepdims", 1);
  std::string keepCountEach = g.node("Cast", {keep}, "keep_count_each");
  g.attribute("to", onnx::TensorProto::INT64);
  std::string keepCount =
      g.node("ReduceSum", {keepCountEach, lastAxes}, "keep_count");
  g.attribute("keepdims", 1);
  std::string lastKept =
      g.node("Sub", {keepCount, g.ints("one", {}, {1})}, "last_kept");
  std::string choice = g.node("Min", {count, lastKept}, "choice");
  std::string token = g.node("GatherElements", {ids, choice}, "token");
  g.attribute("axis", -1);
  g.output("Squeeze", {token, g.ints("token_axis", {1}, {1})}, "next_token",
           {batch});
  // The candidates in order, an output too: their count tells the loop
  // the bound on top-k, and a caller may read them.
  g.output("Identity", {ids}, "next_token_candidates", {batch, dimOf(k)});
  return "";
}

} // namespace kiln
