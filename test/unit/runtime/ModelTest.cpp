//===- ModelTest.cpp - The Model API and the CUDA backend's plumbing ------===//
//
// Runs plans through the real CUDA executor against host stand-ins for
// libcuda and cuBLASLt (FakeCudaDriver.cpp, FakeCublasLt.cpp), so staging,
// buffer addressing, kernel arguments, copies and the row-major matmul
// mapping are exercised without a GPU.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/Model.h"
#include "kiln/runtime/DeviceCopy.h"
#include "kiln/runtime/Float8.h"

#include "FakeCudaFixture.h"
#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <random>

using namespace kiln::rt;
using namespace kiln::rt::test;

TEST(Model, HostBackendRunsACopyPlanOnHostMemoryOnly) {
  std::unique_ptr<Model> model;
  Status s = Model::create(makeCopyArtifact({3}), Backend::Host, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(model->backend(), Backend::Host);
  std::vector<float> x = {1, 2, 3}, y(3, 0.0f);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  ASSERT_TRUE(model->run(in, out, Memory::Host).isOk());
  EXPECT_EQ(y, x);
  s = model->run(in, out, Memory::Device);
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  EXPECT_NE(s.message.find("host memory"), std::string::npos) << s.message;
}

TEST(Model, CreateValidatesTheArtifact) {
  Artifact a = makeCopyArtifact({2});
  a.steps[0].copy.bytes = 1000;
  std::unique_ptr<Model> model;
  Status s = Model::create(a, Backend::Cuda, model);
  EXPECT_EQ(s.code, StatusCode::CorruptArtifact);
  EXPECT_NE(s.message.find("exceeds"), std::string::npos) << s.message;
  s = Model::create(makeCopyArtifact({2}), static_cast<Backend>(9), model);
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
}

TEST(Model, RefusesAnArtifactWhoseWeightsWereReleased) {
  // The CUDA backend drops the host copy after the upload; the size stays
  // (plans for new dims are checked against it), the bytes do not.
  Artifact a = makeCopyArtifact({2});
  a.buffers.push_back(makeBuffer(BufferKind::Weight, "w", {2}, 0));
  a.weights.assign(2 * sizeof(float), '\0');
  a.releaseWeights();
  EXPECT_EQ(a.weightBytes(), 2 * sizeof(float));
  EXPECT_EQ(a.weightData(), nullptr);
  std::unique_ptr<Model> model;
  Status s = Model::create(a, Backend::Host, model);
  EXPECT_EQ(s.code, StatusCode::CorruptArtifact);
  EXPECT_EQ(s.message, "the artifact's weights were dropped after their "
                       "upload to the GPU (load the artifact again)");
}

TEST(Model, DescribesItself) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(makeRichArtifact(), Backend::Cuda, model).isOk());
  EXPECT_EQ(model->numInputs(), 1u);
  EXPECT_EQ(model->numOutputs(), 1u);
  EXPECT_EQ(model->input(0).name, "x");
  EXPECT_EQ(model->output(0).shape, (std::vector<int64_t>{2, 4}));
  std::string info = model->info();
  for (const char *part : {"0.1.0-test", "sm_90a", "0123456789abcdef",
                           "arena 512 bytes", "backend cuda"})
    EXPECT_NE(info.find(part), std::string::npos) << info;
}

