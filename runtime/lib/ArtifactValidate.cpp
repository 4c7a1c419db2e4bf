//===- ArtifactValidate.cpp - Check a decoded plan as a whole -------------===//
//
// What `validateArtifact` guarantees is what the executors rely on without
// checking again: every id, index and byte range in bounds.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/ArtifactFormat.h"

#include "ArtifactBytes.h"
#include "GemmCandidates.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace kiln::rt;
using kiln::rt::detail::checkedAdd;
using kiln::rt::detail::checkedMul;

/// Identifies the storage a buffer lives in, for overlap checks: arena and
/// weights are one space each, every graph input and output its own (splats
/// of one value may share storage too).
static bool sameStorageOverlap(const Buffer &x, const Buffer &y) {
  if (x.kind != y.kind || x.bytes == 0 || y.bytes == 0)
    return false;
  uint64_t xBegin = 0, yBegin = 0;
  if (x.kind == BufferKind::Arena || x.kind == BufferKind::Weight) {
    xBegin = x.offset;
    yBegin = y.offset;
  } else if (x.offset != y.offset) {
    return false;
  }
  // Both ranges were checked against their storage size, so no overflow.
  return xBegin < yBegin + y.bytes && yBegin < xBegin + x.bytes;
}

/// Whether a matmul of float8 operands keeps to their form (MatmulStep::
/// float8): one matrix, A not transposed and B n x k, k whole 16-byte
/// rows, the unscaled sums into float32 with nothing else applied; Kiln's
/// kernels only where they take the launch after it (its finish) too.
static bool float8MatmulFits(const MatmulStep &m) {
  return m.dtype == DType::F32 && !m.transA && m.transB && m.batch == 1 &&
         m.outerBatch == 1 && m.k % 16 == 0 && m.alpha == 1.0f &&
         m.beta == 0.0f && m.bias == kNoBuffer && m.residual == kNoBuffer &&
         m.activation == MatmulActivation::None && !m.hasNorm() && !m.widen &&
         !m.tf32 && m.finishKernel == kNoKernel &&
         std::all_of(m.kernels.begin(), m.kernels.end(),
                     [](const GemmCandidate &g) { return g.withNextLaunch; });
}

/// Whether steps `x` and `y` run under the same conditions on the dims
/// (their StepRuns bindings, in order).
static bool sameGuards(const SymbolicPlan &plan, size_t x, size_t y) {
  std::vector<const SizeBinding *> of[2];
  for (const SizeBinding &b : plan.bindings)
    if (b.field == SizeField::StepRuns && (b.target == x || b.target == y))
      of[b.target == x ? 0 : 1].push_back(&b);
  auto same = [](const SizeBinding *p, const SizeBinding *q) {
    if (p->divisor != q->divisor || p->lowest != q->lowest ||
        p->highest != q->highest ||
        p->formula.terms.size() != q->formula.terms.size())
      return false;
    for (size_t t = 0; t < p->formula.terms.size(); ++t)
      if (p->formula.terms[t].coefficient != q->formula.terms[t].coefficient ||
          p->formula.terms[t].dims != q->formula.terms[t].dims)
        return false;
    return true;
  };
  return std::equal(of[0].begin(), of[0].end(), of[1].begin(), of[1].end(),
                    same);
}

