//===- KernelSizes.h - Sizes in generated code -----------------*- C++ -*-===//
//
// Internal to the CUDA target. A kernel of a model with symbolic dims takes
// each dim's value as a trailing `long long` parameter (`kd_batch`, ...), in
// the order of its function's `kiln.dim_ranges`; a size in its code is a C
// expression over them. `Size` is what the emitters compute with: a
// polynomial over the dims (a constant for a static size), printed as a
// literal or an expression, with its largest value over the ranges for the
// choices that depend on magnitude (32-bit indices, block sizes, caching a
// row in registers). Static kernels print exactly what they printed before.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_KERNELSIZES_H
#define KILN_LIB_TARGET_CUDA_KERNELSIZES_H

#include "kiln/Dialect/Kiln/DimExpr.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace kiln {

class Size {
public:
  /// The constant `value`.
  Size(int64_t value = 0);
  /// `expr`, at most `upper` over the ranges.
  Size(DimExpr expr, int64_t upper);

  std::optional<int64_t> getConstant() const { return expr.getConstant(); }
  bool isConstant() const { return expr.isConstant(); }
  /// The largest value over the dims' ranges; the value of a constant.
  int64_t upper() const { return upperBound; }
  const DimExpr &getExpr() const { return expr; }

  /// The C text: a constant as a `long long` literal (`12LL`), otherwise a
  /// parenthesized `long long` expression over the dim parameters.
  std::string str() const;
  /// A constant without the suffix (`12`), for 32-bit index arithmetic;
  /// otherwise as `str`.
  std::string str32() const;

  /// Checked arithmetic over sizes; overflow is a fatal error (memory
  /// planning has bounded every size of the plan to 2^63 elements).
  friend Size operator*(const Size &lhs, const Size &rhs);
  friend Size operator+(const Size &lhs, const Size &rhs);
  friend Size operator-(const Size &lhs, const Size &rhs);
  Size &operator*=(const Size &other) { return *this = *this * other; }
  Size &operator+=(const Size &other) { return *this = *this + other; }
  bool operator==(const Size &other) const { return expr == other.expr; }
  bool operator!=(const Size &other) const { return expr != other.expr; }
  bool operator==(int64_t value) const { return getConstant() == value; }
  bool operator!=(int64_t value) const { return !(*this == value); }

private:
  DimExpr expr;
  int64_t upperBound = 0;
};

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const Size &size);

/// The sizes of a shape, one per dim.
using Sizes = llvm::SmallVector<Size, 4>;

/// The C name of the parameter that holds dim `name`: `kd_` then the name,
/// with `_` doubled and other characters outside [A-Za-z0-9] as `_XX` (hex),
/// so that two names never meet in one identifier.
std::string dimParameterName(llvm::StringRef name);

/// Whether C text `code` names identifier `word` (not as part of a longer
/// one): which dim parameters a kernel's code reads.
bool namesIdentifier(llvm::StringRef code, llvm::StringRef word);

/// The symbolic dims of `func` in the order its kernels take them (and the
/// artifact lists them): its `kiln.dim_ranges`, sorted by name.
llvm::SmallVector<llvm::StringRef> dimNamesOf(mlir::Operation *func);

/// The sizes of `type`, with upper bounds over `ranges`.
Sizes sizesOf(mlir::RankedTensorType type, const DimRanges &ranges);
/// The sizes of `value`'s type, with the ranges of the function it is in.
Sizes sizesOf(mlir::Value value);

/// The product of `sizes` (1 for none).
Size productOf(llvm::ArrayRef<Size> sizes);
/// Row-major strides of `sizes`.
Sizes stridesOf(llvm::ArrayRef<Size> sizes);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_KERNELSIZES_H
