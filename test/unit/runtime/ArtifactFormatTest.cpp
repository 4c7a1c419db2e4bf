//===- ArtifactFormatTest.cpp - Serialization and validation of plans -----===//

#include "kiln/runtime/ArtifactFormat.h"

#include "ArtifactBytes.h"
#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <tuple>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// Serializes `a` and expects deserialization to fail mentioning `needle`.
void expectRejected(const Artifact &a, const std::string &needle) {
  Artifact out;
  std::string error;
  EXPECT_FALSE(roundTrip(a, out, error));
  EXPECT_NE(error.find(needle), std::string::npos)
      << "error '" << error << "' lacks '" << needle << "'";
  // The same verdict without the encoding round trip.
  std::string direct;
  EXPECT_FALSE(validateArtifact(a, direct));
}

/// Expects `a` valid, saying why not.
void expectValid(const Artifact &a) {
  std::string error;
  EXPECT_TRUE(validateArtifact(a, error)) << error;
}

/// Expects `a` invalid, for a reason that mentions `needle`.
void expectInvalid(const Artifact &a, const std::string &needle = "") {
  std::string error;
  EXPECT_FALSE(validateArtifact(a, error));
  EXPECT_NE(error.find(needle), std::string::npos) << error;
}

/// Makes `makeRichArtifact`'s matmul (x (2x3) * w (3x4)) walk x as two
/// batches of one 1x3 row against the same w (stride 0), each into a 1x4 row
/// of y: at the inner batch level or, with `outer`, the outer one. Returns
/// the matmul.
MatmulStep &batchRowsOfX(Artifact &a, bool outer) {
  MatmulStep &m = a.steps[0].matmul;
  m.m = 1;
  (outer ? m.outerBatch : m.batch) = 2;
  (outer ? m.outerStrideA : m.strideA) = 3;
  (outer ? m.outerStrideB : m.strideB) = 0;
  (outer ? m.outerStrideC : m.strideC) = 4;
  return m;
}

/// The payload of `makeRichArtifact` appended to a stand-in shared object,
/// and what `findArtifactPayload` last reported on it.
struct Container {
  std::string payload = serializeArtifact(makeRichArtifact());
  std::string so;
  const char *found = nullptr;
  size_t foundSize = 0;
  std::string error;

  /// Appends the payload to `prefix` bytes of stand-in code.
  explicit Container(size_t prefix)
      : so(appendArtifactPayload(std::string(prefix, 'E'), payload)) {}
  /// Looks for the payload in [data, data + size).
  bool find(const char *data, size_t size) {
    return findArtifactPayload(data, size, found, foundSize, error);
  }
  /// Looks for the payload in `bytes`.
  bool find(const std::string &bytes) {
    return find(bytes.data(), bytes.size());
  }
};

/// The fields of an artifact's header that the encoding keeps, as one value
/// to compare.
auto headerFields(const Artifact &a) {
  return std::tie(a.abiVersion, a.kilnVersion, a.arch, a.modelHash,
                  a.kernelNames, a.cubin, a.ptx, a.cudaSource, a.arenaBytes);
}

/// The fields of a buffer, as one value to compare.
auto bufferFields(const Buffer &b) {
  return std::tie(b.kind, b.dtype, b.name, b.shape, b.offset, b.bytes);
}

/// The fields of a matmul step the round trip compares, as one value.
auto matmulFields(const MatmulStep &m) {
  return std::tie(m.dtype, m.transA, m.transB, m.batch, m.m, m.n, m.k,
                  m.strideA, m.strideB, m.strideC, m.outerBatch, m.outerStrideA,
                  m.outerStrideB, m.outerStrideC, m.a, m.b, m.c, m.alpha,
                  m.beta, m.bias, m.activation);
}

/// The fields of a Kiln GEMM candidate, as one value.
auto gemmFields(const GemmCandidate &g) {
  return std::tie(g.name, g.kernel, g.arrivals, g.tileM, g.tileN, g.threads,
                  g.splitK, g.sharedBytes, g.tensorMaps);
}

/// Expects the buffers `y` equal to `x`, one by one.
void expectSameBuffers(const std::vector<Buffer> &x,
                       const std::vector<Buffer> &y) {
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(bufferFields(x[i]), bufferFields(y[i])) << "buffer " << i;
}

void expectSameStep(const Step &x, const Step &y) {
  ASSERT_EQ(x.kind, y.kind);
  switch (x.kind) {
  case Step::Kind::Launch:
    EXPECT_EQ(x.launch.kernel, y.launch.kernel);
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(x.launch.grid[d], y.launch.grid[d]);
      EXPECT_EQ(x.launch.block[d], y.launch.block[d]);
    }
    EXPECT_EQ(x.launch.sharedBytes, y.launch.sharedBytes);
    EXPECT_EQ(x.launch.args, y.launch.args);
    EXPECT_EQ(x.launch.dimsRead, y.launch.dimsRead);
    break;
  case Step::Kind::Matmul:
    EXPECT_EQ(matmulFields(x.matmul), matmulFields(y.matmul));
    break;
  case Step::Kind::Copy:
    EXPECT_EQ(x.copy.src, y.copy.src);
    EXPECT_EQ(x.copy.dst, y.copy.dst);
    EXPECT_EQ(x.copy.bytes, y.copy.bytes);
    break;
  }
}

} // namespace

