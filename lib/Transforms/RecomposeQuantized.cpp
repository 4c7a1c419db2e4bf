//===- RecomposeQuantized.cpp - dynamic quantization's scaled products ----===//
//
// onnxruntime's quantize_dynamic writes each quantized MatMul as
//
//   q, s_a, z_a = DynamicQuantizeLinear(x)
//   y = Mul(Cast<float>(MatMulInteger(q, W, z_a, z_w)), Mul(s_a, s_w))
//
// which the importer spells as the fp32 product of the two differences
// (W's a kiln.dequantize with scales of 1), cast to int32 and back to
// float, times the scales. kiln-recompose turns it into the product of the
// two dequantizations, `((q - z_a) * s_a) . dequantize(W, s_w, z_w)`, the
// form of a Q/DQ graph, which kiln-fuse gives to the integer GEMM.
//
// Its QOperator format's QLinearMatMul is the same product of differences
// times one multiplier a column, `a_scale * b_scale / y_scale`, then
// requantized; kiln-recompose makes that the integer GEMM's form too.
//
//===----------------------------------------------------------------------===//

#include "RecomposePatterns.h"

#include "kiln/ConstantData/HostTensor.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/QuantizedActivations.h"
#include "kiln/Dialect/Kiln/TensorNames.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;

namespace {

/// The values of constant `v`, or none.
std::optional<HostTensor> constantValues(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  FailureOr<HostTensor> values =
      HostTensor::fromElementsAttr(constant.getValue());
  if (failed(values))
    return std::nullopt;
  return std::move(*values);
}

/// Whether `v` holds whole numbers: a cast from integers, or a constant of
/// whole values.
bool isWhole(Value v) {
  if (auto widen = v.getDefiningOp<CastOp>())
    return isa<IntegerType>(getElementTypeOrSelf(widen.getInput().getType()));
  std::optional<HostTensor> values = constantValues(v);
  if (!values)
    return false;
  for (int64_t i = 0, e = values->numElements(); i < e; ++i)
    if (double x = values->getAsDouble(i); x != std::trunc(x))
      return false;
  return true;
}

/// Whether `v` is MatMulInteger's A less its zero point as the importer
/// writes it: 8-bit integers cast to float, maybe less whole numbers.
bool isCentredBytes(Value v) {
  if (auto centred = v.getDefiningOp<SubOp>()) {
    if (!isWhole(centred.getRhs()))
      return false;
    v = centred.getLhs();
  }
  auto widen = v.getDefiningOp<CastOp>();
  auto integer = widen ? dyn_cast<IntegerType>(
                             getElementTypeOrSelf(widen.getInput().getType()))
                       : IntegerType();
  return integer && integer.getWidth() == 8;
}

/// Whether the dequantize `w` is MatMulInteger's B as the importer packs
/// it: 8-bit integers, one block a row, every scale 1.
bool hasUnitScales(DequantizeOp w) {
  return !w.isFloat8() && w.getBits() == 8 && w.getBlockCount() == 1 &&
         w.hasIntegerZeroPoints() && holdsOnlyOnes(w.getScales());
}

/// The dequantize of `matmul`'s B where the product is MatMulInteger's as
/// the importer writes it: A whole numbers from 8-bit integers
/// (isCentredBytes), B packed 8-bit weights with scales of 1 read
/// transposed, each of one use, and K small enough that the sums of 8-bit
/// products stay within int32 (|q - z| <= 255 for both operands: K * 255^2
/// below 2^31); else null.
DequantizeOp integerProductWeights(MatmulOp matmul) {
  auto w = matmul.getRhs().getDefiningOp<DequantizeOp>();
  if (!w || !matmul.getTransposeRhs() || matmul.getTransposeLhs() ||
      !hasUnitScales(w) || !isCentredBytes(matmul.getLhs()) ||
      !w.getResult().hasOneUse() || w.getColumns() > 33025)
    return {};
  return w;
}

/// Whether `v` is a block argument or defined in `op`'s block.
bool inBlockOf(Operation *op, Value v) {
  return v.getParentBlock() == op->getBlock();
}

/// The f32 constant `v` as the scales of a dequantize of `scalesType`
/// ([columns, 1]): one value, or one a column along its last dim (every
/// other dim 1); or none.
std::optional<HostTensor> perColumnScales(Value v,
                                          RankedTensorType scalesType) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t columns = scalesType.getDimSize(0);
  if (!type.getElementType().isF32() || !type.hasStaticShape() ||
      scalesType.getElementType() != type.getElementType())
    return std::nullopt;
  int64_t count = type.getNumElements();
  if (count != 1 && (count != columns || type.getShape().back() != columns))
    return std::nullopt;
  std::optional<HostTensor> values = constantValues(v);
  if (!values)
    return std::nullopt;
  FailureOr<HostTensor> each =
      HostTensor::allocate(scalesType.getElementType(), scalesType.getShape());
  if (failed(each))
    return std::nullopt;
  for (int64_t c = 0; c < columns; ++c)
    each->setFromDouble(c, values->getAsDouble(count == 1 ? 0 : c));
  return std::move(*each);
}