namespace {

/// Runs `model` on float inputs in host memory; returns the float outputs.
std::vector<std::vector<float>>
runHost(Model &model, const std::vector<std::vector<float>> &inputs,
        Status &status) {
  std::vector<const void *> in;
  for (const std::vector<float> &v : inputs)
    in.push_back(v.data());
  std::vector<std::vector<float>> outputs;
  std::vector<void *> out;
  for (size_t i = 0; i < model.numOutputs(); ++i)
    outputs.emplace_back(model.output(i).bytes / sizeof(float), -1.0f);
  for (std::vector<float> &v : outputs)
    out.push_back(v.data());
  status = model.run(in.data(), out.data(), Memory::Host);
  return outputs;
}

/// Creates the model of `artifact` on `backend` and runs it on host memory
/// over `inputs` (`runHost`); fails the test when either fails.
void runModel(const Artifact &artifact, Backend backend,
              const std::vector<std::vector<float>> &inputs,
              std::vector<std::vector<float>> &outputs) {
  std::unique_ptr<Model> model;
  Status s = Model::create(artifact, backend, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  outputs = runHost(*model, inputs, s);
  ASSERT_TRUE(s.isOk()) << s.message;
}

/// The input the tests of `makeRichArtifact`'s and `makeSplatArtifact`'s
/// plans give them.
const std::vector<float> kRichInput = {1, -2, 3, 0.5f, 4, -1};

/// Runs `model` of `a`, a `makeRichArtifact` plan, on host memory over x and
/// expects the output `richReference` gives.
void expectRichOutput(Model &model, const Artifact &a,
                      const std::vector<float> &x) {
  Status s;
  auto y = runHost(model, {x}, s);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(y[0], richReference(a, x));
}

/// Runs `makeSplatArtifact`'s plan on host memory and checks both outputs.
void expectSplatOutputs(Model &model) {
  std::vector<float> y(2 * kSplatColumns, -1.0f);
  std::vector<uint64_t> z(3, 0);
  const void *in[] = {kRichInput.data()};
  void *out[] = {y.data(), z.data()};
  Status s = model.run(in, out, Memory::Host);
  ASSERT_TRUE(s.isOk()) << s.message;
  // Row sums 2 and 3.5, times 0.5: exact in fp32.
  int64_t wrong = 0;
  for (int64_t j = 0; j < kSplatColumns; ++j)
    wrong += (y[j] != 1.0f) + (y[kSplatColumns + j] != 1.75f);
  EXPECT_EQ(wrong, 0) << "y[0] " << y[0] << ", y[last] " << y.back();
  EXPECT_EQ(z, std::vector<uint64_t>(3, kSplatPattern));
}

} // namespace

TEST(Model, HostBackendFillsSplatBuffers) {
  for (bool checking : {false, true}) {
    HostOptions options;
    options.checking = checking;
    std::unique_ptr<Model> model;
    Status s =
        Model::create(makeSplatArtifact(), Backend::Host, model, options);
    ASSERT_TRUE(s.isOk()) << s.message;
    expectSplatOutputs(*model);
  }
}

TEST_F(FakeCuda, FillsSplatBuffersOnTheDevice) {
  std::unique_ptr<Model> model;
  Status s = Model::create(makeSplatArtifact(), Backend::Cuda, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  expectSplatOutputs(*model);
}

TEST_F(FakeCuda, CopyThroughHostMemory) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(
      Model::create(makeCopyArtifact({2, 3}), Backend::Cuda, model).isOk());
  for (float base : {1.0f, -7.5f}) {
    std::vector<float> x = {base, 2, 3, 4, 5, 6};
    Status s;
    auto y = runHost(*model, {x}, s);
    ASSERT_TRUE(s.isOk()) << s.message;
    EXPECT_EQ(y[0], x);
  }
}

TEST_F(FakeCuda, DeviceBuffersCopyAndFreeThemselves) {
  {
    DeviceBuffer a, b;
    ASSERT_TRUE(a.allocate(16, 0).isOk());
    ASSERT_TRUE(b.allocate(16, 0).isOk());
    EXPECT_EQ(liveAllocations(), 2);
    EXPECT_EQ(a.size(), 16u);
    std::vector<int32_t> in = {1, -2, 3, 40}, out(4, 0);
    ASSERT_TRUE(copyMemory(a.data(), Memory::Device, in.data(), Memory::Host,
                           16, 0)
                    .isOk());
    ASSERT_TRUE(
        copyMemory(b.data(), Memory::Device, a.data(), Memory::Device, 16, 0)
            .isOk());
    ASSERT_TRUE(copyMemory(out.data(), Memory::Host, b.data(), Memory::Device,
                           16, 0)
                    .isOk());
    EXPECT_EQ(out, in);
    // A move hands the memory over; reallocating frees the old.
    DeviceBuffer moved = std::move(a);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(liveAllocations(), 2);
    ASSERT_TRUE(moved.allocate(32, 0).isOk());
    EXPECT_EQ(liveAllocations(), 2);
  }
  EXPECT_EQ(liveAllocations(), 0);
}

TEST_F(FakeCuda, DeviceQueueCopiesAndReadsOnItsStream) {
  {
    DeviceBuffer a, b;
    ASSERT_TRUE(a.allocate(16, 0).isOk());
    ASSERT_TRUE(b.allocate(16, 0).isOk());
    DeviceQueue queue;
    ASSERT_TRUE(queue.create(Memory::Device, 0).isOk());
    ASSERT_NE(queue.stream(), nullptr);
    EXPECT_EQ(counter("pinned"), 1);
    std::vector<int32_t> in = {1, -2, 3, 40};
    ASSERT_TRUE(queue.copy(a.data(), in.data(), Memory::Host, 16).isOk());
    EXPECT_EQ(fakeLastStream(), queue.stream());
    ASSERT_TRUE(queue.copy(b.data(), a.data(), Memory::Device, 16).isOk());
    // A read takes the bytes as the work queued before it leaves them, not
    // as later work does.
    ASSERT_TRUE(queue.queueRead(1, b.data(), 8).isOk());
    std::vector<int32_t> zeros(4, 0);
    ASSERT_TRUE(queue.copy(b.data(), zeros.data(), Memory::Host, 16).isOk());
    int32_t read[2] = {0, 0};
    ASSERT_TRUE(queue.takeRead(1, read, 8).isOk());
    EXPECT_EQ(read[0], 1);
    EXPECT_EQ(read[1], -2);
    ASSERT_TRUE(queue.synchronize().isOk());
    // Slots and sizes beyond the staging are refused, not written.
    EXPECT_EQ(queue.queueRead(DeviceQueue::kReadSlots, b.data(), 8).code,
              StatusCode::InvalidArgument);
    EXPECT_EQ(queue.queueRead(0, b.data(), DeviceQueue::kReadBytes + 1).code,
              StatusCode::InvalidArgument);
    EXPECT_EQ(contextDepth(), 0);
  }
  // The queue gave back its page-locked memory (TearDown checks it) and
  // the buffers their memory.
  EXPECT_EQ(counter("pinned"), 0);
  EXPECT_EQ(liveAllocations(), 0);
}

TEST(DeviceQueueTest, HostMemoryCopiesAtOnce) {
  DeviceQueue queue;
  ASSERT_TRUE(queue.create(Memory::Host, 0).isOk());
  EXPECT_EQ(queue.stream(), nullptr);
  int64_t value = 7, into = 0, read = 0;
  ASSERT_TRUE(queue.copy(&into, &value, Memory::Host, sizeof(value)).isOk());
  EXPECT_EQ(into, 7);
  ASSERT_TRUE(queue.queueRead(3, &into, sizeof(into)).isOk());
  into = 9;
  ASSERT_TRUE(queue.takeRead(3, &read, sizeof(read)).isOk());
  EXPECT_EQ(read, 7);
  EXPECT_TRUE(queue.synchronize().isOk());
}

TEST_F(FakeCuda, ProgrammaticDependentLaunchOverlapsEveryKernelLaunch) {
  Artifact a = makeRichArtifact();
  for (bool pdl : {false, true}) {
    CudaOptions options;
    options.pdl = pdl;
    options.graphs = false;
    std::unique_ptr<Model> model;
    ASSERT_TRUE(
        Model::create(a, Backend::Cuda, model, HostOptions(), options).isOk());
    int launches = counter("eagerKernels");
    int overlapped = counter("overlappedLaunches");
    ASSERT_NO_FATAL_FAILURE(expectRichOutput(*model, a, kRichInput));
    launches = counter("eagerKernels") - launches;
    EXPECT_GT(launches, 0);
    // Each kernel, or none: the same results either way.
    EXPECT_EQ(counter("overlappedLaunches") - overlapped, pdl ? launches : 0);
    EXPECT_EQ(model->info().find("programmatic dependent launch") !=
                  std::string::npos,
              pdl);
  }
}

TEST_F(FakeCuda, RunsLaunchMatmulAndCopySteps) {
  Artifact a = makeRichArtifact();
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(a, Backend::Cuda, model).isOk());
  ASSERT_NO_FATAL_FAILURE(expectRichOutput(*model, a, kRichInput));
  // The weights went to the device and left the host.
  EXPECT_TRUE(model->artifact().weights.empty());

