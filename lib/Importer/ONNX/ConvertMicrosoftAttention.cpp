//===- ConvertMicrosoftAttention.cpp - com.microsoft Attention, MHA -------===//
//
// ONNX Runtime's contrib attention ops, as its transformer optimizer writes
// them, in the canonical form of AttentionBuilder.h:
//
// - Attention: one packed Q/K/V projection (weights [in, q + k + v], bias),
//   self-attention over it, an optional past [2, batch, heads, past, size].
// - QAttention: Attention whose projection is of 8-bit input and weights
//   (onnxruntime's quantize_dynamic over the fused Attention), computed as
//   onnxruntime's CPU kernel does: the integer product scaled, plus the
//   bias (IntegerProduct.cpp).
// - MultiHeadAttention: separate 3-D Q, K and V (the projections' outputs)
//   with their packed bias, or K and V already head-major (4-D; the bias
//   then applies to Q only), optional past_key and past_value.
//
// Both take a mask_index / key_padding_mask of int32 as ONNX Runtime's CPU
// kernel reads it: key lengths [batch], end and start positions [2 * batch],
// a 0/1 mask [batch, total] or [batch, q_len, total], and for Attention the
// Megatron form [batch, 1, max_len, max_len]. Masked keys get
// mask_filter_value (finite, -10000 by default), as in ONNX Runtime; with
// `unidirectional` the keys after a query get the element type's lowest value
// instead. attention_bias is added to the scores too.
//
// Forms that ONNX Runtime's CPU kernel cannot run, so that no oracle checks
// them (packed QKV and KV for MultiHeadAttention, past_present_share_buffer,
// rotary embedding, the qk output, unidirectional cross attention, where the
// CPU kernel leaves the last query unmasked), are rejected with an error
// that names them.
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilder.h"
#include "GraphImporter.h"
#include "OpRegistry.h"

#include "kiln/Dialect/Kiln/QuantizedActivations.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;

namespace kiln {

namespace {

/// Converts one com.microsoft Attention or MultiHeadAttention node.
struct MicrosoftAttentionConverter : AttentionBuilder {
  using AttentionBuilder::AttentionBuilder;

  /// Fails with an error naming `feature` when input `i` is given.
  LogicalResult rejectInput(int i, StringRef feature) {
    if (importer.input(node, i))
      return error() << feature << " is not supported";
    return success();
  }

  /// Fails with an error naming `feature` when output `i` is asked for.
  LogicalResult rejectOutput(int i, StringRef feature) {
    if (i < node.output_size() && !node.output(i).empty())
      return error() << feature << " is not supported";
    return success();
  }

  /// The keys each query sees by `mask` (i1, broadcasting to [batch, 1,
  /// q_len, total]).
  FailureOr<Value> keyMask(Value mask, const DimExpr &batch,
                           const DimExpr &qLen, const DimExpr &total,
                           const DimExpr &past) {
    RankedTensorType type = typeOf(mask);
    if (!isa<IntegerType>(type.getElementType()) ||
        type.getElementType().isInteger(1))
      return error() << "expected an integer mask, got " << type;
    SymbolicShape s = dimsOf(mask);
    int64_t rank = s.size();
    DimExpr one = DimExpr::constant(1);
    std::optional<DimExpr> twice = DimExpr::mul(DimExpr::constant(2), batch);
    if (rank == 1 && (s[0] == batch || s[0] == twice)) {
      // [2 * batch]: the ends, then the starts (viewed [2, batch], so that
      // the starts need no symbolic offset).
      Value end = mask, start;
      if (s[0] == twice) {
        Value halves = reshape(mask, {DimExpr::constant(2), batch});
        end = reshape(slice(halves, 0, 0, 1), {batch});
        start = reshape(slice(halves, 0, 1, 1), {batch});
      }
      auto seen = keyRangeMask(end, start, total);
      if (failed(seen))
        return failure();
      return reshape(*seen, {batch, one, one, total});
    }
    bool megatron = node.op_type() == "Attention";
    DimRangeFn ranges = importer.dimRanges();
    Value rows;
    if (rank == 2 && s[0] == batch && s[1] == total)
      rows = reshape(mask, {batch, one, one, total});
    else if (rank == 3 && s[0] == batch && s[1] == qLen && s[2] == total)
      rows = reshape(mask, {batch, one, qLen, total});
    else if (megatron && rank == 4 && s[0] == batch && s[1] == one &&
             s[2] == s[3] && s[2].isConstant() && past.isConstant() &&
             alwaysAtMost(total, s[2], ranges) == true)
      // Megatron's causal mask for the longest sequence: this block's
      // queries and the keys seen so far.
      rows = slice(slice(mask, 2, *past.getConstant(), qLen), 3, 0, total);
    if (!rows)
      return error() << "mask of type " << type << " is none of "
                     << "the supported forms [" << batch.str() << "], ["
                     << (twice ? twice->str() : "2*batch") << "], ["
                     << batch.str() << ", " << total.str() << "], ["
                     << batch.str() << ", " << qLen.str() << ", " << total.str()
                     << "]"
                     << (megatron ? ", [batch, 1, max_len, max_len] (with a "
                                    "static max_len and past)"
                                  : "");
    return compare<GreaterOp>(rows,
                              importer.scalar(loc, type.getElementType(), 0.0));
  }

