//===- ConvertFusedOps.cpp - fused forms written as one node --------------===//
//
// ONNX RotaryEmbedding and the com.microsoft normalization, GELU, rotary and
// embedding ops are written out as the kiln ops they stand for; kiln-fuse
// groups them again. The semantics are onnxruntime's CPU kernels, the oracle
// of these ops: fp16 and bf16 inputs are normalized with fp32 sums and
// statistics, as there. Forms those kernels reject, or whose result they
// leave undefined, are rejected here with the node and the feature named.
// RotaryEmbedding is in ConvertRotaryEmbedding.cpp.
//
//===----------------------------------------------------------------------===//

#include "FusedOpConverter.h"
#include "GraphImporter.h"
#include "OpRegistry.h"
#include "NormalizationBuilder.h"

#include "kiln/Dialect/Kiln/QuantizedActivations.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace kiln {

FailureOr<RMSNormalized> FusedOpConverter::rmsNormalize(Value x, Value scale,
                                                        int64_t axis,
                                                        float epsilon,
                                                        bool wantsInv) {
  RankedTensorType type = typeOf(x);
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < type.getRank(); ++d)
    axes.push_back(d);
  auto statType = inferReduceType(loc, type, axes, true);
  if (failed(statType))
    return failure();
  Type et = type.getElementType();
  Value squared = MulOp::create(b, loc, type, x, x);
  Value meanSquare =
      ReduceMeanOp::create(b, loc, *statType, squared, axes, true);
  Value shifted = AddOp::create(b, loc, *statType, meanSquare,
                                importer.scalar(loc, et, epsilon));
  Value rms = SqrtOp::create(b, loc, shifted);
  Value normalized = DivOp::create(b, loc, type, x, rms);
  auto scaled = broadcast<MulOp>(normalized, scale);
  if (failed(scaled))
    return failure();
  if (typeOf(*scaled) != type)
    return error() << "scale does not broadcast to the normalized dims";
  Value inv;
  if (wantsInv)
    inv = DivOp::create(b, loc, *statType, importer.scalar(loc, et, 1.0), rms);
  return RMSNormalized{*scaled, inv};
}

namespace {

/// The default epsilon of onnxruntime's Skip*, Embed* normalizations.
constexpr float kContribEpsilon = 1e-12f;

struct FusedNodeConverter : FusedOpConverter {
  using FusedOpConverter::FusedOpConverter;

  /// The epsilon attribute (`fallback` when absent), which must not be
  /// negative.
  FailureOr<float> epsilonAttr(float fallback) {
    float epsilon = floatAttr("epsilon", fallback);
    if (!(epsilon >= 0))
      return error() << "epsilon must be >= 0, got " << epsilon;
    return epsilon;
  }

  /// SimplifiedLayerNormalization (onnxruntime, default domain): RMSNorm
  /// with fp32 statistics; the result has the scale's element type.
  LogicalResult convertSimplifiedLayerNorm() {
    auto x = requiredFloat(0, "X"), scale = requiredFloat(1, "scale");
    if (failed(x) || failed(scale))
      return failure();
    auto ax = axis(intAttr("axis", -1), typeOf(*x).getRank());
    auto epsilon = epsilonAttr(1e-5f);
    if (failed(ax) || failed(epsilon))
      return failure();
    int64_t stash = intAttr("stash_type", 1);
    if (stash != 1)
      return error() << "stash_type " << stash
                     << " is not supported (only 1, float)";
    // Casts are made in turn: argument evaluation order is unspecified.
    Value wideX = castTo(*x, wideType());
    Value wideScale = castTo(*scale, wideType());
    auto result = rmsNormalize(wideX, wideScale, *ax, *epsilon, wantsOutput(1));
    if (failed(result))
      return failure();
    (void)output(castTo(result->y, typeOf(*scale).getElementType()));
    return output(result->invStdDev, 1);
  }

