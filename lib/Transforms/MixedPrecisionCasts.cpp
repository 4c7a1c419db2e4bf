//===- MixedPrecisionCasts.cpp - kiln-mixed-precision cast cleanups -------===//
//
// The patterns kiln-mixed-precision runs after assigning types: they cancel
// exact round trips, fold casts of constants and move casts through data
// movement, so that data moves in the narrow type.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/Dialect/Kiln/KilnOps.h"

#include "MixedPrecisionRules.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::mixed_precision;

/// True when every value of `from` is exactly a value of `to`, so that a
/// cast through `to` changes nothing.
static bool isExactConversion(Type from, Type to) {
  if (from == to || from.isInteger(1))
    return true;
  auto f = dyn_cast<FloatType>(from), t = dyn_cast<FloatType>(to);
  return f && t &&
         APFloat::isRepresentableBy(f.getFloatSemantics(),
                                    t.getFloatSemantics());
}

namespace {

//===----------------------------------------------------------------------===//
// Cast cleanups
//===----------------------------------------------------------------------===//

/// cast(cast(x)) whose first step is exact is one cast from x, or x itself:
/// f16 -> f32 -> f16 is the identity.
struct CancelCasts : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<CastOp>();
    if (!inner || !isExactConversion(elementTypeOf(inner.getInput()),
                                     elementTypeOf(inner.getResult())))
      return rewriter.notifyMatchFailure(op, "no exact cast under it");
    Value source = inner.getInput();
    if (source.getType() == op.getType())
      rewriter.replaceOp(op, source);
    else
      rewriter.replaceOpWithNewOp<CastOp>(op, op.getType(), source);
    return success();
  }
};

/// A float cast of a float constant is the converted constant.
struct FoldCastOfConstant : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto constant = op.getInput().getDefiningOp<ConstantOp>();
    auto to = dyn_cast<FloatType>(op.getType().getElementType());
    if (!constant || !to)
      return rewriter.notifyMatchFailure(op, "not a float cast of a constant");
    auto value = convertElements(constant.getValue(), to, Conversion::Round);
    if (failed(value))
      return rewriter.notifyMatchFailure(op, "constant not convertible");
    rewriter.replaceOpWithNewOp<ConstantOp>(op, *value);
    return success();
  }
};

/// cast(move(x)) for a narrowing cast and a single-use reshape, transpose,
/// slice or expand: move(cast(x)). The data moves in the narrow type, and the
/// cast can join the kernel that produces x.
struct HoistNarrowingCast : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    Operation *move = op.getInput().getDefiningOp();
    auto from = dyn_cast<FloatType>(elementTypeOf(op.getInput()));
    auto to = dyn_cast<FloatType>(op.getType().getElementType());
    if (!move || !movesOneTensor(move) || !move->hasOneUse() || !from || !to ||
        to.getWidth() >= from.getWidth())
      return rewriter.notifyMatchFailure(op, "not a narrowing cast of a move");
    Value source = move->getOperand(0);
    rewriter.setInsertionPoint(move);
    Value narrowed = CastOp::create(
        rewriter, op.getLoc(), withElementType(source.getType(), to), source);
    Operation *moved = rewriter.clone(*move);
    moved->setOperand(0, narrowed);
    moved->getResult(0).setType(
        withElementType(move->getResult(0).getType(), to));
    // It no longer computes in f32.
    moved->removeAttr(kFp32RuleAttr);
    rewriter.replaceOp(op, moved->getResults());
    rewriter.eraseOp(move);
    return success();
  }
};

/// move(cast(x)) for a single-use widening cast: cast(move(x)). The data
/// moves in the narrow type, and the cast meets its users (or a narrowing
/// cast it cancels with).
struct SinkWideningCast : RewritePattern {
  SinkWideningCast(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *move,
                                PatternRewriter &rewriter) const override {
    if (!movesOneTensor(move))
      return failure();
    auto castOp = move->getOperand(0).getDefiningOp<CastOp>();
    if (!castOp || !castOp->hasOneUse())
      return rewriter.notifyMatchFailure(move, "no single-use cast under it");
    auto from = dyn_cast<FloatType>(elementTypeOf(castOp.getInput()));
    auto to = dyn_cast<FloatType>(castOp.getType().getElementType());
    if (!from || !to || to.getWidth() <= from.getWidth())
      return rewriter.notifyMatchFailure(move, "not a widening float cast");
    Operation *moved = rewriter.clone(*move);
    moved->setOperand(0, castOp.getInput());
    moved->getResult(0).setType(
        withElementType(move->getResult(0).getType(), from));
    if (!from.isF32())
      moved->removeAttr(kFp32RuleAttr);
    rewriter.replaceOpWithNewOp<CastOp>(move, move->getResult(0).getType(),
                                        moved->getResult(0));
    rewriter.eraseOp(castOp);
    return success();
  }
};

} // namespace

void kiln::populateKilnMixedPrecisionPatterns(RewritePatternSet &patterns) {
  patterns.add<CancelCasts, FoldCastOfConstant, HoistNarrowingCast,
               SinkWideningCast>(patterns.getContext());
}
