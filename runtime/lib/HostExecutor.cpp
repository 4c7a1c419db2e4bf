//===- HostExecutor.cpp - Run a plan on the CPU ---------------------------===//
//
// The host backend: launches run the artifact's own CUDA source compiled for
// the host (HostModule) under the fiber launcher (HostLauncher), matmuls run
// as a CPU GEMM (HostGemm), copies as copies. Inputs and outputs are staged
// in aligned buffers, as the CUDA backend stages them in device memory.
//
// The kernel module, the weights and the splat constants are loaded once
// per model (HostShared) and shared by its execution contexts; each context
// has its own staging, arena and fiber launcher, and the kernels' index
// check flag is per thread, so contexts run at the same time on different
// threads.
//
// Storage, in the normal mode, is laid out as on the GPU: one arena at the
// planned offsets and one weights block. In the checking mode every planned
// buffer gets its own allocation, exactly its size, so AddressSanitizer (in
// the process, and compiled into the kernels) reports an access one element
// past any buffer. Buffers with the same offset and size share storage (they
// are views of one tensor, or reuse it). In both modes the arena and the
// outputs are filled with 0xff bytes before every run: a read of memory no
// step wrote yields NaN for floats and -1 for integers, which the comparison
// with the reference then shows.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"
#include "GemmCandidates.h"
#include "HostGemm.h"
#include "HostLauncher.h"
#include "HostModule.h"
#include "TensorMaps.h"
#include "kiln/runtime/SplatStorage.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

using namespace kiln::rt;
using namespace kiln::rt::host;

namespace {

/// Alignment of every allocation, as cuMemAlloc gives.
constexpr size_t kAlign = 256;

/// The byte every run fills unwritten memory with.
constexpr int kPoison = 0xff;

/// An aligned heap allocation of exactly `bytes` bytes (at least one).
class Allocation {
public:
  Allocation() = default;
  Allocation(Allocation &&other) noexcept
      : data(std::exchange(other.data, nullptr)), size(other.size) {}
  Allocation &operator=(Allocation &&other) noexcept {
    std::swap(data, other.data);
    std::swap(size, other.size);
    return *this;
  }
  ~Allocation() { std::free(data); }

  /// Allocates; false when out of memory.
  bool allocate(size_t bytes) {
    size = bytes;
    // posix_memalign takes any size, so the allocation ends exactly at the
    // buffer's end and AddressSanitizer's redzone starts right after it.
    return posix_memalign(&data, kAlign, bytes ? bytes : 1) == 0;
  }
  void poison() { std::memset(data, kPoison, size); }

  void *data = nullptr;
  size_t size = 0;
};

/// Allocates `a`, or says what ran out.
Status allocate(Allocation &a, size_t bytes, const std::string &what) {
  if (a.allocate(bytes))
    return Status::ok();
  return Status::error(StatusCode::Internal,
                       "out of host memory allocating " + what + " (" +
                           std::to_string(bytes) + " bytes)");
}

/// What the execution contexts of one model share, loaded by the first run
/// of any of them and read-only after: the kernels, the weights and the
/// splat constants.
class HostShared {
public:
  HostShared(const Artifact &artifact, const HostOptions &options)
      : artifact(artifact), options(options) {}

  /// Loads everything once; later calls return the first outcome's state
  /// (a failure is retried).
  Status ensureLoaded();

  const KernelModule *kernels() const { return module.get(); }
  /// Address of weight or splat buffer `id` once loaded.
  char *constantAddress(size_t id) const { return constants[id]; }

private:
  Status load();

  const Artifact &artifact;
  const HostOptions options;
  std::mutex mutex;
  bool ready = false;
  std::unique_ptr<KernelModule> module;
  /// Weight storage: one block, or one per distinct buffer in the checking
  /// mode.
  std::vector<Allocation> weights;
  /// Storage of the splat buffers, one per slot of `planSplatSlots`.
  std::vector<Allocation> splats;
  /// Address of each weight and splat buffer id (null for the others).
  std::vector<char *> constants;
};

/// The host backend; see `createHostExecutor`. One per execution context.
class HostExecutor : public Executor {
public:
  HostExecutor(const Artifact &artifact, const HostOptions &options,
               std::shared_ptr<HostShared> shared)
      : artifact(artifact), options(options), shared(std::move(shared)),
        launcher(options.checking ? 256 << 10 : 64 << 10) {}

