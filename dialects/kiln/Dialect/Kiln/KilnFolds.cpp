//===- KilnFolds.cpp - folders of kiln ops --------------------------------===//
//
// Folds are local and never needed for correctness: canonicalization and the
// constant folder use them to shrink graphs before fusion.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/KilnOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln;

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// True when `attr` is a splat equal to `value` (integer or float).
static bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type elementType = splat.getElementType();
  if (isa<FloatType>(elementType))
    return splat.getSplatValue<APFloat>().convertToDouble() == value;
  if (isa<IntegerType>(elementType))
    return splat.getSplatValue<APInt>().getSExtValue() ==
           static_cast<int64_t>(value);
  return false;
}

/// `x op c` folds to `x` when `c` is the identity of op and broadcasting does
/// not change x's type.
static OpFoldResult foldIdentity(Value lhs, Value rhs, Attribute lhsAttr,
                                 Attribute rhsAttr, Type resultType,
                                 double identity) {
  if (isSplatOf(rhsAttr, identity) && lhs.getType() == resultType)
    return lhs;
  if (isSplatOf(lhsAttr, identity) && rhs.getType() == resultType)
    return rhs;
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldIdentity(getLhs(), getRhs(), adaptor.getLhs(), adaptor.getRhs(),
                      getType(), 0.0);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldIdentity(getLhs(), getRhs(), adaptor.getLhs(), adaptor.getRhs(),
                      getType(), 1.0);
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  // A transpose of a transpose reads the original tensor through the
  // composed permutation: result dim i is producer dim perm[i], which is
  // input dim inner[perm[i]].
  if (auto producer = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t p : getPermutation())
      composed.push_back(producer.getPermutation()[p]);
    getInputMutable().assign(producer.getInput());
    setPermutation(composed);
    return getResult();
  }
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    if (static_cast<int64_t>(i) != p)
      return {};
  return getInput();
}

/// Whether `permutation` swaps the last two dims and keeps the others.
static bool swapsLastTwo(ArrayRef<int64_t> permutation) {
  int64_t rank = permutation.size();
  if (rank < 2 || permutation[rank - 2] != rank - 1 ||
      permutation[rank - 1] != rank - 2)
    return false;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (permutation[d] != d)
      return false;
  return true;
}

OpFoldResult MatmulOp::fold(FoldAdaptor) {
  // A transpose of an operand's last two dims is the product's own flag:
  // cuBLASLt reads the operand transposed, and no copy kernel writes it.
  bool changed = false;
  if (auto transpose = getLhs().getDefiningOp<TransposeOp>();
      transpose && swapsLastTwo(transpose.getPermutation())) {
    getLhsMutable().assign(transpose.getInput());
    setTransposeLhs(!getTransposeLhs());
    changed = true;
  }
  if (auto transpose = getRhs().getDefiningOp<TransposeOp>();
      transpose && swapsLastTwo(transpose.getPermutation())) {
    getRhsMutable().assign(transpose.getInput());
    setTransposeRhs(!getTransposeRhs());
    changed = true;
  }
  return changed ? OpFoldResult(getResult()) : OpFoldResult();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A reshape of a reshape reads the original tensor.
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getInput()))
    return splat.reshape(getType());
  return {};
}
