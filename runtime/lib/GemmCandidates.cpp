//===- GemmCandidates.cpp - running Kiln's own GEMM kernels ---------------===//

#include "GemmCandidates.h"
#include "TensorMaps.h"

#include <algorithm>
#include <cstring>

using namespace kiln::rt;

/// CUDA's limit on a grid's y and z.
constexpr uint64_t kMostGridYZ = 65535;

const GemmCandidate *kiln::rt::findGemmCandidate(const MatmulStep &step,
                                                 const std::string &name) {
  for (const GemmCandidate &g : step.kernels)
    if (g.name == name)
      return &g;
  return nullptr;
}

std::string kiln::rt::gemmCandidateNames(const MatmulStep &step) {
  std::string names;
  for (const GemmCandidate &g : step.kernels)
    names += (names.empty() ? "" : ", ") + g.name;
  return names.empty() ? "none" : names;
}

const GemmCandidate *kiln::rt::findGemmCandidate(const MatmulStep &step,
                                                 const std::string &name,
                                                 std::string &missing) {
  const GemmCandidate *g = findGemmCandidate(step, name);
  if (!g)
    missing = "the matmul has no GEMM kernel '" + name + "' (" +
              (step.kernels.empty()
                   ? std::string("it has none: kilnc --gemm-kernels offers "
                                 "them, where its shape suits one")
                   : "it has: " + gemmCandidateNames(step)) +
              ")";
  return g;
}

std::string kiln::rt::gemmCandidateMisfit(const MatmulStep &step,
                                          const GemmCandidate &g, const void *a,
                                          const void *b) {
  // Chunks of 8 elements: 16 bytes of a 16-bit type, 32 of fp32.
  const int64_t chunk = 8;
  const std::string chunkBytes = std::to_string(chunk * dtypeSize(step.dtype));
  struct Chunked {
    const char *what;
    int64_t elements;
  } sizes[] = {
      {"A's rows are", step.transA ? step.m : step.k},
      {"B's rows are", step.transB ? step.k : step.n},
      {"A's batch stride is", step.strideA},
      {"B's batch stride is", step.strideB},
      {"A's outer batch stride is", step.outerStrideA},
      {"B's outer batch stride is", step.outerStrideB},
  };
  for (const Chunked &s : sizes)
    if (s.elements % chunk != 0)
      return std::string(s.what) + " " + std::to_string(s.elements) +
             " elements, not whole " + chunkBytes + "-byte chunks";
  if (reinterpret_cast<uintptr_t>(a) % 16 ||
      reinterpret_cast<uintptr_t>(b) % 16)
    return "an operand's address is not 16-byte aligned";
  std::array<uint32_t, 3> grid = gemmGrid(step, g);
  uint64_t rowTiles = (static_cast<uint64_t>(step.m) + g.tileM - 1) / g.tileM;
  uint64_t layers =
      static_cast<uint64_t>(step.batch) * step.outerBatch * g.splitK;
  if (rowTiles > kMostGridYZ || layers > kMostGridYZ || grid[0] == 0)
    return "its grid would exceed CUDA's limits";
  if (g.arrivals != 0 && gemmTiles(step, g) > g.arrivals)
    return "its " + std::to_string(gemmTiles(step, g)) +
           " tiles outnumber its " + std::to_string(g.arrivals) +
           " arrival counters";
  if (g.tensorMaps) {
    if (step.batch * step.outerBatch != 1 || step.transA)
      return "its tensor maps take one matrix, A not transposed";
    for (const TensorMapSpec &map : gemmTensorMaps(step, g, a, b))
      if (std::string misfit = tensorMapMisfit(map); !misfit.empty())
        return misfit;
  }
  return "";
}

std::array<long long, 13>
kiln::rt::gemmIntegerArguments(const MatmulStep &step, const GemmCandidate &g) {
  return {step.batch,
          step.m,
          step.n,
          step.k,
          step.strideA,
          step.strideB,
          step.strideC,
          step.outerBatch,
          step.outerStrideA,
          step.outerStrideB,
          step.outerStrideC,
          static_cast<long long>(step.activation),
          g.splitK};
}

std::vector<long long> kiln::rt::gemmKernelIntegers(const MatmulStep &step,
                                                    const GemmCandidate &g) {
  if (step.hasNorm()) {
    std::array<long long, 15> integers =
        gemmNormIntegerArguments(step, g.splitK);
    return {integers.begin(), integers.end()};
  }
  std::array<long long, 13> integers = gemmIntegerArguments(step, g);
  return {integers.begin(), integers.end()};
}

