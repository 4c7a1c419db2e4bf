//===- GenerateMode.cpp - kiln-run --generate -----------------------------===//
//
// Text generation with a compiled causal language model through the C++
// API's loop (kiln/runtime/Generate.h), on token ids: Kiln has no
// tokenizer, so the prompt goes in and the tokens come out as ids.
//
//===----------------------------------------------------------------------===//

#include "GenerateMode.h"

#include "kiln/runtime/Generate.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace llvm;

static cl::OptionCategory generateCategory("Generation (--generate)");
static cl::opt<int64_t> generateTokens(
    "generate",
    cl::desc("decode up to N tokens after --prompt with a causal language "
             "model compiled for batch 1 and a window, and print them"),
    cl::value_desc("N"), cl::init(0), cl::cat(generateCategory));
static cl::list<int64_t> prompt("prompt", cl::desc("the prompt's token ids"),
                                cl::CommaSeparated, cl::value_desc("id,..."),
                                cl::cat(generateCategory));
static cl::opt<double>
    temperature("temperature",
                cl::desc("sample at this temperature (default 0: greedy)"),
                cl::init(0), cl::cat(generateCategory));
static cl::opt<int64_t> topK("top-k",
                             cl::desc("sample among the k most likely only"),
                             cl::init(0), cl::cat(generateCategory));
static cl::opt<double>
    topP("top-p", cl::desc("sample among the most likely tokens that make up "
                           "probability p"),
         cl::init(1), cl::cat(generateCategory));
static cl::opt<uint64_t> sampleSeed("sample-seed",
                                    cl::desc("seed of the sampler"),
                                    cl::init(0), cl::cat(generateCategory));
static cl::opt<int64_t> eosToken("eos-token",
                                 cl::desc("stop after this token id"),
                                 cl::init(-1), cl::cat(generateCategory));

bool generateRequested() { return generateTokens.getNumOccurrences() > 0; }

int runGenerate(kiln::rt::Model &model) {
  kiln::rt::GenerateOptions options;
  options.maxNewTokens = generateTokens;
  options.temperature = temperature;
  options.topK = topK;
  options.topP = topP;
  options.seed = sampleSeed;
  options.eosToken = eosToken;
  // When each token came: the first after the prompt's run, each later one
  // after one decoding step.
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> arrivals;
  options.onToken = [&](int64_t) { arrivals.push_back(Clock::now()); };
  std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  size_t promptLength = tokens.size();
  Clock::time_point start = Clock::now();
  kiln::rt::Status status = kiln::rt::generate(model, options, tokens);
  if (!status.isOk()) {
    errs() << "kiln-run: " << status.message << "\n";
    return 1;
  }
  outs() << "tokens chosen "
         << (kiln::rt::modelChoosesTokens(model, options)
                 ? "by the model (kilnc --next-token): one token id read a "
                   "step"
                 : "on the host from a row of logits a step")
         << "\n";
  size_t count = tokens.size() - promptLength;
  outs() << "generated " << count << (count == 1 ? " token:" : " tokens:");
  for (size_t i = promptLength; i < tokens.size(); ++i)
    outs() << " " << tokens[i];
  outs() << "\n";
  if (!arrivals.empty()) {
    auto ms = [](Clock::duration d) {
      return std::chrono::duration<double, std::milli>(d).count();
    };
    outs() << format("timing: first token %.3f ms", ms(arrivals[0] - start));
    std::vector<double> steps;
    for (size_t i = 1; i < arrivals.size(); ++i)
      steps.push_back(ms(arrivals[i] - arrivals[i - 1]));
    if (!steps.empty()) {
      std::nth_element(steps.begin(), steps.begin() + steps.size() / 2,
                       steps.end());
      outs() << format(", then a median %.3f ms a token over %zu steps",
                       steps[steps.size() / 2], steps.size());
    }
    outs() << "\n";
  }
  return 0;
}