TEST(ArtifactFormat, DTypeSizesAndNames) {
  const struct {
    DType dtype;
    size_t size;
    const char *name;
  } kDTypes[] = {{DType::F32, 4, "float32"},   {DType::F16, 2, "float16"},
                 {DType::BF16, 2, "bfloat16"}, {DType::I64, 8, "int64"},
                 {DType::I32, 4, "int32"},     {DType::I8, 1, "int8"},
                 {DType::Bool, 1, "bool"},     {DType::F64, 8, "float64"},
                 {DType::I16, 2, "int16"},     {DType::U8, 1, "uint8"},
                 {DType::U16, 2, "uint16"},    {DType::U32, 4, "uint32"},
                 {DType::U64, 8, "uint64"},    {DType::I4, 1, "int4"},
                 {DType::U4, 1, "uint4"},
                 {DType::F8E4M3FN, 1, "float8e4m3fn"},
                 {DType::F8E5M2, 1, "float8e5m2"}};
  for (const auto &d : kDTypes) {
    EXPECT_EQ(dtypeSize(d.dtype), d.size) << d.name;
    EXPECT_STREQ(dtypeName(d.dtype), d.name);
  }
  // Appended after Bool: the encoded values of the older types are stable.
  EXPECT_EQ(static_cast<int>(DType::Bool), 6);
  EXPECT_EQ(static_cast<int>(DType::F64), 7);
  EXPECT_EQ(static_cast<int>(DType::I4), 13);
  EXPECT_EQ(kLastDType, DType::F8E5M2);
  EXPECT_EQ(dtypeSize(static_cast<DType>(99)), 0u);
}

TEST(ArtifactFormat, RoundTrip) {
  Artifact a = makeRichArtifact();
  a.steps[0].matmul.transA = false;
  a.steps[0].matmul.alpha = 0.5f;
  a.steps[0].matmul.beta = -1.25f;
  a.steps[0].matmul.bias = 3;
  a.steps[0].matmul.activation = MatmulActivation::Gelu;
  a.steps[1].launch.sharedBytes = 4096;
  a.steps[1].launch.grid[2] = 3;
  a.steps[1].launch.dimsRead = 0x8000000000000005ull;
  Artifact b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  EXPECT_EQ(headerFields(b), headerFields(a));
  ASSERT_NO_FATAL_FAILURE(expectSameBuffers(a.buffers, b.buffers));
  EXPECT_EQ(b.inputs, a.inputs);
  EXPECT_EQ(b.outputs, a.outputs);
  ASSERT_EQ(b.steps.size(), a.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i)
    expectSameStep(a.steps[i], b.steps[i]);
  EXPECT_EQ(b.weights, a.weights);
  // Serialization is deterministic.
  EXPECT_EQ(serializeArtifact(b), serializeArtifact(a));
}

TEST(ArtifactFormat, SplatsRoundTripWithoutBytes) {
  Artifact a = makeSplatArtifact();
  // The 72 KB splat costs its buffer entry, not its bytes.
  EXPECT_LT(serializeArtifact(a).size(), 1024u);
  Artifact b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  ASSERT_NO_FATAL_FAILURE(expectSameBuffers(a.buffers, b.buffers));
  EXPECT_STREQ(bufferKindName(b.buffers[2].kind), "splat");
}

TEST(ArtifactFormat, RejectsBadSplats) {
  {
    // An int8 splat's value has one byte.
    Artifact a = makeSplatArtifact();
    a.buffers[2] = makeBuffer(BufferKind::Splat, "p", {4}, 0x100, DType::I8);
    expectRejected(a, "splat value 256 is wider than its dtype (int8)");
  }
  {
    // Read-only, like weights.
    Artifact a = makeSplatArtifact();
    a.steps[1].copy.src = 5;
    a.steps[1].copy.dst = 3;
    expectRejected(a, "is not writable");
  }
}

TEST(ArtifactFormat, OutputAliasesRoundTripAndAreChecked) {
  Artifact a = makeIdentityShell({4});
  a.aliases.push_back(OutputAlias{0, 0, 0});
  Artifact b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  ASSERT_EQ(b.aliases.size(), 1u);
  EXPECT_EQ(b.aliases[0].output, 0u);
  EXPECT_EQ(b.aliases[0].input, 0u);
  EXPECT_EQ(b.aliases[0].axis, 0u);
  {
    Artifact bad = a;
    bad.aliases[0].output = 1;
    expectRejected(bad, "output alias 0: output or input index out of range");
  }
  {
    // One storage, so one shape: a [2, 2] output is not a [4] input's.
    Artifact bad = a;
    bad.buffers[bad.outputs[0]].shape = {2, 2};
    expectRejected(bad, "differ in type or shape, or the axis is out of range");
  }
  {
    Artifact bad = a;
    bad.aliases[0].axis = 1;
    expectRejected(bad, "the axis is out of range");
  }
  {
    // One input is the storage of one output at most.
    Artifact bad = a;
    Buffer second = bad.buffers[bad.outputs[0]];
    second.name = "z";
    second.offset = 1;
    bad.buffers.push_back(second);
    bad.outputs.push_back(bad.buffers.size() - 1);
    bad.aliases.push_back(OutputAlias{1, 0, 0});
    expectRejected(bad, "input 0 is the storage of two outputs");
  }
}

TEST(ArtifactFormat, Tf32MatmulsRoundTripAndAreFloat32Only) {
  Artifact a = makeRichArtifact();
  auto matmul = std::find_if(a.steps.begin(), a.steps.end(), [](const Step &s) {
    return s.kind == Step::Kind::Matmul;
  });
  ASSERT_NE(matmul, a.steps.end());
  matmul->matmul.tf32 = true;
  Artifact b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  EXPECT_TRUE(b.steps[matmul - a.steps.begin()].matmul.tf32);
  matmul->matmul.dtype = DType::F16;
  expectRejected(a, "a tf32 matmul must be float32, got float16");
}

