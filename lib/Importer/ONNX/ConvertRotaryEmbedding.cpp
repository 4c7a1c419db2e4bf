//===- ConvertRotaryEmbedding.cpp - rotary position embeddings ------------===//
//
// ONNX RotaryEmbedding (opset 23) and com.microsoft RotaryEmbedding rotate
// pairs of the first rotary_embedding_dim features of each head by the
// angles of the token's position: (x1, x2) -> (x1 cos - x2 sin,
// x1 sin + x2 cos), a pair being the i-th feature of each half of those
// features, or two neighbours when interleaved. Written out with kiln ops
// and no transposes: the rotated features are viewed as [..., 2, half]
// (halves) or [..., half, 2] (interleaved), so x1 and x2 are two slices of
// one dim, and the per-token cos and sin broadcast over the heads.
//
//===----------------------------------------------------------------------===//

#include "FusedOpConverter.h"
#include "OpRegistry.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace kiln {

FailureOr<Value> FusedOpConverter::rotated(Value x, Value cos, Value sin,
                                           const RotaryLayout &layout) {
  // Sizes, so that a symbolic batch or sequence keeps its name.
  SymbolicShape shape = dimsOf(x);
  bool headsFirst = shape.size() == 4;
  DimExpr batch = shape[0], sequence = headsFirst ? shape[2] : shape[1];
  DimExpr angleBatch = dimsOf(cos)[0];
  DimExpr one = DimExpr::constant(1), two = DimExpr::constant(2);
  DimExpr half = DimExpr::constant(layout.rotaryDim / 2);
  SymbolicShape heads =
      headsFirst
          ? shape
          : SymbolicShape{batch, sequence, DimExpr::constant(layout.numHeads),
                          DimExpr::constant(layout.headSize)};
  Value byHead = reshape(x, heads);
  Value part = sliceAlong(byHead, 3, 0, layout.rotaryDim);

  // x1 and x2 are the two entries of the pair dim; cos and sin gain unit
  // dims for the heads and the pair dim.
  SymbolicShape pairs(heads.begin(), heads.begin() + 3);
  SymbolicShape angles = headsFirst ? SymbolicShape{angleBatch, one, sequence}
                                    : SymbolicShape{angleBatch, sequence, one};
  int64_t pairAxis = layout.interleaved ? 4 : 3;
  pairs.push_back(layout.interleaved ? half : two);
  pairs.push_back(layout.interleaved ? two : half);
  angles.push_back(layout.interleaved ? half : one);
  angles.push_back(layout.interleaved ? one : half);
  Value paired = reshape(part, pairs);
  Value x1 = sliceAlong(paired, pairAxis, 0, 1);
  Value x2 = sliceAlong(paired, pairAxis, 1, 1);
  Value c = reshape(cos, angles), s = reshape(sin, angles);
  auto x1c = broadcast<MulOp>(x1, c), x2s = broadcast<MulOp>(x2, s);
  auto x1s = broadcast<MulOp>(x1, s), x2c = broadcast<MulOp>(x2, c);
  if (failed(x1c) || failed(x2s) || failed(x1s) || failed(x2c))
    return failure();
  auto real = broadcast<SubOp>(*x1c, *x2s), imag = broadcast<AddOp>(*x1s, *x2c);
  if (failed(real) || failed(imag))
    return failure();
  Value joined = ConcatOp::create(b, loc, typeOf(paired),
                                  ValueRange{*real, *imag}, pairAxis);
  Value result = reshape(joined, dimsOf(part));
  if (layout.rotaryDim < layout.headSize) {
    Value passed = sliceAlong(byHead, 3, layout.rotaryDim,
                              layout.headSize - layout.rotaryDim);
    result =
        ConcatOp::create(b, loc, typeOf(byHead), ValueRange{result, passed}, 3);
  }
  return reshape(result, shape);
}

namespace {

struct RotaryConverter : FusedOpConverter {
  using FusedOpConverter::FusedOpConverter;

