//===- BenchRunners.cpp - what kiln-run --bench times ---------------------===//

#include "BenchRunners.h"
#include "BenchMode.h"
#include "RunOptions.h"

#include "kiln/runtime/ArtifactFile.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

#include <functional>
#include <optional>

using namespace mlir;
using kiln::HostTensor;

namespace kilnrun {

/// What --bench's times are, for `backend` (the one asked for when a `.so`
/// runs through its C ABI, which does not say which Auto chose).
static std::string
benchWhat(std::optional<kiln::rt::Backend> backend = std::nullopt) {
  kiln::rt::Backend b = backend.value_or(runtimeBackend());
  std::string what = "wall clock of whole runs with host-memory inputs and "
                     "outputs (their copies included) on backend ";
  what += kiln::rt::backendName(b);
  if (b == kiln::rt::Backend::Host)
    what += ": the host backend emulates the GPU; its times are not GPU times";
  return what;
}

/// One run of a bench runner into its own outputs; false when it failed.
using RunInto = std::function<bool(void *const *outputs)>;

/// --bench over benchThreads() runners: runner t is `makeRun(t)` (null when
/// its execution context could not be made, having said why), run into its
/// own copy of `outputs`, so that threads never share storage.
static bool benchRuns(const SmallVector<HostTensor> &outputs,
                      function_ref<RunInto(unsigned)> makeRun, StringRef what) {
  unsigned threads = benchThreads();
  std::vector<SmallVector<HostTensor>> storage(threads, outputs);
  std::vector<std::vector<void *>> pointers(threads);
  std::vector<BenchRun> runners;
  for (unsigned t = 0; t < threads; ++t) {
    for (HostTensor &tensor : storage[t])
      pointers[t].push_back(tensor.bytes.data());
    RunInto run = makeRun(t);
    if (!run)
      return false;
    runners.push_back([run, out = pointers[t].data()] { return run(out); });
  }
  return runBench(runners, what);
}

bool benchLibrary(void *lib, kiln_model *model,
                  const std::vector<int64_t> &dims,
                  const SmallVector<const void *> &in,
                  const SmallVector<HostTensor> &outputs) {
  auto run = (decltype(&kiln_model_run))dlsym(lib, "kiln_model_run");
  auto runDims =
      (decltype(&kiln_model_run_dims))dlsym(lib, "kiln_model_run_dims");
  auto runContextDims =
      (decltype(&kiln_context_run_dims))dlsym(lib, "kiln_context_run_dims");
  auto lastError = (decltype(&kiln_last_error))dlsym(lib, "kiln_last_error");
  auto createContext =
      (decltype(&kiln_context_create))dlsym(lib, "kiln_context_create");
  auto destroyContext =
      (decltype(&kiln_context_destroy))dlsym(lib, "kiln_context_destroy");
  auto runContext = (decltype(&kiln_context_run))dlsym(lib, "kiln_context_run");
  bool threaded = benchThreads() > 1;
  if (threaded && (!createContext || !destroyContext || !runContext ||
                   (!dims.empty() && !runContextDims))) {
    fail("--threads needs an artifact with execution contexts (compile it "
         "again with this kilnc)");
    return false;
  }
  std::vector<kiln_context *> contexts;
  bool ok = benchRuns(
      outputs,
      [&](unsigned) -> RunInto {
        kiln_context *context = nullptr;
        if (threaded) {
          if (createContext(model, &context) != KILN_OK) {
            fail(lastError());
            return nullptr;
          }
          contexts.push_back(context);
        }
        return [=, &in, &dims](void *const *out) {
          kiln_status s;
          if (dims.empty())
            s = context ? runContext(context, in.data(), out, KILN_MEMORY_HOST)
                        : run(model, in.data(), out, KILN_MEMORY_HOST);
          else
            s = context ? runContextDims(context, dims.data(), in.data(), out,
                                         KILN_MEMORY_HOST)
                        : runDims(model, dims.data(), in.data(), out,
                                  KILN_MEMORY_HOST);
          if (s != KILN_OK)
            fail(lastError());
          return s == KILN_OK;
        };
      },
      benchWhat());
  for (kiln_context *context : contexts)
    destroyContext(context);
  return ok;
}

bool benchModel(kiln::rt::Model &model, const std::vector<int64_t> &dims,
                const SmallVector<const void *> &in,
                const SmallVector<HostTensor> &outputs) {
  std::vector<std::unique_ptr<kiln::rt::ExecutionContext>> contexts;
  return benchRuns(
      outputs,
      [&](unsigned) -> RunInto {
        kiln::rt::ExecutionContext *context = nullptr;
        if (benchThreads() > 1) {
          contexts.emplace_back();
          if (kiln::rt::Status s = model.createContext(contexts.back());
              !s.isOk()) {
            fail(s.message);
            return nullptr;
          }
          context = contexts.back().get();
        }
        return [=, &model, &in, &dims](void *const *out) {
          kiln::rt::Status s =
              context
                  ? context->run(dims, in.data(), out, kiln::rt::Memory::Host)
                  : model.run(dims, in.data(), out, kiln::rt::Memory::Host);
          if (!s.isOk())
            fail(s.message);
          return s.isOk();
        };
      },
      benchWhat(model.backend()));
}

bool benchDevice(kiln::rt::Model &model, const std::vector<int64_t> &dims,
                 const SmallVector<const void *> &in,
                 SmallVector<HostTensor> &outputs) {
  if (model.backend() != kiln::rt::Backend::Cuda || benchThreads() > 1)
    return true;
  std::vector<double> ms;
  SmallVector<void *> out;
  for (HostTensor &t : outputs)
    out.push_back(t.bytes.data());
  if (kiln::rt::Status s = model.timeDeviceRuns(dims, in.data(), benchWarmup(),
                                                benchIters(), ms, out.data());
      !s.isOk()) {
    fail(s.message);
    return false;
  }
  llvm::outs() << llvm::format("bench: device: %zu runs after %u warm-up: ",
                               ms.size(), benchWarmup())
               << latencySummary(std::move(ms)) << "\n"
               << "bench: device: GPU time between CUDA events around each "
                  "run, inputs and outputs in device memory (no host "
                  "copies)\n";
  return true;
}

bool benchLibraryDevice(const std::vector<int64_t> &dims,
                        const SmallVector<const void *> &in,
                        SmallVector<HostTensor> &outputs) {
  kiln::rt::Artifact artifact;
  std::unique_ptr<kiln::rt::Model> model;
  kiln::rt::Status s = kiln::rt::loadArtifactFile(modelPath, artifact);
  if (s.isOk())
    s = kiln::rt::Model::create(std::move(artifact), kiln::rt::Backend::Cuda,
                                model, hostOptions(), cudaOptions());
  if (!s.isOk()) {
    fail(s.message);
    return false;
  }
  return benchDevice(*model, dims, in, outputs);
}

} // namespace kilnrun
