//===- Generate.cpp - Autoregressive decoding with a compiled model -------===//

#include "kiln/runtime/Generate.h"

#include "GenerateSupport.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

using namespace kiln::rt;

namespace {

/// What each graph input is to the loop.
enum class Feed { Ids, Mask, Positions };

/// The role of input `b`, or an error for an input the loop cannot feed.
Status roleOf(const Buffer &b, Feed &feed) {
  if (b.name == "input_ids")
    feed = Feed::Ids;
  else if (b.name == "attention_mask")
    feed = Feed::Mask;
  else if (b.name == "position_ids")
    feed = Feed::Positions;
  else if (b.name.rfind("sampling_", 0) == 0)
    return invalid("the model chooses its tokens at the window's last "
                   "position (kilnc --next-token), which the padded loop of "
                   "a static model does not fill; compile the sequence "
                   "symbolic (--dim sequence=1:N)");
  else
    return invalid("the model takes an input '" + b.name +
                   "'; the loop feeds input_ids, attention_mask and "
                   "position_ids only (a decoder with a KV cache is compiled "
                   "with symbolic dims)");
  return Status::ok();
}

/// Checks that input `b`, fed as `feed`, has a type and shape the loop
/// can fill.
Status checkFeed(const Buffer &b, Feed feed, int64_t window) {
  bool intType = b.dtype == DType::I64 || b.dtype == DType::I32;
  bool maskType = feed == Feed::Mask &&
                  (b.dtype == DType::F32 || b.dtype == DType::Bool);
  if (!intType && !maskType)
    return invalid("input '" + b.name + "' is " + dtypeName(b.dtype) +
                   "; expected int64 or int32");
  if (b.shape.size() != 2 || b.shape[0] != 1 || b.shape[1] != window)
    return invalid("input '" + b.name + "' must be [1, " +
                   std::to_string(window) + "] (compile with --dim for "
                   "batch 1 and the window)");
  return Status::ok();
}

} // namespace

Status kiln::rt::generate(Model &model, const GenerateOptions &options,
                          std::vector<int64_t> &tokens) {
  if (tokens.empty())
    return invalid("the prompt is empty");
  if (options.topK < 0 || options.topP <= 0 || options.topP > 1 ||
      !(options.temperature >= 0))
    return invalid("top-k must be >= 0, top-p in (0, 1] and the temperature "
                   ">= 0");
  if (!model.dims().empty())
    return generateOverDims(model, options, tokens);
  // The window is input_ids' sequence length.
  int64_t window = -1;
  for (size_t i = 0; i < model.numInputs(); ++i)
    if (model.input(i).name == "input_ids" && model.input(i).shape.size() == 2)
      window = model.input(i).shape[1];
  if (window < 0)
    return invalid("the model has no input 'input_ids' of rank 2");
  // Every input's role first: an input the loop cannot feed says more than
  // a shape that does not fit.
  std::vector<Feed> feeds(model.numInputs());
  for (size_t i = 0; i < model.numInputs(); ++i)
    if (Status s = roleOf(model.input(i), feeds[i]); !s.isOk())
      return s;
  std::vector<std::vector<char>> inputs(model.numInputs());
  for (size_t i = 0; i < model.numInputs(); ++i) {
    if (Status s = checkFeed(model.input(i), feeds[i], window); !s.isOk())
      return s;
    inputs[i].assign(model.input(i).bytes, 0);
  }
  // The logits: the output of that name, else the only output.
  size_t logitsIndex = model.numOutputs();
  for (size_t i = 0; i < model.numOutputs(); ++i)
    if (model.output(i).name == "logits")
      logitsIndex = i;
  if (logitsIndex == model.numOutputs() && model.numOutputs() == 1)
    logitsIndex = 0;
  if (logitsIndex == model.numOutputs())
    return invalid("the model has no output 'logits' (and more than one "
                   "output)");
  const Buffer &logits = model.output(logitsIndex);
  if (!isLogitsType(logits.dtype) || logits.shape.size() != 3 ||
      logits.shape[0] != 1 || logits.shape[1] != window || logits.shape[2] < 1)
    return invalid("output '" + logits.name +
                   "' must be float32, float16 or bfloat16 [1, " +
                   std::to_string(window) + ", vocab]");
  int64_t vocab = logits.shape[2];
  if (static_cast<int64_t>(tokens.size()) > window)
    return invalid("the prompt has " + std::to_string(tokens.size()) +
                   " tokens, more than the window of " +
                   std::to_string(window));
  for (int64_t t : tokens)
    if (t < 0 || t >= vocab)
      return invalid("token " + std::to_string(t) + " is not in the " +
                     "vocabulary of " + std::to_string(vocab));

  std::vector<std::vector<char>> outputs(model.numOutputs());
  for (size_t i = 0; i < model.numOutputs(); ++i)
    outputs[i].resize(model.output(i).bytes);
  std::vector<const void *> in;
  std::vector<void *> out;
  for (auto &b : inputs)
    in.push_back(b.data());
  for (auto &b : outputs)
    out.push_back(b.data());

  Sampler sampler(options);
  for (int64_t step = 0; step < options.maxNewTokens; ++step) {
    int64_t length = tokens.size();
    if (length >= window)
      break;
    for (size_t i = 0; i < inputs.size(); ++i)
      for (int64_t p = 0; p < window; ++p) {
        int64_t value = 0;
        switch (feeds[i]) {
        case Feed::Ids:
          value = p < length ? tokens[p] : 0;
          break;
        case Feed::Mask:
          value = p < length;
          break;
        case Feed::Positions:
          value = p;
          break;
        }
        store(model.input(i), inputs[i], p, value);
      }
    if (Status s = model.run(in.data(), out.data(), Memory::Host); !s.isOk())
      return s;
    std::vector<float> widened;
    const float *row = logitsRow(logits.dtype, outputs[logitsIndex], length - 1,
                                 vocab, widened);
    int64_t next = sampler.pick(row, vocab);
    tokens.push_back(next);
    if (options.onToken)
      options.onToken(next);
    if (next == options.eosToken)
      break;
  }
  return Status::ok();
}
