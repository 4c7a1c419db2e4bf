//===- AttentionBuilder.cpp - attention written out in kiln ops -----------===//

#include "AttentionBuilder.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace kiln {

LogicalResult AttentionBuilder::checkFloatTensor(Value x, int64_t rank,
                                                 StringRef what,
                                                 bool symbolicDims) {
  RankedTensorType type = typeOf(x);
  bool shaped = symbolicDims ? type.getRank() == rank && rank > 0 &&
                                   !type.isDynamicDim(rank - 1)
                             : type.hasStaticShape();
  if (type.getRank() != rank || !shaped ||
      !isa<FloatType>(type.getElementType()))
    return error() << "expected " << what << " of rank " << rank
                   << " with float elements and a static "
                   << (symbolicDims ? "last dim" : "shape") << ", got " << type;
  return success();
}

LogicalResult
AttentionBuilder::checkBroadcastsToScores(ArrayRef<int64_t> shape,
                                          ArrayRef<int64_t> scores,
                                          StringRef what, Type type) {
  auto sizes = [](ArrayRef<int64_t> dims) {
    SymbolicShape result;
    for (int64_t d : dims)
      result.push_back(DimExpr::constant(d));
    return result;
  };
  return checkBroadcastsToScores(sizes(shape), sizes(scores), what, type);
}

LogicalResult
AttentionBuilder::checkBroadcastsToScores(ArrayRef<DimExpr> shape,
                                          ArrayRef<DimExpr> scores,
                                          StringRef what, Type type) {
  auto joint = broadcastSizes(std::nullopt, shape, scores);
  if (succeeded(joint) && llvm::equal(*joint, scores))
    return success();
  auto diag = error() << what << " of type " << type
                      << " does not broadcast to the scores [";
  llvm::interleave(
      scores, [&](const DimExpr &d) { diag << d.str(); },
      [&] { diag << ", "; });
  return diag << "]";
}

/// `a * b` of two sizes the importer checked to be bounded.
static DimExpr times(const DimExpr &a, int64_t b) {
  std::optional<DimExpr> product = DimExpr::mul(a, DimExpr::constant(b));
  assert(product && "a size past int64");
  return *product;
}

FailureOr<Value> AttentionBuilder::splitHeads(Value x, int64_t heads,
                                              StringRef what) {
  SymbolicShape s = dimsOf(x);
  int64_t hidden = typeOf(x).getDimSize(2);
  if (heads <= 0 || ShapedType::isDynamic(hidden) || hidden % heads != 0)
    return error() << what << " hidden size " << s[2].str()
                   << " is not a multiple of the head count " << heads;
  Value viewed = reshape(x, SymbolicShape{s[0], s[1], DimExpr::constant(heads),
                                          DimExpr::constant(hidden / heads)});
  auto type = inferTransposeType(loc, typeOf(viewed), {0, 2, 1, 3});
  if (failed(type))
    return failure();
  return TransposeOp::create(b, loc, *type, viewed,
                             ArrayRef<int64_t>{0, 2, 1, 3})
      .getResult();
}

Value AttentionBuilder::mergeHeads(Value x) {
  SymbolicShape s = dimsOf(x);
  auto type =
      symbolicTensorType({s[0], s[2], s[1], s[3]}, typeOf(x).getElementType());
  Value transposed =
      TransposeOp::create(b, loc, type, x, ArrayRef<int64_t>{0, 2, 1, 3});
  // Heads and head size are static (splitHeads).
  int64_t heads = typeOf(x).getDimSize(1), size = typeOf(x).getDimSize(3);
  return reshape(transposed,
                 SymbolicShape{s[0], s[2], DimExpr::constant(heads * size)});
}

Value AttentionBuilder::repeatHeads(Value x, int64_t groups) {
  if (groups == 1)
    return x;
  RankedTensorType type = typeOf(x);
  SymbolicShape s = dimsOf(x);
  DimExpr one = DimExpr::constant(1);
  Value viewed = reshape(x, SymbolicShape{s[0], s[1], one, s[2], s[3]});
  auto expandedType =
      symbolicTensorType({s[0], s[1], DimExpr::constant(groups), s[2], s[3]},
                         type.getElementType());
  Value expanded = ExpandOp::create(b, loc, expandedType, viewed);
  return reshape(expanded,
                 SymbolicShape{s[0], times(s[1], groups), s[2], s[3]});
}

