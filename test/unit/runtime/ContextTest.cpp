//===- ContextTest.cpp - concurrent runs of one model ---------------------===//
//
// Execution contexts share a model's kernels and weights and own their
// arena and staging, so threads may run one model at the same time. On the
// host backend these tests run the kernels for real; the KilnRuntimeTsanTests
// build runs them under ThreadSanitizer, which fails on any data race in the
// runtime (its own code is instrumented; the kernels it compiles are not).
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/Model.h"
#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

constexpr int64_t kN = 300;

/// t = x * 2 + w (an arena buffer), then y = t * t + w, in two launches of
/// 2 blocks of 256 threads (with a tail), over a weight.
Artifact makeTwoLaunchArtifact() {
  Artifact a;
  a.kilnVersion = "0.1.0-test";
  a.arch = "sm_90a";
  a.modelHash = "c0ffee";
  a.buffers.push_back(makeBuffer(BufferKind::Input, "x", {kN}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Weight, "w", {kN}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "t", {kN}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Output, "y", {kN}, 0));
  a.inputs = {0};
  a.outputs = {3};
  a.arenaBytes = kN * sizeof(float);
  std::vector<float> w(kN);
  for (int64_t i = 0; i < kN; ++i)
    w[i] = 0.25f * static_cast<float>(i % 7);
  a.weights = bytesOf(w);
  a.cudaSource = R"cuda(
extern "C" __global__ void scale_add(const float *x, const float *w, float *t) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 300) t[i] = x[i] * 2.0f + w[i];
}
extern "C" __global__ void square_add(const float *t, const float *w, float *y) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 300) y[i] = t[i] * t[i] + w[i];
}
)cuda";
  a.kernelNames = {"scale_add", "square_add"};
  a.steps.push_back(Step::ofLaunch(makeLaunch(0, 2, 256, {0, 1, 2})));
  a.steps.push_back(Step::ofLaunch(makeLaunch(1, 2, 256, {2, 1, 3})));
  return a;
}

std::vector<float> inputFor(int thread, int run) {
  std::vector<float> x(kN);
  for (int64_t i = 0; i < kN; ++i)
    x[i] = static_cast<float>((thread * 31 + run * 7 + i) % 11) - 5.0f;
  return x;
}

std::vector<float> reference(const Artifact &a, const std::vector<float> &x) {
  std::vector<float> w = floatsOf(a.weights), y(kN);
  for (int64_t i = 0; i < kN; ++i) {
    float t = x[i] * 2.0f + w[i];
    y[i] = t * t + w[i];
  }
  return y;
}

/// Runs on the host backend, which compiles the kernels.
using Contexts = PrivateCacheSuite;

TEST_F(Contexts, ThreadsRunOneModelAtOnceOnTheHostBackend) {
  Artifact a = makeTwoLaunchArtifact();
  Artifact expectedSource = a;
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(std::move(a), Backend::Host, model).isOk());
  constexpr int kThreads = 4, kRuns = 12;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::unique_ptr<ExecutionContext> context;
      if (Status s = model->createContext(context); !s.isOk()) {
        failures[t] = s.message;
        return;
      }
      for (int r = 0; r < kRuns; ++r) {
        std::vector<float> x = inputFor(t, r), y(kN, -1.0f);
        const void *in[] = {x.data()};
        void *out[] = {y.data()};
        if (Status s = context->run(in, out, Memory::Host); !s.isOk()) {
          failures[t] = s.message;
          return;
        }
        if (y != reference(expectedSource, x)) {
          failures[t] = "run " + std::to_string(r) + " computed wrong values";
          return;
        }
      }
    });
  // The model's own default context runs alongside.
  for (int r = 0; r < kRuns; ++r) {
    std::vector<float> x = inputFor(kThreads, r), y(kN, -1.0f);
    const void *in[] = {x.data()};
    void *out[] = {y.data()};
    ASSERT_TRUE(model->run(in, out, Memory::Host).isOk());
    EXPECT_EQ(y, reference(expectedSource, x));
  }
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
}

/// The top of the symbolic dim n of makeSymbolicArtifact.
constexpr int64_t kTopN = 64;

