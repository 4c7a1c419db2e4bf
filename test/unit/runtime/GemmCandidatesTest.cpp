//===- GemmCandidatesTest.cpp - running Kiln's GEMM kernels ---------------===//
//
// What both backends decide before launching a Kiln GEMM kernel: the
// candidate asked for, whether the run's operands fit it, its grid and
// arguments.
//
//===----------------------------------------------------------------------===//

#include "GemmCandidates.h"
#include "TensorMaps.h"

#include "FakeCudaFixture.h"
#include "TestArtifacts.h"
#include "kiln/runtime/Model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// A float16 step of m x n x k with row-major operands, offering one split
/// candidate of 64 x 64 tiles.
MatmulStep stepOf(int64_t m, int64_t n, int64_t k) {
  MatmulStep s;
  s.dtype = DType::F16;
  s.m = m;
  s.n = n;
  s.k = k;
  s.strideC = m * n;
  s.activation = MatmulActivation::Gelu;
  s.kernels.push_back({"mma_64x64x32_w2x2_split4", 0, 64, 64, 64, 128, 4});
  return s;
}

/// The same step offering one wgmma-form candidate of 128 x 128 tiles,
/// which takes tensor maps.
MatmulStep wgmmaStepOf(int64_t m, int64_t n, int64_t k) {
  MatmulStep s = stepOf(m, n, k);
  s.kernels[0] = {
      "wgmma_128x128x64_s4_split1", 0, 0, 128, 128, 256, 1, 132096, true};
  return s;
}

alignas(16) const char operand[16] = {};

} // namespace

TEST(GemmCandidates, FindsByNameAndListsThem) {
  MatmulStep s = stepOf(7, 72, 520);
  ASSERT_NE(findGemmCandidate(s, "mma_64x64x32_w2x2_split4"), nullptr);
  EXPECT_EQ(findGemmCandidate(s, "mma_64x64x32_w2x2_split1"), nullptr);
  EXPECT_EQ(gemmCandidateNames(s), "mma_64x64x32_w2x2_split4");
  s.kernels.clear();
  EXPECT_EQ(gemmCandidateNames(s), "none");
}

TEST(GemmCandidates, GridArgumentsAndPartials) {
  MatmulStep s = stepOf(129, 72, 520);
  s.batch = 3;
  const GemmCandidate &g = s.kernels[0];
  // ceil(72 / 64) column tiles, ceil(129 / 64) row tiles, 3 matrices x 4
  // splits.
  EXPECT_EQ(gemmGrid(s, g), (std::array<uint32_t, 3>{2, 3, 12}));
  std::array<long long, 13> args = gemmIntegerArguments(s, g);
  EXPECT_EQ(args[0], 3);   // batch
  EXPECT_EQ(args[1], 129); // m
  EXPECT_EQ(args[6], 129 * 72);
  EXPECT_EQ(args[11], 2); // GELU
  EXPECT_EQ(args[12], 4); // the split
  EXPECT_EQ(gemmPartialFloats(s, g), 3u * 4 * 129 * 72);
  EXPECT_EQ(gemmFinishBlocks(s), (3u * 129 * 72 + 255) / 256);
  // The norm kernel: a warp a row of 72 columns, eight a block; the block
  // a row past 1,024 columns.
  EXPECT_EQ(gemmNormBlocks(s), (3u * 129 + 7) / 8);
  MatmulStep wide = s;
  wide.n = 1025;
  EXPECT_EQ(gemmNormBlocks(wide), 3u * 129);
  // 2 x 3 tiles of each of the 3 matrices: what the split's arrivals count.
  EXPECT_EQ(gemmTiles(s, g), 2u * 3 * 3);
  GemmCandidate whole = g;
  whole.splitK = 1;
  EXPECT_EQ(gemmPartialFloats(s, whole), 0u);
  EXPECT_EQ(gemmKernelArity(s, g), kGemmKernelArity);
  EXPECT_EQ(gemmKernelIntegers(s, g).size(), 13u);

  // A norm's kernel: its sums split or not, then each matrix's rows'
  // statistics over the 2 column tiles, and the norm's arguments.
  s.normScale = 0;
  s.normEpsilon = 1e-5f;
  s.normRms = true;
  EXPECT_EQ(gemmPartialFloats(s, g), 3u * 4 * 129 * 72 + 3u * 129 * 2 * 2);
  EXPECT_EQ(gemmPartialFloats(s, whole), 3u * 129 * 72 + 3u * 129 * 2 * 2);
  EXPECT_EQ(gemmKernelArity(s, g), kGemmNormedKernelArity);
  std::vector<long long> integers = gemmKernelIntegers(s, g);
  ASSERT_EQ(integers.size(), 15u);
  EXPECT_EQ(integers[12], 4); // the split
  float epsilon = 0;
  uint32_t bits = static_cast<uint32_t>(integers[13]);
  std::memcpy(&epsilon, &bits, sizeof(epsilon));
  EXPECT_EQ(epsilon, 1e-5f);
  EXPECT_EQ(integers[14], 1); // RMSNorm
  GemmCandidate mapped = g;
  mapped.tensorMaps = true;
  EXPECT_EQ(gemmKernelArity(s, mapped), kGemmNormedKernelArity + 2);
}