  // Device memory: the stand-in driver's device pointers are host pointers.
  std::vector<float> out(8, 0.0f);
  const void *in[] = {kRichInput.data()};
  void *outs[] = {out.data()};
  Status s = model->run(in, outs, Memory::Device);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(out, richReference(a, kRichInput));
}

// Ops of the same code share a kernel: artifact.kernelNames names it once
// for each (PlanSharedKernels.cpp). The function opts in to the most
// dynamic shared memory any of its launches takes, whichever entry comes
// last (the stand-in driver fails a launch past its function's opt-in).
TEST_F(FakeCuda, ASharedKernelOptsInToItsLargestLaunch) {
  Artifact a = makeRichArtifact();
  a.kernelNames.push_back("add_f32");
  a.steps[1].launch.sharedBytes = 100 * 1024;
  // u = t + r again, through the second entry of the same kernel.
  Step again = a.steps[1];
  again.launch.kernel = 2;
  again.launch.sharedBytes = 64 * 1024;
  a.steps.insert(a.steps.begin() + 2, again);
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(a, Backend::Cuda, model).isOk());
  ASSERT_NO_FATAL_FAILURE(expectRichOutput(*model, a, kRichInput));
}

TEST_F(FakeCuda, ContextsShareTheWeightsAndOwnTheirRunState) {
  Artifact a = makeRichArtifact();
  std::vector<float> expected = richReference(a, kRichInput);
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(a, Backend::Cuda, model).isOk());
  std::unique_ptr<ExecutionContext> first, second;
  ASSERT_TRUE(model->createContext(first).isOk());
  ASSERT_TRUE(model->createContext(second).isOk());
  std::vector<float> y(8, 0.0f);
  const void *in[] = {kRichInput.data()};
  void *out[] = {y.data()};
  ASSERT_TRUE(first->run(in, out, Memory::Host).isOk());
  EXPECT_EQ(y, expected);
  // The first run uploaded the shared weights and released the host copy;
  // the second context runs on the device copy.
  EXPECT_TRUE(model->artifact().weights.empty());
  int shared = -1, afterOne = liveAllocations();
  std::fill(y.begin(), y.end(), 0.0f);
  ASSERT_TRUE(second->run(in, out, Memory::Host).isOk());
  EXPECT_EQ(y, expected);
  int perContext = liveAllocations() - afterOne;
  EXPECT_GT(perContext, 0);
  shared = afterOne - perContext;
  EXPECT_GT(shared, 0); // the weights
  // The model's default context is one more of the same.
  std::fill(y.begin(), y.end(), 0.0f);
  ASSERT_TRUE(model->run(in, out, Memory::Host).isOk());
  EXPECT_EQ(y, expected);
  EXPECT_EQ(liveAllocations(), shared + 3 * perContext);
  first.reset();
  second.reset();
  EXPECT_EQ(liveAllocations(), shared + perContext);
  model.reset();
  EXPECT_EQ(liveAllocations(), 0);
}

