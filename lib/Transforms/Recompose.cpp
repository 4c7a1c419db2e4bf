//===- Recompose.cpp - decomposed exporter forms back into kiln ops -------===//
//
// One generic matcher per pattern, on canonicalized IR; the ONNX importer
// writes its own Attention nodes in the same form, so they are matched too.
//
// Attention and GELU are here; the norms are in RecomposeNorms.cpp and
// dynamically quantized products in RecomposeQuantized.cpp. Why one
// file of this length: each matcher is a few dozen lines with its exporter
// forms written above it, and attention's helpers serve only attention.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "RecomposePatterns.h"

#include "kiln/ConstantData/HostTensor.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_KILNRECOMPOSEPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

std::optional<double> kiln::splatValue(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>().convertToDouble();
}

bool kiln::holdsOnlyOnes(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant || !isa<FloatType>(getElementTypeOrSelf(v.getType())))
    return false;
  FailureOr<HostTensor> values =
      HostTensor::fromElementsAttr(constant.getValue());
  if (failed(values))
    return false;
  for (int64_t i = 0, e = values->numElements(); i < e; ++i)
    if (values->getAsDouble(i) != 1.0)
      return false;
  return true;
}

namespace {

/// Peels `x * c`, `c * x` and `x / c` by one-element constants that do not
/// change x's shape (each with no other use) off `v`, multiplying `scale` by
/// them.
Value peelScale(Value v, double &scale) {
  auto isScalar = [](Value c, Value x, Operation *op) {
    auto type = cast<RankedTensorType>(c.getType());
    return splatValue(c) && type.getNumElements() == 1 &&
           op->getResult(0).getType() == x.getType();
  };
  while (Operation *op = v.getDefiningOp()) {
    if (op->getNumOperands() != 2 || !v.hasOneUse())
      break;
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    if (isa<MulOp>(op) && isScalar(rhs, lhs, op)) {
      scale *= *splatValue(rhs);
      v = lhs;
    } else if (isa<MulOp>(op) && isScalar(lhs, rhs, op)) {
      scale *= *splatValue(lhs);
      v = rhs;
    } else if (isa<DivOp>(op) && isScalar(rhs, lhs, op) &&
               *splatValue(rhs) != 0.0) {
      scale /= *splatValue(rhs);
      v = lhs;
    } else {
      break;
    }
  }
  return v;
}

/// Peels a softcap, `c * tanh(x / c)` or `c * tanh(x * (1 / c))` with c a
/// positive one-element constant and each step of no other use, off `v`:
/// returns x and sets `softcap` to c, or returns `v` when it is not capped.
Value peelSoftcap(Value v, double &softcap) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul || !v.hasOneUse())
    return v;
  auto scalar = [](Value c) -> std::optional<double> {
    auto value = splatValue(c);
    if (!value || cast<RankedTensorType>(c.getType()).getNumElements() != 1)
      return std::nullopt;
    return value;
  };
  for (int side = 0; side < 2; ++side) {
    std::optional<double> cap = scalar(mul->getOperand(side));
    auto tanh = mul->getOperand(1 - side).getDefiningOp<TanhOp>();
    if (!cap || *cap <= 0.0 || !tanh || !tanh->hasOneUse() ||
        tanh.getType() != mul.getType())
      continue;
    Operation *ratio = tanh.getInput().getDefiningOp();
    if (!ratio || !ratio->hasOneUse() || ratio->getNumOperands() != 2 ||
        ratio->getResult(0).getType() != mul.getType())
      continue;
    std::optional<double> by = scalar(ratio->getOperand(1));
    bool divides = isa<DivOp>(ratio) && by && *by == *cap;
    bool multiplies =
        isa<MulOp>(ratio) && by && std::fabs(*by * *cap - 1.0) <= 1e-6;
    if (!divides && !multiplies)
      continue;
    softcap = *cap;
    return ratio->getOperand(0);
  }
  return v;
}

/// `x` with its last two dims swapped, through a new transpose (which
/// canonicalization composes with a transpose that produced `x`).
Value swapLastTwo(PatternRewriter &rewriter, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> perm{0, 1, 3, 2};
  // A rank-4 permutation of a verified type: the rule cannot fail.
  RankedTensorType swapped = *inferTransposeType(std::nullopt, type, perm);
  return TransposeOp::create(rewriter, loc, swapped, x, perm);
}

