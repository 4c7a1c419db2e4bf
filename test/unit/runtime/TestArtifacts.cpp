//===- TestArtifacts.cpp - Artifacts and helpers for runtime tests --------===//

#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <memory>
#include <tuple>
#include <type_traits>
#include <unistd.h>

using namespace kiln::rt;
using namespace kiln::rt::test;

Buffer test::makeBuffer(BufferKind kind, const std::string &name,
                        std::vector<int64_t> shape, uint64_t offset,
                        DType dtype) {
  Buffer b;
  b.kind = kind;
  b.dtype = dtype;
  b.name = name;
  b.offset = offset;
  b.bytes = dtypeSize(dtype);
  for (int64_t dim : shape)
    b.bytes *= static_cast<uint64_t>(dim);
  b.shape = std::move(shape);
  return b;
}

MatmulStep test::makeMatmul(int64_t m, int64_t n, int64_t k, uint32_t a,
                            uint32_t b, uint32_t c) {
  MatmulStep mm;
  mm.dtype = DType::F32;
  std::tie(mm.m, mm.n, mm.k) = std::make_tuple(m, n, k);
  std::tie(mm.a, mm.b, mm.c) = std::make_tuple(a, b, c);
  return mm;
}

Artifact test::makeFloat8MatmulArtifact(int64_t m, int64_t n, int64_t k) {
  Artifact a;
  a.kilnVersion = "test";
  a.inputs = {0, 1};
  a.outputs = {2};
  a.buffers = {makeBuffer(BufferKind::Input, "a", {m, k}, 0, DType::F8E4M3FN),
               makeBuffer(BufferKind::Input, "b", {n, k}, 1, DType::F8E4M3FN),
               makeBuffer(BufferKind::Output, "y", {m, n}, 0)};
  MatmulStep mm = makeMatmul(m, n, k, 0, 1, 2);
  mm.float8 = true;
  mm.transB = true;
  a.steps.push_back(Step::ofMatmul(mm));
  return a;
}

Artifact test::makeNextLaunchArtifact() {
  Artifact a = makeFloat8MatmulArtifact(7, 5, 32);
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "sums", {7, 5}, 0));
  a.arenaBytes = a.buffers.back().bytes;
  a.cubin = "FAKECUBIN";
  a.ptx = "FAKEPTX .version 8.0";
  a.kernelNames = {"double_f32", "kiln_fake_fused"};
  MatmulStep &m = a.steps[0].matmul;
  m.c = 3;
  m.kernels.push_back({"fused", 1, 0, 64, 64, 128, 1});
  m.kernels.back().withNextLaunch = true;
  a.steps.push_back(Step::ofLaunch(makeLaunch(0, 1, 35, {3, 2})));
  return a;
}

LaunchStep test::makeLaunch(uint32_t kernel, uint32_t blocks, uint32_t threads,
                            std::vector<uint32_t> args) {
  LaunchStep launch;
  launch.kernel = kernel;
  launch.grid[0] = blocks;
  launch.block[0] = threads;
  launch.args = std::move(args);
  return launch;
}

SizeFormula test::dimFormula(uint32_t d, int64_t scale) {
  return SizeFormula{{SizeTerm{scale, {d}}}};
}

SizeBinding test::sizeBinding(SizeField field, uint32_t target, uint32_t axis,
                              SizeFormula f) {
  SizeBinding b;
  b.field = field;
  b.target = target;
  b.axis = axis;
  b.formula = std::move(f);
  return b;
}

Artifact test::makeIdentityShell(std::vector<int64_t> shape) {
  Artifact a;
  a.kilnVersion = "0.1.0-test";
  a.arch = "sm_90a";
  a.modelHash = "feedface";
  a.arenaBytes = 0;
  a.buffers.push_back(makeBuffer(BufferKind::Input, "x", shape, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Output, "y", shape, 0));
  a.inputs = {0};
  a.outputs = {1};
  return a;
}

Artifact test::makeCopyArtifact(std::vector<int64_t> shape) {
  Artifact a = makeIdentityShell(shape);
  a.steps.push_back(Step::ofCopy(CopyStep{0, 1, a.buffers[0].bytes}));
  return a;
}

