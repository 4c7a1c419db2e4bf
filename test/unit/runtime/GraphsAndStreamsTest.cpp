//===- GraphsAndStreamsTest.cpp - CUDA graphs and caller streams ----------===//
//
// The CUDA executor's graph replay and its runs on a caller's stream, against
// the stand-in driver: a capture there records work instead of doing it, and
// a graph launch does what was recorded, so a run that depended on captured
// work happening at once, or a graph left with stale addresses, computes
// wrong outputs here. The driver's counters show which path each run took.
// The same runs on a real GPU are in GpuTest.cpp (label `gpu`).
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/Model.h"

#include "FakeCudaFixture.h"
#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <string>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// A distinct input per run, so that a replay of stale data shows.
std::vector<float> inputFor(int run) {
  std::vector<float> x(6);
  for (int i = 0; i < 6; ++i)
    x[i] = static_cast<float>((run * 5 + i) % 7) - 3.0f;
  return x;
}

class Graphs : public FakeCuda {
protected:
  /// Creates a model of `makeRichArtifact` (launch, matmul, copy).
  void create(const CudaOptions &options = CudaOptions()) {
    source = makeRichArtifact();
    ASSERT_TRUE(
        Model::create(source, Backend::Cuda, model, HostOptions(), options)
            .isOk());
  }
  /// Runs on host memory; returns whether the output was right.
  void runHostAndCheck(int run) {
    std::vector<float> x = inputFor(run), y(8, -1.0f);
    const void *in[] = {x.data()};
    void *out[] = {y.data()};
    Status s = model->run(in, out, Memory::Host);
    ASSERT_TRUE(s.isOk()) << s.message;
    EXPECT_EQ(y, richReference(source, x)) << "run " << run;
  }
  /// Expects the runs so far to have issued `eagerKernels` kernels one by
  /// one, captured `captures` graphs, instantiated `instantiations` of them
  /// and launched graphs `graphLaunches` times.
  void expectGraphWork(int eagerKernels, int captures, int instantiations,
                       int graphLaunches) {
    EXPECT_EQ(counter("eagerKernels"), eagerKernels);
    EXPECT_EQ(counter("captures"), captures);
    EXPECT_EQ(counter("instantiations"), instantiations);
    EXPECT_EQ(counter("graphLaunches"), graphLaunches);
  }

  /// Runs the model on six sets of device buffers (see its definition).
  void runAddressSets(bool nodesKnown);

  Artifact source;
  std::unique_ptr<Model> model;
};

} // namespace

TEST_F(Graphs, ReplaysAGraphAfterTheFirstRun) {
  create();
  runHostAndCheck(0);
  // The first run warms up: steps one by one, nothing captured.
  EXPECT_EQ(counter("eagerKernels"), 1);
  EXPECT_EQ(counter("captures"), 0);
  for (int run = 1; run < 5; ++run)
    runHostAndCheck(run);
  // Host-memory I/O goes through fixed staging: one graph serves every run.
  expectGraphWork(1, 1, 1, 4);
  model.reset();
}

