//===- QuantizedActivations.h - 8-bit activations a product reads -*- C++
//-*-===//
//
// The one definition of the activations an 8-bit GEMM reads: a Q/DQ
// graph's DequantizeLinear of 8-bit integers or float8 E4M3FN values per
// tensor, as the importer writes it, `(float(q) - zero) * scale` (or
// `float(q) * scale` without a zero point). kiln-fuse takes these ops into
// a GEMM kernel whose weights are 8-bit values of the same kind, and the
// CUDA target reads them back out of that kernel to multiply the bytes
// themselves.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_QUANTIZEDACTIVATIONS_H
#define KILN_DIALECT_KILN_QUANTIZEDACTIVATIONS_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <optional>

namespace kiln {

/// What `(float(quantized) - zero) * scale` is made of: the 8-bit values, the
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

/// Whether `t` is an 8-bit element type an 8-bit GEMM reads: an integer
/// (signed or not) or float8 E4M3FN.
inline bool isEightBitActivationType(mlir::Type t) {
  auto integer = llvm::dyn_cast<mlir::IntegerType>(t);
  return (integer && integer.getWidth() == 8) ||
         llvm::isa<mlir::Float8E4M3FNType>(t);
}

/// `v` as the dequantization of 8-bit integers (signed or not) or float8
/// E4M3FN values into its float type, per tensor; or none.
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
    if (!isEightBitActivationType(
            mlir::getElementTypeOrSelf(result.quantized.getType())) ||
        widened.getType() != v.getType())
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

/// Whether the 8-bit activations `quantized` are float8 E4M3FN values
/// rather than integers.
inline bool isFloat8Activation(mlir::Value quantized) {
  return llvm::isa<mlir::Float8E4M3FNType>(
      mlir::getElementTypeOrSelf(quantized.getType()));
}

} // namespace kiln

#endif // KILN_DIALECT_KILN_QUANTIZEDACTIVATIONS_H
