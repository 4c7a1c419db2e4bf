//===- CudaSteps.cpp - Issue a plan's steps on CUDA -----------------------===//
//
// How a CUDA execution context issues its plan's steps on a stream: the
// buffers' addresses, the steps one by one (kernel launches, cuBLASLt calls,
// copies), and the shape buckets and graph cache that replay them as CUDA
// graphs.
//
//===----------------------------------------------------------------------===//

#include "CudaExecutorImpl.h"
#include "GemmCandidates.h"
#include "TensorMaps.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::detail;

/// Most shape buckets a context remembers as issued.
constexpr size_t kMaxIssuedBuckets = 64;

cu::DevicePtr
CudaExecutor::address(uint32_t id, const std::vector<cu::DevicePtr> &in,
                      const std::vector<cu::DevicePtr> &out) const {
  const Buffer &b = artifact.buffers[id];
  switch (b.kind) {
  case BufferKind::Arena:
    return arena + b.offset;
  case BufferKind::Weight:
    return constants->weights + b.offset;
  case BufferKind::Input:
    return in[b.offset];
  case BufferKind::Output:
    return out[b.offset];
  case BufferKind::Splat:
    return constants->splats[constants->splatSlotOf[id]];
  }
  return 0;
}

cu::DevicePtr
CudaExecutor::productAddress(const MatmulStep &m,
                             const std::vector<cu::DevicePtr> &in,
                             const std::vector<cu::DevicePtr> &out) const {
  return widenedProductElements(m) ? widenScratch
                                   : address(m.productBuffer(), in, out);
}

void CudaExecutor::launchArguments(const LaunchStep &l,
                                   const std::vector<cu::DevicePtr> &in,
                                   const std::vector<cu::DevicePtr> &out,
                                   std::vector<cu::DevicePtr> &values,
                                   std::vector<void *> &pointers) const {
  values.clear();
  for (uint32_t id : l.args)
    values.push_back(address(id, in, out));
  // cuLaunchKernel takes a pointer to each argument's value.
  pointers.clear();
  for (cu::DevicePtr &v : values)
    pointers.push_back(&v);
  // Then the dims, by value (`long long` parameters).
  for (const int64_t &dim : runDims)
    pointers.push_back(const_cast<int64_t *>(&dim));
}

Status CudaExecutor::issueSteps(const std::vector<cu::DevicePtr> &in,
                                const std::vector<cu::DevicePtr> &out,
                                cu::Stream target,
                                std::vector<cu::GraphNode> *nodes) {
  // While capturing: the node of each launch step, which later runs at
  // other dims update in place (CudaGraphs.h). The driver may lack the
  // query; the capture then has no nodes.
  bool recording =
      nodes && api->streamGetCaptureInfo && api->graphExecKernelNodeSetParams;
  if (nodes)
    nodes->clear();
  // An output kept in an input's storage (OutputAlias) starts as that input:
  // the steps write only its new rows. The caller's one buffer for both
  // costs nothing; two buffers (or host memory, staged) a copy.
  for (const OutputAlias &alias : plan().aliases) {
    cu::DevicePtr src = in[alias.input], dst = out[alias.output];
    uint64_t bytes = plan().buffers[plan().inputs[alias.input]].bytes;
    if (src == dst || !bytes)
      continue;
    if (cu::Result r = api->memcpyDtoDAsync(dst, src, bytes, target);
        r != cu::kSuccess)
      return cu::cudaError(*api, r,
                           "copying input " + std::to_string(alias.input) +
                               " to the output " +
                               std::to_string(alias.output) + " it aliases");
  }
  const std::vector<Step> &steps = plan().steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &step = steps[i];
    std::string where = "step " + std::to_string(i);
    // Null but for a launch, whose node it becomes below.
    if (recording)
      nodes->push_back(nullptr);
    switch (step.kind) {
    case Step::Kind::Launch: {
      if (Status s = launchPlanStep(i, in, out, target); !s.isOk())
        return s;
      if (recording) {
        int status = 0;
        const cu::GraphNode *last = nullptr;
        // Asked for, so that the edge of a programmatic launch makes no
        // lossy query.
        const void *edges = nullptr;
        size_t count = 0;
        recording =
            api->streamGetCaptureInfo(target, &status, nullptr, nullptr, &last,
                                      &edges, &count) == cu::kSuccess &&
            status == cu::kStreamCaptureStatusActive && count == 1;
        if (recording)
          nodes->back() = last[0];
      }
      break;
    }
    case Step::Kind::Matmul: {
      const MatmulStep &m = step.matmul;
      MatmulPlan &plan = matmuls->plans[matmuls->ofStep[i]];
      // Kiln's own kernel where one is asked for or won the timing
      // (MatmulChoice.cpp), else cuBLASLt's.
      const GemmCandidate *kernel = nullptr;
      if (Status s = chooseGemmKernel(i, plan, in, out, target, kernel);
          !s.isOk())
        return s;
      Status s = kernel ? launchGemmKernel(i, m, *kernel, in, out, target)
                        : issueCublasMatmul(i, plan, in, out, target);
      if (!s.isOk())
        return s;
      // A kernel that took the next launch's work leaves it out.
      if (kernel && kernel->withNextLaunch) {
        ++i;
        if (recording)
          nodes->push_back(nullptr);
      }
      break;
    }
    case Step::Kind::Copy: {
      const CopyStep &c = step.copy;
      if (c.bytes == 0)
        break;
      if (cu::Result r =
              api->memcpyDtoDAsync(address(c.dst, in, out),
                                   address(c.src, in, out), c.bytes, target);
          r != cu::kSuccess)
        return cu::cudaError(*api, r, where + ": copy");
      break;
    }
    }
  }
  if (nodes && !recording)
    nodes->clear();
  return Status::ok();
}