// Device memory: every set of I/O addresses is a graph of its own. Past
// four graphs, the fifth and sixth sets take over the least recently used
// graphs through cuGraphExecUpdate, not a new instance: a static plan keeps
// no nodes (its graphs never change dims), whether or not the driver can
// tell them.
void Graphs::runAddressSets(bool nodesKnown) {
  if (!nodesKnown)
    reinterpret_cast<void (*)()>(dlsym(fake, "fakeCudaHideCaptureNodes"))();
  create();
  constexpr int kSets = 6;
  std::vector<std::vector<float>> inputs(kSets), outputs(kSets);
  for (int set = 0; set < kSets; ++set) {
    inputs[set].resize(6);
    outputs[set].resize(8);
  }
  auto runOn = [&](int set, int run) {
    // New values in the set's own buffers: the same addresses.
    std::vector<float> &x = inputs[set], values = inputFor(run);
    std::copy(values.begin(), values.end(), x.begin());
    std::fill(outputs[set].begin(), outputs[set].end(), -1.0f);
    const void *in[] = {x.data()};
    void *out[] = {outputs[set].data()};
    Status s = model->run(in, out, Memory::Device);
    ASSERT_TRUE(s.isOk()) << s.message;
    EXPECT_EQ(outputs[set], richReference(source, x))
        << "set " << set << ", run " << run;
  };
  int run = 0;
  runOn(0, run++); // warm-up, not captured
  for (int set = 0; set < kSets; ++set)
    runOn(set, run++);
  EXPECT_EQ(counter("captures"), kSets);
  EXPECT_EQ(counter("instantiations"), 4);
  EXPECT_EQ(counter("updates"), kSets - 4);
  // Sets 2..5 are kept now: replays, no capture.
  for (int set = 2; set < kSets; ++set)
    runOn(set, run++);
  EXPECT_EQ(counter("captures"), kSets);
  // Set 0 again: captured anew, and its outputs land in its own buffer.
  runOn(0, run++);
  EXPECT_EQ(counter("captures"), kSets + 1);
  EXPECT_EQ(counter("instantiations"), 4);
  EXPECT_EQ(counter("updates"), kSets - 3);
  EXPECT_EQ(counter("graphLaunches"), run - 1);
  // New addresses are a new bucket: nothing was updated in place.
  EXPECT_EQ(counter("nodeUpdates"), 0);
  // Each synchronous device-memory run waited for the default stream.
  EXPECT_GE(counter("streamWaits"), run);
  // Four instances, none kept with its graph.
  EXPECT_EQ(counter("graphs"), 4);
  model.reset();
  EXPECT_EQ(counter("graphs"), 0);
}

TEST_F(Graphs, NewDeviceAddressesGetTheirOwnGraphOrUpdateTheOldest) {
  runAddressSets(/*nodesKnown=*/false);
}

TEST_F(Graphs, AStaticPlanKeepsNoNodesWhereTheDriverTellsThem) {
  runAddressSets(/*nodesKnown=*/true);
}

TEST_F(Graphs, CanBeTurnedOff) {
  CudaOptions options;
  options.graphs = false;
  create(options);
  for (int run = 0; run < 3; ++run)
    runHostAndCheck(run);
  EXPECT_EQ(counter("captures"), 0);
  EXPECT_EQ(counter("graphLaunches"), 0);
  EXPECT_EQ(counter("eagerKernels"), 3);
  model.reset();

  setenv("KILN_CUDA_GRAPHS", "0", 1);
  EXPECT_FALSE(CudaOptions::fromEnvironment().graphs);
  setenv("KILN_CUDA_GRAPHS", "1", 1);
  EXPECT_TRUE(CudaOptions::fromEnvironment().graphs);
  unsetenv("KILN_CUDA_GRAPHS");
  EXPECT_TRUE(CudaOptions::fromEnvironment().graphs);
}

TEST_F(Graphs, AFailedCaptureFallsBackToTheStepsOneByOne) {
  create();
  reinterpret_cast<void (*)()>(dlsym(fake, "fakeCudaFailCaptures"))();
  for (int run = 0; run < 3; ++run)
    runHostAndCheck(run);
  EXPECT_EQ(counter("captures"), 0);
  EXPECT_EQ(counter("eagerKernels"), 3);
  model.reset();
}

