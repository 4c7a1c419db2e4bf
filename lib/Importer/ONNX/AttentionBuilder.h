//===- AttentionBuilder.h - attention written out in kiln ops ---*- C++ -*-===//
//
// Every attention node (ONNX Attention, com.microsoft Attention and
// MultiHeadAttention) is written out by one builder, so that kiln-recompose
// has one canonical form to find:
//
//   scores = matmul(Q, K, transpose_rhs) * scale
//   scores = softcap * tanh(scores / softcap)        (when capped)
//   scores = scores + bias                           (masks as additive bias)
//   probs  = softmax(scores, last axis)
//            (with a sink: softmax(concat(scores, sink))[..., :keys])
//   probs  = where(row_fully_masked, 0, probs)       (ONNX Attention only)
//   Y      = matmul(probs, V)
//
// Q, K and V are head-major ([batch, heads, seq, head_size]). For grouped-
// query attention K and V are repeated to the query's heads first (reshape,
// expand, reshape: the form exporters write for `repeat_kv`).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_ATTENTIONBUILDER_H
#define KILN_LIB_IMPORTER_ONNX_ATTENTIONBUILDER_H

#include "NodeConverter.h"

namespace kiln {

/// The inputs of one scaled dot-product attention.
struct SdpaOperands {
  /// [batch, q_heads, q_seq, head_size].
  mlir::Value query;
  /// [batch, kv_heads, total_seq, head_size]; kv_heads divides q_heads.
  mlir::Value key;
  /// [batch, kv_heads, total_seq, v_head_size].
  mlir::Value value;
  /// Added to the (capped) scores, broadcasting to them; null for none.
  mlir::Value bias;
  /// i1, broadcasting to [batch, q_heads, q_seq, 1]: rows that attend no key
  /// and whose probabilities are therefore 0 (not softmax's NaN); null when
  /// no row can be fully masked.
  mlir::Value rowFullyMasked;
  /// Multiplies Q.K^T.
  double scale = 1.0;
  /// Caps the scores at +-softcap with tanh before the bias; 0 for none.
  double softcap = 0.0;
  /// One extra logit per row that takes part in the softmax's normalization
  /// but attends no value (an attention sink), broadcasting to [batch,
  /// q_heads, q_len, 1]; null for none.
  mlir::Value sink;
  /// The element type the softmax runs in; null for the query's.
  mlir::Type softmaxType;
};

/// The values of the decomposition that optional outputs expose.
struct SdpaValues {
  /// scale * Q.K^T, [batch, q_heads, q_seq, total_seq].
  mlir::Value scores;
  /// The scores after softcap (the scores themselves without it).
  mlir::Value capped;
  /// The capped scores plus the bias (the capped scores without one).
  mlir::Value biased;
  /// Softmax probabilities, fully masked rows zeroed, in the query's type.
  mlir::Value probs;
  /// probs.V, [batch, q_heads, q_seq, v_head_size].
  mlir::Value output;
};

/// A node converter with the pieces all attention converters share.
struct AttentionBuilder : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// Writes out the attention of `operands` (see the file comment).
  mlir::FailureOr<SdpaValues> buildSdpa(const SdpaOperands &operands);

  /// Fails with an error naming `what` unless `x` has rank `rank`, float
  /// elements and a static shape (with `symbolicDims`, a static last dim:
  /// the others may be named sizes).
  mlir::LogicalResult checkFloatTensor(mlir::Value x, int64_t rank,
                                       llvm::StringRef what,
                                       bool symbolicDims = false);

  /// Fails with an error naming `what` (of `type`) unless `shape`
  /// broadcasts to the scores' `scores` shape without growing it.
  mlir::LogicalResult checkBroadcastsToScores(llvm::ArrayRef<int64_t> shape,
                                              llvm::ArrayRef<int64_t> scores,
                                              llvm::StringRef what,
                                              mlir::Type type);
  mlir::LogicalResult checkBroadcastsToScores(llvm::ArrayRef<DimExpr> shape,
                                              llvm::ArrayRef<DimExpr> scores,
                                              llvm::StringRef what,
                                              mlir::Type type);