LogicalResult AttentionBuilder::appendPast(int pastKeyInput, Value &key,
                                           Value &value, DimExpr &past) {
  Value pastKey = importer.input(node, pastKeyInput);
  Value pastValue = importer.input(node, pastKeyInput + 1);
  past = DimExpr::constant(0);
  if (!pastKey != !pastValue)
    return error() << "past_key and past_value must be given together";
  if (!pastKey)
    return success();
  if (failed(checkFloatTensor(pastKey, 4, "past_key", true)) ||
      failed(checkFloatTensor(pastValue, 4, "past_value", true)))
    return failure();
  past = dimsOf(pastKey)[2];
  auto joinedKey = concatSequence(pastKey, key, "past_key");
  auto joinedValue = concatSequence(pastValue, value, "past_value");
  if (failed(joinedKey) || failed(joinedValue))
    return failure();
  key = *joinedKey;
  value = *joinedValue;
  return success();
}

FailureOr<Value> AttentionBuilder::concatSequence(Value past, Value x,
                                                  StringRef what) {
  SymbolicShape p = dimsOf(past), s = dimsOf(x);
  if (p.size() != 4 || p[0] != s[0] || p[1] != s[1] || p[3] != s[3])
    return error() << what << " of type " << past.getType()
                   << " does not fit the new entries "
                   << "(head-major: " << x.getType() << ")";
  auto type = inferConcatType(loc, {typeOf(past), typeOf(x)}, 2);
  if (failed(type))
    return failure();
  return ConcatOp::create(b, loc, *type, ValueRange{past, x}, 2).getResult();
}

Value AttentionBuilder::sizeValue(const DimExpr &size, Type elementType,
                                  int64_t rank) {
  SmallVector<int64_t> ones(rank, 1);
  SymbolicTensor tensor;
  tensor.values = {size};
  if (size.isConstant()) {
    tensor.shape = ones;
    return importer.materializeSizes(
        loc, RankedTensorType::get(ones, elementType), tensor);
  }
  // A scalar kiln.sizes, viewed with `rank` unit dims.
  Value scalar = importer.materializeSizes(
      loc, RankedTensorType::get({}, elementType), tensor);
  return reshape(scalar, ones);
}

FailureOr<Value> AttentionBuilder::causalMask(int64_t qLen, int64_t kvLen,
                                              int64_t offset) {
  return causalMask(DimExpr::constant(qLen), DimExpr::constant(kvLen),
                    DimExpr::constant(offset));
}

FailureOr<Value> AttentionBuilder::causalMask(const DimExpr &qLen,
                                              const DimExpr &kvLen,
                                              const DimExpr &offset) {
  // Two small ranges compared with broadcasting, not a [q, kv] constant: the
  // mask of a long sequence costs no weight memory.
  Type i64 = b.getI64Type();
  DimExpr one = DimExpr::constant(1);
  std::optional<int64_t> fixed = offset.getConstant();
  auto keys = iota({one, kvLen}, 0, i64);
  auto lastVisible = iota({qLen, one}, fixed.value_or(0), i64);
  if (failed(keys) || failed(lastVisible))
    return failure();
  if (!fixed)
    lastVisible = broadcast<AddOp>(*lastVisible, sizeValue(offset, i64, 2));
  if (failed(lastVisible))
    return failure();
  return compare<LessEqualOp>(*keys, *lastVisible);
}

FailureOr<Value> AttentionBuilder::causalMask(int64_t qLen, int64_t kvLen,
                                              Value offsets) {
  Type i64 = b.getI64Type();
  Value keys = iota({1, 1, 1, kvLen}, 0, i64);
  auto lastVisible = broadcast<AddOp>(iota({1, 1, qLen, 1}, 0, i64), offsets);
  if (failed(lastVisible))
    return failure();
  return compare<LessEqualOp>(keys, *lastVisible);
}

FailureOr<Value> AttentionBuilder::keyRangeMask(Value end, Value start,
                                                const DimExpr &kvLen) {
  Type elementType = typeOf(end).getElementType();
  DimExpr one = DimExpr::constant(1);
  SymbolicShape column{dimsOf(end)[0], one};
  auto keys = iota({one, kvLen}, 0, elementType);
  if (failed(keys))
    return failure();
  auto allowed = compare<LessOp>(*keys, reshape(end, column));
  if (failed(allowed) || !start)
    return allowed;
  auto started = compare<GreaterEqualOp>(*keys, reshape(start, column));
  if (failed(started))
    return failure();
  return broadcast<AndOp>(*allowed, *started);
}

FailureOr<Value> AttentionBuilder::maskBias(Value allowed, Type elementType,
                                            double masked, Value unmasked) {
  if (!unmasked)
    unmasked = importer.scalar(loc, elementType, 0.0);
  return where(allowed, unmasked, importer.scalar(loc, elementType, masked));
}

