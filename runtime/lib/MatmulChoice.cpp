//===- MatmulChoice.cpp - Choose among GEMM candidates --------------------===//
//
// The choice of how the CUDA backend runs a matmul step: the candidates
// cuBLASLt's heuristic offers for the step's shape and alignment, timed on the
// run's own operands where that is safe, and the winners remembered per shape
// (tunedKey); and whether one of Kiln's own GEMM kernels runs the step
// instead: the one asked for by name, or (kTimedGemmKernels) the fastest of
// cuBLASLt's choice and Kiln's kernels, timed the same way.
//
//===----------------------------------------------------------------------===//

#include "CudaExecutorImpl.h"

#include <algorithm>
#include <cstdint>
#include <functional>
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
  return {static_cast<int64_t>(m.dtype), m.transA, m.transB, m.batch, m.m, m.n,
          m.k, m.strideA, m.strideB, m.strideC, m.bias != kNoBuffer,
          static_cast<int64_t>(m.activation), m.tf32, m.float8,
          m.residual != kNoBuffer || m.beta != 0.0f, align[0], align[1],
          align[2], align[3],
          // A kernel that takes the next launch races that launch too,
          // which differs between steps of one shape.
          m.takesNextLaunch() ? int64_t(m.kernels.front().kernel) : -1};
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
        where + ": cuBLASLt has no algorithm for " +
            (m.float8 ? std::string("float8 into ") : std::string()) +
            dtypeName(m.dtype) + " batch " + std::to_string(m.batch) + " m " +
            std::to_string(m.m) + " n " + std::to_string(m.n) + " k " +
            std::to_string(m.k) + " with operands aligned to " +
            std::to_string(align[0]) + "/" + std::to_string(align[1]) + "/" +
            std::to_string(align[2]) + " bytes");
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

Status CudaExecutor::timeCalls(cu::Stream target,
                               const std::function<Status()> &call, int calls,
                               float &ms) {
  cu::Event start = nullptr, end = nullptr;
  if (cu::Result r = api->eventCreate(&start, 0); r != cu::kSuccess)
    return cu::cudaError(*api, r, "creating an event");
  if (cu::Result r = api->eventCreate(&end, 0); r != cu::kSuccess) {
    api->eventDestroy(start);
    return cu::cudaError(*api, r, "creating an event");
  }
  Status s = call();
  if (s.isOk())
    if (cu::Result r = api->eventRecord(start, target); r != cu::kSuccess)
      s = cu::cudaError(*api, r, "recording an event");
  for (int k = 0; s.isOk() && k < calls; ++k)
    s = call();
  if (s.isOk()) {
    cu::Result r = api->eventRecord(end, target);
    if (r == cu::kSuccess)
      r = api->eventSynchronize(end);
    if (r == cu::kSuccess)
      r = api->eventElapsedTime(&ms, start, end);
    if (r != cu::kSuccess)
      s = cu::cudaError(*api, r, "timing a matmul");
  }
  api->eventDestroy(start);
  api->eventDestroy(end);
  return s;
}

Status CudaExecutor::chooseGemmKernel(size_t index, MatmulPlan &plan,
                                      const std::vector<cu::DevicePtr> &in,
                                      const std::vector<cu::DevicePtr> &out,
                                      cu::Stream target,
                                      const GemmCandidate *&kernel) {
  kernel = nullptr;
  const MatmulStep &m = this->plan().steps[index].matmul;
  // Kernels that take the launch after the step too (an FP8 product's
  // fused epilogue) race cuBLASLt by default: that is how the plan offers
  // the choice between them.
  bool withNext = m.takesNextLaunch();
  if (options.gemm.empty() && !withNext)
    return Status::ok();
  if (!options.gemm.empty() && options.gemm != kTimedGemmKernels) {
    std::string missing;
    kernel = findGemmCandidate(m, options.gemm, missing);
    if (!kernel)
      return Status::error(StatusCode::InvalidArgument,
                           "step " + std::to_string(index) + ": " + missing);
    return Status::ok();
  }
  if (m.kernels.empty())
    return Status::ok();
  // C is where the product lands (a norm's sum, where it writes one).
  cu::DevicePtr a = address(m.a, in, out), b = address(m.b, in, out),
                c = productAddress(m, in, out);
  if (plan.noAlgorithm) {
    // cuBLASLt cannot run the step: the first kernel that takes the next
    // launch too and fits the operands does.
    for (const GemmCandidate &g : m.kernels)
      if (g.withNextLaunch &&
          gemmCandidateMisfit(m, g, reinterpret_cast<const void *>(a),
                              reinterpret_cast<const void *>(b))
              .empty()) {
        kernel = &g;
        return Status::ok();
      }
    return Status::error(StatusCode::Unsupported,
                         "step " + std::to_string(index) +
                             ": cuBLASLt has no algorithm for the matmul, "
                             "and none of its GEMM kernels fits its operands");
  }
  cu::DevicePtr residual =
      m.residual == kNoBuffer ? c : address(m.residual, in, out);
  cu::DevicePtr bias =
      m.bias == kNoBuffer ? kMaxAlign : address(m.bias, in, out);
  // The key of chooseAlgo's winners: cuBLAS's A, B, C (our B, A, C), then
  // the bias.
  uint32_t align[4] = {alignmentOf(b), alignmentOf(a),
                       std::min(alignmentOf(c), alignmentOf(residual)),
                       alignmentOf(bias)};
  std::vector<int64_t> key = tunedKey(m, align);
  if (auto it = tunedKernels.find(key); it != tunedKernels.end()) {
    kernel = it->second >= 0 ? &m.kernels[it->second] : nullptr;
    return Status::ok();
  }
  // As for cuBLASLt's candidates: each timed call must leave the same
  // result, and nothing runs inside a capture. Until a run can time them,
  // cuBLASLt runs the step.
  bool canTime =
      options.tuneMatmuls && !capturing && (m.beta == 0.0f || residual != c);
  if (!canTime)
    return Status::ok();
  // cuBLASLt's call, and the launch after it where a kernel takes that
  // too. Where cuBLASLt has no algorithm for the step, a kernel that takes
  // the next launch still runs it; else that is the run's error.
  float best = 0;
  Status baseline = timeCalls(
      target,
      [&]() -> Status {
        if (Status s = issueCublasMatmul(index, plan, in, out, target);
            !s.isOk() || !withNext)
          return s;
        return launchPlanStep(index + 1, in, out, target);
      },
      kTimedCalls, best);
  if (!baseline.isOk() && !withNext)
    return baseline;
  bool cublasRuns = baseline.isOk();
  int winner = -1;
  for (size_t j = 0; j < m.kernels.size(); ++j) {
    const GemmCandidate &g = m.kernels[j];
    if (!gemmCandidateMisfit(m, g, reinterpret_cast<const void *>(a),
                             reinterpret_cast<const void *>(b))
             .empty())
      continue;
    // A kernel that fails to launch is passed over, as a cuBLASLt
    // candidate that fails to run is.
    float ms = 0;
    if (!timeCalls(
             target,
             [&] { return launchGemmKernel(index, m, g, in, out, target); },
             kTimedCalls, ms)
             .isOk())
      continue;
    if (ms < best || (!cublasRuns && winner < 0)) {
      best = ms;
      winner = static_cast<int>(j);
    }
  }
  if (!cublasRuns && winner < 0)
    return baseline;
  tunedKernels[key] = winner;
  kernel = winner >= 0 ? &m.kernels[winner] : nullptr;
  return Status::ok();
}