TEST(GemmCandidates, OperandsMustBeWholeChunks) {
  EXPECT_EQ(gemmCandidateMisfit(stepOf(7, 72, 520),
                                stepOf(7, 72, 520).kernels[0], operand,
                                operand),
            "");
  // negative_: k = 30 makes A's rows 60 bytes.
  MatmulStep odd = stepOf(7, 72, 30);
  EXPECT_EQ(gemmCandidateMisfit(odd, odd.kernels[0], operand, operand),
            "A's rows are 30 elements, not whole 16-byte chunks");
  // A transposed A's rows are m long.
  MatmulStep transposed = stepOf(7, 72, 520);
  transposed.transA = true;
  EXPECT_EQ(
      gemmCandidateMisfit(transposed, transposed.kernels[0], operand, operand),
      "A's rows are 7 elements, not whole 16-byte chunks");
  MatmulStep strided = stepOf(7, 72, 520);
  strided.batch = 2;
  strided.strideB = 4;
  EXPECT_EQ(gemmCandidateMisfit(strided, strided.kernels[0], operand, operand),
            "B's batch stride is 4 elements, not whole 16-byte chunks");
  MatmulStep fine = stepOf(7, 72, 520);
  EXPECT_EQ(gemmCandidateMisfit(fine, fine.kernels[0], operand + 2, operand),
            "an operand's address is not 16-byte aligned");
  MatmulStep huge = stepOf(7, 72, 520);
  huge.batch = 20000;
  EXPECT_EQ(gemmCandidateMisfit(huge, huge.kernels[0], operand, operand),
            "its grid would exceed CUDA's limits");
  // A split's tiles past its counters (the artifact's extents bound a
  // run's): ceil(72 / 64) column tiles of 7 rows.
  MatmulStep crowded = stepOf(7, 72, 520);
  crowded.kernels[0].arrivals = 1;
  EXPECT_EQ(gemmCandidateMisfit(crowded, crowded.kernels[0], operand, operand),
            "its 2 tiles outnumber its 1 arrival counters");
}

TEST(GemmCandidates, TensorMapsDescribeTheWgmmaFormsBoxes) {
  // A 129 x 520 A and a 520 x 72 B (stored k x n): A in boxes of 64
  // columns by the tile's 128 rows, B in boxes of 64 columns by 64 rows of
  // k; stored n x k, B's boxes are 64 k by the tile's 128 rows. Rows in
  // bytes; the 128-byte swizzle.
  MatmulStep s = wgmmaStepOf(129, 72, 520);
  const GemmCandidate &g = s.kernels[0];
  std::array<TensorMapSpec, 2> maps = gemmTensorMaps(s, g, operand, operand);
  EXPECT_EQ(maps[0].dims[0], 520u);
  EXPECT_EQ(maps[0].dims[1], 129u);
  EXPECT_EQ(maps[0].strides[1], 1040u);
  EXPECT_EQ(maps[0].box[0], 64u);
  EXPECT_EQ(maps[0].box[1], 128u);
  EXPECT_EQ(maps[1].dims[0], 72u);
  EXPECT_EQ(maps[1].dims[1], 520u);
  EXPECT_EQ(maps[1].strides[1], 144u);
  EXPECT_EQ(maps[1].box[1], 64u);
  EXPECT_EQ(maps[0].swizzleBytes, 128u);
  s.transB = true;
  maps = gemmTensorMaps(s, g, operand, operand);
  EXPECT_EQ(maps[1].dims[0], 520u);
  EXPECT_EQ(maps[1].dims[1], 72u);
  EXPECT_EQ(maps[1].box[1], 128u);
  EXPECT_EQ(gemmCandidateMisfit(s, g, operand, operand), "");
  kiln_host_tensor_map host = hostTensorMap(maps[1]);
  EXPECT_EQ(host.global, reinterpret_cast<const unsigned char *>(operand));
  EXPECT_EQ(host.rank, 2u);
  EXPECT_EQ(host.strides[1], 1040u);
  EXPECT_EQ(host.box[1], 128u);
  EXPECT_EQ(host.swizzleBytes, 128u);
}

