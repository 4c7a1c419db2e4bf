//===- GpuTest.cpp - Copy and cuBLASLt matmul steps on a real GPU ---------===//
//
// Needs a CUDA driver and a GPU (ctest label `gpu`); skips itself otherwise.
// The plans use only copy and matmul steps, so no compiled kernels are
// needed: it checks the driver binding, staging and the cuBLASLt row-major
// mapping (transposes, batch strides, broadcast, beta) on the device, and
// the CUDA-graph replay, device-memory I/O and runs on a caller's stream
// (whose plumbing GraphsAndStreamsTest.cpp checks on the stand-in driver).
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln_model.h"
#include "kiln/runtime/ArtifactFormat.h"

#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <thread>
#include <type_traits>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// Returns the IEEE half bits of `f` (round to nearest even; normal range).
uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if ((x & 0x7fffffff) == 0)
    return static_cast<uint16_t>(sign);
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return static_cast<uint16_t>(half);
}

/// Returns the float value of IEEE half bits `h` (normal range and zero).
float fromHalf(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t x = sign;
  if (exp != 0)
    x |= ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

class Gpu : public ::testing::Test {
protected:
  void SetUp() override {
    unsetenv("KILN_CUDA_DRIVER");
    unsetenv("KILN_CUBLASLT");
    if (!haveCudaDriver())
      GTEST_SKIP() << "no CUDA driver (libcuda.so.1) on this machine";
  }
};

/// The plan of a `MatmulCase` (`makeMatmulPlan`, its accumulator at 256)
/// with one set of inputs and the expected output.
struct MatmulProblem {
  Artifact artifact;
  /// The encoded inputs a, b, r.
  std::string a, b, r;
  std::vector<float> expected;
  /// Bytes of the output.
  size_t outputBytes() const { return artifact.buffers[4].bytes; }
};

MatmulProblem makeMatmulProblem(const MatmulCase &c, unsigned seed) {
  MatmulProblem p;
  p.artifact = makeMatmulPlan(c, 256);
  const Artifact &a = p.artifact;
  // Small multiples of 1/4: exact in every dtype and in fp32 sums.
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-8, 8);
  auto fill = [&](const Buffer &b) {
    std::vector<float> v(b.bytes / dtypeSize(c.dtype));
    for (float &x : v)
      x = static_cast<float>(small(rng)) * 0.25f;
    return v;
  };
  std::vector<float> A = fill(a.buffers[0]), B = fill(a.buffers[1]),
                     R = fill(a.buffers[2]);
  auto encode = [&](const std::vector<float> &v) {
    if (c.dtype == DType::F32)
      return bytesOf(v);
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      h[i] = toHalf(v[i]);
    return std::string(reinterpret_cast<const char *>(h.data()), h.size() * 2);
  };
  p.a = encode(A);
  p.b = encode(B);
  p.r = encode(R);
  p.expected = matmulReference(c, A, B, R);
  return p;
}

/// Checks the encoded output `out` against `expected`.
void expectOutput(DType dtype, const std::string &out,
                  const std::vector<float> &expected) {
  for (size_t i = 0; i < expected.size(); ++i) {
    float got;
    if (dtype == DType::F32) {
      std::memcpy(&got, out.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, out.data() + 2 * i, 2);
      got = fromHalf(h);
    }
    // Exact inputs: fp32 results are exact; f16 rounds the result once.
    float tolerance =
        dtype == DType::F32 ? 1e-4f : 1e-3f * std::fabs(expected[i]) + 1e-3f;
    ASSERT_NEAR(got, expected[i], tolerance) << "element " << i;
  }
}

/// Opens `artifact` (`openModel`) on the CUDA backend.
void openOnCuda(const Artifact &artifact, LoadedArtifact &lib,
                kiln_model *&model) {
  openModel(artifact, KILN_BACKEND_CUDA, lib, model);
}

/// The driver calls a test needs to hold device memory and a stream of its
/// own, as an application does; in the primary context the runtime uses.
struct TestDriver {
  using Result = int;
  using DevicePtr = unsigned long long;
  Result (*init)(unsigned);
  Result (*deviceGet)(int *, int);
  Result (*primaryCtxRetain)(void **, int);
  Result (*primaryCtxRelease)(int);
  Result (*ctxSetCurrent)(void *);
  Result (*memAlloc)(DevicePtr *, size_t);
  Result (*memFree)(DevicePtr);
  Result (*memcpyHtoD)(DevicePtr, const void *, size_t);
  Result (*memcpyDtoH)(void *, DevicePtr, size_t);
  Result (*streamCreate)(void **, unsigned);
  Result (*streamDestroy)(void *);
  Result (*streamSynchronize)(void *);
  void *handle = nullptr;
  int device = 0;
  void *context = nullptr;