/// The attention sink as AttentionBuilder writes it: the softmax over the
/// scores joined (last axis) by one more column, a constant that varies by
/// head at most, its result sliced back to the scores' columns. Returns the
/// sink per query head (one value when all heads share it) and sets
/// `logits` to the scores and `probs` to the slice; fails otherwise.
FailureOr<SmallVector<float>> matchSink(SoftmaxOp softmax, Value &logits,
                                        Value &probs) {
  auto concat = softmax.getInput().getDefiningOp<ConcatOp>();
  auto slice = dyn_cast<SliceOp>(*softmax->getUsers().begin());
  if (!concat || concat.getAxis() != 3 || concat.getInputs().size() != 2 ||
      !concat->hasOneUse() || !slice || !slice->hasOneUse())
    return failure();
  Value scores = concat.getInputs()[0], column = concat.getInputs()[1];
  auto scoresType = cast<RankedTensorType>(scores.getType());
  if (slice.getType() != scoresType ||
      llvm::any_of(slice.getStarts(), [](int64_t s) { return s != 0; }) ||
      llvm::any_of(slice.getStrides(), [](int64_t s) { return s != 1; }))
    return failure();
  if (auto expand = column.getDefiningOp<ExpandOp>())
    column = expand.getInput();
  // A reshape of the constant (a per-head vector to [1, h, 1, 1]) keeps its
  // elements in order: read them at the reshaped shape.
  ArrayRef<int64_t> columnShape =
      cast<RankedTensorType>(column.getType()).getShape();
  while (auto reshape = column.getDefiningOp<ReshapeOp>())
    column = reshape.getInput();
  auto constant = column.getDefiningOp<ConstantOp>();
  if (!constant || columnShape.size() > 4)
    return failure();
  auto values = HostTensor::fromElementsAttr(constant.getValue());
  if (failed(values))
    return failure();
  // The constant broadcasts to [b, h, i, 1]; it must not vary with b or i.
  SmallVector<int64_t> shape(4 - columnShape.size(), 1);
  shape.append(columnShape.begin(), columnShape.end());
  int64_t heads = scoresType.getDimSize(1);
  if (shape[3] != 1 || (shape[1] != 1 && shape[1] != heads))
    return failure();
  SmallVector<float> sink;
  for (int64_t h = 0; h < shape[1]; ++h) {
    double first = values->getAsDouble(h * shape[2]);
    for (int64_t b = 0; b < shape[0]; ++b)
      for (int64_t i = 0; i < shape[2]; ++i)
        if (values->getAsDouble((b * shape[1] + h) * shape[2] + i) != first)
          return failure();
    if (!std::isfinite(first))
      return failure();
    sink.push_back(static_cast<float>(first));
  }
  if (llvm::all_equal(sink))
    sink.resize(1);
  logits = scores;
  probs = slice.getResult();
  return sink;
}

/// The NaN guard PyTorch's scaled_dot_product_attention export writes after
/// the softmax, `where(isnan(p), 0, p)`: returns the guarded probabilities
/// when `probs` has exactly that use (and the is_nan no other), else null.
Value matchNanGuard(Value probs) {
  if (!llvm::hasNItems(probs.getUses(), 2))
    return {};
  IsNaNOp isNan;
  WhereOp where;
  for (Operation *user : probs.getUsers()) {
    if (auto op = dyn_cast<IsNaNOp>(user))
      isNan = op;
    else if (auto op = dyn_cast<WhereOp>(user))
      where = op;
  }
  if (!isNan || !where || !isNan->hasOneUse() ||
      where.getCondition() != isNan.getResult() || where.getRhs() != probs ||
      where.getType() != probs.getType())
    return {};
  auto zeroType = cast<RankedTensorType>(where.getLhs().getType());
  if (zeroType.getNumElements() != 1 || splatValue(where.getLhs()) != 0.0)
    return {};
  return where.getResult();
}