TEST_F(FakeCuda, FailedRunLeavesTheModelUsable) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(
      Model::create(makeCopyArtifact({4}), Backend::Cuda, model).isOk());
  std::vector<float> y(4);
  const void *nullInput[] = {nullptr};
  void *outs[] = {y.data()};
  Status s = model->run(nullInput, outs, Memory::Host);
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  EXPECT_NE(s.message.find("input 0 ('x') is null"), std::string::npos)
      << s.message;
  s = model->run(nullptr, outs, Memory::Host);
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  s = model->run(nullInput, outs, static_cast<Memory>(5));
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  auto out = runHost(*model, {{1, 2, 3, 4}}, s);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(out[0], (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(FakeCuda, IndexFaultFailsTheRunNamingTheSiteAndClears) {
  Artifact a = makeRichArtifact();
  a.indexSites = {"ONNX node 'embed' (gather over a dim of 96)"};
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(a, Backend::Cuda, model).isOk());
  // What a kernel of the run would do on a bad token id.
  auto *flag = static_cast<unsigned *>(dlsym(fake, "kiln_fake_index_error"));
  ASSERT_NE(flag, nullptr);
  Status s;
  runHost(*model, {kRichInput}, s); // loads the kernels
  ASSERT_TRUE(s.isOk()) << s.message;
  *flag = 1;
  runHost(*model, {kRichInput}, s);
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  EXPECT_NE(s.message.find("index out of range at ONNX node 'embed'"),
            std::string::npos)
      << s.message;
  // Cleared on the device: the next run succeeds.
  EXPECT_EQ(*flag, 0u);
  expectRichOutput(*model, a, kRichInput);
}

TEST_F(FakeCuda, CublasLtFailureFailsTheRunAndLeavesTheModelUsable) {
  Artifact a = makeRichArtifact();
  std::unique_ptr<Model> model;
  // Untuned: a candidate that fails while being timed is passed over, so
  // the failing call must be the run's own.
  CudaOptions options;
  options.tuneMatmuls = false;
  ASSERT_TRUE(
      Model::create(a, Backend::Cuda, model, HostOptions(), options).isOk());
  void *lt = dlopen(KILN_FAKE_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lt, nullptr) << dlerror();
  auto *failing = static_cast<int *>(dlsym(lt, "kiln_fake_failing_matmuls"));
  ASSERT_NE(failing, nullptr);
  *failing = 1;
  Status s;
  runHost(*model, {kRichInput}, s);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message.find("cublasLtMatmul"), std::string::npos) << s.message;
  EXPECT_EQ(*failing, 0);
  expectRichOutput(*model, a, kRichInput);
  dlclose(lt);
}

