//===- StridedView.h - an operand read through layout ops -------*- C++ -*-===//
//
// Internal to the CUDA target. A kernel operand that reaches a kernel input
// through layout ops alone (reshape, transpose, slice, expand) reads memory
// at strides: element (c0, ..., cn) is input element offset + sum ck *
// strides[k]. A generator that knows this can copy whole rows (cp.async,
// 16-byte loads) instead of computing each element's index through the
// chain of ops, which costs a division and a remainder a dim and op. The
// strides follow PyTorch's rule for views (a reshape is a view when each of
// its groups of dims is contiguous in the input), over possibly symbolic
// sizes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_STRIDEDVIEW_H
#define KILN_LIB_TARGET_CUDA_STRIDEDVIEW_H

#include "KernelSizes.h"

#include "mlir/IR/Value.h"

#include <optional>

namespace kiln {

struct StridedView {
  /// The kernel input read (its argument number in the kernel body).
  unsigned input = 0;
  /// In elements of the input.
  Size offset;
  Sizes shape, strides;
};

/// `operand` (a value in a kernel body) as a view of a kernel input, or
/// nothing when an op other than reshape, transpose, slice or expand lies
/// between them, or a reshape is not expressible with strides.
std::optional<StridedView> stridedViewOf(mlir::Value operand);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_STRIDEDVIEW_H
