//===- HostBackendTest.cpp - The host backend on hand-written kernels -----===//
//
// Kernels written here, not by Kiln, each probing one property of the
// emulation: barriers order memory, shuffles move lane values, the seed
// changes the interleaving, divergent barriers are reported, the checking
// mode catches an access past a buffer, and unwritten memory reads as
// poison. The test binary runs with AddressSanitizer, so the checking mode
// is available in-process.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"
#include "HostGemm.h"
#include "TestArtifacts.h"
#include "kiln/runtime/Model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// Keeps the compiled modules of this test out of the user's cache.
using HostBackend = PrivateCacheSuite;

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i) + 0.5f;
  return v;
}

/// Each block reverses its tile through shared memory; BARRIER separates
/// the writes from the reads.
const char *kReverseSource = R"cuda(
extern "C" __global__ void reverse(const float *in, float *out) {
  __shared__ float tile[256];
  unsigned base = blockIdx.x * blockDim.x;
  tile[threadIdx.x] = in[base + threadIdx.x];
  BARRIER;
  out[base + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
)cuda";

std::string withBarrier(const char *barrier) {
  return std::string("#define BARRIER ") + barrier + "\n" + kReverseSource;
}

TEST_F(HostBackend, BarrierOrdersSharedMemoryUnderEverySeed) {
  std::vector<float> x = iota(512), want(512);
  for (size_t i = 0; i < 512; ++i)
    want[i] = x[i / 256 * 256 + 255 - i % 256];
  for (uint64_t seed = 0; seed < 8; ++seed) {
    HostOptions options;
    options.seed = seed;
    EXPECT_EQ(runOnHost(kernelArtifact(withBarrier("__syncthreads()"),
                                       "reverse", 512, 2, 256),
                        x, options),
              want)
        << "seed " << seed;
  }
}

TEST_F(HostBackend, MissingBarrierGivesWrongAndSeedDependentResults) {
  std::vector<float> x = iota(512), want(512);
  for (size_t i = 0; i < 512; ++i)
    want[i] = x[i / 256 * 256 + 255 - i % 256];
  std::vector<std::vector<float>> results;
  size_t wrong = 0;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    HostOptions options;
    options.seed = seed;
    results.push_back(runOnHost(
        kernelArtifact(withBarrier("(void)0"), "reverse", 512, 2, 256), x,
        options));
    wrong += results.back() != want;
  }
  EXPECT_GT(wrong, 0u) << "a kernel without its barrier passed every seed";
  bool differ = false;
  for (const auto &r : results)
    differ |= r != results.front();
  EXPECT_TRUE(differ) << "the seed does not change the interleaving";
}

TEST_F(HostBackend, WarpShufflesMoveLaneValues) {
  // out[i] = sum of the warp (xor butterfly) + value of lane+1 (down) +
  // value of lane 3 (indexed); blocks of 64 threads = two warps.
  const char *source = R"cuda(
extern "C" __global__ void lanes(const float *in, float *out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[i], sum = v;
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  float next = __shfl_down_sync(0xffffffffu, v, 1);
  float third = __shfl_sync(0xffffffffu, v, 3);
  unsigned ballot = __ballot_sync(0xffffffffu, (threadIdx.x & 1) != 0);
  out[i] = sum + next + third + (ballot == 0xaaaaaaaau ? 1000.0f : 0.0f);
}
)cuda";
  std::vector<float> x = iota(128), want(128);
  for (size_t i = 0; i < 128; ++i) {
    size_t warp = i / 32 * 32, lane = i % 32;
    float sum = 0;
    for (size_t l = 0; l < 32; ++l)
      sum += x[warp + l];
    float next = lane < 31 ? x[i + 1] : x[i];
    want[i] = sum + next + x[warp + 3] + 1000.0f;
  }
  for (uint64_t seed : {0u, 5u}) {
    HostOptions options;
    options.seed = seed;
    std::vector<float> got =
        runOnHost(kernelArtifact(source, "lanes", 128, 2, 64), x, options);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < 128; ++i)
      EXPECT_NEAR(got[i], want[i], 1e-3f * std::fabs(want[i])) << i;
  }
}

TEST_F(HostBackend, DivergentBarrierIsReported) {
  const char *source = R"cuda(
extern "C" __global__ void diverge(const float *in, float *out) {
  if (threadIdx.x < 16) __syncthreads();
  else __syncwarp();
  out[threadIdx.x] = in[threadIdx.x];
}
)cuda";
  Status status;
  runOnHost(kernelArtifact(source, "diverge", 32, 1, 32), iota(32),
            HostOptions(), &status);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message.find("divergent"), std::string::npos)
      << status.message;
}