TEST_F(FakeCuda, FallsBackToPtxWhenTheCubinDoesNotLoad) {
  Artifact a = makeRichArtifact();
  a.cubin = "NOT A CUBIN";
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(a, Backend::Cuda, model).isOk());
  expectRichOutput(*model, a, {1, 2, 3, 4, 5, 6});
}

TEST_F(FakeCuda, ReportsKernelsThatDoNotLoad) {
  Artifact a = makeRichArtifact();
  a.cubin = "NOT A CUBIN";
  a.ptx = "NOT PTX";
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(a, Backend::Cuda, model).isOk());
  for (int attempt = 0; attempt < 2; ++attempt) {
    Status s;
    runHost(*model, {{1, 2, 3, 4, 5, 6}}, s);
    EXPECT_EQ(s.code, StatusCode::Cuda);
    EXPECT_NE(s.message.find("cubin for sm_90a: CUDA_ERROR_NO_BINARY_FOR_GPU"),
              std::string::npos)
        << s.message;
    EXPECT_NE(s.message.find("PTX: CUDA_ERROR_NO_BINARY_FOR_GPU"),
              std::string::npos)
        << s.message;
    // A failed setup releases what it had allocated.
    EXPECT_EQ(liveAllocations(), 0);
  }
  // Weights stay on the host until a setup succeeds.
  EXPECT_FALSE(model->artifact().weights.empty());
}

TEST_F(FakeCuda, ReportsMissingKernels) {
  Artifact a = makeRichArtifact();
  a.kernelNames[1] = "no_such_kernel";
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::create(a, Backend::Cuda, model).isOk());
  Status s;
  runHost(*model, {{1, 2, 3, 4, 5, 6}}, s);
  EXPECT_EQ(s.code, StatusCode::Cuda);
  EXPECT_NE(s.message.find("finding kernel 'no_such_kernel' failed: "
                           "CUDA_ERROR_NOT_FOUND"),
            std::string::npos)
      << s.message;
}

namespace {

class FakeCudaMatmul : public FakeCuda,
                       public ::testing::WithParamInterface<MatmulCase> {};

} // namespace