Artifact test::makeSplatArtifact() {
  Artifact a;
  a.kilnVersion = "0.1.0-test";
  a.arch = "sm_90a";
  float half = 0.5f;
  uint32_t halfBits = 0;
  std::memcpy(&halfBits, &half, sizeof(halfBits));
  a.buffers.push_back(makeBuffer(BufferKind::Input, "x", {2, 3}, 0));
  a.buffers.push_back(
      makeBuffer(BufferKind::Splat, "s", {3, kSplatColumns}, halfBits));
  a.buffers.push_back(
      makeBuffer(BufferKind::Splat, "p", {4}, kSplatPattern, DType::I64));
  a.buffers.push_back(
      makeBuffer(BufferKind::Splat, "p.view", {3}, kSplatPattern, DType::I64));
  a.buffers.push_back(
      makeBuffer(BufferKind::Output, "y", {2, kSplatColumns}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Output, "z", {3}, 1, DType::I64));
  a.inputs = {0};
  a.outputs = {4, 5};
  a.steps.push_back(Step::ofMatmul(makeMatmul(2, kSplatColumns, 3, 0, 1, 4)));
  a.steps.push_back(Step::ofCopy(CopyStep{3, 5, 3 * sizeof(uint64_t)}));
  return a;
}

Artifact test::makeRichArtifact() {
  Artifact a;
  a.kilnVersion = "0.1.0-test";
  a.arch = "sm_90a";
  a.modelHash = "0123456789abcdef";
  a.kernelNames = {"add_f32", "double_f32"};
  a.cubin = "FAKECUBIN";
  a.ptx = "FAKEPTX .version 8.0";
  a.cudaSource = "__global__ void add_f32(...) {}";
  a.arenaBytes = 512;
  // 0: input x (2x3); 1: its view as 6 elements.
  a.buffers.push_back(makeBuffer(BufferKind::Input, "x", {2, 3}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Input, "x.flat", {6}, 0));
  // 2: weight w (3x4) at 0; 3: bias-like weight (8) after it.
  a.buffers.push_back(makeBuffer(BufferKind::Weight, "w", {3, 4}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Weight, "r", {8}, 48));
  // 4: arena t (2x4) at 0; 5: arena u (2x4) at 256; 6: t flat.
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "t", {2, 4}, 0));
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "u", {2, 4}, 256));
  a.buffers.push_back(makeBuffer(BufferKind::Arena, "t.flat", {8}, 0));
  // 7: output y (2x4).
  a.buffers.push_back(makeBuffer(BufferKind::Output, "y", {2, 4}, 0));
  a.inputs = {0};
  a.outputs = {7};
  std::vector<float> w, r;
  for (int i = 0; i < 12; ++i)
    w.push_back(0.5f * static_cast<float>(i) - 2.0f);
  for (int i = 0; i < 8; ++i)
    r.push_back(static_cast<float>(i) * 0.25f);
  a.weights = bytesOf(w) + bytesOf(r);

  // t = x (2x3) * w (3x4)
  a.steps.push_back(Step::ofMatmul(makeMatmul(2, 4, 3, 0, 2, 4)));
  // u = t + r (8 threads)
  a.steps.push_back(Step::ofLaunch(makeLaunch(0, 2, 4, {6, 3, 5})));
  // y = u
  a.steps.push_back(Step::ofCopy(CopyStep{5, 7, 32}));
  return a;
}

Artifact test::makeGemmKernelArtifact() {
  Artifact a = makeRichArtifact();
  a.buffers[0] = makeBuffer(BufferKind::Input, "x", {2, 8}, 0, DType::F16);
  a.buffers[1] = makeBuffer(BufferKind::Input, "x.flat", {16}, 0, DType::F16);
  a.buffers[2] = makeBuffer(BufferKind::Weight, "w", {4, 8}, 0, DType::F16);
  a.buffers[4] = makeBuffer(BufferKind::Arena, "t", {2, 4}, 0, DType::F16);
  a.kernelNames.push_back("kiln_fake_gemm");
  MatmulStep &m = a.steps[0].matmul;
  m.dtype = DType::F16;
  m.k = 8;
  m.transB = true;
  m.kernels.push_back({"whole", 2, 0, 64, 64, 128, 1});
  m.kernels.push_back({"split", 2, 1, 64, 64, 128, 2});
  return a;
}

std::vector<float> test::richReference(const Artifact &a,
                                       const std::vector<float> &x) {
  std::vector<float> weights = floatsOf(a.weights);
  const float *w = weights.data(), *r = weights.data() + 12;
  std::vector<float> y(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      float acc = 0;
      for (int p = 0; p < 3; ++p)
        acc += x[i * 3 + p] * w[p * 4 + j];
      y[i * 4 + j] = acc + r[i * 4 + j];
    }
  return y;
}

std::ostream &test::operator<<(std::ostream &os, const MatmulCase &c) {
  return os << dtypeName(c.dtype) << " transA=" << c.transA
            << " transB=" << c.transB << " batch=" << c.batch << " m=" << c.m
            << " n=" << c.n << " k=" << c.k << " bcastA=" << c.broadcastA
            << " bcastB=" << c.broadcastB << " alpha=" << c.alpha
            << " beta=" << c.beta;
}