/// softmax(scale * q.k^T + mask).v, from the softmax out.
struct RecomposeAttention : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp softmax,
                                PatternRewriter &rewriter) const override {
    if (softmax.getType().getRank() != 4 || softmax.getAxis() != 3)
      return rewriter.notifyMatchFailure(softmax,
                                         "not a 4-D last-axis softmax");
    // The softmax's input and result, or with a sink the scores and the
    // probabilities sliced out of it; NaN-guarded probabilities stand for the
    // softmax's result.
    Value logits = softmax.getInput(), probs = softmax.getResult();
    Value guarded = matchNanGuard(probs);
    if (!guarded && !softmax->hasOneUse())
      return rewriter.notifyMatchFailure(softmax, "softmax used elsewhere");
    FailureOr<SmallVector<float>> sink =
        guarded ? FailureOr<SmallVector<float>>(failure())
                : matchSink(softmax, logits, probs);
    if (guarded)
      probs = guarded;
    auto probsType = cast<RankedTensorType>(probs.getType());
    auto context = dyn_cast<MatmulOp>(*probs.getUsers().begin());
    if (!context || context.getLhs() != probs || !probs.hasOneUse() ||
        context.getTransposeLhs() || context.getType().getRank() != 4)
      return rewriter.notifyMatchFailure(softmax, "not multiplied by values");

    // Mask: an add with the masked side leading to the scores, or a select
    // against a fill that swamps every score.
    double scale = 1.0;
    Value scores = logits, mask;
    Value selectCondition;
    double fill = 0.0;
    if (auto add = scores.getDefiningOp<AddOp>(); add && scores.hasOneUse()) {
      for (int side = 0; side < 2; ++side) {
        Value candidate = add->getOperand(side);
        double s = 1.0, c = 0.0;
        if (peelScale(peelSoftcap(candidate, c), s).getDefiningOp<MatmulOp>() ||
            candidate.getDefiningOp<MatmulOp>()) {
          scores = candidate;
          mask = add->getOperand(1 - side);
          break;
        }
      }
      if (!mask)
        return rewriter.notifyMatchFailure(softmax, "no scores under the add");
    } else if (auto where = scores.getDefiningOp<WhereOp>();
               where && scores.hasOneUse()) {
      std::optional<double> value = splatValue(where.getRhs());
      if (!value || !(std::isinf(*value) || *value <= -1e30) || *value > 0)
        return rewriter.notifyMatchFailure(softmax, "select fill is not -inf");
      selectCondition = where.getCondition();
      fill = *value;
      scores = where.getLhs();
    }
    if (scores != logits && !scores.hasOneUse())
      return rewriter.notifyMatchFailure(softmax, "scores used elsewhere");
    double softcap = 0.0;
    scores = peelScale(peelSoftcap(scores, softcap), scale);
    auto product = scores.getDefiningOp<MatmulOp>();
    if (!product || !product->hasOneUse() || product.getType().getRank() != 4 ||
        product.getType() != probsType)
      return rewriter.notifyMatchFailure(softmax, "no q.k^T matmul");

    Value query = product.getLhs(), keyT = product.getRhs();
    auto rank4 = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getRank() == 4;
    };
    if (!rank4(query) || !rank4(keyT) || !rank4(context.getRhs()))
      return rewriter.notifyMatchFailure(softmax, "operands are not 4-D");
    Location loc = softmax.getLoc();
    rewriter.setInsertionPoint(context);
    // Scale factors on the queries or the keys, when nothing else uses them.
    query = peelScale(query, scale);
    keyT = peelScale(keyT, scale);
    // Queries stored transposed (the transpose folded into the product).
    if (product.getTransposeLhs())
      query = swapLastTwo(rewriter, loc, query);
    Value key =
        product.getTransposeRhs() ? keyT : swapLastTwo(rewriter, loc, keyT);
    Value value = context.getRhs();
    if (context.getTransposeRhs())
      value = swapLastTwo(rewriter, loc, value);
    if (selectCondition) {
      // where(c, s, fill) as s + where(c, 0, fill): the fill swamps any
      // score, so both give the fill (or -inf) where c is false.
      auto maskType = cast<RankedTensorType>(selectCondition.getType())
                          .clone(probsType.getElementType());
      auto scalarType = RankedTensorType::get({}, probsType.getElementType());
      Value zero = ConstantOp::create(
          rewriter, loc,
          cast<ElementsAttr>(DenseElementsAttr::get(
              scalarType,
              rewriter.getFloatAttr(probsType.getElementType(), 0.0))));
      Value fillValue = ConstantOp::create(
          rewriter, loc,
          cast<ElementsAttr>(DenseElementsAttr::get(
              scalarType,
              rewriter.getFloatAttr(probsType.getElementType(), fill))));
      mask = WhereOp::create(rewriter, loc, maskType, selectCondition, zero,
                             fillValue);
    }
    auto resultType = inferAttentionType(
        std::nullopt, cast<RankedTensorType>(query.getType()),
        cast<RankedTensorType>(key.getType()),
        cast<RankedTensorType>(value.getType()),
        mask ? cast<RankedTensorType>(mask.getType()) : RankedTensorType());
    if (failed(resultType) || *resultType != context.getType())
      return rewriter.notifyMatchFailure(softmax, "shapes do not fit");
    auto attention = AttentionOp::create(
        rewriter,
        rewriter.getFusedLoc({product.getLoc(), loc, context.getLoc()}),
        *resultType, query, key, value, mask,
        rewriter.getF32FloatAttr(static_cast<float>(scale)),
        rewriter.getF32FloatAttr(static_cast<float>(softcap)),
        succeeded(sink) ? rewriter.getDenseF32ArrayAttr(*sink)
                        : DenseF32ArrayAttr(),
        guarded ? rewriter.getUnitAttr() : UnitAttr());
    copyTensorNames(context, attention);
    rewriter.replaceOp(context, attention.getResult());
    return success();
  }
};