TEST(ArtifactFormat, Float8MatmulsRoundTripAndKeepToTheirForm) {
  Artifact a = makeFloat8MatmulArtifact(7, 5, 32);
  Artifact b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  EXPECT_TRUE(b.steps[0].matmul.float8);
  // Each rule of the form, broken once.
  const char *form = "a matmul of float8 operands sums one matrix";
  struct Case {
    const char *needle;
    void (*breakIt)(MatmulStep &);
  } cases[] = {
      {form, [](MatmulStep &m) { m.transB = false; }},
      {form, [](MatmulStep &m) { m.k = 24; }},
      {form, [](MatmulStep &m) { m.alpha = 0.5f; }},
      {form, [](MatmulStep &m) { m.activation = MatmulActivation::Relu; }},
      {form, [](MatmulStep &m) { m.dtype = DType::F16; }},
      {form, [](MatmulStep &m) { m.tf32 = true; }},
  };
  for (const Case &c : cases) {
    Artifact bad = a;
    c.breakIt(bad.steps[0].matmul);
    SCOPED_TRACE(c.needle);
    expectRejected(bad, c.needle);
  }
  // Its operands are float8 bytes, and only its operands are.
  Artifact wide = a;
  wide.buffers[1] = makeBuffer(BufferKind::Input, "b", {5, 32}, 1);
  expectRejected(wide, "matmul operands must both be float8e4m3fn");
  Artifact plain = a;
  plain.steps[0].matmul.float8 = false;
  expectRejected(plain, "matmul operands must both be float32");
}

TEST(ArtifactFormat, KernelsTakingTheNextLaunchRoundTripAndAreChecked) {
  // A float8 step into scratch, finished by a launch; its kernel takes both.
  Artifact a = makeNextLaunchArtifact();
  Artifact b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  EXPECT_TRUE(b.steps[0].matmul.kernels[0].withNextLaunch);
  // negative_: no launch after the step.
  Artifact last = a;
  last.steps.pop_back();
  last.steps[0].matmul.c = 2;
  expectRejected(last, "a GEMM kernel that takes the next launch needs a "
                       "launch step after its matmul");
  // negative_: the kernel takes the launch's arguments, not tensor maps.
  Artifact mapped = a;
  mapped.steps[0].matmul.kernels[0].tensorMaps = true;
  expectRejected(mapped, "takes the next launch's arguments: no tensor maps");
  // negative_: a float8 step offers only such kernels, and no step mixes
  // them with the family's.
  Artifact plain = a;
  plain.steps[0].matmul.kernels[0].withNextLaunch = false;
  expectRejected(plain, "a matmul of float8 operands sums one matrix");
  Artifact mixed = a;
  mixed.steps[0].matmul.float8 = false;
  mixed.buffers[0].dtype = mixed.buffers[1].dtype = DType::F32;
  mixed.buffers[0].bytes *= 4;
  mixed.buffers[1].bytes *= 4;
  mixed.steps[0].matmul.kernels.push_back({"family", 1, 0, 64, 64, 128, 1});
  expectRejected(mixed, "a step's GEMM kernels take the next launch all or "
                        "none");
  // negative_: the launch runs at other dims than the matmul.
  Artifact guarded = a;
  guarded.symbolic.dims = {DimRange{"rows", 1, 8}};
  guarded.symbolic.bindings.push_back(
      sizeBinding(SizeField::StepRuns, 0, 0, dimFormula(0)));
  guarded.symbolic.bindings.back().highest = 1;
  expectRejected(guarded, "needs that launch to run at the same dims as its "
                          "matmul");
}

TEST(ArtifactFormat, GemmCandidatesRoundTripAndAreChecked) {
  Artifact a = makeGemmKernelArtifact();
  // A wgmma-form candidate's shared memory and tensor maps travel too.
  a.steps[0].matmul.kernels[0].sharedBytes = 132096;
  a.steps[0].matmul.kernels[0].tensorMaps = true;
  a.steps[0].matmul.kernels[0].tileM = 64;
  Artifact b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  const std::vector<GemmCandidate> &x = a.steps[0].matmul.kernels,
                                   &y = b.steps[0].matmul.kernels;
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(gemmFields(y[i]), gemmFields(x[i])) << "candidate " << i;

  // Each rule of checkGemmCandidates, broken once.
  struct Case {
    const char *needle;
    void (*breakIt)(Artifact &);
  } cases[] = {
      {"Kiln GEMM kernels are float32, float16 or bfloat16",
       [](Artifact &a) {
         for (uint32_t id : {0u, 1u, 2u, 4u}) {
           Buffer &b = a.buffers[id];
           b.dtype = DType::F64;
           b.bytes *= 4;
         }
         a.steps[0].matmul.dtype = DType::F64;
         a.weights.resize(512);
       }},
      {"scale by alpha 1", [](Artifact &a) { a.steps[0].matmul.alpha = 2; }},
      {"scale by alpha 1", [](Artifact &a) { a.steps[0].matmul.beta = 1; }},
      {"names a kernel the artifact does not have",
       [](Artifact &a) { a.steps[0].matmul.kernels[0].kernel = 3; }},
      {"has arrival counters but no split or norm to count",
       [](Artifact &a) { a.steps[0].matmul.kernels[0].arrivals = 1; }},
      {"has fewer arrival counters than tiles",
       [](Artifact &a) { a.steps[0].matmul.kernels[1].arrivals = 0; }},
      {"has fewer arrival counters than tiles",
       [](Artifact &a) {
         // A row a tile: two tiles of C's 2 rows.
         a.steps[0].matmul.kernels[1].tileM = 1;
       }},
      {"tiles must be 1 to 256 rows",
       [](Artifact &a) { a.steps[0].matmul.kernels[0].tileM = 0; }},
      {"tiles must be 1 to 256 rows",
       [](Artifact &a) { a.steps[0].matmul.kernels[0].tileN = 12; }},
      {"tiles must be 1 to 256 rows",
       [](Artifact &a) { a.steps[0].matmul.kernels[0].tileN = 512; }},
      {"threads must be whole warps",
       [](Artifact &a) { a.steps[0].matmul.kernels[0].threads = 100; }},
      {"split must be 1 to 64",
       [](Artifact &a) { a.steps[0].matmul.kernels[1].splitK = 65; }},
      {"names have 1 to 64 characters",
       [](Artifact &a) { a.steps[0].matmul.kernels[0].name.clear(); }},
      {"more than a block's 227 KiB",
       [](Artifact &a) {
         a.steps[0].matmul.kernels[0].sharedBytes = 227 * 1024 + 16;
       }},
      {"takes tensor maps, which need tiles of whole 64 rows",
       [](Artifact &a) {
         a.steps[0].matmul.kernels[0].tensorMaps = true;
         a.steps[0].matmul.kernels[0].tileM = 16;
       }},
  };
  for (const Case &c : cases) {
    Artifact broken = makeGemmKernelArtifact();
    c.breakIt(broken);
    SCOPED_TRACE(c.needle);
    expectRejected(broken, c.needle);
  }
}

