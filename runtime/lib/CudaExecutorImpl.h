//===- CudaExecutorImpl.h - The CUDA backend's shared state -----*- C++ -*-===//
//
// The classes of the CUDA driver backend, shared by its source files. The
// weights and splat constants are uploaded once per model (CudaConstants)
// and shared by its execution contexts; each context has its own stream,
// arena, staging, cuBLASLt handle and workspace, and its own copy of the
// kernels' module (so its own index check flag). A context's first run
// issues the steps one by one; later runs replay them as a CUDA graph
// (CudaGraphs.h). Host-memory I/O goes through page-locked staging, so its
// copies are asynchronous; the only host synchronization of `run` is at its
// end, and `enqueue` has none. Private to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_CUDAEXECUTORIMPL_H
#define KILN_RUNTIME_LIB_CUDAEXECUTORIMPL_H

#include "CublasLt.h"
#include "CudaDriver.h"
#include "CudaGraphs.h"
#include "Executor.h"
#include "GemmCandidates.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace kiln {
namespace rt {
namespace detail {

/// Alignment cuMemAlloc guarantees, and the most cuBLASLt ever asks for.
constexpr uint32_t kMaxAlign = 256;

/// Returns the largest power of two (at most `kMaxAlign`) dividing `value`:
/// the alignment an address or a stride in bytes guarantees.
inline uint32_t alignmentOf(uint64_t value) {
  if (value == 0)
    return kMaxAlign;
  uint64_t lowBit = value & (~value + 1);
  return static_cast<uint32_t>(std::min<uint64_t>(lowBit, kMaxAlign));
}

/// cuBLASLt workspace; NVIDIA recommends 32 MiB on Hopper.
constexpr size_t kWorkspaceBytes = 32u << 20;

/// The cuBLASLt objects of one matmul step, in cuBLAS's column-major terms.
struct MatmulPlan {
  /// Index of the step in the plan.
  size_t step = 0;
  /// The operation: fp32 compute and scale, transposes.
  lt::MatmulDesc desc = nullptr;
  /// Layout of cuBLAS's A, which is the plan's B (see `prepareMatmul`).
  lt::MatrixLayout aLayout = nullptr;
  /// Layout of cuBLAS's B, which is the plan's A.
  lt::MatrixLayout bLayout = nullptr;
  /// Layout of C and D (the same memory).
  lt::MatrixLayout cLayout = nullptr;
  /// Batch strides in bytes, which limit the alignment of later matrices.
  uint64_t strideBytes[3] = {0, 0, 0};

  /// An algorithm chosen for one alignment class of the operand pointers
  /// (cuBLAS's A, B, C order, then the bias).
  struct Choice {
    /// Guaranteed alignments the algorithm was chosen for.
    uint32_t align[4];
    /// The algorithm.
    lt::MatmulAlgo algo;
    /// Whether it won a timing among the heuristic's candidates (else it is
    /// the heuristic's first, until a run can time them).
    bool timed;
  };
  /// Algorithms chosen so far; usually one.
  std::vector<Choice> choices;
  /// Whether cuBLASLt had no algorithm for the step when it was prepared,
  /// which only a step whose kernels take the next launch survives
  /// (MatmulStep::takesNextLaunch): one of them then runs it.
  bool noAlgorithm = false;
};

/// The cuBLASLt objects of every matmul step of one plan; `ofStep` maps a
/// step to its plan.
struct MatmulSet {
  /// One plan per matmul step, in step order.
  std::vector<MatmulPlan> plans;
  /// The index in `plans` of each step; SIZE_MAX for other steps.
  std::vector<size_t> ofStep;
  /// What the plan's steps issue (each step's kind, each launch's kernel,
  /// each matmul's extents and strides), but not the grids or the dims the
  /// kernels take: the set's key and, with the I/O addresses and the
  /// copies' sizes, the run's shape bucket.
  std::vector<cu::DevicePtr> issues;
  /// Whether a run of this shape has issued the steps one by one.
  bool issued = false;
};

/// What the execution contexts of one model share on the device: the
/// weights and the splat constants, uploaded by the first run of any of
/// them, read-only after.
class CudaConstants {
public:
  /// Binds to `artifact`, to live on device `ordinal`; touches no driver
  /// yet.
  CudaConstants(Artifact &artifact, int ordinal)
      : ordinal(ordinal), artifact(artifact) {}
  /// Frees the device memory and releases the primary context.
  ~CudaConstants();

