//===- ConvertGroupQueryAttention.cpp - com.microsoft GroupQueryAttention -===//
//
// Why one file of this length: one ONNX Runtime op whose contract (below)
// takes most of it; the converter's steps follow the contract's clauses in
// order, and reading them apart would hide which clause each step keeps.
//
// ONNX Runtime's GroupQueryAttention, as its model builder and transformer
// optimizer write it for decoder LLMs, in the canonical form of
// AttentionBuilder.h. The semantics are those of ONNX Runtime's CPU kernel:
//
// - Q, K and V come separately ([batch, seq, heads * head_size]) or packed
//   in the query ([batch, seq, (num_heads + 2 * kv_num_heads) * head_size]);
//   query head h reads key and value head h / (num_heads / kv_num_heads).
// - seqlens_k[b] + 1 is batch b's valid length, a run-time value, so every
//   mask and position below that depends on it is computed in the graph.
//   total_sequence_length must be a size: a constant, or computed from
//   the shapes of symbolic dims (an attention mask's length). With S new
//   tokens and a past of P it decides the form: S == total is the first
//   prompt (nothing valid in the past: batch b holds its tokens at 0 ..
//   S - 1, the keys from seqlens_k[b] + 1 on are padding); otherwise batch
//   b's past holds past_b = seqlens_k[b] + 1 - S valid keys and the new
//   ones follow them. Where symbolic dims leave the form to the run (one
//   artifact for the prompt and the decoding steps), past_b is
//   max(seqlens_k[b] + 1 - S, 0), which is each form's value for every
//   length onnxruntime accepts, and the newest key a query sees is
//   min(p, seqlens_k[b]) (below).
// - present_key/present_value have P + S rows when total == P + S, or P
//   when total <= P (past and present are one buffer of the maximum length).
//   Row t of batch b is past[t] below past_b, new[t - past_b] for the next
//   S rows, and 0 after them, as ONNX Runtime writes a present that is not
//   the past's buffer (in the first prompt past_b is 0). The rows come from
//   one gather over concat(past, new) with indices computed from
//   seqlens_k. Attention reads the first `total` rows: seqlens_k[b] is
//   below total, as ONNX Runtime requires, so the others are never seen.
// - When past and present can be one buffer (present has the past's rows,
//   the past is a graph input only this node reads, the present a graph
//   output), they are, as ONNX Runtime shares them when given one: present
//   is a kiln.update_slice of the past that writes the S new rows at
//   past_b (at 0 in a first prompt) and keeps every other row, the rows
//   after the valid ones included. The CUDA target writes only those rows
//   into the output's storage, which the C ABI says is the input's, so a
//   decoding step costs O(new tokens), not a copy of the cache.
// - Query i of batch b sits at position p = past_b + i and sees the keys
//   j <= min(p, seqlens_k[b]) (the minimum only bites in a padded first
//   prompt), with local_window_size w also j > p - w; with causal = 0 it
//   sees every valid key j <= seqlens_k[b]. A padded first-prompt query
//   whose window holds no valid key yields zeros, as in ONNX Runtime.
// - do_rotary rotates Q and the new K (interleaved or halves; the rotary
//   dim is twice the caches' width) at positions p, or at position_ids:
//   per token, or in the first prompt position_ids[0][0] + i for every
//   batch, as ONNX Runtime reads them.
// - scores = scale * Q.K^T, capped by softcap, plus attention_bias
//   ([batch or 1, heads or 1, S, total]), masked with -inf; the softmax
//   takes one more logit per head when head_sink (or, with zeros,
//   smooth_softmax) is given. qk_output 1 is the biased scores with masked
//   keys 0, 2 the probabilities, both [batch, heads, S, total]; the columns
//   after a batch's valid length, which ONNX Runtime leaves unwritten, are 0.
//
// Forms ONNX Runtime's CPU kernel does not run, or that need state Kiln does
// not keep, are rejected with an error naming them: a window-sized cache
// (sliding_window_cache), a quantized cache (k_scale, v_scale, the quant
// type attributes), and a total_sequence_length that is data rather than a
// size (an input's values). The per-head Q/K RMS norm (q_norm_weight,
// k_norm_weight), which the CPU kernel refuses, is the builder's unfused
// form's arithmetic, before the rotation (normalizeHeads).
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilder.h"
#include "FusedOpConverter.h"
#include "GraphImporter.h"
#include "OpRegistry.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln {

namespace {

/// The most key positions (rows of the present) Kiln writes as constants.
constexpr int64_t kMaxPositions = int64_t(1) << 20;

/// The inputs of GroupQueryAttention, by position.
enum GqaInput {
  kQuery = 0,
  kKey,
  kValue,
  kPastKey,
  kPastValue,
  kSeqlensK,
  kTotalSequenceLength,
  kCosCache,
  kSinCache,
  kPositionIds,
  kAttentionBias,
  kHeadSink,
  kKScale,
  kVScale,
  kQNormWeight,
  kKNormWeight,
};

/// What the shapes and total_sequence_length fix at compile time: the
/// lengths as sizes (constants, or expressions over named dims), the head
/// counts and size as integers.
struct GqaShape {
  DimExpr batch;
  /// New tokens (S).
  DimExpr sequence;
  int64_t heads = 0;
  int64_t kvHeads = 0;
  int64_t headSize = 0;
  /// Rows of past_key (0 without one).
  DimExpr past;
  /// total_sequence_length.
  DimExpr total;
  /// Rows of present_key.
  DimExpr present;
  /// S == total (no valid past key in any batch) for every value of the
  /// dims (true), for none (false), or for some: the run decides.
  std::optional<bool> firstPrompt;
};

/// Converts one com.microsoft GroupQueryAttention node.
struct GroupQueryAttentionConverter : AttentionBuilder {
  using AttentionBuilder::AttentionBuilder;

  GqaShape shape;
  /// Batch b's valid past keys (past_b), i64 [batch, 1, 1, 1]; null in the
  /// first prompt, where it is 0.
  Value pastLengths;
  /// seqlens_k as i64 [batch, 1, 1, 1]: the last valid key of each batch.
  Value lastKeys;

  /// True when the node names output `i`.
  bool wantsOutput(int i) const {
    return i < node.output_size() && !node.output(i).empty();
  }

  /// Fails naming the feature of every input and attribute Kiln does not
  /// support.
  LogicalResult rejectUnsupported() {
    if (int64_t window = intAttr("sliding_window_cache", 0))
      return error() << "sliding_window_cache = " << window
                     << " (a window-sized KV cache the op evicts itself) is "
                        "not supported";
    const onnx::AttributeProto *bits =
        findAttribute(node, "kv_cache_bit_width");
    bool quantized = importer.input(node, kKScale) ||
                     importer.input(node, kVScale) || (bits && bits->i() != 0);
    for (StringRef name : {"k_quant_type", "v_quant_type"})
      if (const onnx::AttributeProto *type = findAttribute(node, name))
        quantized |= type->s() != "NONE";
    if (quantized)
      return error() << "a quantized KV cache (k_scale, v_scale, "
                        "k_quant_type, v_quant_type, kv_cache_bit_width) is "
                        "not supported";
    if (!importer.input(node, kQNormWeight) !=
        !importer.input(node, kKNormWeight))
      return error() << "q_norm_weight and k_norm_weight must be given "
                        "together";
    int64_t qk = intAttr("qk_output", 0);
    if (qk < 0 || qk > 2)
      return error() << "qk_output must be 0, 1 or 2, got " << qk;
    if (qk == 0 && wantsOutput(3))
      return error() << "output_qk is named but qk_output is 0";
    int64_t causal = intAttr("causal", 1);
    if (causal != 0 && causal != 1)
      return error() << "causal must be 0 or 1, got " << causal;
    if (causal == 0 && intAttr("local_window_size", -1) > 0)
      return error() << "local_window_size needs causal = 1";
    return success();
  }

  /// total_sequence_length, which must be one size: a constant, or
  /// computed from the shapes of symbolic dims.
  FailureOr<DimExpr> totalLength() {
    auto total = required(kTotalSequenceLength);
    if (failed(total))
      return failure();
    auto values = importer.symbolicInts(*total);
    if (failed(values))
      return error() << "total_sequence_length must be known from shapes at "
                        "compile time (a constant, computed from the "
                        "shapes, or a graph input frozen with "
                     << importer.optionNames().constantInputs << ")";
    if (values->size() != 1)
      return error() << "total_sequence_length must hold one integer, got "
                     << values->size();
    return values->front();
  }