/// makeGemmKernelArtifact's matmul with a LayerNorm: scale and shift one
/// f16 weight of its 4 columns, the norm kernel a new one, so both
/// candidates count arrivals.
static Artifact makeNormArtifact() {
  Artifact a = makeGemmKernelArtifact();
  a.buffers.push_back(
      makeBuffer(BufferKind::Weight, "gamma", {4}, 0, DType::F16));
  a.kernelNames.push_back("kiln_fake_gemm_norm");
  MatmulStep &m = a.steps[0].matmul;
  m.normScale = m.normShift = static_cast<uint32_t>(a.buffers.size() - 1);
  m.normEpsilon = 1e-5f;
  m.normKernel = static_cast<uint32_t>(a.kernelNames.size() - 1);
  // A norm's column tiles arrive at their row tile, split or not.
  m.kernels[0].arrivals = 1;
  return a;
}

TEST(ArtifactFormat, NormMatmulsRoundTripAndAreChecked) {
  Artifact a = makeNormArtifact(), b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  const MatmulStep &x = a.steps[0].matmul, &y = b.steps[0].matmul;
  EXPECT_TRUE(y.hasNorm());
  EXPECT_EQ(y.normScale, x.normScale);
  EXPECT_EQ(y.normShift, x.normShift);
  EXPECT_EQ(y.normEpsilon, x.normEpsilon);
  EXPECT_EQ(y.normKernel, x.normKernel);

  // Each rule of checkNorm, broken once.
  struct Case {
    const char *needle;
    void (*breakIt)(Artifact &);
  } cases[] = {
      {"names a norm shift, kind, kernel or sum",
       [](Artifact &a) {
         a.steps[0].matmul.kernels.clear();
         a.steps[0].matmul.normScale = kNoBuffer;
       }},
      {"is not one of the artifact's",
       [](Artifact &a) { a.steps[0].matmul.normKernel = 99; }},
      {"norm epsilon must be finite and not negative",
       [](Artifact &a) { a.steps[0].matmul.normEpsilon = -1; }},
      {"norm epsilon must be finite and not negative",
       [](Artifact &a) { a.steps[0].matmul.normEpsilon = NAN; }},
      {"matmul norm shift names no buffer",
       [](Artifact &a) { a.steps[0].matmul.normShift = 99; }},
      {"must hold 4 elements of float16",
       [](Artifact &a) {
         a.buffers.back().shape = {3}, a.buffers.back().bytes = 6;
       }},
      {"matmul output c overlaps its norm scale",
       [](Artifact &a) { a.steps[0].matmul.normScale = 4; }},
      {"with a norm scales by alpha 1",
       [](Artifact &a) {
         a.steps[0].matmul.kernels.clear();
         a.steps[0].matmul.alpha = 2;
       }},
      // An unsplit kernel counts its norm's arrivals too.
      {"has fewer arrival counters than tiles",
       [](Artifact &a) { a.steps[0].matmul.kernels[0].arrivals = 0; }},
  };
  for (const Case &c : cases) {
    Artifact broken = makeNormArtifact();
    c.breakIt(broken);
    SCOPED_TRACE(c.needle);
    expectRejected(broken, c.needle);
  }
}

/// makeNormArtifact's matmul as a pre-norm block's: an RMSNorm (no shift)
/// that also writes the sum to arena buffer "s" (2x4 f16 at 128, apart from
/// C at 0).
static Artifact makeRmsSumArtifact() {
  Artifact a = makeNormArtifact();
  a.buffers.push_back(
      makeBuffer(BufferKind::Arena, "s", {2, 4}, 128, DType::F16));
  MatmulStep &m = a.steps[0].matmul;
  m.normShift = kNoBuffer;
  m.normRms = true;
  m.normSum = static_cast<uint32_t>(a.buffers.size() - 1);
  return a;
}