/// Builds `matmul(A * s_a, dequantize(W, s_w, z_w))` of `matmul`'s type
/// before `root`, A being `matmul`'s and W and z_w `w`'s.
MatmulOp scaledProduct(Operation *root, MatmulOp matmul, DequantizeOp w,
                       Value activationScale, const HostTensor &columnScales,
                       PatternRewriter &rewriter) {
  Value lhs = matmul.getLhs();
  Location loc = root->getLoc();
  // One scaled A for every product that reads it, so that kiln-layout
  // still sees projections of one input.
  MulOp scaled;
  for (Operation *user : lhs.getUsers())
    if (auto mul = dyn_cast<MulOp>(user);
        mul && mul.getLhs() == lhs && mul.getRhs() == activationScale &&
        mul.getType() == lhs.getType() && mul->isBeforeInBlock(root))
      scaled = mul;
  if (!scaled) {
    OpBuilder::InsertionGuard guard(rewriter);
    Operation *lhsDef = lhs.getDefiningOp();
    Operation *scaleDef = activationScale.getDefiningOp();
    Operation *after =
        !scaleDef || (lhsDef && scaleDef->isBeforeInBlock(lhsDef)) ? lhsDef
                                                                   : scaleDef;
    if (after)
      rewriter.setInsertionPointAfter(after);
    else
      rewriter.setInsertionPointToStart(lhs.getParentBlock());
    scaled = MulOp::create(rewriter, loc, lhs.getType(), lhs, activationScale);
  }
  rewriter.setInsertionPoint(root);
  Value scales = ConstantOp::create(
      rewriter, w.getLoc(),
      cast<ElementsAttr>(columnScales.toDenseElementsAttr()));
  Value weights = DequantizeOp::create(rewriter, w.getLoc(), w.getType(),
                                       w.getPacked(), scales, w.getZeroPoints(),
                                       w.getBits(), w.getBlockSize());
  return MatmulOp::create(rewriter,
                          rewriter.getFusedLoc({matmul.getLoc(), loc}),
                          matmul.getType(), scaled, weights, false, true);
}

/// Replaces `root` by `matmul(A * s_a, dequantize(W, s_w, z_w))`, A being
/// `matmul`'s and W and z_w `w`'s.
void rewriteScaled(MulOp root, MatmulOp matmul, DequantizeOp w,
                   Value activationScale, const HostTensor &columnScales,
                   PatternRewriter &rewriter) {
  MatmulOp product =
      scaledProduct(root, matmul, w, activationScale, columnScales, rewriter);
  copyTensorNames(root, product);
  rewriter.replaceOp(root, product.getResult());
}

/// `mul(cast<f32>(cast<i32>(matmul(A, dequantize(W, 1, z_w)))), s_a * s_w)`
/// with A whole numbers from 8-bit integers (isCentredBytes), s_a one
/// value and s_w a constant of one value or one a column, into
/// `matmul(A * s_a, dequantize(W, s_w, z_w))`.
///
/// The products of 8-bit differences are below 2^16 and K is bounded so
/// that their sums stay within int32; an fp32 sum of whole numbers is a
/// whole number, so the casts to int32 and back change nothing and go.
/// What changes is where the scales multiply: into each operand rather
/// than the sum, a difference of fp32 rounding only (the integer GEMM
/// multiplies the exact integer sum by s_a * s_w, as onnxruntime does).
struct RecomposeIntegerMatmul : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    for (auto [product, scales] : {std::pair{root.getLhs(), root.getRhs()},
                                   std::pair{root.getRhs(), root.getLhs()}}) {
      MatmulOp matmul = integerProduct(product);
      if (!matmul || matmul.getType() != root.getType())
        continue;
      DequantizeOp w = integerProductWeights(matmul);
      if (!w)
        continue;
      auto both = scales.getDefiningOp<MulOp>();
      if (!both)
        continue;
      for (auto [activation, weight] :
           {std::pair{both.getLhs(), both.getRhs()},
            std::pair{both.getRhs(), both.getLhs()}}) {
        std::optional<HostTensor> columnScales =
            perColumnScales(weight, w.getScales().getType());
        if (!holdsOneValue(activation) || !columnScales ||
            !getElementTypeOrSelf(activation.getType()).isF32() ||
            !inBlockOf(root, activation) || !inBlockOf(root, matmul.getLhs()))
          continue;
        rewriteScaled(root, matmul, w, activation, *columnScales, rewriter);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(root, "not a scaled integer product");
  }

  /// The matmul under `cast<f32>(cast<i32>(...))`, each of one use; or null.
  static MatmulOp integerProduct(Value v) {
    auto widen = v.getDefiningOp<CastOp>();
    auto narrow = widen ? widen.getInput().getDefiningOp<CastOp>() : CastOp();
    if (!narrow || !widen->hasOneUse() || !narrow->hasOneUse() ||
        !getElementTypeOrSelf(widen.getType()).isF32() ||
        !getElementTypeOrSelf(narrow.getType()).isInteger(32))
      return {};
    auto matmul = narrow.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || !matmul->hasOneUse() ||
        !matmul.getType().getElementType().isF32())
      return {};
    return matmul;
  }
};