TEST_F(HostBackend, IndexFaultFailsTheRunNamingTheSiteAndClears) {
  // The kernel records site 2 when an input value, used as an index into 8
  // elements, is out of range.
  Artifact a = kernelArtifact(indexLookupSource(2), "lookup", 8, 1, 8);
  a.indexSites = {"ONNX node 'first' (gather over a dim of 4)",
                  "ONNX node 'embed' (gather over a dim of 8)"};
  std::unique_ptr<Model> model;
  Status s = Model::create(std::move(a), Backend::Host, model, HostOptions());
  ASSERT_TRUE(s.isOk()) << s.message;
  std::vector<float> bad = {0, 1, 2, 30, 4, 5, 6, 7}, good = {0, 1, 2, 3,
                                                              4, 5, 6, 7};
  std::vector<float> y(8);
  void *out[] = {y.data()};
  const void *badIn[] = {bad.data()}, *goodIn[] = {good.data()};
  s = model->run(badIn, out, Memory::Host);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.code, StatusCode::InvalidArgument);
  EXPECT_NE(s.message.find("index out of range at ONNX node 'embed' (gather "
                           "over a dim of 8)"),
            std::string::npos)
      << s.message;
  // The model stays usable, and the flag does not leak into the next run.
  s = model->run(goodIn, out, Memory::Host);
  EXPECT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(y, good);
}

TEST_F(HostBackend, UnwrittenOutputReadsAsPoison) {
  const char *source = R"cuda(
extern "C" __global__ void half_copy(const float *in, float *out) {
  if (threadIdx.x % 2 == 0) out[threadIdx.x] = in[threadIdx.x];
}
)cuda";
  std::vector<float> y = runOnHost(
      kernelArtifact(source, "half_copy", 8, 1, 8), iota(8), HostOptions());
  for (size_t i = 0; i < 8; ++i) {
    if (i % 2 == 0)
      EXPECT_EQ(y[i], iota(8)[i]);
    else
      EXPECT_TRUE(std::isnan(y[i])) << i;
  }
}

TEST_F(HostBackend, CompileErrorsNameTheSource) {
  Status status;
  runOnHost(kernelArtifact("extern \"C\" __global__ void broken(const float *a, "
                           "float *b) { b[0] = undeclared; }",
                           "broken", 4, 1, 1),
            iota(4), HostOptions(), &status);
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message.find("undeclared"), std::string::npos)
      << status.message;
}

TEST_F(HostBackend, ArityMismatchIsCorruptArtifact) {
  Artifact a = kernelArtifact(withBarrier("__syncthreads()"), "reverse", 256,
                              1, 256);
  a.steps[0].launch.args = {0};
  Status status;
  runOnHost(a, iota(256), HostOptions(), &status);
  EXPECT_EQ(status.code, StatusCode::CorruptArtifact) << status.message;
}

/// Writes one element past the output: the classic off-by-one of a guard
/// written `<=` instead of `<`.
const char *kOverrunSource = R"cuda(
extern "C" __global__ void overrun(const float *in, float *out) {
  for (unsigned i = threadIdx.x; i <= 64; i += blockDim.x) out[i] = in[i % 64];
}
)cuda";

TEST_F(HostBackend, CheckingModeCatchesAWritePastTheBuffer) {
  HostOptions options;
  options.checking = true;
  EXPECT_DEATH(runOnHost(kernelArtifact(kOverrunSource, "overrun", 64, 1, 32),
                         iota(64), options),
               "heap-buffer-overflow");
}

TEST(HostGemm, MatchesADoubleReference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      MatmulStep s;
      s.transA = transA;
      s.transB = transB;
      s.batch = 3;
      s.m = 5;
      s.n = 7;
      s.k = 9;
      s.strideA = s.m * s.k;
      s.strideB = 0; // one B for every batch
      s.strideC = s.m * s.n;
      s.alpha = 0.5f;
      s.beta = 1.0f;
      std::vector<float> a(s.batch * s.m * s.k), b(s.k * s.n),
          c(s.batch * s.m * s.n);
      for (float &v : a)
        v = dist(rng);
      for (float &v : b)
        v = dist(rng);
      for (float &v : c)
        v = dist(rng);
      std::vector<float> want = c;
      for (int64_t q = 0; q < s.batch; ++q)
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) {
            double acc = 0;
            for (int64_t p = 0; p < s.k; ++p) {
              double x = a[q * s.strideA +
                           (transA ? p * s.m + i : i * s.k + p)];
              double y = b[transB ? j * s.k + p : p * s.n + j];
              acc += x * y;
            }
            want[q * s.strideC + i * s.n + j] = static_cast<float>(
                s.alpha * acc + s.beta * c[q * s.strideC + i * s.n + j]);
          }
      kiln::rt::host::runGemm(s, a.data(), b.data(), c.data(), nullptr,
                              c.data());
      for (size_t i = 0; i < c.size(); ++i)
        EXPECT_NEAR(c[i], want[i], 1e-5) << "transA " << transA << " transB "
                                         << transB << " element " << i;
    }
}

