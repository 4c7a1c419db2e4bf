//===- AttentionTensorCoreEmitter.cpp - attention on mma.sync -------------===//
//
// FlashAttention-2's loop for 16-bit queries, keys and values: a block of
// four (or eight) warps owns 16 or 32 query rows a warp (one or two m-tiles
// of mma.sync) of one head; key and value tiles of 64 (or 32) rows stream
// through shared memory; S = Q K^T and O += P V are mma.sync.m16n8k16 with
// fp32 accumulators, fragments loaded with ldmatrix (.trans for V), and the
// online softmax (running maximum and sum per row, earlier output rescaled)
// runs on the accumulators in registers, in log2 units; the maximum moves
// only when a row's passes it by more than 8 (FlashAttention-4's lazy
// rescale: most tiles skip it, probabilities stay below 2^8, and the stale
// maximum scales the output and the sum alike); a row's scores are
// spread over the four lanes of a group, so its maximum and sum take two
// shuffles (the sum's only after the last tile: each lane keeps its own
// part). Each probability is one ex2.approx.ftz (exp2f would add a range
// fix-up) of one fma, the factor to log2 units folded in as FlashAttention
// folds the scale, and each output row is divided once (a reciprocal). P
// goes from the S accumulators to A fragments without leaving registers
// (the two layouts line up), rounded to the 16-bit type as FlashAttention
// does.
//
// With one m-tile a warp, the query tile is staged once through the key
// tile's storage and kept as A fragments in registers. With two (where
// 128-row blocks fill the GPU: each K and V fragment then feeds two
// mma.sync, and a block reads each key and value tile for twice the rows),
// the query tile keeps its own shared memory and its fragments are read at
// each k-step, as FlashAttention-2 does; the three tiles pass the 48 KiB of
// static shared memory, so they are the launch's dynamic shared memory
// (with one buffer each for keys and values, key tiles of 32 rows at head
// sizes over 64, so that the scores fit beside the accumulators). Every
// loop over register arrays is unrolled:
// an array indexed at run time would live in local memory (ptxas reports
// it as stack, not as spills; the report shows it).
//
// Tile rows are padded by 16 bytes, so the eight rows an ldmatrix reads
// fall in different banks. A query, key or value operand whose rows are
// contiguous in a kernel input (the input itself, or a head split,
// transpose or packed-projection slice of it: StridedView.h) streams in
// with cp.async, 16 bytes a thread, when every row is 16-byte aligned: the
// next key tile is in flight while the softmax and P V run, the next value
// tile while Q K^T runs (one buffer each; zero fill past the last key).
// With two m-tiles each has two buffers: tile j + 1 streams in during all
// of tile j, two barriers a tile instead of four, and the tiles are 64
// keys at every head size (FlashAttention-2's 128 x 64 at D = 128).
// --attention-kv-stages=1 keeps one buffer each; --attention-barriers=2
// keeps one in FlashAttention-2's order, also two barriers a tile (the
// value tile then streams during Q K^T only). Which of these forms a kernel
// takes is its AttentionConfig (AttentionConfig.cpp; for the measurements
// behind each default, see docs/performance.md).
// Other operands are staged through their in-kernel producers (getAt: the
// query's rotary embedding; the keys' and values' compute only where a run
// may have one query tile, kiln-fuse), element by element, so fusion is kept;
// the mask, scale, softcap, sink, grouped-query heads, the NaN guard and a
// transposed output work as in the scalar generator. Rows and keys past
// the ends are staged as zeros and scored -inf. Head sizes up to 128 in
// steps of 16. The grid is query tiles by heads of the batch (a third axis
// for the splits of the keys, KeySplit), so a short query length still
// gives each head its block.
//
// With --attention-wgmma (fp16/bf16, head sizes 16, 32, 64 or 128, not
// the split kernel), Hopper's wgmma issues both products: eight warps,
// two warpgroups of 64 query rows; each wgmma.mma_async m64nNk16 takes A
// from registers (the query's fragments, read at each tile; P as it lies)
// and B from shared memory through a no-swizzle descriptor, the key tile
// K-major and the value tile MN-major (trans-b); the key and value tiles
// are laid as wgmma's 8x8 core matrices (128 contiguous bytes), 128 keys a
// tile (--attention-tile-keys=64), two buffers each, and the writers of
// a tile fence the async proxy before its barrier. Not the default: each
// wgmma is waited for before the softmax, and no producer warps or
// ping-pong between the warpgroups hide the waits yet (FlashAttention-3);
// for its timing against two m-tiles of mma.sync, see docs/performance.md.
//
// fp32 operands, where kilnc --allow-tf32 allows, run the same loop on
// mma.sync.m16n8k8 with TF32 inputs (cvt.rna.tf32.f32 at each fragment
// load): one m-tile a warp, fp32 tiles of 32 keys (the two in 34 KiB),
// four warps, fragments read from shared memory element by element
// (ldmatrix moves 16-bit elements), rows padded by 8 floats so those reads
// are conflict-free, and P moved from the S accumulators into the A
// layout, which differs for m16n8k8, by warp shuffles.
//
// This file writes the kernel in order and picks, once each, the
// instruction form and the key loop's schedule; the files of the parts it
// calls on are named in AttentionTensorCoreParts.h.
//
//===----------------------------------------------------------------------===//