/// A one-value f32 constant 2, the one another product of the same A
/// already scales it by where there is one (so that kiln-layout still
/// sees projections of one input), else a new one at the block's start
/// (so that the scaled A goes right after A, before every product of it,
/// whichever the rewriter takes first).
Value activationScaleOfTwo(Operation *root, MatmulOp matmul,
                           PatternRewriter &rewriter) {
  Value lhs = matmul.getLhs();
  for (Operation *user : lhs.getUsers())
    if (auto mul = dyn_cast<MulOp>(user);
        mul && mul.getLhs() == lhs && mul.getType() == lhs.getType() &&
        holdsOneValue(mul.getRhs()) && splatValue(mul.getRhs()) == 2.0 &&
        mul->isBeforeInBlock(root))
      return mul.getRhs();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(root->getBlock());
  auto type = RankedTensorType::get({}, rewriter.getF32Type());
  return ConstantOp::create(
      rewriter, root->getLoc(),
      cast<ElementsAttr>(DenseElementsAttr::get(type, 2.0f)));
}

/// QLinearMatMul's `mul(matmul(A, dequantize(W, 1, z_w)), m)`, m a
/// constant of one value or one a column (`a_scale * b_scale / y_scale`)
/// and A whole numbers from 8-bit integers, into `matmul(A * 2,
/// dequantize(W, m / 2, z_w))`.
///
/// The scale of A is a power of two so that the integer GEMM's
/// `(float(sum) * 2) * (m / 2)` is exactly onnxruntime's `float(sum) * m`:
/// both multiplications by powers of two are exact (m / 2 stays a normal
/// number: the rewrite refuses smaller multipliers), and one rounding is
/// left. A scale of 1 would do the same, but `A * 1` folds away, and the
/// integer GEMM reads its activations as `(q - z) * scale`.
struct RecomposeRequantizedMatmul : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    for (auto [product, multiplier] :
         {std::pair{root.getLhs(), root.getRhs()},
          std::pair{root.getRhs(), root.getLhs()}}) {
      auto matmul = product.getDefiningOp<MatmulOp>();
      if (!matmul || !matmul->hasOneUse() ||
          matmul.getType() != root.getType() ||
          !matmul.getType().getElementType().isF32())
        continue;
      DequantizeOp w = integerProductWeights(matmul);
      if (!w || !inBlockOf(root, matmul.getLhs()))
        continue;
      std::optional<HostTensor> columnScales =
          perColumnScales(multiplier, w.getScales().getType());
      if (!columnScales || !halvedExactly(*columnScales))
        continue;
      rewriteScaled(root, matmul, w,
                    activationScaleOfTwo(root, matmul, rewriter), *columnScales,
                    rewriter);
      return success();
    }
    return rewriter.notifyMatchFailure(root,
                                       "not a requantized integer product");
  }

  /// Halves every multiplier in `scales`, or fails where one is not finite
  /// or its half would not be a normal number (so not exact).
  static bool halvedExactly(HostTensor &scales) {
    for (int64_t i = 0, e = scales.numElements(); i < e; ++i) {
      double m = scales.getAsDouble(i);
      if (!std::isfinite(m) ||
          (m != 0 &&
           std::abs(m) < 2 * double(std::numeric_limits<float>::min())))
        return false;
      scales.setFromDouble(i, m / 2);
    }
    return true;
  }
};