TEST_P(FakeCudaMatmul, MatchesRowMajorReference) {
  const MatmulCase &c = GetParam();
  Artifact a = makeMatmulPlan(c, 0);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4);
  auto fill = [&](const Buffer &b) {
    std::vector<float> v(b.bytes / 4);
    for (float &x : v)
      x = static_cast<float>(small(rng)) * 0.5f;
    return v;
  };
  std::vector<float> A = fill(a.buffers[0]), B = fill(a.buffers[1]),
                     R = fill(a.buffers[2]);
  std::vector<float> expected = matmulReference(c, A, B, R);
  std::vector<std::vector<float>> y;
  ASSERT_NO_FATAL_FAILURE(runModel(a, Backend::Cuda, {A, B, R}, y));
  EXPECT_EQ(y[0], expected) << c;
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, FakeCudaMatmul,
    ::testing::Values(
        MatmulCase{false, false, 1, 2, 3, 4, false, false, 1, 0},
        MatmulCase{true, false, 1, 2, 3, 4, false, false, 1, 0},
        MatmulCase{false, true, 1, 2, 3, 4, false, false, 1, 0},
        MatmulCase{true, true, 1, 3, 2, 5, false, false, 1, 0},
        MatmulCase{false, false, 3, 2, 3, 4, false, false, 1, 0},
        MatmulCase{false, true, 4, 5, 3, 2, false, false, 0.5f, 1},
        MatmulCase{true, false, 2, 3, 3, 3, true, false, 1, 0},
        MatmulCase{false, false, 3, 4, 2, 3, false, true, 2, 1},
        MatmulCase{false, false, 1, 1, 7, 1, false, false, 1, 1}));

namespace {

/// An artifact whose one step is `mm`, over the float inputs `inputs`
/// (name and shape; buffers 0, 1, ...) into the output y of `outputShape`
/// (the last buffer).
Artifact makeOneMatmulArtifact(
    const std::vector<std::pair<std::string, std::vector<int64_t>>> &inputs,
    std::vector<int64_t> outputShape, const MatmulStep &mm) {
  Artifact a;
  a.kilnVersion = "test";
  for (const auto &[name, shape] : inputs) {
    a.inputs.push_back(static_cast<uint32_t>(a.buffers.size()));
    a.buffers.push_back(
        makeBuffer(BufferKind::Input, name, shape, a.buffers.size()));
  }
  a.outputs = {static_cast<uint32_t>(a.buffers.size())};
  a.buffers.push_back(
      makeBuffer(BufferKind::Output, "y", std::move(outputShape), 0));
  a.steps.push_back(Step::ofMatmul(mm));
  return a;
}

/// y[o][i] = a[o] . b[i] for 2 rows of `a` and 3 columns of `b`: a matmul
/// whose inner batch walks b (a fixed) and whose outer batch walks a.
Artifact makeTwoLevelMatmul() {
  MatmulStep m = makeMatmul(1, 1, 2, 0, 1, 2);
  m.batch = 3;
  m.strideA = 0;
  m.strideB = 2;
  m.strideC = 1;
  m.outerBatch = 2;
  m.outerStrideA = 2;
  m.outerStrideB = 0;
  m.outerStrideC = 3;
  return makeOneMatmulArtifact({{"a", {2, 1, 1, 2}}, {"b", {1, 3, 2, 1}}},
                               {2, 3, 1, 1}, m);
}

void expectTwoLevelMatmul(Backend backend) {
  std::vector<std::vector<float>> y;
  ASSERT_NO_FATAL_FAILURE(runModel(makeTwoLevelMatmul(), backend,
                                   {{1, 2, 3, 4}, {1, 0, 0, 1, 1, 1}}, y));
  EXPECT_EQ(y[0], (std::vector<float>{1, 2, 3, 3, 4, 7}));
}

} // namespace

