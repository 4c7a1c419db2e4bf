//===- BenchMode.h - kiln-run --bench ---------------------------*- C++ -*-===//

#ifndef KILN_TOOLS_KILN_RUN_BENCHMODE_H
#define KILN_TOOLS_KILN_RUN_BENCHMODE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <string>
#include <vector>

/// Whether --bench was given.
bool benchRequested();

/// How many threads --bench runs at once (--threads, at least 1).
unsigned benchThreads();

/// Untimed runs before the timed ones (--warmup).
unsigned benchWarmup();

/// Timed runs (--iters, at least 1).
unsigned benchIters();

/// Returns "min X ms, median Y ms, p99 Z ms" of `ms`.
std::string latencySummary(std::vector<double> ms);

/// One run of the model on one execution context; false when it failed (it
/// has said why).
using BenchRun = std::function<bool()>;

/// With one runner: runs it --warmup times, then --iters times each timed on
/// the wall clock, and prints min / median / p99 in milliseconds. With
/// several (--threads): each on its own thread at once, the same counts
/// each, and prints the latencies of all timed runs and the throughput.
/// `what` says what the times cover (a host-backend time is an emulation,
/// not GPU time). Returns false when a run fails.
bool runBench(llvm::ArrayRef<BenchRun> runners, llvm::StringRef what);

#endif // KILN_TOOLS_KILN_RUN_BENCHMODE_H