FailureOr<Value> AttentionBuilder::rowsWithoutKeys(Value attendable) {
  // Kiln has no boolean "any": the mean of the row as 0/1 is 0 exactly when
  // no key is attendable (sums of small integers are exact in fp32).
  Type f32 = b.getF32Type();
  Value counted = castTo(attendable, f32);
  int64_t last = typeOf(counted).getRank() - 1;
  Value mean =
      ReduceMeanOp::create(b, loc, counted, ArrayRef<int64_t>{last}, true);
  return compare<EqualOp>(mean, importer.scalar(loc, f32, 0.0));
}

FailureOr<Value> AttentionBuilder::where(Value condition, Value lhs,
                                         Value rhs) {
  auto type = inferWhereType(loc, typeOf(condition), typeOf(lhs), typeOf(rhs));
  if (failed(type))
    return failure();
  return WhereOp::create(b, loc, *type, condition, lhs, rhs).getResult();
}

FailureOr<Value> AttentionBuilder::matmul(Value lhs, Value rhs,
                                          bool transposeRhs) {
  auto type =
      inferMatmulType(loc, typeOf(lhs), typeOf(rhs), false, transposeRhs);
  if (failed(type))
    return failure();
  return MatmulOp::create(b, loc, *type, lhs, rhs, false, transposeRhs)
      .getResult();
}

FailureOr<SdpaValues> AttentionBuilder::buildSdpa(const SdpaOperands &in) {
  RankedTensorType queryType = typeOf(in.query);
  SymbolicShape qs = dimsOf(in.query), ks = dimsOf(in.key),
                vs = dimsOf(in.value);
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[2] != vs[2] || ks[3] != qs[3])
    return error() << "Q, K and V do not agree on batch, key sequence or "
                   << "head size: " << queryType << ", " << in.key.getType()
                   << ", " << in.value.getType() << " (head-major)";
  int64_t qHeads = queryType.getDimSize(1);
  int64_t kvHeads = typeOf(in.key).getDimSize(1);
  if (kvHeads <= 0 || qHeads % kvHeads != 0 ||
      typeOf(in.value).getDimSize(1) != kvHeads)
    return error() << "query heads (" << qHeads
                   << ") must be a multiple of the key and value heads ("
                   << kvHeads << ", " << typeOf(in.value).getDimSize(1) << ")";
  Value key = repeatHeads(in.key, qHeads / kvHeads);
  Value value = repeatHeads(in.value, qHeads / kvHeads);
  Type et = queryType.getElementType();

  SdpaValues r;
  auto product = matmul(in.query, key, /*transposeRhs=*/true);
  if (failed(product))
    return failure();
  RankedTensorType scoresType = typeOf(*product);
  r.scores = MulOp::create(b, loc, scoresType, *product,
                           importer.scalar(loc, et, in.scale));
  r.capped = r.scores;
  if (in.softcap != 0.0) {
    Value cap = importer.scalar(loc, et, in.softcap);
    Value ratio = DivOp::create(b, loc, scoresType, r.scores, cap);
    Value squashed = TanhOp::create(b, loc, ratio);
    r.capped = MulOp::create(b, loc, scoresType, squashed, cap);
  }
  r.biased = r.capped;
  if (in.bias) {
    auto biased = broadcast<AddOp>(r.capped, castTo(in.bias, et));
    if (failed(biased))
      return failure();
    if (typeOf(*biased) != scoresType)
      return error() << "the attention mask or bias of type "
                     << in.bias.getType()
                     << " does not broadcast to the scores " << scoresType;
    r.biased = *biased;
  }
  Type softmaxType = in.softmaxType ? in.softmaxType : et;
  int64_t last = scoresType.getRank() - 1;
  Value logits = castTo(r.biased, softmaxType);
  if (in.sink) {
    // The sink is one more key whose probability is dropped: appended to
    // every row, normalized with it, sliced off again.
    SymbolicShape column = dimsOf(*product);
    column.back() = DimExpr::constant(1);
    auto columnType = symbolicTensorType(column, softmaxType);
    Value sink =
        ExpandOp::create(b, loc, columnType, castTo(in.sink, softmaxType));
    auto joined = inferConcatType(loc, {typeOf(logits), columnType}, last);
    if (failed(joined))
      return failure();
    logits = ConcatOp::create(b, loc, *joined, ValueRange{logits, sink}, last);
  }
  Value probs = SoftmaxOp::create(b, loc, logits, last);
  if (in.sink)
    probs = slice(probs, last, 0, dimsOf(*product).back());
  if (in.rowFullyMasked) {
    auto guarded =
        where(in.rowFullyMasked, importer.scalar(loc, softmaxType, 0.0), probs);
    if (failed(guarded))
      return failure();
    probs = *guarded;
  }
  r.probs = castTo(probs, et);
  auto output = matmul(r.probs, value, /*transposeRhs=*/false);
  if (failed(output))
    return failure();
  r.output = *output;
  return r;
}

} // namespace kiln
