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
// takes is its AttentionConfig (AttentionConfig.cpp, where the measurements
// behind each default are cited).
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
// ping-pong between the warpgroups hide the waits yet (FlashAttention-3),
// so it timed slower than two m-tiles of mma.sync.
//
// fp32 operands, where kilnc --allow-tf32 allows, run the same loop on
// mma.sync.m16n8k8 with TF32 inputs (cvt.rna.tf32.f32 at each fragment
// load): one m-tile a warp, fp32 tiles of 32 keys (the two in 34 KiB),
// four warps, fragments read from shared memory element by element
// (ldmatrix moves 16-bit elements), rows padded by 8 floats so those reads
// are conflict-free, and P moved from the S accumulators into the A
// layout, which differs for m16n8k8, by warp shuffles.
//
//===----------------------------------------------------------------------===//

#include "AttentionConfig.h"
#include "AttentionParts.h"
#include "StridedView.h"

#include "kiln/Target/CUDA/TensorCores.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlir;

namespace kiln {

namespace {
/// The keys a tile of the mma.sync forms takes at most, for the bound on a
/// tile's row offsets (32-bit where they fit).
constexpr int64_t kKeysPerTile = 64;
constexpr int64_t kMaxHeadSize = 128;

/// Where the rows of a query, key or value operand lie when each row's
/// features are contiguous in a kernel input (the input itself, or a head
/// split, packed-projection slice or transpose of one): a tile can then be
/// copied 16 bytes a thread with cp.async instead of element by element
/// through the index arithmetic of its producers.
struct RowSource {
  /// The kernel input ("in3").
  std::string pointer;
  /// C text: the offset of row 0 of the head in the variable the operand
  /// was read with (`kv` or `bh`), and the distance between rows (as a
  /// 32-bit constant where a tile's rows fit, for offsets within a tile).
  std::string base, rowStride, tileRowStride;
  /// C condition: the pointer and every row are 16-byte aligned.
  std::string aligned;
};

/// `operand`'s rows for a tile copy, or nothing when its features are not
/// contiguous in an input or a row can never start 16-byte aligned.
/// `perChunk` elements make 16 bytes.
std::optional<RowSource> rowSourceOf(Value operand, const std::string &head,
                                     int64_t perChunk) {
  std::optional<StridedView> view = stridedViewOf(operand);
  if (!view || view->shape.size() < 2 || view->strides.back() != 1)
    return std::nullopt;
  RowSource source;
  source.pointer = "in" + std::to_string(view->input);
  source.aligned = "((unsigned long long)" + source.pointer + " & 15) == 0";
  // Each offset in elements: 16-byte aligned at multiples of perChunk.
  // Symbolic ones are checked at run time.
  auto requireAligned = [&](const Size &elements) {
    if (auto constant = elements.getConstant())
      return *constant % perChunk == 0;
    source.aligned += " && (" + elements.str() + " & " +
                      std::to_string(perChunk - 1) + "LL) == 0";
    return true;
  };
  size_t rank = view->shape.size();
  Size rowStride = view->strides[rank - 2];
  if (!requireAligned(view->offset) || !requireAligned(rowStride))
    return std::nullopt;
  source.rowStride = rowStride.str();
  std::optional<int64_t> constant = rowStride.getConstant();
  source.tileRowStride =
      constant && std::abs(*constant) * kKeysPerTile * 2 < INT32_MAX
          ? rowStride.str32()
          : source.rowStride;
  // The head dims (all but the last two), merged where one is contiguous
  // in the next: (size, stride), outermost first.
  SmallVector<std::pair<Size, Size>> heads;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (view->shape[d] == 1)
      continue;
    if (!requireAligned(view->strides[d]))
      return std::nullopt;
    if (!heads.empty() &&
        heads.back().second == view->shape[d] * view->strides[d])
      heads.back() = {heads.back().first * view->shape[d], view->strides[d]};
    else
      heads.push_back({view->shape[d], view->strides[d]});
  }
  SmallVector<std::string> terms;
  if (view->offset != 0)
    terms.push_back(view->offset.str());
  Size inner = 1;
  for (size_t k = heads.size(); k-- > 0;) {
    std::string coordinate =
        inner == 1 ? head : "(" + head + " / " + inner.str() + ")";
    if (k > 0)
      coordinate = "(" + coordinate + " % " + heads[k].first.str() + ")";
    terms.push_back(coordinate + " * " + heads[k].second.str());
    inner *= heads[k].first;
  }
  source.base = terms.empty() ? "0" : llvm::join(terms, " + ");
  return source;
}

} // namespace

