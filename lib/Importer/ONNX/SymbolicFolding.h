//===- SymbolicFolding.h - Shape arithmetic over named dims -----*- C++ -*-===//
//
// With symbolic dims, a Shape node yields sizes such as `batch` rather than
// numbers, and the integer ops after it (Gather, Concat, Mul, Equal, Where,
// ...) compute on them. The importer folds such ops as it folds constant
// ones, but over DimExprs: the result is a constant when every element is
// one, and a `kiln.sizes` op otherwise, which the next Reshape or Expand
// reads as its shape. A comparison folds when the dims' ranges (`--dim
// NAME=MIN:MAX`) decide it for every value; otherwise the op stays and is
// computed at run time.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_SYMBOLICFOLDING_H
#define KILN_LIB_IMPORTER_ONNX_SYMBOLICFOLDING_H

#include "kiln/Dialect/Kiln/DimExpr.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace kiln {

/// A small tensor whose elements are sizes (integers, or floats and bools
/// that hold integers), row-major.
struct SymbolicTensor {
  llvm::SmallVector<int64_t> shape;
  std::vector<DimExpr> values;
};

/// The range `[min, max]` of a named dim, when it has one.
using DimRangeFn =
    llvm::function_ref<std::optional<std::pair<int64_t, int64_t>>(
        llvm::StringRef)>;

/// The elements of a `kiln.constant` of integers (or integral floats, or
/// bools) or of a `kiln.sizes`; nothing for any other value.
std::optional<SymbolicTensor> symbolicValueOf(mlir::Value value);

/// `op` computed over `operands`; nothing when `op` is not one of the ops
/// shape arithmetic uses, or when its result depends on the names' values
/// in a way a polynomial does not say (an inexact division, a comparison
/// the ranges do not decide).
std::optional<SymbolicTensor>
foldSymbolic(mlir::Operation *op, llvm::ArrayRef<SymbolicTensor> operands,
             DimRangeFn ranges);

/// Whether `a < b`, `a == b` (0) or `a > b` (1) for every value of the
/// names in their ranges: -1, 0 or 1; nothing when the ranges do not decide.
std::optional<int> compareSizes(const DimExpr &a, const DimExpr &b,
                                DimRangeFn ranges);

/// Whether `a <= b` for every value of the names in their ranges (true),
/// for none (false), or depending on them (nothing).
std::optional<bool> alwaysAtMost(const DimExpr &a, const DimExpr &b,
                                 DimRangeFn ranges);

/// `value` clamped to `[low, high]` when the ranges decide which of the
/// three it is; nothing otherwise.
std::optional<DimExpr> clampSize(const DimExpr &value, const DimExpr &low,
                                 const DimExpr &high, DimRangeFn ranges);

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_SYMBOLICFOLDING_H
