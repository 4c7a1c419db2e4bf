//===- Layout.cpp - packed projections ------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/ConstantData/Concatenate.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "kiln/Dialect/Kiln/RowBias.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "llvm/ADT/MapVector.h"

#include <cstring>
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

/// The quantized weights of a packable projection: a kiln.dequantize of
/// constants (MatMulNBits' and DequantizeLinear's weights, rows of K) that
/// only `matmul` reads, transposed; or null.
DequantizeOp packableDequantize(MatmulOp matmul) {
  auto dequantize = matmul.getRhs().getDefiningOp<DequantizeOp>();
  if (!dequantize || !dequantize->hasOneUse() || matmul.getTransposeLhs() ||
      !matmul.getTransposeRhs() ||
      llvm::any_of(dequantize->getOperands(),
                   [](Value v) { return !v.getDefiningOp<ConstantOp>(); }) ||
      !(feedsAttention(matmul.getResult()) ||
        readByFusedOps(matmul.getResult())))
    return {};
  return dequantize;
}

/// What projections must share to be packed: their input and K; for
/// quantized weights also the dequantize's form (bits, block size and
/// count, the packed, scale, zero point and result element types), which
/// the packed rows then share.
using PackKey = std::tuple<Value, int64_t, int64_t, int64_t, int64_t, Type,
                           Type, Type, Type>;

