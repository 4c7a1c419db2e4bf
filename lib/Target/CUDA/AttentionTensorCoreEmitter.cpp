//===- AttentionTensorCoreEmitter.cpp - attention on mma.sync -------------===//
//
// FlashAttention-2's loop for 16-bit queries, keys and values: a block of
// four warps owns 64 query rows of one head (16 a warp); key and value
// tiles of 64 rows stream through shared memory; S = Q K^T and O += P V are
// mma.sync.m16n8k16 with fp32 accumulators, fragments loaded with ldmatrix
// (.trans for V), and the online softmax (running maximum and sum per row,
// earlier output rescaled) runs on the accumulators in registers: a row's
// scores are spread over the four lanes of a group, so its maximum and sum
// take two shuffles. P goes from the S accumulators to A fragments without
// leaving registers (the two layouts line up), rounded to the 16-bit type
// as FlashAttention does.
//
// The operands are staged through their in-kernel producers (getAt: head
// splits, slices of a packed projection, a bias add, a rotary embedding), so
// fusion is kept; the mask, scale, softcap, sink, grouped-query heads, the
// NaN guard and a transposed output work as in the scalar generator. Rows
// and keys past the ends are staged as zeros and scored -inf. Tiles are
// staged with plain loads, not cp.async: a producer has to compute each
// element. Head sizes up to 128 in steps of 16 (three 64-row tiles then
// fill the 48 KiB of static shared memory).
//
//===----------------------------------------------------------------------===//

#include "AttentionParts.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace kiln {

namespace {
constexpr int64_t kRowsPerBlock = 64;
constexpr int64_t kKeysPerTile = 64;
constexpr int64_t kMaxHeadSize = 128;
} // namespace