  /// Q, K and V of the new tokens, head-major; fills the head counts and
  /// sizes of `shape`.
  LogicalResult splitInputs(Value &query, Value &key, Value &value) {
    auto q = required(kQuery);
    if (failed(q) || failed(checkFloatTensor(*q, 3, "query", true)))
      return failure();
    shape.heads = intAttr("num_heads", 0);
    shape.kvHeads = intAttr("kv_num_heads", 0);
    if (shape.heads <= 0 || shape.kvHeads <= 0 ||
        shape.heads % shape.kvHeads != 0)
      return error() << "num_heads (" << shape.heads
                     << ") must be a positive multiple of kv_num_heads ("
                     << shape.kvHeads << ")";
    ArrayRef<int64_t> qs = typeOf(*q).getShape();
    SymbolicShape qSizes = dimsOf(*q);
    shape.batch = qSizes[0];
    shape.sequence = qSizes[1];
    Value k = importer.input(node, kKey), v = importer.input(node, kValue);
    if (!k != !v)
      return error() << "key and value must be given together";
    if (!k) {
      // Packed: [Q heads | K heads | V heads] per token; the head counts
      // come from the model, so their sum is checked.
      auto twiceKv = llvm::checkedMul<int64_t>(2, shape.kvHeads);
      auto slots =
          twiceKv ? llvm::checkedAdd(shape.heads, *twiceKv) : std::nullopt;
      if (!slots || qs[2] % *slots != 0)
        return error() << "packed QKV hidden size " << qs[2]
                       << " is not a multiple of num_heads + 2 * "
                          "kv_num_heads ("
                       << shape.heads << " + 2 * " << shape.kvHeads << ")";
      shape.headSize = qs[2] / *slots;
      int64_t qHidden = shape.heads * shape.headSize;
      int64_t kvHidden = shape.kvHeads * shape.headSize;
      Value packed = *q;
      q = slice(packed, 2, 0, qHidden);
      k = slice(packed, 2, qHidden, kvHidden);
      v = slice(packed, 2, qHidden + kvHidden, kvHidden);
    } else {
      if (failed(checkFloatTensor(k, 3, "key", true)) ||
          failed(checkFloatTensor(v, 3, "value", true)))
        return failure();
      if (qs[2] % shape.heads != 0)
        return error() << "query hidden size " << qs[2]
                       << " is not a multiple of num_heads " << shape.heads;
      shape.headSize = qs[2] / shape.heads;
      SymbolicShape kvShape{shape.batch, shape.sequence,
                            DimExpr::constant(shape.kvHeads * shape.headSize)};
      if (dimsOf(k) != kvShape || dimsOf(v) != kvShape)
        return error() << "key and value must be [" << shape.batch.str() << ", "
                       << shape.sequence.str() << ", "
                       << shape.kvHeads * shape.headSize
                       << "] (the query's batch and sequence, kv_num_heads * "
                          "head size), got "
                       << k.getType() << ", " << v.getType();
    }
    auto qh = splitHeads(*q, shape.heads, "query");
    auto kh = splitHeads(k, shape.kvHeads, "key");
    auto vh = splitHeads(v, shape.kvHeads, "value");
    if (failed(qh) || failed(kh) || failed(vh))
      return failure();
    query = *qh;
    key = *kh;
    value = *vh;
    return success();
  }

  /// Checks past_key and past_value and total_sequence_length against the
  /// new tokens; fills the lengths of `shape`.
  LogicalResult readLengths(Value pastKey, Value pastValue) {
    if (!pastKey != !pastValue)
      return error() << "past_key and past_value must be given together";
    if (pastKey) {
      // The head size is the last dim, which must be static: a named one
      // (onnxruntime-genai calls it kv_cache_dim) is to be pinned.
      RankedTensorType pastType = typeOf(pastKey);
      if (pastType.getRank() == 4 && pastType.isDynamicDim(3))
        return error() << "past_key's last dim " << dimsOf(pastKey)[3].str()
                       << " is the head size " << shape.headSize
                       << "; pin it with " << importer.optionNames().dims << " "
                       << dimsOf(pastKey)[3].str() << "=" << shape.headSize;
      if (failed(checkFloatTensor(pastKey, 4, "past_key", true)) ||
          failed(checkFloatTensor(pastValue, 4, "past_value", true)))
        return failure();
      SymbolicShape p = dimsOf(pastKey);
      if (p[0] != shape.batch || p[1] != DimExpr::constant(shape.kvHeads) ||
          p[3] != DimExpr::constant(shape.headSize) ||
          typeOf(pastValue) != typeOf(pastKey))
        return error() << "past_key and past_value must be ["
                       << shape.batch.str() << ", " << shape.kvHeads
                       << ", past, " << shape.headSize << "], got "
                       << pastKey.getType() << ", " << pastValue.getType();
      shape.past = p[2];
    }
    auto total = totalLength();
    if (failed(total))
      return failure();
    shape.total = *total;
    // ONNX Runtime's two cache forms: a past of exactly the earlier tokens,
    // or a buffer of the maximum length that already holds the total. With
    // symbolic dims the form must hold for every value in their ranges.
    const DimExpr &s = shape.sequence, &p = shape.past, &t = shape.total;
    DimRangeFn ranges = importer.dimRanges();
    auto always = [&](const DimExpr &a, const DimExpr &b) {
      return alwaysAtMost(a, b, ranges) == std::optional<bool>(true);
    };
    std::optional<DimExpr> sum = DimExpr::add(p, s);
    if (sum && t == *sum)
      shape.present = t;
    else if (always(DimExpr::constant(1), p) && always(t, p) && always(s, p) &&
             alwaysAtMost(s, t, ranges) != std::optional<bool>(false))
      // S <= total where the ranges leave it open: the run checks it
      // (readKeyLengths).
      shape.present = p;
    else
      return error() << "total_sequence_length " << t.str()
                     << " fits neither past + new tokens (" << p.str() << " + "
                     << s.str()
                     << ") nor a past buffer of the maximum length (at "
                        "least "
                     << t.str()
                     << " rows) for every value of the dims in their ranges: "
                        "give "
                     << importer.optionNames().dims
                     << " TOTAL=PAST+SEQUENCE for a past of the earlier "
                        "tokens, or a past of at least the largest total";
    // The key positions become constants; their size is bounded as the
    // rotary converters bound theirs.
    auto rows = shape.present.bounds(ranges);
    if (!rows || rows->second > kMaxPositions)
      return error() << "a KV cache of " << shape.present.str()
                     << " rows is more than the 2^20 positions Kiln makes "
                        "constants of";
    if (s == t)
      shape.firstPrompt = true;
    else if (compareSizes(s, t, ranges) == std::optional<int>(-1))
      shape.firstPrompt = false;
    return success();
  }

