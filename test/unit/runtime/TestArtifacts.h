//===- TestArtifacts.h - Artifacts and helpers for runtime tests -*- C++
//-*-===//

#ifndef KILN_TEST_UNIT_RUNTIME_TESTARTIFACTS_H
#define KILN_TEST_UNIT_RUNTIME_TESTARTIFACTS_H

#include "kiln/kiln_model.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "kiln/runtime/Model.h"

#include <string>
#include <vector>

namespace kiln {
namespace rt {
namespace test {

/// Returns a float32 buffer of `kind` with `shape` at `offset`.
Buffer makeBuffer(BufferKind kind, const std::string &name,
                  std::vector<int64_t> shape, uint64_t offset,
                  DType dtype = DType::F32);

/// Returns an artifact with one input "x" and one output "y", both float32
/// of `shape`, and no steps.
Artifact makeIdentityShell(std::vector<int64_t> shape);

/// Returns `makeIdentityShell(shape)` plus one copy step x -> y.
Artifact makeCopyArtifact(std::vector<int64_t> shape);

/// Returns an artifact using every buffer kind and every step kind: input x
/// (2x3) and its reshaped view, weight w (3x4), arena buffers, output y
/// (2x4); steps launch, matmul and copy.
Artifact makeRichArtifact();

/// Returns the output of `makeRichArtifact`'s plan for input `x`, from its
/// weights: x (2x3) * w (3x4) + r.
std::vector<float> richReference(const Artifact &a,
                                 const std::vector<float> &x);

/// Width of the splat in `makeSplatArtifact`: 3 x 6000 floats is more than
/// the CUDA executor uploads before it copies the value onward on the device.
constexpr int64_t kSplatColumns = 6000;
/// The 64-bit splat's value in `makeSplatArtifact`.
constexpr uint64_t kSplatPattern = 0x0102030405060708ull;

/// Returns an artifact over splat buffers: input x (2x3); output
/// y = x * s (2 x kSplatColumns), s a 3 x kSplatColumns splat of 0.5f; output
/// z (3 x int64) copied from a 4-element splat of kSplatPattern through a
/// 3-element view of it (which shares its storage).
Artifact makeSplatArtifact();

/// An artifact running `source`'s kernel `name` once over float input x and
/// output y of `n` elements, with `blocks` blocks of `threads` threads.
Artifact kernelArtifact(const std::string &source, const std::string &name,
                        int64_t n, uint32_t blocks, uint32_t threads);

/// Runs `artifact` on the host backend; returns y. A failed run fails the
/// test unless `status` takes its status.
std::vector<float> runOnHost(Artifact artifact, const std::vector<float> &x,
                             HostOptions options, Status *status = nullptr);

/// Returns the bytes of `values`.
std::string bytesOf(const std::vector<float> &values);

/// Returns the floats in `bytes`.
std::vector<float> floatsOf(const std::string &bytes);

/// Returns the contents of the file at `path`; fails the test if unreadable.
std::string readFile(const std::string &path);

/// Writes `bytes` to `path`; returns false on failure.
bool writeFile(const std::string &path, const std::string &bytes);

/// Returns a fresh temporary directory, removed at process exit.
std::string makeTempDir();

/// The C ABI of one artifact `.so`, opened with dlopen.
struct LoadedArtifact {
  /// The dlopen handle; null when loading failed.
  void *handle = nullptr;
  /// Where the `.so` was written.
  std::string path;
  decltype(&kiln_model_create) create = nullptr;
  decltype(&kiln_model_create_with_options) createWithOptions = nullptr;
  decltype(&kiln_model_destroy) destroy = nullptr;
  decltype(&kiln_model_num_inputs) numInputs = nullptr;
  decltype(&kiln_model_num_outputs) numOutputs = nullptr;
  decltype(&kiln_model_input_desc) inputDesc = nullptr;
  decltype(&kiln_model_output_desc) outputDesc = nullptr;
  decltype(&kiln_model_run) run = nullptr;
  decltype(&kiln_last_error) lastError = nullptr;
  decltype(&kiln_abi_version) abiVersion = nullptr;
  decltype(&kiln_model_info) info = nullptr;
  decltype(&kiln_context_create) contextCreate = nullptr;
  decltype(&kiln_context_destroy) contextDestroy = nullptr;
  decltype(&kiln_context_run) contextRun = nullptr;
  decltype(&kiln_context_enqueue) contextEnqueue = nullptr;
  decltype(&kiln_context_synchronize) contextSynchronize = nullptr;

  /// Leaves the library loaded (see the definition).
  ~LoadedArtifact();
};

/// Writes the model template with `soBytes` appended already (see
/// `appendArtifactPayload`) to a new file and opens it; `error` says why not.
bool loadArtifactSo(const std::string &soBytes, LoadedArtifact &out,
                    std::string &error);

/// Returns the bytes of the model template built with the tests.
const std::string &templateBytes();

} // namespace test
} // namespace rt
} // namespace kiln

#endif // KILN_TEST_UNIT_RUNTIME_TESTARTIFACTS_H