TEST_F(Graphs, EnqueueRunsOnTheCallersStream) {
  create();
  std::unique_ptr<ExecutionContext> context;
  ASSERT_TRUE(model->createContext(context).isOk());
  // Any value stands for a stream in the stand-in driver.
  int streamObject = 0;
  void *callerStream = &streamObject;
  for (int run = 0; run < 3; ++run) {
    std::vector<float> x = inputFor(run), y(8, -1.0f);
    const void *in[] = {x.data()};
    void *out[] = {y.data()};
    Status s = context->enqueue(in, out, callerStream);
    ASSERT_TRUE(s.isOk()) << s.message;
    EXPECT_EQ(fakeLastStream(), callerStream) << "run " << run;
    s = context->synchronize();
    ASSERT_TRUE(s.isOk()) << s.message;
    EXPECT_EQ(y, richReference(source, x)) << "run " << run;
  }
  // The first run issued its steps on the caller's stream, the later ones
  // launched the graph there; each run after the first waited for the one
  // before it (they share the arena).
  EXPECT_EQ(counter("eagerKernels"), 1);
  EXPECT_EQ(counter("graphLaunches"), 2);
  EXPECT_EQ(counter("streamWaits"), 2);
  context.reset();
  model.reset();
}

TEST_F(Graphs, SynchronizeReportsAnIndexFaultOfAQueuedRun) {
  source = makeRichArtifact();
  source.indexSites = {"ONNX node 'embed' (gather over a dim of 96)"};
  ASSERT_TRUE(Model::create(source, Backend::Cuda, model).isOk());
  std::unique_ptr<ExecutionContext> context;
  ASSERT_TRUE(model->createContext(context).isOk());
  auto *flag = static_cast<unsigned *>(dlsym(fake, "kiln_fake_index_error"));
  ASSERT_NE(flag, nullptr);
  std::vector<float> x = inputFor(0), y(8);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  ASSERT_TRUE(context->enqueue(in, out, nullptr).isOk());
  ASSERT_TRUE(context->synchronize().isOk());
  // What a kernel of a queued run would do on a bad token id: the queuing
  // succeeds, the wait reports it.
  *flag = 1;
  ASSERT_TRUE(context->enqueue(in, out, nullptr).isOk());
  Status s = context->synchronize();
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  EXPECT_NE(s.message.find("index out of range at ONNX node 'embed'"),
            std::string::npos)
      << s.message;
  EXPECT_EQ(*flag, 0u);
  EXPECT_TRUE(context->synchronize().isOk());
  context.reset();
  model.reset();
}

TEST_F(Graphs, TimesDeviceRunsBetweenCudaEvents) {
  create();
  std::vector<float> x = inputFor(0);
  const void *in[] = {x.data()};
  std::vector<double> ms;
  Status s = model->timeDeviceRuns(in, 2, 5, ms);
  ASSERT_TRUE(s.isOk()) << s.message;
  // Each time is what cuEventElapsedTime said (the stand-in's 1 us, plus
  // 1 us for the matmul's fastest algorithm, which the first run chose),
  // not a host clock's reading.
  ASSERT_EQ(ms.size(), 5u);
  for (double t : ms)
    EXPECT_FLOAT_EQ(static_cast<float>(t), 0.002f);
  // Seven runs: the first issued the steps, the rest replayed one graph.
  EXPECT_EQ(counter("eagerKernels"), 1);
  EXPECT_EQ(counter("graphLaunches"), 6);
  // With host outputs, the last timed run's outputs come back: what bench/
  // checks is what was timed.
  std::vector<float> y(8, -1.0f);
  void *out[] = {y.data()};
  s = model->timeDeviceRuns(in, 0, 2, ms, out);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(y, richReference(source, x));
  EXPECT_EQ(counter("graphLaunches"), 8);
  // A run on host memory afterwards uses the same staging, the same graph.
  runHostAndCheck(1);
  EXPECT_EQ(counter("captures"), 1);
  const void *missing[] = {nullptr};
  s = model->timeDeviceRuns(missing, 0, 1, ms);
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  model.reset();
}

TEST(HostStreams, DeviceTimingNeedsTheCudaBackend) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(
      Model::create(makeCopyArtifact({3}), Backend::Host, model).isOk());
  std::vector<float> x = {1, 2, 3};
  const void *in[] = {x.data()};
  std::vector<double> ms;
  Status s = model->timeDeviceRuns(in, 0, 3, ms);
  EXPECT_EQ(s.code, StatusCode::Unsupported);
  EXPECT_NE(s.message.find("needs the CUDA backend"), std::string::npos)
      << s.message;
}