TEST(ArtifactFormat, RmsNormSumMatmulsRoundTripAndAreChecked) {
  Artifact a = makeRmsSumArtifact(), b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  const MatmulStep &x = a.steps[0].matmul, &y = b.steps[0].matmul;
  EXPECT_TRUE(y.normRms);
  EXPECT_EQ(y.normSum, x.normSum);
  EXPECT_EQ(y.productBuffer(), x.normSum);
  EXPECT_EQ(y.normShift, kNoBuffer);

  // Each rule of the norm's kind and sum, broken once.
  struct Case {
    const char *needle;
    void (*breakIt)(Artifact &);
  } cases[] = {
      {"a matmul's RMSNorm has no shift",
       [](Artifact &a) {
         a.steps[0].matmul.normShift = a.steps[0].matmul.normScale;
       }},
      {"names a norm shift, kind, kernel or sum",
       [](Artifact &a) {
         MatmulStep &m = a.steps[0].matmul;
         m.kernels.clear();
         m.normScale = kNoBuffer;
         m.normKernel = kNoKernel;
         m.normRms = false;
       }},
      {"matmul norm sum buffer id 99 out of range",
       [](Artifact &a) { a.steps[0].matmul.normSum = 99; }},
      {"matmul norm sum buffer 2 ('w') is not writable",
       [](Artifact &a) { a.steps[0].matmul.normSum = 2; }},
      {"matmul norm sum buffer 9 ('s') must be float16",
       [](Artifact &a) {
         a.buffers.back() =
             makeBuffer(BufferKind::Arena, "s", {2, 4}, 128, DType::F32);
       }},
      {"matmul norm sum does not fit in buffer 9 ('s')",
       [](Artifact &a) {
         a.buffers.back().shape = {2, 2}, a.buffers.back().bytes = 8;
       }},
      {"matmul norm sum overlaps buffer 4 ('t')",
       [](Artifact &a) { a.buffers.back().offset = 8; }},
  };
  for (const Case &c : cases) {
    Artifact broken = makeRmsSumArtifact();
    c.breakIt(broken);
    SCOPED_TRACE(c.needle);
    expectRejected(broken, c.needle);
  }
}

/// The rich artifact with its fp32 matmul's exact GELU, which kernel 1
/// applies after cuBLASLt.
static Artifact makeGeluErfArtifact() {
  Artifact a = makeRichArtifact();
  for (Step &s : a.steps)
    if (s.kind == Step::Kind::Matmul) {
      s.matmul.activation = MatmulActivation::GeluErf;
      s.matmul.finishKernel = 1;
    }
  return a;
}

/// The GEMM-kernel artifact's float16 matmul widened into a float32 C,
/// which kernel 3 does after cuBLASLt.
static Artifact makeWidenArtifact() {
  Artifact a = makeGemmKernelArtifact();
  MatmulStep &m = a.steps[0].matmul;
  Buffer &c = a.buffers[m.c];
  c.dtype = DType::F32;
  c.bytes *= 2;
  m.widen = true;
  m.finishKernel = 2;
  return a;
}

static MatmulStep &firstMatmul(Artifact &a) {
  for (Step &s : a.steps)
    if (s.kind == Step::Kind::Matmul)
      return s.matmul;
  ADD_FAILURE() << "no matmul step";
  return a.steps[0].matmul;
}

TEST(ArtifactFormat, FinishedMatmulsRoundTripAndAreChecked) {
  Artifact a = makeGeluErfArtifact(), b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  EXPECT_EQ(firstMatmul(b).activation, MatmulActivation::GeluErf);
  EXPECT_EQ(firstMatmul(b).finishKernel, 1u);
  EXPECT_FALSE(firstMatmul(b).widen);
  Artifact w = makeWidenArtifact(), v;
  ASSERT_TRUE(roundTrip(w, v, error)) << error;
  EXPECT_TRUE(firstMatmul(v).widen);
  EXPECT_EQ(firstMatmul(v).finishKernel, 2u);

  // Each rule of the finish, broken once.
  struct Case {
    const char *needle;
    Artifact (*make)();
    void (*breakIt)(Artifact &);
  } cases[] = {
      {"only a matmul with the exact GELU, or widened without a norm, names "
       "a finish kernel",
       makeGeluErfArtifact,
       [](Artifact &a) { firstMatmul(a).activation = MatmulActivation::Gelu; }},
      {"the matmul's finish kernel is not one of the artifact's 2 kernels",
       makeGeluErfArtifact,
       [](Artifact &a) { firstMatmul(a).finishKernel = 2; }},
      {"the matmul's finish kernel is not one of the artifact's 2 kernels",
       makeGeluErfArtifact,
       [](Artifact &a) { firstMatmul(a).finishKernel = kNoKernel; }},
      // A 16-bit product takes cuBLASLt's tanh form; the exact one is
      // fp32's.
      {"a matmul's exact GELU is float32, the matmul is float16",
       makeGemmKernelArtifact,
       [](Artifact &a) {
         firstMatmul(a).activation = MatmulActivation::GeluErf;
         firstMatmul(a).finishKernel = 0;
       }},
      {"a matmul widens a float16 or bfloat16 product, the matmul is float32",
       makeGeluErfArtifact, [](Artifact &a) { firstMatmul(a).widen = true; }},
      {"matmul output c must be float32", makeGemmKernelArtifact,
       [](Artifact &a) {
         firstMatmul(a).widen = true;
         firstMatmul(a).finishKernel = 3;
       }},
      {"matmul output c must be float16", makeWidenArtifact,
       [](Artifact &a) {
         firstMatmul(a).widen = false;
         firstMatmul(a).finishKernel = kNoKernel;
       }},
      {"the matmul's finish kernel is not one of the artifact's 3 kernels",
       makeWidenArtifact,
       [](Artifact &a) { firstMatmul(a).finishKernel = kNoKernel; }},
  };
  for (const Case &c : cases) {
    Artifact broken = c.make();
    c.breakIt(broken);
    SCOPED_TRACE(c.needle);
    expectRejected(broken, c.needle);
  }
}

TEST(ArtifactFormat, EmptyArtifactRoundTrips) {
  Artifact a;
  Artifact b;
  std::string error;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  EXPECT_EQ(b.abiVersion, static_cast<uint32_t>(KILN_ABI_VERSION));
  EXPECT_TRUE(b.buffers.empty());
}

