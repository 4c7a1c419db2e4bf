//===- ShapeInference.h - one shape function per kiln op --------*- C++ -*-===//
//
// The verifiers, the builders (through InferTypeOpInterface) and the ONNX
// importer all call these, so an op's shape rule is written once. Each returns
// failure after emitting a diagnostic at `loc` when one is given.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_SHAPEINFERENCE_H
#define KILN_DIALECT_KILN_SHAPEINFERENCE_H

#include "kiln/Dialect/Kiln/DimExpr.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace kiln {

/// Numpy-style broadcast of two concrete shapes (the interpreter's).
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(std::optional<mlir::Location> loc, llvm::ArrayRef<int64_t> lhs,
                llvm::ArrayRef<int64_t> rhs);

/// Numpy-style broadcast of two symbolic shapes: a named size broadcasts
/// with 1 and with an equal size only.
mlir::FailureOr<SymbolicShape> broadcastSizes(std::optional<mlir::Location> loc,
                                              llvm::ArrayRef<DimExpr> lhs,
                                              llvm::ArrayRef<DimExpr> rhs);

/// The sizes of `type`'s dims; fails (with a diagnostic at `loc`) for a
/// dynamic dim without a `#kiln.dims` size.
mlir::FailureOr<SymbolicShape> sizesOf(std::optional<mlir::Location> loc,
                                       mlir::RankedTensorType type);

/// `2x(batch*sequence)x768`, for messages.
std::string sizesText(llvm::ArrayRef<DimExpr> sizes);

/// Result of an elementwise binary op: both element types equal, shapes
/// broadcast.
mlir::FailureOr<mlir::RankedTensorType>
inferBroadcastType(std::optional<mlir::Location> loc,
                   mlir::RankedTensorType lhs, mlir::RankedTensorType rhs);

// Elementwise math and comparisons.

/// Result of a per-element test such as `kiln.is_nan`: an i1 tensor of the
/// input's shape.
mlir::RankedTensorType inferPredicateType(mlir::RankedTensorType input);

/// Result of a comparison such as `kiln.less`: both element types equal,
/// shapes broadcast, i1 elements.
mlir::FailureOr<mlir::RankedTensorType>
inferCompareType(std::optional<mlir::Location> loc, mlir::RankedTensorType lhs,
                 mlir::RankedTensorType rhs);

/// Result of `kiln.where`: an i1 condition, `lhs` and `rhs` of one element
/// type, all three shapes broadcast.
mlir::FailureOr<mlir::RankedTensorType>
inferWhereType(std::optional<mlir::Location> loc,
               mlir::RankedTensorType condition, mlir::RankedTensorType lhs,
               mlir::RankedTensorType rhs);

/// Result of `kiln.matmul`: ranks >= 2, contracting dims equal, batch dims
/// broadcast.
mlir::FailureOr<mlir::RankedTensorType>
inferMatmulType(std::optional<mlir::Location> loc, mlir::RankedTensorType lhs,
                mlir::RankedTensorType rhs, bool transposeLhs,
                bool transposeRhs);

/// Result of the `kiln.reduce_*` ops: axes sorted, unique and in range.
mlir::FailureOr<mlir::RankedTensorType>
inferReduceType(std::optional<mlir::Location> loc,
                mlir::RankedTensorType input, llvm::ArrayRef<int64_t> axes,
                bool keepdims);

/// Result of `kiln.attention`: rank-4 query, key and value of one element
/// type, heads grouped evenly, the mask broadcasting to the scores.
mlir::FailureOr<mlir::RankedTensorType>
inferAttentionType(std::optional<mlir::Location> loc,
                   mlir::RankedTensorType query, mlir::RankedTensorType key,
                   mlir::RankedTensorType value, mlir::RankedTensorType mask);

/// Result of `kiln.transpose`: `permutation` is a permutation of the dims.
mlir::FailureOr<mlir::RankedTensorType>
inferTransposeType(std::optional<mlir::Location> loc,
                   mlir::RankedTensorType input,
                   llvm::ArrayRef<int64_t> permutation);

/// Result of `kiln.layer_norm` (and of `kiln.rms_norm`, with a null `bias`):
/// axis in range, scale and bias broadcast to the normalized dims, one
/// element type.
mlir::FailureOr<mlir::RankedTensorType>
inferLayerNormType(std::optional<mlir::Location> loc,
                   mlir::RankedTensorType input, mlir::RankedTensorType scale,
                   mlir::RankedTensorType bias, int64_t axis);

/// Checks a `kiln.reshape`: same element type and, when static, same number of
/// elements.
mlir::LogicalResult verifyReshapeTypes(std::optional<mlir::Location> loc,
                                       mlir::RankedTensorType input,
                                       mlir::RankedTensorType result);

/// Result of `kiln.concat`: one rank and element type, dims equal except
/// `axis` (in range), which adds up.
mlir::FailureOr<mlir::RankedTensorType>
inferConcatType(std::optional<mlir::Location> loc,
                llvm::ArrayRef<mlir::RankedTensorType> inputs, int64_t axis);

/// Result of `kiln.gather`: `data.shape[:axis] + indices.shape +
/// data.shape[axis+1:]`, axis in range.
mlir::FailureOr<mlir::RankedTensorType>
inferGatherType(std::optional<mlir::Location> loc, mlir::RankedTensorType data,
                mlir::RankedTensorType indices, int64_t axis);

/// Result of `kiln.gather_elements`: indices of the data's rank, no larger
/// than the data in any dim but `axis` (in range); the indices' shape.
mlir::FailureOr<mlir::RankedTensorType>
inferGatherElementsType(std::optional<mlir::Location> loc,
                        mlir::RankedTensorType data,
                        mlir::RankedTensorType indices, int64_t axis);

/// Checks a `kiln.slice`: one start and nonzero stride per dim, and every
/// index read (`starts[d] + i * strides[d]` for i < result dim) in bounds.
mlir::LogicalResult verifySliceTypes(std::optional<mlir::Location> loc,
                                     mlir::RankedTensorType input,
                                     mlir::RankedTensorType result,
                                     llvm::ArrayRef<int64_t> starts,
                                     llvm::ArrayRef<int64_t> strides);

/// Checks a `kiln.expand`: the input broadcasts to the result.
mlir::LogicalResult verifyExpandTypes(std::optional<mlir::Location> loc,
                                      mlir::RankedTensorType input,
                                      mlir::RankedTensorType result);

} // namespace kiln

#endif // KILN_DIALECT_KILN_SHAPEINFERENCE_H