  /// Checks the skip and the per-channel inputs of the Skip*Normalization
  /// ops against the input `x`.
  LogicalResult checkSkipInputs(Value x, Value skip,
                                ArrayRef<std::pair<Value, StringRef>> vectors) {
    RankedTensorType xType = typeOf(x);
    int64_t rank = xType.getRank();
    if (rank != 2 && rank != 3)
      return error() << "expected a 2-D or 3-D input, got rank " << rank;
    Type et = xType.getElementType();
    if (failed(expectType(skip, "skip", et)))
      return failure();
    // onnxruntime repeats a smaller skip over the batch: (1, S, H) or (S, H).
    // Sizes compare as expressions, so a symbolic sequence matches itself.
    auto skipSizes = sizesOfValue(skip), xSizes = sizesOfValue(x);
    if (failed(skipSizes) || failed(xSizes))
      return failure();
    ArrayRef<DimExpr> skipShape = *skipSizes, xShape = *xSizes;
    bool fits = skipShape.size() >= 2 && skipShape.size() <= xShape.size() &&
                skipShape.take_back(2) == xShape.take_back(2) &&
                llvm::all_of(skipShape.drop_back(2), [&](const DimExpr &d) {
                  return d == DimExpr::constant(1) || d == xShape[0];
                });
    if (!fits)
      return error() << "skip must have the input's shape, or its last two "
                        "dims with leading 1s";
    int64_t hidden = xType.getShape().back();
    if (ShapedType::isDynamic(hidden))
      return error() << "the hidden size (the last dim) must be known at "
                        "compile time, got "
                     << xShape.back().str();
    for (auto [value, name] : vectors)
      if (value && failed(expectType(value, name, et, ArrayRef(hidden))))
        return failure();
    return success();
  }

  /// SkipLayerNormalization and SkipSimplifiedLayerNormalization: the
  /// normalization of `input + skip (+ bias)` over the last dim.
  template <bool simplified>
  LogicalResult convertSkipNorm() {
    auto x = requiredFloat(0, "input");
    auto skip = requiredFloat(1, "skip");
    auto gamma = requiredFloat(2, "gamma");
    if (failed(x) || failed(skip) || failed(gamma))
      return failure();
    Value beta = simplified ? Value() : importer.input(node, 3);
    Value bias = importer.input(node, simplified ? 3 : 4);
    if (failed(checkSkipInputs(
            *x, *skip, {{*gamma, "gamma"}, {beta, "beta"}, {bias, "bias"}})))
      return failure();
    auto epsilon = epsilonAttr(kContribEpsilon);
    if (failed(epsilon))
      return failure();
    if (simplified && wantsOutput(1))
      return error() << "output 1 (mean) is not supported: the simplified "
                        "form has no mean";
    Type et = typeOf(*x).getElementType(), wide = wideType();
    Value wideX = castTo(*x, wide);
    Value wideSkip = castTo(*skip, wide);
    Value sum = AddOp::create(b, loc, typeOf(wideX), wideX, wideSkip);
    if (bias)
      sum = AddOp::create(b, loc, typeOf(sum), sum, castTo(bias, wide));
    Value wideGamma = castTo(*gamma, wide);
    int64_t axis = typeOf(sum).getRank() - 1;
    Value y, mean, invStdDev;
    if (simplified) {
      auto result =
          rmsNormalize(sum, wideGamma, axis, *epsilon, wantsOutput(2));
      if (failed(result))
        return failure();
      y = result->y;
      invStdDev = result->invStdDev;
    } else {
      Value wideBeta = beta ? castTo(beta, wide) : Value();
      y = LayerNormOp::create(b, loc, typeOf(sum), sum, wideGamma, wideBeta,
                              b.getI64IntegerAttr(axis),
                              b.getF32FloatAttr(*epsilon));
      if (wantsOutput(1) || wantsOutput(2)) {
        auto stats =
            buildLayerNormStatistics(importer, loc, sum, axis, *epsilon);
        if (failed(stats))
          return failure();
        mean = stats->mean;
        invStdDev = stats->invStdDev;
      }
    }
    (void)output(castTo(y, et));
    (void)output(mean, 1);
    (void)output(invStdDev, 2);
    if (wantsOutput(3))
      (void)output(castTo(sum, et), 3);
    return success();
  }

  /// `x + bias` where the optional input `biasIndex` is given.
  FailureOr<Value> withBias(Value x, int biasIndex) {
    Value bias = importer.input(node, biasIndex);
    if (!bias)
      return x;
    if (failed(expectType(bias, "bias", typeOf(x).getElementType())))
      return failure();
    auto sum = broadcast<AddOp>(x, bias);
    if (succeeded(sum) && typeOf(*sum) != typeOf(x))
      return error() << "bias does not broadcast to the input's shape";
    return sum;
  }

  /// Gelu (erf form), BiasGelu (erf form of A + B) and FastGelu (tanh form
  /// of X + bias?).
  template <GeluApproximation form>
  LogicalResult convertGelu() {
    auto x = requiredFloat(0, "X");
    if (failed(x))
      return failure();
    StringRef op = node.op_type();
    if (op == "BiasGelu" && !importer.input(node, 1))
      return error() << "missing required input 1 (B)";
    auto biased = op == "Gelu" ? FailureOr<Value>(*x) : withBias(*x, 1);
    if (failed(biased))
      return failure();
    return output(GeluOp::create(b, loc, typeOf(*biased), *biased, form));
  }