std::optional<FailureOr<LaunchGeometry>>
emitTensorCoreAttention(KernelOp kernel, const AttentionParts &parts,
                        const KeySplit *split, StringRef name,
                        llvm::raw_ostream &os, const CudaEmitOptions &options) {
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

  int64_t heads = parts.heads, dq = parts.size, dv = parts.valueSize;
  // TF32 tiles are fp32: 32 keys a tile keep two in 34 KiB of static
  // shared memory, and the 64 rows of four warps' queries stage through
  // both (so the value rows must be as wide as the query's).
  if (tf32 && dv < dq)
    return std::nullopt;
  Size queries = parts.queries, keys = parts.keys;
  // The layout: one choice (AttentionConfig.cpp), returned with the launch.
  AttentionConfig config =
      chooseAttentionConfig(parts, tf32, split, options.attention);
  bool wgmma = config.form == AttentionForm::Wgmma;
  int64_t mTiles = config.mTiles, kvStages = config.kvStages,
          tileKeys = config.tileKeys, warps = config.warps;
  int64_t perChunk = tf32 ? 4 : 8;
  std::string storage = tf32         ? "float"
                        : et.isF16() ? "__half"
                                     : "__nv_bfloat16";
  std::string to16 = tf32         ? ""
                     : et.isF16() ? "__float2half_rn"
                                  : "__float2bfloat16_rn";
  std::string pair = et.isF16() ? "__half2" : "__nv_bfloat162";
  std::string toPair =
      et.isF16() ? "__floats2half2_rn" : "__floats2bfloat162_rn";
  std::string mma =
      et.isF16() ? "kiln_mma_m16n8k16_f16" : "kiln_mma_m16n8k16_bf16";
  BodyEmitter values(kernel, os);
  auto load = [&](Value operand, const std::string &index,
                  const std::string &indent) -> FailureOr<std::string> {
    values.reset();
    return values.getAt(operand, index, indent);
  };

  std::optional<RowSource> keyRows =
                               rowSourceOf(attention.getKey(), "kv", perChunk),
                           valueRows = rowSourceOf(attention.getValue(), "kv",
                                                   perChunk),
                           queryRows = rowSourceOf(attention.getQuery(), "bh",
                                                   perChunk);
  int64_t kPitch = dq + 8, vPitch = dv + 8;
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
  bool qInRegisters = mTiles == 1;
  bool qTileShared = !qInRegisters || wgmma;
  int64_t kTileInner = wgmma ? 64 : kPitch, vTileInner = wgmma ? 64 : vPitch;
  int64_t rows = 16 * mTiles * warps, threads = 32 * warps;
  // Two m-tiles' tiles (a query tile of up to 256 rows) pass the 48 KiB of
  // static shared memory: they are dynamic shared memory of the launch.
  int64_t elementBytes = tf32 ? 4 : 2;
  int64_t qBytes = qTileShared ? rows * kPitch * elementBytes : 0,
          kBytes = tileKeys * (wgmma ? dq : kPitch) * elementBytes,
          vBytes = tileKeys * (wgmma ? dv : vPitch) * elementBytes;
  // With one buffer each, FlashAttention-2's order: the value tile streams
  // in during Q K^T only, the next key tile during the softmax and P V.
  bool twoBarriers = kvStages == 1 && config.barriers == 2;
  int64_t dynamicShared =
      qTileShared ? qBytes + kvStages * (kBytes + vBytes) : 0;
  // The running maximum moves lazily (by more than 2^8), or at every rise.
  bool lazyRescale = config.lazyRescale;
  // `for` over e = threadIdx.x, + threads, ... below `count`, with a trip
  // count the compiler sees (the block size is fixed here).
  auto threadLoop = [&](int64_t count, const std::string &indent) {
    std::string text = llvm::formatv(
        "{0}#pragma unroll 4\n{0}for (int k = 0; k < {1}; ++k) {{\n{0}  "
        "const int e = threadIdx.x + k * {2};\n",
        indent, (count + threads - 1) / threads, threads);
    if (count % threads)
      text += llvm::formatv("{0}  if (e >= {1}) break;\n", indent, count).str();
    return text;
  };

  bool bf16 = et.isBF16();
  if (wgmma)
    os << cudaWgmmaFunction(tileKeys, bf16, /*transB=*/false)
       << cudaWgmmaFunction(dv, bf16, /*transB=*/true);
  if (split)
    emitSignature(kernel, name, os, "float *__restrict__ partials");
  else
    emitSignature(kernel, name, os);
  if (!split)
    os << parts.sinkTable;
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
  for (auto [rows, flag] :
       {std::pair{&queryRows, "q_async"}, std::pair{&keyRows, "k_async"},
        std::pair{&valueRows, "v_async"}})
    if (*rows)
      os << "  const bool " << flag << " = " << (*rows)->aligned << ";\n";
  // A 16-bit output whose features are innermost stores a lane's two
  // adjacent ones at once, where the output is 4-byte aligned.
  Type outType = attention.getType().getElementType();
  bool pairedOutput = !split && parts.outFeaturesInnermost &&
                      (outType.isF16() || outType.isBF16());
  std::string outPair = outType.isF16() ? "__half2" : "__nv_bfloat162",
              halvesToPair =
                  outType.isF16() ? "__halves2half2" : "__halves2bfloat162";
  if (pairedOutput)
    os << "  const bool out_pairs = ((unsigned long long)out0 & 3) == 0;\n";
  // This block's keys: all, or its split's.
  os << keyRangeText(split, keys, "z");
  // Key indices in 32 bits where every one, and a tile past the last, fits:
  // in the key loop a 64-bit add or compare is two instructions.
  bool narrowKeys = keys.upper() <= INT32_MAX - tileKeys;
  std::string keyIndex = narrowKeys ? "int" : "long long",
              keyStop = narrowKeys ? "key_stop" : "key_end";
  if (narrowKeys)
    os << "  const int key_stop = (int)key_end;\n";
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
    return FailureOr<LaunchGeometry>(failure());
  os << queryIndent << "    value = " << *query << ";\n"
     << queryIndent << "  }\n"
     << queryIndent << "  q_row(e / " << dq << ")[d] = " << to16 << "(value);\n"
     << queryIndent << "}\n";
  if (queryRows)
    os << "    }\n";
  os << "    __syncthreads();\n";
  // This warp's 16 query rows as m16n8k16 A fragments, one ldmatrix a
  // k-step of 16.
  auto queryFragments = [&](const std::string &indent) {
    return llvm::formatv(
               "{0}unsigned qa[{1}][4];\n{0}#pragma unroll\n{0}for (int kk = "
               "0; kk < {1}; ++kk)\n{0}  kiln_ldmatrix_x4(qa[kk], q_row(warp "
               "* 16 + (lane & 7) + ((lane >> 3) & 1) * 8) + kk * 16 + (lane "
               ">> 4) * 8);\n",
               indent, dq / 16)
        .str();
  };
  if (!qInRegisters)
    ;
  else if (tf32)
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
  else if (!wgmma)
    os << queryFragments("    ");
  // The key tile's first stage overwrites the query staged there.
  if (qInRegisters && !wgmma)
    os << "    __syncthreads();\n";
  // Stages rows [from, from + tileKeys) of keys or values (`width` features) in
  // `tileName`, zeros past the last key: cp.async from an aligned kernel
  // input, else element by element through the producers.
  // Element (row, column) of a key or value tile `width` features wide:
  // padded rows, or wgmma's core matrices.
  auto cell = [&](const char *tileName, const std::string &row,
                  const std::string &column, int64_t width) {
    if (!wgmma)
      return std::string(tileName) + "[" + row + "][" + column + "]";
    return llvm::formatv("{0}[(({1}) >> 3) * {3} + (({2}) >> 3)][(({1}) & 7) "
                         "* 8 + (({2}) & 7)]",
                         tileName, row, column, width / 8)
        .str();
  };
  auto stageKeys = [&](Value operand, const std::optional<RowSource> &source,
                       const char *flag, const char *tileName, int64_t width,
                       const std::string &indent) -> LogicalResult {
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
         << indent << "    kiln_cp_async_16(&"
         << cell(tileName, "r", "c", width) << ", live ? "
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
       << in << "  "
       << cell(tileName, "e / " + std::to_string(width), "d", width) << " = "
       << to16 << "(value);\n"
       << in << "}\n";
    if (source)
      os << indent << "}\n";
    return success();
  };
  // Each stage is one cp.async group (empty when staged by plain stores),
  // so "all but the newest group" is always the tile about to be read.
  auto stage = [&](Value operand, const std::optional<RowSource> &source,
                   const char *flag, const char *tileName, int64_t width,
                   const std::string &from,
                   const std::string &indent) -> LogicalResult {
    os << indent << "if (" << from << " < " << keyStop << ") {\n"
       << indent << "  const " << keyIndex << " from = " << from << ";\n";
    if (failed(
            stageKeys(operand, source, flag, tileName, width, indent + "  ")))
      return failure();
    os << indent << "}\n" << indent << "kiln_cp_async_commit();\n";
    return success();
  };
  bool twoStages = kvStages == 2;
  // What cp.async or plain stores wrote, wgmma reads through the async
  // proxy: each writer fences before the barrier.
  std::string proxyFence = wgmma ? "      kiln_fence_proxy_async();\n" : "";
  // The first key tile, and its value tile unless the loop stages each value
  // tile itself (two barriers, one buffer).
  if (failed(stage(attention.getKey(), keyRows, "k_async",
                   twoStages ? "k_tile0" : "k_tile", dq, "key_begin",
                   "    ")) ||
      (!twoBarriers && failed(stage(attention.getValue(), valueRows, "v_async",
                                    twoStages ? "v_tile0" : "v_tile", dv,
                                    "key_begin", "    "))))
    return FailureOr<LaunchGeometry>(failure());
  std::string nextTile = "tile + " + std::to_string(tileKeys);
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
  int64_t nTiles = tileKeys / 8;
  if (twoStages)
    os << "    int buffer = 0;\n";
  os << "    for (" << keyIndex << " tile = key_begin; tile < " << keyStop
     << "; tile += " << tileKeys << ") {\n";
  if (twoStages) {
    auto pick = [&](const char *name, int64_t pitch) {
      os << "      " << storage << " (*" << name << "_tile)[" << pitch
         << "] = buffer ? " << name << "_tile1 : " << name << "_tile0, (*"
         << name << "_next)[" << pitch << "] = buffer ? " << name
         << "_tile0 : " << name << "_tile1;\n";
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
      return FailureOr<LaunchGeometry>(failure());
  } else if (twoBarriers) {
    os << "      // This key tile has landed, and every warp is done with the\n"
       << "      // previous value tile: this one streams in during Q K^T.\n"
       << "      kiln_cp_async_wait<0>();\n"
       << "      __syncthreads();\n";
    if (failed(stage(attention.getValue(), valueRows, "v_async", "v_tile", dv,
                     "tile", "      ")))
      return FailureOr<LaunchGeometry>(failure());
  } else {
    os << "      // This key tile has landed (the value tile may not have).\n"
       << "      kiln_cp_async_wait<1>();\n"
       << "      __syncthreads();\n";
  }
  os << "      // S = Q K^T: this warp's 16 rows by the tile's " << tileKeys
     << " keys, n-tiles\n"
     << "      // of 8 keys; B from K rows (K^T is column-major B).\n"
     << "      float s[" << mTiles << "][" << nTiles << "][4];\n";
  if (wgmma)
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
  else
    os << "      #pragma unroll\n"
          "      for (int mt = 0; mt < "
       << mTiles << "; ++mt)\n"
       << "        #pragma unroll\n"
          "        for (int n = 0; n < "
       << nTiles << "; ++n)\n"
       << "          #pragma unroll\n"
          "          for (int e = 0; e < 4; ++e) s[mt][n][e] = 0.0f;\n";
  if (wgmma)
    ; // Issued above, with the query's fragments.
  else if (tf32)
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
  else if (qInRegisters)
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
  else
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
  if (!twoStages) {
    if (twoBarriers)
      os << "      // This value tile has landed, and every warp is done with\n"
         << "      // k_tile: the next key tile streams in during the softmax\n"
         << "      // and P V.\n"
         << "      kiln_cp_async_wait<0>();\n";
    else
      os << "      // Every warp is done with k_tile: the next key tile "
            "streams in\n"
         << "      // during the softmax and P V.\n";
    os << "      __syncthreads();\n";
    if (failed(stage(attention.getKey(), keyRows, "k_async", "k_tile", dq,
                     nextTile, "      ")))
      return FailureOr<LaunchGeometry>(failure());
  }
  // The exponent's factor folds in as FlashAttention folds the scale: the
  // tile's maximum is taken over the scores as they stand, which a
  // positive factor keeps in order (and rounding too), and scaled to log2
  // units once a row; each probability is exp2 of one fma, score * factor
  // - maximum. The scores stand as the raw products, where the scale is
  // positive and nothing else adds to them (the factor is scale * log2 e),
  // or as the natural logits (log2 e), a mask added to the scaled product
  // by one fma.
  float scale = attention.getScale().convertToFloat();
  float softcap = attention.getSoftcap().convertToFloat();
  Value mask = attention.getMask();
  bool raw = softcap <= 0.0f && !mask && scale > 0.0f;
  std::string factor =
      raw ? llvm::formatv("{0:e}f", static_cast<float>(scale * M_LOG2E)).str()
          : "log2e";
  std::string scaleText = llvm::formatv("{0:e}f", scale);
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
      return FailureOr<LaunchGeometry>(failure());
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
    std::string cap = llvm::formatv("{0:e}f", softcap);
    os << "            score = " << cap << " * tanhf(score / " << cap << ");\n";
    if (maskValue)
      os << "            score += " << *maskValue << ";\n";
  }
  os << "          }\n"
     << "          s[mt][n][e] = score;\n"
     << "          tile_max[mt][e >> 1] = fmaxf(tile_max[mt][e >> 1], score);\n"
     << "        }\n"
     << "      }\n"
     << "      #pragma unroll\n"
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
  if (!twoBarriers)
    os << "      // This value tile has landed (the next tile's may not "
          "have).\n"
       << "      kiln_cp_async_wait<" << (twoStages ? 2 : 1) << ">();\n"
       << proxyFence << "      __syncthreads();\n";
  if (wgmma)
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
       << "(o[0], pa[kk], kiln_wgmma_desc(&v_tile[2 * kk * " << dv / 8
       << "][0], " << 16 * dv << "u, 128u), 1);\n"
       << "      kiln_wgmma_commit();\n"
       << "      // Done before the next barrier lets a stage overwrite the\n"
       << "      // value tile.\n"
       << "      kiln_wgmma_wait<0>();\n"
       << "      kiln_wgmma_hold(o[0]);\n";
  else if (tf32)
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
  else
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
  if (twoStages) {
    os << "      buffer ^= 1;\n";
  } else if (!twoBarriers) {
    os << "      // Every warp is done with v_tile: the next value tile "
          "streams\n"
       << "      // in during the next Q K^T.\n"
       << "      __syncthreads();\n";
    if (failed(stage(attention.getValue(), valueRows, "v_async", "v_tile", dv,
                     nextTile, "      ")))
      return FailureOr<LaunchGeometry>(failure());
  }
  os << "    }\n"
     << "    // A row's sum: its four lanes' parts.\n"
     << "    #pragma unroll\n"
        "    for (int mt = 0; mt < "
     << mTiles << "; ++mt)\n"
     << "      #pragma unroll\n"
        "      for (int r = 0; r < 2; ++r) {\n"
     << "        l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 1);\n"
     << "        l[mt][r] += __shfl_xor_sync(0xffffffffu, l[mt][r], 2);\n"
     << "      }\n"
     << "    // Nothing in flight into the tiles the next query tile reuses.\n"
     << "    kiln_cp_async_wait<0>();\n"
     << "    #pragma unroll\n"
        "    for (int mt = 0; mt < "
     << mTiles << "; ++mt)\n"
     << "    #pragma unroll\n"
        "    for (int r = 0; r < 2; ++r) {\n"
     << "      const long long i = first + warp * " << 16 * mTiles
     << " + mt * 16 + g + r * 8;\n"
     << "      if (i >= " << queries << ") continue;\n"
     << "      const long long row = (b * " << heads << "LL + h) * " << queries
     << " + i;\n";
  if (split) {
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
       << "    }\n  }\n}\n";
    LaunchGeometry geometry;
    setGridDim(geometry, 0, queries, rows, kMaxGrid);
    setGridDim(geometry, 1, parts.batch * heads, 1, kMaxGrid);
    setGridDim(geometry, 2, keys, split->chunk, split->maxSplits);
    geometry.block[0] = threads;
    geometry.sharedBytes = dynamicShared;
    geometry.attention = config;
    return FailureOr<LaunchGeometry>(geometry);
  }
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
  LaunchGeometry geometry;
  // A block for each query tile of each head (grid-stride loops cover what
  // the grid's limits leave).
  setGridDim(geometry, 0, queries, rows, kMaxGrid);
  setGridDim(geometry, 1, parts.batch * heads, 1, kMaxGrid);
  geometry.block[0] = threads;
  geometry.sharedBytes = dynamicShared;
  geometry.attention = config;
  return FailureOr<LaunchGeometry>(geometry);
}

} // namespace kiln