namespace {

/// Runs a float8 matmul step (7 x 32 by 5 x 32: A's rows and B's a tile's
/// tails) on `backend` over random finite E4M3FN bytes and checks it against
/// the sums of the exact products in double: each product of two float8
/// values is exact in fp32, so only the fp32 sum rounds.
void expectFloat8Matmul(Backend backend) {
  const int64_t m = 7, n = 5, k = 32;
  std::mt19937 rng(8);
  std::uniform_int_distribution<int> byte(0, 255);
  auto fill = [&](size_t count) {
    std::vector<uint8_t> v(count);
    for (uint8_t &x : v)
      do
        x = static_cast<uint8_t>(byte(rng));
      while ((x & 0x7f) == 0x7f); // NaN
    return v;
  };
  std::vector<uint8_t> A = fill(m * k), B = fill(n * k);
  std::unique_ptr<Model> model;
  Status s = Model::create(makeFloat8MatmulArtifact(m, n, k), backend, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  std::vector<float> y(m * n, -1.0f);
  const void *in[] = {A.data(), B.data()};
  void *out[] = {y.data()};
  s = model->run(in, out, Memory::Host);
  ASSERT_TRUE(s.isOk()) << s.message;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        double product = double(floatOfFloat8Bits(A[i * k + p], false)) *
                         floatOfFloat8Bits(B[j * k + p], false);
        sum += product;
        magnitude += std::fabs(product);
      }
      EXPECT_NEAR(y[i * n + j], sum, 1e-6 * magnitude + 1e-30)
          << "element " << i << ", " << j;
    }
}

} // namespace

// cuBLASLt's FP8 form (the stand-in refuses float8 unless cuBLAS's A is
// transposed and its B is not, into fp32) and the host backend's.
TEST_F(FakeCuda, RunsAFloat8Matmul) { expectFloat8Matmul(Backend::Cuda); }

TEST(Model, HostBackendRunsAFloat8Matmul) { expectFloat8Matmul(Backend::Host); }

TEST_F(FakeCuda, RunsATwoLevelBatchMatmul) {
  expectTwoLevelMatmul(Backend::Cuda);
}

TEST(Model, HostBackendRunsATwoLevelBatchMatmul) {
  expectTwoLevelMatmul(Backend::Host);
}

namespace {

/// y = act(a (2x5x3) * w (3x7) + bias (7)): a batched matmul step over a
/// broadcast w with cuBLASLt's epilogue, and the expected output from the
/// MatmulStep contract.
Artifact makeEpilogueArtifact(MatmulActivation activation) {
  MatmulStep mm = makeMatmul(5, 7, 3, 0, 1, 3);
  mm.batch = 2;
  mm.strideA = 15;
  mm.strideC = 35;
  mm.bias = 2;
  mm.activation = activation;
  return makeOneMatmulArtifact({{"a", {2, 5, 3}}, {"w", {3, 7}}, {"bias", {7}}},
                               {2, 5, 7}, mm);
}

std::vector<float> epilogueReference(MatmulActivation activation,
                                     const std::vector<float> &A,
                                     const std::vector<float> &W,
                                     const std::vector<float> &bias) {
  std::vector<float> y(70);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 7; ++j) {
        double x = bias[j];
        for (int p = 0; p < 3; ++p)
          x += double(A[(b * 5 + i) * 3 + p]) * W[p * 7 + j];
        if (activation == MatmulActivation::Relu)
          x = x > 0 ? x : 0;
        else if (activation == MatmulActivation::Gelu)
          x = 0.5 * x *
              (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        y[(b * 5 + i) * 7 + j] = static_cast<float>(x);
      }
  return y;
}

/// Runs the epilogue artifacts on `backend` and checks them.
void expectEpilogues(Backend backend) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(-6, 6);
  auto fill = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = static_cast<float>(small(rng)) * 0.25f;
    return v;
  };
  for (MatmulActivation activation :
       {MatmulActivation::None, MatmulActivation::Relu,
        MatmulActivation::Gelu}) {
    SCOPED_TRACE("activation " + std::to_string(static_cast<int>(activation)));
    std::vector<float> A = fill(30), W = fill(21), bias = fill(7);
    std::vector<std::vector<float>> y;
    ASSERT_NO_FATAL_FAILURE(
        runModel(makeEpilogueArtifact(activation), backend, {A, W, bias}, y));
    std::vector<float> expected = epilogueReference(activation, A, W, bias);
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(y[0][i], expected[i], 1e-5f) << "element " << i;
  }
}

} // namespace

