//===- Model.h - A loaded Kiln model ready to run ---------------*- C++ -*-===//
//
// The C++ face of the runtime: a `Model` owns one deserialized `Artifact` and
// the backend that executes its plan. The C ABI (`kiln_model.h`), the JIT
// engine and the Python bindings are thin layers over it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MODEL_H
#define KILN_RUNTIME_MODEL_H

#include "kiln/runtime/ArtifactFormat.h"
#include "kiln/runtime/Status.h"

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace kiln {
namespace rt {

class Executor;

/// Which backend executes a model; same values as `kiln_backend`.
enum class Backend : uint8_t {
  Auto, ///< CUDA; later, the host backend when no GPU is present.
  Cuda, ///< The CUDA driver API and cuBLASLt, opened with dlopen.
  Host, ///< CPU emulation of the plan (not available yet).
};

/// Where the tensors passed to `Model::run` live; same values as
/// `kiln_memory`.
enum class Memory : uint8_t {
  Host,   ///< Ordinary host memory.
  Device, ///< CUDA device pointers (`CUdeviceptr` values cast to pointers).
};

/// Returns "auto", "cuda" or "host".
const char *backendName(Backend backend);

/// A compiled model bound to a backend. The device is set up lazily by the
/// first `run`, so a model can be created and inspected without a GPU. Runs
/// are serialized by an internal lock; a failed run leaves the model usable.
class Model {
public:
  /// Creates a model for `artifact` (validated again here) on `backend`.
  /// Fails with `Unsupported` for a backend that does not exist yet and with
  /// `InvalidArgument` / `CorruptArtifact` for bad arguments.
  static Status create(Artifact artifact, Backend backend,
                       std::unique_ptr<Model> &out);

  /// Releases host and device resources.
  ~Model();
  /// Models own device memory and are not copyable.
  Model(const Model &) = delete;
  /// Models own device memory and are not assignable.
  Model &operator=(const Model &) = delete;

  /// Runs the plan once and waits for it. `inputs` and `outputs` hold one
  /// pointer per graph input/output, in graph order, to dense row-major
  /// tensors of the sizes described by `input`/`output`; all are host or all
  /// device memory as `memory` says.
  Status run(const void *const *inputs, void *const *outputs, Memory memory);

  /// Returns the number of graph inputs.
  size_t numInputs() const { return plan.inputs.size(); }
  /// Returns the number of graph outputs.
  size_t numOutputs() const { return plan.outputs.size(); }
  /// Returns the canonical buffer of graph input `index` (< numInputs()).
  const Buffer &input(size_t index) const {
    return plan.buffers[plan.inputs[index]];
  }
  /// Returns the canonical buffer of graph output `index` (< numOutputs()).
  const Buffer &output(size_t index) const {
    return plan.buffers[plan.outputs[index]];
  }
  /// Returns the plan. The CUDA backend releases `weights` once they are on
  /// the device, so that host memory is not held twice.
  const Artifact &artifact() const { return plan; }
  /// Returns the backend chosen at creation.
  Backend backend() const { return selectedBackend; }
  /// Returns a one-line summary: Kiln version, arch, model hash, arena size.
  std::string info() const;

private:
  /// Use `create`.
  Model(Artifact artifact, Backend backend);

  /// The plan; see `artifact()`.
  Artifact plan;
  /// The backend chosen at creation.
  Backend selectedBackend;
  /// Runs the plan on the chosen backend.
  std::unique_ptr<Executor> executor;
  /// Serializes runs: the arena and stream are shared by all of them.
  std::mutex runMutex;
};

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_MODEL_H
