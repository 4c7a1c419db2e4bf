//===- BenchMode.cpp - kiln-run --bench -----------------------------------===//
//
// Latency of whole runs as a user's program sees them: each run is timed
// from the call to its return (kiln_model_run waits for the GPU), so the
// times include host-memory input and output copies. On the CUDA backend a
// second line gives the GPU's view: device-memory runs between CUDA events
// (`Model::timeDeviceRuns`), what bench/ compares with its peers (DESIGN.md,
// "Performance method").
//
//===----------------------------------------------------------------------===//

#include "BenchMode.h"

#include "llvm/ADT/STLExtras.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
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

static cl::opt<unsigned> threads(
    "threads",
    cl::desc("with --bench: run N execution contexts of the model at once, "
             "one thread each, and print the throughput"),
    cl::init(1), cl::cat(benchCategory));

bool benchRequested() { return bench; }

unsigned benchThreads() { return std::max(threads.getValue(), 1u); }

unsigned benchWarmup() { return warmup; }

unsigned benchIters() { return std::max(iters.getValue(), 1u); }

std::string latencySummary(std::vector<double> ms) {
  if (ms.empty())
    return "no runs";
  std::sort(ms.begin(), ms.end());
  // The nearest-rank percentile: the smallest time at least p of the runs
  // do not exceed.
  auto percentile = [&](double p) {
    size_t rank = static_cast<size_t>(std::ceil(p * ms.size()));
    return ms[std::max<size_t>(rank, 1) - 1];
  };
  // Four decimals: a tenth of a microsecond, which decides a comparison of
  // kernels that take tens of microseconds (three gave whole ones).
  std::string text;
  raw_string_ostream os(text);
  os << format("min %.4f ms, median %.4f ms, p99 %.4f ms", ms.front(),
               percentile(0.5), percentile(0.99));
  return text;
}

/// Waits until `count` threads have arrived; then all go on.
class Barrier {
public:
  explicit Barrier(size_t count) : left(count) {}
  void arriveAndWait() {
    std::unique_lock<std::mutex> lock(mutex);
    if (--left == 0)
      released.notify_all();
    else
      released.wait(lock, [&] { return left == 0; });
  }

private:
  std::mutex mutex;
  std::condition_variable released;
  size_t left;
};

/// Runs `run` --warmup times untimed, waits at `start` for the other
/// threads, then runs it --iters times into `ms`. A thread whose warm-up
/// failed still arrives, so that the others are not left waiting.
static bool timeRuns(const BenchRun &run, Barrier &start,
                     std::vector<double> &ms) {
  bool ok = true;
  for (unsigned i = 0; i < warmup && ok; ++i)
    ok = run();
  start.arriveAndWait();
  for (unsigned i = 0; i < benchIters() && ok; ++i) {
    auto begin = std::chrono::steady_clock::now();
    ok = run();
    std::chrono::duration<double, std::milli> took =
        std::chrono::steady_clock::now() - begin;
    ms.push_back(took.count());
  }
  return ok;
}

bool runBench(ArrayRef<BenchRun> runners, StringRef what) {
  std::vector<std::vector<double>> perThread(runners.size());
  std::vector<char> ok(runners.size(), 0);
  // The wall time of the timed runs: from the moment every thread has
  // warmed up (the last to arrive releases the others) to the last one done.
  Barrier start(runners.size() + 1);
  std::vector<std::thread> workers;
  for (size_t t = 0; t < runners.size(); ++t)
    workers.emplace_back(
        [&, t] { ok[t] = timeRuns(runners[t], start, perThread[t]); });
  start.arriveAndWait();
  auto begin = std::chrono::steady_clock::now();
  for (std::thread &worker : workers)
    worker.join();
  std::chrono::duration<double> wall = std::chrono::steady_clock::now() - begin;
  if (llvm::is_contained(ok, 0))
    return false;
  std::vector<double> ms;
  for (const std::vector<double> &times : perThread)
    ms.insert(ms.end(), times.begin(), times.end());
  size_t each = perThread[0].size();
  if (runners.size() == 1)
    outs() << format("bench: %zu runs after %u warm-up: ", each,
                     warmup.getValue());
  else
    outs() << format("bench: %zu threads x %zu runs after %u warm-up each: ",
                     runners.size(), each, warmup.getValue());
  outs() << latencySummary(std::move(ms)) << "\n";
  if (runners.size() > 1)
    outs() << format("bench: throughput %.1f runs/s over %zu contexts\n",
                     double(runners.size() * each) / wall.count(),
                     runners.size());
  outs() << "bench: " << what << "\n";
  return true;
}
