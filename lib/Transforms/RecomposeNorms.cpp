//===- RecomposeNorms.cpp - LayerNorm and RMSNorm from their spelled forms ===//
//
// kiln-recompose's norm patterns. Exporters write LayerNorm before opset 17
// and RMSNorm always as reductions and elementwise ops; as one kiln op each,
// kiln-fuse makes a norm one row kernel (a LayerNorm also a 16-bit GEMM's
// epilogue), where the spelled form is a reduction kernel and an
// elementwise kernel.
//
//===----------------------------------------------------------------------===//

#include "RecomposePatterns.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/TensorNames.h"

using namespace mlir;
using namespace kiln;

/// Whether `v`, of a float tensor type, is a parameter that broadcasts to
/// `normalized` (a norm's static trailing dims) without growing them, with
/// element type `et`.
static bool fitsNormalized(Value v, ArrayRef<int64_t> normalized, Type et) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getRank() <= static_cast<int64_t>(normalized.size()) &&
         t.getElementType() == et &&
         llvm::equal(t.getShape(), normalized.take_back(t.getRank()));
}

/// The operand of binary `op` that is not `v`.
static Value otherOperand(Operation *op, Value v) {
  return op->getOperand(0) == v ? op->getOperand(1) : op->getOperand(0);
}

/// The one user of `v` when it has exactly one and it is an `OpTy`; null
/// otherwise.
template <typename OpTy> static OpTy soleUser(Value v) {
  return v.hasOneUse() ? dyn_cast<OpTy>(*v.getUsers().begin()) : OpTy();
}

/// A constant of ones of `type`: the scale of a norm written without one.
static Value ones(PatternRewriter &rewriter, Location loc,
                  RankedTensorType type) {
  return ConstantOp::create(
      rewriter, loc,
      cast<ElementsAttr>(DenseElementsAttr::get(
          type, rewriter.getFloatAttr(type.getElementType(), 1.0))));
}

/// True when `axes` are the trailing dims of a rank-`rank` tensor.
static bool areTrailingAxes(ArrayRef<int64_t> axes, int64_t rank) {
  if (axes.empty())
    return false;
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis !=
        rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i))
      return false;
  return true;
}

namespace {

/// LayerNorm as exporters before opset 17 write it:
///   d = x - mean(x); n = d / sqrt(mean(d^2) + eps); [n * gamma] [+ beta]
/// over the trailing axes, from the division out.
struct RecomposeLayerNorm : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp div,
                                PatternRewriter &rewriter) const override {
    auto centered = div.getLhs().getDefiningOp<SubOp>();
    auto sqrt = div.getRhs().getDefiningOp<SqrtOp>();
    if (!centered || !sqrt || !sqrt->hasOneUse())
      return rewriter.notifyMatchFailure(div, "not d / sqrt(...)");
    auto mean = centered.getRhs().getDefiningOp<ReduceMeanOp>();
    Value x = centered.getLhs();
    if (!mean || mean.getInput() != x || !mean.getKeepdims() ||
        !mean->hasOneUse() || x.getType() != centered.getType())
      return rewriter.notifyMatchFailure(div, "not x - mean(x)");
    auto type = cast<RankedTensorType>(x.getType());
    if (!areTrailingAxes(mean.getAxes(), type.getRank()))
      return rewriter.notifyMatchFailure(div, "not over trailing axes");
    auto shifted = sqrt.getInput().getDefiningOp<AddOp>();
    if (!shifted || !shifted->hasOneUse())
      return rewriter.notifyMatchFailure(div, "no epsilon");
    std::optional<double> epsilon = splatValue(shifted.getRhs());
    Value varianceValue = shifted.getLhs();
    if (!epsilon) {
      epsilon = splatValue(shifted.getLhs());
      varianceValue = shifted.getRhs();
    }
    auto variance = varianceValue.getDefiningOp<ReduceMeanOp>();
    if (!epsilon || !variance || !variance->hasOneUse() ||
        variance.getAxes() != mean.getAxes() || !variance.getKeepdims())
      return rewriter.notifyMatchFailure(div, "not mean(d^2) + eps");
    Operation *square = variance.getInput().getDefiningOp();
    bool isSquare =
        square && square->hasOneUse() &&
        ((isa<MulOp>(square) && square->getOperand(0) == centered.getResult() &&
          square->getOperand(1) == centered.getResult()) ||
         (isa<PowOp>(square) && square->getOperand(0) == centered.getResult() &&
          splatValue(square->getOperand(1)) == 2.0));
    // d feeds the square and the division, nothing else.
    if (!isSquare || !llvm::all_of(centered->getUsers(), [&](Operation *user) {
          return user == square || user == div.getOperation();
        }))
      return rewriter.notifyMatchFailure(div, "not d^2 of the same d");

    // Optional scale and shift that broadcast over the normalized dims only.
    int64_t axis = mean.getAxes().front();
    ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
    // Rows of a symbolic length stay a reduction: the norm's parameters
    // (and its ones) are constants of the row's shape.
    if (llvm::any_of(normalized, ShapedType::isDynamic))
      return rewriter.notifyMatchFailure(div, "normalizes symbolic dims");
    auto fits = [&](Value v) {
      return fitsNormalized(v, normalized, type.getElementType());
    };
    Operation *root = div;
    Value gamma, beta;
    if (div->hasOneUse())
      if (auto mul = dyn_cast<MulOp>(*div->getUsers().begin());
          mul && fits(otherOperand(mul, div.getResult())) &&
          mul.getType() == type) {
        gamma = otherOperand(mul, div.getResult());
        root = mul;
      }
    if (gamma && root->hasOneUse())
      if (auto add = dyn_cast<AddOp>(*root->getUsers().begin());
          add && fits(otherOperand(add, root->getResult(0))) &&
          add.getType() == type) {
        beta = otherOperand(add, root->getResult(0));
        root = add;
      }
    rewriter.setInsertionPoint(root);
    if (!gamma)
      gamma = ones(rewriter, div.getLoc(),
                   RankedTensorType::get(normalized, type.getElementType()));
    auto norm = LayerNormOp::create(
        rewriter,
        rewriter.getFusedLoc({mean.getLoc(), div.getLoc(), root->getLoc()}),
        type, x, gamma, beta, rewriter.getI64IntegerAttr(axis),
        rewriter.getF32FloatAttr(static_cast<float>(*epsilon)));
    copyTensorNames(root, norm);
    rewriter.replaceOp(root, norm.getResult());
    return success();
  }
};

