//===- AttentionTensorCoreParts.h - tensor-core attention -------*- C++ -*-===//
//
// Internal to the CUDA target: what the files of the tensor-core attention
// generator share. The kernel's layout (AttentionTensorCoreLayout.cpp) is
// read once from chooseAttentionConfig's choice; the emitter
// (AttentionTensorCoreEmitter.cpp) writes the kernel in order, calling on
// the row sources (AttentionRowSources.cpp), the tile staging
// (AttentionTileStaging.cpp), the key loop's pipeline schedules
// (AttentionPipeline.cpp), the mma.sync and wgmma instruction forms
// (AttentionMmaForms.cpp) and the softmax and output stores
// (AttentionSoftmaxStore.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_ATTENTIONTENSORCOREPARTS_H
#define KILN_LIB_TARGET_CUDA_ATTENTIONTENSORCOREPARTS_H

#include "AttentionParts.h"

#include "kiln/KernelConfig/KernelConfig.h"

#include <optional>
#include <string>

namespace kiln {

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
std::optional<RowSource> rowSourceOf(mlir::Value operand,
                                     const std::string &head, int64_t perChunk);

/// The layout of one tensor-core attention kernel: chooseAttentionConfig's
/// choice and every size, C type name and flag the emitting functions read
/// from it and from the attention.
struct TensorCoreLayout {
  /// Derives the layout of `parts` (TF32 where `tf32`; the split kernel
  /// where `split`) under `overrides`.
  TensorCoreLayout(const AttentionParts &parts, const KeySplit *split,
                   const AttentionOverrides &overrides, bool tf32);

  /// The choice of AttentionConfig.cpp, returned with the launch.
  AttentionConfig config;
  /// fp32 operands on the tensor cores as TF32 (m16n8k8).
  bool tf32 = false;
  /// The wgmma form (AttentionForm::Wgmma).
  bool wgmma = false;
  /// The operands are bf16 (else f16, or fp32 as TF32).
  bool bf16 = false;
  /// Query heads, and the query and value head sizes.
  int64_t heads = 0, dq = 0, dv = 0;
  /// The query and key lengths.
  Size queries, keys;
  /// config's m-tiles a warp, buffers each for keys and values, keys a
  /// tile and warps a block.
  int64_t mTiles = 1, kvStages = 1, tileKeys = 64, warps = 4;
  /// Elements in 16 bytes.
  int64_t perChunk = 8;
  /// C names: the tiles' element type, the conversion to it from float
  /// (empty for TF32), the pair of 16-bit values, the conversion of two
  /// floats to a pair, and the m16n8k16 function.
  std::string storage, to16, pair, toPair, mma;
  /// Padded row pitches of the key and value tiles, in elements.
  int64_t kPitch = 0, vPitch = 0;
  /// The query's A fragments stay in registers (one m-tile a warp).
  bool qInRegisters = true;
  /// The query tile has its own shared memory (two m-tiles, or wgmma).
  bool qTileShared = false;
  /// The inner array length of the key and value tiles: the pitch, or
  /// wgmma's core matrices of 64 elements.
  int64_t kTileInner = 0, vTileInner = 0;
  /// Query rows and threads a block.
  int64_t rows = 0, threads = 0;
  /// Bytes of the query tile (with its own storage) and of one key and one
  /// value buffer.
  int64_t qBytes = 0, kBytes = 0, vBytes = 0;
  /// One buffer each in FlashAttention-2's order (two barriers a tile).
  bool twoBarriers = false;
  /// Two buffers each for keys and values.
  bool twoStages = false;
  /// The launch's dynamic shared memory (0: the tiles are static).
  int64_t dynamicShared = 0;
  /// The running maximum moves lazily (by more than 2^8).
  bool lazyRescale = true;
  /// Score tiles of 8 keys a key tile.
  int64_t nTiles = 0;
  /// Stores a lane's two adjacent output features at once where aligned.
  bool pairedOutput = false;
  /// C names of the output's pair type and of the conversion of two
  /// halves to it.
  std::string outPair, halvesToPair;
  /// Key indices in 32 bits (every one, and a tile past the last, fits).
  bool narrowKeys = false;
  /// C text: the type of a key index, and the end of this block's keys in
  /// it.
  std::string keyIndex, keyStop;
  /// C text: the first key of the next tile.
  std::string nextTile;
  /// C text: the async proxy fence wgmma's readers need after a tile's
  /// writes (empty for mma.sync).
  std::string proxyFence;
  /// The attention's softcap (0 without).
  float softcap = 0.0f;
  /// The scores stand as the raw products (else as the natural logits).
  bool raw = false;
  /// C text: the factor of a score to log2 units, and the scale.
  std::string factor, scaleText;
};

/// The layout of the tensor-core kernel of `parts`, or nothing when the
/// generator does not take it (see emitTensorCoreAttention).
std::optional<TensorCoreLayout>
readTensorCoreLayout(const AttentionParts &parts, const KeySplit *split,
                     const CudaEmitOptions &options);

/// Writes one tensor-core attention kernel to `os`, as its layout says.
class TensorCoreAttentionEmitter : public TensorCoreLayout {
public:
  /// An emitter of the kernel `kernel` of `parts` laid out as `layout`.
  TensorCoreAttentionEmitter(const TensorCoreLayout &layout, KernelOp kernel,
                             const AttentionParts &parts, const KeySplit *split,
                             llvm::raw_ostream &os);