  /// The additive bias of the mask, causality and attention_bias, or null;
  /// `newKeys` is the key length without the past.
  FailureOr<Value> bias(Value mask, Value attentionBias, Type et,
                        const DimExpr &batch, int64_t heads,
                        const DimExpr &qLen, const DimExpr &newKeys,
                        const DimExpr &past) {
    std::optional<DimExpr> total = DimExpr::add(past, newKeys);
    if (!total)
      return error() << "the key length overflows";
    Value bias;
    if (mask) {
      auto seen = keyMask(mask, batch, qLen, *total, past);
      if (failed(seen))
        return failure();
      auto masked =
          maskBias(*seen, et, floatAttr("mask_filter_value", -10000.0f));
      if (failed(masked))
        return failure();
      bias = *masked;
    }
    // ONNX Runtime masks nothing for a single query: it sees every key,
    // which the causal mask of one query after `past` keys also does.
    if (intAttr("unidirectional", 0) != 0 && qLen.getConstant() != 1) {
      if (!(qLen == newKeys))
        return error() << "unidirectional attention of " << qLen.str()
                       << " queries over " << newKeys.str()
                       << " new keys (cross attention) is not supported";
      auto causal = causalMask(qLen, *total, past);
      if (failed(causal))
        return failure();
      double lowest = llvm::APFloat::getLargest(
                          llvm::cast<FloatType>(et).getFloatSemantics(),
                          /*Negative=*/true)
                          .convertToDouble();
      auto masked = maskBias(*causal, et, lowest, bias);
      if (failed(masked))
        return failure();
      bias = *masked;
    }
    if (!attentionBias)
      return bias;
    DimExpr scores[] = {batch, DimExpr::constant(heads), qLen, *total};
    if (failed(checkFloatTensor(attentionBias, 4, "attention_bias", true)) ||
        failed(checkBroadcastsToScores(dimsOf(attentionBias), scores,
                                       "attention_bias",
                                       attentionBias.getType())))
      return failure();
    if (!bias)
      return attentionBias;
    return broadcast<AddOp>(castTo(attentionBias, et), bias);
  }

  /// The scale of the scores: the attribute, or 1/sqrt(head_size).
  double scale(int64_t headSize) {
    float given = floatAttr("scale", 0.0f);
    if (given != 0.0f)
      return given;
    return 1.0 / std::sqrt(static_cast<double>(headSize));
  }

  /// `x` plus `count` elements of the packed `bias` from `start`.
  FailureOr<Value> addBias(Value x, Value bias, int64_t start, int64_t count) {
    if (!bias)
      return x;
    return broadcast<AddOp>(x, slice(bias, 0, start, count));
  }

  /// num_heads, which must be positive.
  FailureOr<int64_t> heads() {
    int64_t heads = intAttr("num_heads", 0);
    if (heads <= 0)
      return error() << "num_heads must be positive, got " << heads;
    return heads;
  }

  /// Runs the attention and binds output 0 ([batch, q_len, v_hidden]).
  LogicalResult attend(const SdpaOperands &operands) {
    auto sdpa = buildSdpa(operands);
    if (failed(sdpa))
      return failure();
    return output(mergeHeads(sdpa->output), 0);
  }