/// QGemm's `mul(cast<f32>(add(cast<i32>(matmul(A, dequantize(W, 1,
/// z_w))), C)), m)` (its int32 C added to the integer sum before the
/// multiplier scales it), C a constant of one value or one a column below
/// 2^24 in magnitude and A whole numbers from 8-bit integers, into
/// `mul(add(matmul(A * 2, dequantize(W, 1/2, z_w)), float(C)), m)`: the
/// integer GEMM's form with C as its bias, and the multiplier after it.
///
/// The integer GEMM's `(float(sum) * 2) * (1/2)` is float(sum), exact, and
/// float(C) is exact below 2^24, so their fp32 sum is float(sum + C)
/// rounded once, as onnxruntime computes it, while the sum is below 2^24;
/// beyond, float(sum) is rounded before C is added (one rounding more in
/// the sum of products, as the float product's own rounding of such sums).
struct RecomposeBiasedIntegerMatmul : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  /// The least magnitude an fp32 does not hold every integer below.
  static constexpr double kExactIntegers = 16777216.0;

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    for (auto [sum, multiplier] : {std::pair{root.getLhs(), root.getRhs()},
                                   std::pair{root.getRhs(), root.getLhs()}}) {
      auto widen = sum.getDefiningOp<CastOp>();
      auto add = widen ? widen.getInput().getDefiningOp<AddOp>() : AddOp();
      if (!add || !widen->hasOneUse() || !add->hasOneUse() ||
          widen.getType() != root.getType() ||
          !getElementTypeOrSelf(widen.getType()).isF32())
        continue;
      for (auto [integers, bias] : {std::pair{add.getLhs(), add.getRhs()},
                                    std::pair{add.getRhs(), add.getLhs()}}) {
        auto narrow = integers.getDefiningOp<CastOp>();
        auto matmul =
            narrow ? narrow.getInput().getDefiningOp<MatmulOp>() : MatmulOp();
        if (!matmul || !narrow->hasOneUse() || !matmul->hasOneUse() ||
            narrow.getType() != add.getType() ||
            !getElementTypeOrSelf(narrow.getType()).isInteger(32) ||
            !matmul.getType().getElementType().isF32() ||
            matmul.getType().getShape() != add.getType().getShape())
          continue;
        DequantizeOp w = integerProductWeights(matmul);
        if (!w || !inBlockOf(root, matmul.getLhs()))
          continue;
        std::optional<HostTensor> floatBias = exactColumnBias(bias, matmul);
        if (!floatBias)
          continue;
        auto halves =
            HostTensor::allocate(w.getScales().getType().getElementType(),
                                 w.getScales().getType().getShape());
        if (failed(halves))
          continue;
        for (int64_t i = 0, e = halves->numElements(); i < e; ++i)
          halves->setFromDouble(i, 0.5);
        MatmulOp product = scaledProduct(
            root, matmul, w, activationScaleOfTwo(root, matmul, rewriter),
            *halves, rewriter);
        Value biasValue = ConstantOp::create(
            rewriter, add.getLoc(),
            cast<ElementsAttr>(floatBias->toDenseElementsAttr()));
        auto biased = AddOp::create(rewriter, add.getLoc(), product.getType(),
                                    product, biasValue);
        auto scaled = MulOp::create(rewriter, root.getLoc(), root.getType(),
                                    biased, multiplier);
        copyTensorNames(root, scaled);
        rewriter.replaceOp(root, scaled.getResult());
        return success();
      }
    }
    return rewriter.notifyMatchFailure(root, "not a biased integer product");
  }

  /// The int32 constant `bias` as an fp32 bias of `matmul`'s columns (one
  /// value, or one a column along its last dim, every other dim 1), where
  /// every value is below 2^24 in magnitude; or none.
  static std::optional<HostTensor> exactColumnBias(Value bias,
                                                   MatmulOp matmul) {
    auto type = cast<RankedTensorType>(bias.getType());
    int64_t columns = matmul.getType().getShape().back();
    if (!type.getElementType().isInteger(32) || !type.hasStaticShape() ||
        type.getRank() > matmul.getType().getRank() ||
        llvm::any_of(type.getShape().drop_back(),
                     [](int64_t d) { return d != 1; }) ||
        (type.getNumElements() != 1 && type.getShape().back() != columns))
      return std::nullopt;
    std::optional<HostTensor> values = constantValues(bias);
    if (!values)
      return std::nullopt;
    auto floats = HostTensor::allocate(Float32Type::get(bias.getContext()),
                                       type.getShape());
    if (failed(floats))
      return std::nullopt;
    for (int64_t i = 0, e = values->numElements(); i < e; ++i) {
      double v = values->getAsDouble(i);
      if (std::abs(v) >= kExactIntegers)
        return std::nullopt;
      floats->setFromDouble(i, v);
    }
    return std::move(*floats);
  }
};

} // namespace

void kiln::populateRecomposeQuantizedPatterns(RewritePatternSet &patterns) {
  patterns.add<RecomposeIntegerMatmul, RecomposeRequantizedMatmul,
               RecomposeBiasedIntegerMatmul>(patterns.getContext());
}