  /// Rotates `x` (see FusedOpConverter::rotated) and binds the result.
  LogicalResult rotate(Value x, Value cos, Value sin,
                       const RotaryLayout &layout) {
    auto result = rotated(x, cos, sin, layout);
    if (failed(result))
      return failure();
    return output(*result);
  }

  /// The input, 3-D or 4-D, of floats; batch and sequence may be symbolic,
  /// the features (heads and head size) must not.
  FailureOr<Value> rotaryInput() {
    auto x = requiredFloat(0, "input");
    if (failed(x))
      return failure();
    RankedTensorType type = typeOf(*x);
    int64_t rank = type.getRank();
    if (rank != 3 && rank != 4)
      return error() << "expected a 3-D or 4-D input, got rank " << rank;
    if (type.isDynamicDim(rank - 1) || (rank == 4 && type.isDynamicDim(1)))
      return error() << "the heads and head size (or hidden size) must be "
                        "known at compile time, got "
                     << type;
    return x;
  }

  /// Checks that the cos and sin caches have the input's element type, one
  /// shape, and rank `rank`; `form` describes that shape in the message.
  LogicalResult checkCaches(Value x, Value cos, Value sin, int64_t rank,
                            StringRef form) {
    Type et = typeOf(x).getElementType();
    if (failed(expectType(cos, "cos_cache", et)) ||
        failed(expectType(sin, "sin_cache", et, typeOf(cos).getShape())))
      return failure();
    if (typeOf(cos).getRank() != rank)
      return error() << "cos_cache must be " << rank << "-D " << form
                     << ", got rank " << typeOf(cos).getRank();
    return success();
  }

  /// Fails unless the caches' last dim is half the rotary dim.
  LogicalResult checkCacheWidth(Value cos, int64_t rotaryDim) {
    int64_t width = typeOf(cos).getShape().back();
    if (width != rotaryDim / 2)
      return error() << "cos_cache has " << width
                     << " columns, expected rotary_embedding_dim / 2 = "
                     << rotaryDim / 2;
    return success();
  }

  /// Fails unless `rotaryDim` is even and in (0, headSize].
  LogicalResult checkRotaryDim(int64_t rotaryDim, int64_t headSize) {
    if (rotaryDim <= 0 || rotaryDim > headSize || rotaryDim % 2 != 0)
      return error() << "rotary_embedding_dim " << rotaryDim
                     << " must be even and in (0, head size " << headSize
                     << "]";
    return success();
  }

  /// Rows `ids` of `cache` ([M, half] -> [ids..., half]).
  FailureOr<Value> gatherRows(Value cache, Value ids) {
    auto type = inferGatherType(loc, typeOf(cache), typeOf(ids), 0);
    if (failed(type))
      return failure();
    return GatherOp::create(b, loc, *type, cache, ids, 0).getResult();
  }