TEST(HostStreams, EnqueueOnTheHostBackendFinishesBeforeItReturns) {
  usePrivateCache();
  Artifact a = makeRichArtifact();
  // The host backend compiles real CUDA source: the plan's one launch adds
  // its operands (x * w is a matmul step, which the host GEMM runs).
  a.cudaSource = R"cuda(
extern "C" __global__ void add_f32(const float *a, const float *b, float *c) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];
}
extern "C" __global__ void double_f32(const float *a, float *b) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  b[i] = 2.0f * a[i];
}
)cuda";
  Artifact source = a;
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(std::move(a), Backend::Host, model).isOk());
  std::unique_ptr<ExecutionContext> context;
  ASSERT_TRUE(model->createContext(context).isOk());
  std::vector<float> x = inputFor(3), y(8, -1.0f);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  // Host memory, and no stream: the outputs are there on return.
  Status s = context->enqueue(in, out, nullptr);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(y, richReference(source, x));
  EXPECT_TRUE(context->synchronize().isOk());
}

/// A plan over one dim n (1..8): x [n] doubled into t [n] by a kernel that
/// takes n, then copied to y [n]; the grid covers n (one block of 2
/// threads per 2 elements). It holds a weight, which no step reads: the
/// plan of each new n is checked against the weights after the upload has
/// dropped their host copy.
static Artifact symbolicDoubling() {
  Artifact a;
  a.kilnVersion = "0.1.0-test";
  a.arch = "sm_90a";
  a.modelHash = "5ymb";
  a.cubin = "FAKECUBIN";
  a.kernelNames = {"double_first_f32"};
  a.arenaBytes = 8 * sizeof(float);
  a.buffers.push_back(makeBuffer(BufferKind::Input, "x", {8}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "t", {8}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Output, "y", {8}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Weight, "w", {4}, 0));
  a.weights.assign(4 * sizeof(float), '\0');
  a.inputs = {0};
  a.outputs = {2};
  a.steps.push_back(Step::ofLaunch(makeLaunch(0, 4, 2, {0, 1})));
  a.steps.push_back(Step::ofCopy(CopyStep{1, 2, 8 * sizeof(float)}));
  a.symbolic.dims = {{"n", 1, 8}};
  for (uint32_t id : {0u, 1u, 2u})
    a.symbolic.bindings.push_back(
        sizeBinding(SizeField::BufferDim, id, 0, dimFormula(0)));
  SizeBinding grid = sizeBinding(SizeField::LaunchGrid, 0, 0, dimFormula(0));
  grid.divisor = 2;
  grid.lowest = 1;
  grid.highest = 4;
  a.symbolic.bindings.push_back(grid);
  a.symbolic.bindings.push_back(
      sizeBinding(SizeField::CopyBytes, 1, 0, dimFormula(0, 4)));
  return a;
}

/// Runs `symbolic` (a `symbolicDoubling` plan, perhaps with more steps) at
/// n = x.size() on host memory; returns y, -1 where nothing was written,
/// and the run's status in `s`.
static std::vector<float> runAtDims(Model &symbolic,
                                    const std::vector<float> &x, Status &s) {
  int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(8, -1.0f);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  s = symbolic.run({n}, in, out, Memory::Host);
  return y;
}

/// Runs `symbolic` over x (`runAtDims`) and expects the first x.size()
/// elements of y doubled and the rest untouched.
static void expectDoubled(Model &symbolic, const std::vector<float> &x) {
  Status s;
  std::vector<float> y = runAtDims(symbolic, x, s);
  ASSERT_TRUE(s.isOk()) << s.message;
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], i < x.size() ? 2.0f * x[i] : -1.0f)
        << "n " << x.size() << " i " << i;
}