  /// Attention's checks shared by QAttention: the attributes Kiln does not
  /// run, and `packed` columns of the projection split into Q, K and V
  /// (qkv_hidden_sizes, else thirds) into `sizes`.
  LogicalResult checkPackedAttention(int64_t packed,
                                     SmallVectorImpl<int64_t> &sizes) {
    if (intAttr("do_rotary", 0) != 0)
      return error() << "do_rotary (rotary embedding inside Attention) is "
                        "not supported";
    if (intAttr("past_present_share_buffer", 0) != 0)
      return error() << "past_present_share_buffer is not supported";
    sizes.assign(3, packed / 3);
    if (auto given = intsAttr("qkv_hidden_sizes"))
      sizes.assign(given->begin(), given->end());
    // Each size is checked against the total before the sum, which then
    // cannot overflow.
    auto fits = [&](int64_t size) { return size > 0 && size <= packed; };
    if (sizes.size() != 3 || sizes[0] != sizes[1] ||
        !llvm::all_of(sizes, fits) || sizes[0] + sizes[1] + sizes[2] != packed)
      return error() << "weights of " << packed
                     << " columns do not split into Q, K and V of "
                        "qkv_hidden_sizes (Q and K equal)";
    return success();
  }

  LogicalResult convertAttention() {
    if (failed(rejectInput(6, "past_sequence_length")))
      return failure();
    auto x = required(0), weights = required(1);
    auto heads = this->heads();
    if (failed(x) || failed(weights) || failed(heads) ||
        failed(checkFloatTensor(*x, 3, "input", true)) ||
        failed(checkFloatTensor(*weights, 2, "weights")))
      return failure();
    if (typeOf(*weights).getDimSize(0) != typeOf(*x).getDimSize(2))
      return error() << "weights of type " << weights->getType()
                     << " do not fit the input " << x->getType();
    SmallVector<int64_t> sizes;
    if (failed(checkPackedAttention(typeOf(*weights).getDimSize(1), sizes)))
      return failure();
    auto qkv = matmul(*x, *weights, /*transposeRhs=*/false);
    if (failed(qkv))
      return failure();
    if (Value bias = importer.input(node, 2)) {
      if (failed(checkFloatTensor(bias, 1, "bias")))
        return failure();
      qkv = broadcast<AddOp>(*qkv, bias);
      if (failed(qkv))
        return failure();
    }
    return attendPacked(*qkv, sizes, *heads, /*maskInput=*/3, /*pastInput=*/4,
                        /*attentionBiasInput=*/5);
  }