/// Whether `value` is within a relative `tolerance` of `expected`:
/// exporters round their constants (1.4142135 for sqrt(2)) and some write
/// them in 16 bits.
bool near(double value, double expected, double tolerance = 1e-3) {
  return std::fabs(value - expected) <= tolerance * std::fabs(expected);
}

/// Collects the factors of a product tree rooted at `root` (a kiln.mul, its
/// kiln.mul operands of one use each, and so on) into `factors`, with the
/// one-element constants among them multiplied into `scale`, the ops into
/// `ops`. Factors stay at the root's type; a broadcasting product is not
/// one of x's elements and ends the tree.
void collectProduct(MulOp root, SmallVectorImpl<Value> &factors, double &scale,
                    SmallVectorImpl<Operation *> &ops) {
  SmallVector<Value> worklist{root.getResult()};
  Type type = root.getType();
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    auto mul = v.getDefiningOp<MulOp>();
    bool inner = mul && (v == root.getResult() || v.hasOneUse()) &&
                 mul.getType() == type;
    if (!inner) {
      std::optional<double> c = splatValue(v);
      if (c && cast<RankedTensorType>(v.getType()).getNumElements() == 1)
        scale *= *c;
      else
        factors.push_back(v);
      continue;
    }
    ops.push_back(mul);
    worklist.push_back(mul.getRhs());
    worklist.push_back(mul.getLhs());
  }
}

/// Returns `u` when `v` is `1 + u` or `u + 1` (one-element 1, one use).
Value peelPlusOne(Value v) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add || !v.hasOneUse() || add.getType() != add.getLhs().getType())
    return {};
  if (splatValue(add.getRhs()) == 1.0)
    return add.getLhs();
  if (splatValue(add.getLhs()) == 1.0 &&
      add.getType() == add.getRhs().getType())
    return add.getRhs();
  return {};
}

/// Whether `v` is x^3: `pow(x, 3)`, `x * x * x` or `(x * x) * x`, each
/// step of one use.
bool isCube(Value v, Value x) {
  if (!v.hasOneUse())
    return false;
  if (auto pow = v.getDefiningOp<PowOp>())
    return pow.getLhs() == x && splatValue(pow.getRhs()) == 3.0;
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul)
    return false;
  for (int side = 0; side < 2; ++side) {
    Value square = mul->getOperand(side);
    auto inner = square.getDefiningOp<MulOp>();
    if (mul->getOperand(1 - side) == x && inner && square.hasOneUse() &&
        inner.getLhs() == x && inner.getRhs() == x)
      return true;
  }
  return false;
}

