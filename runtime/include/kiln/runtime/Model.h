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
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

class Executor;
class Model;

/// Which backend executes a model; same values as `kiln_backend`.
enum class Backend : uint8_t {
  Auto, ///< CUDA when a driver and a GPU are present, else Host.
  Cuda, ///< The CUDA driver API and cuBLASLt, opened with dlopen.
  Host, ///< The generated kernels compiled for and run on the CPU.
};

/// Settings of the host backend.
struct HostOptions {
  /// Seeds the order in which the emulated threads of a block run between
  /// barriers; a kernel that lacks a barrier fails under some seeds.
  uint64_t seed = 0;
  /// Checking mode: every planned buffer in its own allocation, the kernels
  /// built with AddressSanitizer (which must be loaded in the process), so
  /// an out-of-bounds access stops the run with a report.
  bool checking = false;
  /// The kernel every matmul step runs: empty for the CPU GEMM that stands
  /// in for cuBLASLt, else the name of one of Kiln's GEMM kernels
  /// (`kilnc --report` lists each step's), which every matmul step must
  /// offer, so that a test runs that kernel's generated code.
  std::string gemm;

  /// Reads KILN_HOST_SEED, KILN_HOST_CHECK (1 enables it) and
  /// KILN_GEMM_KERNEL, as the C ABI does; unset or unparsable variables
  /// leave the defaults.
  static HostOptions fromEnvironment();
};

/// Settings of the CUDA backend.
struct CudaOptions {
  /// Replays each context's plan as a CUDA graph after the first run of
  /// each shape's steps (a few graphs kept, one per shape bucket: the same
  /// I/O addresses, kernels, matmul shapes and copy sizes, at any dims);
  /// off, every run issues its steps one by one, which profilers and
  /// debuggers show more plainly.
  bool graphs = true;

  /// With `graphs`: a run at new dims in a bucket that has a graph gives
  /// that graph's launches the new grids and dims in place
  /// (runtime/lib/CudaGraphs.h); off, it is captured again and updates the
  /// least recently used graph whole (how every run at new dims went
  /// before, kept to compare the two on a GPU).
  bool graphUpdates = true;

  /// Times several cuBLASLt candidates for each matmul at its first run (per
  /// shape and operand alignment) and keeps the fastest; off, the
  /// heuristic's first choice runs, the same algorithm in every process
  /// (results bit for bit reproducible across processes: candidates may
  /// split the sums differently).
  bool tuneMatmuls = true;

  /// The kernel every matmul step runs: empty for cuBLASLt's algorithms
  /// (timed as tuneMatmuls says); "timed" for the fastest of cuBLASLt's
  /// choice and each of Kiln's GEMM kernels that fits the operands, timed
  /// on them at the first run (with tuneMatmuls); else the name of one of
  /// Kiln's GEMM kernels, which every matmul step must offer. Empty by
  /// default until the family's GPU tests have passed on a GPU: Kiln's
  /// kernels have run only on the host backend's emulation so far. A step
  /// whose kernels take the launch after it too (an FP8 Q/DQ product's,
  /// GemmCandidate::withNextLaunch) times them against cuBLASLt and that
  /// launch even when empty.
  std::string gemm;

  /// Launches each Kiln kernel as a programmatic dependent launch: it may
  /// start while the kernel before it finishes, and waits for that kernel
  /// itself first thing (kiln_pdl_enter, in every kernel since artifact
  /// format 11), so that launch latency hides behind the kernel ahead, in
  /// CUDA graphs too. Off by default until timed on a GPU.
  bool pdl = false;

  /// The ordinal of the device the model runs on, among those
  /// CUDA_VISIBLE_DEVICES exposes: a server places one model per GPU (the
  /// C ABI's models run on device 0).
  int device = 0;

  /// Reads KILN_CUDA_GRAPHS, KILN_CUDA_GRAPH_UPDATES and KILN_TUNE_MATMULS
  /// (0 disables each),
  /// KILN_GEMM_KERNEL and KILN_PDL (1 enables it), as the C ABI does; unset
  /// or other values leave the defaults.
  static CudaOptions fromEnvironment();
};

/// Where the tensors passed to `Model::run` live; same values as
/// `kiln_memory`.
enum class Memory : uint8_t {
  Host,   ///< Ordinary host memory.
  Device, ///< CUDA device pointers (`CUdeviceptr` values cast to pointers).
};

/// Returns "auto", "cuda" or "host".
const char *backendName(Backend backend);

