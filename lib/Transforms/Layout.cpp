//===- Layout.cpp - packed projections ------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/ConstantData/Concatenate.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/RowBias.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "llvm/ADT/MapVector.h"

#include <optional>

namespace kiln {
#define GEN_PASS_DEF_KILNLAYOUTPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// True when `value` reaches an operand of a kiln.attention through ops
/// that kiln-fuse folds into the attention kernel, each used once.
bool feedsAttention(Value value) {
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (isa<AttentionOp>(user))
      return true;
    if (!isElementwise(user) && !movesOneTensor(user))
      return false;
    value = user->getResult(0);
  }
  return false;
}

/// True when every reader of `value` is an elementwise op or moves it
/// alone: after packing they read a slice of the packed product, which
/// kiln-fuse folds into their kernels (a LLaMA's query and key through the
/// rotary embedding, its gate and up projections through SiLU and the
/// product), so the packing saves launches without adding a copy.
bool readByFusedOps(Value value) {
  return !value.use_empty() &&
         llvm::all_of(value.getUsers(), [](Operation *user) {
           return isElementwise(user) || movesOneTensor(user);
         });
}

/// The 2-D constant weights of a packable projection, or null.
ConstantOp packableWeights(MatmulOp matmul) {
  auto weights = matmul.getRhs().getDefiningOp<ConstantOp>();
  if (!weights || matmul.getTransposeLhs() || matmul.getTransposeRhs() ||
      cast<RankedTensorType>(weights.getType()).getRank() != 2 ||
      !(feedsAttention(matmul.getResult()) ||
        readByFusedOps(matmul.getResult())))
    return {};
  return weights;
}

/// The add of a constant bias row (isRowBias) that is `matmul`'s only use,
/// or null.
AddOp rowBiasAdd(MatmulOp matmul) {
  if (!matmul->hasOneUse())
    return {};
  auto add = dyn_cast<AddOp>(*matmul->getUsers().begin());
  if (!add || add.getType() != matmul.getType())
    return {};
  Value other =
      add.getLhs() == matmul.getResult() ? add.getRhs() : add.getLhs();
  if (!other.getDefiningOp<ConstantOp>() ||
      !isRowBias(other, matmul.getResult()))
    return {};
  return add;
}

/// The constant bias `add` adds (rowBiasAdd's), as one row.
FailureOr<HostTensor> biasRow(AddOp add) {
  auto bias = add.getLhs().getDefiningOp<ConstantOp>();
  if (!bias)
    bias = add.getRhs().getDefiningOp<ConstantOp>();
  FailureOr<HostTensor> row =
      HostTensor::fromElementsAttr(bias.getValue(), bias.getLoc());
  if (succeeded(row))
    row->shape = {row->shape.back()};
  return row;
}

