//===- AttentionTileStaging.cpp - attention tiles in shared memory --------===//
//
// The query, key and value tiles of the tensor-core attention kernel: their
// shared memory (static, or the launch's dynamic shared memory), and their
// staging, by cp.async from a kernel input whose rows are contiguous and
// aligned, else element by element through the operand's producers. Tile
// rows are padded by 16 bytes (8 floats for TF32), or laid as wgmma's 8x8
// core matrices.
//
//===----------------------------------------------------------------------===//

#include "AttentionTensorCoreParts.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdint>
#include <string>

using namespace mlir;

namespace kiln {

std::string
TensorCoreAttentionEmitter::threadLoop(int64_t count,
                                       const std::string &indent) const {
  std::string text = llvm::formatv(
      "{0}#pragma unroll 4\n{0}for (int k = 0; k < {1}; ++k) {{\n{0}  "
      "const int e = threadIdx.x + k * {2};\n",
      indent, (count + threads - 1) / threads, threads);
  if (count % threads)
    text += llvm::formatv("{0}  if (e >= {1}) break;\n", indent, count).str();
  return text;
}

void TensorCoreAttentionEmitter::emitTileDeclarations() {
  os << (tf32
             ? "  // Rows padded by 8 floats: the eight rows (or four columns) "
               "of a\n  // fragment's reads hit distinct banks.\n"
             : "  // Rows padded by 16 bytes: an ldmatrix's eight rows hit "
               "distinct banks.\n");
  if (wgmma)
    os << "  // Key and value tiles in wgmma's no-swizzle layout: 8x8 core\n"
       << "  // matrices of 128 contiguous bytes, core (r / 8) * (width / 8) "
          "+ c / 8\n"
       << "  // holding rows r to r + 7 of columns c to c + 7.\n";
  if (!qTileShared) {
    os << "  __shared__ __align__(16) " << storage << " k_tile[" << tileKeys
       << "][" << kPitch << "];\n"
       << "  __shared__ __align__(16) " << storage << " v_tile[" << tileKeys
       << "][" << vPitch << "];\n";
  } else {
    auto tileAt = [&](const char *tileName, int64_t pitch, int64_t offset) {
      os << "  " << storage << " (*" << tileName << ")[" << pitch
         << "] = reinterpret_cast<" << storage << " (*)[" << pitch
         << "]>(kiln_smem + " << offset << ");\n";
    };
    os << "  // The query, key and value tiles (" << rows << ", " << tileKeys
       << " and " << tileKeys << " rows"
       << (kvStages == 2 ? ", two buffers each for keys and values" : "")
       << ").\n"
       << "  KILN_DYNAMIC_SHARED(kiln_smem, " << dynamicShared << ");\n";
    tileAt("q_tile", kPitch, 0);
    if (kvStages == 2) {
      tileAt("k_tile0", kTileInner, qBytes);
      tileAt("k_tile1", kTileInner, qBytes + kBytes);
      tileAt("v_tile0", vTileInner, qBytes + 2 * kBytes);
      tileAt("v_tile1", vTileInner, qBytes + 2 * kBytes + vBytes);
    } else {
      tileAt("k_tile", kTileInner, qBytes);
      tileAt("v_tile", vTileInner, qBytes + kBytes);
    }
  }
}

LogicalResult TensorCoreAttentionEmitter::stageQueryTile() {
  if (qInRegisters && !wgmma)
    os << "    // The query tile, staged in k_tile (rows past " << tileKeys
       << " in v_tile),\n"
       << "    // becomes this warp's A fragments (16 rows by the head "
          "size).\n"
       << "    auto q_row = [&](int r) -> " << storage << " * {\n"
       << "      return r < " << tileKeys << " ? &k_tile[r][0] : &v_tile[r - "
       << tileKeys << "][0];\n"
       << "    };\n";
  else
    os << "    // The query tile: this warp's rows are " << 16 * mTiles
       << " from warp * " << 16 * mTiles << ".\n"
       << "    auto q_row = [&](int r) -> " << storage
       << " * { return &q_tile[r][0]; };\n";
  os << "    __syncthreads();\n";
  std::string queryIndent = "    ";
  if (queryRows) {
    // 16 bytes a thread, zeros past the last query row.
    int64_t chunks = dq / perChunk;
    os << "    if (q_async) {\n"
       << "      const " << storage << " *src = " << queryRows->pointer << " + "
       << queryRows->base << ";\n"
       << threadLoop(rows * chunks, "      ")
       << "        const long long i = first + e / " << chunks << ";\n"
       << "        const bool live = i < " << queries << ";\n"
       << "        kiln_cp_async_16(q_row(e / " << chunks << ") + e % "
       << chunks << " * " << perChunk << ", live ? src + i * "
       << queryRows->rowStride << " + e % " << chunks << " * " << perChunk
       << " : " << queryRows->pointer << ", live ? 16u : 0u);\n"
       << "      }\n"
       << "      kiln_cp_async_commit();\n"
       << "      kiln_cp_async_wait<0>();\n"
       << "    } else {\n";
    queryIndent = "      ";
  }
  os << threadLoop(rows * dq, queryIndent) << queryIndent
     << "  const long long i = first + e / " << dq << ", d = e % " << dq
     << ";\n"
     << queryIndent << "  float value = 0.0f;\n"
     << queryIndent << "  if (i < " << queries << ") {\n"
     << queryIndent << "    const long long row = (b * " << heads
     << "LL + h) * " << queries << " + i;\n";
  auto query = load(attention.getQuery(), llvm::formatv("row * {0}LL + d", dq),
                    queryIndent + "    ");
  if (failed(query))
    return failure();
  os << queryIndent << "    value = " << *query << ";\n"
     << queryIndent << "  }\n"
     << queryIndent << "  q_row(e / " << dq << ")[d] = " << to16 << "(value);\n"
     << queryIndent << "}\n";
  if (queryRows)
    os << "    }\n";
  os << "    __syncthreads();\n";
  return success();
}

std::string TensorCoreAttentionEmitter::cell(const char *tileName,
                                             const std::string &row,
                                             const std::string &column,
                                             int64_t width) const {
  if (!wgmma)
    return std::string(tileName) + "[" + row + "][" + column + "]";
  return llvm::formatv("{0}[(({1}) >> 3) * {3} + (({2}) >> 3)][(({1}) & 7) "
                       "* 8 + (({2}) & 7)]",
                       tileName, row, column, width / 8)
      .str();
}

LogicalResult TensorCoreAttentionEmitter::stageKeys(
    Value operand, const std::optional<RowSource> &source, const char *flag,
    const char *tileName, int64_t width, const std::string &indent) {
  std::string in = indent;
  if (source) {
    // Each thread copies 16 bytes of the same column in rows r0, r0 +
    // `step`, ...: one 64-bit address, then 32-bit offsets. Into wgmma's
    // layout, eight consecutive threads copy one core matrix (eight rows
    // of a column of chunks), so that a warp's 512 bytes are contiguous.
    int64_t chunks = width / perChunk, step = threads / chunks;
    os << indent << "if (" << flag << ") {\n";
    if (wgmma)
      os << indent << "  const int r0 = (threadIdx.x & 7) + threadIdx.x / "
         << 8 * chunks << " * 8, c = (threadIdx.x >> 3) % " << chunks << " * "
         << perChunk << ";\n";
    else
      os << indent << "  const int r0 = threadIdx.x / " << chunks
         << ", c = threadIdx.x % " << chunks << " * " << perChunk << ";\n";
    os << indent << "  const " << storage << " *src = " << source->pointer
       << " + " << source->base << " + from * " << source->rowStride
       << " + c;\n"
       << indent << "  #pragma unroll\n"
       << indent << "  for (int k = 0; k < " << (tileKeys + step - 1) / step
       << "; ++k) {\n"
       << indent << "    const int r = r0 + k * " << step << ";\n";
    if (tileKeys % step)
      os << indent << "    if (r >= " << tileKeys << ") break;\n";
    os << indent << "    const bool live = from + r < " << keyStop << ";\n"
       << indent << "    kiln_cp_async_16(&" << cell(tileName, "r", "c", width)
       << ", live ? "
       << "src + r * " << source->tileRowStride << " : " << source->pointer
       << ", live ? 16u : 0u);\n"
       << indent << "  }\n"
       << indent << "} else {\n";
    in += "  ";
  }
  os << threadLoop(tileKeys * width, in) << in << "  const " << keyIndex
     << " j = from + e / " << width << ";\n"
     << in << "  const int d = e % " << width << ";\n"
     << in << "  float value = 0.0f;\n"
     << in << "  if (j < " << keyStop << ") {\n";
  auto element =
      load(operand, llvm::formatv("(kv * {0} + j) * {1}LL + d", keys, width),
           in + "    ");
  if (failed(element))
    return failure();
  os << in << "    value = " << *element << ";\n"
     << in << "  }\n"
     << in << "  " << cell(tileName, "e / " + std::to_string(width), "d", width)
     << " = " << to16 << "(value);\n"
     << in << "}\n";
  if (source)
    os << indent << "}\n";
  return success();
}

LogicalResult TensorCoreAttentionEmitter::stage(
    Value operand, const std::optional<RowSource> &source, const char *flag,
    const char *tileName, int64_t width, const std::string &from,
    const std::string &indent) {
  os << indent << "if (" << from << " < " << keyStop << ") {\n"
     << indent << "  const " << keyIndex << " from = " << from << ";\n";
  if (failed(stageKeys(operand, source, flag, tileName, width, indent + "  ")))
    return failure();
  os << indent << "}\n" << indent << "kiln_cp_async_commit();\n";
  return success();
}

} // namespace kiln