/// One execution context of a model: its own arena and staging (and, on the
/// CUDA backend, its own stream and cuBLASLt workspace), sharing the model's
/// kernels and weights. Contexts of one model may run at the same time, one
/// run per context at a time; the model must outlive its contexts.
class ExecutionContext {
public:
  ~ExecutionContext();
  ExecutionContext(const ExecutionContext &) = delete;
  ExecutionContext &operator=(const ExecutionContext &) = delete;

  /// Runs the plan once on this context and waits for it; see `Model::run`.
  /// Calls on one context are serialized; calls on different contexts run
  /// concurrently.
  Status run(const void *const *inputs, void *const *outputs, Memory memory);
  /// Runs at the dims' `dims` (a model with symbolic dims; see
  /// `Model::run`).
  Status run(const std::vector<int64_t> &dims, const void *const *inputs,
             void *const *outputs, Memory memory);

  /// Queues one run on the caller's CUDA stream `stream` (a `CUstream` or
  /// `cudaStream_t`; null is the default stream) and returns without
  /// waiting. The tensors are device memory; the run reads the inputs after
  /// the work queued before it on `stream`, and work queued on `stream`
  /// after it sees the outputs. Runs of one context are ordered among
  /// themselves whatever streams they use, since they share the arena. An
  /// out-of-range index is reported by `synchronize`. On the host backend the
  /// tensors are host memory, `stream` is ignored and the run is over when
  /// the call returns, with its status.
  Status enqueue(const void *const *inputs, void *const *outputs, void *stream);
  /// Queues one run at the dims' `dims` (a model with symbolic dims).
  Status enqueue(const std::vector<int64_t> &dims, const void *const *inputs,
                 void *const *outputs, void *stream);

  /// Waits until this context's queued runs are done and reports an index
  /// fault any of them had (then clears it).
  Status synchronize();

private:
  friend class Model;
  ExecutionContext(Model &model, std::unique_ptr<Executor> executor);

  Model &model;
  std::unique_ptr<Executor> executor;
  std::mutex runMutex;
};

/// A compiled model bound to a backend. The device is set up lazily by the
/// first `run`, so a model can be created and inspected without a GPU. Runs
/// of `run` are serialized by an internal lock (one default context); for
/// concurrent runs, create an ExecutionContext per thread. A failed run
/// leaves the model usable.
class Model {
public:
  /// Creates a model for `artifact` (validated again here) on `backend`.
  /// `Auto` picks CUDA when the driver finds a GPU and otherwise the host
  /// backend, saying so once on stderr. Fails with `InvalidArgument` /
  /// `CorruptArtifact` for bad arguments.
  static Status create(Artifact artifact, Backend backend,
                       std::unique_ptr<Model> &out,
                       const HostOptions &hostOptions = HostOptions(),
                       const CudaOptions &cudaOptions = CudaOptions());

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

  /// The named dims of a model compiled with symbolic dims, each with its
  /// range (in the order `bindDims` and `run` take their values); empty for
  /// a static model.
  const std::vector<DimRange> &dims() const { return plan.symbolic.dims; }
  /// Learns the dims' values from the inputs' shapes, one shape per input,
  /// and checks every input dim against them and the ranges. Fails with
  /// `InvalidArgument` naming the input, dim and size that do not fit.
  Status bindDims(const std::vector<std::vector<int64_t>> &inputShapes,
                  std::vector<int64_t> &dims) const;
  /// The shape of input `index` at the dims' `dims`.
  std::vector<int64_t> inputShape(size_t index,
                                  const std::vector<int64_t> &dims) const;
  /// The shape of output `index` at the dims' `dims`.
  std::vector<int64_t> outputShape(size_t index,
                                   const std::vector<int64_t> &dims) const;
  /// Runs at the dims' values `dims` (from `bindDims`, or each in its
  /// range): the tensors have the shapes `inputShape` and `outputShape`
  /// give for them. A static model takes no dims. The plan for each set of
  /// values is written once and kept (a few hundred at most).
  Status run(const std::vector<int64_t> &dims, const void *const *inputs,
             void *const *outputs, Memory memory);
  /// Queues one run at the dims' `dims` on the caller's CUDA stream
  /// `stream` and returns without waiting, as `ExecutionContext::enqueue`
  /// does, in the model's own arena: runs and queued runs of the model are
  /// ordered among themselves. On the host backend the run is over when the
  /// call returns.
  Status enqueue(const std::vector<int64_t> &dims, const void *const *inputs,
                 void *const *outputs, void *stream);
  /// Waits until the model's queued runs are done and reports an index
  /// fault any of them had (then clears it).
  Status synchronize();