std::array<long long, 13>
kiln::rt::gemmFinishIntegerArguments(const MatmulStep &step) {
  GemmCandidate whole;
  whole.splitK = 1;
  return gemmIntegerArguments(step, whole);
}

uint64_t kiln::rt::widenedProductElements(const MatmulStep &step) {
  if (!step.widen || step.normSum != kNoBuffer)
    return 0;
  // The last matrix's start plus its m x n (validation bounded C's span).
  uint64_t span = static_cast<uint64_t>(step.m) * step.n;
  if (step.batch > 1)
    span += static_cast<uint64_t>(step.batch - 1) * step.strideC;
  if (step.outerBatch > 1)
    span += static_cast<uint64_t>(step.outerBatch - 1) * step.outerStrideC;
  return span;
}

std::array<long long, 15>
kiln::rt::gemmNormIntegerArguments(const MatmulStep &step, uint32_t splits) {
  GemmCandidate g;
  g.splitK = std::max<uint32_t>(splits, 1);
  std::array<long long, 13> integers = gemmIntegerArguments(step, g);
  std::array<long long, 15> out;
  std::copy(integers.begin(), integers.end(), out.begin());
  uint32_t bits = 0;
  std::memcpy(&bits, &step.normEpsilon, sizeof(bits));
  out[13] = bits;
  out[14] = step.normRms ? 1 : 0;
  return out;
}

std::array<uint32_t, 3> kiln::rt::gemmGrid(const MatmulStep &step,
                                           const GemmCandidate &g) {
  auto clamp = [](uint64_t v) {
    return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX));
  };
  return {
      clamp((static_cast<uint64_t>(step.n) + g.tileN - 1) / g.tileN),
      clamp((static_cast<uint64_t>(step.m) + g.tileM - 1) / g.tileM),
      clamp(static_cast<uint64_t>(step.batch) * step.outerBatch * g.splitK)};
}

unsigned kiln::rt::gemmKernelArity(const MatmulStep &step,
                                   const GemmCandidate &g) {
  return (step.hasNorm() ? kGemmNormedKernelArity : kGemmKernelArity) +
         (g.tensorMaps ? 2 : 0);
}

uint64_t kiln::rt::gemmPartialFloats(const MatmulStep &step,
                                     const GemmCandidate &g) {
  if (g.splitK <= 1 && !step.hasNorm())
    return 0;
  uint64_t rows = static_cast<uint64_t>(step.batch) * step.outerBatch * step.m;
  uint64_t floats = rows * g.splitK * step.n;
  // A norm's mean and squared deviations of each row over each column tile.
  if (step.hasNorm())
    floats +=
        rows * ((static_cast<uint64_t>(step.n) + g.tileN - 1) / g.tileN) * 2;
  return floats;
}

uint64_t kiln::rt::gemmTiles(const MatmulStep &step, const GemmCandidate &g) {
  // Saturating: a malformed artifact's extents need not multiply in 64 bits.
  const uint64_t factors[] = {
      (static_cast<uint64_t>(step.m) + g.tileM - 1) / g.tileM,
      (static_cast<uint64_t>(step.n) + g.tileN - 1) / g.tileN,
      static_cast<uint64_t>(step.batch),
      static_cast<uint64_t>(step.outerBatch)};
  uint64_t tiles = 1;
  for (uint64_t f : factors)
    tiles = f != 0 && tiles > UINT64_MAX / f ? UINT64_MAX : tiles * f;
  return tiles;
}

uint32_t kiln::rt::gemmFinishBlocks(const MatmulStep &step) {
  uint64_t total =
      static_cast<uint64_t>(step.batch) * step.outerBatch * step.m * step.n;
  return static_cast<uint32_t>(std::clamp<uint64_t>(
      (total + kGemmFinishThreads - 1) / kGemmFinishThreads, 1, kMostGridYZ));
}

uint32_t kiln::rt::gemmNormBlocks(const MatmulStep &step) {
  uint64_t rows = static_cast<uint64_t>(step.batch) * step.outerBatch * step.m;
  // Rows of up to 1,024 columns take a warp each, wider ones the block, as
  // the kernel reads n (GemmEmitter.cpp's kNormKernel).
  uint64_t rowsPerBlock = step.n <= 1024 ? kGemmNormThreads / 32 : 1;
  return static_cast<uint32_t>(std::clamp<uint64_t>(
      (rows + rowsPerBlock - 1) / rowsPerBlock, 1, kMostGridYZ));
}
