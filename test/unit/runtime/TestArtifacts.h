//===- TestArtifacts.h - Artifacts and helpers for runtime tests -*- C++
//-*-===//

#ifndef KILN_TEST_UNIT_RUNTIME_TESTARTIFACTS_H
#define KILN_TEST_UNIT_RUNTIME_TESTARTIFACTS_H

#include "kiln/kiln_model.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "kiln/runtime/Model.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace kiln {
namespace rt {
namespace test {

/// Returns a float32 buffer of `kind` with `shape` at `offset`.
Buffer makeBuffer(BufferKind kind, const std::string &name,
                  std::vector<int64_t> shape, uint64_t offset,
                  DType dtype = DType::F32);

/// `makeRichArtifact` with its matmul in float16, t (2 x 4) = x (2 x 8) times
/// w^T (w stored 4 x 8, so that its rows, like x's, are whole 16-byte
/// chunks), offering two Kiln GEMM candidates of the kernel the stand-in
/// driver has (kiln_fake_gemm, kernel 2): "whole", and "split" in two (its
/// one tile's arrivals counted).
Artifact makeGemmKernelArtifact();

/// Returns a float32 matmul step, one batch: buffer c (m x n) = buffer a
/// (m x k) * buffer b (k x n).
MatmulStep makeMatmul(int64_t m, int64_t n, int64_t k, uint32_t a, uint32_t b,
                      uint32_t c);

/// Returns the plan of one matmul step of float8 operands (MatmulStep::
/// float8): inputs a (m x k) and b (n x k) of float8 E4M3FN, output y (m x
/// n, float32) = a b^T.
Artifact makeFloat8MatmulArtifact(int64_t m, int64_t n, int64_t k);

/// makeFloat8MatmulArtifact(7, 5, 32) with its sums in arena scratch, then
/// double_f32 of the sums into y (35 threads): the step's finish. Its one
/// GEMM kernel, "fused" (kiln_fake_fused), takes that launch too
/// (GemmCandidate::withNextLaunch).
Artifact makeNextLaunchArtifact();

/// Returns a launch of kernel `kernel` over `blocks` blocks of `threads`
/// threads (along x) with the buffers `args`.
LaunchStep makeLaunch(uint32_t kernel, uint32_t blocks, uint32_t threads,
                      std::vector<uint32_t> args);

/// Returns the size formula `scale` * dim `d`.
SizeFormula dimFormula(uint32_t d, int64_t scale = 1);

/// Returns a binding of `field` of `target` (at `axis`) to the formula `f`.
SizeBinding sizeBinding(SizeField field, uint32_t target, uint32_t axis,
                        SizeFormula f);

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

/// One matmul of the matmul tests: y = alpha * op(a) op(b) + beta * r over
/// `batch` batches of (m x k) (k x n), op transposing where asked; a or b
/// broadcast is one matrix for every batch.
struct MatmulCase {
  bool transA, transB;
  int64_t batch, m, n, k;
  bool broadcastA, broadcastB;
  float alpha, beta;
  DType dtype = DType::F32;
};

/// Prints a case in test names and failures.
std::ostream &operator<<(std::ostream &os, const MatmulCase &c);

/// Returns the plan of `c`: inputs a, b and r; r copied into the arena
/// accumulator acc (at `accOffset`), the matmul step over acc, and acc
/// copied to output y. Buffers a, b, r, acc, y in that order.
Artifact makeMatmulPlan(const MatmulCase &c, uint64_t accOffset);

/// Returns the row-major reference of `c` on the values A, B and R of its
/// inputs, written from the MatmulStep contract (sums in double).
std::vector<float> matmulReference(const MatmulCase &c,
                                   const std::vector<float> &A,
                                   const std::vector<float> &B,
                                   const std::vector<float> &R);

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

/// Returns the CUDA source of kernel `lookup(in, out)` over 8 threads,
/// checking its index as the compiler's prelude does for the host (one flag
/// a thread): each in[i], used as an index into 8 elements, goes to out[i];
/// one out of range is read as 0 and records `site` in kiln_index_error.
std::string indexLookupSource(unsigned site);

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

/// Points KILN_CACHE_DIR at a fresh temporary directory, so that the modules
/// the host backend compiles stay out of the user's cache.
void usePrivateCache();

/// A suite whose tests compile modules on the host backend, into a cache of
/// its own (`usePrivateCache`).
class PrivateCacheSuite : public ::testing::Test {
protected:
  static void SetUpTestSuite() { usePrivateCache(); }
};

/// Deserializes a copy of the first `size` bytes of `bytes` held in a heap
/// block of exactly that size, so that AddressSanitizer flags any read past
/// it.
bool deserializeExact(const std::string &bytes, size_t size, Artifact &out,
                      std::string &error);

/// Serializes `a` and deserializes the bytes (`deserializeExact`) into `out`.
bool roundTrip(const Artifact &a, Artifact &out, std::string &error);

/// Returns true when a real CUDA driver can be opened in this process.
bool haveCudaDriver();

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

/// Writes `artifact` appended to the model template to a new file and opens
/// it; fails the test when that fails.
void loadArtifact(const Artifact &artifact, LoadedArtifact &out);

/// `loadArtifact`, then creates its model on `backend`; fails the test when
/// either fails.
void openModel(const Artifact &artifact, kiln_backend backend,
               LoadedArtifact &lib, kiln_model *&model);

/// Runs `model` of `lib` on host memory over `x` and expects its one output
/// to equal x, as the plans of `makeCopyArtifact` do.
void expectCopiesItsInput(const LoadedArtifact &lib, kiln_model *model,
                          const std::vector<float> &x);

} // namespace test
} // namespace rt
} // namespace kiln

#endif // KILN_TEST_UNIT_RUNTIME_TESTARTIFACTS_H
