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
#include "llvm/Support/raw_ostream.h"

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
  std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  size_t promptLength = tokens.size();
  kiln::rt::Status status = kiln::rt::generate(model, options, tokens);
  if (!status.isOk()) {
    errs() << "kiln-run: " << status.message << "\n";
    return 1;
  }
  size_t count = tokens.size() - promptLength;
  outs() << "generated " << count << (count == 1 ? " token:" : " tokens:");
  for (size_t i = promptLength; i < tokens.size(); ++i)
    outs() << " " << tokens[i];
  outs() << "\n";
  return 0;
}