  /// Reads seqlens_k into `lastKeys` and `pastLengths`.
  LogicalResult readKeyLengths() {
    auto lengths = required(kSeqlensK);
    if (failed(lengths))
      return failure();
    RankedTensorType type = typeOf(*lengths);
    if (!isa<IntegerType>(type.getElementType()) ||
        type.getElementType().isInteger(1) ||
        dimsOf(*lengths) != SymbolicShape{shape.batch})
      return error() << "seqlens_k must be integers of shape ["
                     << shape.batch.str() << "], got " << type;
    Type i64 = b.getI64Type();
    DimExpr one = DimExpr::constant(1);
    Value keys = reshape(castTo(*lengths, i64),
                         SymbolicShape{shape.batch, one, one, one});
    // seqlens_k comes from the data and indexes the cache: each must name a
    // key below the total (after a past, one that leaves the new tokens'
    // rows after the past), as onnxruntime requires. A run with one outside
    // fails naming it, like an index outside its table.
    DimExpr low = DimExpr::constant(0);
    if (shape.firstPrompt == false) {
      std::optional<DimExpr> last = DimExpr::sub(shape.sequence, one);
      if (!last)
        return error() << "sequence length " << shape.sequence.str()
                       << " is too large";
      low = *last;
    }
    std::string what = "seqlens_k (input " + std::to_string(kSeqlensK) +
                       ") must be in [" + low.str() +
                       ", total_sequence_length = " + shape.total.str() + ")";
    lastKeys = CheckRangeOp::create(b, loc, typeOf(keys), keys,
                                    sizeValue(low, i64, 0),
                                    sizeValue(shape.total, i64, 0),
                                    b.getStringAttr(what));
    if (shape.firstPrompt == true)
      return success();
    pastLengths = lastKeys;
    if (shape.sequence == one && shape.firstPrompt == false)
      return success();
    std::optional<DimExpr> shift = DimExpr::sub(one, shape.sequence);
    std::optional<DimExpr> pastTotal = DimExpr::add(shape.total, one);
    if (!shift || !pastTotal)
      return error() << "sequence length " << shape.sequence.str()
                     << " is too large";
    Value shiftValue = sizeValue(*shift, i64, 0);
    if (alwaysAtMost(shape.sequence, shape.total, importer.dimRanges()) !=
        std::optional<bool>(true)) {
      // A buffer whose ranges leave the new tokens free of the total: more
      // of them than the total is a length the run refuses, as onnxruntime
      // does, rather than one that writes rows no key reads.
      std::string what = "the new tokens (" + shape.sequence.str() +
                         ") must be at most total_sequence_length (" +
                         shape.total.str() + ")";
      Value checked = CheckRangeOp::create(
          b, loc, typeOf(shiftValue), sizeValue(shape.sequence, i64, 0),
          sizeValue(one, i64, 0), sizeValue(*pastTotal, i64, 0),
          b.getStringAttr(what));
      auto difference =
          broadcast<SubOp>(importer.scalar(loc, i64, 1.0), checked);
      if (failed(difference))
        return failure();
      shiftValue = *difference;
    }
    auto past = broadcast<AddOp>(lastKeys, shiftValue);
    if (failed(past))
      return failure();
    pastLengths = *past;
    if (shape.firstPrompt == false)
      return success();
    // Either form at run time: a first prompt's seqlens_k[b] + 1 - S is
    // at most 0 (its padding), and its past_b is 0.
    auto clamped =
        broadcast<MaxOp>(pastLengths, importer.scalar(loc, i64, 0.0));
    if (failed(clamped))
      return failure();
    pastLengths = *clamped;
    return success();
  }