  /// Writes the kernel `name`; returns its launch.
  mlir::FailureOr<LaunchGeometry> emitKernel(llvm::StringRef name);

private:
  // The orchestration (AttentionTensorCoreEmitter.cpp).

  /// The constants and flags of the block: -inf, log2 e, lane indices, the
  /// packing helper, the cp.async and paired-store conditions, the keys.
  void emitConstants();
  /// Opens the loop over the block's query tiles and heads.
  void emitQueryTileLoop();
  /// The query's A fragments before the key loop, where the form keeps
  /// them in registers.
  void emitQueryFragments();
  /// The key loop in the schedule of the layout.
  mlir::LogicalResult emitKeyLoop();
  /// S = Q K^T in the instruction form of the layout.
  void emitScores();
  /// O += P V in the instruction form of the layout.
  void emitValueProduct();
  /// The launch: the grid, the block and the dynamic shared memory.
  LaunchGeometry launchGeometry() const;

  // Row sources (AttentionRowSources.cpp).

  /// C text of `operand` at flat index `index`, computed through its
  /// in-kernel producers at `indent`.
  mlir::FailureOr<std::string> load(mlir::Value operand,
                                    const std::string &index,
                                    const std::string &indent);

  // Tile staging (AttentionTileStaging.cpp).

  /// `for` over e = threadIdx.x, + threads, ... below `count`, with a trip
  /// count the compiler sees (the block size is fixed here).
  std::string threadLoop(int64_t count, const std::string &indent) const;
  /// The shared-memory tiles: static, or carved from dynamic shared memory.
  void emitTileDeclarations();
  /// Stages this block's query rows (q_row) in shared memory.
  mlir::LogicalResult stageQueryTile();
  /// Element (row, column) of a key or value tile `width` features wide:
  /// padded rows, or wgmma's core matrices.
  std::string cell(const char *tileName, const std::string &row,
                   const std::string &column, int64_t width) const;
  /// Stages rows [from, from + tileKeys) of keys or values (`width`
  /// features) in `tileName`, zeros past the last key: cp.async from an
  /// aligned kernel input, else element by element through the producers.
  mlir::LogicalResult stageKeys(mlir::Value operand,
                                const std::optional<RowSource> &source,
                                const char *flag, const char *tileName,
                                int64_t width, const std::string &indent);
  /// One stage, the tile from key `from`: one cp.async group (empty when
  /// staged by plain stores), so "all but the newest group" is always the
  /// tile about to be read.
  mlir::LogicalResult stage(mlir::Value operand,
                            const std::optional<RowSource> &source,
                            const char *flag, const char *tileName,
                            int64_t width, const std::string &from,
                            const std::string &indent);