  /// Opens the driver and uploads once; a failure is retried by the next
  /// call. The artifact's host copy of the weights is released after.
  Status ensureUploaded();

  /// The CUDA driver, once `ensureUploaded` has opened it.
  const cu::DriverApi *api = nullptr;
  /// The ordinal of the device the constants live on (CudaOptions::device).
  int ordinal = 0;
  /// The device the constants live on.
  cu::Device device = 0;
  /// The device's primary context, retained until destruction.
  cu::Context context = nullptr;
  /// The weights, laid out as in the artifact; 0 when there are none.
  cu::DevicePtr weights = 0;
  /// Storage of the splat buffers, one per slot of `planSplatSlots`.
  std::vector<cu::DevicePtr> splats;
  /// The slot in `splats` of each buffer id (`SplatSlots::slotOf`).
  std::vector<size_t> splatSlotOf;

private:
  /// Uploads the weights and the splat constants on `stream` and waits.
  Status upload(cu::Stream stream);
  /// Fills each splat slot on the device.
  Status uploadSplats(cu::Stream stream);
  /// Frees the weights and the splats; the context is current.
  void freeMemory();

  /// The model whose constants these are.
  Artifact &artifact;
  /// Serializes the contexts' calls of `ensureUploaded`.
  std::mutex mutex;
  /// Whether the upload has succeeded.
  bool ready = false;
  /// Whether `context` is retained.
  bool hasContext = false;
};

/// The CUDA driver backend; see `createCudaExecutor`. One execution context
/// of a model: its own stream, arena, staging, cuBLASLt state and graphs,
/// sharing the model's `CudaConstants`.
class CudaExecutor : public Executor {
public:
  /// Binds to `artifact`; touches no driver yet.
  CudaExecutor(Artifact &artifact, const CudaOptions &options,
               std::shared_ptr<CudaConstants> constants)
      : artifact(artifact), options(options), constants(std::move(constants)) {}
  /// Releases device resources.
  ~CudaExecutor() override { release(); }