TEST(GemmCandidates, TensorMapsRefuseWhatTheDriverOrEmulationWould) {
  MatmulStep s = wgmmaStepOf(129, 72, 520);
  const GemmCandidate &g = s.kernels[0];
  // negative_: a batch, a transposed A, an unaligned operand.
  MatmulStep batched = s;
  batched.batch = 2;
  EXPECT_EQ(gemmCandidateMisfit(batched, g, operand, operand),
            "its tensor maps take one matrix, A not transposed");
  MatmulStep transposed = stepOf(136, 72, 520);
  transposed.transA = true;
  EXPECT_EQ(gemmCandidateMisfit(transposed, g, operand, operand),
            "its tensor maps take one matrix, A not transposed");
  EXPECT_EQ(gemmCandidateMisfit(s, g, operand + 2, operand),
            "an operand's address is not 16-byte aligned");
  // Each limit of tensorMapMisfit, broken once.
  TensorMapSpec fine = gemmTensorMaps(s, g, operand, operand)[0];
  EXPECT_EQ(tensorMapMisfit(fine), "");
  struct Case {
    const char *why;
    void (*breakIt)(TensorMapSpec &);
  } cases[] = {
      {"a tensor map has 1 to 5 dims", [](TensorMapSpec &m) { m.rank = 6; }},
      {"tensor maps are of 16-bit elements",
       [](TensorMapSpec &m) { m.dtype = DType::F32; }},
      {"a tensor map's address is not 16-byte aligned",
       [](TensorMapSpec &m) { m.global = operand + 8; }},
      {"a tensor map's swizzle is 32, 64 or 128 bytes",
       [](TensorMapSpec &m) { m.swizzleBytes = 16; }},
      {"a tensor map's innermost dim is contiguous",
       [](TensorMapSpec &m) { m.strides[0] = 4; }},
      {"a tensor map's dims are 1 to 2^31 - 1 elements",
       [](TensorMapSpec &m) { m.dims[1] = uint64_t(1) << 31; }},
      {"a tensor map's box is 1 to 256 elements along each dim",
       [](TensorMapSpec &m) { m.box[1] = 257; }},
      {"a tensor map's strides are whole 16 bytes below 2^40",
       [](TensorMapSpec &m) { m.strides[1] = 1000; }},
      {"a tensor map's box rows are whole 16 bytes",
       [](TensorMapSpec &m) {
         m.swizzleBytes = 0;
         m.box[0] = 12;
       }},
      {"a swizzled tensor map's box rows are its swizzle span",
       [](TensorMapSpec &m) { m.box[0] = 32; }},
  };
  for (const Case &c : cases) {
    TensorMapSpec broken = fine;
    c.breakIt(broken);
    EXPECT_EQ(tensorMapMisfit(broken), c.why);
  }
}

namespace {

using FakePtr = unsigned long long;

/// The stand-in driver's record of its GEMM kernels' last launches
/// (fakeGemmArgs in FakeCudaDriver.cpp).
FakePtr *fakeGemmArgs(void *fake) {
  return static_cast<FakePtr *>(dlsym(fake, "fakeGemmArgs"));
}

/// Creates `model` of `artifact` (makeGemmKernelArtifact's) on the stand-in
/// CUDA with `options` and runs it `runs` times on zero inputs; returns the
/// first failure.
Status createAndRun(const Artifact &artifact, const CudaOptions &options,
                    std::unique_ptr<Model> &model, int runs = 1) {
  Status s =
      Model::create(artifact, Backend::Cuda, model, HostOptions(), options);
  std::vector<uint16_t> x(16, 0);
  std::vector<float> y(8);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  for (int run = 0; s.isOk() && run < runs; ++run)
    s = model->run(in, out, Memory::Host);
  return s;
}

} // namespace