/// RMSNorm as exporters and the importer spell it, from the mean square out:
///   s = mean(x * x | x ^ 2) + eps          over trailing axes, keepdims
///   n = x / sqrt(s) | x * reciprocal(sqrt(s)) | x * (1 / sqrt(s))
///   [n * gamma]
/// LLaMA's RMSNorm in a 16-bit export casts x to fp32 first and n back to
/// the 16-bit type before the scale; with x itself a widened 16-bit value,
/// that is one kiln.rms_norm of the 16-bit x, rounded once where the
/// spelled form rounds twice (within a 16-bit ulp). Where x is computed in
/// fp32, the cast and the scale stay after an fp32 norm, as written; so do
/// casts between other types, where one rounding would not be that close.
struct RecomposeRmsNorm : OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceMeanOp mean,
                                PatternRewriter &rewriter) const override {
    Operation *square = mean.getInput().getDefiningOp();
    if (!square || !square->hasOneUse() || !mean.getKeepdims())
      return rewriter.notifyMatchFailure(mean, "not mean(x^2), keepdims");
    Value x = square->getOperand(0);
    bool isSquare =
        (isa<MulOp>(square) && square->getOperand(1) == x) ||
        (isa<PowOp>(square) && splatValue(square->getOperand(1)) == 2.0);
    auto type = cast<RankedTensorType>(x.getType());
    if (!isSquare || !isa<FloatType>(type.getElementType()) ||
        !areTrailingAxes(mean.getAxes(), type.getRank()))
      return rewriter.notifyMatchFailure(mean, "not x^2 over trailing axes");
    // A centered x is LayerNorm's variance, RecomposeLayerNorm's to take.
    if (auto centered = x.getDefiningOp<SubOp>())
      if (auto center = centered.getRhs().getDefiningOp<ReduceMeanOp>();
          center && center.getInput() == centered.getLhs())
        return rewriter.notifyMatchFailure(mean, "LayerNorm's variance");
    // mean + eps, then its root.
    auto shifted = soleUser<AddOp>(mean.getResult());
    if (!shifted || shifted.getType() != mean.getType())
      return rewriter.notifyMatchFailure(mean, "no epsilon");
    std::optional<double> epsilon =
        splatValue(otherOperand(shifted, mean.getResult()));
    auto sqrt = soleUser<SqrtOp>(shifted.getResult());
    if (!epsilon || !sqrt)
      return rewriter.notifyMatchFailure(mean, "not sqrt(mean + eps)");
    // x divided by the root, or times its reciprocal.
    Operation *normalizing = nullptr;
    if (auto div = soleUser<DivOp>(sqrt.getResult());
        div && div.getLhs() == x && div.getRhs() == sqrt.getResult()) {
      normalizing = div;
    } else {
      Operation *inverse = sqrt.getResult().hasOneUse()
                               ? *sqrt.getResult().getUsers().begin()
                               : nullptr;
      auto oneOver = dyn_cast_or_null<DivOp>(inverse);
      bool inverts = isa_and_nonnull<ReciprocalOp>(inverse) ||
                     (oneOver && oneOver.getRhs() == sqrt.getResult() &&
                      splatValue(oneOver.getLhs()) == 1.0 &&
                      cast<RankedTensorType>(oneOver.getLhs().getType())
                              .getNumElements() == 1 &&
                      oneOver.getType() == sqrt.getType());
      auto times = inverts ? soleUser<MulOp>(inverse->getResult(0)) : MulOp();
      if (times && otherOperand(times, inverse->getResult(0)) == x)
        normalizing = times;
    }
    if (!normalizing || normalizing->getResult(0).getType() != type)
      return rewriter.notifyMatchFailure(mean, "not x / sqrt(...)");

    int64_t axis = mean.getAxes().front();
    ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
    // Rows of a symbolic length stay a reduction: a norm's scale (and its
    // ones) are constants of the row's shape.
    if (llvm::any_of(normalized, ShapedType::isDynamic))
      return rewriter.notifyMatchFailure(mean, "normalizes symbolic dims");

    // The scale, after a cast back to x's 16-bit source or at x's type.
    Value n = normalizing->getResult(0), input = x, gamma;
    Operation *root = normalizing;
    RankedTensorType resultType = type;
    if (auto narrow = soleUser<CastOp>(n)) {
      auto source = x.getDefiningOp<CastOp>();
      auto scaled = soleUser<MulOp>(narrow.getResult());
      Type narrowType = narrow.getType().getElementType();
      bool sixteenBit = type.getElementType().isF32() &&
                        (narrowType.isF16() || narrowType.isBF16());
      if (sixteenBit && source &&
          source.getInput().getType() == narrow.getType() && scaled &&
          fitsNormalized(otherOperand(scaled, narrow.getResult()), normalized,
                         narrowType) &&
          scaled.getType() == narrow.getType()) {
        input = source.getInput();
        gamma = otherOperand(scaled, narrow.getResult());
        root = scaled;
        resultType = narrow.getType();
      }
    } else if (auto scaled = soleUser<MulOp>(n);
               scaled && scaled.getType() == type &&
               fitsNormalized(otherOperand(scaled, n), normalized,
                              type.getElementType())) {
      gamma = otherOperand(scaled, n);
      root = scaled;
    }
    rewriter.setInsertionPoint(root);
    if (!gamma)
      gamma = ones(rewriter, mean.getLoc(),
                   RankedTensorType::get(normalized, type.getElementType()));
    auto norm = RmsNormOp::create(
        rewriter,
        rewriter.getFusedLoc(
            {mean.getLoc(), normalizing->getLoc(), root->getLoc()}),
        resultType, input, gamma, rewriter.getI64IntegerAttr(axis),
        rewriter.getF32FloatAttr(static_cast<float>(*epsilon)));
    copyTensorNames(root, norm);
    rewriter.replaceOp(root, norm.getResult());
    return success();
  }
};