  /// QAttention (onnxruntime's quantize_dynamic over its fused Attention):
  /// the projection is MatMulInteger's product of the 8-bit input and
  /// weights less their zero points, times input_scale * weight_scale
  /// (computed in fp32 in that order; weight_scale one value or one a
  /// column), plus the bias, as onnxruntime's CPU kernel computes it; then
  /// Attention over it.
  LogicalResult convertQAttention() {
    auto x = required(0), weights = required(1), bias = required(2),
         xScale = required(3), wScale = required(4);
    auto heads = this->heads();
    if (failed(x) || failed(weights) || failed(bias) || failed(xScale) ||
        failed(wScale) || failed(heads))
      return failure();
    if (typeOf(*x).getRank() != 3 || typeOf(*weights).getRank() != 2 ||
        typeOf(*weights).getDimSize(0) != typeOf(*x).getDimSize(2))
      return error() << "expected a 3-D input and 2-D weights of its "
                        "columns, got "
                     << x->getType() << " and " << weights->getType();
    int64_t packed = typeOf(*weights).getDimSize(1);
    SmallVector<int64_t> sizes;
    if (failed(checkPackedAttention(packed, sizes)))
      return failure();
    Type f32 = b.getF32Type();
    auto isFloats = [&](Value v, ArrayRef<int64_t> counts) {
      RankedTensorType t = typeOf(v);
      return t.getElementType() == f32 && t.hasStaticShape() &&
             llvm::is_contained(counts, t.getNumElements());
    };
    if (!isFloats(*bias, {packed}) || typeOf(*bias).getRank() != 1)
      return error() << "bias must be " << packed << " float32 values, got "
                     << bias->getType();
    if (!isFloats(*xScale, {1}))
      return error() << "input_scale must be one float32 value, got "
                     << xScale->getType();
    if (!isFloats(*wScale, {1, packed}))
      return error() << "weight_scale must be one float32 value or one a "
                        "column ("
                     << packed << "), got " << wScale->getType();
    Value xZero = importer.input(node, 6), wZero = importer.input(node, 7);
    if (xZero && !holdsOneValue(xZero))
      return error() << "input_zero_point must be one value, got "
                     << xZero.getType();
    auto product = integerProduct(*x, xZero, *weights, wZero,
                                  "input_zero_point", "weight_zero_point");
    auto columnScale = perColumn(*wScale, typeOf(*weights), "weight_scale");
    if (failed(product) || failed(columnScale))
      return failure();
    // Spelled as MatMulInteger's product cast to int32 and back, times the
    // scales, as quantize_dynamic writes a MatMul: the form kiln-recompose
    // gives to the integer GEMM (a float product of whole numbers, so the
    // casts change no value).
    auto scales =
        broadcast<MulOp>(reshape(*xScale, ArrayRef<int64_t>{}), *columnScale);
    if (failed(scales))
      return failure();
    Value whole = castTo(castTo(*product, b.getI32Type()), f32);
    auto qkv = broadcast<MulOp>(whole, importer.foldConstant(*scales));
    if (failed(qkv))
      return failure();
    qkv = broadcast<AddOp>(*qkv, *bias);
    if (failed(qkv))
      return failure();
    return attendPacked(*qkv, sizes, *heads, /*maskInput=*/5, /*pastInput=*/8,
                        /*attentionBiasInput=*/-1);
  }

  /// Attention over the packed projection `qkv` [batch, sequence, q + k +
  /// v] of `sizes` columns each: the past and mask_index (int32), the
  /// additive attention_bias (-1: none) at those node inputs, and the
  /// present output.
  LogicalResult attendPacked(Value qkv, ArrayRef<int64_t> sizes, int64_t heads,
                             int maskInput, int pastInput,
                             int attentionBiasInput) {
    auto query = splitHeads(slice(qkv, 2, 0, sizes[0]), heads, "Q");
    auto key = splitHeads(slice(qkv, 2, sizes[0], sizes[1]), heads, "K");
    auto value =
        splitHeads(slice(qkv, 2, sizes[0] + sizes[1], sizes[2]), heads, "V");
    if (failed(query) || failed(key) || failed(value))
      return failure();
    SymbolicShape xDims = dimsOf(qkv);
    DimExpr batch = xDims[0], qLen = xDims[1], past = DimExpr::constant(0);
    if (Value state = importer.input(node, pastInput)) {
      // past: [2, batch, heads, past_len, head_size], keys then values.
      if (failed(checkFloatTensor(state, 5, "past", true)))
        return failure();
      SymbolicShape s = dimsOf(state);
      if (s[0].getConstant() != 2)
        return error() << "expected past of shape [2, ...], got "
                       << typeOf(state);
      past = s[3];
      SymbolicShape half(s.begin() + 1, s.end());
      Value pastKey = reshape(slice(state, 0, 0, 1), half);
      Value pastValue = reshape(slice(state, 0, 1, 1), half);
      key = concatSequence(pastKey, *key, "past");
      value = concatSequence(pastValue, *value, "past");
      if (failed(key) || failed(value))
        return failure();
    }
    if (node.output_size() > 1 && !node.output(1).empty()) {
      SymbolicShape shape = dimsOf(*key);
      shape.insert(shape.begin(), DimExpr::constant(1));
      Value present[] = {reshape(*key, shape), reshape(*value, shape)};
      auto type =
          inferConcatType(loc, {typeOf(present[0]), typeOf(present[1])}, 0);
      if (failed(type))
        return failure();
      (void)output(ConcatOp::create(b, loc, *type, present, 0), 1);
    }
    Value attentionBias = attentionBiasInput >= 0
                              ? importer.input(node, attentionBiasInput)
                              : Value();
    auto bias = this->bias(importer.input(node, maskInput), attentionBias,
                           typeOf(qkv).getElementType(), batch, heads, qLen,
                           qLen, past);
    if (failed(bias))
      return failure();
    SdpaOperands operands;
    operands.query = *query;
    operands.key = *key;
    operands.value = *value;
    operands.bias = *bias;
    operands.scale = scale(sizes[0] / heads);
    return attend(operands);
  }