  /// i1 [1, 1]: whether this run is a first prompt (S == total), for the
  /// forms the dims leave to the run.
  FailureOr<Value> isFirstPrompt() {
    Type i64 = b.getI64Type();
    return compare<EqualOp>(sizeValue(shape.sequence, i64, 2),
                            sizeValue(shape.total, i64, 2));
  }

  /// The rotary positions of the new tokens, i64 [1 or batch, S].
  FailureOr<Value> rotaryPositions() {
    const DimExpr &s = shape.sequence;
    DimExpr one = DimExpr::constant(1);
    Value ids = importer.input(node, kPositionIds);
    Value first;
    if (ids) {
      RankedTensorType type = typeOf(ids);
      if (!type.getElementType().isInteger(64) ||
          dimsOf(ids) != SymbolicShape{shape.batch, s})
        return error() << "position_ids must be i64 of shape ["
                       << shape.batch.str() << ", " << s.str() << "], got "
                       << type;
      if (shape.firstPrompt == false)
        return ids;
      // The first prompt reads the first id only, for every batch.
      first = reshape(slice(slice(ids, 0, 0, 1), 1, 0, 1), {1, 1});
    } else if (pastLengths) {
      first = reshape(pastLengths, SymbolicShape{shape.batch, one});
    }
    // The tokens follow the first one: first + 0, 1, ..., S - 1.
    auto steps = iota(SymbolicShape{one, s}, 0, b.getI64Type());
    if (failed(steps))
      return failure();
    if (!first)
      return *steps;
    auto positions =
        s == one ? FailureOr<Value>(first) : broadcast<AddOp>(first, *steps);
    if (failed(positions) || !ids || shape.firstPrompt == true)
      return positions;
    // The run decides: a first prompt's positions, or the ids.
    auto firstPrompt = isFirstPrompt();
    if (failed(firstPrompt))
      return failure();
    return where(*firstPrompt, *positions, ids);
  }

  /// The per-head RMS norm of the new queries and keys (q_norm_weight and
  /// k_norm_weight, [head size] each, shared by the heads: the model
  /// builder's fused form of Qwen3's and Gemma 3's Q/K norms for CUDA),
  /// before the rotation, as the builder's unfused form computes it: a
  /// SimplifiedLayerNormalization over each head's features with fp32
  /// statistics, epsilon qk_norm_epsilon (1e-6 by default, above 0), the
  /// result in the query's type.
  LogicalResult normalizeHeads(Value &query, Value &key) {
    float epsilon = floatAttr("qk_norm_epsilon", 1e-6f);
    if (!(epsilon > 0) || std::isinf(epsilon))
      return error() << "qk_norm_epsilon must be finite and above 0, got "
                     << epsilon;
    FusedOpConverter norm(importer, node);
    Type et = typeOf(query).getElementType();
    for (auto [x, input, name] : {std::tuple<Value &, int, StringRef>{
                                      query, kQNormWeight, "q_norm_weight"},
                                  {key, kKNormWeight, "k_norm_weight"}}) {
      Value weight = importer.input(node, input);
      if (failed(norm.expectType(weight, name, et, ArrayRef(shape.headSize))))
        return failure();
      int64_t rank = typeOf(x).getRank();
      Value wideX = norm.castTo(x, norm.wideType());
      Value wideWeight = norm.castTo(weight, norm.wideType());
      auto normalized =
          norm.rmsNormalize(wideX, wideWeight, rank - 1, epsilon, false);
      if (failed(normalized))
        return failure();
      x = norm.castTo(normalized->y, et);
    }
    return success();
  }

