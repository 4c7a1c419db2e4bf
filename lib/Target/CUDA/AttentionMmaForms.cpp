//===- AttentionMmaForms.cpp - attention's tensor-core instructions -------===//
//
// The instruction forms of the tensor-core attention kernel's two products,
// S = Q K^T and O += P V: mma.sync.m16n8k16 on 16-bit tiles (fragments
// loaded with ldmatrix, .trans for V; the query's kept in registers with
// one m-tile a warp, read at each k-step with two), mma.sync.m16n8k8 on
// TF32 (fragments read element by element, P moved into the A layout by
// warp shuffles), and Hopper's wgmma.mma_async (A from registers, B from
// shared memory through a descriptor). P goes from the S accumulators to
// A fragments without leaving registers where the layouts line up.
//
//===----------------------------------------------------------------------===//

#include "AttentionTensorCoreParts.h"

#include "kiln/Target/CUDA/TensorCores.h"

#include "llvm/Support/FormatVariadic.h"

#include <string>

using namespace mlir;

namespace kiln {

std::string
TensorCoreAttentionEmitter::queryFragments(const std::string &indent) const {
  return llvm::formatv(
             "{0}unsigned qa[{1}][4];\n{0}#pragma unroll\n{0}for (int kk = "
             "0; kk < {1}; ++kk)\n{0}  kiln_ldmatrix_x4(qa[kk], q_row(warp "
             "* 16 + (lane & 7) + ((lane >> 3) & 1) * 8) + kk * 16 + (lane "
             ">> 4) * 8);\n",
             indent, dq / 16)
      .str();
}

void TensorCoreAttentionEmitter::emitQueryFragmentsTf32() {
  os << "    // A fragments of m16n8k8: rows g and g + 8, columns t and t +\n"
     << "    // 4 of each k-step of 8.\n"
     << "    unsigned qa[" << dq / 8 << "][4];\n"
     << "    #pragma unroll\n"
        "    for (int kk = 0; kk < "
     << dq / 8 << "; ++kk) {\n"
     << "      const float *r0 = q_row(warp * 16 + g) + kk * 8, *r1 = "
        "q_row(warp * 16 + g + 8) + kk * 8;\n"
     << "      qa[kk][0] = kiln_to_tf32(r0[t]);\n"
     << "      qa[kk][1] = kiln_to_tf32(r1[t]);\n"
     << "      qa[kk][2] = kiln_to_tf32(r0[t + 4]);\n"
     << "      qa[kk][3] = kiln_to_tf32(r1[t + 4]);\n"
     << "    }\n";
}

void TensorCoreAttentionEmitter::emitZeroScores() {
  os << "      #pragma unroll\n"
        "      for (int mt = 0; mt < "
     << mTiles << "; ++mt)\n"
     << "        #pragma unroll\n"
        "        for (int n = 0; n < "
     << nTiles << "; ++n)\n"
     << "          #pragma unroll\n"
        "          for (int e = 0; e < 4; ++e) s[mt][n][e] = 0.0f;\n";
}

void TensorCoreAttentionEmitter::emitScoresWgmma() {
  os << "      // One wgmma a k-step for the warpgroup's 64 rows (this "
        "warp's\n"
     << "      // 16 in its registers), the key tile K-major; scale-d 0 "
        "starts\n"
     << "      // the sum at the first. The query's fragments are read at\n"
     << "      // each tile, not kept across the loop: ptxas 13.0 gave "
        "them\n"
     << "      // P's registers when Q K^T and P V had one shape (64 keys "
        "at\n"
     << "      // head size 64), and the next tile multiplied by P.\n"
     << queryFragments("      ") << "      kiln_wgmma_fence();\n"
     << "      #pragma unroll\n"
        "      for (int kk = 0; kk < "
     << dq / 16 << "; ++kk)\n"
     << "        " << wgmmaFunctionName(tileKeys, bf16, false)
     << "(s[0], qa[kk], kiln_wgmma_desc(&k_tile[2 * kk][0], 128u, " << 16 * dq
     << "u), kk);\n"
     << "      kiln_wgmma_commit();\n"
     << "      kiln_wgmma_wait<0>();\n"
     << "      kiln_wgmma_hold(s[0]);\n";
}

void TensorCoreAttentionEmitter::emitScoresTf32() {
  os << "      #pragma unroll\n"
        "      for (int kk = 0; kk < "
     << dq / 8 << "; ++kk)\n"
     << "        #pragma unroll\n"
        "        for (int n = 0; n < "
     << nTiles << "; ++n) {\n"
     << "          const float *key = &k_tile[n * 8 + g][kk * 8];\n"
     << "          kiln_mma_m16n8k8_tf32(s[0][n], qa[kk], "
        "{kiln_to_tf32(key[t]), "
        "kiln_to_tf32(key[t + 4])}, s[0][n]);\n"
     << "        }\n";
}

void TensorCoreAttentionEmitter::emitScoresMmaSync() {
  os << "      #pragma unroll\n"
        "      for (int kk = 0; kk < "
     << dq / 16 << "; ++kk)\n"
     << "        #pragma unroll\n"
        "        for (int n = 0; n < "
     << nTiles << "; n += 2) {\n"
     << "          unsigned kb[4];\n"
     << "          kiln_ldmatrix_x4(kb, &k_tile[(n + (lane >> 4)) * 8 + "
        "(lane "
        "& 7)][kk * 16 + ((lane >> 3) & 1) * 8]);\n"
     << "          " << mma << "(s[0][n], qa[kk], {kb[0], kb[1]}, s[0][n]);\n"
     << "          " << mma
     << "(s[0][n + 1], qa[kk], {kb[2], kb[3]}, s[0][n + 1]);\n"
     << "        }\n";
}

void TensorCoreAttentionEmitter::emitScoresMmaSyncTwoTiles() {
  os << "      // Each K fragment feeds both m-tiles; the query's A "
        "fragments\n"
     << "      // are read at each k-step.\n"
     << "      #pragma unroll\n"
        "      for (int kk = 0; kk < "
     << dq / 16 << "; ++kk) {\n"
     << "        unsigned qf[" << mTiles << "][4];\n"
     << "        #pragma unroll\n"
        "        for (int mt = 0; mt < "
     << mTiles << "; ++mt)\n"
     << "          kiln_ldmatrix_x4(qf[mt], q_row(warp * " << 16 * mTiles
     << " + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) + kk * 16 + "
        "(lane >> 4) * 8);\n"
     << "        #pragma unroll\n"
        "        for (int n = 0; n < "
     << nTiles << "; n += 2) {\n"
     << "          unsigned kb[4];\n"
     << "          kiln_ldmatrix_x4(kb, &k_tile[(n + (lane >> 4)) * 8 + "
        "(lane & 7)][kk * 16 + ((lane >> 3) & 1) * 8]);\n"
     << "          #pragma unroll\n"
        "          for (int mt = 0; mt < "
     << mTiles << "; ++mt) {\n"
     << "            " << mma
     << "(s[mt][n], qf[mt], {kb[0], kb[1]}, s[mt][n]);\n"
     << "            " << mma
     << "(s[mt][n + 1], qf[mt], {kb[2], kb[3]}, s[mt][n + 1]);\n"
     << "          }\n"
     << "        }\n"
     << "      }\n";
}

void TensorCoreAttentionEmitter::emitValuesWgmma() {
  os << "      // O += P V: P's accumulators are A fragments as they lie "
        "(as\n"
     << "      // for mma.sync); the value tile is MN-major B (trans-b). P "
        "is\n"
     << "      // packed before the fence: a register written between the\n"
     << "      // fence and its wgmma makes ptxas add a warpgroup.arrive.\n"
     << "      unsigned pa[" << tileKeys / 16 << "][4];\n"
     << "      #pragma unroll\n"
        "      for (int kk = 0; kk < "
     << tileKeys / 16 << "; ++kk) {\n"
     << "        pa[kk][0] = pack(s[0][2 * kk][0], s[0][2 * kk][1]);\n"
     << "        pa[kk][1] = pack(s[0][2 * kk][2], s[0][2 * kk][3]);\n"
     << "        pa[kk][2] = pack(s[0][2 * kk + 1][0], s[0][2 * kk + "
        "1][1]);\n"
     << "        pa[kk][3] = pack(s[0][2 * kk + 1][2], s[0][2 * kk + "
        "1][3]);\n"
     << "      }\n"
     << "      kiln_wgmma_hold(o[0]);\n"
     << "      kiln_wgmma_fence();\n"
     << "      #pragma unroll\n"
        "      for (int kk = 0; kk < "
     << tileKeys / 16 << "; ++kk)\n"
     << "        " << wgmmaFunctionName(dv, bf16, true)
     << "(o[0], pa[kk], kiln_wgmma_desc(&v_tile[2 * kk * " << dv / 8 << "][0], "
     << 16 * dv << "u, 128u), 1);\n"
     << "      kiln_wgmma_commit();\n"
     << "      // Done before the next barrier lets a stage overwrite the\n"
     << "      // value tile.\n"
     << "      kiln_wgmma_wait<0>();\n"
     << "      kiln_wgmma_hold(o[0]);\n";
}

void TensorCoreAttentionEmitter::emitValuesTf32() {
  os << "      // O += P V: the A fragment of k-step kk (columns t and t + "
        "4\n"
     << "      // of each row) lies in n-tile kk's accumulators at lanes\n"
     << "      // 4g + t / 2 and 4g + t / 2 + 2, element t % 2: two rounds\n"
     << "      // of shuffles. V rows are row-major B: rows t and t + 4.\n"
     << "      const int from_low = (lane & ~3) | (t >> 1), from_high = "
        "from_low + 2;\n"
     << "      #pragma unroll\n"
        "      for (int kk = 0; kk < "
     << nTiles << "; ++kk) {\n"
     << "        float low[4], high[4];\n"
     << "        #pragma unroll\n"
        "        for (int e = 0; e < 4; ++e) {\n"
     << "          low[e] = __shfl_sync(0xffffffffu, s[0][kk][e], "
        "from_low);\n"
     << "          high[e] = __shfl_sync(0xffffffffu, s[0][kk][e], "
        "from_high);\n"
     << "        }\n"
     << "        // Selects, not low[t & 1]: an index known only at run "
        "time\n"
     << "        // would put the arrays in local memory.\n"
     << "        const bool odd = t & 1;\n"
     << "        const unsigned a[4] = {kiln_to_tf32(odd ? low[1] : low[0]), "
        "kiln_to_tf32(odd ? low[3] : low[2]),\n"
     << "                               kiln_to_tf32(odd ? high[1] : "
        "high[0]), kiln_to_tf32(odd ? high[3] : high[2])};\n"
     << "        const float *v0 = &v_tile[kk * 8 + t][g], *v4 = "
        "&v_tile[kk * 8 + t + 4][g];\n"
     << "        #pragma unroll\n"
        "        for (int n = 0; n < "
     << dv / 8 << "; ++n)\n"
     << "          kiln_mma_m16n8k8_tf32(o[0][n], a, "
        "{kiln_to_tf32(v0[n * 8]), kiln_to_tf32(v4[n * 8])}, o[0][n]);\n"
     << "      }\n";
}

void TensorCoreAttentionEmitter::emitValuesMmaSync() {
  os << "      // O += P V: P's accumulators are A fragments as they lie "
        "(the\n"
     << "      // C layout of n-tiles 2kk and 2kk + 1 is the A layout of "
        "k-step\n"
     << "      // kk); V rows are row-major B, loaded with .trans, two "
        "n-tiles\n"
     << "      // per ldmatrix.\n"
     << "      #pragma unroll\n"
        "      for (int kk = 0; kk < "
     << tileKeys / 16 << "; ++kk) {\n"
     << "        unsigned a[" << mTiles << "][4];\n"
     << "        #pragma unroll\n"
        "        for (int mt = 0; mt < "
     << mTiles << "; ++mt) {\n"
     << "          a[mt][0] = pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);\n"
     << "          a[mt][1] = pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);\n"
     << "          a[mt][2] = pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + "
        "1][1]);\n"
     << "          a[mt][3] = pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + "
        "1][3]);\n"
     << "        }\n"
     << "        #pragma unroll\n"
        "        for (int n = 0; n < "
     << dv / 8 << "; n += 2) {\n"
     << "          unsigned vb[4];\n"
     << "          kiln_ldmatrix_x4_trans(vb, &v_tile[kk * 16 + (lane & 7) + "
        "((lane >> 3) & 1) * 8][(n + (lane >> 4)) * 8]);\n"
     << "          #pragma unroll\n"
        "          for (int mt = 0; mt < "
     << mTiles << "; ++mt) {\n"
     << "            " << mma
     << "(o[mt][n], a[mt], {vb[0], vb[1]}, o[mt][n]);\n"
     << "            " << mma
     << "(o[mt][n + 1], a[mt], {vb[2], vb[3]}, o[mt][n + 1]);\n"
     << "          }\n"
     << "        }\n"
     << "      }\n";
}

} // namespace kiln