TEST(HostGemm, Tf32RoundsTheInputsToNearestTiesAway) {
  // 1 + 2^-12 is below half a TF32 ulp (2^-10) above 1: it rounds to 1;
  // 1 + 2^-11 is a tie: away from zero, to 1 + 2^-10 (and the negative to
  // -(1 + 2^-10)). In fp32 the products keep every bit.
  float a[1] = {1.0f + 0x1p-12f};
  float b[2] = {1.0f + 0x1p-11f, -(1.0f + 0x1p-11f)};
  MatmulStep step;
  step.m = 1;
  step.n = 2;
  step.k = 1;
  float c[2] = {0, 0};
  host::runGemm(step, a, b, c, nullptr, c);
  EXPECT_EQ(c[0], (1.0f + 0x1p-12f) * (1.0f + 0x1p-11f));
  EXPECT_EQ(c[1], -c[0]);
  step.tf32 = true;
  host::runGemm(step, a, b, c, nullptr, c);
  EXPECT_EQ(c[0], 1.0f + 0x1p-10f);
  EXPECT_EQ(c[1], -(1.0f + 0x1p-10f));
}

TEST(HostGemm, Float64AccumulatesInDouble) {
  // Row [1, 2^-30, -1] times a column of ones: 2^-30 survives a double sum
  // and vanishes in a float one (1 + 2^-30 rounds to 1 in fp32).
  MatmulStep s;
  s.dtype = DType::F64;
  s.m = 1;
  s.n = 1;
  s.k = 3;
  s.alpha = 2.0f;
  s.beta = 1.0f;
  std::vector<double> a = {1.0, std::ldexp(1.0, -30), -1.0}, b = {1, 1, 1},
                      c = {std::ldexp(1.0, -40)};
  kiln::rt::host::runGemm(s, a.data(), b.data(), c.data(), nullptr, c.data());
  EXPECT_EQ(c[0], std::ldexp(1.0, -29) + std::ldexp(1.0, -40));
}

TEST(HostGemm, AResidualIsReadAndCOnlyWritten) {
  // C = A B + R + bias with R apart from C: C's old contents are not read,
  // R is not written.
  MatmulStep s;
  s.m = 2;
  s.n = 2;
  s.k = 1;
  s.beta = 1.0f;
  s.residual = 7; // Any id: runGemm takes the pointer.
  float a[2] = {1, 2}, b[2] = {3, 4}, bias[2] = {0.5f, -0.5f};
  float residual[4] = {10, 20, 30, 40};
  float c[4] = {1e30f, 1e30f, 1e30f, 1e30f};
  kiln::rt::host::runGemm(s, a, b, c, bias, residual);
  EXPECT_EQ(c[0], 3 + 10 + 0.5f);
  EXPECT_EQ(c[1], 4 + 20 - 0.5f);
  EXPECT_EQ(c[2], 6 + 30 + 0.5f);
  EXPECT_EQ(c[3], 8 + 40 - 0.5f);
  EXPECT_EQ(residual[3], 40);
}

TEST(Model, AutoFallsBackToHostWithoutADriver) {
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  std::string why;
  if (cudaDeviceAvailable(why)) {
    unsetenv("KILN_CUDA_DRIVER");
    GTEST_SKIP() << "a CUDA driver is loaded in this process already";
  }
  std::unique_ptr<Model> model;
  Status s = Model::create(makeCopyArtifact({4}), Backend::Auto, model);
  unsetenv("KILN_CUDA_DRIVER");
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(model->backend(), Backend::Host);
  EXPECT_NE(model->info().find("backend host (auto: no CUDA driver found"),
            std::string::npos)
      << model->info();
  std::vector<float> x = iota(4), y(4);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  ASSERT_TRUE(model->run(in, out, Memory::Host).isOk());
  EXPECT_EQ(y, x);
}

} // namespace
