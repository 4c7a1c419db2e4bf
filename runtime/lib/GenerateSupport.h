//===- GenerateSupport.h - What the decoding loops share ---------*- C++
//-*-===//
//
// Private to the runtime: the sampler both loops of Generate.cpp and
// GenerateOverDims.cpp pick tokens with, and their errors.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_GENERATESUPPORT_H
#define KILN_RUNTIME_LIB_GENERATESUPPORT_H

#include "kiln/runtime/Generate.h"

// The fp16/bf16 widening the emulated kernels use.
#include "kiln_cuda_host_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

inline Status invalid(const std::string &message) {
  return Status::error(StatusCode::InvalidArgument, "generate: " + message);
}

/// Writes `value` as element `i` of an integer or float tensor.
inline void store(const Buffer &b, std::vector<char> &bytes, int64_t i,
                  int64_t value) {
  char *at = bytes.data() + i * dtypeSize(b.dtype);
  switch (b.dtype) {
  case DType::I64: {
    std::memcpy(at, &value, sizeof(value));
    break;
  }
  case DType::I32: {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(at, &v, sizeof(v));
    break;
  }
  case DType::F32: {
    float v = static_cast<float>(value);
    std::memcpy(at, &v, sizeof(v));
    break;
  }
  case DType::Bool:
    *at = value != 0;
    break;
  default:
    break; // Refused by `checkFeed`.
  }
}

/// Whether the loops read logits of `dtype`: 32- or 16-bit floats (an
/// fp16 model's logits stay fp16 with --keep-io-types, as a genai fp16
/// model's do).
inline bool isLogitsType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

/// Row `row` of the `vocab`-wide logits `bytes` of `dtype`, as floats
/// (widened into `widened` unless they are floats already).
inline const float *logitsRow(DType dtype, const std::vector<char> &bytes,
                              int64_t row, int64_t vocab,
                              std::vector<float> &widened) {
  if (dtype == DType::F32)
    return reinterpret_cast<const float *>(bytes.data()) + row * vocab;
  widened.resize(vocab);
  const char *at = bytes.data() + row * vocab * sizeof(uint16_t);
  for (int64_t i = 0; i < vocab; ++i) {
    uint16_t bits;
    std::memcpy(&bits, at + i * sizeof(bits), sizeof(bits));
    widened[i] = dtype == DType::F16 ? kiln_host_detail::halfBitsToFloat(bits)
                                     : kiln_host_detail::bf16BitsToFloat(bits);
  }
  return widened.data();
}

/// Picks the next token from one position's logits.
class Sampler {
public:
  explicit Sampler(const GenerateOptions &options)
      : options(options), rng(options.seed) {}

  int64_t pick(const float *logits, int64_t vocab) {
    if (options.temperature <= 0)
      return std::max_element(logits, logits + vocab) - logits;
    // Most likely first; the lower id first on a tie, so that the order
    // (and so the draw) does not depend on the sort.
    std::vector<int64_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return logits[a] > logits[b];
    });
    if (options.topK > 0 && options.topK < vocab)
      order.resize(options.topK);
    std::vector<double> probs(order.size());
    double top = logits[order[0]] / options.temperature, sum = 0;
    for (size_t i = 0; i < order.size(); ++i)
      sum += probs[i] = std::exp(logits[order[i]] / options.temperature - top);
    size_t keep = order.size();
    if (options.topP < 1) {
      double cumulative = 0;
      for (keep = 0; keep < order.size();)
        if ((cumulative += probs[keep++] / sum) >= options.topP)
          break;
      sum = std::accumulate(probs.begin(), probs.begin() + keep, 0.0);
    }
    double u = uniform() * sum;
    for (size_t i = 0; i + 1 < keep; ++i)
      if ((u -= probs[i]) < 0)
        return order[i];
    return order[keep - 1];
  }

  /// The next draw in [0, 1): 53 random bits as a double, the same on
  /// every library, unlike std::uniform_real_distribution. A model that
  /// chooses its own tokens (kilnc --next-token) takes the draw as an
  /// input, so it samples from the same sequence as pick.
  double uniform() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

private:
  const GenerateOptions &options;
  std::mt19937_64 rng;
};

/// The loop over a model compiled with symbolic dims (GenerateOverDims.cpp):
/// each step runs at the length it needs; a decoder with a KV cache feeds
/// the prompt once, then one token a step with the cache so far.
Status generateOverDims(Model &model, const GenerateOptions &options,
                        std::vector<int64_t> &tokens);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_GENERATESUPPORT_H