TEST_F(Graphs, ASymbolicPlanRunsAtEachDimsWithAGraphPerDims) {
  std::unique_ptr<Model> symbolic;
  ASSERT_TRUE(
      Model::create(symbolicDoubling(), Backend::Cuda, symbolic).isOk());
  // n = 3, 5, 3 again, 8, 5 again: the kernel gets n, the grid and the copy
  // follow it, and each n has its own graph (a replay of another n's graph
  // would write the wrong number of elements).
  for (int64_t n : {3, 5, 3, 8, 5}) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(i + n);
    ASSERT_NO_FATAL_FAILURE(expectDoubled(*symbolic, x));
  }
  // Every n has the same steps (kernel and copy), so only the first run
  // issues them one by one; the copy's size follows n, so each n is a
  // bucket of its own: each later run at new dims (5, 3, 8) is captured,
  // and n = 5 again replays its graph.
  expectGraphWork(1, 3, 3, 4);
  symbolic.reset();
}

/// A decoding loop's lengths: runs `symbolic` at each n of `lengths` over
/// x = 3 i - n (`expectDoubled`).
static void decode(Model &symbolic, const std::vector<int64_t> &lengths) {
  for (int64_t n : lengths) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(3 * i - n);
    ASSERT_NO_FATAL_FAILURE(expectDoubled(symbolic, x));
  }
}

/// `symbolicDoubling` without its copy: the kernel writes y [n] itself, so
/// every n is one shape bucket.
static Artifact symbolicDoublingIntoOutput() {
  Artifact a = symbolicDoubling();
  a.steps.pop_back();
  a.steps[0].launch.args = {0, 2};
  auto &bindings = a.symbolic.bindings;
  bindings.erase(std::remove_if(bindings.begin(), bindings.end(),
                                [](const SizeBinding &b) {
                                  return b.field == SizeField::CopyBytes;
                                }),
                 bindings.end());
  return a;
}

// A decoding loop: new dims every step, one bucket. After the first step
// (one by one) the second is captured, and every later step gives that
// graph's launch its new grid and n in place, then launches it: no capture,
// no instantiation, no update of the whole graph. A stale grid or n would
// double too few elements, or too many. A second launch that depends on no
// dim (dimsRead 0: its grid is fixed and its code reads none, t = 2 w) is
// left as captured.
TEST_F(Graphs, ADecodingLoopUpdatesOneGraphInPlaceEveryStep) {
  Artifact a = symbolicDoublingIntoOutput();
  a.steps[0].launch.dimsRead = 1;
  a.kernelNames.push_back("double_f32");
  LaunchStep fixed = makeLaunch(1, 1, 4, {3, 1});
  fixed.dimsRead = 0;
  a.steps.push_back(Step::ofLaunch(fixed));
  std::unique_ptr<Model> symbolic;
  Status s = Model::create(a, Backend::Cuda, symbolic);
  ASSERT_TRUE(s.isOk()) << s.message;
  ASSERT_NO_FATAL_FAILURE(decode(*symbolic, {1, 2, 3, 4, 5, 6, 7, 8, 3}));
  // Two kernels eagerly at n = 1; n = 2 captured; 3 .. 8 and 3 again
  // updated in place, the doubling's launch only.
  expectGraphWork(2, 1, 1, 8);
  EXPECT_EQ(counter("nodeUpdates"), 7);
  EXPECT_EQ(counter("updates"), 0);
  symbolic.reset();
  EXPECT_EQ(counter("graphs"), 0);
}

