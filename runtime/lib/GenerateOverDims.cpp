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
#include "GenerateTensors.h"

#include "kiln/runtime/ArtifactDims.h"
#include "kiln/runtime/DeviceCopy.h"

#include <optional>

using namespace kiln::rt;

namespace {

/// What each graph input is to the loop: the text, or a past cache, or how
/// the model's own choice of the next token (`kilnc --next-token`) samples.
enum class Feed {
  Ids,
  Mask,
  Positions,
  Past,
  Temperature,
  TopK,
  TopP,
  Uniform
};

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
    } else if (b.name == "sampling_temperature") {
      role.feed = Feed::Temperature;
    } else if (b.name == "sampling_top_k") {
      role.feed = Feed::TopK;
    } else if (b.name == "sampling_top_p") {
      role.feed = Feed::TopP;
    } else if (b.name == "sampling_uniform") {
      role.feed = Feed::Uniform;
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
                     "position_ids, past_key_values.* and sampling_* only");
    }
    if (role.feed >= Feed::Temperature) {
      DType want = role.feed == Feed::TopK ? DType::I64 : DType::F32;
      size_t rank = role.feed == Feed::Uniform ? 2 : 1;
      if (b.dtype != want || b.shape.size() != rank)
        return invalid("input '" + b.name + "' is not what kilnc " +
                       "--next-token makes (" + dtypeName(want) + ", rank " +
                       std::to_string(rank) + ")");
      continue;
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

/// The model's own choice of the next token (`kilnc --next-token`): its
/// outputs, and whether it can make the choice `options` asks for.
struct ModelChoice {
  size_t token = 0;
  /// The most likely tokens it chooses among; top-k beyond them is sampled
  /// on the host from the logits.
  int64_t bound = 0;
  bool usable = false;
};

ModelChoice modelChoiceOf(const Model &model, const GenerateOptions &options,
                          const std::vector<InputRole> &roles, int64_t vocab) {
  ModelChoice choice;
  size_t token = model.numOutputs(), candidates = model.numOutputs();
  for (size_t o = 0; o < model.numOutputs(); ++o) {
    const Buffer &b = model.output(o);
    if (b.name == "next_token" && b.dtype == DType::I64 && b.shape.size() == 1)
      token = o;
    if (b.name == "next_token_candidates" && b.shape.size() == 2)
      candidates = o;
  }
  int feeds = 0;
  for (const InputRole &role : roles)
    feeds += role.feed >= Feed::Temperature;
  if (token == model.numOutputs() || candidates == model.numOutputs() ||
      feeds != 4)
    return choice;
  choice.token = token;
  choice.bound = model.output(candidates).shape[1];
  int64_t topK = options.topK > 0 ? std::min(options.topK, vocab) : vocab;
  choice.usable = options.temperature <= 0 || topK <= choice.bound;
  return choice;
}

/// Writes `value` as the float32 element `i` of `bytes`.
void storeFloat(std::vector<char> &bytes, int64_t i, float value) {
  std::memcpy(bytes.data() + i * sizeof(float), &value, sizeof(float));
}

/// What a step feeds each input that is not a cache.
struct StepFeed {
  /// The text so far, of which the cache holds the first `inCache`.
  const std::vector<int64_t> &tokens;
  size_t inCache;
  const GenerateOptions &options;
  /// For a model that chooses its own tokens: greedy is top-k 1 at any
  /// temperature; top-p 1 keeps every token (the mass before the last may
  /// round to 1); the draw is the host sampler's next.
  float temperature = 1;
  int64_t topK = 1;
  float topP = INFINITY;
  float uniform = 0;

  /// Sets the sampling inputs of a model that chooses among its `bound`
  /// most likely tokens, drawing from `sampler` when not greedy.
  void sampleWith(Sampler &sampler, int64_t bound) {
    if (options.temperature <= 0)
      return;
    temperature = static_cast<float>(options.temperature);
    topK = options.topK <= 0 ? bound : std::min(options.topK, bound);
    topP = options.topP >= 1 ? INFINITY : static_cast<float>(options.topP);
    uniform = static_cast<float>(sampler.uniform());
  }

  /// The `count` values of input `b`, fed as `feed`, as its bytes.
  std::vector<char> values(const Buffer &b, Feed feed, int64_t count) const {
    std::vector<char> bytes(count * dtypeSize(b.dtype), 0);
    for (int64_t p = 0; p < count; ++p)
      switch (feed) {
      case Feed::Ids:
        store(b, bytes, p, tokens[inCache + p]);
        break;
      case Feed::Mask:
        store(b, bytes, p, 1);
        break;
      case Feed::Positions:
        store(b, bytes, p, static_cast<int64_t>(inCache) + p);
        break;
      case Feed::Temperature:
        storeFloat(bytes, p, temperature);
        break;
      case Feed::TopK:
        store(b, bytes, p, topK);
        break;
      case Feed::TopP:
        storeFloat(bytes, p, topP);
        break;
      case Feed::Uniform:
        storeFloat(bytes, p, uniform);
        break;
      case Feed::Past:
        break;
      }
    return bytes;
  }
};

/// The logits: the output named so, else the only one besides the two
/// kilnc --next-token adds (it keeps the name of a model's single output);
/// numOutputs() when there is none.
size_t logitsOutput(const Model &model) {
  size_t others = 0, other = 0;
  for (size_t o = 0; o < model.numOutputs(); ++o) {
    const std::string &name = model.output(o).name;
    if (name == "logits")
      return o;
    if (name != "next_token" && name != "next_token_candidates")
      other = o, ++others;
  }
  return others == 1 ? other : model.numOutputs();
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

/// `s`, its message prefixed with what the loop was doing (`what`, of the
/// tensor `name` where one is given): a device error alone
/// (CUDA_ERROR_INVALID_VALUE) does not say which of a step's copies failed.
/// The message is built only for a failure: every copy of every step
/// passes through here.
Status doing(Status s, const char *what, const std::string &name = {}) {
  if (!s.isOk())
    s.message = std::string(what) + (name.empty() ? "" : " '" + name + "'") +
                ": " + s.message;
  return s;
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
  size_t logitsIndex = logitsOutput(model);
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

  // Every tensor keeps one slot for the loop, sized at the top of its
  // dims' ranges (GenerateTensors.h). A past cache fed back swaps slots
  // with its present after each step; one kept in place is its input's
  // slot, passed as the present too.
  const SizeFormula *batch = dimFormula(a, a.inputs[ids], 0);
  bool cached = false;
  std::vector<std::vector<int64_t>> pastShapes(model.numInputs());
  std::vector<bool> inPlace(model.numInputs(), false);
  std::vector<int> aliasOf(model.numOutputs(), -1);
  for (const OutputAlias &alias : a.aliases) {
    if (roles[alias.input].feed != Feed::Past ||
        roles[alias.input].present != alias.output)
      return invalid("output '" + model.output(alias.output).name +
                     "' is kept in the storage of input '" +
                     model.input(alias.input).name +
                     "', which is not its past cache");
    inPlace[alias.input] = true;
    aliasOf[alias.output] = static_cast<int>(alias.input);
  }
  Memory memory = loopMemory(model);
  std::vector<TensorSlot> inputSlots(model.numInputs());
  std::vector<TensorSlot> outputSlots(model.numOutputs());
  // A fed-back past and its present trade slots, so both hold the larger.
  std::vector<size_t> outputBytes(model.numOutputs());
  for (size_t o = 0; o < model.numOutputs(); ++o)
    outputBytes[o] = model.output(o).bytes;
  for (size_t i = 0; i < model.numInputs(); ++i) {
    // A canonical buffer is sized at the top of its dims' ranges.
    size_t bytes = model.input(i).bytes;
    if (roles[i].feed == Feed::Past) {
      cached = true;
      pastShapes[i] = emptyCacheShape(a, a.inputs[i], batch);
      size_t &present = outputBytes[roles[i].present];
      if (!inPlace[i])
        bytes = present = std::max(bytes, present);
    }
    if (Status s = doing(inputSlots[i].allocate(memory, bytes, model.device()),
                         "allocating input", model.input(i).name);
        !s.isOk())
      return s;
  }
  for (size_t o = 0; o < model.numOutputs(); ++o)
    if (aliasOf[o] < 0)
      if (Status s = doing(
              outputSlots[o].allocate(memory, outputBytes[o], model.device()),
              "allocating output", model.output(o).name);
          !s.isOk())
        return s;

  Sampler sampler(options);
  ModelChoice modelChoice = modelChoiceOf(model, options, roles, vocab);
  // Declared after the slots, so that it waits for its work before they go.
  DeviceQueue queue;
  if (Status s = queue.create(memory, model.device()); !s.isOk())
    return s;
  // A model that chooses its own tokens writes each into the next step's
  // input_ids on the device, and the loop queues that step before it reads
  // the token (for the text and the end-of-text check): the GPU goes from
  // step to step while the host prepares the next. The host learns a token
  // a step late, so a step queued after the end of the text is discarded.
  // A token is the low bytes of next_token's int64 (little-endian; token
  // ids are below 2^31), so int32 ids take it too.
  size_t idBytes = dtypeSize(model.input(ids).dtype);
  // The read slot of the step whose token is not read yet.
  std::optional<unsigned> pending;
  bool ended = false;
  auto append = [&](int64_t next) {
    tokens.push_back(next);
    if (options.onToken)
      options.onToken(next);
    ended = next == options.eosToken;
  };
  auto takePending = [&]() -> Status {
    int64_t next = 0;
    if (Status s = queue.takeRead(*pending, &next, sizeof(next)); !s.isOk())
      return s;
    pending.reset();
    append(next);
    return Status::ok();
  };
  // The tokens the cache holds; 0 without one, so every step runs them all.
  size_t inCache = 0;
  for (int64_t step = 0; step < options.maxNewTokens && !ended; ++step) {
    int64_t total = static_cast<int64_t>(tokens.size()) + (pending ? 1 : 0);
    int64_t length = total - static_cast<int64_t>(inCache);
    std::vector<std::vector<int64_t>> shapes(model.numInputs());
    for (size_t i = 0; i < model.numInputs(); ++i)
      shapes[i] = roles[i].feed == Feed::Past   ? pastShapes[i]
                  : roles[i].feed == Feed::Mask ? std::vector<int64_t>{1, total}
                  : roles[i].feed == Feed::Uniform ? std::vector<int64_t>{1, 1}
                  : roles[i].feed >= Feed::Temperature
                      ? std::vector<int64_t>{1}
                      : std::vector<int64_t>{1, length};
    std::vector<int64_t> dims;
    if (Status s = model.bindDims(shapes, dims); !s.isOk()) {
      // Later steps only grow the text: past the top of a range, stop.
      if (step > 0)
        break;
      return invalid("the prompt does not fit the model's dims: " + s.message);
    }
    StepFeed feed{tokens, inCache, options};
    if (modelChoice.usable)
      feed.sampleWith(sampler, modelChoice.bound);
    for (size_t i = 0; i < model.numInputs(); ++i) {
      if (roles[i].feed == Feed::Past)
        continue;
      if (roles[i].feed == Feed::Ids && pending) {
        // The pending token, from the last step's output to the last
        // position; the earlier ones are in place from the steps before.
        void *last =
            static_cast<char *>(inputSlots[i].data()) + (length - 1) * idBytes;
        if (Status s =
                doing(queue.copy(last, outputSlots[modelChoice.token].data(),
                                 memory, idBytes),
                      "copying the chosen token into", model.input(i).name);
            !s.isOk())
          return s;
        continue;
      }
      int64_t count = roles[i].feed >= Feed::Temperature ? 1 : shapes[i][1];
      std::vector<char> values =
          feed.values(model.input(i), roles[i].feed, count);
      if (Status s = doing(inputSlots[i].update(values, queue), "feeding input",
                           model.input(i).name);
          !s.isOk())
        return s;
    }
    std::vector<const void *> in;
    std::vector<void *> out;
    for (size_t i = 0; i < model.numInputs(); ++i)
      in.push_back(inputSlots[i].data());
    for (size_t o = 0; o < model.numOutputs(); ++o)
      // A cache kept in place: the run writes the new rows after the past.
      out.push_back(aliasOf[o] >= 0 ? inputSlots[aliasOf[o]].data()
                                    : outputSlots[o].data());
    if (Status s = model.enqueue(dims, in.data(), out.data(), queue.stream());
        !s.isOk())
      return s;
    unsigned slot = static_cast<unsigned>(step) % DeviceQueue::kReadSlots;
    if (modelChoice.usable)
      if (Status s =
              doing(queue.queueRead(slot, outputSlots[modelChoice.token].data(),
                                    sizeof(int64_t)),
                    "reading the chosen token");
          !s.isOk())
        return s;
    if (cached) {
      for (size_t i = 0; i < model.numInputs(); ++i)
        if (roles[i].feed == Feed::Past && !inPlace[i]) {
          std::swap(inputSlots[i], outputSlots[roles[i].present]);
          pastShapes[i] = model.outputShape(roles[i].present, dims);
        }
      inCache = static_cast<size_t>(total);
    }
    // This step is queued: now the last one's token.
    if (pending)
      if (Status s = takePending(); !s.isOk())
        return s;
    if (modelChoice.usable) {
      pending = slot;
      continue;
    }
    // The host samples from the step's last row of logits.
    if (Status s = queue.synchronize(); !s.isOk())
      return s;
    size_t rowBytes = vocab * dtypeSize(logits.dtype);
    std::vector<char> row(rowBytes);
    if (Status s = outputSlots[logitsIndex].download((length - 1) * rowBytes,
                                                     rowBytes, row.data());
        !s.isOk())
      return s;
    std::vector<float> widened;
    append(
        sampler.pick(logitsRow(logits.dtype, row, 0, vocab, widened), vocab));
  }
  if (pending && !ended)
    if (Status s = takePending(); !s.isOk())
      return s;
  // A step's index fault is reported once the queued steps are done.
  if (Status s = queue.synchronize(); !s.isOk())
    return s;
  return model.synchronize();
}

bool kiln::rt::modelChoosesTokens(const Model &model,
                                  const GenerateOptions &options) {
  std::vector<InputRole> roles;
  if (model.dims().empty() || !rolesOf(model, roles).isOk())
    return false;
  size_t logits = logitsOutput(model);
  if (logits == model.numOutputs() || model.output(logits).shape.size() != 3)
    return false;
  return modelChoiceOf(model, options, roles, model.output(logits).shape[2])
      .usable;
}