Status CudaExecutor::updateLaunchNodes(cu::GraphExec exec,
                                       const std::vector<cu::GraphNode> &nodes,
                                       const GraphCache::Key &heldDims,
                                       const std::vector<cu::DevicePtr> &in,
                                       const std::vector<cu::DevicePtr> &out) {
  const std::vector<Step> &steps = plan().steps;
  if (nodes.size() != steps.size())
    return Status::error(StatusCode::Internal,
                         "a graph's nodes do not match the plan's steps");
  // The dims that changed; past 64 dims, launches depend on all of them.
  uint64_t changed = heldDims.size() == runDims.size() ? 0 : ~uint64_t(0);
  for (size_t d = 0; d < runDims.size() && d < heldDims.size(); ++d)
    if (heldDims[d] != static_cast<cu::DevicePtr>(runDims[d]))
      changed |= d < 64 ? uint64_t(1) << d : ~uint64_t(0);
  std::vector<cu::DevicePtr> argValues;
  std::vector<void *> argPointers;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != Step::Kind::Launch)
      continue;
    const LaunchStep &l = steps[i].launch;
    // Its grid and the dims it reads are as the graph holds them (its
    // buffers are the bucket's).
    if (!(l.dimsRead & changed))
      continue;
    // A launch that a GEMM kernel took in its step (GemmCandidate::
    // withNextLaunch) has no node of its own: the run is captured again.
    if (!nodes[i])
      return Status::error(StatusCode::Unsupported,
                           "step " + std::to_string(i) +
                               ": a launch the step before it ran has no "
                               "node in the graph to update");
    launchArguments(l, in, out, argValues, argPointers);
    cu::KernelNodeParams params{};
    params.function = functions[l.kernel];
    params.gridX = l.grid[0];
    params.gridY = l.grid[1];
    params.gridZ = l.grid[2];
    params.blockX = l.block[0];
    params.blockY = l.block[1];
    params.blockZ = l.block[2];
    params.sharedBytes = l.sharedBytes;
    params.params = argPointers.empty() ? nullptr : argPointers.data();
    if (cu::Result r =
            api->graphExecKernelNodeSetParams(exec, nodes[i], &params);
        r != cu::kSuccess)
      return cu::cudaError(*api, r,
                           "step " + std::to_string(i) +
                               ": updating the graph's launch of '" +
                               artifact.kernelNames[l.kernel] + "'");
  }
  return Status::ok();
}