/// Why the LayerNorm or RMSNorm of `m` is malformed, or "" (ArtifactSteps.h:
/// float32, float16 or bfloat16, scale and shift of n elements outside C's
/// storage, no shift for an RMSNorm, a norm kernel of the artifact, alpha
/// 1); none of those fields without a
/// norm. The matmul step's checks see to the sum.
static std::string checkNorm(const Artifact &a, const MatmulStep &m) {
  if (!m.hasNorm())
    return m.normShift == kNoBuffer && m.normKernel == kNoKernel &&
                   !m.normRms && m.normSum == kNoBuffer
               ? ""
               : "a matmul without a norm scale names a norm shift, kind, "
                 "kernel or sum";
  if (m.normRms && m.normShift != kNoBuffer)
    return "a matmul's RMSNorm has no shift";
  if (m.dtype != DType::F32 && m.dtype != DType::F16 && m.dtype != DType::BF16)
    return "a matmul's norm is float32, float16 or bfloat16, the matmul is " +
           std::string(dtypeName(m.dtype));
  if (m.alpha != 1.0f || m.beta != (m.residual != kNoBuffer ? 1.0f : 0.0f))
    return "a matmul with a norm scales by alpha 1 and beta 1 with a "
           "residual, 0 without";
  if (m.normKernel >= a.kernelNames.size())
    return "the matmul's norm kernel is not one of the artifact's " +
           std::to_string(a.kernelNames.size()) + " kernels";
  if (!(m.normEpsilon >= 0.0f) || std::isinf(m.normEpsilon))
    return "the matmul's norm epsilon must be finite and not negative";
  const Buffer &c = a.buffers[m.c];
  for (auto [id, what] :
       {std::pair<uint32_t, const char *>{m.normScale, "scale"},
        {m.normShift, "shift"}}) {
    if (id == kNoBuffer && std::string(what) == "shift")
      continue;
    if (id >= a.buffers.size())
      return std::string("matmul norm ") + what + " names no buffer";
    const Buffer &b = a.buffers[id];
    if (b.dtype != m.dtype ||
        b.bytes < static_cast<uint64_t>(m.n) * dtypeSize(m.dtype))
      return std::string("matmul norm ") + what + " " + b.name + " must hold " +
             std::to_string(m.n) + " elements of " + dtypeName(m.dtype);
    if (sameStorageOverlap(c, b))
      return std::string("matmul output c overlaps its norm ") + what;
  }
  return "";
}

/// Why the finish of `m` after cuBLASLt is malformed, or "" (ArtifactSteps.h:
/// the exact GELU is float32's, widening a 16-bit product's; a finish kernel
/// of the artifact exactly where either needs one, the exact GELU always,
/// widening without a norm).
static std::string checkFinish(const MatmulStep &m, size_t kernels) {
  bool geluErf = m.activation == MatmulActivation::GeluErf;
  if (geluErf && m.dtype != DType::F32)
    return "a matmul's exact GELU is float32, the matmul is " +
           std::string(dtypeName(m.dtype));
  if (m.widen && m.dtype != DType::F16 && m.dtype != DType::BF16)
    return "a matmul widens a float16 or bfloat16 product, the matmul is " +
           std::string(dtypeName(m.dtype));
  bool needed = geluErf || (m.widen && !m.hasNorm());
  if (!needed)
    return m.finishKernel == kNoKernel
               ? ""
               : "only a matmul with the exact GELU, or widened without a "
                 "norm, names a finish kernel";
  if (m.finishKernel >= kernels)
    return "the matmul's finish kernel is not one of the artifact's " +
           std::to_string(kernels) + " kernels";
  return "";
}

/// Why Kiln GEMM candidates of `m` are malformed, or "" (ArtifactSteps.h:
/// float32, float16 or bfloat16, alpha 1 and beta 1 exactly with a residual,
/// kernels of the artifact, arrival counters for every tile exactly when K
/// is split, tiles of whole 16-byte chunks of columns, whole warps). Dynamic
/// shared memory an
/// sm_90 block may opt in to.
constexpr uint32_t kMostGemmSharedBytes = 227 * 1024;