std::optional<FailureOr<LaunchGeometry>>
emitTensorCoreAttention(KernelOp kernel, const AttentionParts &parts,
                        StringRef name, llvm::raw_ostream &os) {
  AttentionOp attention = parts.attention;
  Type et = attention.getType().getElementType();
  auto is16 = [&](Value v) {
    Type t = cast<RankedTensorType>(v.getType()).getElementType();
    return t == et;
  };
  if (!(et.isF16() || et.isBF16()) || !is16(attention.getQuery()) ||
      !is16(attention.getKey()) || !is16(attention.getValue()) ||
      parts.size % 16 || parts.valueSize % 16 || parts.size > kMaxHeadSize ||
      parts.valueSize > kMaxHeadSize)
    return std::nullopt;

  int64_t heads = parts.heads, dq = parts.size, dv = parts.valueSize;
  Size queries = parts.queries, keys = parts.keys;
  std::string storage = et.isF16() ? "__half" : "__nv_bfloat16";
  std::string to16 = et.isF16() ? "__float2half_rn" : "__float2bfloat16_rn";
  std::string bits = et.isF16() ? "__half_as_ushort" : "__bfloat16_as_ushort";
  std::string mma =
      et.isF16() ? "kiln_mma_m16n8k16_f16" : "kiln_mma_m16n8k16_bf16";
  BodyEmitter values(kernel, os);
  auto load = [&](Value operand, const std::string &index,
                  const std::string &indent) -> FailureOr<std::string> {
    values.reset();
    return values.getAt(operand, index, indent);
  };

  emitSignature(kernel, name, os);
  os << parts.sinkTable;
  os << "  __shared__ __align__(16) " << storage << " q_tile[" << kRowsPerBlock
     << "][" << dq << "];\n"
     << "  __shared__ __align__(16) " << storage << " k_tile[" << kKeysPerTile
     << "][" << dq << "];\n"
     << "  __shared__ __align__(16) " << storage << " v_tile[" << kKeysPerTile
     << "][" << dv << "];\n"
     << "  const float neg_inf = __int_as_float(0xff800000);\n"
     << "  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;\n"
     << "  const int g = lane >> 2, t = lane & 3;\n"
     << "  auto pack = [](float lo, float hi) {\n"
     << "    return (unsigned)" << bits << "(" << to16 << "(lo)) | (unsigned)"
     << bits << "(" << to16 << "(hi)) << 16;\n"
     << "  };\n"
     << "  const long long query_tiles = (" << queries << " + "
     << kRowsPerBlock - 1 << "LL) / " << kRowsPerBlock << "LL;\n"
     << "  for (long long work = blockIdx.x; work < " << parts.batch * heads
     << " * query_tiles; work += gridDim.x) {\n"
     << "    const long long first = (work % query_tiles) * " << kRowsPerBlock
     << "LL;\n"
     << "    const long long h = (work / query_tiles) % " << heads << "LL;\n"
     << "    const long long b = work / (query_tiles * " << heads << "LL);\n"
     << "    // Grouped-query attention: query head h reads key/value head\n"
     << "    // h / (heads / kv heads).\n"
     << "    const long long kv = b * " << parts.kvHeads << "LL + h / "
     << heads / parts.kvHeads << "LL;\n"
     << "    __syncthreads();\n"
     << "    for (int e = threadIdx.x; e < " << kRowsPerBlock * dq
     << "; e += blockDim.x) {\n"
     << "      const long long i = first + e / " << dq << ", d = e % " << dq
     << ";\n"
     << "      float value = 0.0f;\n"
     << "      if (i < " << queries << ") {\n"
     << "        const long long row = (b * " << heads << "LL + h) * "
     << queries << " + i;\n";
  auto query = load(attention.getQuery(), llvm::formatv("row * {0}LL + d", dq),
                    "        ");
  if (failed(query))
    return FailureOr<LaunchGeometry>(failure());
  os << "        value = " << *query << ";\n      }\n"
     << "      q_tile[e / " << dq << "][d] = " << to16 << "(value);\n    }\n"
     << "    // Rows g and g + 8 of this warp's 16: the running maximum and\n"
     << "    // sum (a sink starts them as one more logit), and the output.\n"
     << "    float m[2] = {" << parts.sinkValue << ", " << parts.sinkValue
     << "};\n"
     << "    float l[2] = {" << (parts.hasSink ? "1.0f, 1.0f" : "0.0f, 0.0f")
     << "};\n"
     << "    float o[" << dv / 8 << "][4];\n"
     << "    for (int n = 0; n < " << dv / 8 << "; ++n)\n"
     << "      for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;\n"
     << "    for (long long tile = 0; tile < " << keys
     << "; tile += " << kKeysPerTile << "LL) {\n"
     << "      __syncthreads();\n";
  // Stages rows [tile, tile + 64) of keys or values (`width` features) as
  // 16-bit values in `tileName`, zeros past the last key.
  auto stageKeys = [&](Value operand, const char *tileName,
                       int64_t width) -> LogicalResult {
    os << "      for (int e = threadIdx.x; e < " << kKeysPerTile * width
       << "; e += blockDim.x) {\n"
       << "        const long long j = tile + e / " << width << ", d = e % "
       << width << ";\n"
       << "        float value = 0.0f;\n"
       << "        if (j < " << keys << ") {\n";
    auto element =
        load(operand, llvm::formatv("(kv * {0} + j) * {1}LL + d", keys, width),
             "          ");
    if (failed(element))
      return failure();
    os << "          value = " << *element << ";\n        }\n"
       << "        " << tileName << "[e / " << width << "][d] = " << to16
       << "(value);\n"
       << "      }\n";
    return success();
  };
  if (failed(stageKeys(attention.getKey(), "k_tile", dq)) ||
      failed(stageKeys(attention.getValue(), "v_tile", dv)))
    return FailureOr<LaunchGeometry>(failure());
  os << "      __syncthreads();\n"
     << "      // S = Q K^T: this warp's 16 rows by the tile's 64 keys, eight\n"
     << "      // n-tiles of 8 keys; A from Q rows, B from K rows (K^T is\n"
     << "      // column-major B).\n"
     << "      float s[8][4];\n"
     << "      for (int n = 0; n < 8; ++n)\n"
     << "        for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;\n"
     << "      for (int kk = 0; kk < " << dq / 16 << "; ++kk) {\n"
     << "        unsigned a[4];\n"
     << "        kiln_ldmatrix_x4(a, &q_tile[warp * 16 + (lane & 7) + ((lane "
        ">> 3) & 1) * 8][kk * 16 + (lane >> 4) * 8]);\n"
     << "        for (int n = 0; n < 8; ++n) {\n"
     << "          unsigned kb[2];\n"
     << "          kiln_ldmatrix_x2(kb, &k_tile[n * 8 + (lane & 7)][kk * 16 + "
        "((lane >> 3) & 1) * 8]);\n"
     << "          " << mma << "(s[n], a, kb, s[n]);\n"
     << "        }\n"
     << "      }\n"
     << "      // Scores: element e of n-tile n is row g + (e >> 1) * 8, key\n"
     << "      // n * 8 + 2t + (e & 1).\n"
     << "      float tile_max[2] = {neg_inf, neg_inf};\n"
     << "      for (int n = 0; n < 8; ++n)\n"
     << "        for (int e = 0; e < 4; ++e) {\n"
     << "          const long long i = first + warp * 16 + g + (e >> 1) * 8;\n"
     << "          const long long j = tile + n * 8 + 2 * t + (e & 1);\n"
     << "          float score = neg_inf;\n"
     << "          if (i < " << queries << " && j < " << keys << ") {\n"
     << "            score = "
     << llvm::formatv("{0:e}", attention.getScale().convertToFloat())
     << "f * s[n][e];\n";
  if (float softcap = attention.getSoftcap().convertToFloat(); softcap > 0.0f) {
    std::string cap = llvm::formatv("{0:e}f", softcap);
    os << "            score = " << cap << " * tanhf(score / " << cap << ");\n";
  }
  if (Value mask = attention.getMask()) {
    auto maskValue = load(mask, parts.maskIndex, "            ");
    if (failed(maskValue))
      return FailureOr<LaunchGeometry>(failure());
    os << "            score += " << *maskValue << ";\n";
  }
  os << "          }\n"
     << "          s[n][e] = score;\n"
     << "          tile_max[e >> 1] = fmaxf(tile_max[e >> 1], score);\n"
     << "        }\n"
     << "      float rescale[2], row_sum[2] = {0.0f, 0.0f};\n"
     << "      for (int r = 0; r < 2; ++r) {\n"
     << "        // A row's scores are spread over the four lanes of a group.\n"
     << "        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, "
        "tile_max[r], 1));\n"
     << "        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, "
        "tile_max[r], 2));\n"
     << "        const float new_max = fmaxf(m[r], tile_max[r]);\n"
     << "        // Rows masked with -inf so far contribute nothing (and no "
        "NaN).\n"
     << "        rescale[r] = m[r] == neg_inf ? 0.0f : expf(m[r] - new_max);\n"
     << "        m[r] = new_max;\n"
     << "      }\n"
     << "      for (int n = 0; n < 8; ++n)\n"
     << "        for (int e = 0; e < 4; ++e) {\n"
     << "          const int r = e >> 1;\n"
     << "          const float p = m[r] == neg_inf ? 0.0f : expf(s[n][e] - "
        "m[r]);\n"
     << "          s[n][e] = p;\n"
     << "          row_sum[r] += p;\n"
     << "        }\n"
     << "      for (int r = 0; r < 2; ++r) {\n"
     << "        row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);\n"
     << "        row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);\n"
     << "        l[r] = l[r] * rescale[r] + row_sum[r];\n"
     << "      }\n"
     << "      for (int n = 0; n < " << dv / 8 << "; ++n)\n"
     << "        for (int e = 0; e < 4; ++e) o[n][e] *= rescale[e >> 1];\n"
     << "      // O += P V: P's accumulators are A fragments as they lie (the\n"
     << "      // C layout of n-tiles 2kk and 2kk + 1 is the A layout of "
        "k-step\n"
     << "      // kk); V rows are row-major B, loaded with .trans.\n"
     << "      for (int kk = 0; kk < " << kKeysPerTile / 16 << "; ++kk) {\n"
     << "        unsigned a[4] = {pack(s[2 * kk][0], s[2 * kk][1]), "
        "pack(s[2 * kk][2], s[2 * kk][3]),\n"
     << "                         pack(s[2 * kk + 1][0], s[2 * kk + 1][1]), "
        "pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};\n"
     << "        for (int n = 0; n < " << dv / 8 << "; ++n) {\n"
     << "          unsigned vb[2];\n"
     << "          kiln_ldmatrix_x2_trans(vb, &v_tile[kk * 16 + (lane & 7) + "
        "((lane >> 3) & 1) * 8][n * 8]);\n"
     << "          " << mma << "(o[n], a, vb, o[n]);\n"
     << "        }\n"
     << "      }\n"
     << "    }\n"
     << "    for (int r = 0; r < 2; ++r) {\n"
     << "      const long long i = first + warp * 16 + g + r * 8;\n"
     << "      if (i >= " << queries << ") continue;\n"
     << "      const long long row = (b * " << heads << "LL + h) * " << queries
     << " + i;\n"
     << "      for (int n = 0; n < " << dv / 8 << "; ++n)\n"
     << "        for (int e = 0; e < 2; ++e) {\n"
     << "          const long long d = n * 8 + 2 * t + e;\n"
     << "          const float acc = o[n][r * 2 + e];\n"
     << "          out0[" << parts.outIndex << "] = "
     << storeExpr(et, attention.getZeroNanProbs()
                          ? "((l[r] == 0.0f || l[r] != l[r]) ? 0.0f : acc / "
                            "l[r])"
                          : "acc / l[r]")
     << ";\n"
     << "        }\n"
     << "    }\n"
     << "  }\n"
     << "}\n";
  LaunchGeometry geometry;
  // Enough blocks for one query tile each (a grid-stride loop covers the
  // rest: the tiles of a head round its length up).
  setGridDim(geometry, 0, parts.batch * heads * queries, kRowsPerBlock,
             kMaxGrid);
  geometry.block[0] = 128;
  return FailureOr<LaunchGeometry>(geometry);
}

} // namespace kiln
