//===- BenchMode.cpp - kiln-run --bench -----------------------------------===//
//
// Latency of whole runs as a user's program sees them: each run is timed
// from the call to its return (kiln_model_run waits for the GPU), so the
// times include host-memory input and output copies. bench/ (DESIGN.md,
// "Performance method") is where speed is compared; this is the tool's
// quick look.
//
//===----------------------------------------------------------------------===//

#include "BenchMode.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

using namespace llvm;

static cl::OptionCategory benchCategory("Timing (--bench)");
static cl::opt<bool> bench("bench",
                           cl::desc("time repeated runs and print min, "
                                    "median and p99 latency"),
                           cl::cat(benchCategory));
static cl::opt<unsigned> warmup("warmup",
                                cl::desc("untimed runs before --bench times"),
                                cl::init(10), cl::cat(benchCategory));
static cl::opt<unsigned> iters("iters", cl::desc("runs --bench times"),
                               cl::init(100), cl::cat(benchCategory));

bool benchRequested() { return bench; }

bool runBench(function_ref<bool()> runOnce, StringRef what) {
  for (unsigned i = 0; i < warmup; ++i)
    if (!runOnce())
      return false;
  std::vector<double> ms;
  for (unsigned i = 0; i < std::max(iters.getValue(), 1u); ++i) {
    auto start = std::chrono::steady_clock::now();
    if (!runOnce())
      return false;
    std::chrono::duration<double, std::milli> took =
        std::chrono::steady_clock::now() - start;
    ms.push_back(took.count());
  }
  std::sort(ms.begin(), ms.end());
  // The nearest-rank percentile: the smallest time at least p of the runs
  // do not exceed.
  auto percentile = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p * ms.size()));
    return ms[std::max<size_t>(rank, 1) - 1];
  };
  outs() << format("bench: %zu runs after %u warm-up: min %.3f ms, median "
                   "%.3f ms, p99 %.3f ms\n",
                   ms.size(), warmup.getValue(), ms.front(), percentile(0.5),
                   percentile(0.99))
         << "bench: " << what << "\n";
  return true;
}
