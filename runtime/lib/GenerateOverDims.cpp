//===- GenerateOverDims.cpp - Decoding with a model of symbolic dims ------===//
//
// A model compiled with symbolic dims (`kilnc --dim batch=1:1,sequence=1:N`)
// runs each step at the length it needs. Without a KV cache, a step runs
// the whole text so far, with no window and no padding. With one (inputs
// `past_key_values.*`, outputs `present.*`, as transformers' GPT-2 and
// LLaMA exports name them), the first step runs the prompt with an empty
// cache and each later one a single token, the previous step's presents
// fed back as its pasts. Fed back, the cache is copied once a step; a model
// compiled with `--kv-cache-in-place` keeps each cache in one buffer of its
// full length instead, passed as both the past and its present (the
// artifact's output aliases), and a step writes only its new rows.
//
//===----------------------------------------------------------------------===//

#include "GenerateSupport.h"

#include "kiln/runtime/ArtifactDims.h"

using namespace kiln::rt;

namespace {

/// What each graph input is to the loop.
enum class Feed { Ids, Mask, Positions, Past };

constexpr const char kPastPrefix[] = "past_key_values";
constexpr const char kPresentPrefix[] = "present";

/// How the loop feeds one input.
struct InputRole {
  Feed feed = Feed::Ids;
  /// For a past: the output whose value the next step takes.
  size_t present = 0;
};

/// The role of every input, or an error naming one the loop cannot feed.
Status rolesOf(const Model &model, std::vector<InputRole> &roles) {
  roles.resize(model.numInputs());
  for (size_t i = 0; i < model.numInputs(); ++i) {
    const Buffer &b = model.input(i);
    InputRole &role = roles[i];
    if (b.name == "input_ids") {
      role.feed = Feed::Ids;
    } else if (b.name == "attention_mask") {
      role.feed = Feed::Mask;
    } else if (b.name == "position_ids") {
      role.feed = Feed::Positions;
    } else if (b.name.rfind(kPastPrefix, 0) == 0) {
      role.feed = Feed::Past;
      std::string present =
          kPresentPrefix + b.name.substr(sizeof(kPastPrefix) - 1);
      role.present = model.numOutputs();
      for (size_t o = 0; o < model.numOutputs(); ++o)
        if (model.output(o).name == present)
          role.present = o;
      if (role.present == model.numOutputs())
        return invalid("input '" + b.name + "' has no output '" + present +
                       "' to take the next step's value from");
      if (model.output(role.present).dtype != b.dtype)
        return invalid("'" + present + "' and '" + b.name +
                       "' differ in element type");
    } else {
      return invalid("the model takes an input '" + b.name +
                     "'; the loop feeds input_ids, attention_mask, "
                     "position_ids and past_key_values.* only");
    }
    bool intType = b.dtype == DType::I64 || b.dtype == DType::I32;
    bool maskType = role.feed == Feed::Mask &&
                    (b.dtype == DType::F32 || b.dtype == DType::Bool);
    if (role.feed != Feed::Past && (!intType && !maskType))
      return invalid("input '" + b.name + "' is " + dtypeName(b.dtype) +
                     "; expected int64 or int32");
    if (role.feed != Feed::Past && b.shape.size() != 2)
      return invalid("input '" + b.name + "' must be [batch, length]");
  }
  return Status::ok();
}

/// An empty cache's shape: every symbolic dim of past input `id` at 0,
/// but the batch (the size of input_ids' first dim) at 1.
std::vector<int64_t> emptyCacheShape(const Artifact &a, uint32_t id,
                                     const SizeFormula *batch) {
  std::vector<int64_t> shape = a.buffers[id].shape;
  for (uint32_t axis = 0; axis < shape.size(); ++axis)
    if (const SizeFormula *f = dimFormula(a, id, axis)) {
      std::string text = sizeText(*f, a.symbolic.dims);
      shape[axis] = batch && text == sizeText(*batch, a.symbolic.dims) ? 1 : 0;
    }
  return shape;
}

} // namespace