/// Replaces `group` (matmuls of one input) by one matmul of the concatenated
/// weights and a slice per original result. When each projection's only
/// use adds a constant bias row (BERT's and ViT's Linear layers), the
/// biases are concatenated too and added once to the packed product, and
/// the slices replace the adds: kiln-fuse then takes the one add into the
/// GEMM as its bias epilogue, and the attention reads plain slices of the
/// GEMM's output (rows it can copy whole) instead of computing the sums.
LogicalResult pack(ArrayRef<MatmulOp> group) {
  SmallVector<HostTensor> weights;
  SmallVector<const HostTensor *> pointers;
  SmallVector<RankedTensorType> types;
  for (MatmulOp matmul : group) {
    auto constant = matmul.getRhs().getDefiningOp<ConstantOp>();
    auto tensor = HostTensor::fromElementsAttr(constant.getValue(),
                                               constant.getLoc());
    if (failed(tensor))
      return failure();
    weights.push_back(std::move(*tensor));
    types.push_back(cast<RankedTensorType>(constant.getType()));
  }
  for (const HostTensor &t : weights)
    pointers.push_back(&t);
  MatmulOp first = group.front();
  // The biases, when every projection adds one, concatenated before any op
  // is made (a failure leaves the function as it was).
  SmallVector<AddOp> adds;
  for (MatmulOp matmul : group)
    if (AddOp add = rowBiasAdd(matmul))
      adds.push_back(add);
  bool packBiases = adds.size() == group.size();
  std::optional<HostTensor> biases;
  SmallVector<Location> biasLocs;
  if (packBiases) {
    SmallVector<HostTensor> rows;
    int64_t total = 0;
    for (AddOp add : adds) {
      FailureOr<HostTensor> row = biasRow(add);
      if (failed(row))
        return failure();
      total += row->shape.back();
      rows.push_back(std::move(*row));
      biasLocs.push_back(add.getLoc());
    }
    SmallVector<const HostTensor *> rowPointers;
    for (const HostTensor &row : rows)
      rowPointers.push_back(&row);
    FailureOr<HostTensor> joined = HostTensor::allocate(
        rows.front().elementType, {total}, first.getLoc());
    if (failed(joined) ||
        failed(concatenateInto(*joined, rowPointers, 0, first.getLoc())))
      return failure();
    biases = std::move(*joined);
  }
  OpBuilder b(first);
  // The packed weights are computed once, here.
  auto concatType = inferConcatType(first.getLoc(), types, 1);
  if (failed(concatType))
    return failure();
  auto packed = HostTensor::allocate(concatType->getElementType(),
                                     concatType->getShape(), first.getLoc());
  if (failed(packed) ||
      failed(concatenateInto(*packed, pointers, 1, first.getLoc())))
    return failure();
  SmallVector<Location> locs;
  for (MatmulOp matmul : group)
    locs.push_back(matmul.getLoc());
  Location loc = b.getFusedLoc(locs);
  Value packedWeights = ConstantOp::create(
      b, loc, cast<ElementsAttr>(packed->toDenseElementsAttr()));
  auto resultType = inferMatmulType(loc, first.getLhs().getType(),
                                    *concatType, false, false);
  if (failed(resultType))
    return failure();
  Value product = MatmulOp::create(b, loc, *resultType, first.getLhs(),
                                   packedWeights, false, false);
  if (biases) {
    Location biasLoc = b.getFusedLoc(biasLocs);
    Value packedBiases = ConstantOp::create(
        b, biasLoc, cast<ElementsAttr>(biases->toDenseElementsAttr()));
    product = AddOp::create(b, biasLoc, product, packedBiases);
  }
  int64_t offset = 0, rank = resultType->getRank();
  for (auto [k, original] : llvm::enumerate(group)) {
    MatmulOp matmul = original;
    SmallVector<int64_t> starts(rank, 0), strides(rank, 1);
    starts.back() = offset;
    offset += matmul.getType().getShape().back();
    b.setInsertionPoint(matmul);
    Value part = SliceOp::create(b, matmul.getLoc(), matmul.getType(), product,
                                 starts, strides);
    if (packBiases) {
      // The slice is the biased projection: it replaces the add, and takes
      // its name.
      copyTensorNames(adds[k], part.getDefiningOp());
      adds[k].getResult().replaceAllUsesWith(part);
      adds[k]->erase();
    } else {
      copyTensorNames(matmul, part.getDefiningOp());
    }
    matmul.getResult().replaceAllUsesWith(part);
    matmul->erase();
  }
  return success();
}

struct KilnLayoutPass : public kiln::impl::KilnLayoutPassBase<KilnLayoutPass> {
  void runOnOperation() override {
    // Projections by input and weight depth, in program order.
    llvm::MapVector<std::pair<Value, int64_t>, SmallVector<MatmulOp>> groups;
    getOperation().walk([&](MatmulOp matmul) {
      if (ConstantOp weights = packableWeights(matmul))
        groups[{matmul.getLhs(),
                cast<RankedTensorType>(weights.getType()).getDimSize(0)}]
            .push_back(matmul);
    });
    for (auto &[key, group] : groups) {
      Type elementType = group.front().getType().getElementType();
      if (group.size() < 2 ||
          llvm::any_of(group, [&](MatmulOp m) {
            return m.getType().getElementType() != elementType;
          }))
        continue;
      if (failed(pack(group)))
        return signalPassFailure();
    }
  }
};

} // namespace