GraphCache::Key
CudaExecutor::bucketOf(const std::vector<cu::DevicePtr> &in,
                       const std::vector<cu::DevicePtr> &out) const {
  GraphCache::Key key(in);
  key.insert(key.end(), out.begin(), out.end());
  key.insert(key.end(), matmuls->issues.begin(), matmuls->issues.end());
  // The copies' sizes: a graph updated in place keeps its copies as they
  // were captured.
  for (const OutputAlias &alias : plan().aliases)
    if (in[alias.input] != out[alias.output])
      key.push_back(plan().buffers[plan().inputs[alias.input]].bytes);
  for (const Step &step : plan().steps)
    if (step.kind == Step::Kind::Copy)
      key.push_back(step.copy.bytes);
  return key;
}

Status CudaExecutor::launchPlanStep(size_t index,
                                    const std::vector<cu::DevicePtr> &in,
                                    const std::vector<cu::DevicePtr> &out,
                                    cu::Stream target) {
  const LaunchStep &l = plan().steps[index].launch;
  std::vector<cu::DevicePtr> values;
  std::vector<void *> pointers;
  launchArguments(l, in, out, values, pointers);
  if (cu::Result r = cu::launch(
          *api, functions[l.kernel], l.grid, l.block, l.sharedBytes, target,
          pointers.empty() ? nullptr : pointers.data(), options.pdl);
      r != cu::kSuccess)
    return cu::cudaError(*api, r,
                         "step " + std::to_string(index) +
                             ": launching kernel '" +
                             artifact.kernelNames[l.kernel] + "'");
  return Status::ok();
}