  // The key loop's pipeline schedules (AttentionPipeline.cpp).

  /// Opens the loop over this block's key tiles.
  void emitKeyLoopBegin();
  /// Waits for this value tile (`pending` newer groups may be in flight).
  void emitValueTileWait(int64_t pending);
  /// Stages the first key tile and its value tile into `keyTile` and
  /// `valueTile`, then declares the accumulators: how the two-stage and
  /// four-barrier schedules begin.
  mlir::LogicalResult stageFirstTiles(const char *keyTile,
                                      const char *valueTile);
  /// Two buffers each: tile j + 1 streams in during all of tile j.
  mlir::LogicalResult emitKeyLoopTwoStages();
  /// One buffer each in FlashAttention-2's order: the value tile streams
  /// in during Q K^T, the next key tile during the softmax and P V.
  mlir::LogicalResult emitKeyLoopTwoBarriers();
  /// One buffer each, four barriers a tile: the next key tile streams in
  /// during the softmax and P V, the next value tile during Q K^T.
  mlir::LogicalResult emitKeyLoopFourBarriers();

  // The instruction forms (AttentionMmaForms.cpp).

  /// This warp's 16 query rows as m16n8k16 A fragments, one ldmatrix a
  /// k-step of 16.
  std::string queryFragments(const std::string &indent) const;
  /// This warp's query rows as m16n8k8 A fragments (TF32).
  void emitQueryFragmentsTf32();
  /// Zeroes the score accumulators.
  void emitZeroScores();
  /// S = Q K^T with wgmma, the query's fragments read at each tile.
  void emitScoresWgmma();
  /// S = Q K^T with mma.sync.m16n8k8 on TF32.
  void emitScoresTf32();
  /// S = Q K^T with mma.sync.m16n8k16, the query's fragments in registers.
  void emitScoresMmaSync();
  /// S = Q K^T with mma.sync.m16n8k16 on two m-tiles, the query's
  /// fragments read at each k-step.
  void emitScoresMmaSyncTwoTiles();
  /// O += P V with wgmma, P's accumulators as A fragments.
  void emitValuesWgmma();
  /// O += P V with mma.sync.m16n8k8, P moved by shuffles.
  void emitValuesTf32();
  /// O += P V with mma.sync.m16n8k16, P's accumulators as A fragments.
  void emitValuesMmaSync();

  // The softmax and the stores (AttentionSoftmaxStore.cpp).

  /// Declares and starts the running maxima, sums and outputs.
  void emitAccumulators();
  /// The tile's scores (scale, mask, softcap, bounds) and their maxima.
  mlir::LogicalResult emitScaledScores();
  /// The online softmax: the running maxima, the rescale, the
  /// probabilities and the sums.
  void emitOnlineSoftmax();
  /// Adds up a row's sum over the four lanes of a group.
  void emitRowSums();
  /// Opens the loop over this warp's output rows.
  void emitOutputRows();
  /// Stores a split's unnormalized output, maximum and sum, and merges the
  /// tile's splits where it is the last to arrive; closes the kernel.
  void emitPartialStore();
  /// Stores the normalized output; closes the kernel.
  void emitOutputStore();

  /// The attention's parts.
  const AttentionParts &parts;
  /// The attention.
  AttentionOp attention;
  /// The split of the keys this kernel takes, or null for the whole kernel.
  const KeySplit *split;
  /// Where the kernel's text goes.
  llvm::raw_ostream &os;
  /// Reads operands through their in-kernel producers.
  BodyEmitter values;
  /// The query, key and value rows a tile copy can read, where they lie so.
  std::optional<RowSource> keyRows, valueRows, queryRows;
  /// The kernel, for its signature.
  KernelOp kernel;
  /// The kernel's name (its split's counters and merge are named after it).
  std::string kernelName;
};

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_ATTENTIONTENSORCOREPARTS_H