TEST(ArtifactFormat, WeightsFileRoundTripsAndSizesTheWeights) {
  Artifact a = makeRichArtifact();
  uint64_t bytes = a.weights.size();
  a.weights.clear();
  a.weightsFile = {"model.kw", bytes, 0x1234abcdull};
  std::string error;
  ASSERT_TRUE(validateArtifact(a, error)) << error;
  Artifact b;
  ASSERT_TRUE(roundTrip(a, b, error)) << error;
  EXPECT_EQ(b.weightsFile.name, "model.kw");
  EXPECT_EQ(b.weightsFile.bytes, bytes);
  EXPECT_EQ(b.weightsFile.checksum, 0x1234abcdull);
  EXPECT_EQ(b.weightBytes(), bytes);
  // Not mapped yet: the loader maps it beside the .so.
  EXPECT_EQ(b.weightData(), nullptr);
  // A sidecar too small for the weight buffers is invalid.
  a.weightsFile.bytes = 4;
  EXPECT_FALSE(validateArtifact(a, error));
  EXPECT_NE(error.find("exceeds the weights (4 bytes)"), std::string::npos)
      << error;
}

TEST(ArtifactFormat, WeightsFileMustBeAPlainName) {
  for (const char *name :
       {"../model.kw", "/etc/passwd", "sub/model.kw", "..", "."}) {
    Artifact a;
    a.weightsFile = {name, 0, 0};
    Artifact b;
    std::string error;
    EXPECT_FALSE(roundTrip(a, b, error)) << name;
    EXPECT_NE(error.find("is not a plain file name"), std::string::npos)
        << error;
  }
}

TEST(ArtifactFormat, WeightsChecksumInPieces) {
  std::string data(1000, '\0');
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<char>(i * 7 + 3);
  uint64_t whole = weightsChecksum(data.data(), data.size());
  uint64_t pieces = weightsChecksum(data.data(), 512);
  pieces = weightsChecksum(data.data() + 512, 488, pieces);
  EXPECT_EQ(whole, pieces);
  data[999] ^= 1;
  EXPECT_NE(weightsChecksum(data.data(), data.size()), whole);
}

TEST(ArtifactFormat, TruncationAtEveryOffsetIsRejected) {
  std::string bytes = serializeArtifact(makeRichArtifact());
  for (size_t size = 0; size < bytes.size(); ++size) {
    Artifact out;
    std::string error;
    EXPECT_FALSE(deserializeExact(bytes, size, out, error)) << "size " << size;
    EXPECT_FALSE(error.empty()) << "size " << size;
  }
}

TEST(ArtifactFormat, TrailingBytesAreRejected) {
  std::string bytes = serializeArtifact(makeRichArtifact()) + "x";
  Artifact out;
  std::string error;
  EXPECT_FALSE(deserializeExact(bytes, bytes.size(), out, error));
  EXPECT_NE(error.find("trailing"), std::string::npos) << error;
}

TEST(ArtifactFormat, CorruptedBytesNeverCrash) {
  // Every byte set to a few hostile values, then random multi-byte damage:
  // the reader may accept or reject, but must stay in bounds (ASan) and
  // leave a message when it rejects.
  std::string bytes = serializeArtifact(makeRichArtifact());
  auto check = [&](const std::string &damaged) {
    Artifact out;
    std::string error;
    if (!deserializeExact(damaged, damaged.size(), out, error)) {
      EXPECT_FALSE(error.empty());
    }
  };
  for (size_t i = 0; i < bytes.size(); ++i)
    for (unsigned char v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string damaged = bytes;
      damaged[i] = static_cast<char>(v);
      check(damaged);
    }
  std::mt19937 rng(1234);
  for (int round = 0; round < 2000; ++round) {
    std::string damaged = bytes;
    for (int j = 0; j < 4; ++j)
      damaged[rng() % damaged.size()] = static_cast<char>(rng());
    check(damaged);
  }
}

TEST(ArtifactFormat, BadMagicAndVersion) {
  std::string bytes = serializeArtifact(makeRichArtifact());
  Artifact out;
  std::string error;
  std::string badMagic = bytes;
  badMagic[0] = 'X';
  EXPECT_FALSE(deserializeExact(badMagic, badMagic.size(), out, error));
  EXPECT_NE(error.find("magic"), std::string::npos) << error;
  std::string badVersion = bytes;
  badVersion[8] = kArtifactFormatVersion + 1;
  EXPECT_FALSE(deserializeExact(badVersion, badVersion.size(), out, error));
  EXPECT_NE(error.find("format version " +
                       std::to_string(kArtifactFormatVersion + 1)),
            std::string::npos)
      << error;
}

TEST(ArtifactFormat, HugeCountsAreRejectedBeforeAllocating) {
  // A header, then a kernel-name count of 2^60: it cannot fit in what
  // remains, so it must be rejected without trying to allocate.
  detail::ByteWriter w;
  w.raw(kArtifactMagic, sizeof(kArtifactMagic));
  w.u32(kArtifactFormatVersion);
  w.u32(KILN_ABI_VERSION);
  w.str("v");
  w.str("sm_90a");
  w.str("hash");
  std::string prefix = w.out;
  w.u64(1ull << 60);
  w.out.append(64, '\0');
  Artifact out;
  std::string error;
  EXPECT_FALSE(deserializeExact(w.out, w.out.size(), out, error));
  EXPECT_NE(error.find("count of kernel names"), std::string::npos) << error;

  // A string length of 2^63.
  detail::ByteWriter s;
  s.raw(prefix.data(), prefix.size() - 8 - 4);
  s.u64(1ull << 63);
  s.out.append(32, 'a');
  EXPECT_FALSE(deserializeExact(s.out, s.out.size(), out, error));
  EXPECT_NE(error.find("exceeds"), std::string::npos) << error;

  // A buffer count that passes the first bound but not the real data.
  Artifact a = makeRichArtifact();
  std::string bytes = serializeArtifact(a);
  // Find the buffer count: it follows arenaBytes (512) right after the
  // CUDA source; rebuild the prefix to locate it.
  detail::ByteWriter p;
  p.raw(kArtifactMagic, 8);
  p.u32(kArtifactFormatVersion);
  p.u32(a.abiVersion);
  p.str(a.kilnVersion);
  p.str(a.arch);
  p.str(a.modelHash);
  p.u64(a.kernelNames.size());
  for (const std::string &name : a.kernelNames)
    p.str(name);
  p.str(a.cubin);
  p.str(a.ptx);
  p.str(a.cudaSource);
  p.u64(a.arenaBytes);
  size_t countAt = p.out.size();
  ASSERT_EQ(bytes.substr(0, countAt), p.out);
  for (uint64_t count : {uint64_t(9), uint64_t(1000), ~uint64_t(0)}) {
    std::string damaged = bytes;
    for (int i = 0; i < 8; ++i)
      damaged[countAt + i] = static_cast<char>((count >> (8 * i)) & 0xff);
    EXPECT_FALSE(deserializeExact(damaged, damaged.size(), out, error))
        << count;
  }
}

