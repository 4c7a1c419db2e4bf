//===- GemmCandidates.h - running Kiln's own GEMM kernels -------*- C++ -*-===//
//
// What both backends need to run a matmul step on one of Kiln's GEMM
// kernels (rt::GemmCandidate, ArtifactSteps.h) instead of cuBLASLt: finding
// the candidate a run asks for, whether the step's operands at this run fit
// it, and the kernels' arguments and grids.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_GEMMCANDIDATES_H
#define KILN_RUNTIME_LIB_GEMMCANDIDATES_H

#include "kiln/runtime/ArtifactSteps.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

/// The run-time option value (CudaOptions::gemm) under which Kiln's GEMM
/// kernels race cuBLASLt's choice for each matmul instead of being asked
/// for by name.
constexpr const char *kTimedGemmKernels = "timed";

/// Parameters of the main kernel (six pointers, then the integers), and
/// of one that finishes a norm (nine pointers, the integers, epsilon and
/// the norm's kind).
constexpr unsigned kGemmKernelArity = 6 + 13;
constexpr unsigned kGemmNormedKernelArity = 9 + 13 + 2;
/// The parameters `g`'s main kernel takes for `step`: the above, then A's
/// and B's tensor maps where it takes them.
unsigned gemmKernelArity(const MatmulStep &step, const GemmCandidate &g);
/// Parameters of a step's norm kernel: four pointers, the integers,
/// epsilon's bits and the norm's kind.
constexpr unsigned kGemmNormArity = 4 + 13 + 2;
/// Parameters of a step's finish kernel: the product, C, then the integers.
constexpr unsigned kGemmFinishArity = 2 + 13;
/// The integers of a step's finish kernel: gemmIntegerArguments' for a
/// split of 1.
std::array<long long, 13> gemmFinishIntegerArguments(const MatmulStep &step);
/// The elements of the runtime's scratch that a widened step's product
/// takes after cuBLASLt (MatmulStep::widen, without a sum to land in), laid
/// out as C at the step's extents: 0 for any other step.
uint64_t widenedProductElements(const MatmulStep &step);

/// The candidate of `step` named `name`, or null.
const GemmCandidate *findGemmCandidate(const MatmulStep &step,
                                       const std::string &name);

/// The names of `step`'s candidates, comma-separated ("none" without).
std::string gemmCandidateNames(const MatmulStep &step);

/// The candidate of `step` named `name` (a run's option), or why there is
/// none: "the matmul has no GEMM kernel 'NAME' (it has: ...)", or for a
/// step without any, where they come from.
const GemmCandidate *findGemmCandidate(const MatmulStep &step,
                                       const std::string &name,
                                       std::string &missing);

/// Why `g` cannot run `step` (its extents at this run) over operands at
/// `a` and `b`, or "": rows, batch strides and addresses in whole 16-byte
/// chunks, a grid within CUDA's limits and a split's tiles within its
/// arrival counters; for a kernel that takes tensor maps, one matrix and
/// maps both backends encode (TensorMaps.h).
std::string gemmCandidateMisfit(const MatmulStep &step, const GemmCandidate &g,
                                const void *a, const void *b);

/// The kernels' integer arguments: the step's extents and strides in
/// MatmulField order, the activation and the split.
std::array<long long, 13> gemmIntegerArguments(const MatmulStep &step,
                                               const GemmCandidate &g);
/// The integers `g`'s main kernel takes for `step`: gemmIntegerArguments',
/// then with a norm epsilon's float bits and 1 for RMSNorm.
std::vector<long long> gemmKernelIntegers(const MatmulStep &step,
                                          const GemmCandidate &g);

/// A step's norm kernel's integer arguments: gemmIntegerArguments' with
/// `splits` splits (at least 1), then the norm's epsilon as its float bits
/// (kernels of both backends take pointers and integers), then 1 for an
/// RMSNorm, 0 for a LayerNorm.
std::array<long long, 15> gemmNormIntegerArguments(const MatmulStep &step,
                                                   uint32_t splits);

/// The main kernel's grid.
std::array<uint32_t, 3> gemmGrid(const MatmulStep &step,
                                 const GemmCandidate &g);

/// Floats of partial sums a split writes (0 without a split, unless the
/// step has a norm: its finish reads the one split's sums), and a norm's
/// statistics after them.
uint64_t gemmPartialFloats(const MatmulStep &step, const GemmCandidate &g);

/// Threads a block of a step's norm kernel, and its blocks: a warp a row
/// of up to 1,024 columns, else the block a row.
constexpr uint32_t kGemmNormThreads = 256;
uint32_t gemmNormBlocks(const MatmulStep &step);

/// Tiles of C that `g` computes for `step`, over every matrix of the
/// batch (what its arrival counters count), saturating at UINT64_MAX.
uint64_t gemmTiles(const MatmulStep &step, const GemmCandidate &g);

/// Threads a block of a step's finish kernel after cuBLASLt (one element a
/// thread, any grid), and its blocks for `step`.
constexpr uint32_t kGemmFinishThreads = 256;
uint32_t gemmFinishBlocks(const MatmulStep &step);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_GEMMCANDIDATES_H
