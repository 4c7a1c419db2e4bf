//===- Generate.h - Autoregressive decoding with a model --------*- C++ -*-===//
//
// Greedy or sampled decoding with a compiled causal language model: the
// tokens so far go in as `input_ids` (with `attention_mask` and
// `position_ids` when the model takes them) and the next token comes from
// the logits at the last position.
//
// A model compiled with symbolic dims (`--dim batch=1:1,sequence=1:64`)
// runs each step at the length it needs (GenerateOverDims.cpp): the whole
// text so far, or, for a decoder with a KV cache (inputs
// `past_key_values.*`, outputs `present.*`), the prompt once and then one
// token a step with the cache so far (one buffer per cache, appended in
// place, when the model was compiled with `--kv-cache-in-place`; the
// presents fed back as the next pasts otherwise); the loop stops early when
// the text reaches the top of a dim's range. A static model is compiled for
// one window (batch 1, sequence = the longest text) and every step runs the
// whole window with the positions after the text masked out: a causal model
// does not look ahead, so the padding changes nothing before it and the
// tokens are those of an unpadded loop, at the cost of the whole window a
// step. test/models/check_generate.py checks both against onnxruntime.
//
// On a GPU the loop over symbolic dims keeps every tensor in device memory
// between steps (the caches, the logits); a step uploads its new token and
// reads back a row of logits, or, from a model compiled with `kilnc
// --next-token=N`, only the token id the model chose itself, greedy or
// sampled from the same draws as the host's sampler (docs/generate.md).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_GENERATE_H
#define KILN_RUNTIME_GENERATE_H

#include "kiln/runtime/Model.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace kiln {
namespace rt {

/// How `generate` picks each token.
struct GenerateOptions {
  /// Tokens to add after the prompt, at most; the window may stop it first.
  int64_t maxNewTokens = 32;
  /// 0 takes the most likely token (greedy, the lowest id on a tie);
  /// otherwise the logits are divided by it and a token is sampled.
  double temperature = 0;
  /// When sampling: only among the k most likely tokens (0: all).
  int64_t topK = 0;
  /// When sampling: only among the most likely tokens whose probabilities
  /// first add up to at least p (1: all).
  double topP = 1;
  /// Seeds the sampler (std::mt19937_64): a seed gives the same tokens on
  /// every machine.
  uint64_t seed = 0;
  /// Stop once this token is generated (-1: never).
  int64_t eosToken = -1;
  /// Called with each new token as soon as it is chosen (streaming; also
  /// how `kiln-run --generate` times the steps). May be empty.
  std::function<void(int64_t token)> onToken;
};

/// Appends up to `options.maxNewTokens` tokens to `tokens`, which holds the
/// prompt (at least one token) on entry. The model takes `input_ids`
/// ([1, length], int64 or int32) and optionally `attention_mask` and
/// `position_ids` ([1, length], the mask over the cache too) and
/// `past_key_values.*` with their `present.*` outputs, and has an output
/// `logits` (or a single output) of [1, length, vocab] floats. Fails with
/// `InvalidArgument` naming what does not fit.
Status generate(Model &model, const GenerateOptions &options,
                std::vector<int64_t> &tokens);

/// Whether `generate` takes each token from the model's own choice (a
/// model compiled with symbolic dims and `kilnc --next-token=N`, where
/// greedy or `options.topK` is at most N): a step then reads one token id,
/// and sampling runs in the model's run. Otherwise each step reads a row of
/// logits and the host samples.
bool modelChoosesTokens(const Model &model, const GenerateOptions &options);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_GENERATE_H