  /// Rotates the new queries and keys by their positions (do_rotary).
  LogicalResult rotate(Value &query, Value &key) {
    Value cos = importer.input(node, kCosCache);
    Value sin = importer.input(node, kSinCache);
    if (!cos || !sin)
      return error() << "do_rotary needs cos_cache and sin_cache";
    Type et = typeOf(query).getElementType();
    RankedTensorType cosType = typeOf(cos);
    if (cosType.getRank() != 2 || !cosType.hasStaticShape() ||
        cosType.getElementType() != et || typeOf(sin) != cosType)
      return error() << "cos_cache and sin_cache must be one 2-D type of " << et
                     << " elements, got " << cos.getType() << ", "
                     << sin.getType();
    int64_t half = cosType.getDimSize(1);
    if (half <= 0 || half > shape.headSize / 2)
      return error() << "cos_cache has " << half
                     << " columns, expected 1 to head size / 2 = "
                     << shape.headSize / 2;
    // Without position_ids the positions are below total; position_ids
    // are known at run time only (out of range, the reference interpreter
    // reports them and the kernels clamp).
    int64_t rows = cosType.getDimSize(0);
    auto totals = shape.total.bounds(importer.dimRanges());
    if (!importer.input(node, kPositionIds) &&
        (!totals || rows < totals->second))
      return error() << "cos_cache has " << rows
                     << " rows, fewer than total_sequence_length "
                     << shape.total.str()
                     << (shape.total.isConstant() ? "" : " at its largest");
    auto positions = rotaryPositions();
    if (failed(positions))
      return failure();
    auto rowsAt = [&](Value cache) -> FailureOr<Value> {
      auto type = inferGatherType(loc, typeOf(cache), typeOf(*positions), 0);
      if (failed(type))
        return failure();
      return GatherOp::create(b, loc, *type, cache, *positions, 0).getResult();
    };
    auto c = rowsAt(cos), s = rowsAt(sin);
    if (failed(c) || failed(s))
      return failure();
    // The rotation is written by the rotary converters' helper, which
    // names this node in its messages.
    FusedOpConverter rotary(importer, node);
    bool interleaved = intAttr("rotary_interleaved", 0) != 0;
    auto rq = rotary.rotated(
        query, *c, *s, {shape.heads, shape.headSize, 2 * half, interleaved});
    auto rk = rotary.rotated(
        key, *c, *s, {shape.kvHeads, shape.headSize, 2 * half, interleaved});
    if (failed(rq) || failed(rk))
      return failure();
    query = *rq;
    key = *rk;
    return success();
  }

  /// A zero tensor of shape `dims` and element type `et`.
  Value zeros(ArrayRef<DimExpr> dims, Type et) {
    Value zero = reshape(importer.scalar(loc, et, 0.0),
                         SmallVector<int64_t>(dims.size(), 1));
    return ExpandOp::create(b, loc, symbolicTensorType(dims, et), zero);
  }

  /// Which row of concat(past, new) each row t of the present reads, i64
  /// [batch, 1, rows, 1]: row t of the past below past_b, row P + t -
  /// past_b (the new entries) for the next S rows, 0 after them. `kept`
  /// gets the rows that are not zeroed. Every index is in [0, P + S)
  /// whatever seqlens_k holds.
  FailureOr<Value> presentSources(Value &kept) {
    Type i64 = b.getI64Type();
    DimExpr one = DimExpr::constant(1);
    auto t = iota(SymbolicShape{one, one, shape.present, one}, 0, i64);
    if (failed(t))
      return failure();
    auto fromPast = compare<LessOp>(*t, pastLengths);
    auto shifted = broadcast<SubOp>(*t, pastLengths);
    if (failed(fromPast) || failed(shifted))
      return failure();
    auto fromNew = broadcast<AddOp>(*shifted, sizeValue(shape.past, i64, 0));
    auto inNew = compare<LessOp>(*shifted, sizeValue(shape.sequence, i64, 0));
    if (failed(fromNew) || failed(inNew))
      return failure();
    auto source = where(*fromPast, *t, *fromNew);
    if (failed(source))
      return failure();
    kept = *inNew;
    return where(kept, *source, importer.scalar(loc, i64, 0.0));
  }

  /// Whether `past` (input `pastInput`) and output `output` can be one
  /// buffer, as ONNX Runtime shares them when the caller passes one
  /// (past_present_share_buffer): a past of the present's length that is a
  /// graph input read by this node alone, and a present that is a graph
  /// output once. The new rows are then written in place.
  bool sharesBuffer(Value past, int pastInput, int output) {
    auto arg = dyn_cast_or_null<BlockArgument>(past);
    return arg && shape.present == shape.past && wantsOutput(output) &&
           isa<func::FuncOp>(arg.getOwner()->getParentOp()) &&
           importer.graphOutputCount(node.output(output)) == 1 &&
           importer.readerCount(node.input(pastInput)) == 1;
  }