  /// Opens libcuda and makes the primary context current; false on failure.
  bool open() {
    handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return false;
    bool ok = true;
    auto get = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(handle, name));
      ok = ok && fn;
    };
    get(init, "cuInit");
    get(deviceGet, "cuDeviceGet");
    get(primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    get(ctxSetCurrent, "cuCtxSetCurrent");
    get(memAlloc, "cuMemAlloc_v2");
    get(memFree, "cuMemFree_v2");
    get(memcpyHtoD, "cuMemcpyHtoD_v2");
    get(memcpyDtoH, "cuMemcpyDtoH_v2");
    get(streamCreate, "cuStreamCreate");
    get(streamDestroy, "cuStreamDestroy_v2");
    get(streamSynchronize, "cuStreamSynchronize");
    return ok && init(0) == 0 && deviceGet(&device, 0) == 0 &&
           primaryCtxRetain(&context, device) == 0 &&
           ctxSetCurrent(context) == 0;
  }
  /// Returns device memory holding `bytes`.
  DevicePtr upload(const std::string &bytes) {
    DevicePtr p = 0;
    EXPECT_EQ(memAlloc(&p, bytes.size()), 0);
    EXPECT_EQ(memcpyHtoD(p, bytes.data(), bytes.size()), 0);
    return p;
  }
  /// Returns `bytes` bytes of device memory at `p`.
  std::string download(DevicePtr p, size_t bytes) {
    std::string out(bytes, '\0');
    EXPECT_EQ(memcpyDtoH(&out[0], p, bytes), 0);
    return out;
  }
};

/// Returns `p` as the pointer type of the C ABI's device tensors.
const void *devicePointer(TestDriver::DevicePtr p) {
  return reinterpret_cast<const void *>(static_cast<uintptr_t>(p));
}

} // namespace

TEST_F(Gpu, CopyStep) {
  LoadedArtifact lib;
  kiln_model *model = nullptr;
  ASSERT_NO_FATAL_FAILURE(openOnCuda(makeCopyArtifact({1000}), lib, model));
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i) * 0.25f;
  expectCopiesItsInput(lib, model, x);
  lib.destroy(model);
}

TEST_F(Gpu, MatmulSteps) {
  for (const MatmulCase &c :
       {MatmulCase{false, false, 1, 64, 32, 16, false, false, 1, 0, DType::F32},
        MatmulCase{false, true, 3, 33, 17, 29, false, false, 0.5f, 1,
                   DType::F32},
        MatmulCase{true, false, 2, 8, 24, 40, false, true, 1, 0, DType::F32},
        MatmulCase{true, true, 4, 16, 64, 32, false, false, 1, 1, DType::F16},
        MatmulCase{false, false, 2, 32, 16, 64, false, true, 1, 0,
                   DType::F16}}) {
    SCOPED_TRACE(c);
    MatmulProblem p = makeMatmulProblem(c, 42);
    LoadedArtifact lib;
    kiln_model *model = nullptr;
    ASSERT_NO_FATAL_FAILURE(openOnCuda(p.artifact, lib, model));
    std::string out(p.outputBytes(), '\0');
    const void *in[] = {p.a.data(), p.b.data(), p.r.data()};
    void *outs[] = {&out[0]};
    ASSERT_EQ(lib.run(model, in, outs, KILN_MEMORY_HOST), KILN_OK)
        << lib.lastError();
    expectOutput(c.dtype, out, p.expected);
    lib.destroy(model);
  }
}

TEST_F(Gpu, GraphReplaysKeepTheResultsRight) {
  // The same plan with fresh inputs each run: the first run issues the
  // steps, the others replay its graph; with KILN_CUDA_GRAPHS=0 none does.
  for (const char *graphs : {"1", "0"}) {
    SCOPED_TRACE(std::string("KILN_CUDA_GRAPHS=") + graphs);
    setenv("KILN_CUDA_GRAPHS", graphs, 1);
    MatmulCase c{false, true, 3, 48, 40, 64, false, false, 1, 1, DType::F16};
    LoadedArtifact lib;
    kiln_model *model = nullptr;
    ASSERT_NO_FATAL_FAILURE(
        openOnCuda(makeMatmulProblem(c, 1).artifact, lib, model));
    for (unsigned run = 0; run < 5; ++run) {
      MatmulProblem p = makeMatmulProblem(c, 100 + run);
      std::string out(p.outputBytes(), '\0');
      const void *in[] = {p.a.data(), p.b.data(), p.r.data()};
      void *outs[] = {&out[0]};
      ASSERT_EQ(lib.run(model, in, outs, KILN_MEMORY_HOST), KILN_OK)
          << lib.lastError();
      SCOPED_TRACE("run " + std::to_string(run));
      expectOutput(c.dtype, out, p.expected);
    }
    lib.destroy(model);
  }
  unsetenv("KILN_CUDA_GRAPHS");
}

