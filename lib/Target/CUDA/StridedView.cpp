//===- StridedView.cpp - an operand read through layout ops --------------===//

#include "StridedView.h"

#include "kiln/Dialect/Kiln/KilnOps.h"

using namespace mlir;

namespace kiln {

namespace {

/// The strides of `view` reshaped to `shape`, as PyTorch's computeStride
/// finds them: the input's dims fall into chunks, each contiguous in
/// memory (a dim's stride is the next one's times its size), and the new
/// dims must regroup each chunk whole. Sizes compare as polynomials, so a
/// chunk of symbolic sizes matches new dims of the same product.
std::optional<Sizes> reshapedStrides(const StridedView &view,
                                     ArrayRef<Size> shape) {
  const Sizes &old = view.shape;
  Sizes strides(shape.size(), Size(0));
  if (old.empty()) {
    // A scalar: only dims of size 1.
    for (const Size &s : shape)
      if (s != 1)
        return std::nullopt;
    return strides;
  }
  int64_t viewDim = static_cast<int64_t>(shape.size()) - 1;
  Size chunkStride = view.strides.back(), chunkElements = 1, viewElements = 1;
  for (int64_t d = static_cast<int64_t>(old.size()) - 1; d >= 0; --d) {
    chunkElements *= old[d];
    bool chunkEnds =
        d == 0 ||
        (old[d - 1] != 1 && view.strides[d - 1] != chunkElements * chunkStride);
    if (!chunkEnds)
      continue;
    while (viewDim >= 0 &&
           (viewElements != chunkElements || shape[viewDim] == 1)) {
      strides[viewDim] = viewElements * chunkStride;
      viewElements *= shape[viewDim];
      --viewDim;
    }
    if (viewElements != chunkElements)
      return std::nullopt;
    if (d > 0) {
      chunkStride = view.strides[d - 1];
      chunkElements = 1;
      viewElements = 1;
    }
  }
  if (viewDim != -1)
    return std::nullopt;
  return strides;
}

} // namespace

std::optional<StridedView> stridedViewOf(Value operand) {
  Sizes shape = sizesOf(operand);
  Operation *op = operand.getDefiningOp();
  if (!op) {
    auto arg = cast<BlockArgument>(operand);
    if (!isa<KernelOp>(arg.getOwner()->getParentOp()))
      return std::nullopt;
    return StridedView{arg.getArgNumber(), Size(0), shape, stridesOf(shape)};
  }
  if (op->getNumOperands() != 1 ||
      !isa<ReshapeOp, TransposeOp, SliceOp, ExpandOp>(op))
    return std::nullopt;
  std::optional<StridedView> view = stridedViewOf(op->getOperand(0));
  if (!view)
    return std::nullopt;
  Sizes strides;
  if (isa<ReshapeOp>(op)) {
    std::optional<Sizes> reshaped = reshapedStrides(*view, shape);
    if (!reshaped)
      return std::nullopt;
    strides = *reshaped;
  } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
    // Result dim d is input dim perm[d].
    for (int64_t p : transpose.getPermutation())
      strides.push_back(view->strides[p]);
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    for (auto [d, start, step] :
         llvm::enumerate(slice.getStarts(), slice.getStrides())) {
      view->offset += Size(start) * view->strides[d];
      strides.push_back(view->strides[d] * Size(step));
    }
  } else {
    // An expand broadcasts the input's trailing dims: a new dim, or one of
    // size 1 that grows, repeats the same elements (stride 0).
    size_t lead = shape.size() - view->shape.size();
    for (size_t d = 0; d < shape.size(); ++d)
      strides.push_back(d < lead || view->shape[d - lead] != shape[d]
                            ? Size(0)
                            : view->strides[d - lead]);
  }
  view->shape = shape;
  view->strides = strides;
  return view;
}

} // namespace kiln