  /// present_key or present_value (output `output`): the past (null
  /// without; input `pastInput`) with the new entries `x` written after each
  /// batch's valid past (see the file comment). `indices` and `kept` are
  /// the gather's, made by the first caller that needs them.
  FailureOr<Value> presentOf(Value past, int pastInput, Value x, int output,
                             Value &indices, Value &kept) {
    SymbolicShape xs = dimsOf(x);
    Type et = typeOf(x).getElementType();
    SymbolicShape dims{xs[0], xs[1], shape.present, xs[3]};
    if (typeOf(past ? past : x).getElementType() == et &&
        sharesBuffer(past, pastInput, output)) {
      // The new rows at each batch's valid length (at 0 in a first
      // prompt); the other rows stay the buffer's, as in ONNX Runtime.
      Value starts = shape.firstPrompt == true ? Value() : pastLengths;
      return UpdateSliceOp::create(b, loc, typeOf(past), past, x, starts,
                                   /*axis=*/2, "0")
          .getResult();
    }
    if (shape.firstPrompt == true) {
      if (shape.present == shape.sequence)
        return x;
      SymbolicShape tail(dims);
      std::optional<DimExpr> rest = DimExpr::sub(shape.present, shape.sequence);
      if (!rest)
        return error() << "present length " << shape.present.str()
                       << " is too large";
      tail[2] = *rest;
      return concatAlong(x, zeros(tail, et), 2);
    }
    if (!indices) {
      auto sources = presentSources(kept);
      if (failed(sources))
        return failure();
      indices = ExpandOp::create(
          b, loc, symbolicTensorType(dims, b.getI64Type()), *sources);
    }
    auto joined = concatSequence(past, x, "past");
    if (failed(joined))
      return failure();
    auto type =
        inferGatherElementsType(loc, typeOf(*joined), typeOf(indices), 2);
    if (failed(type))
      return failure();
    Value rows = GatherElementsOp::create(b, loc, *type, *joined, indices, 2);
    return where(kept, rows, importer.scalar(loc, et, 0.0));
  }

  /// The keys query i sees, i1 [batch, 1, S, keys]; `rowEmpty` gets the
  /// rows that see none (i1 [batch, 1, S, 1]) where valid lengths can leave
  /// any, else null.
  FailureOr<Value> visibleKeys(const DimExpr &keys, Value &rowEmpty) {
    Type i64 = b.getI64Type();
    DimExpr one = DimExpr::constant(1);
    auto j = iota(SymbolicShape{one, one, one, keys}, 0, i64);
    if (failed(j))
      return failure();
    if (intAttr("causal", 1) == 0)
      return compare<LessEqualOp>(*j, lastKeys);
    // p = past_b + i; in a padded first prompt keys after the batch's last
    // valid one stay hidden too (a no-op in any other form, where p is at
    // most seqlens_k[b]).
    Value position, newest;
    if (shape.firstPrompt == false && shape.sequence == one) {
      position = newest = pastLengths;
    } else {
      auto i = iota(SymbolicShape{one, one, shape.sequence, one}, 0, i64);
      if (failed(i))
        return failure();
      auto p = pastLengths ? broadcast<AddOp>(pastLengths, *i) : *i;
      if (failed(p))
        return failure();
      auto clamped =
          shape.firstPrompt == false ? p : broadcast<MinOp>(*p, lastKeys);
      if (failed(clamped))
        return failure();
      position = *p;
      newest = *clamped;
    }
    auto visible = compare<LessEqualOp>(*j, newest);
    int64_t window = intAttr("local_window_size", -1);
    if (failed(visible) || window <= 0)
      return visible;
    auto oldest = broadcast<SubOp>(
        position, importer.scalar(loc, i64, static_cast<double>(window)));
    if (failed(oldest))
      return failure();
    auto inWindow = compare<GreaterOp>(*j, *oldest);
    if (failed(inWindow))
      return failure();
    // Only a padded first prompt longer than the window can leave a row
    // without keys: p - w >= min(p, last valid key).
    auto lengths = shape.sequence.bounds(importer.dimRanges());
    if (shape.firstPrompt != false && (!lengths || lengths->second > window)) {
      auto empty = compare<GreaterEqualOp>(*oldest, newest);
      if (failed(empty))
        return failure();
      rowEmpty = *empty;
    }
    return broadcast<AndOp>(*visible, *inWindow);
  }

  /// attention_bias ([batch or 1, heads or 1, S, total]), or null.
  FailureOr<Value> attentionBias(Type et) {
    Value bias = importer.input(node, kAttentionBias);
    if (!bias)
      return Value();
    SymbolicShape scores{shape.batch, DimExpr::constant(shape.heads),
                         shape.sequence, shape.total};
    if (failed(checkFloatTensor(bias, 4, "attention_bias", true)) ||
        failed(checkBroadcastsToScores(dimsOf(bias), scores, "attention_bias",
                                       bias.getType())))
      return failure();
    return castTo(bias, et);
  }

  /// `lhs` and `rhs` joined along `axis`.
  FailureOr<Value> concatAlong(Value lhs, Value rhs, int64_t axis) {
    auto type = inferConcatType(loc, {typeOf(lhs), typeOf(rhs)}, axis);
    if (failed(type))
      return failure();
    return ConcatOp::create(b, loc, *type, ValueRange{lhs, rhs}, axis)
        .getResult();
  }