Status kiln::rt::generateOverDims(Model &model, const GenerateOptions &options,
                                  std::vector<int64_t> &tokens) {
  const Artifact &a = model.artifact();
  std::vector<InputRole> roles;
  if (Status s = rolesOf(model, roles); !s.isOk())
    return s;
  size_t ids = model.numInputs();
  for (size_t i = 0; i < model.numInputs(); ++i)
    if (roles[i].feed == Feed::Ids)
      ids = i;
  if (ids == model.numInputs())
    return invalid("the model has no input 'input_ids'");
  size_t logitsIndex = model.numOutputs();
  for (size_t o = 0; o < model.numOutputs(); ++o)
    if (model.output(o).name == "logits" ||
        (model.numOutputs() == 1 && logitsIndex == model.numOutputs()))
      logitsIndex = o;
  if (logitsIndex == model.numOutputs())
    return invalid("the model has no output 'logits' (and more than one "
                   "output)");
  const Buffer &logits = model.output(logitsIndex);
  if (!isLogitsType(logits.dtype) || logits.shape.size() != 3 ||
      dimFormula(a, a.outputs[logitsIndex], 2))
    return invalid("output '" + logits.name +
                   "' must be float32, float16 or bfloat16 [batch, length, "
                   "vocab] with a static "
                   "vocabulary");
  int64_t vocab = logits.shape[2];
  for (int64_t t : tokens)
    if (t < 0 || t >= vocab)
      return invalid("token " + std::to_string(t) + " is not in the " +
                     "vocabulary of " + std::to_string(vocab));

  // The cache each past input gets next: empty at first. A cache kept in
  // place is one buffer for the whole loop, its length static.
  const SizeFormula *batch = dimFormula(a, a.inputs[ids], 0);
  bool cached = false;
  std::vector<std::vector<char>> pasts(model.numInputs());
  std::vector<std::vector<int64_t>> pastShapes(model.numInputs());
  std::vector<bool> inPlace(model.numInputs(), false);
  for (const OutputAlias &alias : a.aliases) {
    if (roles[alias.input].feed != Feed::Past ||
        roles[alias.input].present != alias.output)
      return invalid("output '" + model.output(alias.output).name +
                     "' is kept in the storage of input '" +
                     model.input(alias.input).name +
                     "', which is not its past cache");
    inPlace[alias.input] = true;
  }
  for (size_t i = 0; i < model.numInputs(); ++i)
    if (roles[i].feed == Feed::Past) {
      cached = true;
      pastShapes[i] = emptyCacheShape(a, a.inputs[i], batch);
      if (inPlace[i]) {
        uint64_t bytes = dtypeSize(model.input(i).dtype);
        for (int64_t d : pastShapes[i])
          bytes *= static_cast<uint64_t>(d);
        pasts[i].assign(bytes, 0);
      }
    }

  Sampler sampler(options);
  // The tokens the cache holds; 0 without one, so every step runs them all.
  size_t inCache = 0;
  for (int64_t step = 0; step < options.maxNewTokens; ++step) {
    int64_t length = static_cast<int64_t>(tokens.size() - inCache);
    int64_t total = static_cast<int64_t>(tokens.size());
    std::vector<std::vector<int64_t>> shapes(model.numInputs());
    for (size_t i = 0; i < model.numInputs(); ++i)
      shapes[i] = roles[i].feed == Feed::Past ? pastShapes[i]
                  : roles[i].feed == Feed::Mask
                      ? std::vector<int64_t>{1, total}
                      : std::vector<int64_t>{1, length};
    std::vector<int64_t> dims;
    if (Status s = model.bindDims(shapes, dims); !s.isOk()) {
      // Later steps only grow the text: past the top of a range, stop.
      if (step > 0)
        break;
      return invalid("the prompt does not fit the model's dims: " + s.message);
    }
    std::vector<std::vector<char>> inputs(model.numInputs());
    for (size_t i = 0; i < model.numInputs(); ++i) {
      const Buffer &b = model.input(i);
      if (roles[i].feed == Feed::Past) {
        if (!inPlace[i])
          inputs[i] = std::move(pasts[i]);
        continue;
      }
      int64_t count = shapes[i][1];
      inputs[i].assign(count * dtypeSize(b.dtype), 0);
      for (int64_t p = 0; p < count; ++p) {
        int64_t value = roles[i].feed == Feed::Ids    ? tokens[inCache + p]
                        : roles[i].feed == Feed::Mask ? 1
                                                      : inCache + p;
        store(b, inputs[i], p, value);
      }
    }
    std::vector<std::vector<char>> outputs(model.numOutputs());
    std::vector<const void *> in;
    std::vector<void *> out;
    for (size_t i = 0; i < model.numInputs(); ++i)
      in.push_back(inPlace[i] ? pasts[i].data() : inputs[i].data());
    for (size_t o = 0; o < model.numOutputs(); ++o) {
      if (auto alias =
              std::find_if(a.aliases.begin(), a.aliases.end(),
                           [&](const OutputAlias &x) { return x.output == o; });
          alias != a.aliases.end()) {
        // The cache itself: the run writes the new rows after the past.
        out.push_back(pasts[alias->input].data());
        continue;
      }
      uint64_t bytes = dtypeSize(model.output(o).dtype);
      for (int64_t d : model.outputShape(o, dims))
        bytes *= static_cast<uint64_t>(d);
      outputs[o].resize(bytes);
      out.push_back(outputs[o].data());
    }
    if (Status s = model.run(dims, in.data(), out.data(), Memory::Host);
        !s.isOk())
      return s;
    std::vector<float> widened;
    const float *row = logitsRow(logits.dtype, outputs[logitsIndex], length - 1,
                                 vocab, widened);
    int64_t next = sampler.pick(row, vocab);
    if (cached) {
      for (size_t i = 0; i < model.numInputs(); ++i)
        if (roles[i].feed == Feed::Past && !inPlace[i]) {
          pasts[i] = std::move(outputs[roles[i].present]);
          pastShapes[i] = model.outputShape(roles[i].present, dims);
        }
      inCache = tokens.size();
    }
    tokens.push_back(next);
    if (options.onToken)
      options.onToken(next);
    if (next == options.eosToken)
      break;
  }
  return Status::ok();
}