#include "AttentionTensorCoreParts.h"

#include "kiln/Target/CUDA/TensorCores.h"

#include <utility>

using namespace mlir;

namespace kiln {

std::optional<FailureOr<LaunchGeometry>>
emitTensorCoreAttention(KernelOp kernel, const AttentionParts &parts,
                        const KeySplit *split, StringRef name,
                        llvm::raw_ostream &os, const CudaEmitOptions &options) {
  std::optional<TensorCoreLayout> layout =
      readTensorCoreLayout(parts, split, options);
  if (!layout)
    return std::nullopt;
  TensorCoreAttentionEmitter emitter(*layout, kernel, parts, split, os);
  return emitter.emitKernel(name);
}

TensorCoreAttentionEmitter::TensorCoreAttentionEmitter(
    const TensorCoreLayout &layout, KernelOp kernel,
    const AttentionParts &parts, const KeySplit *split, llvm::raw_ostream &os)
    : TensorCoreLayout(layout), parts(parts), attention(parts.attention),
      split(split), os(os), values(kernel, os),
      keyRows(rowSourceOf(attention.getKey(), "kv", perChunk)),
      valueRows(rowSourceOf(attention.getValue(), "kv", perChunk)),
      queryRows(rowSourceOf(attention.getQuery(), "bh", perChunk)),
      kernel(kernel) {}

FailureOr<LaunchGeometry>
TensorCoreAttentionEmitter::emitKernel(StringRef name) {
  if (wgmma)
    os << cudaWgmmaFunction(tileKeys, bf16, /*transB=*/false)
       << cudaWgmmaFunction(dv, bf16, /*transB=*/true);
  kernelName = name.str();
  if (split) {
    emitSignature(kernel, name, os, splitOutputParameters(kernel));
  } else {
    emitSignature(kernel, name, os);
    os << parts.sinkTable;
  }
  emitTileDeclarations();
  emitConstants();
  emitQueryTileLoop();
  if (failed(stageQueryTile()))
    return failure();
  emitQueryFragments();
  if (failed(emitKeyLoop()))
    return failure();
  emitRowSums();
  os << "    // Nothing in flight into the tiles the next query tile reuses.\n"
     << "    kiln_cp_async_wait<0>();\n";
  emitOutputRows();
  if (split)
    emitPartialStore();
  else
    emitOutputStore();
  return launchGeometry();
}

void TensorCoreAttentionEmitter::emitConstants() {
  os << "  const float neg_inf = __int_as_float(0xff800000);\n"
     << "  const float log2e = 1.4426950408889634f;\n"
     << "  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;\n"
     << "  const int g = lane >> 2, t = lane & 3;\n";
  if (!tf32)
    os << "  // Two scores rounded into one register: one conversion.\n"
       << "  auto pack = [](float lo, float hi) {\n"
       << "    const " << pair << " both = " << toPair << "(lo, hi);\n"
       << "    unsigned bits;\n"
       << "    memcpy(&bits, &both, sizeof bits);\n"
       << "    return bits;\n"
       << "  };\n";
  for (auto [source, flag] :
       {std::pair{&queryRows, "q_async"}, std::pair{&keyRows, "k_async"},
        std::pair{&valueRows, "v_async"}})
    if (*source)
      os << "  const bool " << flag << " = " << (*source)->aligned << ";\n";
  if (pairedOutput)
    os << "  const bool out_pairs = ((unsigned long long)out0 & 3) == 0;\n";
  // This block's keys: all, or its split's.
  os << keyRangeText(split, keys, "z");
  if (narrowKeys)
    os << "  const int key_stop = (int)key_end;\n";
}

void TensorCoreAttentionEmitter::emitQueryTileLoop() {
  // Query tiles along x, heads of the batch along y, so that a short
  // query length still spreads its heads over the grid.
  os << "  const long long query_tiles = (" << queries << " + " << rows - 1
     << "LL) / " << rows << "LL;\n"
     << "  for (long long bh = blockIdx.y; bh < " << parts.batch * heads
     << "; bh += gridDim.y)\n"
     << "  for (long long tile_row = blockIdx.x; tile_row < query_tiles; "
        "tile_row += gridDim.x) {\n"
     << "    const long long first = tile_row * " << rows << "LL;\n"
     << "    const long long h = bh % " << heads << "LL;\n"
     << "    const long long b = bh / " << heads << "LL;\n"
     << "    // Grouped-query attention: query head h reads key/value head\n"
     << "    // h / (heads / kv heads).\n"
     << "    const long long kv = b * " << parts.kvHeads << "LL + h / "
     << heads / parts.kvHeads << "LL;\n";
}

void TensorCoreAttentionEmitter::emitQueryFragments() {
  switch (config.form) {
  case AttentionForm::MmaSyncTf32:
    emitQueryFragmentsTf32();
    break;
  case AttentionForm::MmaSync:
    // With two m-tiles, the fragments are read at each k-step.
    if (!qInRegisters)
      return;
    os << queryFragments("    ");
    break;
  case AttentionForm::Wgmma:
    // Read at each key tile, with the scores.
    return;
  }
  // The key tile's first stage overwrites the query staged there.
  os << "    __syncthreads();\n";
}

LogicalResult TensorCoreAttentionEmitter::emitKeyLoop() {
  if (twoStages)
    return emitKeyLoopTwoStages();
  if (twoBarriers)
    return emitKeyLoopTwoBarriers();
  return emitKeyLoopFourBarriers();
}

void TensorCoreAttentionEmitter::emitScores() {
  os << "      // S = Q K^T: this warp's 16 rows by the tile's " << tileKeys
     << " keys, n-tiles\n"
     << "      // of 8 keys; B from K rows (K^T is column-major B).\n"
     << "      float s[" << mTiles << "][" << nTiles << "][4];\n";
  switch (config.form) {
  case AttentionForm::Wgmma:
    emitScoresWgmma();
    return;
  case AttentionForm::MmaSyncTf32:
    emitZeroScores();
    emitScoresTf32();
    return;
  case AttentionForm::MmaSync:
    emitZeroScores();
    if (qInRegisters)
      emitScoresMmaSync();
    else
      emitScoresMmaSyncTwoTiles();
    return;
  }
}

void TensorCoreAttentionEmitter::emitValueProduct() {
  switch (config.form) {
  case AttentionForm::Wgmma:
    emitValuesWgmma();
    return;
  case AttentionForm::MmaSyncTf32:
    emitValuesTf32();
    return;
  case AttentionForm::MmaSync:
    emitValuesMmaSync();
    return;
  }
}

LaunchGeometry TensorCoreAttentionEmitter::launchGeometry() const {
  LaunchGeometry geometry;
  // A block for each query tile of each head (grid-stride loops cover what
  // the grid's limits leave), and with a split one for each of its splits.
  setGridDim(geometry, 0, queries, rows, kMaxGrid);
  setGridDim(geometry, 1, parts.batch * heads, 1, kMaxGrid);
  if (split)
    setGridDim(geometry, 2, keys, split->chunk, split->maxSplits);
  geometry.block[0] = threads;
  geometry.sharedBytes = dynamicShared;
  geometry.attention = config;
  return geometry;
}

} // namespace kiln