static std::string checkGemmCandidates(const MatmulStep &m, size_t kernels) {
  if (m.kernels.empty())
    return "";
  if (m.dtype != DType::F32 && m.dtype != DType::F16 && m.dtype != DType::BF16)
    return "Kiln GEMM kernels are float32, float16 or bfloat16, the matmul "
           "is " +
           std::string(dtypeName(m.dtype));
  if (m.alpha != 1.0f || m.beta != (m.residual != kNoBuffer ? 1.0f : 0.0f))
    return "Kiln GEMM kernels scale by alpha 1 and beta 1 with a residual, "
           "0 without";
  for (const GemmCandidate &g : m.kernels) {
    std::string what = "GEMM kernel '" + g.name + "' ";
    if (g.name.empty() || g.name.size() > 64)
      return "GEMM kernel names have 1 to 64 characters";
    if (g.kernel >= kernels)
      return what + "names a kernel the artifact does not have (" +
             std::to_string(kernels) + " kernels)";
    if (g.tileM == 0 || g.tileM > 256 || g.tileN == 0 || g.tileN % 8 ||
        g.tileN > 256)
      return what + "tiles must be 1 to 256 rows and 8 to 256 columns in "
                    "whole 16-byte chunks";
    // A split's blocks arrive at their tile, a norm's column tiles at their
    // row tile; a kernel that finishes the next launch's epilogue (a norm
    // among it) counts them where it has counters at all.
    bool arrives = g.splitK > 1 || m.hasNorm();
    bool counts = arrives || (g.withNextLaunch && g.arrivals != 0);
    if (counts ? g.arrivals < gemmTiles(m, g) : g.arrivals != 0)
      return what + (counts ? "has fewer arrival counters than tiles"
                            : "has arrival counters but no split or norm "
                              "to count");
    if (g.threads == 0 || g.threads % 32 || g.threads > 1024)
      return what + "threads must be whole warps up to 1024";
    if (g.splitK < 1 || g.splitK > 64)
      return what + "split must be 1 to 64";
    if (g.sharedBytes > kMostGemmSharedBytes)
      return what + "asks for " + std::to_string(g.sharedBytes) +
             " bytes of shared memory, more than a block's 227 KiB";
    if (g.tensorMaps && (g.tileM % 64 || g.tileN % 64 || m.transA))
      return what + "takes tensor maps, which need tiles of whole 64 rows "
                    "and columns and A not transposed";
    if (g.withNextLaunch &&
        (g.tensorMaps || m.hasNorm() || m.finishKernel != kNoKernel))
      return what + "takes the next launch's arguments: no tensor maps, and "
                    "the step's finish is that launch alone (no norm or "
                    "finish kernel)";
    // The runtime times such kernels by default and against cuBLASLt and
    // that launch: no kernel of the family's arguments beside them.
    if (g.withNextLaunch != m.kernels.front().withNextLaunch)
      return "a step's GEMM kernels take the next launch all or none";
  }
  return "";
}

static bool matmulOperandFits(const Buffer &buf, int64_t outerBatch,
                              int64_t outerStride, int64_t batch,
                              int64_t stride, int64_t rows, int64_t cols) {
  uint64_t need = 0;
  if (!checkedMul(static_cast<uint64_t>(rows), static_cast<uint64_t>(cols),
                  need))
    return false;
  // The last matrix starts at (outerBatch - 1) * outerStride +
  // (batch - 1) * stride.
  for (auto [count, step] :
       {std::pair<int64_t, int64_t>{batch, stride},
        std::pair<int64_t, int64_t>{outerBatch, outerStride}}) {
    uint64_t tail = 0;
    if (count > 1 && step > 0 &&
        (!checkedMul(static_cast<uint64_t>(count - 1),
                     static_cast<uint64_t>(step), tail) ||
         !checkedAdd(need, tail, need)))
      return false;
  }
  uint64_t needBytes = 0;
  return checkedMul(need, dtypeSize(buf.dtype), needBytes) &&
         needBytes <= buf.bytes;
}