  /// The sink logit per head, [1, heads, 1, 1], or null.
  FailureOr<Value> sink(Type et) {
    if (Value given = importer.input(node, kHeadSink)) {
      RankedTensorType type = typeOf(given);
      if (type.getRank() != 1 || type.getDimSize(0) != shape.heads ||
          !isa<FloatType>(type.getElementType()))
        return error() << "head_sink must be float of shape [" << shape.heads
                       << "], got " << type;
      return reshape(castTo(given, et), {1, shape.heads, 1, 1});
    }
    if (intAttr("smooth_softmax", 0) != 0)
      return reshape(importer.scalar(loc, et, 0.0), {1, 1, 1, 1});
    return Value();
  }

  /// `x` with the rows `rowEmpty` (null for none) zeroed.
  FailureOr<Value> zeroRows(Value x, Value rowEmpty) {
    if (!rowEmpty)
      return x;
    return where(rowEmpty,
                 importer.scalar(loc, typeOf(x).getElementType(), 0.0), x);
  }

  LogicalResult convert() {
    if (failed(rejectUnsupported()))
      return failure();
    Value query, key, value;
    if (failed(splitInputs(query, key, value)))
      return failure();
    Value pastKey = importer.input(node, kPastKey);
    Value pastValue = importer.input(node, kPastValue);
    if (failed(readLengths(pastKey, pastValue)) || failed(readKeyLengths()))
      return failure();
    if (importer.input(node, kQNormWeight) &&
        failed(normalizeHeads(query, key)))
      return failure();
    if (intAttr("do_rotary", 0) != 0 && failed(rotate(query, key)))
      return failure();
    Value indices, kept;
    auto presentKey = presentOf(pastKey, kPastKey, key, 1, indices, kept);
    if (failed(presentKey))
      return failure();
    auto presentValue =
        presentOf(pastValue, kPastValue, value, 2, indices, kept);
    if (failed(presentValue))
      return failure();
    (void)output(*presentKey, 1);
    (void)output(*presentValue, 2);

    // The keys are the first `total` rows of the present: a valid
    // seqlens_k (below total, as ONNX Runtime requires) hides the rest of a
    // maximum-length buffer, and the qk output has `total` columns. In the
    // first prompt they are the new keys themselves.
    int64_t qkOutput = intAttr("qk_output", 0);
    const DimExpr &keys = shape.total;
    Type et = typeOf(query).getElementType();
    Value rowEmpty;
    auto visible = visibleKeys(keys, rowEmpty);
    if (failed(visible))
      return failure();
    double inf = std::numeric_limits<double>::infinity();
    auto bias = maskBias(*visible, et, -inf);
    auto given = attentionBias(et);
    if (failed(bias) || failed(given))
      return failure();
    if (*given) {
      bias = broadcast<AddOp>(*given, *bias);
      if (failed(bias))
        return failure();
    }
    auto sinkLogit = sink(et);
    if (failed(sinkLogit))
      return failure();

    SdpaOperands operands;
    operands.query = query;
    bool firstPrompt = shape.firstPrompt == true;
    operands.key = firstPrompt ? key : slice(*presentKey, 2, 0, keys);
    operands.value = firstPrompt ? value : slice(*presentValue, 2, 0, keys);
    operands.bias = *bias;
    operands.sink = *sinkLogit;
    float scale = floatAttr("scale", 0.0f);
    operands.scale = scale != 0.0f
                         ? scale
                         : 1.0 / std::sqrt(static_cast<double>(shape.headSize));
    float softcap = floatAttr("softcap", 0.0f);
    operands.softcap = softcap > 0.0f ? softcap : 0.0;
    auto sdpa = buildSdpa(operands);
    if (failed(sdpa))
      return failure();
    // The guard goes on the output, not the probabilities, so that the
    // softmax-matmul chain stays one attention for kiln-recompose.
    auto result = zeroRows(sdpa->output, rowEmpty);
    if (failed(result))
      return failure();
    if (qkOutput != 0) {
      FailureOr<Value> qk = qkOutput == 1 ? where(*visible, sdpa->biased,
                                                  importer.scalar(loc, et, 0.0))
                                          : zeroRows(sdpa->probs, rowEmpty);
      if (failed(qk))
        return failure();
      (void)output(*qk, 3);
    }
    return output(mergeHeads(*result), 0);
  }
};

} // namespace

ArrayRef<OpConversion> getGroupQueryAttentionConversions() {
  using C = GroupQueryAttentionConverter;
  static const OpConversion table[] = {
      {kMicrosoftDomain, "GroupQueryAttention", convertWith<C, &C::convert>},
  };
  return table;
}

} // namespace kiln