// negative_: a driver that cannot tell a capture's nodes: each new n is
// captured, and past four graphs updates the least recently used one. The
// context says so once (slower, not wrong).
TEST_F(Graphs, negative_WithoutCaptureNodesEachNewDimsIsCaptured) {
  reinterpret_cast<void (*)()>(dlsym(fake, "fakeCudaHideCaptureNodes"))();
  std::unique_ptr<Model> symbolic;
  ASSERT_TRUE(
      Model::create(symbolicDoublingIntoOutput(), Backend::Cuda, symbolic)
          .isOk());
  testing::internal::CaptureStderr();
  ASSERT_NO_FATAL_FAILURE(decode(*symbolic, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "kiln: the CUDA driver did not tell the nodes of a captured "
            "graph; runs at new dims are captured again\n");
  expectGraphWork(1, 7, 4, 7);
  EXPECT_EQ(counter("updates"), 3);
  EXPECT_EQ(counter("nodeUpdates"), 0);
  symbolic.reset();
}

// negative_: a driver that refuses to update a node: the graph it was
// updating is dropped (its nodes may hold some of the new dims), the run is
// captured, the context says so once and captures every later new n, past
// four graphs into the least recently used one. Every output is right.
TEST_F(Graphs, negative_AFailedNodeUpdateFallsBackToCapturing) {
  reinterpret_cast<void (*)()>(dlsym(fake, "fakeCudaFailNodeUpdates"))();
  std::unique_ptr<Model> symbolic;
  ASSERT_TRUE(
      Model::create(symbolicDoublingIntoOutput(), Backend::Cuda, symbolic)
          .isOk());
  testing::internal::CaptureStderr();
  ASSERT_NO_FATAL_FAILURE(decode(*symbolic, {1, 2, 3, 4, 5, 6, 7, 8}));
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said.rfind("kiln: updating a CUDA graph in place failed (", 0), 0u)
      << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  // n = 2 .. 8 captured: 2 and 3 kept with nodes, then 4, 5 and 6 fresh
  // instances (n = 2's was dropped), 7 and 8 into the oldest.
  expectGraphWork(1, 7, 5, 7);
  EXPECT_EQ(counter("updates"), 2);
  EXPECT_EQ(counter("nodeUpdates"), 0);
  symbolic.reset();
  EXPECT_EQ(counter("graphs"), 0);
}

// negative_: with graph updates off (KILN_CUDA_GRAPH_UPDATES=0, to compare
// the two on a GPU) each new n is captured, as a driver without the nodes
// makes it, and nothing is said.
TEST_F(Graphs, negative_WithGraphUpdatesOffEachNewDimsIsCaptured) {
  CudaOptions options;
  options.graphUpdates = false;
  std::unique_ptr<Model> symbolic;
  ASSERT_TRUE(Model::create(symbolicDoublingIntoOutput(), Backend::Cuda,
                            symbolic, HostOptions(), options)
                  .isOk());
  testing::internal::CaptureStderr();
  ASSERT_NO_FATAL_FAILURE(decode(*symbolic, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  expectGraphWork(1, 7, 4, 7);
  EXPECT_EQ(counter("updates"), 3);
  EXPECT_EQ(counter("nodeUpdates"), 0);
  symbolic.reset();
}

// negative_: a copy whose size follows the dims is the graph's as captured
// (a graph is updated in place only within its bucket, which holds the
// copies' sizes): each new n is captured. The first four are kept with
// their nodes; past that, a bucket seen for the first time updates the
// least recently used graph (no instantiation a token), and n = 8 again
// replays its graph.
TEST_F(Graphs, negative_ACopySizedByTheDimsIsCapturedAtEachDims) {
  std::unique_ptr<Model> symbolic;
  ASSERT_TRUE(
      Model::create(symbolicDoubling(), Backend::Cuda, symbolic).isOk());
  ASSERT_NO_FATAL_FAILURE(decode(*symbolic, {1, 2, 3, 4, 5, 6, 7, 8, 8}));
  expectGraphWork(1, 7, 4, 8);
  EXPECT_EQ(counter("updates"), 3);
  EXPECT_EQ(counter("nodeUpdates"), 0);
  // Four instances; n = 5's, never updated, still with its graph.
  EXPECT_EQ(counter("graphs"), 5);
  symbolic.reset();
}

// negative_: a matmul whose shape follows the dims puts each n in a bucket
// of its own (its candidates are timed, its kernels loaded, at the first
// run of that shape, one by one): the first run at each n is eager.
TEST_F(Graphs, negative_AMatmulShapeOfTheDimsIsABucketOfItsOwn) {
  Artifact a = symbolicDoubling();
  a.arenaBytes = 512 + 8 * sizeof(float);
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "u", {8}, 256));
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "v", {8}, 512));
  // v[:n] = u[:n] * w[0]: m = n rows of one column.
  a.steps.push_back(Step::ofMatmul(makeMatmul(8, 1, 1, 4, 3, 5)));
  a.symbolic.bindings.push_back(
      sizeBinding(SizeField::MatmulField, 2, 1, dimFormula(0)));
  std::unique_ptr<Model> symbolic;
  Status s = Model::create(a, Backend::Cuda, symbolic);
  ASSERT_TRUE(s.isOk()) << s.message;
  for (int64_t n : {3, 5, 3}) {
    runAtDims(*symbolic, std::vector<float>(n, 1.0f), s);
    ASSERT_TRUE(s.isOk()) << s.message;
  }
  // n = 3 and 5 one by one; n = 3 again from a graph.
  EXPECT_EQ(counter("eagerKernels"), 2);
  EXPECT_EQ(counter("captures"), 1);
  EXPECT_EQ(counter("graphLaunches"), 1);
  symbolic.reset();
}

