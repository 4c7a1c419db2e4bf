//===- Executor.h - Backend interface of the runtime ------------*- C++ -*-===//
//
// A backend executes one model's plan. An executor's runs do not overlap
// (its owner serializes them); several executors of one model, made with
// `createContext`, share the model's kernels, weights and splat constants
// and may run at the same time, each with its own arena and staging.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_EXECUTOR_H
#define KILN_RUNTIME_LIB_EXECUTOR_H

#include "kiln/runtime/ArtifactFormat.h"
#include "kiln/runtime/Model.h"
#include "kiln/runtime/Status.h"

#include <memory>
#include <vector>

namespace kiln {
namespace rt {

/// What one run of a model with symbolic dims adds: the plan written for
/// its dims (`instantiatePlan`), whose buffers and steps the run follows,
/// and the dims' values, which every kernel takes after its pointers. Both
/// null for a static model, which runs the artifact's own plan.
struct RunShape {
  const Artifact *plan = nullptr;
  const std::vector<int64_t> *dims = nullptr;
};

/// Runs the steps of one artifact on some backend.
class Executor {
public:
  /// Releases every resource the executor acquired.
  virtual ~Executor();

  /// Runs the plan once and waits for it; see `Model::run`. Pointers have
  /// been checked for null where the tensor is not empty.
  virtual Status run(const void *const *inputs, void *const *outputs,
                     Memory memory, const RunShape &shape) = 0;

  /// Queues one run on `stream` (a `CUstream`; null is the default stream)
  /// and returns without waiting; see `ExecutionContext::enqueue`.
  virtual Status enqueue(const void *const *inputs, void *const *outputs,
                         void *stream, const RunShape &shape) = 0;

  /// Waits for the runs `enqueue` queued; reports an index fault any of them
  /// had.
  virtual Status synchronize() = 0;

  /// Times `iters` runs on the device after `warmup` untimed ones, the
  /// inputs uploaded once from `hostInputs`; see `Model::timeDeviceRuns`.
  virtual Status timeDeviceRuns(const void *const *hostInputs, unsigned warmup,
                                unsigned iters, std::vector<double> &ms,
                                void *const *hostOutputs,
                                const RunShape &shape) = 0;

  /// A new executor of the same model: it shares this one's read-only state
  /// (loaded once, by whichever of them runs first) and owns its run state,
  /// so that its runs may overlap this one's.
  virtual std::unique_ptr<Executor> createContext() = 0;
};

/// Returns an executor for the CUDA driver backend. It touches no driver
/// until the first `run`, which opens libcuda and cuBLASLt, loads the kernels,
/// allocates the arena and uploads the weights; a failed first run is retried
/// on the next one. `artifact` must outlive the executor; its `weights` are
/// released once uploaded.
std::unique_ptr<Executor> createCudaExecutor(Artifact &artifact,
                                             const CudaOptions &options);

/// Returns an executor for the host backend. The first `run` compiles (or
/// finds in the cache) the artifact's CUDA source for the host and allocates
/// host memory; a failed first run is retried on the next one. `artifact`
/// must outlive the executor.
std::unique_ptr<Executor> createHostExecutor(const Artifact &artifact,
                                             const HostOptions &options);

/// Returns whether the CUDA driver is present and reports a GPU; otherwise
/// sets `why`.
bool cudaDeviceAvailable(std::string &why);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_EXECUTOR_H
