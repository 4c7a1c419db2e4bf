//===- RowBias.h - a bias added to every row of a product -------*- C++ -*-===//
//
// The one definition of the bias cuBLASLt's epilogue adds: a value per
// column of a matmul's product, the same for every row. kiln-layout packs
// such biases with their projections, kiln-fuse takes them into GEMM
// kernels, and the CUDA target reads them back out of those kernels.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_ROWBIAS_H
#define KILN_DIALECT_KILN_ROWBIAS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLExtras.h"

namespace kiln {

/// Whether `bias` adds one value per column of `product` to every row: its
/// element type is the product's and its shape [n] or [1, ..., 1, n], with n
/// the product's columns.
inline bool isRowBias(mlir::Value bias, mlir::Value product) {
  auto type = llvm::cast<mlir::RankedTensorType>(bias.getType());
  auto productType = llvm::cast<mlir::RankedTensorType>(product.getType());
  llvm::ArrayRef<int64_t> shape = type.getShape();
  return type.getElementType() == productType.getElementType() &&
         type.hasStaticShape() && !shape.empty() &&
         shape.back() == productType.getShape().back() &&
         llvm::all_of(shape.drop_back(), [](int64_t d) { return d == 1; });
}

} // namespace kiln

#endif // KILN_DIALECT_KILN_ROWBIAS_H