  /// ONNX RotaryEmbedding-23: inputs X, cos_cache, sin_cache and optional
  /// position_ids; without position_ids the caches are per token already.
  LogicalResult convertOnnx() {
    auto x = rotaryInput();
    auto cos = requiredFloat(1, "cos_cache"),
         sin = requiredFloat(2, "sin_cache");
    if (failed(x) || failed(cos) || failed(sin))
      return failure();
    ArrayRef<int64_t> shape = typeOf(*x).getShape();
    RotaryLayout layout{0, 0, 0, intAttr("interleaved", 0) != 0};
    if (shape.size() == 4) {
      layout.numHeads = shape[1];
      layout.headSize = shape[3];
    } else {
      layout.numHeads = intAttr("num_heads", 0);
      if (layout.numHeads <= 0 || shape[2] % layout.numHeads != 0)
        return error() << "a 3-D input needs num_heads dividing its hidden "
                          "size "
                       << shape[2] << ", got " << layout.numHeads;
      layout.headSize = shape[2] / layout.numHeads;
    }
    layout.rotaryDim = intAttr("rotary_embedding_dim", 0);
    if (layout.rotaryDim == 0)
      layout.rotaryDim = layout.headSize;
    if (failed(checkRotaryDim(layout.rotaryDim, layout.headSize)))
      return failure();

    SymbolicShape sizes = dimsOf(*x);
    DimExpr batch = sizes[0], sequence = sizes[shape.size() == 4 ? 2 : 1];
    DimExpr one = DimExpr::constant(1);
    Value ids = importer.input(node, 3);
    StringRef form = ids ? "(max_position, rotary_embedding_dim / 2) with "
                           "position_ids"
                         : "(batch, sequence, rotary_embedding_dim / 2) "
                           "without position_ids";
    if (failed(checkCaches(*x, *cos, *sin, ids ? 2 : 3, form)) ||
        failed(checkCacheWidth(*cos, layout.rotaryDim)))
      return failure();
    if (!ids) {
      SymbolicShape perToken = dimsOf(*cos);
      if ((perToken[0] != one && perToken[0] != batch) ||
          perToken[1] != sequence)
        return error() << "without position_ids, cos_cache must be (batch, "
                          "sequence, rotary_embedding_dim / 2)";
      return rotate(*x, *cos, *sin, layout);
    }
    if (failed(expectType(ids, "position_ids", b.getI64Type())))
      return failure();
    SymbolicShape idShape = dimsOf(ids);
    if (idShape.size() != 2 || (idShape[0] != one && idShape[0] != batch) ||
        idShape[1] != sequence)
      return error() << "position_ids must be (batch, sequence)";
    auto c = gatherRows(*cos, ids), s = gatherRows(*sin, ids);
    if (failed(c) || failed(s))
      return failure();
    return rotate(*x, *c, *s, layout);
  }

  /// The token positions of com.microsoft RotaryEmbedding as a [1 or B, S]
  /// index tensor: position_ids is a per-token (B, S) tensor, or one
  /// element, the position of the first token, the others following it.
  FailureOr<Value> microsoftPositions(Value ids, const DimExpr &batch,
                                      const DimExpr &sequence,
                                      int64_t cacheRows) {
    if (failed(expectType(ids, "position_ids", b.getI64Type())))
      return failure();
    SymbolicShape shape = dimsOf(ids);
    if (shape.size() == 2 && shape[0] == batch && shape[1] == sequence)
      return ids;
    RankedTensorType idType = typeOf(ids);
    if (shape.size() > 1 || !idType.hasStaticShape() ||
        idType.getNumElements() != 1)
      return error() << "position_ids must be (batch, sequence) or hold one "
                        "element";
    auto lengths = sequence.bounds(importer.dimRanges());
    if (!lengths)
      return error() << "sequence length " << sequence.str()
                     << " has no range";
    int64_t longest = lengths->second;
    if (longest > cacheRows)
      return error() << "sequence length " << sequence.str()
                     << (sequence.isConstant() ? "" : " at its largest ")
                     << (sequence.isConstant() ? "" : std::to_string(longest))
                     << " exceeds the " << cacheRows << " rows of cos_cache";
    // The offsets 0 .. S - 1 are a constant of the longest sequence, cut to
    // a symbolic one; its size is bounded as the importer bounds Range.
    if (longest > (int64_t(1) << 20))
      return error() << "sequence length " << longest
                     << " is more than the 2^20 positions Kiln makes a "
                        "constant of";
    SmallVector<int64_t> steps;
    for (int64_t i = 0; i < longest; ++i)
      steps.push_back(i);
    auto stepType = RankedTensorType::get({1, longest}, b.getI64Type());
    Value offsets =
        ConstantOp::create(b, loc,
                           cast<ElementsAttr>(DenseElementsAttr::get(
                               stepType, ArrayRef<int64_t>(steps))));
    if (!sequence.isConstant())
      offsets = SliceOp::create(
          b, loc,
          symbolicTensorType({DimExpr::constant(1), sequence},
                             b.getI64Type()),
          offsets, ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{1, 1});
    return broadcast<AddOp>(reshape(ids, {1, 1}), offsets);
  }