  Status run(const void *const *inputs, void *const *outputs, Memory memory,
             const RunShape &shape) override;
  /// There is no stream on the host: the run is over when this returns.
  Status enqueue(const void *const *inputs, void *const *outputs, void *,
                 const RunShape &shape) override {
    return run(inputs, outputs, Memory::Host, shape);
  }
  /// Nothing is ever pending; `enqueue` reported each run's status.
  Status synchronize() override { return Status::ok(); }
  Status timeDeviceRuns(const void *const *, unsigned, unsigned,
                        std::vector<double> &, void *const *,
                        const RunShape &) override {
    return Status::error(StatusCode::Unsupported,
                         "timing with CUDA events needs the CUDA backend; "
                         "the host backend has no GPU clock");
  }
  std::unique_ptr<Executor> createContext() override {
    return std::make_unique<HostExecutor>(artifact, options, shared);
  }

private:
  Status initialize();
  /// Allocates the staging and arena storage of `plan`'s buffers.
  Status bindStorage(const Artifact &plan);
  Status runSteps(const Artifact &plan, const std::vector<int64_t> &dims);
  /// Runs matmul step `index` of `plan` (at this run's `dims`) on the Kiln
  /// GEMM kernel `options.gemm` names, under the fiber launcher; `tookNext`
  /// says whether it ran the launch step after it too (on that launch's
  /// arguments: GemmCandidate::withNextLaunch).
  Status runGemmKernel(const Artifact &plan, size_t index,
                       const std::vector<int64_t> &dims, bool &tookNext);
  /// Runs the norm kernel of matmul step `index` (`m`) over C's rows as
  /// the stand-in for cuBLASLt left them.
  Status runNormKernel(const MatmulStep &m, size_t index);
  /// Runs the finish kernel of matmul step `index` (`m`) over the product
  /// the stand-in for cuBLASLt left (productAddress).
  Status runFinishKernel(const MatmulStep &m, size_t index);
  /// Runs `kernel` of step `index` on `blocks` one-dimensional blocks of
  /// `threads` with `args` (its launch arguments), under the fiber
  /// launcher.
  Status runStepKernel(uint32_t kernel, std::vector<void *> &args,
                       uint32_t blocks, uint32_t threads, size_t index);
  /// Where the stand-in for cuBLASLt leaves step `m`'s product with its
  /// epilogue: the sum a norm also writes, the widened product's scratch
  /// (sized for `m` first), else C.
  void *productAddress(const MatmulStep &m);

  const Artifact &artifact;
  HostOptions options;
  std::shared_ptr<HostShared> shared;
  Launcher launcher;
  bool ready = false;
  /// Input and output staging, one per graph input/output, of its size at
  /// the top of the dims' ranges.
  std::vector<Allocation> inputs, outputs;
  /// Arena storage: one block, or one per distinct buffer.
  std::vector<Allocation> arena;
  /// Address of each buffer id.
  std::vector<char *> address;
  /// The dims the storage was allocated for in the checking mode, where each
  /// buffer of a symbolic plan gets exactly its size at the run's dims, so
  /// that AddressSanitizer sees its end there; otherwise storage is sized
  /// for the top of the ranges once.
  std::vector<int64_t> storageDims;
  /// The partial sums of a split GEMM kernel (or of any on a step with a
  /// norm, with the norm's statistics).
  std::vector<float> partials;
  /// A widened step's 16-bit product after the stand-in for cuBLASLt.
  std::vector<unsigned char> widenProduct;
};

} // namespace

std::unique_ptr<Executor>
kiln::rt::createHostExecutor(const Artifact &artifact,
                             const HostOptions &options) {
  return std::make_unique<HostExecutor>(
      artifact, options, std::make_shared<HostShared>(artifact, options));
}

Status HostShared::ensureLoaded() {
  std::lock_guard<std::mutex> lock(mutex);
  if (ready)
    return Status::ok();
  Status s = load();
  if (!s.isOk()) {
    module.reset();
    weights.clear();
    splats.clear();
    return s;
  }
  ready = true;
  return s;
}