std::optional<PackKey> packKeyOf(MatmulOp matmul) {
  if (ConstantOp weights = packableWeights(matmul))
    return PackKey{matmul.getLhs(),
                   cast<RankedTensorType>(weights.getType()).getDimSize(0),
                   0,
                   0,
                   0,
                   Type(),
                   Type(),
                   Type(),
                   matmul.getType().getElementType()};
  if (DequantizeOp weights = packableDequantize(matmul)) {
    Value zeros = weights.getZeroPoints();
    return PackKey{matmul.getLhs(),
                   weights.getColumns(),
                   static_cast<int64_t>(weights.getBits()),
                   static_cast<int64_t>(weights.getBlockSize()),
                   weights.getBlockCount(),
                   weights.getPacked().getType().getElementType(),
                   getElementTypeOrSelf(weights.getScales().getType()),
                   zeros ? getElementTypeOrSelf(zeros.getType()) : Type(),
                   matmul.getType().getElementType()};
  }
  return std::nullopt;
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

/// The constants `values`, concatenated along `axis`.
FailureOr<HostTensor> concatenated(ArrayRef<Value> values, int64_t axis,
                                   Location loc) {
  SmallVector<HostTensor> parts;
  SmallVector<RankedTensorType> types;
  for (Value v : values) {
    auto constant = v.getDefiningOp<ConstantOp>();
    auto tensor =
        HostTensor::fromElementsAttr(constant.getValue(), constant.getLoc());
    if (failed(tensor))
      return failure();
    parts.push_back(std::move(*tensor));
    types.push_back(cast<RankedTensorType>(constant.getType()));
  }
  SmallVector<const HostTensor *> pointers;
  for (const HostTensor &t : parts)
    pointers.push_back(&t);
  auto type = inferConcatType(loc, types, axis);
  if (failed(type))
    return failure();
  auto joined =
      HostTensor::allocate(type->getElementType(), type->getShape(), loc);
  if (failed(joined) || failed(concatenateInto(*joined, pointers, axis, loc)))
    return failure();
  return joined;
}

/// A constant of `tensor`'s values: past a few elements a blob named
/// `name`, spilled to a mapped file when large, as converted weights are
/// (MappedWeights.h), not an attribute the context keeps for good.
Value constantOf(OpBuilder &b, Location loc, const HostTensor &tensor,
                 StringRef name) {
  return ConstantOp::create(
      b, loc,
      filledConstantValue(
          tensor.getType(), tensor.bytes.size(),
          [&](char *chunk, size_t offset, size_t size) {
            std::memcpy(chunk, tensor.bytes.data() + offset, size);
          },
          name));
}

/// Replaces `group` (matmuls of one input) by one matmul of the concatenated
/// weights (float ones, or quantized ones' dequantize rows) and a slice
/// per original result. When each projection's only
/// use adds a constant bias row (BERT's and ViT's Linear layers), the
/// biases are concatenated too and added once to the packed product, and
/// the slices replace the adds: kiln-fuse then takes the one add into the
/// GEMM as its bias epilogue, and the attention reads plain slices of the
/// GEMM's output (rows it can copy whole) instead of computing the sums.
LogicalResult pack(ArrayRef<MatmulOp> group) {
  MatmulOp first = group.front();
  // The weights, concatenated before any op is made (a failure leaves the
  // function as it was): float [K, N] weights along N; a dequantize's
  // operands (packed bytes, scales, zero points) along its rows, which
  // are N.
  auto dequantize = first.getRhs().getDefiningOp<DequantizeOp>();
  SmallVector<HostTensor> weights;
  unsigned operands = dequantize ? dequantize->getNumOperands() : 1;
  for (unsigned operand = 0; operand < operands; ++operand) {
    SmallVector<Value> parts;
    for (MatmulOp matmul : group)
      parts.push_back(dequantize
                          ? matmul.getRhs().getDefiningOp()->getOperand(operand)
                          : matmul.getRhs());
    FailureOr<HostTensor> joined =
        concatenated(parts, dequantize ? 0 : 1, first.getLoc());
    if (failed(joined))
      return failure();
    weights.push_back(std::move(*joined));
  }
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
  SmallVector<Location> locs;
  for (MatmulOp matmul : group)
    locs.push_back(matmul.getLoc());
  Location loc = b.getFusedLoc(locs);
  SmallVector<Value> constants;
  for (const HostTensor &t : weights)
    constants.push_back(constantOf(b, loc, t, "packed_projection"));
  Value packedWeights = constants.front();
  if (dequantize) {
    // One dequantize of every projection's rows, read transposed.
    int64_t rows = weights.front().shape.front();
    auto type = RankedTensorType::get({rows, dequantize.getColumns()},
                                      dequantize.getType().getElementType());
    packedWeights =
        DequantizeOp::create(b, loc, type, constants[0], constants[1],
                             constants.size() > 2 ? constants[2] : Value(),
                             dequantize.getBits(), dequantize.getBlockSize());
  }
  auto resultType =
      inferMatmulType(loc, first.getLhs().getType(),
                      cast<RankedTensorType>(packedWeights.getType()), false,
                      /*transposeRhs=*/dequantize != nullptr);
  if (failed(resultType))
    return failure();
  Value product =
      MatmulOp::create(b, loc, *resultType, first.getLhs(), packedWeights,
                       false, /*transposeRhs=*/dequantize != nullptr);
  if (biases) {
    Location biasLoc = b.getFusedLoc(biasLocs);
    Value packedBiases = constantOf(b, biasLoc, *biases, "packed_bias");
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
    Operation *weightsOp = matmul.getRhs().getDefiningOp();
    matmul.getResult().replaceAllUsesWith(part);
    matmul->erase();
    // A dequantize read by this projection alone (packableDequantize).
    if (isa<DequantizeOp>(weightsOp))
      weightsOp->erase();
  }
  return success();
}

struct KilnLayoutPass : public kiln::impl::KilnLayoutPassBase<KilnLayoutPass> {
  void runOnOperation() override {
    // Projections by input, weight depth and form (packKeyOf), in program
    // order.
    llvm::MapVector<PackKey, SmallVector<MatmulOp>> groups;
    getOperation().walk([&](MatmulOp matmul) {
      if (std::optional<PackKey> key = packKeyOf(matmul))
        groups[*key].push_back(matmul);
    });
    for (auto &[key, group] : groups) {
      if (group.size() < 2)
        continue;
      if (failed(pack(group)))
        return signalPassFailure();
    }
  }
};

} // namespace