// A decoding loop's dims change every token while its matmuls keep their
// shape: the candidates are timed at the first run only, and each later n
// runs the winner (algorithm 43 of the stand-in, FakeCublasLt.cpp) with
// no timing, from a graph.
TEST_F(Graphs, EachMatmulShapeIsTimedOnceAcrossDims) {
  Artifact a = symbolicDoubling();
  a.arenaBytes = 256 + 2 * sizeof(float);
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "u", {1, 2}, 256));
  a.steps.push_back(Step::ofMatmul(makeMatmul(1, 2, 2, 3, 3, 4)));
  std::unique_ptr<Model> symbolic;
  Status s = Model::create(a, Backend::Cuda, symbolic);
  ASSERT_TRUE(s.isOk()) << s.message;
  for (int64_t n : {3, 5, 7, 5}) {
    runAtDims(*symbolic, std::vector<float>(n, 1.0f), s);
    ASSERT_TRUE(s.isOk()) << s.message;
  }
  // Six calls of each candidate at n = 3, then one call a run; every run
  // after the first is captured (one bucket: the matmul keeps its shape).
  expectMatmulAlgoCalls(6, 6 + 4, 6);
  EXPECT_EQ(counter("captures"), 2);
  symbolic.reset();
}

TEST_F(Graphs, AnAliasedOutputIsCopiedOnlyFromAnotherBuffer) {
  // y is kept in x's storage and no step writes it (a cache appended in
  // place, with nothing new): y must equal x after every run.
  source = makeIdentityShell({4});
  source.aliases.push_back(OutputAlias{0, 0, 0});
  ASSERT_TRUE(Model::create(source, Backend::Cuda, model).isOk());
  std::vector<float> x = {1, 2, 3, 4}, y(4, -1.0f);
  const void *in[] = {x.data()};
  void *apart[] = {y.data()}, *same[] = {x.data()};
  // The caller's one buffer for both: no copy, warm-up and graph alike.
  for (int run = 0; run < 3; ++run)
    ASSERT_TRUE(model->run(in, same, Memory::Device).isOk());
  EXPECT_EQ(counter("deviceCopies"), 0);
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3, 4}));
  // Two buffers: the input is copied into the output.
  ASSERT_TRUE(model->run(in, apart, Memory::Device).isOk());
  EXPECT_EQ(y, x);
  EXPECT_GE(counter("deviceCopies"), 1);
  // Host memory goes through staging, two device buffers: copied too.
  std::fill(y.begin(), y.end(), -1.0f);
  ASSERT_TRUE(model->run(in, apart, Memory::Host).isOk());
  EXPECT_EQ(y, x);
  model.reset();
}

