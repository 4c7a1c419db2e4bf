//===- MatmulChoice.cpp - Choose among GEMM candidates --------------------===//
//
// The choice of how the CUDA backend runs a matmul step: the candidates
// cuBLASLt's heuristic offers for the step's shape and alignment, timed on the
// run's own operands where that is safe, and the winners remembered per shape
// (tunedKey).
//
//===----------------------------------------------------------------------===//

#include "CudaExecutorImpl.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::detail;

/// Heuristic candidates timed for a matmul, and calls timed of each (after
/// one untimed): small GEMMs differ by microseconds, so several calls
/// average out the event resolution.
constexpr int kAlgoCandidates = 8;
constexpr int kTimedCalls = 5;

/// What an algorithm's validity and speed depend on: the matmul's types,
/// shape, layout and epilogue, and the operands' alignment (not the
/// buffers, nor alpha and beta beyond whether C is read).
static std::vector<int64_t> tunedKey(const MatmulStep &m,
                                     const uint32_t align[4]) {
  return {static_cast<int64_t>(m.dtype),
          m.transA,
          m.transB,
          m.batch,
          m.m,
          m.n,
          m.k,
          m.strideA,
          m.strideB,
          m.strideC,
          m.bias != kNoBuffer,
          static_cast<int64_t>(m.activation),
          m.tf32,
          m.residual != kNoBuffer || m.beta != 0.0f,
          align[0],
          align[1],
          align[2],
          align[3]};
}

Status CudaExecutor::chooseAlgo(MatmulPlan &plan, const uint32_t align[4],
                                const lt::MatmulAlgo *&algo,
                                const CandidateTiming *timing) {
  MatmulPlan::Choice *known = nullptr;
  for (MatmulPlan::Choice &c : plan.choices)
    if (std::equal(c.align, c.align + 4, align))
      known = &c;
  if (known && (known->timed || !timing)) {
    algo = &known->algo;
    return Status::ok();
  }
  // The choice for this alignment class from now on.
  auto choose = [&](const lt::MatmulAlgo &chosen, bool timed) {
    if (!known) {
      plan.choices.push_back({});
      known = &plan.choices.back();
      std::copy(align, align + 4, known->align);
    }
    known->algo = chosen;
    known->timed = timed;
    algo = &known->algo;
  };
  std::vector<int64_t> tuned =
      tunedKey(this->plan().steps[plan.step].matmul, align);
  if (auto it = tunedAlgos.find(tuned); it != tunedAlgos.end()) {
    choose(it->second, true);
    return Status::ok();
  }
  std::string where = "matmul step " + std::to_string(plan.step);
  lt::MatmulPreference pref = nullptr;
  if (lt::LtStatus st = ltApi->preferenceCreate(&pref); st != lt::kSuccess)
    return lt::cublasError(*ltApi, st, where + ": creating a preference");
  uint64_t maxWorkspace = kWorkspaceBytes;
  lt::LtStatus st = ltApi->preferenceSetAttribute(
      pref, lt::kPrefMaxWorkspaceBytes, &maxWorkspace, sizeof(maxWorkspace));
  // MIN_ALIGNMENT_{A,B,C,D}_BYTES are attributes 5..8 (uint32_t).
  for (int i = 0; i < 4 && st == lt::kSuccess; ++i) {
    uint32_t a = align[i < 3 ? i : 2];
    st = ltApi->preferenceSetAttribute(pref, 5 + i, &a, sizeof(a));
  }
  lt::HeuristicResult results[kAlgoCandidates] = {};
  int returned = 0;
  if (st == lt::kSuccess)
    st = ltApi->algoGetHeuristic(
        ltHandle, plan.desc, plan.aLayout, plan.bLayout, plan.cLayout,
        plan.cLayout, pref, timing ? kAlgoCandidates : 1, results, &returned);
  ltApi->preferenceDestroy(pref);
  if (st != lt::kSuccess)
    return lt::cublasError(*ltApi, st, where + ": choosing an algorithm");
  std::vector<lt::MatmulAlgo> candidates;
  for (int i = 0; i < std::min(returned, kAlgoCandidates); ++i)
    if (results[i].state == lt::kSuccess)
      candidates.push_back(results[i].algo);
  if (candidates.empty()) {
    const MatmulStep &m = this->plan().steps[plan.step].matmul;
    return Status::error(
        StatusCode::Unsupported,
        where + ": cuBLASLt has no algorithm for " + dtypeName(m.dtype) +
            " batch " + std::to_string(m.batch) + " m " + std::to_string(m.m) +
            " n " + std::to_string(m.n) + " k " + std::to_string(m.k) +
            " with operands aligned to " + std::to_string(align[0]) + "/" +
            std::to_string(align[1]) + "/" + std::to_string(align[2]) +
            " bytes");
  }
  choose(timing && candidates.size() > 1 ? fastestAlgo(candidates, *timing)
                                         : candidates.front(),
         timing != nullptr);
  if (timing)
    tunedAlgos[tuned] = *algo;
  return Status::ok();
}

lt::MatmulAlgo
CudaExecutor::fastestAlgo(const std::vector<lt::MatmulAlgo> &candidates,
                          const CandidateTiming &timing) {
  cu::Stream target = timing.stream;
  cu::Event start = nullptr, end = nullptr;
  lt::MatmulAlgo best = candidates.front();
  if (api->eventCreate(&start, 0) != cu::kSuccess)
    return best;
  if (api->eventCreate(&end, 0) != cu::kSuccess) {
    api->eventDestroy(start);
    return best;
  }
  float bestMs = 0;
  bool timedOne = false;
  for (const lt::MatmulAlgo &candidate : candidates) {
    // A candidate that fails to run (or to time) is passed over: the
    // heuristic's list is advice, and the real call below reports errors.
    bool ran = timing.call(candidate) == lt::kSuccess &&
               api->eventRecord(start, target) == cu::kSuccess;
    for (int k = 0; ran && k < kTimedCalls; ++k)
      ran = timing.call(candidate) == lt::kSuccess;
    float ms = 0;
    if (!ran || api->eventRecord(end, target) != cu::kSuccess ||
        api->eventSynchronize(end) != cu::kSuccess ||
        api->eventElapsedTime(&ms, start, end) != cu::kSuccess)
      continue;
    if (!timedOne || ms < bestMs) {
      best = candidate;
      bestMs = ms;
      timedOne = true;
    }
  }
  api->eventDestroy(start);
  api->eventDestroy(end);
  return best;
}
