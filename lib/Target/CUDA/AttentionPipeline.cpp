//===- AttentionPipeline.cpp - the attention key loop's schedules ---------===//
//
// The tensor-core attention kernel's loop over key tiles, in one of three
// schedules of its cp.async stages and barriers: two buffers each for keys
// and values (tile j + 1 streams in during all of tile j, two barriers a
// tile); one buffer each in FlashAttention-2's order (the value tile
// streams in during Q K^T only, the next key tile during the softmax and
// P V, two barriers a tile); or one buffer each with four barriers a tile
// (the next value tile also streams during the softmax). Each schedule
// calls on the same Q K^T, softmax and P V.
//
//===----------------------------------------------------------------------===//

#include "AttentionTensorCoreParts.h"

using namespace mlir;

namespace kiln {

void TensorCoreAttentionEmitter::emitKeyLoopBegin() {
  os << "    for (" << keyIndex << " tile = key_begin; tile < " << keyStop
     << "; tile += " << tileKeys << ") {\n";
}

void TensorCoreAttentionEmitter::emitValueTileWait(int64_t pending) {
  os << "      // This value tile has landed (the next tile's may not "
        "have).\n"
     << "      kiln_cp_async_wait<" << pending << ">();\n"
     << proxyFence << "      __syncthreads();\n";
}

LogicalResult
TensorCoreAttentionEmitter::stageFirstTiles(const char *keyTile,
                                            const char *valueTile) {
  // The first key tile and its value tile.
  if (failed(stage(attention.getKey(), keyRows, "k_async", keyTile, dq,
                   "key_begin", "    ")) ||
      failed(stage(attention.getValue(), valueRows, "v_async", valueTile, dv,
                   "key_begin", "    ")))
    return failure();
  emitAccumulators();
  return success();
}

LogicalResult TensorCoreAttentionEmitter::emitKeyLoopTwoStages() {
  if (failed(stageFirstTiles("k_tile0", "v_tile0")))
    return failure();
  os << "    int buffer = 0;\n";
  emitKeyLoopBegin();
  auto pick = [&](const char *name, int64_t pitch) {
    os << "      " << storage << " (*" << name << "_tile)[" << pitch
       << "] = buffer ? " << name << "_tile1 : " << name << "_tile0, (*" << name
       << "_next)[" << pitch << "] = buffer ? " << name << "_tile0 : " << name
       << "_tile1;\n";
  };
  os << "      // Tile j in buffers j % 2; tile j + 1 streams into the "
        "others.\n";
  pick("k", kTileInner);
  pick("v", vTileInner);
  os << "      // This key tile has landed (its value tile may not have);\n"
     << "      // every warp is done with the previous tile's buffers.\n"
     << "      kiln_cp_async_wait<1>();\n"
     << proxyFence << "      __syncthreads();\n";
  if (failed(stage(attention.getKey(), keyRows, "k_async", "k_next", dq,
                   nextTile, "      ")) ||
      failed(stage(attention.getValue(), valueRows, "v_async", "v_next", dv,
                   nextTile, "      ")))
    return failure();
  emitScores();
  if (failed(emitScaledScores()))
    return failure();
  emitOnlineSoftmax();
  emitValueTileWait(2);
  emitValueProduct();
  os << "      buffer ^= 1;\n";
  os << "    }\n";
  return success();
}

LogicalResult TensorCoreAttentionEmitter::emitKeyLoopTwoBarriers() {
  // The first key tile; the loop stages each value tile itself.
  if (failed(stage(attention.getKey(), keyRows, "k_async", "k_tile", dq,
                   "key_begin", "    ")))
    return failure();
  emitAccumulators();
  emitKeyLoopBegin();
  os << "      // This key tile has landed, and every warp is done with the\n"
     << "      // previous value tile: this one streams in during Q K^T.\n"
     << "      kiln_cp_async_wait<0>();\n"
     << "      __syncthreads();\n";
  if (failed(stage(attention.getValue(), valueRows, "v_async", "v_tile", dv,
                   "tile", "      ")))
    return failure();
  emitScores();
  os << "      // This value tile has landed, and every warp is done with\n"
     << "      // k_tile: the next key tile streams in during the softmax\n"
     << "      // and P V.\n"
     << "      kiln_cp_async_wait<0>();\n";
  os << "      __syncthreads();\n";
  if (failed(stage(attention.getKey(), keyRows, "k_async", "k_tile", dq,
                   nextTile, "      ")))
    return failure();
  if (failed(emitScaledScores()))
    return failure();
  emitOnlineSoftmax();
  emitValueProduct();
  os << "    }\n";
  return success();
}

LogicalResult TensorCoreAttentionEmitter::emitKeyLoopFourBarriers() {
  if (failed(stageFirstTiles("k_tile", "v_tile")))
    return failure();
  emitKeyLoopBegin();
  os << "      // This key tile has landed (the value tile may not have).\n"
     << "      kiln_cp_async_wait<1>();\n"
     << "      __syncthreads();\n";
  emitScores();
  os << "      // Every warp is done with k_tile: the next key tile "
        "streams in\n"
     << "      // during the softmax and P V.\n";
  os << "      __syncthreads();\n";
  if (failed(stage(attention.getKey(), keyRows, "k_async", "k_tile", dq,
                   nextTile, "      ")))
    return failure();
  if (failed(emitScaledScores()))
    return failure();
  emitOnlineSoftmax();
  emitValueTileWait(1);
  emitValueProduct();
  os << "      // Every warp is done with v_tile: the next value tile "
        "streams\n"
     << "      // in during the next Q K^T.\n"
     << "      __syncthreads();\n";
  if (failed(stage(attention.getValue(), valueRows, "v_async", "v_tile", dv,
                   nextTile, "      ")))
    return failure();
  os << "    }\n";
  return success();
}

} // namespace kiln
