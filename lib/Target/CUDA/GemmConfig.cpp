//===- GemmConfig.cpp - the GEMM layouts a matmul step offers -------------===//
//
// One function decides which of Kiln's GEMM layouts a matmul step offers
// beside cuBLASLt's algorithms: the run chooses among them all by timing
// on its own operands (runtime/lib/MatmulChoice.cpp), so this list only
// has to hold the layouts that may win, each once. The rules follow the
// shape of the GEMMs that leave an H100 or H200 idle under cuBLASLt
// (issue 38's BERT-base profile): a 128-row GEMM has 6 to 18 tiles of
// 128 x 128 for 132 SMs, so K is split across blocks until the tiles times
// the splits fill the SMs. A decoding step's few rows get the GEMV form
// first, whose time is one pass over B.
//
//===----------------------------------------------------------------------===//

#include "GemmEmitter.h"

#include <algorithm>

namespace kiln {

namespace {

/// K tiles each split keeps at least: fewer, and the fp32 partials the
/// splits write and the reduce reads cost more than the split saves.
constexpr int64_t kLeastTilesPerSplit = 4;

/// The most scratch a split may take (splits x matrices x m x n floats at
/// the top of the dims' ranges).
constexpr int64_t kMostPartialBytes = int64_t(64) << 20;

/// The most candidates a step offers: each costs a timed run at load.
constexpr size_t kMostCandidates = 6;

/// The layouts of the mma form, largest first.
/// 128 x 128 in four warps of 64 x 64: the most reuse of each fragment,
/// for GEMMs with rows to fill the GPU.
constexpr GemmConfig kLarge = {GemmForm::Mma, 128, 128, 32, 2, 2, 1};
/// 64 x 64 in four warps of 32 x 32: four times the blocks of kLarge.
constexpr GemmConfig kMedium = {GemmForm::Mma, 64, 64, 32, 2, 2, 1};
/// 16 x 64 in four warps of 16 x 16: decoding's few rows, where a taller
/// tile would multiply zeros.
constexpr GemmConfig kSmall = {GemmForm::Mma, 16, 64, 32, 1, 4, 1};

/// fp32's tiles on the CUDA cores: the mma form's, with 16 columns of K a
/// step, so that two buffers of 128 x 128 tiles stay within the 48 KiB of
/// static shared memory (41 KiB).
constexpr GemmConfig kLargeFma = {GemmForm::Fma, 128, 128, 16, 2, 2, 1};
constexpr GemmConfig kMediumFma = {GemmForm::Fma, 64, 64, 16, 2, 2, 1};
constexpr GemmConfig kSmallFma = {GemmForm::Fma, 16, 64, 16, 1, 4, 1};

/// Hopper's form: 128 x 128 tiles in two warpgroups where M reaches 128,
/// 64 x 128 in one below; four stages of 64 columns of K in flight (128 or
/// 96 KiB of shared memory), three ahead of the tile being multiplied.
constexpr int64_t kWgmmaTileN = 128;
constexpr int64_t kWgmmaStages = 4;

/// The GEMV form is offered where the least M is this or fewer: a pass
/// over B for every 8 rows still reads less than the mma form's staging
/// of B for 16 rows of which most are zeros.
constexpr int64_t kMostGemvLeastRows = 16;
/// The most rows a GEMV block owns: 8 rows x 8 columns of fp32 sums a
/// thread, beside the chunks in flight, fit its registers (fp32's chunks
/// are twice the words, so one is in flight where a 16-bit type has two:
/// GemvEmitter.cpp).
constexpr int64_t kMostGemvRows = 8;
/// Blocks a GEMV aims for: two of 128 threads an SM keep 32 KiB of loads
/// in flight there, about what HBM's latency times its bandwidth asks.
constexpr int64_t kGemvBlocks = 2 * kGemmTargetSMs;
/// Elements of K each GEMV split keeps at least: fewer, and the partials
/// cost more than the blocks gain.
constexpr int64_t kLeastGemvKPerSplit = 512;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t powerOfTwoAtLeast(int64_t v) {
  int64_t p = 1;
  while (p < v)
    p *= 2;
  return p;
}

/// The GEMV layout of `rows` rows for B stored as `shape` has it: 128
/// threads; a 128-column slab of a k x n B (16 threads across its 16-byte
/// columns, 8 chunks of K at a time), 64 columns of an n x k B (four
/// columns of 8 lanes a warp, four a lane: 64 bytes of B a lane a chunk).
GemmConfig gemvLayout(int64_t rows, const GemmShape &shape) {
  return {GemmForm::Gemv, rows, shape.transB ? 64 : 128, 8, 1, 4, 1};
}

/// Why the sizes read in chunks of eight elements (16 bytes of a 16-bit
/// type, 32 of fp32) are not all multiples of eight, or "". A symbolic size
/// is checked at run time.
std::string chunkRefusal(const GemmShape &shape) {
  int64_t chunkBytes = 8 * rt::dtypeSize(shape.dtype);
  for (const auto &[what, size] : shape.chunked)
    if (std::optional<int64_t> v = size.getConstant(); v && *v % 8 != 0)
      return what + " is " + std::to_string(*v) + " elements, not whole " +
             std::to_string(chunkBytes) + "-byte chunks";
  return "";
}

/// The power-of-two split of K, at most `most`, that brings `config`'s
/// blocks at the least rows to `blocks`; 1 where they are there already,
/// or where the partials would take too much scratch.
int64_t splitFor(const GemmConfig &config, const GemmShape &shape,
                 int64_t blocks, int64_t most) {
  int64_t tiles = ceilDiv(shape.leastM, config.tileM) *
                  ceilDiv(shape.n, config.tileN) * shape.batch;
  most = std::min(kGemmMostSplits, most);
  int64_t split = 1;
  while (tiles * split < blocks && split * 2 <= most)
    split *= 2;
  int64_t partialBytes = split * shape.batch * shape.upperM * shape.n * 4;
  return partialBytes <= kMostPartialBytes ? split : 1;
}

/// The GEMV layouts for decoding's rows: one block row for the least M,
/// and one of up to kMostGemvRows rows for the top of its range, each
/// split to fill the GPU (unsplit, a GEMV of a few slabs idles most SMs,
/// so only the split is offered).
void offerGemv(const GemmShape &shape, std::vector<GemmConfig> &configs) {
  if (shape.transA || shape.leastM > kMostGemvLeastRows)
    return;
  int64_t least = std::min(kMostGemvRows, powerOfTwoAtLeast(shape.leastM));
  int64_t upper = std::min(kMostGemvRows, powerOfTwoAtLeast(shape.upperM));
  std::vector<int64_t> rowChoices = {least};
  if (upper != least)
    rowChoices.push_back(upper);
  for (int64_t rows : rowChoices) {
    GemmConfig layout = gemvLayout(rows, shape);
    layout.splitK =
        splitFor(layout, shape, kGemvBlocks, shape.k / kLeastGemvKPerSplit);
    configs.push_back(layout);
  }
}

/// The wgmma form, whole and split like the mma form's layouts, for one
/// matrix of A stored m x k whose M reaches a warpgroup's 64 rows.
void offerWgmma(const GemmShape &shape, std::vector<GemmConfig> &configs) {
  if (shape.transA || shape.batch != 1 || shape.upperM < 64)
    return;
  int64_t tileM = shape.upperM >= 128 ? 128 : 64;
  GemmConfig layout = {GemmForm::Wgmma,  tileM, kWgmmaTileN, 64,
                       4 * (tileM / 64), 1,     1,           kWgmmaStages};
  configs.push_back(layout);
  layout.splitK =
      splitFor(layout, shape, kGemmTargetSMs,
               ceilDiv(shape.k, layout.tileK) / kLeastTilesPerSplit);
  if (layout.splitK > 1)
    configs.push_back(layout);
}

} // namespace

GemmChoice chooseGemmConfigs(const GemmShape &shape) {
  GemmChoice choice;
  bool fp32 = shape.dtype == rt::DType::F32;
  if (!fp32 && shape.dtype != rt::DType::F16 &&
      shape.dtype != rt::DType::BF16) {
    choice.refusal =
        std::string("Kiln's GEMMs are float32, float16 and bfloat16; ") +
        rt::dtypeName(shape.dtype) + " runs on cuBLASLt";
    return choice;
  }
  choice.refusal = chunkRefusal(shape);
  if (!choice.refusal.empty())
    return choice;
  offerGemv(shape, choice.configs);
  const GemmConfig &large = fp32 ? kLargeFma : kLarge;
  const GemmConfig &medium = fp32 ? kMediumFma : kMedium;
  const GemmConfig &small = fp32 ? kSmallFma : kSmall;
  std::vector<GemmConfig> layouts;
  if (shape.upperM >= large.tileM)
    layouts.push_back(large);
  layouts.push_back(medium);
  if (shape.leastM <= 2 * small.tileM)
    layouts.push_back(small);
  for (const GemmConfig &layout : layouts) {
    choice.configs.push_back(layout);
    GemmConfig split = layout;
    split.splitK =
        splitFor(layout, shape, kGemmTargetSMs,
                 ceilDiv(shape.k, layout.tileK) / kLeastTilesPerSplit);
    if (split.splitK > 1)
      choice.configs.push_back(split);
    // Hopper's form (16-bit) after the largest tiles, before the smaller
    // ones.
    if (&layout == &layouts.front() && !fp32)
      offerWgmma(shape, choice.configs);
  }
  if (choice.configs.size() > kMostCandidates)
    choice.configs.resize(kMostCandidates);
  return choice;
}

} // namespace kiln