Artifact test::makeMatmulPlan(const MatmulCase &c, uint64_t accOffset) {
  int64_t aBatch = c.broadcastA ? 1 : c.batch;
  int64_t bBatch = c.broadcastB ? 1 : c.batch;
  std::vector<int64_t> aShape = c.transA
                                    ? std::vector<int64_t>{aBatch, c.k, c.m}
                                    : std::vector<int64_t>{aBatch, c.m, c.k};
  std::vector<int64_t> bShape = c.transB
                                    ? std::vector<int64_t>{bBatch, c.n, c.k}
                                    : std::vector<int64_t>{bBatch, c.k, c.n};
  std::vector<int64_t> cShape = {c.batch, c.m, c.n};
  Artifact a;
  a.kilnVersion = "test";
  a.buffers.push_back(makeBuffer(BufferKind::Input, "a", aShape, 0, c.dtype));
  a.buffers.push_back(makeBuffer(BufferKind::Input, "b", bShape, 1, c.dtype));
  a.buffers.push_back(makeBuffer(BufferKind::Input, "r", cShape, 2, c.dtype));
  a.buffers.push_back(
      makeBuffer(BufferKind::Arena, "acc", cShape, accOffset, c.dtype));
  a.buffers.push_back(makeBuffer(BufferKind::Output, "y", cShape, 0, c.dtype));
  a.arenaBytes = accOffset + a.buffers[3].bytes;
  a.inputs = {0, 1, 2};
  a.outputs = {4};
  // acc = r; acc = alpha * op(a) op(b) + beta * acc; y = acc
  a.steps.push_back(Step::ofCopy(CopyStep{2, 3, a.buffers[3].bytes}));
  MatmulStep mm = makeMatmul(c.m, c.n, c.k, 0, 1, 3);
  mm.dtype = c.dtype;
  mm.transA = c.transA;
  mm.transB = c.transB;
  mm.batch = c.batch;
  mm.strideA = c.broadcastA ? 0 : c.m * c.k;
  mm.strideB = c.broadcastB ? 0 : c.k * c.n;
  mm.strideC = c.m * c.n;
  mm.alpha = c.alpha;
  mm.beta = c.beta;
  a.steps.push_back(Step::ofMatmul(mm));
  a.steps.push_back(Step::ofCopy(CopyStep{3, 4, a.buffers[3].bytes}));
  return a;
}

std::vector<float> test::matmulReference(const MatmulCase &c,
                                         const std::vector<float> &A,
                                         const std::vector<float> &B,
                                         const std::vector<float> &R) {
  std::vector<float> expected(R.size());
  for (int64_t i = 0; i < c.batch; ++i) {
    const float *Ai = A.data() + (c.broadcastA ? 0 : i * c.m * c.k);
    const float *Bi = B.data() + (c.broadcastB ? 0 : i * c.k * c.n);
    for (int64_t r = 0; r < c.m; ++r)
      for (int64_t col = 0; col < c.n; ++col) {
        double acc = 0;
        for (int64_t p = 0; p < c.k; ++p)
          acc += double(c.transA ? Ai[p * c.m + r] : Ai[r * c.k + p]) *
                 double(c.transB ? Bi[col * c.k + p] : Bi[p * c.n + col]);
        size_t at = static_cast<size_t>((i * c.m + r) * c.n + col);
        expected[at] = static_cast<float>(c.alpha * acc + c.beta * R[at]);
      }
  }
  return expected;
}

Artifact test::kernelArtifact(const std::string &source,
                              const std::string &name, int64_t n,
                              uint32_t blocks, uint32_t threads) {
  Artifact a = makeIdentityShell({n});
  a.cudaSource = source;
  a.kernelNames = {name};
  a.steps.push_back(Step::ofLaunch(makeLaunch(0, blocks, threads, {0, 1})));
  return a;
}

std::string test::indexLookupSource(unsigned site) {
  return R"cuda(
thread_local unsigned int kiln_index_error;
extern "C" __global__ void lookup(const float *in, float *out) {
  long long index = (long long)in[threadIdx.x];
  if (index < -8 || index >= 8) { kiln_index_error = )cuda" +
         std::to_string(site) + R"cuda(u; index = 0; }
  out[threadIdx.x] = (float)index;
}
)cuda";
}

std::vector<float> test::runOnHost(Artifact artifact,
                                   const std::vector<float> &x,
                                   HostOptions options, Status *status) {
  std::unique_ptr<Model> model;
  Status s = Model::create(std::move(artifact), Backend::Host, model, options);
  EXPECT_TRUE(s.isOk()) << s.message;
  if (!s.isOk())
    return {};
  std::vector<float> y(model->output(0).bytes / sizeof(float), 0.0f);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  s = model->run(in, out, Memory::Host);
  if (status)
    *status = s;
  else
    EXPECT_TRUE(s.isOk()) << s.message;
  return y;
}

std::string test::bytesOf(const std::vector<float> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float));
}