  /// QuickGelu: `x * sigmoid(alpha * x)`.
  LogicalResult convertQuickGelu() {
    auto x = requiredFloat(0, "X");
    if (failed(x))
      return failure();
    float alpha = floatAttr("alpha", 1.702f);
    Value scaled = *x;
    if (alpha != 1.0f)
      scaled = MulOp::create(
          b, loc, typeOf(*x), *x,
          importer.scalar(loc, typeOf(*x).getElementType(), alpha));
    Value gate = SigmoidOp::create(b, loc, scaled);
    return output(MulOp::create(b, loc, typeOf(*x), *x, gate));
  }

  /// Input `i`, an int32 tensor of `shape` when present.
  FailureOr<Value> optionalIds(int i, StringRef name,
                                ArrayRef<DimExpr> shape) {
    Value ids = importer.input(node, i);
    if (!ids)
      return ids;
    if (failed(expectType(ids, name, b.getI32Type())))
      return failure();
    auto sizes = sizesOfValue(ids);
    if (failed(sizes))
      return failure();
    if (!llvm::equal(*sizes, shape)) {
      auto list = [](ArrayRef<DimExpr> dims) {
        std::string text;
        for (const DimExpr &d : dims)
          text += (text.empty() ? "" : ",") + d.str();
        return text;
      };
      return error() << name << " must have shape [" << list(shape)
                     << "], got [" << list(*sizes) << "]";
    }
    return ids;
  }

  /// Whether the tables, gamma and beta are 8-bit values, each with a
  /// scale and a zero point (QEmbedLayerNormalization).
  bool quantizedTables = false;

  /// Table input `i` (an embedding table, gamma or beta): floats of `et`,
  /// or with quantizedTables 8-bit integers, which dequantizedAt reads.
  FailureOr<Value> table(int i, StringRef name, Type et,
                         ArrayRef<int64_t> shape) {
    auto given = quantizedTables ? required(i) : requiredFloat(i, name);
    if (failed(given))
      return failure();
    if (quantizedTables && !holdsBytes(*given))
      return error() << name << " must be 8-bit integers, got "
                     << given->getType();
    if (failed(expectType(
            *given, name,
            quantizedTables ? typeOf(*given).getElementType() : et, shape)))
      return failure();
    return given;
  }

  /// `x`, values read from table input `i`: as they are, or with
  /// quantizedTables `(x - zero_point) * scale` in fp32 (inputs i + 6 and
  /// i + 11, one value each), as onnxruntime's QEmbedLayerNorm kernel
  /// dequantizes them.
  FailureOr<Value> dequantizedAt(int i, StringRef name, Value x) {
    if (!quantizedTables)
      return x;
    auto scale = required(i + 6), zero = required(i + 11);
    if (failed(scale) || failed(zero))
      return failure();
    Type f32 = b.getF32Type();
    if (typeOf(*scale).getElementType() != f32 || !holdsOneValue(*scale) ||
        typeOf(*zero).getElementType() != typeOf(x).getElementType() ||
        !holdsOneValue(*zero))
      return error() << name
                     << "'s scale and zero point must be one float32 value "
                        "and one value of its type, got "
                     << scale->getType() << " and " << zero->getType();
    Value scalarZero = castTo(reshape(*zero, ArrayRef<int64_t>{}), f32);
    auto centered = broadcast<SubOp>(castTo(x, f32), scalarZero);
    if (failed(centered))
      return failure();
    return broadcast<MulOp>(*centered, reshape(*scale, ArrayRef<int64_t>{}));
  }

  /// Rows `ids` of the 2-D table input `i` (hidden size `hidden`).
  FailureOr<Value> lookup(int i, StringRef name, Value ids, Type et,
                          int64_t hidden) {
    Value given = importer.input(node, i);
    if (given && typeOf(given).getRank() != 2)
      return error() << name << " must be 2-D";
    int64_t rows = given ? typeOf(given).getDimSize(0) : 0;
    auto table = this->table(i, name, et, ArrayRef<int64_t>{rows, hidden});
    if (failed(table))
      return failure();
    auto type = inferGatherType(loc, typeOf(*table), typeOf(ids), 0);
    if (failed(type))
      return failure();
    return dequantizedAt(
        i, name, GatherOp::create(b, loc, *type, *table, ids, 0).getResult());
  }

