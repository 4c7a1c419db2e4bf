//===- CApiTest.cpp - The C ABI of an artifact .so ------------------------===//
//
// Builds real artifacts: a copy of the model template with a hand-built plan
// appended, written to a temporary directory and opened with dlopen, exactly
// as a user would load a `kilnc` output.
//
//===----------------------------------------------------------------------===//

#include "kiln/kiln_model.h"
#include "kiln/runtime/ArtifactFormat.h"

#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <dlfcn.h>
#include <thread>
#include <unistd.h>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// Expects creating the model of `so` to fail with `code` and `needle`.
void expectCreateFails(const std::string &so, kiln_status code,
                       const std::string &needle) {
  LoadedArtifact lib;
  std::string error;
  ASSERT_TRUE(loadArtifactSo(so, lib, error)) << error;
  kiln_model *model = reinterpret_cast<kiln_model *>(&lib);
  EXPECT_EQ(lib.create(KILN_BACKEND_CUDA, &model), code);
  EXPECT_EQ(model, nullptr);
  std::string message = lib.lastError();
  EXPECT_NE(message.find(needle), std::string::npos)
      << "error '" << message << "' lacks '" << needle << "'";
}

/// Opens `artifact` (`openModel`) on the host backend, which compiles its
/// kernels into a cache of the test's own.
void openOnHost(const Artifact &artifact, LoadedArtifact &lib,
                kiln_model *&model) {
  usePrivateCache();
  openModel(artifact, KILN_BACKEND_HOST, lib, model);
}

/// Expects `status` to be the refusal of a null input 0 ('x'), said by
/// `lib`'s last error.
void expectNullInputRefused(const LoadedArtifact &lib, kiln_status status) {
  EXPECT_EQ(status, KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lib.lastError()).find("input 0 ('x') is null"),
            std::string::npos)
      << lib.lastError();
}

class CApi : public ::testing::Test {
protected:
  // The real driver is wanted here, never a stand-in another test set.
  void SetUp() override { unsetenv("KILN_CUDA_DRIVER"); }
};

} // namespace

TEST_F(CApi, BareTemplateHasNoModel) {
  ASSERT_FALSE(templateBytes().empty()) << KILN_MODEL_TEMPLATE_PATH;
  expectCreateFails(templateBytes(), KILN_ERROR_CORRUPT_ARTIFACT,
                    "no Kiln trailer");
}