  /// com.microsoft RotaryEmbedding: inputs input, position_ids, cos_cache,
  /// sin_cache; caches (max_sequence_length, rotary dim / 2). Without
  /// rotary_embedding_dim the head size is twice the caches' width. `scale`
  /// is accepted and, as by onnxruntime, not applied: it only matters when
  /// the caches are regenerated for longer sequences, which no onnxruntime
  /// kernel does.
  LogicalResult convertMicrosoft() {
    if (int64_t packed = intAttr("is_packed_batching", 0))
      return error() << "is_packed_batching = " << packed
                     << " (ragged batches) is not supported";
    auto x = rotaryInput();
    Value ids = importer.input(node, 1);
    auto cos = requiredFloat(2, "cos_cache"),
         sin = requiredFloat(3, "sin_cache");
    if (failed(x) || failed(cos) || failed(sin))
      return failure();
    if (!ids)
      return error() << "missing required input 1 (position_ids)";
    if (failed(checkCaches(*x, *cos, *sin, 2,
                           "(max_sequence_length, rotary_embedding_dim / 2)")))
      return failure();
    ArrayRef<int64_t> shape = typeOf(*x).getShape();
    bool headsFirst = shape.size() == 4;
    // Dims come from the model: products are checked.
    std::optional<int64_t> hidden =
        headsFirst ? llvm::checkedMul(shape[1], shape[3]) : shape[2];
    std::optional<int64_t> cacheHead =
        llvm::checkedMul<int64_t>(2, typeOf(*cos).getDimSize(1));
    if (!hidden || !cacheHead)
      return error() << "the input's or the caches' dims overflow int64";
    RotaryLayout layout{intAttr("num_heads", 0), 0,
                        intAttr("rotary_embedding_dim", 0),
                        intAttr("interleaved", 0) != 0};
    bool headFromCache = layout.rotaryDim == 0;
    if (!headFromCache) {
      if (layout.numHeads <= 0 || *hidden % layout.numHeads != 0)
        return error() << "rotary_embedding_dim needs num_heads dividing the "
                          "hidden size "
                       << *hidden << ", got " << layout.numHeads;
      layout.headSize = *hidden / layout.numHeads;
    } else {
      layout.headSize = *cacheHead;
      layout.rotaryDim = layout.headSize;
      if (layout.numHeads <= 0 && layout.headSize > 0)
        layout.numHeads = *hidden / layout.headSize;
    }
    // A 4-D input fixes both; a 3-D one only their product (compared by
    // division, which cannot overflow).
    bool fits = layout.headSize > 0 && *hidden % layout.headSize == 0 &&
                *hidden / layout.headSize == layout.numHeads &&
                (!headsFirst || layout.headSize == shape[3]);
    if (!fits)
      return error() << "num_heads " << layout.numHeads << " and head size "
                     << layout.headSize
                     << (headFromCache ? " (twice the cos_cache width)" : "")
                     << " do not fit the input's "
                     << (headsFirst ? "heads and head size" : "hidden size");
    if (failed(checkRotaryDim(layout.rotaryDim, layout.headSize)) ||
        failed(checkCacheWidth(*cos, layout.rotaryDim)))
      return failure();
    SymbolicShape sizes = dimsOf(*x);
    DimExpr batch = sizes[0], sequence = sizes[headsFirst ? 2 : 1];
    auto positions =
        microsoftPositions(ids, batch, sequence, typeOf(*cos).getDimSize(0));
    if (failed(positions))
      return failure();
    auto c = gatherRows(*cos, *positions), s = gatherRows(*sin, *positions);
    if (failed(c) || failed(s))
      return failure();
    return rotate(*x, *c, *s, layout);
  }
};

} // namespace

ArrayRef<OpConversion> getRotaryEmbeddingConversions() {
  using C = RotaryConverter;
  static const OpConversion table[] = {
      {"", "RotaryEmbedding", convertWith<C, &C::convertOnnx>},
      {kMicrosoftDomain, "RotaryEmbedding", convertWith<C, &C::convertMicrosoft>},
  };
  return table;
}

} // namespace kiln
