//===- ExecuteElementwise.h - elementwise ops on the host -------*- C++ -*-===//

#ifndef KILN_LIB_INTERPRETER_EXECUTEELEMENTWISE_H
#define KILN_LIB_INTERPRETER_EXECUTEELEMENTWISE_H

#include "IndexArithmetic.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Interpreter/Interpreter.h"

namespace kiln {

/// An elementwise float function of two operands.
using FloatBinaryFn = double (*)(double, double);
/// An elementwise integer function of two operands.
using IntBinaryFn = int64_t (*)(int64_t, int64_t);
/// An elementwise float function of one operand.
using FloatUnaryFn = double (*)(double);
/// An elementwise integer function of one operand.
using IntUnaryFn = int64_t (*)(int64_t);
/// An elementwise function of two unsigned integer operands.
using UnsignedBinaryFn = uint64_t (*)(uint64_t, uint64_t);
/// An elementwise function of one unsigned integer operand.
using UnsignedUnaryFn = uint64_t (*)(uint64_t);

/// Fails on an integer tensor given to an op defined on floats only.
mlir::LogicalResult checkFloat(mlir::Operation *op, const HostTensor &tensor);

/// Fails with an error at `op` unless `lhs` and `rhs` have one element
/// type.
mlir::LogicalResult checkOneElementType(mlir::Operation *op,
                                        const HostTensor &lhs,
                                        const HostTensor &rhs);

/// Applies `floatFn` or `intFn` to the numpy-broadcast operands. `intFn` is
/// null for float-only ops, `floatFn` for integer-only ones. Unsigned
/// operands go to `unsignedFn` where their results differ from the signed
/// ones (order, division); without it, `intFn` gets their bits, which is
/// right for the ops that wrap modulo 2^width (add, sub, mul).
mlir::FailureOr<HostTensor>
executeBinary(mlir::Operation *op, const HostTensor &lhs, const HostTensor &rhs,
              FloatBinaryFn floatFn, IntBinaryFn intFn,
              UnsignedBinaryFn unsignedFn = nullptr);

/// Applies `floatFn` or `intFn` to each element. `intFn` is null for
/// float-only ops, `floatFn` for integer-only ones. Unsigned elements go to
/// `unsignedFn` where given, as in executeBinary.
mlir::FailureOr<HostTensor> executeUnary(mlir::Operation *op,
                                         const HostTensor &input,
                                         FloatUnaryFn floatFn, IntUnaryFn intFn,
                                         UnsignedUnaryFn unsignedFn = nullptr);

/// The float-only unary ops, each a function of one double: a row each.
/// Returns the function of `op`, or null when `op` is not one of them.
FloatUnaryFn getFloatUnaryFn(mlir::Operation *op);

/// Applies the float test `test` to each element; the result is i1.
mlir::FailureOr<HostTensor>
executePredicate(mlir::Operation *op, const HostTensor &input,
                 llvm::function_ref<bool(double)> test);

/// Compares the numpy-broadcast operands with `compare`, a generic callable
/// applied to two doubles (floats), two uint64_t (unsigned integers) or two
/// int64_t (other integers; i1 operands compare as 0 and 1); the result is
/// i1.
template <typename Compare>
mlir::FailureOr<HostTensor>
executeCompare(mlir::Operation *op, const HostTensor &lhs,
               const HostTensor &rhs, Compare compare) {
  if (mlir::failed(checkOneElementType(op, lhs, rhs)))
    return mlir::failure();
  mlir::FailureOr<llvm::SmallVector<int64_t>> shape =
      broadcastShapes(op->getLoc(), lhs.shape, rhs.shape);
  if (mlir::failed(shape))
    return mlir::failure();
  mlir::FailureOr<HostTensor> result = HostTensor::allocate(
      mlir::IntegerType::get(op->getContext(), 1), *shape, op->getLoc());
  if (mlir::failed(result))
    return mlir::failure();
  llvm::SmallVector<int64_t> lhsStrides =
      getBroadcastStrides(lhs.shape, *shape);
  llvm::SmallVector<int64_t> rhsStrides =
      getBroadcastStrides(rhs.shape, *shape);
  int64_t count = result->numElements();
  dispatchNumericDomain(lhs.elementType, [&](auto domain) {
    using Domain = decltype(domain);
    for (int64_t i = 0; i < count; ++i) {
      int64_t l = getOffset(i, *shape, lhsStrides);
      int64_t r = getOffset(i, *shape, rhsStrides);
      bool value = compare(Domain::get(lhs, l), Domain::get(rhs, r));
      result->setFromInt(i, value ? 1 : 0);
    }
  });
  return result;
}

/// `condition ? lhs : rhs` per element, all three numpy-broadcast. Elements
/// are copied as bytes, so every element type is exact.
mlir::FailureOr<HostTensor> executeWhere(mlir::Operation *op,
                                         const HostTensor &condition,
                                         const HostTensor &lhs,
                                         const HostTensor &rhs);

/// `input` when each element is in [low, high) (bounds broadcast to it);
/// otherwise an error naming the op's `what`, the value and the bounds.
mlir::FailureOr<HostTensor> executeCheckRange(CheckRangeOp op,
                                              const HostTensor &input,
                                              const HostTensor &low,
                                              const HostTensor &high);

/// Converts each element as `kiln.cast` specifies; HostTensor's setters hold
/// those rules, so a float source goes through double, a signed integer
/// source through int64_t and an unsigned one through uint64_t.
mlir::FailureOr<HostTensor> executeCast(CastOp op, const HostTensor &input);

} // namespace kiln

#endif // KILN_LIB_INTERPRETER_EXECUTEELEMENTWISE_H
