//===- AttentionParts.h - what both attention generators read ---*- C++ -*-===//
//
// Internal to the CUDA target: an attention kernel's kiln.attention, its
// sizes, and the C text both generators (AttentionEmitter.cpp, scalar fp32;
// AttentionTensorCoreEmitter.cpp, mma.sync for 16-bit operands) put in
// their code: the mask's index under broadcasting, the output's index (a
// transpose of the result merging heads back), the sink logits.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_ATTENTIONPARTS_H
#define KILN_LIB_TARGET_CUDA_ATTENTIONPARTS_H

#include "EmitterSupport.h"

namespace kiln {

struct AttentionParts {
  AttentionOp attention;
  /// Heads and head sizes (static), and the possibly symbolic batch,
  /// query and key lengths.
  int64_t heads = 0, kvHeads = 0, size = 0, valueSize = 0;
  Size batch, queries, keys;
  /// The mask element of (b, h, i, j) as a flat index of the mask (empty
  /// without a mask).
  std::string maskIndex;
  /// Where output feature d of query row (b, h, i) is stored; reads `row`
  /// ((b * heads + h) * queries + i), `b`, `h`, `i` and `d`.
  std::string outIndex;
  /// Features d and d + 1 of a row are adjacent in the output, and every
  /// row starts at a multiple of the head size (the features are the
  /// innermost dim): an even d's pair can be stored at once.
  bool outFeaturesInnermost = true;
  /// A declaration of the per-head sink logits (may be empty), and the
  /// logit of head `h` ("neg_inf" without a sink).
  std::string sinkTable, sinkValue;
  bool hasSink = false;
};

/// Keys split across blocks (flash-decoding, for a few query rows): the
/// block at split s (grid axis y of the scalar kernel, z of the tensor-core
/// one) takes keys [s * chunk, min(keys, (s + 1) * chunk)) of its query
/// rows and, instead of storing their outputs, stores for each row its
/// unnormalized output, running maximum and running sum (a sink left out)
/// to `partials`, (valueSize + 2) floats at (row * splits + s); the last
/// split of a tile of rows to arrive merges the splits of its rows
/// (splitFinishText, AttentionSplitEmitter.cpp).
struct KeySplit {
  /// Keys one block takes: a multiple of the tensor-core kernel's tile.
  int64_t chunk = 0;
  /// The most splits, at the top of the key length's range.
  int64_t maxSplits = 1;
  /// The dim parameters the merge of a tile's splits reads (and takes).
  std::vector<std::string> mergeDims;
};

/// C text of the splits for the run's keys: ceil(keys / chunk) clamped to
/// [1, maxSplits] (the split kernel's grid binding computes the same).
std::string splitCountText(const KeySplit &split, const Size &keys);

/// The split kernel's parameters after the inputs: the partial results
/// (scratch), then the result the merge writes (`out0`).
std::string splitOutputParameters(KernelOp kernel);

/// The end of a split kernel's work on a tile of query rows, whose partial
/// rows are [rowBegin, rowEnd) (C expressions), each line after `indent`:
/// the block arrives at the tile's counter (`name`_arrived[`tile`]), and
/// the last of the tile's splits to arrive merges their partials into the
/// result (`name`_combine_rows). Every thread of the block runs it.
std::string splitFinishText(const KeySplit &split, llvm::StringRef name,
                            llvm::StringRef tile, llvm::StringRef rowBegin,
                            llvm::StringRef rowEnd, llvm::StringRef indent);

/// The declarations of a block's keys [key_begin, key_end): all of them, or
/// with `split` those of the split at blockIdx.`axis` (and `splits`).
std::string keyRangeText(const KeySplit *split, const Size &keys,
                         llvm::StringRef axis);

/// The stored output `acc / sum` of `attention` in its element type, 0 for a
/// row with no weight under zero_nan_probs; `acc * inverse` where the caller
/// has a row's `inverse` = 1 / sum (one division a row, not one an output).
std::string normalizedOutput(AttentionOp attention, llvm::StringRef acc,
                             llvm::StringRef sum, llvm::StringRef inverse = "");

/// The least value of `size` (a size of `parts`) over the dims' ranges of
/// the function the attention is in; 0 where unbounded.
int64_t leastOf(const AttentionParts &parts, const Size &size);

/// Reads the attention kernel `kernel`; fails with an error at it when it is
/// not one attention (and maybe a transpose of its result) or its heads or
/// head sizes are symbolic.
mlir::FailureOr<AttentionParts> readAttention(KernelOp kernel);

/// The tensor-core generator (mma.sync or wgmma on 16-bit operands, or
/// mma.sync on fp32 ones as TF32 with `options.allowTf32`), whole or as the
/// split kernel of `split`, laid out as chooseAttentionConfig says under
/// `options.attention` (the launch carries the choice); nothing when the
/// attention is not one it takes (fp32 without allowTf32, head sizes not
/// multiples of 16 or above 128): then the scalar generator runs.
std::optional<mlir::FailureOr<LaunchGeometry>>
emitTensorCoreAttention(KernelOp kernel, const AttentionParts &parts,
                        const KeySplit *split, llvm::StringRef name,
                        llvm::raw_ostream &os, const CudaEmitOptions &options);

/// The scalar generator (fp32 arithmetic, one block per query row), whole
/// or as the split kernel of `split`.
mlir::FailureOr<LaunchGeometry> emitScalarAttention(KernelOp kernel,
                                                    const AttentionParts &parts,
                                                    const KeySplit *split,
                                                    llvm::StringRef name,
                                                    llvm::raw_ostream &os);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_ATTENTIONPARTS_H