Status HostShared::load() {
  // A plan of copies and matmuls needs no compiler.
  if (!artifact.kernelNames.empty())
    if (Status s = loadKernelModule(artifact, options.checking, module);
        !s.isOk())
      return s;
  for (size_t i = 0; i < artifact.steps.size(); ++i) {
    const Step &step = artifact.steps[i];
    if (step.kind == Step::Kind::Matmul) {
      for (const GemmCandidate &g : step.matmul.kernels) {
        // One that takes the next launch takes that launch's arguments
        // (validation put a launch there).
        unsigned arity =
            g.withNextLaunch
                ? module->arity(artifact.steps[i + 1].launch.kernel)
                : gemmKernelArity(step.matmul, g);
        if (module->arity(g.kernel) != arity)
          return Status::error(
              StatusCode::CorruptArtifact,
              "step " + std::to_string(i) + ": GEMM kernel " + g.name +
                  " does not take the " +
                  (g.withNextLaunch ? "next launch's" : "family's") +
                  " arguments");
      }
      if (step.matmul.finishKernel != kNoKernel &&
          module->arity(step.matmul.finishKernel) != kGemmFinishArity)
        return Status::error(StatusCode::CorruptArtifact,
                             "step " + std::to_string(i) +
                                 ": the finish kernel does not take the "
                                 "family's arguments");
      if (step.matmul.hasNorm() &&
          module->arity(step.matmul.normKernel) != kGemmNormArity)
        return Status::error(StatusCode::CorruptArtifact,
                             "step " + std::to_string(i) +
                                 ": the norm kernel does not take the "
                                 "family's arguments");
    }
    if (step.kind != Step::Kind::Launch)
      continue;
    unsigned arity = module->arity(step.launch.kernel);
    if (arity != step.launch.args.size() + artifact.symbolic.dims.size())
      return Status::error(
          StatusCode::CorruptArtifact,
          "step " + std::to_string(i) + ": kernel " +
              artifact.kernelNames[step.launch.kernel] + " takes " +
              std::to_string(arity) + " arguments, the plan passes " +
              std::to_string(step.launch.args.size()) + " pointers and " +
              std::to_string(artifact.symbolic.dims.size()) + " dims");
  }

  // Weights: the whole block, or one allocation per distinct (offset, size)
  // in the checking mode.
  constants.assign(artifact.buffers.size(), nullptr);
  if (!options.checking) {
    weights.resize(1);
    if (Status s = allocate(weights[0], artifact.weightBytes(), "the weights");
        !s.isOk())
      return s;
    if (artifact.weightBytes() != 0)
      std::memcpy(weights[0].data, artifact.weightData(),
                  artifact.weightBytes());
  }
  std::map<std::pair<uint64_t, uint64_t>, size_t> weightSlot;
  SplatSlots splatSlots = planSplatSlots(artifact, options.checking);
  splats.resize(splatSlots.slots.size());
  for (size_t i = 0; i < splats.size(); ++i) {
    const SplatSlots::Slot &slot = splatSlots.slots[i];
    if (Status s = allocate(splats[i], slot.bytes, "a splat constant");
        !s.isOk())
      return s;
    fillSplat(slot, static_cast<char *>(splats[i].data));
  }
  for (size_t id = 0; id < artifact.buffers.size(); ++id) {
    const Buffer &b = artifact.buffers[id];
    if (b.kind == BufferKind::Splat) {
      constants[id] = static_cast<char *>(splats[splatSlots.slotOf[id]].data);
      continue;
    }
    if (b.kind != BufferKind::Weight)
      continue;
    if (!options.checking) {
      constants[id] = static_cast<char *>(weights[0].data) + b.offset;
      continue;
    }
    auto [it, inserted] =
        weightSlot.insert({{b.offset, b.bytes}, weights.size()});
    if (inserted) {
      weights.emplace_back();
      if (Status s = allocate(weights.back(), b.bytes, "buffer " + b.name);
          !s.isOk())
        return s;
      std::memcpy(weights.back().data, artifact.weightData() + b.offset,
                  b.bytes);
    }
    constants[id] = static_cast<char *>(weights[it->second].data);
  }
  return Status::ok();
}