  /// The per-batch count of mask entries equal to 1, as int32 (onnxruntime's
  /// mask_index): a reduction over the sequence in fp32, exact for sequences
  /// shorter than 2^24, one row kernel (a product with a ones vector would
  /// be a library call and a cast).
  Value maskIndex(Value mask) {
    RankedTensorType maskType = typeOf(mask);
    Value one = importer.scalar(loc, b.getI32Type(), 1);
    Value isOne =
        EqualOp::create(b, loc, maskType.clone(b.getI1Type()), mask, one);
    Value counts = ReduceSumOp::create(b, loc, castTo(isOne, b.getF32Type()),
                                       ArrayRef<int64_t>{1},
                                       /*keepdims=*/false);
    return castTo(counts, b.getI32Type());
  }

  /// EmbedLayerNormalization: LayerNorm of the sum of word, position and
  /// (optional) segment embeddings, summed in fp32 like the statistics;
  /// mask_index counts the mask's ones per batch (zeros without a mask);
  /// embedding_sum is the sum itself.
  /// QEmbedLayerNormalization (onnxruntime's quantize_dynamic over its
  /// fused embedding): EmbedLayerNormalization over 8-bit tables, gamma and
  /// beta, each dequantized with its one scale and zero point (inputs 8 to
  /// 17) where it is read; positions 0 .. sequence - 1; outputs the norm
  /// and mask_index.
  LogicalResult convertQEmbedLayerNorm() {
    quantizedTables = true;
    return convertEmbedLayerNorm();
  }

  LogicalResult convertEmbedLayerNorm() {
    Value ids = importer.input(node, 0);
    if (!ids)
      return error() << "missing required input 0 (input_ids)";
    if (typeOf(ids).getRank() != 2)
      return error() << "input_ids must be 2-D (batch, sequence)";
    auto tokenSizes = sizesOfValue(ids);
    if (failed(tokenSizes) || failed(expectType(ids, "input_ids", b.getI32Type())))
      return failure();
    SymbolicShape tokens = *tokenSizes;
    auto word =
        quantizedTables ? required(2) : requiredFloat(2, "word_embedding");
    auto segmentIds = optionalIds(1, "segment_ids", tokens);
    auto mask = optionalIds(7, "mask", tokens);
    auto epsilon = epsilonAttr(kContribEpsilon);
    if (failed(word) || failed(segmentIds) || failed(mask) || failed(epsilon))
      return failure();
    if (typeOf(*word).getRank() != 2)
      return error() << "word_embedding must be 2-D";
    // The quantized kernel computes in float32.
    Type et = quantizedTables ? b.getF32Type() : typeOf(*word).getElementType(),
         wide = wideType();
    int64_t hidden = typeOf(*word).getDimSize(1);
    auto gammaTable = table(5, "gamma", et, ArrayRef(hidden));
    auto betaTable = table(6, "beta", et, ArrayRef(hidden));
    if (failed(gammaTable) || failed(betaTable))
      return failure();
    auto gamma = dequantizedAt(5, "gamma", *gammaTable);
    auto beta = dequantizedAt(6, "beta", *betaTable);
    if (failed(gamma) || failed(beta))
      return failure();
    if (bool(*segmentIds) != bool(importer.input(node, 4)))
      return error() << "segment_ids and segment_embedding must be given "
                        "together";

    auto words = lookup(2, "word_embedding", ids, et, hidden);
    auto positions = positionEmbeddings(tokens, et, hidden);
    if (failed(words) || failed(positions))
      return failure();
    Value wideWords = castTo(*words, wide);
    auto sum = broadcast<AddOp>(wideWords, castTo(*positions, wide));
    if (failed(sum))
      return failure();
    if (*segmentIds) {
      auto segments = lookup(4, "segment_embedding", *segmentIds, et, hidden);
      if (failed(segments))
        return failure();
      sum = broadcast<AddOp>(*sum, castTo(*segments, wide));
      if (failed(sum))
        return failure();
    }
    Value wideGamma = castTo(*gamma, wide);
    Value wideBeta = castTo(*beta, wide);
    Value normalized = LayerNormOp::create(
        b, loc, typeOf(*sum), *sum, wideGamma, wideBeta, b.getI64IntegerAttr(2),
        b.getF32FloatAttr(*epsilon));
    (void)output(castTo(normalized, et));
    if (wantsOutput(1))
      (void)output(*mask ? maskIndex(*mask) : zeroCounts(tokens[0]), 1);
    if (wantsOutput(2) && !quantizedTables)
      (void)output(castTo(*sum, et), 2);
    return success();
  }

