//===- ConvertAttentionOps.cpp - ONNX Attention ---------------------------===//
//
// Attention nodes are written out as the kiln ops of scaled dot-product
// attention (AttentionBuilder.h); kiln-recompose and kiln-fuse turn them back
// into one attention kernel. This file converts ONNX Attention (opsets 23
// and 24); the com.microsoft ops have their own files
// (ConvertMicrosoftAttention.cpp, ConvertGroupQueryAttention.cpp).
//
// ONNX Attention's masks all become one additive bias of 0 and -inf: the
// boolean or float attn_mask (its key axis padded to the total length), the
// causal mask (bottom-right aligned: query i sees key j iff j <= i + offset,
// offset = past length, or nonpad_kv_seqlen - q_len per batch) and the key
// padding of nonpad_kv_seqlen. A query row that attends no key yields zeros,
// not NaN; that row guard is decided on the masks, as the ONNX reference
// does, at compile time when the masks are known then.
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilder.h"
#include "GraphImporter.h"
#include "OpRegistry.h"

#include "kiln/Importer/ONNX/TensorProto.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln {

namespace {

/// The masks of one ONNX Attention node in the form buildSdpa takes.
struct AttentionMasks {
  /// The additive bias, or null when every key is visible.
  Value bias;
  /// Rows that attend no key, or null when there are none.
  Value rowFullyMasked;
};

/// Converts ONNX Attention (opsets 23 and 24).
struct OnnxAttentionConverter : AttentionBuilder {
  using AttentionBuilder::AttentionBuilder;

  /// The input's heads as the op's attributes or its 4-D shape give them.
  FailureOr<Value> headMajor(Value x, StringRef what, StringRef headsAttr) {
    int64_t rank = typeOf(x).getRank();
    if (failed(checkFloatTensor(x, rank == 3 ? 3 : 4, what)))
      return failure();
    const onnx::AttributeProto *heads = findAttribute(node, headsAttr);
    if (rank == 4) {
      if (heads && heads->i() != typeOf(x).getDimSize(1))
        return error() << headsAttr << " = " << heads->i() << " differs from "
                       << what << "'s " << typeOf(x).getDimSize(1) << " heads";
      return x;
    }
    if (!heads)
      return error() << "3-D inputs need the " << headsAttr << " attribute";
    return splitHeads(x, heads->i(), what);
  }

  /// i1, broadcasting to [batch, 1, q_len, total]: the keys that causality
  /// and nonpad_kv_seqlen leave visible; null when they hide none.
  FailureOr<Value> structuralMask(bool causal, int64_t batch, int64_t qLen,
                                  int64_t total, int64_t past, Value nonpad) {
    if (!nonpad) {
      if (!causal)
        return Value();
      return causalMask(qLen, total, past);
    }
    auto seen = keyRangeMask(nonpad, {}, DimExpr::constant(total));
    if (failed(seen))
      return failure();
    Value padding = reshape(*seen, {batch, 1, 1, total});
    if (!causal)
      return padding;
    // The cache holds nonpad_kv_seqlen valid keys, of which the last q_len
    // are this block's queries.
    auto offsets = broadcast<SubOp>(
        reshape(nonpad, {batch, 1, 1, 1}),
        importer.scalar(loc, b.getI64Type(), static_cast<double>(qLen)));
    if (failed(offsets))
      return failure();
    auto causalSeen = causalMask(qLen, total, *offsets);
    if (failed(causalSeen))
      return failure();
    return broadcast<AndOp>(padding, *causalSeen);
  }

  /// The rows of [batch or 1, 1, q_len, 1] the structural mask leaves
  /// without keys, when nonpad_kv_seqlen is absent or constant: a constant,
  /// or null when there are none. Failure when it is known at run time only.
  FailureOr<Value> emptyStructuralRows(bool causal, int64_t batch, int64_t qLen,
                                       int64_t past, Value nonpad) {
    if (!nonpad)
      return Value(); // Key 0 is always visible: j <= i + past holds.
    auto lengths = importer.constantInts(nonpad);
    if (failed(lengths))
      return failure();
    SmallVector<bool> empty;
    for (int64_t length : *lengths)
      for (int64_t i = 0; i < qLen; ++i)
        empty.push_back(length <= 0 || (causal && i + length - qLen < 0));
    if (llvm::none_of(empty, [](bool e) { return e; }))
      return Value();
    auto type = RankedTensorType::get({batch, 1, qLen, 1}, b.getI1Type());
    return ConstantOp::create(
               b, loc, cast<ElementsAttr>(DenseElementsAttr::get(type, empty)))
        .getResult();
  }