/// y[:n] = 2 x[:n] + n over one dim n (1..kTopN): the kernel reads n, and
/// its grid follows it (a block of 32 threads per 32 elements).
Artifact makeSymbolicArtifact() {
  Artifact a;
  a.kilnVersion = "0.1.0-test";
  a.arch = "sm_90a";
  a.modelHash = "5ca1e5";
  a.buffers.push_back(makeBuffer(BufferKind::Input, "x", {kTopN}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Output, "y", {kTopN}, 0));
  a.inputs = {0};
  a.outputs = {1};
  a.cudaSource = R"cuda(
extern "C" __global__ void twice_plus_n(const float *x, float *y,
                                        long long kd_n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kd_n) y[i] = 2.0f * x[i] + (float)kd_n;
}
)cuda";
  a.kernelNames = {"twice_plus_n"};
  a.steps.push_back(Step::ofLaunch(makeLaunch(0, 2, 32, {0, 1})));
  a.symbolic.dims = {{"n", 1, kTopN}};
  for (uint32_t id : {0u, 1u})
    a.symbolic.bindings.push_back(
        sizeBinding(SizeField::BufferDim, id, 0, dimFormula(0)));
  SizeBinding grid = sizeBinding(SizeField::LaunchGrid, 0, 0, dimFormula(0));
  grid.divisor = 32;
  grid.lowest = 1;
  grid.highest = 2;
  a.symbolic.bindings.push_back(grid);
  return a;
}

// Threads each run a symbolic model at lengths of their own, many more
// than the plans a model keeps (8): the plans are written again in place
// while other threads' runs hold theirs (Model::prepareRun's recycling),
// and every run computes its own length's values.
TEST_F(Contexts, ThreadsRunASymbolicModelAtManyDimsAtOnce) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(
      Model::create(makeSymbolicArtifact(), Backend::Host, model).isOk());
  constexpr int kThreads = 4, kRuns = 24;
  std::vector<std::string> failures(kThreads + 1);
  auto runAll = [&](int t, ExecutionContext *context) {
    for (int r = 0; r < kRuns; ++r) {
      int64_t n = 1 + (t * 13 + r * 5) % kTopN;
      std::vector<float> x = inputFor(t, r), y(kTopN, -1.0f);
      const void *in[] = {x.data()};
      void *out[] = {y.data()};
      Status s = context ? context->run({n}, in, out, Memory::Host)
                         : model->run({n}, in, out, Memory::Host);
      if (!s.isOk()) {
        failures[t] = s.message;
        return;
      }
      for (int64_t i = 0; i < kTopN; ++i)
        if (y[i] != (i < n ? 2.0f * x[i] + static_cast<float>(n) : -1.0f)) {
          failures[t] = "run " + std::to_string(r) +
                        " at n = " + std::to_string(n) + ": element " +
                        std::to_string(i);
          return;
        }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::unique_ptr<ExecutionContext> context;
      if (Status s = model->createContext(context); !s.isOk()) {
        failures[t] = s.message;
        return;
      }
      runAll(t, context.get());
    });
  // The model's own default context runs alongside.
  runAll(kThreads, nullptr);
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t <= kThreads; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST_F(Contexts, AnIndexFaultFailsOnlyTheContextThatHadIt) {
  // The index check flag is per context (per thread on the host): a fault
  // in one context's run is not reported by another's.
  Artifact a = kernelArtifact(indexLookupSource(1), "lookup", 8, 1, 8);
  a.indexSites = {"ONNX node 'embed' (gather over a dim of 8)"};
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(std::move(a), Backend::Host, model).isOk());
  std::unique_ptr<ExecutionContext> faulty, clean;
  ASSERT_TRUE(model->createContext(faulty).isOk());
  ASSERT_TRUE(model->createContext(clean).isOk());
  std::vector<float> bad = {0, 1, 2, 3, 4, 5, 6, 99}, good = {0, 1, 2, 3, 4,
                                                              5, 6, 7};
  std::vector<float> y(8);
  Status faultStatus, cleanStatus;
  std::thread first([&] {
    std::vector<float> out(8);
    const void *in[] = {bad.data()};
    void *outs[] = {out.data()};
    faultStatus = faulty->run(in, outs, Memory::Host);
  });
  first.join();
  std::thread second([&] {
    const void *in[] = {good.data()};
    void *outs[] = {y.data()};
    cleanStatus = clean->run(in, outs, Memory::Host);
  });
  second.join();
  EXPECT_EQ(faultStatus.code, StatusCode::InvalidArgument);
  EXPECT_NE(faultStatus.message.find("embed"), std::string::npos)
      << faultStatus.message;
  EXPECT_TRUE(cleanStatus.isOk()) << cleanStatus.message;
  EXPECT_EQ(y, good);
}

} // namespace
