//===- GemmConfig.cpp - the GEMM layouts a matmul step offers -------------===//
//
// One function decides which of Kiln's GEMM layouts a matmul step offers
// beside cuBLASLt's algorithms: the run chooses among them all by timing
// on its own operands (runtime/lib/MatmulChoice.cpp), so this list only
// has to hold the layouts that may win, each once. The rules follow the
// shape of the GEMMs that leave an H100 or H200 idle under cuBLASLt
// (issue 38's BERT-base profile): a 128-row GEMM has 6 to 18 tiles of
// 128 x 128 for 132 SMs, so K is split across blocks until the tiles times
// the splits fill the SMs.
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"

#include <algorithm>

namespace kiln {

namespace {

/// SMs of the H100 SXM and the H200, the GPUs Kiln is tuned for: the
/// blocks a split aims to fill.
constexpr int64_t kSMs = 132;

/// K tiles each split keeps at least: fewer, and the fp32 partials the
/// splits write and the reduce reads cost more than the split saves.
constexpr int64_t kLeastTilesPerSplit = 4;

/// The most blocks K is split across.
constexpr int64_t kMostSplits = 16;

/// The most scratch a split may take (splits x matrices x m x n floats at
/// the top of the dims' ranges).
constexpr int64_t kMostPartialBytes = int64_t(64) << 20;

/// The most candidates a step offers: each costs a timed run at load.
constexpr size_t kMostCandidates = 5;

/// The layouts, largest first.
/// 128 x 128 in four warps of 64 x 64: the most reuse of each fragment,
/// for GEMMs with rows to fill the GPU.
constexpr GemmConfig kLarge = {128, 128, 32, 2, 2, 1};
/// 64 x 64 in four warps of 32 x 32: four times the blocks of kLarge.
constexpr GemmConfig kMedium = {64, 64, 32, 2, 2, 1};
/// 16 x 64 in four warps of 16 x 16: decoding's few rows, where a taller
/// tile would multiply zeros.
constexpr GemmConfig kSmall = {16, 64, 32, 1, 4, 1};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Why the sizes read in 16-byte chunks are not all multiples of eight
/// 16-bit elements, or "". A symbolic size is checked at run time.
std::string chunkRefusal(const GemmShape &shape) {
  for (const auto &[what, size] : shape.chunked)
    if (std::optional<int64_t> v = size.getConstant(); v && *v % 8 != 0)
      return what + " is " + std::to_string(*v) +
             " elements, not whole 16-byte chunks";
  return "";
}

/// The split of K that fills the SMs with `config`'s tiles at the least
/// rows, or 1 where the tiles fill them already or K is too short.
int64_t splitFor(const GemmConfig &config, const GemmShape &shape) {
  int64_t tiles = ceilDiv(shape.leastM, config.tileM) *
                  ceilDiv(shape.n, config.tileN) * shape.batch;
  int64_t most = std::min(kMostSplits,
                          ceilDiv(shape.k, config.tileK) / kLeastTilesPerSplit);
  int64_t split = 1;
  while (tiles * split < kSMs && split * 2 <= most)
    split *= 2;
  int64_t partialBytes = split * shape.batch * shape.upperM * shape.n * 4;
  return partialBytes <= kMostPartialBytes ? split : 1;
}

} // namespace

GemmChoice chooseGemmConfigs(const GemmShape &shape) {
  GemmChoice choice;
  if (shape.dtype != rt::DType::F16 && shape.dtype != rt::DType::BF16) {
    choice.refusal = std::string("Kiln's GEMMs are float16 and bfloat16; ") +
                     rt::dtypeName(shape.dtype) + " runs on cuBLASLt";
    return choice;
  }
  choice.refusal = chunkRefusal(shape);
  if (!choice.refusal.empty())
    return choice;
  std::vector<GemmConfig> layouts;
  if (shape.upperM >= kLarge.tileM)
    layouts.push_back(kLarge);
  layouts.push_back(kMedium);
  if (shape.leastM <= 2 * kSmall.tileM)
    layouts.push_back(kSmall);
  for (const GemmConfig &layout : layouts) {
    choice.configs.push_back(layout);
    GemmConfig split = layout;
    split.splitK = splitFor(layout, shape);
    if (split.splitK > 1)
      choice.configs.push_back(split);
  }
  if (choice.configs.size() > kMostCandidates)
    choice.configs.resize(kMostCandidates);
  return choice;
}

} // namespace kiln
