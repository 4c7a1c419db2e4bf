//===- BenchMode.h - kiln-run --bench ---------------------------*- C++ -*-===//

#ifndef KILN_TOOLS_KILN_RUN_BENCHMODE_H
#define KILN_TOOLS_KILN_RUN_BENCHMODE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

/// Whether --bench was given.
bool benchRequested();

/// Runs `runOnce` --warmup times, then --iters times each timed on the wall
/// clock, and prints min / median / p99 in milliseconds. `what` says what
/// the times cover (a host-backend time is an emulation, not GPU time).
/// Returns false when a run fails (runOnce has said why).
bool runBench(llvm::function_ref<bool()> runOnce, llvm::StringRef what);

#endif // KILN_TOOLS_KILN_RUN_BENCHMODE_H
