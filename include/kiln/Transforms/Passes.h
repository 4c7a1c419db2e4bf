//===- Passes.h - Kiln passes -----------------------------------*- C++ -*-===//

#ifndef KILN_TRANSFORMS_PASSES_H
#define KILN_TRANSFORMS_PASSES_H

#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Transforms/Passes.h.inc"

/// Names of the attributes memory planning writes.
inline constexpr llvm::StringLiteral kOffsetsAttr = "kiln.offsets";
inline constexpr llvm::StringLiteral kArenaBytesAttr = "kiln.arena_bytes";
inline constexpr llvm::StringLiteral kLiveLowerBoundAttr =
    "kiln.live_lower_bound_bytes";
/// With symbolic dims: the bytes live at the step where the most are live
/// at the top of every range, as a formula of the dims (DimExpr text).
inline constexpr llvm::StringLiteral kLivePeakAttr = "kiln.live_peak_bytes";

/// The attribute kiln-mixed-precision puts on each op (and graph input or
/// output) it keeps in f32: the rule that kept it.
inline constexpr llvm::StringLiteral kFp32RuleAttr = "kiln.fp32";

/// Adds kiln-mixed-precision's cast cleanups: casts of casts whose first step
/// is exact, casts of constants folded at compile time, narrowing casts moved
/// above and widening casts below single-use data movement.
void populateKilnMixedPrecisionPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_TRANSFORMS_PASSES_H