// A KV cache kept in place, timed: the output is the input's device buffer,
// as a decoding loop passes its cache, so no run copies the whole cache
// into a second one. Here the one step doubles y from x: with one buffer
// each of the three runs doubles it again (8 x), where two buffers would
// give 2 x after a copy.
TEST_F(Graphs, TimingRunsAnAliasedOutputInItsInputsBuffer) {
  source = makeIdentityShell({4});
  source.cubin = "FAKECUBIN";
  source.kernelNames = {"double_f32"};
  source.steps.push_back(Step::ofLaunch(makeLaunch(0, 1, 4, {0, 1})));
  source.aliases.push_back(OutputAlias{0, 0, 0});
  ASSERT_TRUE(Model::create(source, Backend::Cuda, model).isOk());
  std::vector<float> x = {1, 2, 3, -4}, y(4, -1.0f);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  std::vector<double> ms;
  Status s = model->timeDeviceRuns(in, 1, 2, ms, out);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(ms.size(), 2u);
  EXPECT_EQ(counter("deviceCopies"), 0);
  EXPECT_EQ(y, (std::vector<float>{8, 16, 24, -32}));
  // The caller's own input is untouched; a run on host memory starts from
  // it again (its staging uploaded anew).
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3, -4}));
  ASSERT_TRUE(model->run(in, out, Memory::Host).isOk());
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6, -8}));
  model.reset();
}

// Both at once, as bench/ times a decoding step with its cache in place:
// symbolic dims and an output in its input's buffer. The doubling kernel
// writes y from x in place, so each of the three runs (warm-up 0 takes
// one untimed run: the first at the aliased buffers is captured) doubles
// the n = 3 elements again; the rest of y is not copied back.
/// Times two runs of `symbolic` at n = 3 over x = {1, -2, 3} (no warm-up
/// asked for); returns y as copied back, -1 where nothing was.
static std::vector<float> timeAtThree(Model &symbolic) {
  std::vector<float> x = {1, -2, 3}, y(8, -1.0f);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  std::vector<double> ms;
  Status s = symbolic.timeDeviceRuns({3}, in, 0, 2, ms, out);
  EXPECT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(ms.size(), 2u);
  return y;
}

TEST_F(Graphs, TimesAnAliasedOutputAtTheGivenDims) {
  Artifact a = symbolicDoublingIntoOutput();
  a.aliases.push_back(OutputAlias{0, 0, 0});
  ASSERT_TRUE(Model::create(a, Backend::Cuda, model).isOk());
  EXPECT_EQ(timeAtThree(*model),
            (std::vector<float>{8, -16, 24, -1, -1, -1, -1, -1}));
  EXPECT_EQ(counter("deviceCopies"), 0);
  model.reset();
}

// A model with symbolic dims is timed at the dims a run gives: its plan
// for them, the outputs of that size.
TEST_F(Graphs, TimesDeviceRunsAtTheGivenDims) {
  ASSERT_TRUE(Model::create(symbolicDoubling(), Backend::Cuda, model).isOk());
  EXPECT_EQ(timeAtThree(*model),
            (std::vector<float>{2, -4, 6, -1, -1, -1, -1, -1}));
  model.reset();
}

TEST_F(Graphs, negative_TimingASymbolicModelNeedsItsDims) {
  ASSERT_TRUE(Model::create(symbolicDoubling(), Backend::Cuda, model).isOk());
  std::vector<float> x = {1, 2, 3};
  const void *in[] = {x.data()};
  std::vector<double> ms;
  Status s = model->timeDeviceRuns(in, 0, 1, ms);
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  EXPECT_NE(s.message.find("a run gives their values (0 given)"),
            std::string::npos)
      << s.message;
  s = model->timeDeviceRuns({9}, in, 0, 1, ms);
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  EXPECT_NE(s.message.find("'n' is 9, outside its range 1..8"),
            std::string::npos)
      << s.message;
  EXPECT_TRUE(ms.empty());
  model.reset();
}