  /// [batch, seq, heads * size] viewed as [batch, seq, heads, size] and
  /// transposed to [batch, heads, seq, size].
  mlir::FailureOr<mlir::Value> splitHeads(mlir::Value x, int64_t heads,
                                          llvm::StringRef what);

  /// [batch, heads, seq, size] transposed to [batch, seq, heads, size] and
  /// viewed as [batch, seq, heads * size].
  mlir::Value mergeHeads(mlir::Value x);

  /// [batch, heads, seq, size] with each head repeated `groups` times in a
  /// row (h0, h0, h1, h1, ...), as grouped-query attention pairs them.
  mlir::Value repeatHeads(mlir::Value x, int64_t groups);

  /// `past` (named `what` in errors) and `x` joined along the sequence axis
  /// (2) of head-major tensors; batch, heads and head size must agree.
  mlir::FailureOr<mlir::Value> concatSequence(mlir::Value past, mlir::Value x,
                                              llvm::StringRef what);

  /// Prepends the past keys and values of inputs `pastKeyInput` and
  /// `pastKeyInput + 1` (absent together, or both [batch, heads, past,
  /// size]) to `key` and `value`; `past` gets their length (0 without).
  mlir::LogicalResult appendPast(int pastKeyInput, mlir::Value &key,
                                 mlir::Value &value, DimExpr &past);

  /// A tensor of `shape` ones (`rank` 1s) holding the size `size`, of
  /// `elementType`: a constant, or a `kiln.sizes` computed at run time.
  mlir::Value sizeValue(const DimExpr &size, mlir::Type elementType,
                        int64_t rank);

  /// i1 [q_len, kv_len]: query i sees key j iff j <= i + offset.
  mlir::FailureOr<mlir::Value> causalMask(int64_t qLen, int64_t kvLen,
                                          int64_t offset);
  mlir::FailureOr<mlir::Value>
  causalMask(const DimExpr &qLen, const DimExpr &kvLen, const DimExpr &offset);

  /// i1 [batch, 1, q_len, kv_len]: as above with one i64 offset per batch
  /// (`offsets` of shape [batch, 1, 1, 1], computed at run time).
  mlir::FailureOr<mlir::Value> causalMask(int64_t qLen, int64_t kvLen,
                                          mlir::Value offsets);

  /// i1 [batch, kv_len]: key j is seen iff start[b] <= j < end[b]; `end`
  /// and the optional `start` are integer vectors [batch].
  mlir::FailureOr<mlir::Value> keyRangeMask(mlir::Value end, mlir::Value start,
                                            const DimExpr &kvLen);

  /// `unmasked` (a scalar 0 when null) where `allowed`, `masked` elsewhere,
  /// of `elementType`.
  mlir::FailureOr<mlir::Value> maskBias(mlir::Value allowed,
                                        mlir::Type elementType, double masked,
                                        mlir::Value unmasked = {});

  /// i1 [..., 1]: rows of `attendable` (i1, last axis the keys) with no
  /// true element, computed at run time.
  mlir::FailureOr<mlir::Value> rowsWithoutKeys(mlir::Value attendable);

  /// The comparison `OpTy(lhs, rhs)`, an i1 tensor of the broadcast shape.
  template <typename OpTy>
  mlir::FailureOr<mlir::Value> compare(mlir::Value lhs, mlir::Value rhs) {
    auto type = inferCompareType(loc, typeOf(lhs), typeOf(rhs));
    if (mlir::failed(type))
      return mlir::failure();
    return OpTy::create(b, loc, *type, lhs, rhs).getResult();
  }

  /// `condition ? lhs : rhs` with broadcasting.
  mlir::FailureOr<mlir::Value> where(mlir::Value condition, mlir::Value lhs,
                                     mlir::Value rhs);

  /// The matrix product, `rhs` transposed when asked.
  mlir::FailureOr<mlir::Value> matmul(mlir::Value lhs, mlir::Value rhs,
                                      bool transposeRhs);
};

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_ATTENTIONBUILDER_H