TEST_F(Gpu, DeviceMemoryOnACallersStream) {
  TestDriver driver;
  ASSERT_TRUE(driver.open()) << "could not set up the CUDA driver";
  MatmulCase c{true, false, 2, 40, 24, 32, false, false, 0.5f, 1, DType::F32};
  LoadedArtifact lib;
  kiln_model *model = nullptr;
  ASSERT_NO_FATAL_FAILURE(
      openOnCuda(makeMatmulProblem(c, 7).artifact, lib, model));
  kiln_context *context = nullptr;
  ASSERT_EQ(lib.contextCreate(model, &context), KILN_OK) << lib.lastError();
  void *stream = nullptr;
  ASSERT_EQ(driver.streamCreate(&stream, 0), 0);
  // Six runs over three sets of device buffers, queued back to back on the
  // caller's stream without waiting: graphs per address set, and runs of one
  // context ordered although they share its arena.
  constexpr int kSets = 3, kRuns = 6;
  std::vector<MatmulProblem> problems;
  std::vector<TestDriver::DevicePtr> buffers;
  std::vector<TestDriver::DevicePtr> outputs;
  for (int run = 0; run < kRuns; ++run) {
    problems.push_back(makeMatmulProblem(c, 200 + run));
    MatmulProblem &p = problems.back();
    TestDriver::DevicePtr a = driver.upload(p.a), b = driver.upload(p.b),
                          r = driver.upload(p.r);
    buffers.insert(buffers.end(), {a, b, r});
    if (run < kSets)
      outputs.push_back(driver.upload(std::string(p.outputBytes(), '\0')));
    const void *in[] = {devicePointer(a), devicePointer(b), devicePointer(r)};
    void *outs[] = {const_cast<void *>(devicePointer(outputs[run % kSets]))};
    ASSERT_EQ(lib.contextEnqueue(context, in, outs, stream), KILN_OK)
        << lib.lastError();
    if (run % kSets == kSets - 1) {
      // Work queued after the runs on the caller's stream sees their
      // outputs once the stream is done.
      ASSERT_EQ(driver.streamSynchronize(stream), 0);
      ASSERT_EQ(lib.contextSynchronize(context), KILN_OK) << lib.lastError();
      for (int done = run - kSets + 1; done <= run; ++done) {
        SCOPED_TRACE("run " + std::to_string(done));
        expectOutput(c.dtype,
                     driver.download(outputs[done % kSets],
                                     problems[done].outputBytes()),
                     problems[done].expected);
      }
    }
  }
  for (TestDriver::DevicePtr p : buffers)
    driver.memFree(p);
  for (TestDriver::DevicePtr p : outputs)
    driver.memFree(p);
  driver.streamDestroy(stream);
  lib.contextDestroy(context);
  lib.destroy(model);
  driver.primaryCtxRelease(driver.device);
}

TEST_F(Gpu, ContextsRunAtOnceFromThreads) {
  // Each thread its own context (arena, staging, stream, graphs) and its own
  // inputs; all share the model's weights and kernels.
  MatmulCase c{false, false, 2, 64, 48, 32, false, true, 1, 1, DType::F16};
  LoadedArtifact lib;
  kiln_model *model = nullptr;
  ASSERT_NO_FATAL_FAILURE(
      openOnCuda(makeMatmulProblem(c, 3).artifact, lib, model));
  constexpr int kThreads = 4, kRuns = 6;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      kiln_context *context = nullptr;
      ASSERT_EQ(lib.contextCreate(model, &context), KILN_OK) << lib.lastError();
      for (int run = 0; run < kRuns; ++run) {
        MatmulProblem p = makeMatmulProblem(c, 1000 * t + run);
        std::string out(p.outputBytes(), '\0');
        const void *in[] = {p.a.data(), p.b.data(), p.r.data()};
        void *outs[] = {&out[0]};
        ASSERT_EQ(lib.contextRun(context, in, outs, KILN_MEMORY_HOST), KILN_OK)
            << lib.lastError();
        SCOPED_TRACE("thread " + std::to_string(t) + ", run " +
                     std::to_string(run));
        expectOutput(c.dtype, out, p.expected);
      }
      lib.contextDestroy(context);
    });
  for (std::thread &thread : threads)
    thread.join();
  lib.destroy(model);
}
