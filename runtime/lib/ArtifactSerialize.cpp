//===- ArtifactSerialize.cpp - Encode and decode a Kiln plan --------------===//
//
// The artifact encoding described in ArtifactFormat.h, written with
// `ByteWriter` and read back with `ByteReader` (ArtifactBytes.h).
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/ArtifactFormat.h"

#include "ArtifactBytes.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

using namespace kiln::rt;

/// Encoded size of the smallest buffer (empty name, rank 0).
static constexpr size_t kMinBufferBytes = 1 + 1 + 8 + 4 + 8 + 8;
/// Encoded size of the smallest step (a copy).
static constexpr size_t kMinStepBytes = 1 + 4 + 4 + 8;
/// Encoded size of the smallest size binding (no terms).
static constexpr size_t kMinBindingBytes = 1 + 4 + 4 + 8 + 8 + 8 + 8;

std::string kiln::rt::serializeArtifactPrefix(const Artifact &a,
                                              uint64_t weightBytes) {
  detail::ByteWriter w;
  w.raw(kArtifactMagic, sizeof(kArtifactMagic));
  w.u32(kArtifactFormatVersion);
  w.u32(a.abiVersion);
  w.str(a.kilnVersion);
  w.str(a.arch);
  w.str(a.modelHash);
  w.u64(a.kernelNames.size());
  for (const std::string &name : a.kernelNames)
    w.str(name);
  w.str(a.cubin);
  w.str(a.ptx);
  w.str(a.cudaSource);
  w.u64(a.arenaBytes);
  w.u64(a.buffers.size());
  for (const Buffer &b : a.buffers) {
    w.u8(static_cast<uint8_t>(b.kind));
    w.u8(static_cast<uint8_t>(b.dtype));
    w.str(b.name);
    w.u32(static_cast<uint32_t>(b.shape.size()));
    for (int64_t dim : b.shape)
      w.i64(dim);
    w.u64(b.offset);
    w.u64(b.bytes);
  }
  for (const std::vector<uint32_t> *ids : {&a.inputs, &a.outputs}) {
    w.u64(ids->size());
    for (uint32_t id : *ids)
      w.u32(id);
  }
  w.u64(a.steps.size());
  for (const Step &s : a.steps) {
    w.u8(static_cast<uint8_t>(s.kind));
    switch (s.kind) {
    case Step::Kind::Launch:
      w.u32(s.launch.kernel);
      for (uint32_t v : s.launch.grid)
        w.u32(v);
      for (uint32_t v : s.launch.block)
        w.u32(v);
      w.u32(s.launch.sharedBytes);
      w.u64(s.launch.args.size());
      for (uint32_t id : s.launch.args)
        w.u32(id);
      w.u64(s.launch.dimsRead);
      break;
    case Step::Kind::Matmul: {
      const MatmulStep &m = s.matmul;
      w.u8(static_cast<uint8_t>(m.dtype));
      w.u8(m.transA);
      w.u8(m.transB);
      for (int64_t v :
           {m.batch, m.m, m.n, m.k, m.strideA, m.strideB, m.strideC,
            m.outerBatch, m.outerStrideA, m.outerStrideB, m.outerStrideC})
        w.i64(v);
      w.u32(m.a);
      w.u32(m.b);
      w.u32(m.c);
      w.f32(m.alpha);
      w.f32(m.beta);
      w.u32(m.bias);
      w.u32(m.residual);
      w.u8(static_cast<uint8_t>(m.activation));
      w.u32(m.finishKernel);
      w.u8(m.widen ? 1 : 0);
      w.u8(m.tf32 ? 1 : 0);
      w.u8(m.float8 ? 1 : 0);
      w.u32(m.normScale);
      w.u32(m.normShift);
      w.f32(m.normEpsilon);
      w.u32(m.normKernel);
      w.u8(m.normRms ? 1 : 0);
      w.u32(m.normSum);
      w.u64(m.kernels.size());
      for (const GemmCandidate &g : m.kernels) {
        w.str(g.name);
        for (uint32_t v : {g.kernel, g.arrivals, g.tileM, g.tileN, g.threads,
                           g.splitK, g.sharedBytes})
          w.u32(v);
        w.u8(g.tensorMaps ? 1 : 0);
        w.u8(g.withNextLaunch ? 1 : 0);
      }
      break;
    }
    case Step::Kind::Copy:
      w.u32(s.copy.src);
      w.u32(s.copy.dst);
      w.u64(s.copy.bytes);
      break;
    }
  }
  w.u64(a.indexSites.size());
  for (const std::string &site : a.indexSites)
    w.str(site);
  w.u64(a.aliases.size());
  for (const OutputAlias &alias : a.aliases) {
    w.u32(alias.output);
    w.u32(alias.input);
    w.u32(alias.axis);
  }
  w.u64(a.symbolic.dims.size());
  for (const DimRange &dim : a.symbolic.dims) {
    w.str(dim.name);
    w.i64(dim.min);
    w.i64(dim.max);
  }
  w.u64(a.symbolic.bindings.size());
  for (const SizeBinding &b : a.symbolic.bindings) {
    w.u8(static_cast<uint8_t>(b.field));
    w.u32(b.target);
    w.u32(b.axis);
    w.i64(b.divisor);
    w.i64(b.lowest);
    w.i64(b.highest);
    w.u64(b.formula.terms.size());
    for (const SizeTerm &term : b.formula.terms) {
      w.i64(term.coefficient);
      w.u64(term.dims.size());
      for (uint32_t d : term.dims)
        w.u32(d);
    }
  }
  w.str(a.weightsFile.name);
  w.u64(a.weightsFile.bytes);
  w.u64(a.weightsFile.checksum);
  w.u64(weightBytes);
  return std::move(w.out);
}

