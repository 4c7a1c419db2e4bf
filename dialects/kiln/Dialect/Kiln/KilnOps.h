//===- KilnOps.h - kiln dialect ops -----------------------------*- C++ -*-===//

#ifndef KILN_DIALECT_KILN_KILNOPS_H
#define KILN_DIALECT_KILN_KILNOPS_H

#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TensorEncoding.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/Kiln/KilnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kiln/KilnAttrs.h.inc"

namespace kiln::OpTrait {
/// Ops computed element by element with ONNX broadcasting of their operands.
template <typename ConcreteType>
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {
};
/// Ops a reduction kernel is built around (reductions, softmax, norms).
template <typename ConcreteType>
class Reduction : public mlir::OpTrait::TraitBase<ConcreteType, Reduction> {};
/// Ops that only move data (transpose, reshape, concat, slice, gather,
/// gather_elements, expand).
template <typename ConcreteType>
class DataMovement
    : public mlir::OpTrait::TraitBase<ConcreteType, DataMovement> {};
} // namespace kiln::OpTrait

namespace kiln {
/// True for ops that carry the kiln Elementwise trait.
inline bool isElementwise(mlir::Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>();
}
/// True for ops that carry the kiln Reduction trait.
inline bool isReduction(mlir::Operation *op) {
  return op->hasTrait<OpTrait::Reduction>();
}
/// True for ops that carry the kiln DataMovement trait.
inline bool isDataMovement(mlir::Operation *op) {
  return op->hasTrait<OpTrait::DataMovement>();
}
/// True for data movement out of one tensor (reshape, transpose, slice,
/// expand): a cast of its operand commutes with it.
inline bool movesOneTensor(mlir::Operation *op) {
  return isDataMovement(op) && op->getNumOperands() == 1;
}
} // namespace kiln

#define GET_OP_CLASSES
#include "kiln/Dialect/Kiln/KilnOps.h.inc"

namespace kiln {
/// True for the normalizations of trailing dims, from `axis` on, that a row
/// kernel computes: kiln.layer_norm and kiln.rms_norm.
inline bool isRowNorm(mlir::Operation *op) {
  return mlir::isa<LayerNormOp, RmsNormOp>(op);
}
/// The first dim row norm `op` normalizes.
inline int64_t rowNormAxis(mlir::Operation *op) {
  if (auto norm = mlir::dyn_cast<LayerNormOp>(op))
    return norm.getAxis();
  return mlir::cast<RmsNormOp>(op).getAxis();
}
/// The epsilon row norm `op` adds to the mean square.
inline llvm::APFloat rowNormEpsilon(mlir::Operation *op) {
  if (auto norm = mlir::dyn_cast<LayerNormOp>(op))
    return norm.getEpsilon();
  return mlir::cast<RmsNormOp>(op).getEpsilon();
}
/// What row norm `op` multiplies by.
inline mlir::Value rowNormScale(mlir::Operation *op) {
  if (auto norm = mlir::dyn_cast<LayerNormOp>(op))
    return norm.getScale();
  return mlir::cast<RmsNormOp>(op).getScale();
}
/// What row norm `op` adds last: a LayerNorm's bias, or null.
inline mlir::Value rowNormShift(mlir::Operation *op) {
  if (auto norm = mlir::dyn_cast<LayerNormOp>(op))
    return norm.getBias();
  return nullptr;
}
} // namespace kiln

#endif // KILN_DIALECT_KILN_KILNOPS_H