std::vector<float> test::floatsOf(const std::string &bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

std::string test::readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

bool test::writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

/// Removes the temporary directories at exit.
static std::vector<std::string> &tempDirs() {
  static std::vector<std::string> *dirs = [] {
    auto *d = new std::vector<std::string>();
    std::atexit([] {
      for (const std::string &dir : tempDirs())
        std::system(("rm -rf '" + dir + "'").c_str());
    });
    return d;
  }();
  return *dirs;
}

std::string test::makeTempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/kiln-rt-test-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    return "";
  tempDirs().push_back(buf.data());
  return buf.data();
}

void test::usePrivateCache() {
  setenv("KILN_CACHE_DIR", (makeTempDir() + "/cache").c_str(), 1);
}

bool test::deserializeExact(const std::string &bytes, size_t size,
                            Artifact &out, std::string &error) {
  std::unique_ptr<char[]> copy(new char[size == 0 ? 1 : size]);
  std::memcpy(copy.get(), bytes.data(), size);
  return deserializeArtifact(copy.get(), size, out, error);
}

bool test::roundTrip(const Artifact &a, Artifact &out, std::string &error) {
  std::string bytes = serializeArtifact(a);
  return deserializeExact(bytes, bytes.size(), out, error);
}

bool test::haveCudaDriver() {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h)
    dlclose(h);
  return h != nullptr;
}

const std::string &test::templateBytes() {
  // KILN_MODEL_TEMPLATE overrides the build tree's path, for a test binary
  // carried to another machine (scripts/gpu_bundle.sh).
  static const std::string bytes = [] {
    const char *path = std::getenv("KILN_MODEL_TEMPLATE");
    return readFile(path && *path ? path : KILN_MODEL_TEMPLATE_PATH);
  }();
  return bytes;
}

LoadedArtifact::~LoadedArtifact() {
  // Artifacts stay loaded until exit: each carries its own static
  // libstdc++, whose exception-handling pool (about 71 KiB, allocated at
  // load) is never freed, so dlclose would show up as a leak under LSan.
}

bool test::loadArtifactSo(const std::string &soBytes, LoadedArtifact &out,
                          std::string &error) {
  static int counter = 0;
  std::string dir = makeTempDir();
  if (dir.empty()) {
    error = "cannot create a temporary directory";
    return false;
  }
  // A distinct path per artifact: dlopen would return the first library
  // again for a path it has already loaded.
  out.path = dir + "/libmodel" + std::to_string(counter++) + ".so";
  if (!writeFile(out.path, soBytes)) {
    error = "cannot write " + out.path;
    return false;
  }
  out.handle = dlopen(out.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!out.handle) {
    const char *why = dlerror();
    error = why ? why : "dlopen failed";
    return false;
  }
  bool ok = true;
  auto get = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(out.handle, name));
    if (!fn) {
      ok = false;
      error = std::string("missing symbol ") + name;
    }
  };
  get(out.create, "kiln_model_create");
  get(out.createWithOptions, "kiln_model_create_with_options");
  get(out.destroy, "kiln_model_destroy");
  get(out.numInputs, "kiln_model_num_inputs");
  get(out.numOutputs, "kiln_model_num_outputs");
  get(out.inputDesc, "kiln_model_input_desc");
  get(out.outputDesc, "kiln_model_output_desc");
  get(out.run, "kiln_model_run");
  get(out.lastError, "kiln_last_error");
  get(out.abiVersion, "kiln_abi_version");
  get(out.info, "kiln_model_info");
  get(out.contextCreate, "kiln_context_create");
  get(out.contextDestroy, "kiln_context_destroy");
  get(out.contextRun, "kiln_context_run");
  get(out.contextEnqueue, "kiln_context_enqueue");
  get(out.contextSynchronize, "kiln_context_synchronize");
  return ok;
}

void test::loadArtifact(const Artifact &artifact, LoadedArtifact &out) {
  std::string so =
      appendArtifactPayload(templateBytes(), serializeArtifact(artifact));
  std::string error;
  ASSERT_TRUE(loadArtifactSo(so, out, error)) << error;
}

void test::openModel(const Artifact &artifact, kiln_backend backend,
                     LoadedArtifact &lib, kiln_model *&model) {
  ASSERT_NO_FATAL_FAILURE(loadArtifact(artifact, lib));
  ASSERT_EQ(lib.create(backend, &model), KILN_OK) << lib.lastError();
}

void test::expectCopiesItsInput(const LoadedArtifact &lib, kiln_model *model,
                                const std::vector<float> &x) {
  std::vector<float> y(x.size(), 0.0f);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  ASSERT_EQ(lib.run(model, in, out, KILN_MEMORY_HOST), KILN_OK)
      << lib.lastError();
  EXPECT_EQ(y, x);
}