std::string kiln::rt::serializeArtifact(const Artifact &a) {
  return serializeArtifactPrefix(a, a.weights.size()) + a.weights;
}

bool kiln::rt::deserializeArtifact(const char *data, size_t size, Artifact &out,
                                   std::string &error) {
  out = Artifact();
  detail::ByteReader r(data, size);
  auto fail = [&]() {
    error = "corrupt artifact: " + r.error;
    return false;
  };
  if (size < sizeof(kArtifactMagic) ||
      std::memcmp(data, kArtifactMagic, sizeof(kArtifactMagic)) != 0) {
    error = "corrupt artifact: bad magic (not a Kiln artifact)";
    return false;
  }
  uint64_t skipped = 0;
  r.get(skipped, 8, "magic");
  uint32_t formatVersion = 0;
  if (!r.u32(formatVersion, "format version"))
    return fail();
  if (formatVersion != kArtifactFormatVersion) {
    error = "unsupported artifact format version " +
            std::to_string(formatVersion) + " (this runtime reads version " +
            std::to_string(kArtifactFormatVersion) + ")";
    return false;
  }
  uint64_t n = 0;
  if (!r.u32(out.abiVersion, "ABI version") ||
      !r.str(out.kilnVersion, "Kiln version") || !r.str(out.arch, "arch") ||
      !r.str(out.modelHash, "model hash") || !r.count(n, 8, "kernel names"))
    return fail();
  out.kernelNames.resize(n);
  for (std::string &name : out.kernelNames)
    if (!r.str(name, "kernel name"))
      return fail();
  if (!r.str(out.cubin, "cubin") || !r.str(out.ptx, "PTX") ||
      !r.str(out.cudaSource, "CUDA source") ||
      !r.u64(out.arenaBytes, "arena size") ||
      !r.count(n, kMinBufferBytes, "buffers"))
    return fail();
  out.buffers.resize(n);
  for (Buffer &b : out.buffers) {
    uint8_t kind = 0, dtype = 0;
    uint32_t rank = 0;
    if (!r.u8(kind, "buffer kind") || !r.u8(dtype, "buffer dtype"))
      return fail();
    if (kind > static_cast<uint8_t>(kLastBufferKind))
      return r.fail("invalid buffer kind " + std::to_string(kind)), fail();
    if (dtype > static_cast<uint8_t>(kLastDType))
      return r.fail("invalid dtype " + std::to_string(dtype)), fail();
    b.kind = static_cast<BufferKind>(kind);
    b.dtype = static_cast<DType>(dtype);
    if (!r.str(b.name, "buffer name") || !r.u32(rank, "buffer rank"))
      return fail();
    if (rank > kMaxRank)
      return r.fail("buffer rank " + std::to_string(rank) + " exceeds " +
                    std::to_string(kMaxRank)),
             fail();
    b.shape.resize(rank);
    for (int64_t &dim : b.shape)
      if (!r.i64(dim, "dimension"))
        return fail();
    if (!r.u64(b.offset, "buffer offset") || !r.u64(b.bytes, "buffer size"))
      return fail();
  }
  for (std::vector<uint32_t> *ids : {&out.inputs, &out.outputs}) {
    if (!r.count(n, 4, "graph inputs/outputs"))
      return fail();
    ids->resize(n);
    for (uint32_t &id : *ids)
      if (!r.u32(id, "graph input/output id"))
        return fail();
  }
  if (!r.count(n, kMinStepBytes, "steps"))
    return fail();
  out.steps.resize(n);
  for (Step &s : out.steps) {
    uint8_t kind = 0;
    if (!r.u8(kind, "step kind"))
      return fail();
    if (kind > static_cast<uint8_t>(kLastStepKind))
      return r.fail("invalid step kind " + std::to_string(kind)), fail();
    s.kind = static_cast<Step::Kind>(kind);
    switch (s.kind) {
    case Step::Kind::Launch: {
      LaunchStep &l = s.launch;
      if (!r.u32(l.kernel, "kernel index"))
        return fail();
      for (uint32_t &v : l.grid)
        if (!r.u32(v, "grid"))
          return fail();
      for (uint32_t &v : l.block)
        if (!r.u32(v, "block"))
          return fail();
      if (!r.u32(l.sharedBytes, "shared bytes") ||
          !r.count(n, 4, "kernel arguments"))
        return fail();
      l.args.resize(n);
      for (uint32_t &id : l.args)
        if (!r.u32(id, "kernel argument"))
          return fail();
      if (!r.u64(l.dimsRead, "dims read"))
        return fail();
      break;
    }
    case Step::Kind::Matmul: {
      MatmulStep &m = s.matmul;
      uint8_t dtype = 0, transA = 0, transB = 0;
      if (!r.u8(dtype, "matmul dtype") || !r.u8(transA, "transA") ||
          !r.u8(transB, "transB"))
        return fail();
      if (dtype > static_cast<uint8_t>(kLastDType) || transA > 1 || transB > 1)
        return r.fail("invalid matmul dtype or transpose flag"), fail();
      m.dtype = static_cast<DType>(dtype);
      m.transA = transA;
      m.transB = transB;
      for (int64_t *v :
           {&m.batch, &m.m, &m.n, &m.k, &m.strideA, &m.strideB, &m.strideC,
            &m.outerBatch, &m.outerStrideA, &m.outerStrideB, &m.outerStrideC})
        if (!r.i64(*v, "matmul extent"))
          return fail();
      if (!r.u32(m.a, "matmul a") || !r.u32(m.b, "matmul b") ||
          !r.u32(m.c, "matmul c") || !r.f32(m.alpha, "alpha") ||
          !r.f32(m.beta, "beta") || !r.u32(m.bias, "matmul bias") ||
          !r.u32(m.residual, "matmul residual"))
        return fail();
      uint8_t activation = 0;
      if (!r.u8(activation, "matmul activation"))
        return fail();
      if (activation > static_cast<uint8_t>(kLastMatmulActivation))
        return r.fail("invalid matmul activation"), fail();
      m.activation = static_cast<MatmulActivation>(activation);
      uint8_t widen = 0;
      if (!r.u32(m.finishKernel, "matmul finish kernel") ||
          !r.u8(widen, "matmul widen"))
        return fail();
      if (widen > 1)
        return r.fail("invalid matmul widen flag"), fail();
      m.widen = widen != 0;
      uint8_t tf32 = 0;
      if (!r.u8(tf32, "matmul tf32"))
        return fail();
      if (tf32 > 1)
        return r.fail("invalid matmul tf32 flag"), fail();
      m.tf32 = tf32 != 0;
      uint8_t float8 = 0;
      if (!r.u8(float8, "matmul float8"))
        return fail();
      if (float8 > 1)
        return r.fail("invalid matmul float8 flag"), fail();
      m.float8 = float8 != 0;
      if (!r.u32(m.normScale, "matmul norm scale") ||
          !r.u32(m.normShift, "matmul norm shift") ||
          !r.f32(m.normEpsilon, "matmul norm epsilon") ||
          !r.u32(m.normKernel, "matmul norm kernel"))
        return fail();
      uint8_t rms = 0;
      if (!r.u8(rms, "matmul norm kind") ||
          !r.u32(m.normSum, "matmul norm sum"))
        return fail();
      if (rms > 1)
        return r.fail("invalid matmul norm kind"), fail();
      m.normRms = rms != 0;
      uint64_t kernels = 0;
      // A name's length, then seven u32 and two flags.
      if (!r.count(kernels, 8 + 7 * 4 + 2, "matmul GEMM kernels"))
        return fail();
      m.kernels.resize(kernels);
      for (GemmCandidate &g : m.kernels) {
        uint8_t tensorMaps = 0, withNextLaunch = 0;
        if (!r.str(g.name, "GEMM kernel name") ||
            !r.u32(g.kernel, "GEMM kernel") ||
            !r.u32(g.arrivals, "GEMM arrival counters") ||
            !r.u32(g.tileM, "GEMM tile rows") ||
            !r.u32(g.tileN, "GEMM tile columns") ||
            !r.u32(g.threads, "GEMM threads") ||
            !r.u32(g.splitK, "GEMM split") ||
            !r.u32(g.sharedBytes, "GEMM shared memory") ||
            !r.u8(tensorMaps, "GEMM tensor maps") ||
            !r.u8(withNextLaunch, "GEMM next launch"))
          return fail();
        if (tensorMaps > 1 || withNextLaunch > 1)
          return r.fail("invalid GEMM tensor maps or next launch flag"), fail();
        g.tensorMaps = tensorMaps != 0;
        g.withNextLaunch = withNextLaunch != 0;
      }
      break;
    }
    case Step::Kind::Copy:
      if (!r.u32(s.copy.src, "copy source") ||
          !r.u32(s.copy.dst, "copy destination") ||
          !r.u64(s.copy.bytes, "copy size"))
        return fail();
      break;
    }
  }
  if (!r.count(n, 8, "index sites"))
    return fail();
  out.indexSites.resize(n);
  for (std::string &site : out.indexSites)
    if (!r.str(site, "index site"))
      return fail();
  if (!r.count(n, 4 + 4 + 4, "output aliases"))
    return fail();
  out.aliases.resize(n);
  for (OutputAlias &alias : out.aliases)
    if (!r.u32(alias.output, "alias output") ||
        !r.u32(alias.input, "alias input") || !r.u32(alias.axis, "alias axis"))
      return fail();
  if (!r.count(n, 8 + 8 + 8, "dims"))
    return fail();
  out.symbolic.dims.resize(n);
  for (DimRange &dim : out.symbolic.dims)
    if (!r.str(dim.name, "dim name") || !r.i64(dim.min, "dim minimum") ||
        !r.i64(dim.max, "dim maximum"))
      return fail();
  if (!r.count(n, kMinBindingBytes, "size bindings"))
    return fail();
  out.symbolic.bindings.resize(n);
  for (SizeBinding &b : out.symbolic.bindings) {
    uint8_t field = 0;
    if (!r.u8(field, "size field"))
      return fail();
    if (field > static_cast<uint8_t>(kLastSizeField))
      return r.fail("invalid size field " + std::to_string(field)), fail();
    b.field = static_cast<SizeField>(field);
    if (!r.u32(b.target, "size target") || !r.u32(b.axis, "size axis") ||
        !r.i64(b.divisor, "size divisor") || !r.i64(b.lowest, "size lowest") ||
        !r.i64(b.highest, "size highest") || !r.count(n, 8 + 8, "size terms"))
      return fail();
    b.formula.terms.resize(n);
    for (SizeTerm &term : b.formula.terms) {
      if (!r.i64(term.coefficient, "size coefficient") ||
          !r.count(n, 4, "size factors"))
        return fail();
      term.dims.resize(n);
      for (uint32_t &d : term.dims)
        if (!r.u32(d, "size factor"))
          return fail();
    }
  }
  if (!r.str(out.weightsFile.name, "weights file") ||
      !r.u64(out.weightsFile.bytes, "weights file size") ||
      !r.u64(out.weightsFile.checksum, "weights file checksum") ||
      !r.str(out.weights, "weights"))
    return fail();
  if (!out.weightsFile.name.empty() &&
      (!out.weights.empty() ||
       out.weightsFile.name.find('/') != std::string::npos ||
       out.weightsFile.name == "." || out.weightsFile.name == "..")) {
    error = "corrupt artifact: weights file '" + out.weightsFile.name +
            "' is not a plain file name, or the weights are also embedded";
    return false;
  }
  if (r.remaining() != 0) {
    error = "corrupt artifact: " + std::to_string(r.remaining()) +
            " trailing bytes after the weights";
    return false;
  }
  return validateArtifact(out, error);
}
