//===- FusedOpConverter.h - helpers of fused-form converters ----*- C++ -*-===//
//
// What the converters of ConvertFusedOps.cpp and ConvertRotaryEmbedding.cpp
// share: checked elementwise ops, casts, slices and input checks that name
// the offending input, so that every form Kiln does not support is rejected
// at import with the node and the feature in the message.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_FUSEDOPCONVERTER_H
#define KILN_LIB_IMPORTER_ONNX_FUSEDOPCONVERTER_H

#include "NodeConverter.h"

namespace kiln {

/// How the features of a rotary embedding's input split into heads and
/// rotated pairs.
struct RotaryLayout {
  int64_t numHeads;
  int64_t headSize;
  int64_t rotaryDim;
  bool interleaved;
};

/// An RMS-normalized tensor and the statistic it was divided by.
struct RMSNormalized {
  mlir::Value y;
  mlir::Value invStdDev;
};

/// A NodeConverterBase with the helpers that the fused-form converters use.
struct FusedOpConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// The element type of normalization sums and statistics.
  mlir::Type wideType() { return b.getF32Type(); }

  /// `x / sqrt(mean(x^2) + epsilon) * scale` over the dims from `axis` on,
  /// with x and scale already wide; also `1 / sqrt(...)` when `wantsInv`
  /// (ConvertFusedOps.cpp). GroupQueryAttention's per-head Q/K norm uses
  /// it too.
  mlir::FailureOr<RMSNormalized> rmsNormalize(mlir::Value x, mlir::Value scale,
                                              int64_t axis, float epsilon,
                                              bool wantsInv);

  /// `x`, [B, N, S, D] or [B, S, N * D], with its first `rotaryDim` features
  /// of each head rotated by the angles `cos` and `sin`, [1 or B, S,
  /// rotaryDim / 2] (ConvertRotaryEmbedding.cpp). GroupQueryAttention's
  /// do_rotary uses it too.
  mlir::FailureOr<mlir::Value> rotated(mlir::Value x, mlir::Value cos,
                                       mlir::Value sin,
                                       const RotaryLayout &layout);

  /// An error naming the op and the node: diagnostics print only the model
  /// file's part of the node's location.
  mlir::InFlightDiagnostic error() {
    llvm::StringRef name = llvm::cast<mlir::NameLoc>(loc).getName().strref();
    return mlir::emitError(loc)
           << node.op_type() << " at node '" << name << "': ";
  }

  /// True when the node names output `i`; optional outputs may be absent or
  /// given as "".
  bool wantsOutput(int i) const {
    return i < node.output_size() && !node.output(i).empty();
  }

  /// `count` entries of dim `axis` of `x` from `start`, `step` apart (`x`
  /// itself when that is all of it).
  mlir::Value sliceAlong(mlir::Value x, int64_t axis, int64_t start,
                         int64_t count, int64_t step = 1) {
    mlir::RankedTensorType type = typeOf(x);
    if (start == 0 && step == 1 && count == type.getDimSize(axis))
      return x;
    llvm::SmallVector<int64_t> starts(type.getRank(), 0),
        strides(type.getRank(), 1), shape(type.getShape());
    starts[axis] = start;
    strides[axis] = step;
    shape[axis] = count;
    return SliceOp::create(b, loc, type.clone(shape), x, starts, strides);
  }

  /// Input `i`, called `name` in messages, which must be present and hold
  /// floats.
  mlir::FailureOr<mlir::Value> requiredFloat(int i, llvm::StringRef name) {
    mlir::Value value = importer.input(node, i);
    if (!value)
      return error() << "missing required input " << i << " (" << name << ")";
    mlir::Type et = typeOf(value).getElementType();
    if (!llvm::isa<mlir::FloatType>(et))
      return error() << "input " << i << " (" << name
                     << ") must hold floats, got " << et;
    return value;
  }

  /// Fails unless `value` (input `name`) has element type `elementType` and,
  /// when `shape` is given, exactly that shape.
  mlir::LogicalResult
  expectType(mlir::Value value, llvm::StringRef name, mlir::Type elementType,
             std::optional<llvm::ArrayRef<int64_t>> shape = std::nullopt) {
    mlir::RankedTensorType type = typeOf(value);
    if (type.getElementType() != elementType)
      return error() << name << " has element type " << type.getElementType()
                     << ", expected " << elementType;
    if (shape && type.getShape() != *shape) {
      auto diag = error() << name << " must have shape [";
      llvm::interleave(*shape, diag, ",");
      diag << "], got [";
      llvm::interleave(type.getShape(), diag, ",");
      return diag << "]";
    }
    return mlir::success();
  }
};

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_FUSEDOPCONVERTER_H