  /// attn_mask with its key axis padded to `total` by `padding` (a splat).
  FailureOr<Value> padKeys(Value mask, int64_t total, Attribute padding) {
    RankedTensorType type = typeOf(mask);
    int64_t keys = type.getShape().back();
    if (keys == total)
      return mask;
    if (keys > total)
      return error() << "attn_mask has " << keys
                     << " keys, more than the total sequence length " << total;
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = total - keys;
    auto padType = type.clone(shape);
    Value pad = ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(padType, padding)));
    auto joined = inferConcatType(loc, {type, padType}, type.getRank() - 1);
    if (failed(joined))
      return failure();
    return ConcatOp::create(b, loc, *joined, ValueRange{mask, pad},
                            type.getRank() - 1)
        .getResult();
  }

  /// Combines attn_mask (input 3), causality and nonpad_kv_seqlen for
  /// scores of shape [batch, q_heads, q_len, total].
  FailureOr<AttentionMasks> masks(Type et, ArrayRef<int64_t> scores,
                                  int64_t past, Value nonpad) {
    int64_t batch = scores[0], qLen = scores[2], total = scores[3];
    bool causal = intAttr("is_causal", 0) != 0;
    auto allowed = structuralMask(causal, batch, qLen, total, past, nonpad);
    if (failed(allowed))
      return failure();
    double negInf = -std::numeric_limits<double>::infinity();
    AttentionMasks result;
    Value mask = importer.input(node, 3);
    if (!mask) {
      if (!*allowed)
        return result;
      auto bias = maskBias(*allowed, et, negInf);
      if (failed(bias))
        return failure();
      result.bias = *bias;
      auto rows = emptyStructuralRows(causal, batch, qLen, past, nonpad);
      if (failed(rows))
        rows = rowsWithoutKeys(*allowed);
      if (failed(rows))
        return failure();
      result.rowFullyMasked = *rows;
      return result;
    }

    RankedTensorType maskType = typeOf(mask);
    if (maskType.getRank() < 1 || maskType.getRank() > 4 ||
        !maskType.hasStaticShape())
      return error() << "expected attn_mask of rank 1 to 4 with a static "
                        "shape, got "
                     << maskType;
    // Checked with its key axis as padded (or refused) below.
    SmallVector<int64_t> padded(maskType.getShape());
    padded.back() = total;
    if (failed(checkBroadcastsToScores(padded, scores, "attn_mask", maskType)))
      return failure();
    // attendable: the keys each query may see, for the row guard.
    Value attendable;
    if (maskType.getElementType().isInteger(1)) {
      auto padded = padKeys(mask, total, b.getBoolAttr(false));
      if (failed(padded))
        return failure();
      attendable = *padded;
      if (*allowed) {
        auto both = broadcast<AndOp>(*allowed, attendable);
        if (failed(both))
          return failure();
        attendable = *both;
      }
      auto bias = maskBias(attendable, et, negInf);
      if (failed(bias))
        return failure();
      result.bias = *bias;
    } else {
      // A float mask (integer ones too) is added to the scores.
      auto padded =
          padKeys(castTo(mask, et), total, b.getFloatAttr(et, negInf));
      if (failed(padded))
        return failure();
      result.bias = *padded;
      auto minusInf =
          IsInfOp::create(b, loc, inferPredicateType(typeOf(*padded)), *padded,
                          b.getBoolAttr(false), b.getBoolAttr(true));
      attendable = NotOp::create(b, loc, minusInf);
      if (*allowed) {
        auto structural = maskBias(*allowed, et, negInf);
        if (failed(structural))
          return failure();
        auto sum = broadcast<AddOp>(result.bias, *structural);
        auto both = broadcast<AndOp>(*allowed, attendable);
        if (failed(sum) || failed(both))
          return failure();
        result.bias = *sum;
        attendable = *both;
      }
    }
    auto rows = rowsWithoutKeys(attendable);
    if (failed(rows))
      return failure();
    result.rowFullyMasked = *rows;
    return result;
  }

  /// Q, K and V head-major ([batch, heads, seq, head_size]), checked to
  /// agree, K and V joined with past_key and past_value when given (`past`
  /// receives the past length).
  FailureOr<SdpaOperands> headMajorInputs(int64_t &past) {
    auto q = required(0), k = required(1), v = required(2);
    if (failed(q) || failed(k) || failed(v))
      return failure();
    int64_t rank = typeOf(*q).getRank();
    if ((rank != 3 && rank != 4) || typeOf(*k).getRank() != rank ||
        typeOf(*v).getRank() != rank)
      return error() << "expected Q, K and V all of rank 3 or all of rank 4, "
                     << "got " << typeOf(*q) << ", " << typeOf(*k) << ", "
                     << typeOf(*v);
    auto query = headMajor(*q, "Q", "q_num_heads");
    auto key = headMajor(*k, "K", "kv_num_heads");
    auto value = headMajor(*v, "V", "kv_num_heads");
    if (failed(query) || failed(key) || failed(value))
      return failure();
    Type et = typeOf(*query).getElementType();
    if (typeOf(*key).getElementType() != et ||
        typeOf(*value).getElementType() != et)
      return error() << "Q, K and V of different element types (" << typeOf(*q)
                     << ", " << typeOf(*k) << ", " << typeOf(*v)
                     << ") are not supported";
    DimExpr pastSize = DimExpr::constant(0);
    if (failed(appendPast(4, *key, *value, pastSize)))
      return failure();
    // ONNX Attention takes static shapes only (OpRegistry).
    past = *pastSize.getConstant();
    SdpaOperands operands;
    operands.query = *query;
    operands.key = *key;
    operands.value = *value;
    return operands;
  }

  /// nonpad_kv_seqlen (opset 24), checked; null when absent.
  FailureOr<Value> nonpadKvSeqlen(int64_t batch) {
    Value nonpad = importer.input(node, 6);
    if (!nonpad)
      return Value();
    if (importer.opset() < 24)
      return error() << "nonpad_kv_seqlen needs opset 24";
    if (importer.input(node, 4))
      return error() << "nonpad_kv_seqlen cannot be combined with past_key "
                        "and past_value";
    RankedTensorType type = typeOf(nonpad);
    if (type.getRank() != 1 || type.getDimSize(0) != batch ||
        !type.getElementType().isInteger(64))
      return error() << "expected nonpad_kv_seqlen of type tensor<" << batch
                     << "xi64>, got " << type;
    return nonpad;
  }

  /// scale, softcap and softmax_precision into `operands`.
  LogicalResult readScoreOptions(SdpaOperands &operands) {
    int64_t headSize = typeOf(operands.query).getDimSize(3);
    operands.scale = findAttribute(node, "scale")
                         ? floatAttr("scale", 1.0f)
                         : 1.0 / std::sqrt(static_cast<double>(headSize));
    operands.softcap = floatAttr("softcap", 0.0f);
    const onnx::AttributeProto *precision =
        findAttribute(node, "softmax_precision");
    if (!precision)
      return success();
    Type type = convertONNXElementType(b.getContext(), precision->i());
    if (!type || isStorageOnlyType(type))
      return error() << "unsupported element type "
                     << onnxElementTypeName(precision->i())
                     << " for softmax_precision";
    if (!isa<FloatType>(type))
      return error() << "softmax_precision must be a float type, got " << type;
    operands.softmaxType = type;
    return success();
  }

  LogicalResult convert() {
    if (importer.opset() < 23)
      return error() << "Attention needs opset 23 or later, the model "
                     << "imports opset " << importer.opset();
    // Attention-25's sliding windows.
    for (StringRef name : {"left_window_size", "right_window_size"})
      if (intAttr(name, -1) != -1)
        return error() << name
                       << " (sliding-window attention) is not supported";
    int64_t mode = intAttr("qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3)
      return error() << "qk_matmul_output_mode " << mode
                     << " is not one of 0, 1, 2, 3";
    int64_t past;
    auto operands = headMajorInputs(past);
    if (failed(operands) || failed(readScoreOptions(*operands)))
      return failure();
    ArrayRef<int64_t> qs = typeOf(operands->query).getShape();
    int64_t batch = qs[0];
    int64_t scores[] = {batch, qs[1], qs[2],
                        typeOf(operands->key).getDimSize(2)};
    auto nonpad = nonpadKvSeqlen(batch);
    if (failed(nonpad))
      return failure();
    auto masks = this->masks(typeOf(operands->query).getElementType(), scores,
                             past, *nonpad);
    if (failed(masks))
      return failure();
    operands->bias = masks->bias;
    operands->rowFullyMasked = masks->rowFullyMasked;

    auto sdpa = buildSdpa(*operands);
    if (failed(sdpa))
      return failure();
    bool threeD = typeOf(importer.input(node, 0)).getRank() == 3;
    Value qk[] = {sdpa->scores, sdpa->capped, sdpa->biased, sdpa->probs};
    (void)output(threeD ? mergeHeads(sdpa->output) : sdpa->output, 0);
    (void)output(operands->key, 1);
    (void)output(operands->value, 2);
    return output(qk[mode], 3);
  }
};

} // namespace

ArrayRef<OpConversion> getAttentionConversions() {
  using C = OnnxAttentionConverter;
  static const OpConversion table[] = {
      {"", "Attention", convertWith<C, &C::convert>},
  };
  return table;
}

} // namespace kiln
