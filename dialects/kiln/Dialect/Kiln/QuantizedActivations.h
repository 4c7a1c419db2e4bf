//===- QuantizedActivations.h - 8-bit activations a product reads -*- C++
//-*-===//
//
// The one definition of the activations an 8-bit integer GEMM reads: a Q/DQ
// graph's DequantizeLinear of 8-bit integers per tensor, as the importer
// writes it, `(float(q) - zero) * scale` (or `float(q) * scale` without a
// zero point). kiln-fuse takes these ops into a GEMM kernel whose weights
// are 8-bit too, and the CUDA target reads them back out of that kernel to
// multiply the integers themselves.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_QUANTIZEDACTIVATIONS_H
#define KILN_DIALECT_KILN_QUANTIZEDACTIVATIONS_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <optional>

namespace kiln {

/// What `(float(quantized) - zero) * scale` is made of: the integers, the
/// zero point (null where there is none) and the scale, each of the last
/// two one value; and the ops, the cast first and the multiply last, then
/// maybe a cast to a narrower float (mixed precision's, before a 16-bit
/// product; the zero point and scale keep the wider type).
struct DequantizedActivations {
  mlir::Value quantized, zero, scale;
  llvm::SmallVector<mlir::Operation *, 4> ops;
};

/// Whether `v` is a tensor of one element (a per-tensor scale or zero).
inline bool holdsOneValue(mlir::Value v) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

/// `v` as the dequantization of 8-bit integers (signed or not) into its
/// float type, per tensor; or none.
inline std::optional<DequantizedActivations>
dequantizedActivations(mlir::Value v) {
  // A narrowing cast last: the dequantization computed in the wider type.
  auto narrow = v.getDefiningOp<CastOp>();
  if (narrow) {
    auto from = llvm::dyn_cast<mlir::FloatType>(
        mlir::getElementTypeOrSelf(narrow.getInput().getType()));
    auto to = llvm::dyn_cast<mlir::FloatType>(
        mlir::getElementTypeOrSelf(v.getType()));
    if (!from || !to || from.getWidth() <= to.getWidth())
      return std::nullopt;
    v = narrow.getInput();
  }
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  for (auto [x, scale] : {std::pair{mul.getLhs(), mul.getRhs()},
                          std::pair{mul.getRhs(), mul.getLhs()}}) {
    DequantizedActivations result;
    result.scale = scale;
    if (!holdsOneValue(scale))
      continue;
    mlir::Value widened = x;
    mlir::Operation *sub = nullptr;
    if (auto difference = x.getDefiningOp<SubOp>()) {
      if (!holdsOneValue(difference.getRhs()))
        continue;
      result.zero = difference.getRhs();
      widened = difference.getLhs();
      sub = difference;
    }
    auto widen = widened.getDefiningOp<CastOp>();
    if (!widen)
      continue;
    result.quantized = widen.getInput();
    auto element = llvm::dyn_cast<mlir::IntegerType>(
        mlir::getElementTypeOrSelf(result.quantized.getType()));
    if (!element || element.getWidth() != 8 || widened.getType() != v.getType())
      continue;
    result.ops.push_back(widen);
    if (sub)
      result.ops.push_back(sub);
    result.ops.push_back(mul);
    if (narrow)
      result.ops.push_back(narrow);
    return result;
  }
  return std::nullopt;
}

/// Whether the 8-bit activations `quantized` are unsigned (a GEMM of
/// signed bytes reads them less 128, and their zero point too).
inline bool isUnsignedActivation(mlir::Value quantized) {
  return mlir::getElementTypeOrSelf(quantized.getType()).isUnsignedInteger();
}

} // namespace kiln

#endif // KILN_DIALECT_KILN_QUANTIZEDACTIVATIONS_H