/// The argument of GELU's tanh form as ONNX Runtime's FastGelu fusion
/// writes it, sqrt(2/pi) * x * (1 + 0.044715 * x * x): returns x, or null.
Value matchFactoredTanhArgument(Value v) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul || !v.hasOneUse())
    return {};
  SmallVector<Value> factors, square;
  SmallVector<Operation *> ops;
  double scale = 1.0, cubic = 1.0;
  collectProduct(mul, factors, scale, ops);
  if (factors.size() != 2 || !near(scale, std::sqrt(2.0 / M_PI)))
    return {};
  for (int side = 0; side < 2; ++side) {
    Value x = factors[side];
    Value u = peelPlusOne(factors[1 - side]);
    auto product = u ? u.getDefiningOp<MulOp>() : MulOp();
    if (!product || !u.hasOneUse())
      continue;
    square.clear();
    cubic = 1.0;
    collectProduct(product, square, cubic, ops);
    if (near(cubic, 0.044715) && square.size() == 2 && square[0] == x &&
        square[1] == x)
      return x;
  }
  return {};
}

/// The argument of GELU's tanh form, sqrt(2/pi) * (x + 0.044715 * x^3) or
/// the factored form above: returns x, or null.
Value matchTanhArgument(Value v) {
  if (Value x = matchFactoredTanhArgument(v))
    return x;
  double scale = 1.0;
  Value inner = peelScale(v, scale);
  auto add = inner.getDefiningOp<AddOp>();
  if (!near(scale, std::sqrt(2.0 / M_PI)) || !add || !inner.hasOneUse())
    return {};
  for (int side = 0; side < 2; ++side) {
    Value x = add->getOperand(side);
    double cubic = 1.0;
    Value cube = peelScale(add->getOperand(1 - side), cubic);
    if (x.getType() == add.getType() && near(cubic, 0.044715) &&
        isCube(cube, x))
      return x;
  }
  return {};
}

/// GELU as exporters decompose it, `0.5 * x * (1 + erf(x / sqrt(2)))` or
/// the tanh form `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`,
/// the product in any order and grouping, the constants multiplied or
/// divided; every intermediate of one use. From the outermost product.
struct RecomposeGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    // A product inside a larger one is tried on its own too: when it is
    // exactly GELU, the larger product multiplies the GELU.
    SmallVector<Value> factors;
    SmallVector<Operation *> ops;
    double half = 1.0;
    collectProduct(root, factors, half, ops);
    if (factors.size() != 2 || !near(half, 0.5))
      return rewriter.notifyMatchFailure(root, "not 0.5 * x * (1 + f)");
    for (int side = 0; side < 2; ++side) {
      Value x = factors[side];
      Value cdf = peelPlusOne(factors[1 - side]);
      Operation *f = cdf ? cdf.getDefiningOp() : nullptr;
      if (!f || !cdf.hasOneUse() || x.getType() != root.getType())
        continue;
      GeluApproximation form;
      if (auto erf = dyn_cast<ErfOp>(f)) {
        double scale = 1.0;
        if (peelScale(erf.getInput(), scale) != x ||
            !near(scale, 1.0 / std::sqrt(2.0)))
          continue;
        form = GeluApproximation::none;
      } else if (auto tanh = dyn_cast<TanhOp>(f)) {
        if (matchTanhArgument(tanh.getInput()) != x)
          continue;
        form = GeluApproximation::tanh;
      } else {
        continue;
      }
      // Located at the ONNX nodes it replaces (the products, the + 1, the
      // erf or tanh and what computes its argument from x), so that
      // reports name them. The match bounds that argument to a few ops.
      SmallVector<Location> locs{factors[1 - side].getDefiningOp()->getLoc()};
      for (Operation *op : ops)
        locs.push_back(op->getLoc());
      SmallVector<Operation *> argument{f};
      for (size_t i = 0; i < argument.size() && i < 16; ++i) {
        locs.push_back(argument[i]->getLoc());
        for (Value operand : argument[i]->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && operand != x && !isa<ConstantOp>(def))
            argument.push_back(def);
      }
      rewriter.setInsertionPoint(root);
      auto gelu = GeluOp::create(rewriter, rewriter.getFusedLoc(locs),
                                 root.getType(), x, form);
      copyTensorNames(root, gelu);
      rewriter.replaceOp(root, gelu.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(root, "no x * (1 + erf|tanh(...))");
  }
};

struct KilnRecomposePass
    : public kiln::impl::KilnRecomposePassBase<KilnRecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RecomposeAttention, RecomposeGelu>(&getContext());
    populateRecomposeNormPatterns(patterns);
    populateRecomposeQuantizedPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