TEST_F(CApi, DescribesAZeroStepModel) {
  LoadedArtifact lib;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(makeIdentityShell({2, 3}), lib));
  EXPECT_EQ(lib.abiVersion(), static_cast<uint32_t>(KILN_ABI_VERSION));
  kiln_model *model = nullptr;
  ASSERT_EQ(lib.create(KILN_BACKEND_CUDA, &model), KILN_OK) << lib.lastError();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(lib.numInputs(model), 1);
  EXPECT_EQ(lib.numOutputs(model), 1);
  kiln_tensor_desc desc;
  ASSERT_EQ(lib.inputDesc(model, 0, &desc), KILN_OK);
  EXPECT_STREQ(desc.name, "x");
  EXPECT_EQ(desc.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(desc.rank, 2);
  EXPECT_EQ(desc.shape[0], 2);
  EXPECT_EQ(desc.shape[1], 3);
  ASSERT_EQ(lib.outputDesc(model, 0, &desc), KILN_OK);
  EXPECT_STREQ(desc.name, "y");
  EXPECT_EQ(lib.inputDesc(model, 1, &desc), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lib.lastError()).find("input index 1 out of range"),
            std::string::npos)
      << lib.lastError();
  EXPECT_EQ(lib.outputDesc(model, -1, &desc), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lib.inputDesc(model, 0, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  std::string info = lib.info(model);
  for (const char *part :
       {"kiln 0.1.0-test", "arch sm_90a", "model feedface", "arena 0 bytes"})
    EXPECT_NE(info.find(part), std::string::npos) << info;
  lib.destroy(model);
}

TEST_F(CApi, RunWithoutDriverReportsNoDeviceAndStaysUsable) {
  if (haveCudaDriver())
    GTEST_SKIP() << "a CUDA driver is installed; see KilnRuntimeGpuTests";
  for (kiln_backend backend : {KILN_BACKEND_CUDA}) {
    LoadedArtifact lib;
    kiln_model *model = nullptr;
    ASSERT_NO_FATAL_FAILURE(
        openModel(makeCopyArtifact({2, 3}), backend, lib, model));
    std::vector<float> x(6, 1.0f), y(6, 0.0f);
    const void *in[] = {x.data()};
    void *out[] = {y.data()};
    for (int attempt = 0; attempt < 2; ++attempt) {
      EXPECT_EQ(lib.run(model, in, out, KILN_MEMORY_HOST),
                KILN_ERROR_NO_DEVICE);
      std::string message = lib.lastError();
      EXPECT_NE(message.find("no CUDA driver found (libcuda.so.1)"),
                std::string::npos)
          << message;
    }
    // Still usable: descriptors and info answer, destroy is clean.
    EXPECT_EQ(lib.numInputs(model), 1);
    kiln_tensor_desc desc;
    EXPECT_EQ(lib.outputDesc(model, 0, &desc), KILN_OK);
    EXPECT_STREQ(desc.name, "y");
    EXPECT_EQ(lib.run(model, in, out, KILN_MEMORY_DEVICE),
              KILN_ERROR_NO_DEVICE);
    lib.destroy(model);
  }
}

TEST_F(CApi, RunsThroughTheStandInDriver) {
  // The whole C path with the host stand-in driver: the artifact's own
  // runtime reads KILN_CUDA_DRIVER at its first run.
  LoadedArtifact lib;
  kiln_model *model = nullptr;
  ASSERT_NO_FATAL_FAILURE(
      openModel(makeCopyArtifact({5}), KILN_BACKEND_CUDA, lib, model));
  setenv("KILN_CUDA_DRIVER", KILN_FAKE_CUDA_PATH, 1);
  expectCopiesItsInput(lib, model, {1, 2, 3, 4, 5});
  unsetenv("KILN_CUDA_DRIVER");
  lib.destroy(model);
}

TEST_F(CApi, EnqueuesOnACallersStreamThroughTheStandInDriver) {
  LoadedArtifact lib;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(makeCopyArtifact({5}), lib));
  EXPECT_EQ(lib.contextEnqueue(nullptr, nullptr, nullptr, nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(lib.lastError(), "context is null");
  EXPECT_EQ(lib.contextSynchronize(nullptr), KILN_ERROR_INVALID_ARGUMENT);
  kiln_model *model = nullptr;
  ASSERT_EQ(lib.create(KILN_BACKEND_CUDA, &model), KILN_OK) << lib.lastError();
  kiln_context *context = nullptr;
  ASSERT_EQ(lib.contextCreate(model, &context), KILN_OK) << lib.lastError();
  setenv("KILN_CUDA_DRIVER", KILN_FAKE_CUDA_PATH, 1);
  std::vector<float> x = {1, 2, 3, 4, 5}, y(5, 0.0f);
  // Device pointers of the stand-in driver are host pointers.
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  const void *nullIn[] = {nullptr};
  expectNullInputRefused(lib,
                         lib.contextEnqueue(context, nullIn, out, nullptr));
  kiln_status queued = lib.contextEnqueue(context, in, out, nullptr);
  kiln_status waited = lib.contextSynchronize(context);
  unsetenv("KILN_CUDA_DRIVER");
  ASSERT_EQ(queued, KILN_OK) << lib.lastError();
  ASSERT_EQ(waited, KILN_OK) << lib.lastError();
  EXPECT_EQ(y, x);
  lib.contextDestroy(context);
  lib.destroy(model);
}

TEST_F(CApi, HostBackendRunsThroughTheCApi) {
  LoadedArtifact lib;
  kiln_model *model = nullptr;
  ASSERT_NO_FATAL_FAILURE(openOnHost(makeCopyArtifact({2}), lib, model));
  expectCopiesItsInput(lib, model, {4, 5});
  lib.destroy(model);
}

TEST_F(CApi, ContextsRunTheModelThroughTheCApi) {
  LoadedArtifact lib;
  kiln_model *model = nullptr;
  ASSERT_NO_FATAL_FAILURE(openOnHost(makeCopyArtifact({3}), lib, model));
  kiln_context *first = nullptr, *second = nullptr;
  ASSERT_EQ(lib.contextCreate(model, &first), KILN_OK) << lib.lastError();
  ASSERT_EQ(lib.contextCreate(model, &second), KILN_OK) << lib.lastError();
  std::vector<float> x = {1, 2, 3}, a(3, 0.0f), b(3, 0.0f);
  const void *in[] = {x.data()};
  void *outA[] = {a.data()}, *outB[] = {b.data()};
  ASSERT_EQ(lib.contextRun(first, in, outA, KILN_MEMORY_HOST), KILN_OK)
      << lib.lastError();
  ASSERT_EQ(lib.contextRun(second, in, outB, KILN_MEMORY_HOST), KILN_OK)
      << lib.lastError();
  EXPECT_EQ(a, x);
  EXPECT_EQ(b, x);
  // Arguments are checked as kiln_model_run checks them.
  EXPECT_EQ(lib.contextRun(first, nullptr, outA, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lib.contextRun(first, in, outA, static_cast<kiln_memory>(7)),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lib.contextRun(nullptr, in, outA, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  kiln_context *none = reinterpret_cast<kiln_context *>(1);
  EXPECT_EQ(lib.contextCreate(nullptr, &none), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(none, nullptr);
  lib.contextDestroy(first);
  lib.contextDestroy(second);
  lib.contextDestroy(nullptr);
  lib.destroy(model);
}

TEST_F(CApi, RejectsInvalidArguments) {
  LoadedArtifact lib;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(makeCopyArtifact({2}), lib));
  EXPECT_EQ(lib.create(KILN_BACKEND_CUDA, nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  kiln_model *model = nullptr;
  EXPECT_EQ(lib.create(static_cast<kiln_backend>(7), &model),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lib.lastError()).find("invalid backend 7"),
            std::string::npos);
  EXPECT_EQ(lib.run(nullptr, nullptr, nullptr, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lib.numInputs(nullptr), -1);
  EXPECT_EQ(lib.numOutputs(nullptr), -1);
  EXPECT_STREQ(lib.info(nullptr), "");
  lib.destroy(nullptr);
  ASSERT_EQ(lib.create(KILN_BACKEND_CUDA, &model), KILN_OK);
  std::vector<float> x(2), y(2);
  const void *in[] = {x.data()};
  void *out[] = {y.data()};
  EXPECT_EQ(lib.run(model, in, out, static_cast<kiln_memory>(3)),
            KILN_ERROR_INVALID_ARGUMENT);
  const void *nullIn[] = {nullptr};
  expectNullInputRefused(lib, lib.run(model, nullIn, out, KILN_MEMORY_HOST));
  lib.destroy(model);
}

TEST_F(CApi, CorruptionIsDetected) {
  std::string payload = serializeArtifact(makeCopyArtifact({2, 3}));
  std::string so = appendArtifactPayload(templateBytes(), payload);
  size_t payloadAt = so.size() - kArtifactTrailerSize - payload.size();
  {
    std::string damaged = so;
    damaged[payloadAt + payload.size() / 2] ^= 0x10;
    expectCreateFails(damaged, KILN_ERROR_CORRUPT_ARTIFACT, "checksum");
  }
  {
    std::string damaged = so;
    damaged[so.size() - 3] = '?';
    expectCreateFails(damaged, KILN_ERROR_CORRUPT_ARTIFACT, "no Kiln trailer");
  }
  {
    std::string damaged = so;
    damaged[so.size() - kArtifactTrailerSize] ^= 0x01; // payload offset
    expectCreateFails(damaged, KILN_ERROR_CORRUPT_ARTIFACT,
                      "does not end at the trailer");
  }
  {
    // A payload that checksums but does not validate.
    Artifact a = makeCopyArtifact({2, 3});
    a.steps[0].copy.dst = 42;
    expectCreateFails(
        appendArtifactPayload(templateBytes(), serializeArtifact(a)),
        KILN_ERROR_CORRUPT_ARTIFACT, "buffer id 42 out of range");
  }
}

TEST_F(CApi, VersionMismatchNamesBothVersions) {
  Artifact a = makeCopyArtifact({2});
  a.abiVersion = 99;
  expectCreateFails(
      appendArtifactPayload(templateBytes(), serializeArtifact(a)),
      KILN_ERROR_VERSION_MISMATCH,
      "compiled for Kiln C ABI version 99 but this runtime implements "
      "version 1");
  std::string payload = serializeArtifact(makeCopyArtifact({2}));
  payload[8] = kArtifactFormatVersion + 1; // format version
  expectCreateFails(appendArtifactPayload(templateBytes(), payload),
                    KILN_ERROR_VERSION_MISMATCH,
                    "format version " +
                        std::to_string(kArtifactFormatVersion + 1));
}

TEST_F(CApi, FindsItselfAfterChdirFromARelativePath) {
  std::string so = appendArtifactPayload(
      templateBytes(), serializeArtifact(makeCopyArtifact({3})));
  std::string dir = makeTempDir();
  ASSERT_TRUE(writeFile(dir + "/librel.so", so));
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(dir.c_str()), 0);
  void *handle = dlopen("./librel.so", RTLD_NOW | RTLD_LOCAL);
  ASSERT_EQ(chdir("/"), 0);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto create = reinterpret_cast<decltype(&kiln_model_create)>(
      dlsym(handle, "kiln_model_create"));
  auto destroy = reinterpret_cast<decltype(&kiln_model_destroy)>(
      dlsym(handle, "kiln_model_destroy"));
  auto lastError = reinterpret_cast<decltype(&kiln_last_error)>(
      dlsym(handle, "kiln_last_error"));
  kiln_model *model = nullptr;
  EXPECT_EQ(create(KILN_BACKEND_CUDA, &model), KILN_OK) << lastError();
  destroy(model);
  // Not closed: see ~LoadedArtifact.
  ASSERT_EQ(chdir(cwd), 0);
}

TEST_F(CApi, LastErrorIsPerThread) {
  LoadedArtifact lib;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(makeCopyArtifact({2}), lib));
  kiln_model *model = nullptr;
  EXPECT_EQ(lib.create(KILN_BACKEND_CUDA, nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  std::string mine = lib.lastError();
  std::string theirs = "unset";
  std::thread other([&] {
    theirs = lib.lastError();
    lib.create(static_cast<kiln_backend>(9), &model);
  });
  other.join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(std::string(lib.lastError()), mine);
}

TEST_F(CApi, NamesTheDimsOfASymbolicModelAndRunsAtThem) {
  // x [n] copied to y [n], n in 1..4; the copy's size follows n.
  Artifact a = makeCopyArtifact({4});
  a.symbolic.dims = {{"n", 1, 4}};
  a.symbolic.bindings = {
      sizeBinding(SizeField::BufferDim, 0, 0, dimFormula(0)),
      sizeBinding(SizeField::BufferDim, 1, 0, dimFormula(0)),
      sizeBinding(SizeField::CopyBytes, 0, 0, dimFormula(0, 4)),
  };
  LoadedArtifact lib;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(a, lib));
  auto numDims = reinterpret_cast<decltype(&kiln_model_num_dims)>(
      dlsym(lib.handle, "kiln_model_num_dims"));
  auto dim = reinterpret_cast<decltype(&kiln_model_dim)>(
      dlsym(lib.handle, "kiln_model_dim"));
  auto bind = reinterpret_cast<decltype(&kiln_model_bind_dims)>(
      dlsym(lib.handle, "kiln_model_bind_dims"));
  auto outputShape = reinterpret_cast<decltype(&kiln_model_output_shape)>(
      dlsym(lib.handle, "kiln_model_output_shape"));
  auto runDims = reinterpret_cast<decltype(&kiln_model_run_dims)>(
      dlsym(lib.handle, "kiln_model_run_dims"));
  ASSERT_TRUE(numDims && dim && bind && outputShape && runDims);
  kiln_model *model = nullptr;
  ASSERT_EQ(lib.create(KILN_BACKEND_HOST, &model), KILN_OK) << lib.lastError();
  EXPECT_EQ(numDims(model), 1);
  EXPECT_EQ(numDims(nullptr), -1);
  const char *name = nullptr;
  int64_t min = 0, max = 0;
  ASSERT_EQ(dim(model, 0, &name, &min, &max), KILN_OK);
  EXPECT_STREQ(name, "n");
  EXPECT_EQ(min, 1);
  EXPECT_EQ(max, 4);
  EXPECT_EQ(dim(model, 1, &name, &min, &max), KILN_ERROR_INVALID_ARGUMENT);

  int64_t shape3[] = {3}, shape9[] = {9};
  const int64_t *shapes[] = {shape3};
  int64_t values[1] = {0};
  ASSERT_EQ(bind(model, shapes, values), KILN_OK) << lib.lastError();
  EXPECT_EQ(values[0], 3);
  int64_t out[1] = {0};
  ASSERT_EQ(outputShape(model, values, 0, out), KILN_OK);
  EXPECT_EQ(out[0], 3);
  float x[3] = {1, 2, 3}, y[4] = {-1, -1, -1, -1};
  const void *in[] = {x};
  void *outs[] = {y};
  ASSERT_EQ(runDims(model, values, in, outs, KILN_MEMORY_HOST), KILN_OK)
      << lib.lastError();
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{1, 2, 3, -1}));

  // Refusals name what is wrong, and leave the model usable.
  shapes[0] = shape9;
  EXPECT_EQ(bind(model, shapes, values), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(lib.lastError(), "dim sizes: 'n' is 9 (from input 'x' dim 0), "
                                "outside its range 1..4");
  EXPECT_EQ(lib.run(model, in, outs, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lib.lastError())
                .find("the model has symbolic dims "
                      "(n 1..4)"),
            std::string::npos)
      << lib.lastError();
  int64_t five[] = {5};
  EXPECT_EQ(runDims(model, five, in, outs, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outputShape(model, five, 0, out), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(runDims(model, nullptr, in, outs, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outputShape(model, nullptr, 0, out), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(lib.lastError(), "dims is null");
  EXPECT_EQ(dim(model, 0, nullptr, &min, &max), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(lib.lastError(), "model, name, min or max is null");
  const int64_t *noShape[] = {nullptr};
  EXPECT_EQ(bind(model, noShape, values), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(lib.lastError(), "the shape of input 0 is null");
  int64_t two[] = {2};
  float x2[2] = {7, 8};
  const void *in2[] = {x2};
  ASSERT_EQ(runDims(model, two, in2, outs, KILN_MEMORY_HOST), KILN_OK)
      << lib.lastError();
  EXPECT_EQ(y[0], 7);
  EXPECT_EQ(y[1], 8);

  // A context runs at the dims too, synchronously or queued (on the host
  // backend the queued run is over on return), and refuses as the model
  // does.
  auto contextRunDims = reinterpret_cast<decltype(&kiln_context_run_dims)>(
      dlsym(lib.handle, "kiln_context_run_dims"));
  auto contextEnqueueDims =
      reinterpret_cast<decltype(&kiln_context_enqueue_dims)>(
          dlsym(lib.handle, "kiln_context_enqueue_dims"));
  ASSERT_TRUE(contextRunDims && contextEnqueueDims);
  kiln_context *context = nullptr;
  ASSERT_EQ(lib.contextCreate(model, &context), KILN_OK) << lib.lastError();
  float z[4] = {-1, -1, -1, -1};
  void *zs[] = {z};
  ASSERT_EQ(contextRunDims(context, values, in, zs, KILN_MEMORY_HOST), KILN_OK)
      << lib.lastError();
  EXPECT_EQ(std::vector<float>(z, z + 4), (std::vector<float>{1, 2, 3, -1}));
  ASSERT_EQ(contextEnqueueDims(context, two, in2, zs, nullptr), KILN_OK)
      << lib.lastError();
  ASSERT_EQ(lib.contextSynchronize(context), KILN_OK) << lib.lastError();
  EXPECT_EQ(std::vector<float>(z, z + 4), (std::vector<float>{7, 8, 3, -1}));
  EXPECT_EQ(lib.contextRun(context, in, zs, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lib.lastError()).find("the model has symbolic dims"),
            std::string::npos)
      << lib.lastError();
  EXPECT_EQ(contextRunDims(context, five, in, zs, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(lib.lastError(), "dim sizes: 'n' is 5, outside its range 1..4");
  EXPECT_EQ(contextRunDims(context, nullptr, in, zs, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(contextEnqueueDims(context, five, in, zs, nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(contextRunDims(nullptr, values, in, zs, KILN_MEMORY_HOST),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(lib.lastError(), "context is null");
  EXPECT_EQ(contextEnqueueDims(nullptr, values, in, zs, nullptr),
            KILN_ERROR_INVALID_ARGUMENT);
  lib.contextDestroy(context);
  lib.destroy(model);
}

TEST_F(CApi, NamesTheOutputsKeptInAnInputsStorage) {
  // y is kept in x's storage (a cache appended in place) and no step writes
  // it: a run leaves y equal to x.
  Artifact a = makeIdentityShell({4});
  a.aliases.push_back(OutputAlias{0, 0, 0});
  LoadedArtifact lib;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(a, lib));
  auto outputAlias = reinterpret_cast<decltype(&kiln_model_output_alias)>(
      dlsym(lib.handle, "kiln_model_output_alias"));
  ASSERT_TRUE(outputAlias);
  kiln_model *model = nullptr;
  ASSERT_EQ(lib.create(KILN_BACKEND_HOST, &model), KILN_OK) << lib.lastError();
  int32_t input = 7, axis = 7;
  ASSERT_EQ(outputAlias(model, 0, &input, &axis), KILN_OK) << lib.lastError();
  EXPECT_EQ(input, 0);
  EXPECT_EQ(axis, 0);
  EXPECT_EQ(outputAlias(model, 1, &input, &axis), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(lib.lastError(),
               "output index 1 out of range (the model has 1)");
  EXPECT_EQ(outputAlias(model, 0, nullptr, &axis), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(outputAlias(nullptr, 0, &input, &axis),
            KILN_ERROR_INVALID_ARGUMENT);

  // Two buffers: the input is copied to the output. One buffer: untouched.
  float x[4] = {1, 2, 3, 4}, y[4] = {-1, -1, -1, -1};
  const void *in[] = {x};
  void *out[] = {y};
  ASSERT_EQ(lib.run(model, in, out, KILN_MEMORY_HOST), KILN_OK)
      << lib.lastError();
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{1, 2, 3, 4}));
  void *same[] = {x};
  ASSERT_EQ(lib.run(model, in, same, KILN_MEMORY_HOST), KILN_OK)
      << lib.lastError();
  EXPECT_EQ(std::vector<float>(x, x + 4), (std::vector<float>{1, 2, 3, 4}));
  lib.destroy(model);

  // A model without aliases says -1 for each output.
  LoadedArtifact plain;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(makeCopyArtifact({4}), plain));
  ASSERT_EQ(plain.create(KILN_BACKEND_HOST, &model), KILN_OK);
  auto plainAlias = reinterpret_cast<decltype(&kiln_model_output_alias)>(
      dlsym(plain.handle, "kiln_model_output_alias"));
  ASSERT_TRUE(plainAlias);
  ASSERT_EQ(plainAlias(model, 0, &input, &axis), KILN_OK);
  EXPECT_EQ(input, -1);
  EXPECT_EQ(axis, -1);
  plain.destroy(model);
}

TEST_F(CApi, CreatesWithRunTimeOptionsOverTheEnvironment) {
  LoadedArtifact lib;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(makeIdentityShell({2, 3}), lib));
  auto createWith = lib.createWithOptions;
  // What the options give wins over the environment; what they leave unset
  // comes from it.
  setenv("KILN_TUNE_MATMULS", "0", 1);
  setenv("KILN_CUDA_GRAPHS", "0", 1);
  kiln_model_options options{};
  options.size = sizeof(options);
  options.set = KILN_OPTION_CUDA_GRAPHS;
  options.cuda_graphs = 1;
  kiln_model *model = nullptr;
  ASSERT_EQ(createWith(KILN_BACKEND_CUDA, &options, &model), KILN_OK)
      << lib.lastError();
  std::string info = lib.info(model);
  EXPECT_NE(info.find("CUDA graphs on, matmul tuning off"), std::string::npos)
      << info;
  lib.destroy(model);
  options.set = KILN_OPTION_TUNE_MATMULS | KILN_OPTION_CUDA_GRAPHS;
  options.tune_matmuls = 1;
  options.cuda_graphs = 0;
  ASSERT_EQ(createWith(KILN_BACKEND_CUDA, &options, &model), KILN_OK);
  info = lib.info(model);
  EXPECT_NE(info.find("CUDA graphs off, matmul tuning on"), std::string::npos)
      << info;
  lib.destroy(model);
  unsetenv("KILN_TUNE_MATMULS");
  unsetenv("KILN_CUDA_GRAPHS");

  options = kiln_model_options{};
  options.size = sizeof(options);
  options.set = KILN_OPTION_HOST_SEED;
  options.host_seed = 7;
  ASSERT_EQ(createWith(KILN_BACKEND_HOST, &options, &model), KILN_OK);
  info = lib.info(model);
  EXPECT_NE(info.find("host seed 7, checking off"), std::string::npos) << info;
  lib.destroy(model);
  // NULL options are kiln_model_create's.
  ASSERT_EQ(createWith(KILN_BACKEND_HOST, nullptr, &model), KILN_OK);
  info = lib.info(model);
  EXPECT_NE(info.find("host seed 0, checking off"), std::string::npos) << info;
  lib.destroy(model);
}

TEST_F(CApi, RefusesMalformedOptions) {
  LoadedArtifact lib;
  ASSERT_NO_FATAL_FAILURE(loadArtifact(makeIdentityShell({2, 3}), lib));
  auto createWith = lib.createWithOptions;
  kiln_model_options options{};
  options.size = 4;
  kiln_model *model = nullptr;
  EXPECT_EQ(createWith(KILN_BACKEND_HOST, &options, &model),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(std::string(lib.lastError()).find("size 4"), std::string::npos)
      << lib.lastError();
  options.size = sizeof(options);
  options.set = 1u << 20;
  EXPECT_EQ(createWith(KILN_BACKEND_HOST, &options, &model),
            KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lib.lastError()).find("unknown bits"),
            std::string::npos)
      << lib.lastError();
  // A caller whose struct ends before tune_matmuls: that field stays unset.
  options = kiln_model_options{};
  options.size = offsetof(kiln_model_options, tune_matmuls);
  options.set = KILN_OPTION_TUNE_MATMULS;
  options.tune_matmuls = 0;
  ASSERT_EQ(createWith(KILN_BACKEND_CUDA, &options, &model), KILN_OK);
  EXPECT_NE(std::string(lib.info(model)).find("matmul tuning on"),
            std::string::npos)
      << lib.info(model);
  lib.destroy(model);
}