/// An fp32 RMSNorm of widened 16-bit values, narrowed back to that type:
///   cast(rms_norm(cast(x), cast(gamma))) -> rms_norm(x, gamma)
/// onnxruntime's SimplifiedLayerNormalization as the importer spells it
/// (fp32 statistics, the result in the scale's type). Exact: kiln.rms_norm
/// computes in at least fp32 and rounds once, as the cast does. Only from
/// fp32 to 16 bits: an f64 norm narrowed to f32 would lose its f64
/// statistics (the kernel computes in the input's float type).
struct NarrowRmsNorm : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp narrow,
                                PatternRewriter &rewriter) const override {
    auto norm = narrow.getInput().getDefiningOp<RmsNormOp>();
    if (!norm || !norm->hasOneUse())
      return rewriter.notifyMatchFailure(narrow, "not a cast of one rms_norm");
    Type to = narrow.getType().getElementType();
    if (!norm.getType().getElementType().isF32() ||
        !(to.isF16() || to.isBF16()))
      return rewriter.notifyMatchFailure(narrow, "not fp32 to 16 bits");
    auto widened = [&](Value v) -> Value {
      auto cast = v.getDefiningOp<CastOp>();
      if (!cast || cast.getInput().getType() != cast.getType().clone(to))
        return {};
      return cast.getInput();
    };
    Value x = widened(norm.getInput()), gamma = widened(norm.getScale());
    if (!x || !gamma)
      return rewriter.notifyMatchFailure(narrow, "not of widened values");
    auto narrowNorm = RmsNormOp::create(
        rewriter, rewriter.getFusedLoc({norm.getLoc(), narrow.getLoc()}),
        narrow.getType(), x, gamma, norm.getAxisAttr(), norm.getEpsilonAttr());
    copyTensorNames(narrow, narrowNorm);
    rewriter.replaceOp(narrow, narrowNorm.getResult());
    return success();
  }
};

} // namespace

void kiln::populateRecomposeNormPatterns(RewritePatternSet &patterns) {
  patterns.add<RecomposeLayerNorm, RecomposeRmsNorm, NarrowRmsNorm>(
      patterns.getContext());
}