TEST(ArtifactFormat, RejectsOutOfRangeIds) {
  {
    Artifact a = makeRichArtifact();
    a.steps[1].launch.args[1] = 99;
    expectRejected(a, "buffer id 99 out of range");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[1].launch.kernel = 2;
    expectRejected(a, "kernel index 2 out of range");
  }
  {
    Artifact a = makeRichArtifact();
    a.inputs[0] = 1000;
    expectRejected(a, "out of range");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.c = 8;
    expectRejected(a, "out of range");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[2].copy.src = 12345;
    expectRejected(a, "out of range");
  }
  {
    // Output 1 does not exist.
    Artifact a = makeRichArtifact();
    a.buffers[7].offset = 1;
    expectRejected(a, "not a view of output 0");
  }
  {
    // A graph input list entry must be an Input buffer.
    Artifact a = makeRichArtifact();
    a.inputs[0] = 4;
    expectRejected(a, "is not a view of input 0");
  }
  {
    // An input view whose index is past the inputs.
    Artifact a = makeRichArtifact();
    a.buffers[1].offset = 3;
    expectRejected(a, "input index 3 out of range");
  }
}

TEST(ArtifactFormat, RejectsOversizeBuffers) {
  {
    Artifact a = makeRichArtifact();
    a.buffers[5].offset = 500; // 500 + 32 > 512
    expectRejected(a, "exceeds the arena");
  }
  {
    Artifact a = makeRichArtifact();
    a.buffers[5].offset = ~uint64_t(0) - 8; // offset + bytes overflows
    expectRejected(a, "exceeds the arena");
  }
  {
    Artifact a = makeRichArtifact();
    a.buffers[3].offset = 60; // weights are 80 bytes
    expectRejected(a, "exceeds the weights");
  }
  {
    Artifact a = makeRichArtifact();
    a.buffers[4].bytes = 16;
    expectRejected(a, "does not match its shape");
  }
  {
    Artifact a = makeRichArtifact();
    a.buffers[4].shape = {int64_t(1) << 40, int64_t(1) << 40};
    expectRejected(a, "overflows");
  }
  {
    Artifact a = makeRichArtifact();
    a.buffers[4].shape = {-2, -4};
    expectRejected(a, "negative dimension");
  }
  {
    Artifact a = makeRichArtifact();
    a.buffers[4].shape.assign(kMaxRank + 1, 1);
    a.buffers[4].bytes = 4;
    expectRejected(a, "rank");
  }
  {
    // A view of input 0 larger than input 0 itself.
    Artifact a = makeRichArtifact();
    a.buffers[1] = makeBuffer(BufferKind::Input, "x.big", {7}, 0);
    expectRejected(a, "larger than it");
  }
  {
    Artifact a = makeRichArtifact();
    a.buffers[0].name = std::string("x\0y", 3);
    expectRejected(a, "NUL");
  }
}