bool kiln::rt::validatePlan(const Artifact &a, std::string &error,
                            uint64_t weightBytes) {
  using detail::checkedAdd;
  using detail::checkedMul;
  auto fail = [&](const std::string &message) {
    error = "invalid artifact: " + message;
    return false;
  };
  auto bufName = [&](uint64_t id) {
    return "buffer " + std::to_string(id) + " ('" + a.buffers[id].name + "')";
  };
  const uint64_t numBuffers = a.buffers.size();

  // Graph inputs and outputs first: views are checked against them below.
  auto checkIo = [&](const std::vector<uint32_t> &ids, BufferKind kind,
                     const char *what) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] >= numBuffers)
        return fail(std::string(what) + " " + std::to_string(i) +
                    ": buffer id " + std::to_string(ids[i]) +
                    " out of range (" + std::to_string(numBuffers) +
                    " buffers)");
      const Buffer &b = a.buffers[ids[i]];
      if (b.kind != kind || b.offset != i)
        return fail(std::string(what) + " " + std::to_string(i) + ": " +
                    bufName(ids[i]) + " is not a view of " + what + " " +
                    std::to_string(i));
    }
    return true;
  };
  if (!checkIo(a.inputs, BufferKind::Input, "input") ||
      !checkIo(a.outputs, BufferKind::Output, "output"))
    return false;

  for (uint64_t id = 0; id < numBuffers; ++id) {
    const Buffer &b = a.buffers[id];
    if (b.kind > kLastBufferKind || b.dtype > kLastDType)
      return fail(bufName(id) + ": invalid kind or dtype");
    if (b.name.find('\0') != std::string::npos)
      return fail(bufName(id) + ": name contains a NUL byte");
    if (b.shape.size() > kMaxRank)
      return fail(bufName(id) + ": rank " + std::to_string(b.shape.size()) +
                  " exceeds " + std::to_string(kMaxRank));
    uint64_t elements = 1;
    for (int64_t dim : b.shape) {
      if (dim < 0)
        return fail(bufName(id) + ": negative dimension " +
                    std::to_string(dim));
      if (!checkedMul(elements, static_cast<uint64_t>(dim), elements))
        return fail(bufName(id) + ": element count overflows");
    }
    uint64_t bytes = 0;
    if (!checkedMul(elements, dtypeSize(b.dtype), bytes) || bytes != b.bytes)
      return fail(bufName(id) + ": size " + std::to_string(b.bytes) +
                  " does not match its shape and dtype (" + dtypeName(b.dtype) +
                  ")");
    uint64_t end = 0;
    switch (b.kind) {
    case BufferKind::Arena:
      if (!checkedAdd(b.offset, b.bytes, end) || end > a.arenaBytes)
        return fail(bufName(id) + ": [" + std::to_string(b.offset) + ", +" +
                    std::to_string(b.bytes) + ") exceeds the arena (" +
                    std::to_string(a.arenaBytes) + " bytes)");
      break;
    case BufferKind::Weight:
      if (!checkedAdd(b.offset, b.bytes, end) || end > weightBytes)
        return fail(bufName(id) + ": [" + std::to_string(b.offset) + ", +" +
                    std::to_string(b.bytes) + ") exceeds the weights (" +
                    std::to_string(weightBytes) + " bytes)");
      break;
    case BufferKind::Splat:
      if (dtypeSize(b.dtype) < 8 && b.offset >> (8 * dtypeSize(b.dtype)) != 0)
        return fail(bufName(id) + ": splat value " + std::to_string(b.offset) +
                    " is wider than its dtype (" + dtypeName(b.dtype) + ")");
      break;
    case BufferKind::Input:
    case BufferKind::Output: {
      bool isInput = b.kind == BufferKind::Input;
      const std::vector<uint32_t> &io = isInput ? a.inputs : a.outputs;
      const char *what = isInput ? "input" : "output";
      if (b.offset >= io.size())
        return fail(bufName(id) + ": " + what + " index " +
                    std::to_string(b.offset) + " out of range (" +
                    std::to_string(io.size()) + " " + what + "s)");
      const Buffer &canonical = a.buffers[io[b.offset]];
      if (b.bytes > canonical.bytes)
        return fail(bufName(id) + ": view of " + what + " " +
                    std::to_string(b.offset) + " is larger than it (" +
                    std::to_string(b.bytes) + " > " +
                    std::to_string(canonical.bytes) + " bytes)");
      break;
    }
    }
  }

  for (size_t s = 0; s < a.steps.size(); ++s) {
    const Step &step = a.steps[s];
    std::string where = "step " + std::to_string(s) + ": ";
    auto checkId = [&](uint32_t id, const char *what) {
      if (id < numBuffers)
        return true;
      return fail(where + what + " buffer id " + std::to_string(id) +
                  " out of range (" + std::to_string(numBuffers) + " buffers)");
    };
    auto checkWritable = [&](uint32_t id, const char *what) {
      BufferKind kind = a.buffers[id].kind;
      if (kind == BufferKind::Arena || kind == BufferKind::Output)
        return true;
      return fail(
          where + what + " " + bufName(id) +
          " is not writable (weights, splats and inputs are read-only)");
    };
    switch (step.kind) {
    case Step::Kind::Launch: {
      const LaunchStep &l = step.launch;
      if (l.kernel >= a.kernelNames.size())
        return fail(where + "kernel index " + std::to_string(l.kernel) +
                    " out of range (" + std::to_string(a.kernelNames.size()) +
                    " kernels)");
      for (int d = 0; d < 3; ++d)
        if (l.grid[d] == 0 || l.block[d] == 0)
          return fail(where + "grid and block dimensions must be at least 1");
      for (uint32_t arg : l.args)
        if (!checkId(arg, "argument"))
          return false;
      break;
    }
    case Step::Kind::Matmul: {
      const MatmulStep &m = step.matmul;
      if (!isFloatDType(m.dtype))
        return fail(where +
                    "matmul dtype must be float32, float16, bfloat16 or "
                    "float64, got " +
                    dtypeName(m.dtype));
      if (m.tf32 && m.dtype != DType::F32)
        return fail(where + "a tf32 matmul must be float32, got " +
                    dtypeName(m.dtype));
      if (m.float8 && !float8MatmulFits(m))
        return fail(where +
                    "a matmul of float8 operands sums one matrix, A m x k "
                    "and B n x k with k a multiple of 16, into float32 "
                    "unscaled: no transposed A, batch, alpha, beta, bias, "
                    "residual, activation, norm, widening, tf32 or finish "
                    "kernel, and GEMM kernels only those taking the next "
                    "launch");
      if (m.batch < 1 || m.m < 1 || m.n < 1 || m.k < 1)
        return fail(where + "matmul extents must be at least 1 (batch " +
                    std::to_string(m.batch) + ", m " + std::to_string(m.m) +
                    ", n " + std::to_string(m.n) + ", k " +
                    std::to_string(m.k) + ")");
      if (m.strideA < 0 || m.strideB < 0 || m.strideC < 0 ||
          m.outerStrideA < 0 || m.outerStrideB < 0 || m.outerStrideC < 0)
        return fail(where + "matmul strides must not be negative");
      if (m.outerBatch < 1)
        return fail(where + "matmul outer batch must be at least 1");
      uint64_t mn = 0;
      if (!checkedMul(static_cast<uint64_t>(m.m), static_cast<uint64_t>(m.n),
                      mn) ||
          (m.batch > 1 && static_cast<uint64_t>(m.strideC) < mn))
        return fail(where + "matmul strideC " + std::to_string(m.strideC) +
                    " makes the batch outputs overlap");
      // One inner batch of C spans (batch - 1) * strideC + m * n elements.
      uint64_t innerSpan = 0;
      if (m.outerBatch > 1 &&
          (!checkedMul(static_cast<uint64_t>(m.batch - 1),
                       static_cast<uint64_t>(m.strideC), innerSpan) ||
           !checkedAdd(innerSpan, mn, innerSpan) ||
           static_cast<uint64_t>(m.outerStrideC) < innerSpan))
        return fail(where + "matmul outerStrideC " +
                    std::to_string(m.outerStrideC) +
                    " makes the batch outputs overlap");
      if (!checkId(m.a, "matmul a") || !checkId(m.b, "matmul b") ||
          !checkId(m.c, "matmul c") || !checkWritable(m.c, "matmul c"))
        return false;
      const Buffer &ba = a.buffers[m.a], &bb = a.buffers[m.b],
                   &bc = a.buffers[m.c];
      DType cDtype = m.widen ? DType::F32 : m.dtype;
      if (ba.dtype != m.operandDtype() || bb.dtype != m.operandDtype())
        return fail(where + "matmul operands must both be " +
                    dtypeName(m.operandDtype()));
      if (bc.dtype != cDtype)
        return fail(where + "matmul output c must be " + dtypeName(cDtype));
      if (!matmulOperandFits(ba, m.outerBatch, m.outerStrideA, m.batch,
                             m.strideA, m.m, m.k))
        return fail(where + "matmul a does not fit in " + bufName(m.a));
      if (!matmulOperandFits(bb, m.outerBatch, m.outerStrideB, m.batch,
                             m.strideB, m.k, m.n))
        return fail(where + "matmul b does not fit in " + bufName(m.b));
      if (!matmulOperandFits(bc, m.outerBatch, m.outerStrideC, m.batch,
                             m.strideC, m.m, m.n))
        return fail(where + "matmul c does not fit in " + bufName(m.c));
      if (sameStorageOverlap(bc, ba) || sameStorageOverlap(bc, bb))
        return fail(where + "matmul output c overlaps an operand");
      if (m.bias != kNoBuffer) {
        if (!checkId(m.bias, "matmul bias"))
          return false;
        const Buffer &bias = a.buffers[m.bias];
        if (bias.dtype != m.dtype ||
            bias.bytes < static_cast<uint64_t>(m.n) * dtypeSize(m.dtype))
          return fail(where + "matmul bias " + bufName(m.bias) + " must hold " +
                      std::to_string(m.n) + " elements of " +
                      dtypeName(m.dtype));
        if (sameStorageOverlap(bc, bias))
          return fail(where + "matmul output c overlaps its bias");
      }
      // A buffer laid out as C (the residual, a norm's sum): of the step's
      // type, holding every batch's m x n at C's strides.
      auto laidOutAsC = [&](uint32_t id, const std::string &what) {
        const Buffer &buffer = a.buffers[id];
        if (buffer.dtype != m.dtype)
          return fail(where + what + " " + bufName(id) + " must be " +
                      dtypeName(m.dtype));
        if (!matmulOperandFits(buffer, m.outerBatch, m.outerStrideC, m.batch,
                               m.strideC, m.m, m.n))
          return fail(where + what + " does not fit in " + bufName(id));
        return true;
      };
      // The residual is read where `written` is written, element by
      // element: the same storage, or none of it.
      auto apartFromResidual = [&](const Buffer &written,
                                   const std::string &what) {
        if (m.residual == kNoBuffer)
          return true;
        const Buffer &residual = a.buffers[m.residual];
        if (sameStorageOverlap(written, residual) &&
            (written.offset != residual.offset ||
             written.kind != residual.kind))
          return fail(where + what + " partly overlaps its residual");
        return true;
      };
      if (m.residual != kNoBuffer &&
          (!checkId(m.residual, "matmul residual") ||
           !laidOutAsC(m.residual, "matmul residual") ||
           !apartFromResidual(bc, "matmul output c")))
        return false;
      if (std::string bad = checkGemmCandidates(m, a.kernelNames.size());
          !bad.empty())
        return fail(where + bad);
      if (m.takesNextLaunch() && (s + 1 >= a.steps.size() ||
                                  a.steps[s + 1].kind != Step::Kind::Launch))
        return fail(where + "a GEMM kernel that takes the next launch needs "
                            "a launch step after its matmul");
      if (m.takesNextLaunch() && !sameGuards(a.symbolic, s, s + 1))
        return fail(where + "a GEMM kernel that takes the next launch needs "
                            "that launch to run at the same dims as its "
                            "matmul");
      if (std::string bad = checkFinish(m, a.kernelNames.size()); !bad.empty())
        return fail(where + bad);
      if (std::string bad = checkNorm(a, m); !bad.empty())
        return fail(where + bad);
      if (m.normSum != kNoBuffer) {
        if (!checkId(m.normSum, "matmul norm sum") ||
            !checkWritable(m.normSum, "matmul norm sum"))
          return false;
        if (!laidOutAsC(m.normSum, "matmul norm sum"))
          return false;
        // Written beside C and read back by the norm: apart from C and
        // from everything the step reads but its residual, which it may
        // update in place.
        const Buffer &sum = a.buffers[m.normSum];
        for (uint32_t id : {m.c, m.a, m.b, m.bias, m.normScale, m.normShift})
          if (id != kNoBuffer && sameStorageOverlap(sum, a.buffers[id]))
            return fail(where + "matmul norm sum overlaps " + bufName(id));
        if (!apartFromResidual(sum, "matmul norm sum"))
          return false;
      }
      break;
    }
    case Step::Kind::Copy: {
      const CopyStep &c = step.copy;
      if (!checkId(c.src, "copy source") ||
          !checkId(c.dst, "copy destination") ||
          !checkWritable(c.dst, "copy destination"))
        return false;
      const Buffer &src = a.buffers[c.src], &dst = a.buffers[c.dst];
      if (c.bytes > src.bytes || c.bytes > dst.bytes)
        return fail(where + "copy of " + std::to_string(c.bytes) +
                    " bytes exceeds " + bufName(c.src) + " (" +
                    std::to_string(src.bytes) + ") or " + bufName(c.dst) +
                    " (" + std::to_string(dst.bytes) + ")");
      if (c.bytes && sameStorageOverlap(src, dst))
        return fail(where + "copy source and destination overlap");
      break;
    }
    default:
      return fail(where + "invalid step kind");
    }
  }
  for (size_t i = 0; i < a.kernelNames.size(); ++i)
    if (a.kernelNames[i].empty() ||
        a.kernelNames[i].find('\0') != std::string::npos)
      return fail("kernel name " + std::to_string(i) + " is empty or has NUL");
  // An aliased pair is one storage: equal in type and shape, so that the
  // copy of one into the other (when the caller passes two) fits; an input
  // is the storage of one output at most.
  std::vector<bool> aliased(a.inputs.size(), false);
  for (size_t i = 0; i < a.aliases.size(); ++i) {
    const OutputAlias &alias = a.aliases[i];
    std::string where = "output alias " + std::to_string(i) + ": ";
    if (alias.output >= a.outputs.size() || alias.input >= a.inputs.size() ||
        (i && alias.output <= a.aliases[i - 1].output))
      return fail(where + "output or input index out of range or not in "
                          "ascending output order");
    if (aliased[alias.input])
      return fail(where + "input " + std::to_string(alias.input) +
                  " is the storage of two outputs");
    aliased[alias.input] = true;
    const Buffer &in = a.buffers[a.inputs[alias.input]];
    const Buffer &out = a.buffers[a.outputs[alias.output]];
    if (in.dtype != out.dtype || in.shape != out.shape ||
        alias.axis >= in.shape.size())
      return fail(where + bufName(a.outputs[alias.output]) + " and " +
                  bufName(a.inputs[alias.input]) +
                  " differ in type or shape, or the axis is out of range");
  }
  return true;
}