// A candidate that takes tensor maps gets them encoded by the driver for
// its operands, after the family's arguments: A (2 x 8, rows of 16 bytes)
// as dims {8, 2} in boxes of {64, tileM}, B stored n x k (4 x 8) as {8, 4}
// in boxes of {64, tileN}; float16, the 128-byte swizzle, no interleave,
// zeros outside.
TEST_F(FakeCuda, AGemmKernelTakingTensorMapsGetsThemEncodedByTheDriver) {
  Artifact artifact = makeGemmKernelArtifact();
  artifact.kernelNames.push_back("kiln_fake_gemm_maps");
  artifact.steps[0].matmul.kernels.push_back(
      {"maps", 3, 0, 64, 64, 128, 1, 1024, true});
  auto *args = fakeGemmArgs(fake);
  auto *maps =
      static_cast<unsigned long long(*)[16]>(dlsym(fake, "fakeGemmMaps"));
  ASSERT_NE(args, nullptr);
  ASSERT_NE(maps, nullptr);
  CudaOptions options;
  options.gemm = "maps";
  std::unique_ptr<Model> model;
  Status s = createAndRun(artifact, options, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  const FakePtr *main = args;
  // Type, rank, address, dims, stride, box, element strides, interleave,
  // swizzle (3: 128 bytes), L2 promotion (2: 128 bytes), fill.
  const unsigned long long wantA[14] = {6,  2, main[0], 8, 2, 16, 64,
                                        64, 1, 1,       0, 3, 2,  0},
                           wantB[14] = {6,  2, main[1], 8, 4, 16, 64,
                                        64, 1, 1,       0, 3, 2,  0};
  for (int i = 0; i < 14; ++i) {
    EXPECT_EQ(maps[0][i], wantA[i]) << "A's word " << i;
    EXPECT_EQ(maps[1][i], wantB[i]) << "B's word " << i;
  }
  EXPECT_NE(main[0], main[1]);
  model.reset();

  // negative_: a map the driver refuses fails the run, naming the operand
  // and the kernel.
  setenv("KILN_FAKE_TENSOR_MAP_FAILS", "1", 1);
  s = createAndRun(artifact, options, model);
  unsetenv("KILN_FAKE_TENSOR_MAP_FAILS");
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message.find("encoding the tensor map of A for GEMM kernel maps"),
            std::string::npos)
      << s.message;
}

// The CUDA backend launches a Kiln GEMM kernel asked for by name in place
// of cuBLASLt, with the arguments rt::GemmCandidate documents: the main
// kernel on (ceil(n / 64), ceil(m / 64), splits) blocks over the partial
// sums, and nothing after it (its last block finishes the split).
TEST_F(FakeCuda, AGemmKernelAskedForByNameRunsInPlaceOfCublasLt) {
  Artifact artifact = makeGemmKernelArtifact();
  auto *args = fakeGemmArgs(fake);
  auto *threads = static_cast<unsigned *>(dlsym(fake, "fakeGemmThreads"));
  ASSERT_NE(args, nullptr);
  ASSERT_NE(threads, nullptr);
  CudaOptions options;
  options.gemm = "split";
  std::unique_ptr<Model> model;
  Status s = createAndRun(artifact, options, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  // One block of 128 threads for each of the two splits.
  EXPECT_EQ(*threads, 2u * 128);
  const FakePtr *main = args;
  EXPECT_NE(main[0], 0u); // A
  EXPECT_NE(main[1], 0u); // B
  EXPECT_NE(main[2], 0u); // C
  EXPECT_EQ(main[3], 0u); // no bias
  EXPECT_EQ(main[4], 0u); // no residual
  EXPECT_NE(main[5], 0u); // the partial sums
  const MatmulStep &m = artifact.steps[0].matmul;
  std::array<long long, 13> expected = gemmIntegerArguments(m, m.kernels[1]);
  for (int i = 0; i < 13; ++i)
    EXPECT_EQ(static_cast<long long>(main[6 + i]), expected[i])
        << "integer " << i;
  // Two kernels ran: the GEMM's (no reduce after it) and the plan's add.
  EXPECT_EQ(counter("eagerKernels"), 2);
  // cuBLASLt ran nothing.
  expectMatmulAlgoCalls(0, 0, 0);
  model.reset();

  // negative_: a name the step does not offer fails the run, naming what
  // it has.
  options.gemm = "mma_8x8x8_w1x1_split1";
  s = createAndRun(artifact, options, model);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message.find("the matmul has no GEMM kernel "
                           "'mma_8x8x8_w1x1_split1' (it has: whole, split)"),
            std::string::npos)
      << s.message;
}