TEST_F(FakeCuda, MatmulEpiloguesAddTheBiasThenActivate) {
  expectEpilogues(Backend::Cuda);
}

TEST(Model, HostGemmAppliesTheSameEpilogues) { expectEpilogues(Backend::Host); }

// The first run of a matmul times the heuristic's candidates on its own
// operands and keeps the fastest: the stand-in offers algorithms 42, 43 and
// 44 at 3, 1 and 2 us a call (its heuristic lists 42 first), so 43 runs
// from then on, in the graph the second run captures too. Each candidate
// runs once untimed and five times between the events.
TEST_F(FakeCuda, MatmulsRunTheFastestCandidate) {
  std::vector<float> A(30), W(21), bias(7);
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  for (size_t i = 0; i < W.size(); ++i)
    W[i] = 0.5f * static_cast<float>(i % 3) - 0.5f;
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = static_cast<float>(i);
  std::unique_ptr<Model> model;
  Status s = Model::create(makeEpilogueArtifact(MatmulActivation::None),
                           Backend::Cuda, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  std::vector<float> expected =
      epilogueReference(MatmulActivation::None, A, W, bias);
  auto first = runHost(*model, {A, W, bias}, s);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(first[0], expected);
  expectMatmulAlgoCalls(6, 7, 6);
  auto second = runHost(*model, {A, W, bias}, s);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(second[0], expected);
  EXPECT_EQ(counter("captures"), 1);
  expectMatmulAlgoCalls(6, 8, 6);
}

// Turned off, the heuristic's first candidate runs, untimed.
TEST_F(FakeCuda, MatmulTuningCanBeTurnedOff) {
  std::vector<float> A(30, 0.5f), W(21, -0.25f), bias(7, 1.0f);
  CudaOptions options;
  options.tuneMatmuls = false;
  std::unique_ptr<Model> model;
  Status s = Model::create(makeEpilogueArtifact(MatmulActivation::None),
                           Backend::Cuda, model, HostOptions(), options);
  ASSERT_TRUE(s.isOk()) << s.message;
  for (int run = 0; run < 2; ++run) {
    auto y = runHost(*model, {A, W, bias}, s);
    ASSERT_TRUE(s.isOk()) << s.message;
    EXPECT_EQ(y[0], epilogueReference(MatmulActivation::None, A, W, bias));
  }
  expectMatmulAlgoCalls(2, 0, 0);
}

// negative_: a matmul whose beta accumulates into C in place would change
// its own operand with every timed call: it runs the heuristic's first,
// whether C is read as itself or as a residual in its own storage.
TEST_F(FakeCuda, negative_AnInPlaceAccumulationIsNotTimed) {
  int runs = 0;
  for (bool asResidual : {false, true}) {
    SCOPED_TRACE(asResidual ? "residual in C's storage" : "beta over C");
    Artifact a = makeEpilogueArtifact(MatmulActivation::None);
    a.steps[0].matmul.beta = 1.0f;
    if (asResidual)
      a.steps[0].matmul.residual = a.steps[0].matmul.c;
    std::unique_ptr<Model> model;
    Status s = Model::create(a, Backend::Cuda, model);
    ASSERT_TRUE(s.isOk()) << s.message;
    std::vector<float> A(30, 0.5f), W(21, -0.25f), bias(7, 1.0f);
    std::vector<float> y(70, 2.0f);
    const void *in[] = {A.data(), W.data(), bias.data()};
    void *out[] = {y.data()};
    // Device memory (the stand-in's device pointers are host pointers): C
    // holds what the caller put there.
    s = model->run(in, out, Memory::Device);
    ASSERT_TRUE(s.isOk()) << s.message;
    ++runs;
    std::vector<float> expected =
        epilogueReference(MatmulActivation::None, A, W, bias);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_FLOAT_EQ(y[i], expected[i] + 2.0f) << "element " << i;
    expectMatmulAlgoCalls(runs, 0, 0);
  }
}