Status HostExecutor::initialize() {
  if (Status s = shared->ensureLoaded(); !s.isOk())
    return s;
  if (Status s = bindStorage(artifact); !s.isOk())
    return s;
  ready = true;
  return Status::ok();
}

Status HostExecutor::bindStorage(const Artifact &plan) {
  // One staging buffer per graph input and output, of its canonical size.
  auto stage = [&](std::vector<Allocation> &pool,
                   const std::vector<uint32_t> &ids,
                   const char *what) -> Status {
    pool.clear();
    pool.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i)
      if (Status s = allocate(pool[i], plan.buffers[ids[i]].bytes,
                              what + std::to_string(i));
          !s.isOk())
        return s;
    return Status::ok();
  };
  if (Status s = stage(inputs, plan.inputs, "input "); !s.isOk())
    return s;
  if (Status s = stage(outputs, plan.outputs, "output "); !s.isOk())
    return s;

  // Arena storage, keyed by (offset, size) in the checking mode and one
  // block otherwise.
  std::map<std::pair<uint64_t, uint64_t>, size_t> arenaSlot;
  arena.clear();
  if (!options.checking) {
    arena.resize(1);
    if (Status s = allocate(arena[0], plan.arenaBytes, "the arena"); !s.isOk())
      return s;
  }
  address.assign(plan.buffers.size(), nullptr);
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const Buffer &b = plan.buffers[id];
    switch (b.kind) {
    case BufferKind::Input:
      address[id] = static_cast<char *>(inputs[b.offset].data);
      break;
    case BufferKind::Output:
      address[id] = static_cast<char *>(outputs[b.offset].data);
      break;
    case BufferKind::Splat:
    case BufferKind::Weight:
      address[id] = shared->constantAddress(id);
      break;
    case BufferKind::Arena: {
      if (!options.checking) {
        address[id] = static_cast<char *>(arena[0].data) + b.offset;
        break;
      }
      auto [it, inserted] =
          arenaSlot.insert({{b.offset, b.bytes}, arena.size()});
      if (inserted) {
        arena.emplace_back();
        if (Status s = allocate(arena.back(), b.bytes, "buffer " + b.name);
            !s.isOk())
          return s;
      }
      address[id] = static_cast<char *>(arena[it->second].data);
      break;
    }
    }
  }
  return Status::ok();
}