  /// Runs the plan; see `Executor::run`.
  Status run(const void *const *inputs, void *const *outputs, Memory memory,
             const RunShape &shape) override;
  /// Queues one run on the caller's stream; see `Executor::enqueue`.
  Status enqueue(const void *const *inputs, void *const *outputs, void *stream,
                 const RunShape &shape) override;
  /// Waits for the queued runs; see `Executor::synchronize`.
  Status synchronize() override;
  /// Times runs on the device; see `Executor::timeDeviceRuns`.
  Status timeDeviceRuns(const void *const *hostInputs, unsigned warmup,
                        unsigned iters, std::vector<double> &ms,
                        void *const *hostOutputs,
                        const RunShape &shape) override;
  /// A new context sharing this one's constants; see
  /// `Executor::createContext`.
  std::unique_ptr<Executor> createContext() override {
    return std::make_unique<CudaExecutor>(artifact, options, constants);
  }

private:
  /// Opens the driver, retains the primary context and sets the context up;
  /// releases everything on failure.
  Status initialize();
  /// The part of `initialize` that runs with the context current: stream,
  /// events, kernels, arena, cuBLASLt and a static plan's matmuls.
  Status initializeInContext();
  /// Loads the kernels' module, finds its functions and the index check
  /// flag.
  Status loadKernels();
  /// Creates the cuBLASLt objects of the matmul step `stepIndex` in `plan`
  /// and chooses its first algorithm.
  Status prepareMatmul(size_t stepIndex, MatmulPlan &plan);
  /// Points the executor at the run's plan and dims, preparing that plan's
  /// matmuls on first use.
  Status bindRun(const RunShape &shape);
  /// Destroys the cuBLASLt objects of `set` and empties it.
  void destroyMatmuls(MatmulSet &set);
  /// The current run's plan: `runPlan`, or the artifact's own.
  const Artifact &plan() const { return runPlan ? *runPlan : artifact; }
  /// How to time a matmul step's candidates: `call` enqueues one call of
  /// the step with a candidate algorithm on `stream`.
  struct CandidateTiming {
    /// Enqueues one call of the step with the given algorithm.
    std::function<lt::LtStatus(const lt::MatmulAlgo &)> call;
    /// The stream the calls go to.
    cu::Stream stream;
  };
  /// The algorithm for `plan` at `align`: the one chosen before, or the
  /// heuristic's; with `timing`, the fastest of its candidates (timed once
  /// per alignment class).
  Status chooseAlgo(MatmulPlan &plan, const uint32_t align[4],
                    const lt::MatmulAlgo *&algo,
                    const CandidateTiming *timing = nullptr);
  /// The fastest of `candidates` by `timing`, or the first when none can be
  /// timed.
  lt::MatmulAlgo fastestAlgo(const std::vector<lt::MatmulAlgo> &candidates,
                             const CandidateTiming &timing);
  /// Sets the epilogue's bias pointer of `plan` to `bias`, if it has one.
  Status setBiasPointer(MatmulPlan &plan, cu::DevicePtr bias);
  /// Device buffers for host-memory I/O, each with a page-locked host
  /// mirror so that the copies between them are asynchronous DMA.
  struct Staging {
    /// The device buffer of each tensor; 0 for an empty one.
    std::vector<cu::DevicePtr> device;
    /// The page-locked host mirror of each; null for an empty one.
    std::vector<void *> pinned;
  };
  /// Allocates `staging` for the buffers `ids` unless it already is.
  Status ensureStaging(Staging &staging, const std::vector<uint32_t> &ids);
  /// Frees `staging` and empties it.
  void freeStaging(Staging &staging);
  /// Copies the host inputs into the input staging and queues their upload.
  Status stageInputs(const void *const *inputs);
  /// Queues the copies of the outputs (`out`, one device pointer each)
  /// into the output staging's mirrors.
  Status queueOutputCopies(const std::vector<cu::DevicePtr> &out);
  /// Sets the context up at its first run (or after a failed one).
  Status ensureReady();
  /// Makes `target` wait for the previous run of this context.
  Status waitForLastRun(cu::Stream target);
  /// Issues the plan's steps on `target`: one by one, or as a CUDA graph.
  Status launchPlan(const std::vector<cu::DevicePtr> &in,
                    const std::vector<cu::DevicePtr> &out, cu::Stream target);
  /// The run's shape bucket: its I/O addresses, what its steps issue
  /// (MatmulSet::issues) and the sizes of its copies.
  GraphCache::Key bucketOf(const std::vector<cu::DevicePtr> &in,
                           const std::vector<cu::DevicePtr> &out) const;
  /// Issues the plan's steps on `target` one by one; while a graph
  /// captures them, with `nodes`, records the node of each launch step
  /// (GraphCache::IssueFn).
  Status issueSteps(const std::vector<cu::DevicePtr> &in,
                    const std::vector<cu::DevicePtr> &out, cu::Stream target,
                    std::vector<cu::GraphNode> *nodes = nullptr);
  /// The argument values of launch step `l` (its buffers' addresses, then
  /// the run's dims) and the pointers to them that cuLaunchKernel takes.
  void launchArguments(const LaunchStep &l,
                       const std::vector<cu::DevicePtr> &in,
                       const std::vector<cu::DevicePtr> &out,
                       std::vector<cu::DevicePtr> &values,
                       std::vector<void *> &pointers) const;
  /// Gives the launch nodes of `exec` (captured in this run's bucket, now
  /// holding `heldDims`) that depend on a dim that changed this run's grids
  /// and arguments (GraphCache::UpdateFn).
  Status updateLaunchNodes(cu::GraphExec exec,
                           const std::vector<cu::GraphNode> &nodes,
                           const GraphCache::Key &heldDims,
                           const std::vector<cu::DevicePtr> &in,
                           const std::vector<cu::DevicePtr> &out);
  /// Issues matmul step `index` (`plan`'s) as cuBLASLt calls, one per
  /// repetition of its inner batch, each with the algorithm chooseAlgo
  /// gives for its operands' alignment.
  Status issueCublasMatmul(size_t index, MatmulPlan &plan,
                           const std::vector<cu::DevicePtr> &in,
                           const std::vector<cu::DevicePtr> &out,
                           cu::Stream target);
  /// Launches matmul step `index` (`m`, at this run's extents) on Kiln's
  /// GEMM kernel `candidate` (and its reduce), on `target`.
  Status launchGemmKernel(size_t index, const MatmulStep &m,
                          const GemmCandidate &candidate,
                          const std::vector<cu::DevicePtr> &in,
                          const std::vector<cu::DevicePtr> &out,
                          cu::Stream target);
  /// Encodes the tensor maps of A (at `a`) and B (at `b`) that candidate
  /// `g` of `m` takes, through the driver (TensorMaps.h).
  Status encodeTensorMaps(const MatmulStep &m, const GemmCandidate &g,
                          cu::DevicePtr a, cu::DevicePtr b,
                          std::array<cu::TensorMap, 2> &maps);
  /// Launches the finish kernel of matmul step `index` (`m`), which
  /// applies GELU's exact form to the product cuBLASLt left, or widens it
  /// into C.
  Status launchFinishKernel(size_t index, const MatmulStep &m,
                            const std::vector<cu::DevicePtr> &in,
                            const std::vector<cu::DevicePtr> &out,
                            cu::Stream target);
  /// Launches `kernel` of step `index` on `blocks` one-dimensional blocks of
  /// `threads` with `sharedBytes` of dynamic shared memory and `args` (its
  /// launch arguments), on `target`.
  Status launchStepKernel(size_t index, uint32_t kernel,
                          std::vector<void *> &args, uint32_t blocks,
                          uint32_t threads, uint32_t sharedBytes,
                          cu::Stream target);
  /// Launches launch step `index` of the plan on its arguments and the
  /// run's dims, on `target`.
  Status launchPlanStep(size_t index, const std::vector<cu::DevicePtr> &in,
                        const std::vector<cu::DevicePtr> &out,
                        cu::Stream target);
  /// Launches the norm kernel of matmul step `index` (`m`), which
  /// normalizes the rows as cuBLASLt left them.
  Status launchNormKernel(size_t index, const MatmulStep &m,
                          const std::vector<cu::DevicePtr> &in,
                          const std::vector<cu::DevicePtr> &out,
                          cu::Stream target);
  /// Which of Kiln's GEMM kernels runs matmul step `index` (`plan`'s), or
  /// null for cuBLASLt: the one `options.gemm` names; with
  /// kTimedGemmKernels, the fastest of cuBLASLt's choice and each kernel
  /// that fits the operands, timed on them at the first run that can (per
  /// shape and alignment, as chooseAlgo times cuBLASLt's candidates).
  Status chooseGemmKernel(size_t index, MatmulPlan &plan,
                          const std::vector<cu::DevicePtr> &in,
                          const std::vector<cu::DevicePtr> &out,
                          cu::Stream target, const GemmCandidate *&kernel);
  /// Milliseconds of `calls` enqueueings of `call` on `target` between two
  /// events, after one untimed.
  Status timeCalls(cu::Stream target, const std::function<Status()> &call,
                   int calls, float &ms);
  /// Queues the copy of the kernels' index flag into indexFlagMirror.
  Status queueIndexFlagRead();
  /// The error of the index flag's value `fault` (clearing the flag), or
  /// success when it is 0.
  Status takeIndexFault(unsigned fault);
  /// The device address of buffer `id`, with the run's inputs `in` and
  /// outputs `out`.
  cu::DevicePtr address(uint32_t id, const std::vector<cu::DevicePtr> &in,
                        const std::vector<cu::DevicePtr> &out) const;
  /// Where cuBLASLt leaves matmul step `m`'s product with its epilogue: the
  /// sum a norm also writes, the widened product's scratch, else C.
  cu::DevicePtr productAddress(const MatmulStep &m,
                               const std::vector<cu::DevicePtr> &in,
                               const std::vector<cu::DevicePtr> &out) const;
  /// Frees everything this context holds and releases the primary context.
  void release();