Status CudaExecutor::launchPlan(const std::vector<cu::DevicePtr> &in,
                                const std::vector<cu::DevicePtr> &out,
                                cu::Stream target) {
  if (!options.graphs || graphsFailed)
    return issueSteps(in, out, target);
  // Graphs per shape bucket: a run whose bucket has issued its steps one by
  // one before is captured even at dims it has not seen (each token of a
  // decoding loop), and its graph takes the place of the least recently
  // used one by cuGraphExecUpdate (CudaGraphs.h). The first run of a bucket
  // issues the steps one by one: its launches load modules lazily (the
  // kernels', cuBLASLt's), which a stream capture does not allow, and time
  // the matmuls' candidates.
  GraphCache::Key bucket = bucketOf(in, out);
  if (!matmuls->issued && !issuedBuckets.count(bucket)) {
    Status s = issueSteps(in, out, target);
    if (s.isOk()) {
      matmuls->issued = true;
      // Bounded: a caller cycling through new buffers starts over.
      if (issuedBuckets.size() >= kMaxIssuedBuckets)
        issuedBuckets.clear();
      issuedBuckets.insert(std::move(bucket));
    }
    return s;
  }
  // A graph holds the grids and kernel arguments of its dims: they key it
  // within the bucket. A graph of the bucket at other dims takes them in
  // place where its launch nodes are known; else the run is captured.
  GraphCache::Key dims(runDims.begin(), runDims.end());
  cu::GraphExec exec = graphs.find(bucket, dims);
  // A static plan's graphs never change dims: no nodes to keep.
  bool updatable = options.graphUpdates && !runDims.empty() && !updatesFailed;
  if (!exec && updatable)
    exec = graphs.updateInPlace(
        bucket, dims,
        [&](cu::GraphExec e, const std::vector<cu::GraphNode> &nodes,
            const GraphCache::Key &held) {
          Status s = updateLaunchNodes(e, nodes, held, in, out);
          // The run is captured instead: slower, not wrong. Not tried again
          // by this context (each failure would cost a capture and an
          // instantiation), and said once, as a failed capture is.
          if (!s.isOk())
            updatesFailed = true;
          if (!s.isOk() && !warnedInPlace) {
            warnedInPlace = true;
            std::fprintf(stderr,
                         "kiln: updating a CUDA graph in place failed (%s); "
                         "runs at new dims are captured again\n",
                         s.message.c_str());
          }
          return s;
        });
  if (!exec) {
    // The capture records on the context's own stream; the graph is then
    // launched on the target, which may be the caller's.
    Status s = graphs.capture(
        bucket, dims, stream,
        [&](cu::Stream target, std::vector<cu::GraphNode> &nodes) {
          capturing = true;
          Status issued =
              issueSteps(in, out, target, updatable ? &nodes : nullptr);
          capturing = false;
          bool launches = std::any_of(
              plan().steps.begin(), plan().steps.end(),
              [](const Step &step) { return step.kind == Step::Kind::Launch; });
          if (issued.isOk() && nodes.empty() && launches && updatable &&
              !warnedInPlace && api->streamGetCaptureInfo &&
              api->graphExecKernelNodeSetParams) {
            warnedInPlace = true;
            std::fprintf(stderr, "kiln: the CUDA driver did not tell the "
                                 "nodes of a captured graph; runs at new dims "
                                 "are captured again\n");
          }
          return issued;
        },
        exec);
    if (!s.isOk()) {
      // Graphs are an optimization: the steps one by one do the same work
      // (and report a real error of a step themselves).
      graphsFailed = true;
      std::fprintf(stderr,
                   "kiln: capturing a CUDA graph failed (%s); this context "
                   "issues its steps one by one\n",
                   s.message.c_str());
      return issueSteps(in, out, target);
    }
  }
  if (cu::Result r = api->graphLaunch(exec, target); r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuGraphLaunch");
  return Status::ok();
}

Status CudaExecutor::issueCublasMatmul(size_t i, MatmulPlan &plan,
                                       const std::vector<cu::DevicePtr> &in,
                                       const std::vector<cu::DevicePtr> &out,
                                       cu::Stream target) {
  const MatmulStep &m = this->plan().steps[i].matmul;
  std::string where = "step " + std::to_string(i);
  // cuBLAS's A, B, C are our B, A, C. One cuBLASLt call per repetition
  // of the inner batch.
  uint64_t elem = dtypeSize(m.dtype);
  const int64_t outerStrides[3] = {m.outerStrideB, m.outerStrideA,
                                   m.outerStrideC};
  cu::DevicePtr base[3] = {address(m.b, in, out), address(m.a, in, out),
                           productAddress(m, in, out)};
  // What beta scales: the residual, laid out as C, or C itself.
  cu::DevicePtr residualBase =
      m.residual == kNoBuffer ? base[2] : address(m.residual, in, out);
  cu::DevicePtr bias =
      m.bias == kNoBuffer ? kMaxAlign : address(m.bias, in, out);
  if (Status s = setBiasPointer(plan, bias); !s.isOk())
    return s;
  for (int64_t o = 0; o < m.outerBatch; ++o) {
    cu::DevicePtr ptrs[3];
    uint32_t align[4];
    for (int j = 0; j < 3; ++j) {
      ptrs[j] = base[j] + static_cast<uint64_t>(o * outerStrides[j]) * elem;
      align[j] =
          std::min(alignmentOf(ptrs[j]), alignmentOf(plan.strideBytes[j]));
    }
    cu::DevicePtr residual =
        residualBase + static_cast<uint64_t>(o * m.outerStrideC) * elem;
    align[2] = std::min(align[2], alignmentOf(residual));
    align[3] = alignmentOf(bias);
    void *c = reinterpret_cast<void *>(ptrs[2]);
    // The scale type of a double matmul is fp64: alpha and beta too.
    double alpha64 = m.alpha, beta64 = m.beta;
    bool isDouble = m.dtype == DType::F64;
    const void *alpha = isDouble ? static_cast<const void *>(&alpha64)
                                 : static_cast<const void *>(&m.alpha);
    const void *beta = isDouble ? static_cast<const void *>(&beta64)
                                : static_cast<const void *>(&m.beta);
    auto call = [&](const lt::MatmulAlgo &algo) {
      return ltApi->matmul(
          ltHandle, plan.desc, alpha, reinterpret_cast<const void *>(ptrs[0]),
          plan.aLayout, reinterpret_cast<const void *>(ptrs[1]), plan.bLayout,
          beta, reinterpret_cast<const void *>(residual), plan.cLayout, c,
          plan.cLayout, &algo, reinterpret_cast<void *>(workspace),
          kWorkspaceBytes, target);
    };
    // Candidates are timed on the run's own operands, so each call must
    // leave the same result: not where beta accumulates into C in
    // place (no residual, or one in C's own storage), and not inside a
    // graph capture (nothing runs there).
    // A reference: no copy of the call (nor an allocation) a matmul.
    CandidateTiming timing{std::cref(call), target};
    bool canTime = options.tuneMatmuls && !capturing &&
                   (m.beta == 0.0f || residual != ptrs[2]);
    const lt::MatmulAlgo *algo = nullptr;
    if (Status s = chooseAlgo(plan, align, algo, canTime ? &timing : nullptr);
        !s.isOk())
      return s;
    if (lt::LtStatus st = call(*algo); st != lt::kSuccess)
      return lt::cublasError(*ltApi, st, where + ": cublasLtMatmul");
  }
  // cuBLASLt has no exact GELU, nor a C of another type than its product:
  // a kernel of Kiln's applies the GELU in place or widens the product.
  if (m.finishKernel != kNoKernel)
    if (Status s = launchFinishKernel(i, m, in, out, target); !s.isOk())
      return s;
  // A norm kernel normalizes the rows into C (in place, without a sum).
  if (m.hasNorm())
    return launchNormKernel(i, m, in, out, target);
  return Status::ok();
}

Status CudaExecutor::launchFinishKernel(size_t index, const MatmulStep &m,
                                        const std::vector<cu::DevicePtr> &in,
                                        const std::vector<cu::DevicePtr> &out,
                                        cu::Stream target) {
  // The exact GELU in place: the product is C.
  cu::DevicePtr product = productAddress(m, in, out), c = address(m.c, in, out);
  std::array<long long, 13> integers = gemmFinishIntegerArguments(m);
  std::vector<void *> args = {&product, &c};
  for (long long &v : integers)
    args.push_back(&v);
  return launchStepKernel(index, m.finishKernel, args, gemmFinishBlocks(m),
                          kGemmFinishThreads, 0, target);
}

Status CudaExecutor::launchStepKernel(size_t index, uint32_t kernel,
                                      std::vector<void *> &args,
                                      uint32_t blocks, uint32_t threads,
                                      uint32_t sharedBytes, cu::Stream target) {
  const unsigned grid[3] = {blocks, 1, 1};
  const unsigned block[3] = {threads, 1, 1};
  if (cu::Result r = cu::launch(*api, functions[kernel], grid, block,
                                sharedBytes, target, args.data(), options.pdl);
      r != cu::kSuccess)
    return cu::cudaError(*api, r,
                         "step " + std::to_string(index) +
                             ": launching kernel '" +
                             artifact.kernelNames[kernel] + "'");
  return Status::ok();
}

Status CudaExecutor::launchNormKernel(size_t index, const MatmulStep &m,
                                      const std::vector<cu::DevicePtr> &in,
                                      const std::vector<cu::DevicePtr> &out,
                                      cu::Stream target) {
  cu::DevicePtr pointers[4] = {
      address(m.c, in, out), address(m.normScale, in, out),
      m.normShift == kNoBuffer ? 0 : address(m.normShift, in, out),
      // A widened step's norm reads the 16-bit product where cuBLASLt
      // left it, as it reads a sum.
      m.normSum != kNoBuffer ? address(m.normSum, in, out)
      : m.widen              ? productAddress(m, in, out)
                             : 0};
  std::array<long long, 15> integers = gemmNormIntegerArguments(m, 1);
  std::vector<void *> args;
  for (cu::DevicePtr &p : pointers)
    args.push_back(&p);
  for (long long &v : integers)
    args.push_back(&v);
  return launchStepKernel(index, m.normKernel, args, gemmNormBlocks(m),
                          kGemmNormThreads, 0, target);
}

Status CudaExecutor::launchGemmKernel(size_t index, const MatmulStep &m,
                                      const GemmCandidate &candidate,
                                      const std::vector<cu::DevicePtr> &in,
                                      const std::vector<cu::DevicePtr> &out,
                                      cu::Stream target) {
  std::string where = "step " + std::to_string(index) + ": ";
  const GemmCandidate *g = &candidate;
  cu::DevicePtr a = address(m.a, in, out), b = address(m.b, in, out);
  if (std::string misfit =
          gemmCandidateMisfit(m, *g, reinterpret_cast<const void *>(a),
                              reinterpret_cast<const void *>(b));
      !misfit.empty())
    return Status::error(StatusCode::Unsupported,
                         where + "GEMM kernel " + g->name +
                             " cannot run the matmul: " + misfit);
  // cuLaunchKernel takes a pointer to each argument's value.
  std::vector<void *> args;
  std::vector<cu::DevicePtr> values;
  cu::DevicePtr pointers[9] = {};
  std::vector<long long> integers;
  std::array<cu::TensorMap, 2> maps;
  if (g->withNextLaunch) {
    // The step and the launch after it, on that launch's arguments
    // (validation put a launch there).
    launchArguments(plan().steps[index + 1].launch, in, out, values, args);
  } else {
    cu::DevicePtr c = address(m.c, in, out);
    cu::DevicePtr bias = m.bias == kNoBuffer ? 0 : address(m.bias, in, out);
    cu::DevicePtr residual =
        m.residual == kNoBuffer ? 0 : address(m.residual, in, out);
    cu::DevicePtr partials = g->splitK > 1 || m.hasNorm() ? gemmPartials : 0;
    // A norm's arguments, where the kernel finishes one.
    cu::DevicePtr normScale = 0, normShift = 0, normSum = 0;
    if (m.hasNorm()) {
      normScale = address(m.normScale, in, out);
      if (m.normShift != kNoBuffer)
        normShift = address(m.normShift, in, out);
      if (m.normSum != kNoBuffer)
        normSum = address(m.normSum, in, out);
    }
    integers = gemmKernelIntegers(m, *g);
    if (g->tensorMaps)
      if (Status s = encodeTensorMaps(m, *g, a, b, maps); !s.isOk())
        return Status::error(s.code, where + s.message);
    // A split's last block finishes its tile in the kernel, and a norm's
    // last column tile its rows.
    const cu::DevicePtr family[9] = {
        a, b, c, bias, residual, partials, normScale, normShift, normSum};
    std::copy(family, family + 9, pointers);
    for (size_t j = 0; j < (m.hasNorm() ? 9u : 6u); ++j)
      args.push_back(&pointers[j]);
    for (long long &v : integers)
      args.push_back(&v);
    if (g->tensorMaps)
      for (cu::TensorMap &map : maps)
        args.push_back(&map);
  }
  std::array<uint32_t, 3> grid = gemmGrid(m, *g);
  const unsigned block[3] = {g->threads, 1, 1};
  if (cu::Result r =
          cu::launch(*api, functions[g->kernel], grid.data(), block,
                     g->sharedBytes, target, args.data(), options.pdl);
      r != cu::kSuccess)
    return cu::cudaError(*api, r,
                         where + "launching kernel '" +
                             artifact.kernelNames[g->kernel] + "'");
  return Status::ok();
}

Status CudaExecutor::encodeTensorMaps(const MatmulStep &m,
                                      const GemmCandidate &g, cu::DevicePtr a,
                                      cu::DevicePtr b,
                                      std::array<cu::TensorMap, 2> &maps) {
  if (!api->tensorMapEncodeTiled)
    return Status::error(StatusCode::Unsupported,
                         "GEMM kernel " + g.name +
                             " takes tensor maps, and this CUDA driver has "
                             "no cuTensorMapEncodeTiled");
  std::array<TensorMapSpec, 2> specs =
      gemmTensorMaps(m, g, reinterpret_cast<const void *>(a),
                     reinterpret_cast<const void *>(b));
  for (size_t i = 0; i < maps.size(); ++i) {
    const TensorMapSpec &s = specs[i];
    const unsigned elementStrides[5] = {1, 1, 1, 1, 1};
    // The swizzle's enum counts 32, 64 and 128 bytes from 1.
    int swizzle = s.swizzleBytes == 0    ? 0
                  : s.swizzleBytes == 32 ? 1
                  : s.swizzleBytes == 64 ? 2
                                         : 3;
    if (cu::Result r = api->tensorMapEncodeTiled(
            &maps[i],
            s.dtype == DType::BF16 ? cu::kTensorMapBfloat16
                                   : cu::kTensorMapFloat16,
            s.rank, const_cast<void *>(s.global), s.dims.data(),
            s.strides.data() + 1, s.box.data(), elementStrides,
            /*interleave=*/0, swizzle, cu::kTensorMapL2Promotion128B,
            /*oobFill=*/0);
        r != cu::kSuccess)
      return cu::cudaError(*api, r,
                           std::string("encoding the tensor map of ") +
                               (i == 0 ? "A" : "B") + " for GEMM kernel " +
                               g.name);
  }
  return Status::ok();
}