Status HostExecutor::run(const void *const *in, void *const *out, Memory memory,
                         const RunShape &shape) {
  if (memory != Memory::Host)
    return Status::error(StatusCode::InvalidArgument,
                         "the host backend runs on host memory; pass "
                         "KILN_MEMORY_HOST tensors");
  if (!ready) {
    if (Status s = initialize(); !s.isOk()) {
      inputs.clear();
      outputs.clear();
      arena.clear();
      return s;
    }
  }
  // The run's own sizes: the plan for its dims, or the artifact's.
  static const std::vector<int64_t> noDims;
  const Artifact &plan = shape.plan ? *shape.plan : artifact;
  const std::vector<int64_t> &dims = shape.dims ? *shape.dims : noDims;
  if (options.checking && shape.plan && dims != storageDims) {
    storageDims.clear();
    if (Status s = bindStorage(plan); !s.isOk()) {
      ready = false;
      return s;
    }
    storageDims = dims;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (uint64_t bytes = plan.buffers[plan.inputs[i]].bytes)
      std::memcpy(inputs[i].data, in[i], bytes);
  for (Allocation &a : outputs)
    a.poison();
  // Only arena storage is poisoned; weights are read-only by validation.
  for (Allocation &a : arena)
    a.poison();
  // An output kept in an input's storage starts as that input: the plan
  // writes only its new rows (OutputAlias). Staged, the two are apart.
  for (const OutputAlias &alias : plan.aliases)
    if (uint64_t bytes = plan.buffers[plan.inputs[alias.input]].bytes)
      std::memcpy(outputs[alias.output].data, inputs[alias.input].data, bytes);
  if (Status s = runSteps(plan, dims); !s.isOk())
    return s;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (uint64_t bytes = plan.buffers[plan.outputs[i]].bytes)
      std::memcpy(out[i], outputs[i].data, bytes);
  // One load per run, of this thread's flag (the launches ran on it);
  // cleared so that the next run starts clean.
  const KernelModule *module = shared->kernels();
  if (unsigned *flag = module ? module->indexError() : nullptr; flag && *flag) {
    unsigned site = *flag;
    *flag = 0;
    return Status::error(StatusCode::InvalidArgument,
                         indexErrorMessage(artifact, site));
  }
  return Status::ok();
}

Status HostExecutor::runSteps(const Artifact &plan,
                              const std::vector<int64_t> &dims) {
  std::vector<void *> args;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step &step = plan.steps[i];
    switch (step.kind) {
    case Step::Kind::Launch: {
      const LaunchStep &l = step.launch;
      args.clear();
      for (uint32_t id : l.args)
        args.push_back(address[id]);
      // The dims by value, as cuLaunchKernel takes them: a pointer to each.
      for (const int64_t &dim : dims)
        args.push_back(const_cast<int64_t *>(&dim));
      Launch launch;
      launch.entry = shared->kernels()->entry(l.kernel);
      launch.name = artifact.kernelNames[l.kernel];
      launch.args = args.data();
      std::copy(l.grid, l.grid + 3, launch.grid);
      std::copy(l.block, l.block + 3, launch.block);
      // Each launch gets its own stream of shuffles from the run's seed.
      launch.seed = options.seed * 0x9e3779b97f4a7c15ull + i;
      if (Status s = launcher.run(launch); !s.isOk())
        return Status::error(s.code,
                             "step " + std::to_string(i) + ": " + s.message);
      break;
    }
    case Step::Kind::Matmul: {
      const MatmulStep &m = step.matmul;
      // "timed" asks the backend to choose by timing: the host has no
      // clock to time with, and runs its stand-in.
      if (!options.gemm.empty() && options.gemm != kTimedGemmKernels) {
        bool tookNext = false;
        if (Status s = runGemmKernel(plan, i, dims, tookNext); !s.isOk())
          return s;
        if (tookNext)
          ++i;
        break;
      }
      void *product = productAddress(m);
      runGemm(m, address[m.a], address[m.b], product,
              m.bias == kNoBuffer ? nullptr : address[m.bias],
              m.residual == kNoBuffer ? product : address[m.residual]);
      // As after cuBLASLt: the exact GELU, which the stand-in (as
      // cuBLASLt) lacks, or the product widened into C; then the norm of
      // the rows as they are left.
      if (m.finishKernel != kNoKernel)
        if (Status s = runFinishKernel(m, i); !s.isOk())
          return s;
      if (m.hasNorm())
        if (Status s = runNormKernel(m, i); !s.isOk())
          return s;
      break;
    }
    case Step::Kind::Copy: {
      const CopyStep &c = step.copy;
      if (c.bytes)
        std::memcpy(address[c.dst], address[c.src], c.bytes);
      break;
    }
    }
  }
  return Status::ok();
}

