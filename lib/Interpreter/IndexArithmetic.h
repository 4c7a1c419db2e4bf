//===- IndexArithmetic.h - row-major strides and offsets --------*- C++ -*-===//
//
// Index arithmetic shared by the op executors: row-major and broadcast
// strides, and the offset of an element under them. Inline, since the
// executors call these once per element.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_INTERPRETER_INDEXARITHMETIC_H
#define KILN_LIB_INTERPRETER_INDEXARITHMETIC_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace kiln {

/// Row-major strides of `shape`. Shapes reaching here passed
/// getCheckedNumElements, which bounds every partial product.
inline llvm::SmallVector<int64_t> getStrides(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Strides that read an operand of `shape` at each index of `resultShape`,
/// which `shape` broadcasts to: dims align from the right, and a broadcast dim
/// (size 1, or missing) has stride 0.
inline llvm::SmallVector<int64_t>
getBroadcastStrides(llvm::ArrayRef<int64_t> shape,
                    llvm::ArrayRef<int64_t> resultShape) {
  llvm::SmallVector<int64_t> strides = getStrides(shape);
  llvm::SmallVector<int64_t> result(resultShape.size(), 0);
  size_t lead = resultShape.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    result[lead + d] = shape[d] == 1 ? 0 : strides[d];
  return result;
}

/// The offset, under `strides`, of the element at row-major position `linear`
/// of `shape`.
inline int64_t getOffset(int64_t linear, llvm::ArrayRef<int64_t> shape,
                         llvm::ArrayRef<int64_t> strides) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    offset += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return offset;
}

/// The product of `dims`; the dims come from a checked shape.
inline int64_t getProduct(llvm::ArrayRef<int64_t> dims) {
  int64_t product = 1;
  for (int64_t dim : dims)
    product *= dim;
  return product;
}

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_INDEXARITHMETIC_H