  LogicalResult convertMultiHeadAttention() {
    if (failed(rejectInput(8, "past_sequence_length")) ||
        failed(rejectInput(9, "cache_indirection")) ||
        failed(rejectOutput(3, "the qk output")))
      return failure();
    auto q = required(0);
    auto heads = this->heads();
    if (failed(q) || failed(heads))
      return failure();
    Value k = importer.input(node, 1), v = importer.input(node, 2);
    if (typeOf(*q).getRank() == 5)
      return error() << "packed QKV (query of rank 5) is not supported";
    if (!k || !v)
      return error() << (k ? "packed KV (key without value)"
                           : "a query without key and value")
                     << " is not supported";
    bool headMajorKV = typeOf(k).getRank() == 4;
    if (failed(checkFloatTensor(*q, 3, "query", true)) ||
        failed(checkFloatTensor(k, headMajorKV ? 4 : 3, "key", true)) ||
        failed(checkFloatTensor(v, headMajorKV ? 4 : 3, "value", true)))
      return failure();
    if (headMajorKV && (typeOf(k).getDimSize(1) != *heads ||
                        typeOf(v).getDimSize(1) != *heads))
      return error() << "head-major key and value need num_heads (" << *heads
                     << ") heads, got " << k.getType() << ", " << v.getType();
    int64_t hidden = typeOf(*q).getDimSize(2);
    int64_t kHidden = headMajorKV ? hidden : typeOf(k).getDimSize(2);
    int64_t vHidden = headMajorKV ? hidden : typeOf(v).getDimSize(2);
    Value bias = importer.input(node, 3);
    if (bias && (failed(checkFloatTensor(bias, 1, "bias")) ||
                 typeOf(bias).getDimSize(0) != hidden + kHidden + vHidden))
      return error() << "expected a bias of " << hidden + kHidden + vHidden
                     << " elements (the Q, K and V biases), got "
                     << bias.getType();
    auto query = addBias(*q, bias, 0, hidden);
    if (failed(query) || failed(query = splitHeads(*query, *heads, "query")))
      return failure();
    // Head-major K and V (a cross-attention cache) are used as they are:
    // ONNX Runtime adds the bias to the query only.
    FailureOr<Value> key = k, value = v;
    if (!headMajorKV) {
      key = addBias(k, bias, hidden, kHidden);
      value = addBias(v, bias, hidden + kHidden, vHidden);
      if (failed(key) || failed(value) ||
          failed(key = splitHeads(*key, *heads, "key")) ||
          failed(value = splitHeads(*value, *heads, "value")))
        return failure();
    }
    DimExpr newKeys = dimsOf(*key)[2], past = DimExpr::constant(0);
    if (failed(appendPast(6, *key, *value, past)))
      return failure();
    (void)output(*key, 1);
    (void)output(*value, 2);
    DimExpr batch = dimsOf(*q)[0], qLen = dimsOf(*q)[1];
    auto allBias = this->bias(importer.input(node, 4), importer.input(node, 5),
                              typeOf(*q).getElementType(), batch, *heads, qLen,
                              newKeys, past);
    if (failed(allBias))
      return failure();
    SdpaOperands operands;
    operands.query = *query;
    operands.key = *key;
    operands.value = *value;
    operands.bias = *allBias;
    operands.scale = scale(hidden / *heads);
    return attend(operands);
  }
};

} // namespace

ArrayRef<OpConversion> getMicrosoftAttentionConversions() {
  using C = MicrosoftAttentionConverter;
  static const OpConversion table[] = {
      {kMicrosoftDomain, "Attention", convertWith<C, &C::convertAttention>},
      {kMicrosoftDomain, "QAttention", convertWith<C, &C::convertQAttention>},
      {kMicrosoftDomain, "MultiHeadAttention",
       convertWith<C, &C::convertMultiHeadAttention>},
  };
  return table;
}

} // namespace kiln