/// Checks the dims and bindings of a symbolic plan: names, ranges, and every
/// binding's field, target and formula in range.
static bool validateSymbolic(const Artifact &a, std::string &error) {
  const SymbolicPlan &p = a.symbolic;
  auto fail = [&](const std::string &message) {
    error = "invalid artifact: " + message;
    return false;
  };
  if (p.dims.size() > kMaxDims)
    return fail(std::to_string(p.dims.size()) + " dims, more than " +
                std::to_string(kMaxDims));
  for (size_t d = 0; d < p.dims.size(); ++d) {
    const DimRange &dim = p.dims[d];
    if (dim.name.empty() || dim.name.find('\0') != std::string::npos)
      return fail("dim " + std::to_string(d) + ": empty name or NUL");
    if (dim.min < 0 || dim.min > dim.max)
      return fail("dim '" + dim.name + "': range " + std::to_string(dim.min) +
                  ".." + std::to_string(dim.max) + " is empty or negative");
    for (size_t e = 0; e < d; ++e)
      if (p.dims[e].name == dim.name)
        return fail("dim '" + dim.name + "' is named twice");
  }
  if (p.dims.empty() && !p.bindings.empty())
    return fail("size bindings without dims");
  for (size_t i = 0; i < p.bindings.size(); ++i) {
    const SizeBinding &b = p.bindings[i];
    std::string where = "size binding " + std::to_string(i) + ": ";
    bool inRange = false;
    switch (b.field) {
    case SizeField::BufferDim:
      inRange = b.target < a.buffers.size() &&
                b.axis < a.buffers[b.target].shape.size();
      break;
    case SizeField::LaunchGrid:
      inRange = b.target < a.steps.size() &&
                a.steps[b.target].kind == Step::Kind::Launch && b.axis < 3;
      break;
    case SizeField::MatmulField:
      inRange = b.target < a.steps.size() &&
                a.steps[b.target].kind == Step::Kind::Matmul &&
                b.axis < kMatmulFields;
      break;
    case SizeField::CopyBytes:
      inRange = b.target < a.steps.size() &&
                a.steps[b.target].kind == Step::Kind::Copy && b.axis == 0;
      break;
    case SizeField::StepRuns:
      inRange = b.target < a.steps.size() && b.axis == 0;
      break;
    }
    if (!inRange)
      return fail(where + "its field, target or axis is out of range");
    if (b.divisor < 1 || b.lowest > b.highest)
      return fail(where + "divisor below 1 or an empty clamp");
    if (b.formula.terms.size() > kMaxSizeTerms)
      return fail(where + "too many terms");
    for (const SizeTerm &term : b.formula.terms) {
      if (term.dims.size() > kMaxSizeTerms)
        return fail(where + "a term of too many factors");
      for (uint32_t d : term.dims) {
        if (d >= p.dims.size())
          return fail(where + "dim index " + std::to_string(d) +
                      " out of range");
        // A CUDA graph updated in place for new dims updates only the
        // launches whose dims read hold a dim that changed: a grid that
        // follows a dim they omit would keep its old size.
        if (b.field == SizeField::LaunchGrid && d < 64 &&
            !(a.steps[b.target].launch.dimsRead & (uint64_t(1) << d)))
          return fail(where + "the grid of step " + std::to_string(b.target) +
                      " follows dim '" + p.dims[d].name +
                      "', which the launch's dims read omit");
      }
    }
  }
  return true;
}

bool kiln::rt::validateArtifact(const Artifact &a, std::string &error,
                                std::optional<uint64_t> streamedWeightBytes) {
  if (!validatePlan(a, error, streamedWeightBytes.value_or(a.weightBytes())) ||
      !validateSymbolic(a, error))
    return false;
  bool hasLaunch = false;
  for (const Step &step : a.steps)
    hasLaunch |= step.kind == Step::Kind::Launch;
  if (hasLaunch && a.cubin.empty() && a.ptx.empty() && a.cudaSource.empty()) {
    error = "invalid artifact: launch steps but no cubin, PTX or CUDA source";
    return false;
  }
  return true;
}