// A step whose epilogue ends in a norm runs on Kiln's kernel alone: the
// kernel takes the norm's scale, shift and sum (null: neither) after the
// partials and epsilon's bits and the norm's kind after the integers, and
// finishes the norm itself, so no norm kernel follows it.
TEST_F(FakeCuda, ANormStepOnAGemmKernelRunsItAlone) {
  Artifact artifact = makeGemmKernelArtifact();
  artifact.buffers.push_back(
      makeBuffer(BufferKind::Weight, "gamma", {4}, 0, DType::F16));
  artifact.kernelNames.push_back("kiln_fake_gemm_norm");
  artifact.kernelNames.push_back("kiln_fake_gemm_normed");
  MatmulStep &m = artifact.steps[0].matmul;
  m.normScale = static_cast<uint32_t>(artifact.buffers.size() - 1);
  m.normEpsilon = 1e-5f;
  m.normRms = true;
  m.normKernel = 3;
  // Both candidates count their column tiles' arrivals.
  for (GemmCandidate &g : m.kernels) {
    g.kernel = 4;
    g.arrivals = 1;
  }
  auto *args = fakeGemmArgs(fake);
  auto *normLaunches = static_cast<unsigned *>(dlsym(fake, "fakeNormLaunches"));
  ASSERT_NE(args, nullptr);
  ASSERT_NE(normLaunches, nullptr);
  *normLaunches = 0;
  CudaOptions options;
  options.gemm = "split";
  std::unique_ptr<Model> model;
  Status s = createAndRun(artifact, options, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  // The GEMM's kernel and the plan's add: no norm kernel.
  EXPECT_EQ(counter("eagerKernels"), 2);
  EXPECT_EQ(*normLaunches, 0u);
  EXPECT_NE(args[5], 0u); // the partial sums
  EXPECT_NE(args[6], 0u); // the norm's scale
  EXPECT_EQ(args[7], 0u); // no shift
  EXPECT_EQ(args[8], 0u); // no sum
  std::vector<long long> expected = gemmKernelIntegers(m, m.kernels[1]);
  ASSERT_EQ(expected.size(), 15u);
  for (int i = 0; i < 15; ++i)
    EXPECT_EQ(static_cast<long long>(args[9 + i]), expected[i])
        << "integer " << i;
  EXPECT_EQ(args[23], 1u); // RMSNorm
  model.reset();

  // negative_: after cuBLASLt the norm kernel runs in the step.
  options.gemm.clear();
  s = createAndRun(artifact, options, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(*normLaunches, 1u);
}

// With "timed", the first run times cuBLASLt's choice against each of
// Kiln's kernels on the run's operands and keeps the fastest: the stand-in's
// kernels take no device time and cuBLASLt's algorithms some, so the first
// candidate, the whole one, wins and runs from then on, also in the graph
// the second run captures.
TEST_F(FakeCuda, TimedGemmKernelsRaceCublasLtsChoice) {
  Artifact artifact = makeGemmKernelArtifact();
  auto *args = fakeGemmArgs(fake);
  ASSERT_NE(args, nullptr);
  CudaOptions options;
  options.gemm = kTimedGemmKernels;
  std::unique_ptr<Model> model;
  for (int runs : {1, 2}) {
    SCOPED_TRACE(runs);
    Status s = createAndRun(artifact, options, model, runs);
    ASSERT_TRUE(s.isOk()) << s.message;
    // The last launch of the main kernel is the step's own: unsplit, no
    // partial sums.
    EXPECT_EQ(args[5], 0u);
    EXPECT_EQ(args[18], 1u);
  }
  EXPECT_EQ(counter("captures"), 1);

  // negative_: without tuning nothing is timed, and cuBLASLt runs.
  model.reset();
  std::memset(args, 0, sizeof(FakePtr) * 24);
  options.tuneMatmuls = false;
  Status s = createAndRun(artifact, options, model);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(args[0], 0u) << "a Kiln GEMM kernel ran";
}

namespace {

/// Runs `model` of makeNextLaunchArtifact's plan `runs` times on float8
/// ones; `y` the last run's output.
Status runNextLaunch(const CudaOptions &options, std::unique_ptr<Model> &model,
                     std::vector<float> &y, int runs = 1) {
  Status s = Model::create(makeNextLaunchArtifact(), Backend::Cuda, model,
                           HostOptions(), options);
  std::vector<uint8_t> a(7 * 32, 0x38), b(5 * 32, 0x38); // 1.0 in E4M3FN
  y.assign(35, -1.0f);
  const void *in[] = {a.data(), b.data()};
  void *out[] = {y.data()};
  for (int run = 0; s.isOk() && run < runs; ++run)
    s = model->run(in, out, Memory::Host);
  return s;
}

} // namespace

// A GEMM kernel that takes the launch after its step (an FP8 product's
// fused epilogue) races cuBLASLt and that launch by default: the stand-in
// kernel takes no device time, so it wins, runs on that launch's arguments
// (its mark lands in y) over its grid (one 64 x 64 tile of 128 threads),
// and the launch is left out (else it would overwrite the mark), also in
// the graph the second run captures.
TEST_F(FakeCuda, AKernelTakingTheNextLaunchRacesCublasLtAndThatLaunch) {
  auto *args = fakeGemmArgs(fake);
  auto *threads = static_cast<unsigned *>(dlsym(fake, "fakeGemmThreads"));
  ASSERT_NE(args, nullptr);
  ASSERT_NE(threads, nullptr);
  std::unique_ptr<Model> model;
  std::vector<float> y;
  for (int runs : {1, 2}) {
    SCOPED_TRACE(runs);
    Status s = runNextLaunch(CudaOptions(), model, y, runs);
    ASSERT_TRUE(s.isOk()) << s.message;
    EXPECT_EQ(y[0], 12345.0f);
    EXPECT_EQ(*threads, 128u);
    EXPECT_NE(args[0], 0u); // the sums
    EXPECT_NE(args[1], args[0]);
    model.reset();
  }
  EXPECT_EQ(counter("captures"), 1);

  // negative_: without tuning nothing is timed: cuBLASLt sums 32 ones and
  // the launch doubles them.
  *threads = 0;
  CudaOptions untuned;
  untuned.tuneMatmuls = false;
  Status s = runNextLaunch(untuned, model, y);
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(y[0], 64.0f);
  EXPECT_EQ(y[34], 64.0f);
  EXPECT_EQ(*threads, 0u) << "the kernel ran";
  model.reset();

  // Where every cuBLASLt call fails, the kernel runs the step.
  void *lt = dlopen(KILN_FAKE_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lt, nullptr) << dlerror();
  auto *failing = static_cast<int *>(dlsym(lt, "kiln_fake_failing_matmuls"));
  auto *noFloat8 =
      static_cast<int *>(dlsym(lt, "kiln_fake_no_float8_algorithms"));
  ASSERT_NE(failing, nullptr);
  ASSERT_NE(noFloat8, nullptr);
  *failing = 1000;
  s = runNextLaunch(CudaOptions(), model, y);
  *failing = 0;
  ASSERT_TRUE(s.isOk()) << s.message;
  EXPECT_EQ(y[0], 12345.0f);
  model.reset();

  // Where cuBLASLt has no algorithm for float8 operands at all, the model
  // still loads and the kernel runs the step, untimed too, in every run.
  *noFloat8 = 1;
  for (bool tune : {true, false}) {
    SCOPED_TRACE(tune);
    CudaOptions options;
    options.tuneMatmuls = tune;
    *threads = 0;
    s = runNextLaunch(options, model, y, 2);
    ASSERT_TRUE(s.isOk()) << s.message;
    EXPECT_EQ(y[0], 12345.0f);
    EXPECT_EQ(*threads, 128u);
    model.reset();
  }
  *noFloat8 = 0;
  dlclose(lt);
}
