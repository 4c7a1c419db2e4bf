//===- AttentionConfig.cpp - the tensor-core attention kernel's layout ----===//
//
// One function decides how a tensor-core attention kernel is laid out, from
// its shapes, whether it is TF32 or the split (decoding) kernel, and
// kiln-to-cuda's overrides (kilnc --attention-*, which bench/attention.py
// passes to time the forms side by side). The emitter follows the result;
// the plan and the report print it. The measurements behind each default
// are in docs/performance.md and bench/results/.
//
//===----------------------------------------------------------------------===//

#include "AttentionConfig.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>

namespace kiln {

namespace {

/// The blocks of 128 query rows from which two m-tiles a warp pay: a wave
/// of two blocks on each of an H100's or H200's 132 SMs. Fewer would leave
/// SMs idle that 64-row blocks fill; counted at the dims' least, so that a
/// symbolic prompt length (a decoder's prefill) keeps 64-row blocks for the
/// short prompts it may run with.
constexpr int64_t kFewestWideBlocks = 2 * 132;

/// Keys a tile of the mma.sync forms unless a rule below says otherwise.
constexpr int64_t kKeysPerTile = 64;

/// Head sizes whose 16-byte chunks a row-group of wgmma's layout spreads
/// evenly over 256 threads (eight rows of each chunk at a time).
bool wgmmaHeadSize(int64_t d) {
  return d == 16 || d == 32 || d == 64 || d == 128;
}

/// Query rows per warp: 32 (two m-tiles, FlashAttention-2's layout) where
/// there are always queries to fill the GPU with 128-row blocks, so that each
/// key and value fragment read from shared memory feeds two mma.sync and a
/// block's 128 rows halve the key and value tiles read per query row; 16
/// for the split (decoding) kernel, for fewer queries and for TF32.
int64_t mTilesPerWarp(bool tf32, bool split, const AttentionParts &parts,
                      const AttentionOverrides &overrides) {
  if (tf32 || split)
    return 1;
  if (overrides.rowsPerWarp)
    return overrides.rowsPerWarp / 16;
  int64_t queries = leastOf(parts, parts.queries);
  int64_t blocks =
      leastOf(parts, parts.batch) * parts.heads * ((queries + 127) / 128);
  return queries > 64 && blocks >= kFewestWideBlocks ? 2 : 1;
}

/// Buffers each for the key and value tiles: two with two m-tiles a warp
/// (dynamic shared memory: tile j + 1 streams in during all of tile j, two
/// barriers a tile instead of four), one otherwise: two were faster at
/// every shape of the bench on the H200 (docs/performance.md, fifth
/// session). One buffer where asked for, and for FlashAttention-2's
/// two-barrier order.
int64_t kvStagesOf(int64_t mTiles, const AttentionOverrides &overrides) {
  return mTiles != 2 || overrides.kvStages == 1 || overrides.barriers == 2 ? 1
                                                                           : 2;
}

/// Keys a tile: 64, or 32 where one buffer each holds two m-tiles' scores at
/// head size 128 (they crowd the accumulators: ptxas takes 255 registers
/// and spills in the two-barrier order with tails; with two buffers the
/// loop has half the barriers and fits, and was the fastest form timed) or
/// TF32's fp32 tiles would pass the static shared memory.
int64_t keysPerTile(bool tf32, int64_t mTiles, int64_t kvStages,
                    int64_t headSize, const AttentionOverrides &overrides) {
  if (tf32)
    return 32;
  if (overrides.tileKeys == 32 || overrides.tileKeys == 64)
    return overrides.tileKeys;
  return mTiles == 2 && kvStages == 1 && headSize > 64 ? 32 : kKeysPerTile;
}

} // namespace

AttentionConfig chooseAttentionConfig(const AttentionParts &parts, bool tf32,
                                      bool split,
                                      const AttentionOverrides &overrides) {
  AttentionConfig config;
  int64_t dq = parts.size, dv = parts.valueSize;
  config.split = split;
  config.lazyRescale = overrides.lazyRescale;
  // wgmma where asked for and the head sizes suit its tile layout: eight
  // warps, two warpgroups of 64 rows, 128 keys a tile (or 64), two buffers
  // each. Not the default: in this form (each wgmma waited for before the
  // softmax, no producer warps, no overlap of one warpgroup's softmax with
  // the other's products) it timed slower than two m-tiles of mma.sync on
  // the H200 (docs/performance.md, sixth session).
  if (!tf32 && !split && overrides.wgmma && wgmmaHeadSize(dq) &&
      wgmmaHeadSize(dv)) {
    config.form = AttentionForm::Wgmma;
    config.warps = 8;
    config.mTiles = 1;
    config.kvStages = 2;
    config.barriers = 2;
    config.tileKeys = overrides.tileKeys == 64 ? 64 : 128;
    return config;
  }
  config.form = tf32 ? AttentionForm::MmaSyncTf32 : AttentionForm::MmaSync;
  config.mTiles = mTilesPerWarp(tf32, split, parts, overrides);
  config.kvStages = tf32 ? 1 : kvStagesOf(config.mTiles, overrides);
  config.tileKeys = keysPerTile(tf32, config.mTiles, config.kvStages,
                                std::max(dq, dv), overrides);
  // With one m-tile a warp the query tile is staged through the key and
  // value tiles and kept in registers: eight warps' 128 rows need both, so
  // the value rows must be as wide as the query's. Four warps by default
  // (bench/attention.py timed both; docs/performance.md).
  bool qInRegisters = config.mTiles == 1;
  config.warps =
      (dv >= dq || !qInRegisters) && !tf32 && overrides.warps == 8 ? 8 : 4;
  // With one buffer each, FlashAttention-2's order needs two barriers a
  // tile too: the value tile streams in during Q K^T only, the next key
  // tile during the softmax and P V (slower on the H200 than the
  // four-barrier order, whose value tile also streams during the softmax,
  // and than two buffers each).
  config.barriers = config.kvStages == 2 || overrides.barriers == 2 ? 2 : 4;
  assert(config.queryRows() >= fewestAttentionQueryRows() &&
         "kiln-fuse's query tile bound must hold for every layout");
  return config;
}

} // namespace kiln
