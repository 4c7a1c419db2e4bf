//===- AttentionSoftmaxStore.cpp - attention's online softmax and store ---===//
//
// The online softmax of the tensor-core attention kernel, on the score
// accumulators in registers and in log2 units: each tile's scores (scale,
// mask, softcap, the bounds at the ends), the running maximum and sum of
// each row (moved lazily, FlashAttention-4's rescale, or at every rise),
// one ex2.approx.ftz of one fma a probability; then the rows' sums over the
// four lanes of a group and the output, normalized and stored (or, for a
// split of the keys, stored unnormalized with its maximum and sum).
//
//===----------------------------------------------------------------------===//

#include "AttentionTensorCoreParts.h"

#include "llvm/Support/FormatVariadic.h"

#include <optional>
#include <string>

using namespace mlir;

namespace kiln {

void TensorCoreAttentionEmitter::emitAccumulators() {
  // A split leaves the sink to the combine.
  std::string sink = split ? "neg_inf" : parts.sinkValue + " * log2e";
  os << "    // Rows g and g + 8 of each of this warp's m-tiles of 16: the\n"
     << "    // running maximum and sum (a sink starts them as one more "
        "logit),\n"
     << "    // and the output. Each lane sums its own scores of a row (the\n"
     << "    // sink's 1 in lane t = 0's): the four lanes of a group add up\n"
     << "    // after the last tile, as FlashAttention-2 does, not at each.\n"
     << "    float m[" << mTiles << "][2], l[" << mTiles << "][2];\n"
     << "    float o[" << mTiles << "][" << dv / 8 << "][4];\n"
     << "    #pragma unroll\n"
        "    for (int mt = 0; mt < "
     << mTiles << "; ++mt) {\n"
     << "      #pragma unroll\n"
        "      for (int r = 0; r < 2; ++r) {\n"
     << "        m[mt][r] = " << sink << ";\n"
     << "        l[mt][r] = "
     << (parts.hasSink && !split ? "t == 0 ? 1.0f : 0.0f" : "0.0f") << ";\n"
     << "      }\n"
     << "      #pragma unroll\n"
        "      for (int n = 0; n < "
     << dv / 8 << "; ++n)\n"
     << "        #pragma unroll\n"
        "        for (int e = 0; e < 4; ++e) o[mt][n][e] = 0.0f;\n"
     << "    }\n";
}

LogicalResult TensorCoreAttentionEmitter::emitScaledScores() {
  Value mask = attention.getMask();
  os << "      // Scores (" << (raw ? "raw products" : "natural logits")
     << "): element e of n-tile n is row g + (e >> 1)\n"
     << "      // * 8, key n * 8 + 2t + (e & 1). Only a tile at an end checks\n"
     << "      // the bounds.\n"
     << "      const bool edge = tile + " << tileKeys << " > " << keyStop
     << " || first + " << rows << "LL > " << queries << ";\n"
     << "      float tile_max[" << mTiles << "][2];\n"
     << "      #pragma unroll\n"
        "      for (int mt = 0; mt < "
     << mTiles << "; ++mt) {\n"
     << "      tile_max[mt][0] = tile_max[mt][1] = neg_inf;\n"
     << "      #pragma unroll\n"
        "      for (int n = 0; n < "
     << nTiles << "; ++n)\n"
     << "        #pragma unroll\n"
        "        for (int e = 0; e < 4; ++e) {\n"
     << "          const long long i = first + warp * " << 16 * mTiles
     << " + mt * 16 + g + (e >> 1) * 8;\n"
     << "          const " << keyIndex
     << " j = tile + n * 8 + 2 * t + (e & 1);\n"
     << "          float score = neg_inf;\n"
     << "          if (!edge || (i < " << queries << " && j < " << keyStop
     << ")) {\n";
  std::optional<std::string> maskValue;
  if (mask) {
    auto value = load(mask, parts.maskIndex, "            ");
    if (failed(value))
      return failure();
    maskValue = *value;
  }
  if (raw)
    os << "            score = s[mt][n][e];\n";
  else if (maskValue && softcap <= 0.0f)
    os << "            score = fmaf(s[mt][n][e], " << scaleText << ", "
       << *maskValue << ");\n";
  else
    os << "            score = " << scaleText << " * s[mt][n][e];\n";
  if (softcap > 0.0f) {
    std::string cap = floatLiteral(softcap);
    os << "            score = " << cap << " * tanhf(score / " << cap << ");\n";
    if (maskValue)
      os << "            score += " << *maskValue << ";\n";
  }
  os << "          }\n"
     << "          s[mt][n][e] = score;\n"
     << "          tile_max[mt][e >> 1] = fmaxf(tile_max[mt][e >> 1], score);\n"
     << "        }\n"
     << "      }\n";
  return success();
}

void TensorCoreAttentionEmitter::emitOnlineSoftmax() {
  os << "      #pragma unroll\n"
        "      for (int mt = 0; mt < "
     << mTiles << "; ++mt) {\n"
     << "      float most[2], base[2], row_sum[2] = {0.0f, 0.0f};\n"
     << "      #pragma unroll\n"
        "      for (int r = 0; r < 2; ++r) {\n"
     << "        // A row's scores are spread over the four lanes of a group.\n"
     << "        most[r] = tile_max[mt][r];\n"
     << "        most[r] = fmaxf(most[r], __shfl_xor_sync(0xffffffffu, "
        "most[r], 1));\n"
     << "        most[r] = fmaxf(most[r], __shfl_xor_sync(0xffffffffu, "
        "most[r], 2));\n"
     << "        most[r] *= " << factor << ";\n"
     << "      }\n";
  if (lazyRescale)
    os << "      // The running maxima move only when one of the warp's rows\n"
       << "      // passes its own by more than 8 (FlashAttention-4): the\n"
       << "      // probabilities stay below 2^8, and the output and sum are\n"
       << "      // scaled by the same stale maximum, which the division\n"
       << "      // cancels. A row all -inf so far moves at its first finite\n"
       << "      // score.\n"
       << "      if (__any_sync(0xffffffffu, most[0] > m[mt][0] + 8.0f || "
          "most[1] > m[mt][1] + 8.0f)) {\n";
  else
    os << "      // Once the maxima settle, most tiles rescale every row by 1: "
          "the\n"
       << "      // warp skips the multiplies unless one of its rows moved "
          "(the\n"
       << "      // same bits either way).\n"
       << "      if (__any_sync(0xffffffffu, most[0] > m[mt][0] || most[1] > "
          "m[mt][1])) {\n";
  os << "        float rescale[2];\n"
     << "        #pragma unroll\n"
        "        for (int r = 0; r < 2; ++r) {\n"
     << "          const float new_max = fmaxf(m[mt][r], most[r]);\n"
     << "          // Rows masked with -inf so far hold nothing (and no "
        "NaN).\n"
     << "          rescale[r] = m[mt][r] == neg_inf ? 0.0f : "
        "kiln_exp2_ftz(m[mt][r] - new_max);\n"
     << "          m[mt][r] = new_max;\n"
     << "          l[mt][r] *= rescale[r];\n"
     << "        }\n"
     << "        #pragma unroll\n"
     << "        for (int n = 0; n < " << dv / 8 << "; ++n)\n"
     << "          #pragma unroll\n"
     << "          for (int e = 0; e < 4; ++e) o[mt][n][e] *= rescale[e >> "
        "1];\n"
     << "      }\n"
     << "      #pragma unroll\n"
        "      for (int r = 0; r < 2; ++r)\n"
     << "        // A row still all -inf subtracts 0: its exp2(-inf) are 0.\n"
     << "        base[r] = m[mt][r] == neg_inf ? 0.0f : m[mt][r];\n"
     << "      #pragma unroll\n"
        "      for (int n = 0; n < "
     << nTiles << "; ++n)\n"
     << "        #pragma unroll\n"
        "        for (int e = 0; e < 4; ++e) {\n"
     << "          const int r = e >> 1;\n"
     << "          const float p = kiln_exp2_ftz("
     << "fmaf(s[mt][n][e], " << factor << ", -base[r])"
     << ");\n"
     << "          s[mt][n][e] = p;\n"
     << "          row_sum[r] += p;\n"
     << "        }\n"
     << "      #pragma unroll\n"
        "      for (int r = 0; r < 2; ++r) l[mt][r] += row_sum[r];\n"
     << "      }\n";
}

void TensorCoreAttentionEmitter::emitRowSums() {
  os << "    // A row's sum: its four lanes' parts.\n"
     << "    #pragma unroll\n"
        "    for (int mt = 0; mt < "
     << mTiles << "; ++mt)\n"
     << "      #pragma unroll\n"
        "      for (int r = 0; r < 2; ++r) {\n"
     << "        l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 1);\n"
     << "        l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 2);\n"
     << "      }\n";
}

void TensorCoreAttentionEmitter::emitOutputRows() {
  os << "    #pragma unroll\n"
        "    for (int mt = 0; mt < "
     << mTiles << "; ++mt)\n"
     << "    #pragma unroll\n"
        "    for (int r = 0; r < 2; ++r) {\n"
     << "      const long long i = first + warp * " << 16 * mTiles
     << " + mt * 16 + g + r * 8;\n"
     << "      if (i >= " << queries << ") continue;\n"
     << "      const long long row = (b * " << heads << "LL + h) * " << queries
     << " + i;\n";
}

void TensorCoreAttentionEmitter::emitPartialStore() {
  // The four lanes of a group hold the row's maximum and sum alike.
  os << "      float *partial = partials + (row * splits + blockIdx.z) * "
     << dv + 2 << "LL;\n"
     << "      #pragma unroll\n"
        "      for (int n = 0; n < "
     << dv / 8 << "; ++n)\n"
     << "        #pragma unroll\n"
        "        for (int e = 0; e < 2; ++e)\n"
     << "          partial[n * 8 + 2 * t + e] = o[mt][n][r * 2 + e];\n"
     << "      if (t == 0) {\n"
     << "        partial[" << dv << "] = m[mt][r];\n"
     << "        partial[" << dv + 1 << "] = l[mt][r];\n"
     << "      }\n"
     << "    }\n";
  // The tile's partial rows: its query rows of head bh.
  os << "    const long long tile_end = min(" << queries << ", first + " << rows
     << "LL);\n"
     << splitFinishText(*split, kernelName, "bh * query_tiles + tile_row",
                        "bh * (" + queries.str() + ") + first",
                        "bh * (" + queries.str() + ") + tile_end", "    ")
     << "  }\n}\n";
}

void TensorCoreAttentionEmitter::emitOutputStore() {
  os << "      const float inverse = 1.0f / l[mt][r];\n";
  if (pairedOutput) {
    // A lane's two adjacent features of a row (2t and 2t + 1) in one
    // 4-byte store where the output allows, not two 2-byte ones.
    os << "      if (out_pairs) {\n"
       << "        #pragma unroll\n"
          "        for (int n = 0; n < "
       << dv / 8 << "; ++n) {\n"
       << "          const long long d = n * 8 + 2 * t;\n"
       << "          const float acc0 = o[mt][n][r * 2];\n"
       << "          const float acc1 = o[mt][n][r * 2 + 1];\n"
       << "          *reinterpret_cast<" << outPair << " *>(out0 + ("
       << parts.outIndex << ")) = " << halvesToPair << "("
       << normalizedOutput(attention, "acc0", "l[mt][r]", "inverse") << ", "
       << normalizedOutput(attention, "acc1", "l[mt][r]", "inverse") << ");\n"
       << "        }\n"
       << "        continue;\n"
       << "      }\n";
  }
  os << "      #pragma unroll\n"
        "      for (int n = 0; n < "
     << dv / 8 << "; ++n)\n"
     << "        #pragma unroll\n"
        "        for (int e = 0; e < 2; ++e) {\n"
     << "          const long long d = n * 8 + 2 * t + e;\n"
     << "          const float acc = o[mt][n][r * 2 + e];\n"
     << "          out0[" << parts.outIndex
     << "] = " << normalizedOutput(attention, "acc", "l[mt][r]", "inverse")
     << ";\n"
     << "        }\n"
     << "    }\n"
     << "  }\n"
     << "}\n";
}

} // namespace kiln
