//===- SymbolicShapes.h - Tensor types with named dynamic dims --*- C++ -*-===//
//
// A tensor type's dynamic dims carry their sizes in a `#kiln.dims` encoding
// (KilnBase.td). These helpers read a type as one DimExpr per dim (static
// dims as constants) and build a type back from such sizes, so that shape
// rules are written once over sizes that may or may not be symbolic.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_SYMBOLICSHAPES_H
#define KILN_DIALECT_KILN_SYMBOLICSHAPES_H

#include "kiln/Dialect/Kiln/DimExpr.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace kiln {

/// The attribute of `@main` that holds each symbolic dim's range: a
/// dictionary from the name to `array<i64: MIN, MAX>`.
inline constexpr llvm::StringLiteral kDimRangesAttr = "kiln.dim_ranges";

/// The size of every dim of `type`: static dims as constants, dynamic ones
/// from the type's `#kiln.dims` encoding. Nothing when a dynamic dim has no
/// size (a `?` without encoding).
std::optional<SymbolicShape> symbolicShapeOf(mlir::RankedTensorType type);

/// The tensor type of `sizes`: constant sizes are static dims, the others
/// `?` with their sizes in a `#kiln.dims` encoding.
mlir::RankedTensorType symbolicTensorType(llvm::ArrayRef<DimExpr> sizes,
                                          mlir::Type elementType);

/// Whether `type` has a dim whose size is a named expression.
bool isSymbolic(mlir::RankedTensorType type);

/// The shape of `type` for the names' values; nothing when a dynamic dim
/// has no size, a name no value, or a size is negative or overflows.
std::optional<llvm::SmallVector<int64_t>> concreteShape(
    mlir::RankedTensorType type,
    llvm::function_ref<std::optional<int64_t>(llvm::StringRef)> lookup);

/// The range of each symbolic dim of `func` (its `kiln.dim_ranges`).
using DimRanges = llvm::StringMap<std::pair<int64_t, int64_t>>;
DimRanges dimRangesOf(mlir::Operation *func);

/// The largest value of `size` over `ranges`; nothing when a name has no
/// range or on overflow.
std::optional<int64_t> upperBound(const DimExpr &size, const DimRanges &ranges);

/// The least value of `size` over `ranges`; nothing when a name has no
/// range or on overflow.
std::optional<int64_t> lowerBound(const DimExpr &size, const DimRanges &ranges);

/// The number of elements of `type`, as a size; nothing on overflow or for
/// a dynamic dim without size.
std::optional<DimExpr> elementCount(mlir::RankedTensorType type);

/// The most elements `type` holds over `ranges`; nothing when a name has no
/// range or on overflow.
std::optional<int64_t> maxElementCount(mlir::RankedTensorType type,
                                       const DimRanges &ranges);

/// `2x?x4` with each `?` written as its size (`2x(batch*sequence)x4`), for
/// messages.
std::string shapeText(mlir::RankedTensorType type);

} // namespace kiln

#endif // KILN_DIALECT_KILN_SYMBOLICSHAPES_H
