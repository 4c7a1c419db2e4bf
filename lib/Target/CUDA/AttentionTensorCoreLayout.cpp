//===- AttentionTensorCoreLayout.cpp - the tensor-core kernel's layout ----===//
//
// Reads what the tensor-core attention generator takes (16-bit operands, or
// fp32 ones as TF32; head sizes multiples of 16 up to 128) and the layout
// chooseAttentionConfig (AttentionConfig.cpp) picks for it into the sizes,
// C type names and flags the emitting functions share.
//
//===----------------------------------------------------------------------===//

#include "AttentionConfig.h"
#include "AttentionTensorCoreParts.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdint>

using namespace mlir;

namespace kiln {

namespace {
/// The largest head size the tensor-core forms take.
constexpr int64_t kMaxHeadSize = 128;
} // namespace

std::optional<TensorCoreLayout>
readTensorCoreLayout(const AttentionParts &parts, const KeySplit *split,
                     const CudaEmitOptions &options) {
  AttentionOp attention = parts.attention;
  Type et = attention.getType().getElementType();
  auto hasResultType = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType() == et;
  };
  // fp32 operands enter the tensor cores as TF32 (m16n8k8) when allowed.
  bool tf32 = et.isF32() && options.allowTf32;
  if (!(et.isF16() || et.isBF16() || tf32) ||
      !hasResultType(attention.getQuery()) ||
      !hasResultType(attention.getKey()) ||
      !hasResultType(attention.getValue()) || parts.size % 16 ||
      parts.valueSize % 16 || parts.size > kMaxHeadSize ||
      parts.valueSize > kMaxHeadSize)
    return std::nullopt;

  int64_t dq = parts.size, dv = parts.valueSize;
  // TF32 tiles are fp32: 32 keys a tile keep two in 34 KiB of static
  // shared memory, and the 64 rows of four warps' queries stage through
  // both (so the value rows must be as wide as the query's).
  if (tf32 && dv < dq)
    return std::nullopt;
  return TensorCoreLayout(parts, split, options.attention, tf32);
}

TensorCoreLayout::TensorCoreLayout(const AttentionParts &parts,
                                   const KeySplit *split,
                                   const AttentionOverrides &overrides,
                                   bool tf32)
    : tf32(tf32) {
  AttentionOp attention = parts.attention;
  Type et = attention.getType().getElementType();
  heads = parts.heads;
  dq = parts.size;
  dv = parts.valueSize;
  queries = parts.queries;
  keys = parts.keys;
  // The layout: one choice (AttentionConfig.cpp), returned with the launch.
  config = chooseAttentionConfig(parts, tf32, split, overrides);
  wgmma = config.form == AttentionForm::Wgmma;
  mTiles = config.mTiles;
  kvStages = config.kvStages;
  tileKeys = config.tileKeys;
  warps = config.warps;
  perChunk = tf32 ? 4 : 8;
  storage = tf32 ? "float" : et.isF16() ? "__half" : "__nv_bfloat16";
  to16 = tf32 ? "" : et.isF16() ? "__float2half_rn" : "__float2bfloat16_rn";
  pair = et.isF16() ? "__half2" : "__nv_bfloat162";
  toPair = et.isF16() ? "__floats2half2_rn" : "__floats2bfloat162_rn";
  mma = et.isF16() ? "kiln_mma_m16n8k16_f16" : "kiln_mma_m16n8k16_bf16";
  kPitch = dq + 8;
  vPitch = dv + 8;
  // With one m-tile a warp, the query tile is staged through the key and
  // value tiles and kept in registers (eight warps' 128 rows need both
  // tiles: the value rows must be as wide as the query's). With two, the
  // fragments of 32 rows would not fit beside the accumulators: the query
  // tile keeps its own shared memory and its fragments are read at each
  // k-step, as FlashAttention-2 does.
  // With wgmma, the query tile has its own shared memory too (its
  // fragments are read at each key tile), and the key and value tiles are
  // wgmma's layout: their inner arrays are core matrices of 64 elements,
  // not padded rows.
  qInRegisters = mTiles == 1;
  qTileShared = !qInRegisters || wgmma;
  kTileInner = wgmma ? 64 : kPitch;
  vTileInner = wgmma ? 64 : vPitch;
  rows = config.queryRows();
  threads = 32 * warps;
  // Two m-tiles' tiles (a query tile of up to 256 rows) pass the 48 KiB of
  // static shared memory: they are dynamic shared memory of the launch.
  int64_t elementBytes = tf32 ? 4 : 2;
  qBytes = qTileShared ? rows * kPitch * elementBytes : 0;
  kBytes = tileKeys * (wgmma ? dq : kPitch) * elementBytes;
  vBytes = tileKeys * (wgmma ? dv : vPitch) * elementBytes;
  // With one buffer each, FlashAttention-2's order: the value tile streams
  // in during Q K^T only, the next key tile during the softmax and P V.
  twoBarriers = kvStages == 1 && config.barriers == 2;
  twoStages = kvStages == 2;
  dynamicShared = qTileShared ? qBytes + kvStages * (kBytes + vBytes) : 0;
  // The running maximum moves lazily (by more than 2^8), or at every rise.
  lazyRescale = config.lazyRescale;
  bf16 = et.isBF16();
  nTiles = tileKeys / 8;

  // A 16-bit output whose features are innermost stores a lane's two
  // adjacent ones at once, where the output is 4-byte aligned.
  Type outType = attention.getType().getElementType();
  pairedOutput = !split && parts.outFeaturesInnermost &&
                 (outType.isF16() || outType.isBF16());
  outPair = outType.isF16() ? "__half2" : "__nv_bfloat162";
  halvesToPair = outType.isF16() ? "__halves2half2" : "__halves2bfloat162";
  // Key indices in 32 bits where every one, and a tile past the last, fits:
  // in the key loop a 64-bit add or compare is two instructions.
  narrowKeys = keys.upper() <= INT32_MAX - tileKeys;
  keyIndex = narrowKeys ? "int" : "long long";
  keyStop = narrowKeys ? "key_stop" : "key_end";
  nextTile = "tile + " + std::to_string(tileKeys);
  // What cp.async or plain stores wrote, wgmma reads through the async
  // proxy: each writer fences before the barrier.
  proxyFence = wgmma ? "      kiln_fence_proxy_async();\n" : "";

  // The exponent's factor folds in as FlashAttention folds the scale: the
  // tile's maximum is taken over the scores as they stand, which a
  // positive factor keeps in order (and rounding too), and scaled to log2
  // units once a row; each probability is exp2 of one fma, score * factor
  // - maximum. The scores stand as the raw products, where the scale is
  // positive and nothing else adds to them (the factor is scale * log2 e),
  // or as the natural logits (log2 e), a mask added to the scaled product
  // by one fma.
  float scale = attention.getScale().convertToFloat();
  softcap = attention.getSoftcap().convertToFloat();
  Value mask = attention.getMask();
  raw = softcap <= 0.0f && !mask && scale > 0.0f;
  factor = raw ? floatLiteral(static_cast<float>(scale * M_LOG2E)) : "log2e";
  scaleText = floatLiteral(scale);
}

} // namespace kiln