Status HostExecutor::runGemmKernel(const Artifact &plan, size_t index,
                                   const std::vector<int64_t> &dims,
                                   bool &tookNext) {
  const MatmulStep &m = plan.steps[index].matmul;
  std::string where = "step " + std::to_string(index) + ": ";
  std::string missing;
  const GemmCandidate *g = findGemmCandidate(m, options.gemm, missing);
  if (!g)
    return Status::error(StatusCode::InvalidArgument, where + missing);
  void *a = address[m.a], *b = address[m.b];
  if (std::string misfit = gemmCandidateMisfit(m, *g, a, b); !misfit.empty())
    return Status::error(StatusCode::Unsupported,
                         where + "GEMM kernel " + g->name +
                             " cannot run the matmul: " + misfit);
  tookNext = g->withNextLaunch;
  // Pointers by value, integers and tensor maps by address, as
  // cuLaunchKernel takes them.
  std::vector<void *> args;
  std::vector<long long> integers;
  std::array<kiln_host_tensor_map, 2> maps;
  if (g->withNextLaunch) {
    // The next launch's arguments, then the dims (validation put a launch
    // there).
    for (uint32_t id : plan.steps[index + 1].launch.args)
      args.push_back(address[id]);
    for (const int64_t &dim : dims)
      args.push_back(const_cast<int64_t *>(&dim));
  } else {
    void *bias = m.bias == kNoBuffer ? nullptr : address[m.bias];
    void *residual = m.residual == kNoBuffer ? nullptr : address[m.residual];
    partials.assign(gemmPartialFloats(m, *g), 0.0f);
    void *scratch = partials.empty() ? nullptr : partials.data();
    integers = gemmKernelIntegers(m, *g);
    // A norm's pointers after the partials.
    args = {a, b, address[m.c], bias, residual, scratch};
    if (m.hasNorm()) {
      args.push_back(address[m.normScale]);
      args.push_back(m.normShift == kNoBuffer ? nullptr : address[m.normShift]);
      args.push_back(m.normSum == kNoBuffer ? nullptr : address[m.normSum]);
    }
    for (long long &v : integers)
      args.push_back(&v);
    if (g->tensorMaps) {
      std::array<TensorMapSpec, 2> specs = gemmTensorMaps(m, *g, a, b);
      for (size_t i = 0; i < maps.size(); ++i) {
        maps[i] = hostTensorMap(specs[i]);
        args.push_back(&maps[i]);
      }
    }
  }
  Launch launch;
  launch.entry = shared->kernels()->entry(g->kernel);
  launch.name = artifact.kernelNames[g->kernel];
  launch.args = args.data();
  std::array<uint32_t, 3> grid = gemmGrid(m, *g);
  std::copy(grid.begin(), grid.end(), launch.grid);
  launch.block[0] = g->threads;
  launch.seed = options.seed * 0x9e3779b97f4a7c15ull + index;
  if (Status s = launcher.run(launch); !s.isOk())
    return Status::error(s.code, where + s.message);
  return Status::ok();
}

void *HostExecutor::productAddress(const MatmulStep &m) {
  if (uint64_t elements = widenedProductElements(m)) {
    // The stand-in writes every element: no fill.
    widenProduct.resize(elements * dtypeSize(m.dtype));
    return widenProduct.data();
  }
  return address[m.productBuffer()];
}

Status HostExecutor::runFinishKernel(const MatmulStep &m, size_t index) {
  std::array<long long, 13> integers = gemmFinishIntegerArguments(m);
  // The exact GELU in place: the product is C.
  void *product = widenedProductElements(m)
                      ? static_cast<void *>(widenProduct.data())
                      : static_cast<void *>(address[m.productBuffer()]);
  std::vector<void *> args = {product, address[m.c]};
  for (long long &v : integers)
    args.push_back(&v);
  return runStepKernel(m.finishKernel, args, gemmFinishBlocks(m),
                       kGemmFinishThreads, index);
}

Status HostExecutor::runStepKernel(uint32_t kernel, std::vector<void *> &args,
                                   uint32_t blocks, uint32_t threads,
                                   size_t index) {
  Launch launch;
  launch.entry = shared->kernels()->entry(kernel);
  launch.name = artifact.kernelNames[kernel];
  launch.args = args.data();
  launch.grid[0] = blocks;
  launch.block[0] = threads;
  launch.seed = options.seed * 0x9e3779b97f4a7c15ull + index;
  if (Status s = launcher.run(launch); !s.isOk())
    return Status::error(s.code,
                         "step " + std::to_string(index) + ": " + s.message);
  return Status::ok();
}

Status HostExecutor::runNormKernel(const MatmulStep &m, size_t index) {
  void *pointers[4] = {
      address[m.c], address[m.normScale],
      m.normShift == kNoBuffer ? nullptr : address[m.normShift],
      // A widened step's norm reads the 16-bit product
      // where the stand-in left it.
      m.normSum != kNoBuffer      ? address[m.normSum]
      : widenedProductElements(m) ? static_cast<void *>(widenProduct.data())
                                  : nullptr};
  std::array<long long, 15> integers = gemmNormIntegerArguments(m, 1);
  std::vector<void *> args(pointers, pointers + 4);
  for (long long &v : integers)
    args.push_back(&v);
  return runStepKernel(m.normKernel, args, gemmNormBlocks(m), kGemmNormThreads,
                       index);
}