TEST(ArtifactFormat, RejectsBadSteps) {
  {
    // A matmul bias must hold n (4) elements of the matmul's type.
    Artifact a = makeRichArtifact();
    a.buffers.push_back(makeBuffer(BufferKind::Weight, "short", {3}, 0));
    a.steps[0].matmul.bias = static_cast<uint32_t>(a.buffers.size() - 1);
    expectRejected(a, "matmul bias");
    a.steps[0].matmul.bias = 99;
    expectRejected(a, "matmul bias");
  }
  {
    // A matmul residual (cuBLASLt's C): laid out as C, of the matmul's type,
    // and C's very storage or none of it. The weight r (8 floats) fits, and
    // survives the encoding.
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.residual = 3;
    a.steps[0].matmul.beta = 1.0f;
    expectValid(a);
    Artifact back;
    std::string error;
    ASSERT_TRUE(roundTrip(a, back, error)) << error;
    EXPECT_EQ(back.steps[0].matmul.residual, 3u);
    a.steps[0].matmul.residual = 6; // t.flat: C itself, read in place
    expectValid(a);
    a.steps[0].matmul.residual = 99;
    expectRejected(a, "matmul residual");
    a.buffers.push_back(makeBuffer(BufferKind::Weight, "short", {3}, 0));
    a.steps[0].matmul.residual = static_cast<uint32_t>(a.buffers.size() - 1);
    expectRejected(a, "matmul residual does not fit");
    a.buffers.push_back(makeBuffer(BufferKind::Arena, "t.shifted", {8}, 16));
    a.steps[0].matmul.residual = static_cast<uint32_t>(a.buffers.size() - 1);
    expectRejected(a, "matmul output c partly overlaps its residual");
    a.buffers.back().dtype = DType::F16;
    a.buffers.back().bytes = 16;
    expectRejected(a, "must be float32");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[2].copy.bytes = 33;
    expectRejected(a, "copy of 33 bytes exceeds");
  }
  {
    // Overlapping copy within the arena: t (0..32) to a view at 16.
    Artifact a = makeRichArtifact();
    a.buffers.push_back(makeBuffer(BufferKind::Arena, "t.shifted", {8}, 16));
    a.steps[2].copy = CopyStep{4, 8, 32};
    expectRejected(a, "overlap");
  }
  {
    // Copies into weights or inputs are refused: they are read-only.
    Artifact a = makeRichArtifact();
    a.steps[2].copy = CopyStep{5, 3, 32};
    expectRejected(a, "not writable");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.k = 4; // x holds 2x3, not 2x4
    expectRejected(a, "matmul a does not fit");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.batch = 2;
    a.steps[0].matmul.strideC = 8;
    expectRejected(a, "matmul c does not fit");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.batch = 2;
    a.steps[0].matmul.strideC = 4; // < m * n: batches would overlap
    expectRejected(a, "overlap");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.strideA = -1;
    expectRejected(a, "negative");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.m = 0;
    expectRejected(a, "at least 1");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.dtype = DType::F16;
    expectRejected(a, "matmul operands must both be float16");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.dtype = DType::I8;
    expectRejected(a, "matmul dtype");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[0].matmul.dtype = DType::U32;
    expectRejected(a, "matmul dtype must be float32, float16, bfloat16 or "
                      "float64, got uint32");
  }
  {
    // C aliasing A: t = t * w is not a legal cuBLAS call.
    Artifact a = makeRichArtifact();
    a.buffers.push_back(makeBuffer(BufferKind::Arena, "t.sq", {2, 3}, 0));
    a.steps[0].matmul.a = 8;
    expectRejected(a, "overlaps an operand");
  }
  {
    Artifact a = makeRichArtifact();
    a.steps[1].launch.block[1] = 0;
    expectRejected(a, "at least 1");
  }
  {
    Artifact a = makeRichArtifact();
    a.cubin.clear();
    a.ptx.clear();
    a.cudaSource.clear();
    expectRejected(a, "no cubin, PTX or CUDA source");
  }
  {
    Artifact a = makeRichArtifact();
    a.kernelNames[1].clear();
    expectRejected(a, "kernel name 1");
  }
}

TEST(ArtifactFormat, AcceptsLegalAliasing) {
  // Distinct arena buffers may share storage (the planner reuses memory)
  // and adjacent ranges do not overlap.
  Artifact a = makeRichArtifact();
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "t.next", {8}, 32));
  a.steps[2].copy = CopyStep{4, 8, 32};
  expectValid(a);
}

TEST(ArtifactFormat, BroadcastMatmulFits) {
  // Two batches of 1x3 rows of x against the same w: stride B = 0.
  Artifact a = makeRichArtifact();
  MatmulStep &m = batchRowsOfX(a, /*outer=*/false);
  expectValid(a);
  m.strideA = 4; // second row would start at element 4 and end at 7 > 6
  expectInvalid(a);
}

TEST(ArtifactFormat, TwoLevelBatchFitsAndDoesNotOverlap) {
  // x (2x3) as two 1x3 rows; the outer level walks x's rows, the inner one
  // repeats each row (stride 0) against w: y gets 2 x 1 rows of 1x4.
  Artifact a = makeRichArtifact();
  MatmulStep &m = batchRowsOfX(a, /*outer=*/true);
  m.batch = 1;
  expectValid(a);
  m.outerStrideA = 4; // the second row would end past x
  expectInvalid(a, "matmul a does not fit");
  m.outerStrideA = 3;
  m.outerStrideC = 2; // the two outputs would overlap
  expectInvalid(a, "overlap");
  m.outerStrideC = 4;
  m.outerBatch = 0;
  expectInvalid(a);
}

TEST(ArtifactContainer, AppendAndFindPayload) {
  Container c(1001);
  ASSERT_TRUE(c.find(c.so)) << c.error;
  EXPECT_EQ(std::string(c.found, c.foundSize), c.payload);
  EXPECT_EQ((c.found - c.so.data()) % kArtifactPayloadAlign, 0);
  EXPECT_EQ(c.so.substr(c.so.size() - 8),
            std::string(kArtifactTrailerMagic, 8));
}

TEST(ArtifactContainer, RejectsDamage) {
  Container c(64);
  const std::string &so = c.so;
  {
    std::string damaged = so;
    damaged[64 + 20] ^= 1;
    EXPECT_FALSE(c.find(damaged));
    EXPECT_NE(c.error.find("checksum"), std::string::npos) << c.error;
  }
  {
    std::string damaged = so;
    damaged[damaged.size() - 1] = 'X';
    EXPECT_FALSE(c.find(damaged));
    EXPECT_NE(c.error.find("no Kiln trailer"), std::string::npos) << c.error;
  }
  {
    // Payload size pointing past the trailer.
    std::string damaged = so;
    damaged[damaged.size() - kArtifactTrailerSize + 8] += 1;
    EXPECT_FALSE(c.find(damaged));
    EXPECT_NE(c.error.find("does not end at the trailer"), std::string::npos)
        << c.error;
  }
  {
    // Offset + size overflowing 64 bits.
    std::string damaged = so;
    for (int i = 0; i < 8; ++i)
      damaged[damaged.size() - kArtifactTrailerSize + i] = '\xff';
    EXPECT_FALSE(c.find(damaged));
  }
  // Every truncation of the file.
  for (size_t size = 0; size < so.size(); ++size) {
    std::unique_ptr<char[]> copy(new char[size == 0 ? 1 : size]);
    std::memcpy(copy.get(), so.data(), size);
    EXPECT_FALSE(c.find(copy.get(), size)) << size;
  }
}