  /// An int32 vector of `size` zeros.
  Value zeroCounts(const DimExpr &size) {
    if (std::optional<int64_t> fixed = size.getConstant()) {
      auto type = RankedTensorType::get({*fixed}, b.getI32Type());
      return ConstantOp::create(b, loc,
                                cast<ElementsAttr>(DenseElementsAttr::get(
                                    type, b.getI32IntegerAttr(0))));
    }
    Value zero = reshape(importer.scalar(loc, b.getI32Type(), 0.0),
                         ArrayRef<int64_t>{1});
    return ExpandOp::create(b, loc, symbolicTensorType({size}, b.getI32Type()),
                            zero);
  }

  /// The position embedding of every token: rows position_ids (input 8,
  /// (1 or batch, sequence)) of the table, else rows 0 .. sequence - 1.
  FailureOr<Value> positionEmbeddings(ArrayRef<DimExpr> tokens, Type et,
                                      int64_t hidden) {
    // QEmbedLayerNormalization has no position_ids (its input 8 is a
    // scale).
    if (Value ids = quantizedTables ? Value() : importer.input(node, 8)) {
      auto sizes = sizesOfValue(ids);
      if (failed(sizes))
        return failure();
      const SymbolicShape &shape = *sizes;
      if (shape.size() != 2 ||
          (shape[0] != DimExpr::constant(1) && shape[0] != tokens[0]) ||
          shape[1] != tokens[1])
        return error() << "position_ids must have shape (1 or batch, "
                          "sequence)";
      if (failed(expectType(ids, "position_ids", b.getI32Type())))
        return failure();
      return lookup(3, "position_embedding", ids, et, hidden);
    }
    Value given = importer.input(node, 3);
    if (given && typeOf(given).getRank() != 2)
      return error() << "position_embedding must be 2-D";
    int64_t rows = given ? typeOf(given).getDimSize(0) : 0;
    auto table = this->table(3, "position_embedding", et,
                             ArrayRef<int64_t>{rows, hidden});
    if (failed(table))
      return failure();
    auto lengths = tokens[1].bounds(importer.dimRanges());
    if (!lengths)
      return error() << "sequence length " << tokens[1].str()
                     << " has no range";
    if (rows < lengths->second)
      return error() << "sequence length " << tokens[1].str()
                     << (tokens[1].isConstant()
                             ? ""
                             : " at its largest " +
                                   std::to_string(lengths->second))
                     << " exceeds the " << rows
                     << " rows of position_embedding";
    Type stored = typeOf(*table).getElementType();
    Value rowsRead =
        tokens[1].getConstant()
            ? sliceAlong(*table, 0, 0, *tokens[1].getConstant())
            : SliceOp::create(
                  b, loc,
                  symbolicTensorType({tokens[1], DimExpr::constant(hidden)},
                                     stored),
                  *table, ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{1, 1})
                  .getResult();
    return dequantizedAt(3, "position_embedding", rowsRead);
  }
};

} // namespace

ArrayRef<OpConversion> getFusedConversions() {
  using C = FusedNodeConverter;
  static const OpConversion table[] = {
      {"", "SimplifiedLayerNormalization",
       convertWith<C, &C::convertSimplifiedLayerNorm>},
      {kMicrosoftDomain, "SkipLayerNormalization",
       convertWith<C, &C::convertSkipNorm</*simplified=*/false>>},
      {kMicrosoftDomain, "SkipSimplifiedLayerNormalization",
       convertWith<C, &C::convertSkipNorm</*simplified=*/true>>},
      {kMicrosoftDomain, "Gelu",
       convertWith<C, &C::convertGelu<GeluApproximation::none>>},
      {kMicrosoftDomain, "BiasGelu",
       convertWith<C, &C::convertGelu<GeluApproximation::none>>},
      {kMicrosoftDomain, "FastGelu",
       convertWith<C, &C::convertGelu<GeluApproximation::tanh>>},
      {kMicrosoftDomain, "QuickGelu", convertWith<C, &C::convertQuickGelu>},
      {kMicrosoftDomain, "EmbedLayerNormalization",
       convertWith<C, &C::convertEmbedLayerNorm>},
      {kMicrosoftDomain, "QEmbedLayerNormalization",
       convertWith<C, &C::convertQEmbedLayerNorm>},
  };
  return table;
}

} // namespace kiln