  /// The model; its weights are released once uploaded.
  Artifact &artifact;
  /// The backend's options.
  const CudaOptions options;
  /// The model's weights and splat constants, shared by its contexts.
  std::shared_ptr<CudaConstants> constants;
  /// The CUDA driver, once `initialize` has opened it.
  const cu::DriverApi *api = nullptr;
  /// cuBLASLt, opened when the plan has a matmul.
  const lt::LtApi *ltApi = nullptr;
  /// Whether `initialize` has succeeded.
  bool ready = false;
  /// Whether `context` is retained.
  bool hasContext = false;
  /// The device this context runs on.
  cu::Device device = 0;
  /// The device's primary context.
  cu::Context context = nullptr;
  /// The context's own non-blocking stream.
  cu::Stream stream = nullptr;
  /// The kernels' module.
  cu::Module module = nullptr;
  /// The module's functions, by kernel index.
  std::vector<cu::Function> functions;
  /// The kernels' `kiln_index_error` flag; 0 without index checks.
  cu::DevicePtr indexError = 0;
  /// The plan's arena.
  cu::DevicePtr arena = 0;
  /// cuBLASLt's workspace (`kWorkspaceBytes`).
  cu::DevicePtr workspace = 0;
  /// The split-K partial sums of the Kiln GEMM kernel `options.gemm` names,
  /// sized for its largest step at the top of the dims' ranges; 0 when no
  /// step splits.
  cu::DevicePtr gemmPartials = 0;
  /// The 16-bit products that widened steps leave after cuBLASLt
  /// (widenedProductElements), sized for the largest; 0 when none does.
  cu::DevicePtr widenScratch = 0;
  /// The cuBLASLt handle.
  lt::Handle ltHandle = nullptr;
  /// The matmul plans per shape of the steps (MatmulSet::issues): one for
  /// a static model, one for every token of a decoding loop.
  std::map<std::vector<cu::DevicePtr>, MatmulSet> matmulSets;
  /// The timed winners by matmul shape and alignment (tunedKey), shared by
  /// the plans of every set of dims: a decoding loop, whose dims change
  /// every token while its matmuls keep their shapes, times each once.
  std::map<std::vector<int64_t>, lt::MatmulAlgo> tunedAlgos;
  /// With kTimedGemmKernels, the timed winners by the same key: the index
  /// of Kiln's GEMM kernel in the step's candidates, or -1 for cuBLASLt.
  std::map<std::vector<int64_t>, int> tunedKernels;
  /// The current run's set.
  MatmulSet *matmuls = nullptr;
  /// The shape buckets (bucketOf) whose steps a run has issued one by one:
  /// their kernels are loaded and their matmuls timed, so a run at new dims
  /// in one of them can be captured at once.
  std::set<GraphCache::Key> issuedBuckets;
  /// The current run's plan (the artifact's own for a static model) and its
  /// dims' values, which every kernel takes after its pointers.
  /// `runPlan` is valid during the run only (the Model's cache owns it);
  /// the dims are copied.
  const Artifact *runPlan = nullptr;
  /// The current run's dims' values (see `runPlan`).
  std::vector<int64_t> runDims;
  /// Staging of the host-memory inputs.
  Staging inputStaging;
  /// Staging of the host-memory outputs.
  Staging outputStaging;
  /// Page-locked word the index check flag is read into.
  unsigned *indexFlagMirror = nullptr;
  /// Recorded at the end of every run on the stream it ran on: the next
  /// run, on whatever stream, waits for it before it reuses the arena.
  cu::Event lastRun = nullptr;
  /// Whether `lastRun` has been recorded.
  bool lastRunRecorded = false;
  /// Recorded on the legacy default stream by a synchronous device-memory
  /// run, so that it reads inputs the caller wrote there.
  cu::Event inputsReady = nullptr;
  /// Set while a graph capture records the steps.
  bool capturing = false;
  /// Set when a capture failed: this context issues its steps one by one.
  bool graphsFailed = false;
  /// Set once this context has said that its graphs are not updated in
  /// place (CudaSteps.cpp).
  bool warnedInPlace = false;
  /// Set when updating a graph in place failed: this context captures
  /// runs at new dims instead.
  bool updatesFailed = false;
  /// The context's executable graphs.
  GraphCache graphs;
};

} // namespace detail
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_CUDAEXECUTORIMPL_H