  /// Times runs as the GPU sees them: the inputs are uploaded once from
  /// `hostInputs` into device memory, then `warmup` untimed runs, then
  /// `iters` runs each between two CUDA events on the model's stream, waited
  /// for one at a time (latency, not throughput); `ms` receives the times in
  /// milliseconds. With `hostOutputs` (one host pointer per output), the
  /// outputs of the last timed run are copied there after the timing, so
  /// that what was timed is what is checked; without, they stay on the
  /// device. An output kept in an input's storage (`output_alias`) is
  /// that input's device buffer, as a decoding loop passes its cache: every
  /// run writes the same new rows into it. CUDA backend only (`Unsupported`
  /// on the host backend, which has no GPU clock).
  Status timeDeviceRuns(const void *const *hostInputs, unsigned warmup,
                        unsigned iters, std::vector<double> &ms,
                        void *const *hostOutputs = nullptr);
  /// Times runs at the dims' `dims` (a model with symbolic dims; see
  /// `run`).
  Status timeDeviceRuns(const std::vector<int64_t> &dims,
                        const void *const *hostInputs, unsigned warmup,
                        unsigned iters, std::vector<double> &ms,
                        void *const *hostOutputs = nullptr);

  /// Creates an execution context for concurrent runs (see
  /// ExecutionContext); its resources are allocated by its first run.
  Status createContext(std::unique_ptr<ExecutionContext> &out);

  /// Returns the number of graph inputs.
  size_t numInputs() const { return plan.inputs.size(); }
  /// Returns the number of graph outputs.
  size_t numOutputs() const { return plan.outputs.size(); }
  /// Returns the canonical buffer of graph input `index` (< numInputs()); for
  /// a model with symbolic dims, its shape at the top of their ranges.
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

  /// Whether the model keeps a plan written for `dims` (for tests: a model
  /// keeps the plans of the eight dims its runs used last).
  bool keepsPlanFor(const std::vector<int64_t> &dims) const;
  /// Returns the backend that runs the model: Cuda or Host (Auto resolved).
  Backend backend() const { return selectedBackend; }
  /// Returns the ordinal of the GPU the model runs on (CudaOptions::device;
  /// 0 on the host backend).
  int device() const { return deviceOrdinal; }
  /// Returns a one-line summary: Kiln version, arch, model hash, arena size.
  std::string info() const;

private:
  friend class ExecutionContext;
  /// Use `create`.
  Model(Artifact artifact, Backend backend);
  /// Checks the input pointers of a run (with `shaped`'s sizes when given).
  Status checkInputs(const void *const *inputs,
                     const Artifact *shaped = nullptr) const;
  /// Checks the arguments of a run; see `run`.
  Status checkRunArguments(const void *const *inputs, void *const *outputs,
                           Memory memory,
                           const Artifact *shaped = nullptr) const;
  /// Queues one run on `executor` (the model's or a context's, whose runs
  /// `mutex` serializes) on the caller's `stream`; see `enqueue`.
  Status enqueueOn(Executor &executor, std::mutex &mutex,
                   const std::vector<int64_t> &dims, const void *const *inputs,
                   void *const *outputs, void *stream);
  /// The plan of a run at `dims` (none for a static model, which takes no
  /// dims), written and validated on first use.
  Status shapedPlan(const std::vector<int64_t> &dims,
                    std::shared_ptr<const Artifact> &plan);
  /// shapedPlan, and the arguments checked against it.
  Status prepareRun(const std::vector<int64_t> &dims, const void *const *inputs,
                    void *const *outputs, Memory memory,
                    std::shared_ptr<const Artifact> &plan);

  /// The plan; see `artifact()`.
  Artifact plan;
  /// The backend that runs the model.
  Backend selectedBackend;
  /// The GPU the CUDA backend runs on.
  int deviceOrdinal = 0;
  /// Why `Auto` chose the host backend; empty otherwise.
  std::string fallbackReason;
  /// The options of the chosen backend, in words, for info().
  std::string optionsText;
  /// Runs the plan on the chosen backend.
  std::unique_ptr<Executor> executor;
  /// Serializes runs: the arena and stream are shared by all of them.
  std::mutex runMutex;
  /// A plan written for the dims a run used, and when a run last took it.
  struct ShapedPlan {
    std::shared_ptr<const Artifact> plan;
    uint64_t lastUse = 0;
  };
  /// The plans written for the dims runs used, their clock of uses, and
  /// their lock (contexts share them).
  std::map<std::vector<int64_t>, ShapedPlan> shapedPlans;
  uint64_t shapedPlanUses = 0;
  mutable std::mutex shapedPlansMutex;
};

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_MODEL_H
