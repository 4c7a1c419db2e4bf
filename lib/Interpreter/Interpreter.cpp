//===- Interpreter.cpp - reference executor of kiln IR --------------------===//
//
// Each op is one plain loop nest over row-major indices; shapes are computed
// from the operands' runtime shapes and then checked against the declared
// result types, so a pass that breaks a shape is caught where it happens.
// `kiln.kernel` bodies run on an explicit stack of frames rather than by
// recursion, and each value is freed after its last use.
//
//===----------------------------------------------------------------------===//

#include "kiln/Interpreter/Interpreter.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include "DimValues.h"
#include "ExecuteAttention.h"
#include "ExecuteIndexing.h"
#include "ExecuteReductions.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`. Shapes reaching here passed
/// getCheckedNumElements, which bounds every partial product.
static SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Strides that read an operand of `shape` at each index of `resultShape`,
/// which `shape` broadcasts to: dims align from the right, and a broadcast dim
/// (size 1, or missing) has stride 0.
static SmallVector<int64_t> getBroadcastStrides(ArrayRef<int64_t> shape,
                                                ArrayRef<int64_t> resultShape) {
  SmallVector<int64_t> strides = getStrides(shape);
  SmallVector<int64_t> result(resultShape.size(), 0);
  size_t lead = resultShape.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    result[lead + d] = shape[d] == 1 ? 0 : strides[d];
  return result;
}

/// The offset, under `strides`, of the element at row-major position `linear`
/// of `shape`.
static int64_t getOffset(int64_t linear, ArrayRef<int64_t> shape,
                         ArrayRef<int64_t> strides) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    offset += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return offset;
}

/// The product of `dims`; the dims come from a checked shape.
static int64_t getProduct(ArrayRef<int64_t> dims) {
  int64_t product = 1;
  for (int64_t dim : dims)
    product *= dim;
  return product;
}

//===----------------------------------------------------------------------===//
// Integer arithmetic
//===----------------------------------------------------------------------===//

// Integer ops wrap modulo 2^64 through uint64_t (signed overflow is undefined
// behaviour); storing the result then wraps it to the element width.

/// `a + b`, wrapping.
static int64_t wrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}

/// `a - b`, wrapping.
static int64_t wrappingSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}

/// `a * b`, wrapping.
static int64_t wrappingMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}

/// `a / b` truncated toward zero. ONNX leaves division by zero undefined; it
/// gives 0 here so that a hostile constant cannot trap the host, and
/// INT64_MIN / -1 wraps like the other ops.
static int64_t truncatingDiv(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return wrappingSub(0, a);
  return a / b;
}

/// `a / b` of unsigned values; a division by zero is 0, as for signed ones.
static uint64_t unsignedDiv(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : a / b;
}

/// The remainder of unsigned `a / b` (ONNX Mod with either fmod, which agree
/// on values without a sign); a remainder by zero is 0.
static uint64_t unsignedRem(uint64_t a, uint64_t b) {
  return b == 0 ? 0 : a % b;
}

/// The larger of `a` and `b`, for integers of either signedness.
template <typename T> static T larger(T a, T b) { return a > b ? a : b; }

/// The smaller of `a` and `b`, for integers of either signedness.
template <typename T> static T smaller(T a, T b) { return a < b ? a : b; }

//===----------------------------------------------------------------------===//
// Op implementations
//===----------------------------------------------------------------------===//

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
static LogicalResult checkFloat(Operation *op, const HostTensor &tensor) {
  if (isa<FloatType>(tensor.elementType))
    return success();
  return op->emitOpError("expected a float element type, got ")
         << tensor.elementType;
}

/// Fails with an error at `op` unless `lhs` and `rhs` have one element
/// type.
static LogicalResult checkOneElementType(Operation *op, const HostTensor &lhs,
                                         const HostTensor &rhs) {
  if (lhs.elementType == rhs.elementType)
    return success();
  return op->emitOpError("expected operands of one element type, got ")
         << lhs.elementType << " and " << rhs.elementType;
}

/// Applies `floatFn` or `intFn` to the numpy-broadcast operands. `intFn` is
/// null for float-only ops, `floatFn` for integer-only ones. Unsigned
/// operands go to `unsignedFn` where their results differ from the signed
/// ones (order, division); without it, `intFn` gets their bits, which is
/// right for the ops that wrap modulo 2^width (add, sub, mul).
static FailureOr<HostTensor>
executeBinary(Operation *op, const HostTensor &lhs, const HostTensor &rhs,
              FloatBinaryFn floatFn, IntBinaryFn intFn,
              UnsignedBinaryFn unsignedFn = nullptr) {
  if (failed(checkOneElementType(op, lhs, rhs)))
    return failure();
  bool isFloat = isa<FloatType>(lhs.elementType);
  if (!intFn && failed(checkFloat(op, lhs)))
    return failure();
  if (!floatFn && isFloat)
    return op->emitOpError("expected an integer element type, got ")
           << lhs.elementType;
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(op->getLoc(), lhs.shape, rhs.shape);
  if (failed(shape))
    return failure();
  FailureOr<HostTensor> result =
      HostTensor::allocate(lhs.elementType, *shape, op->getLoc());
  if (failed(result))
    return failure();
  SmallVector<int64_t> lhsStrides = getBroadcastStrides(lhs.shape, *shape);
  SmallVector<int64_t> rhsStrides = getBroadcastStrides(rhs.shape, *shape);
  bool useUnsigned = unsignedFn && lhs.elementType.isUnsignedInteger();
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t l = getOffset(i, *shape, lhsStrides);
    int64_t r = getOffset(i, *shape, rhsStrides);
    if (isFloat)
      result->setFromDouble(i, floatFn(lhs.getAsDouble(l), rhs.getAsDouble(r)));
    else if (useUnsigned)
      result->setFromUnsigned(
          i, unsignedFn(static_cast<uint64_t>(lhs.getAsInt(l)),
                        static_cast<uint64_t>(rhs.getAsInt(r))));
    else
      result->setFromInt(i, intFn(lhs.getAsInt(l), rhs.getAsInt(r)));
  }
  return result;
}

/// Applies `floatFn` or `intFn` to each element. `intFn` is null for
/// float-only ops, `floatFn` for integer-only ones. Unsigned elements go to
/// `unsignedFn` where given, as in executeBinary.
static FailureOr<HostTensor>
executeUnary(Operation *op, const HostTensor &input, FloatUnaryFn floatFn,
             IntUnaryFn intFn, UnsignedUnaryFn unsignedFn = nullptr) {
  bool isFloat = isa<FloatType>(input.elementType);
  if (!intFn && failed(checkFloat(op, input)))
    return failure();
  if (!floatFn && isFloat)
    return op->emitOpError("expected an integer element type, got ")
           << input.elementType;
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, input.shape, op->getLoc());
  if (failed(result))
    return failure();
  bool useUnsigned = unsignedFn && input.elementType.isUnsignedInteger();
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i) {
    if (isFloat)
      result->setFromDouble(i, floatFn(input.getAsDouble(i)));
    else if (useUnsigned)
      result->setFromUnsigned(
          i, unsignedFn(static_cast<uint64_t>(input.getAsInt(i))));
    else
      result->setFromInt(i, intFn(input.getAsInt(i)));
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Elementwise math and comparisons
//===----------------------------------------------------------------------===//

/// `|a|`, wrapping: the most negative value stays itself, as in two's
/// complement hardware.
static int64_t wrappingAbs(int64_t a) { return a < 0 ? wrappingSub(0, a) : a; }

/// The remainder of `a / b` with the sign of `a` (C's `%`, ONNX Mod with
/// fmod = 1). A remainder by zero is 0, as a division by zero is.
static int64_t truncatingRem(int64_t a, int64_t b) {
  // b == -1 always leaves 0; testing it first avoids INT64_MIN % -1, which
  // traps on x86.
  if (b == 0 || b == -1)
    return 0;
  return a % b;
}

/// The remainder of `a / b` with the sign of `b` (Python's `%`, ONNX Mod
/// with fmod = 0).
static int64_t flooringRem(int64_t a, int64_t b) {
  int64_t r = truncatingRem(a, b);
  if (r != 0 && (r < 0) != (b < 0))
    r += b;
  return r;
}

/// `x` rounded to the nearest integer, halves to even, keeping the sign of
/// a zero result (`round(-0.4) = -0`). Spelled out rather than left to
/// std::nearbyint so it does not depend on the rounding mode.
static double roundHalfToEven(double x) {
  if (!std::isfinite(x))
    return x;
  double lower = std::floor(x);
  double fraction = x - lower;
  double rounded;
  if (fraction < 0.5)
    rounded = lower;
  else if (fraction > 0.5)
    rounded = lower + 1.0;
  else
    rounded = std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
  return rounded == 0.0 ? std::copysign(0.0, x) : rounded;
}

/// -1, 0 or 1 by the sign of `x`; NaN and zeros are returned as they are.
static double floatSign(double x) {
  if (x > 0.0)
    return 1.0;
  if (x < 0.0)
    return -1.0;
  return x;
}

/// The larger of `a` and `b`; NaN if either is NaN (numpy.maximum).
static double nanMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}

/// The smaller of `a` and `b`; NaN if either is NaN (numpy.minimum).
static double nanMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return a < b ? a : b;
}

/// Gelu with the exact Gaussian CDF: `0.5 x (1 + erf(x / sqrt(2)))`.
static double geluErf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

/// Gelu with the tanh approximation of the CDF.
static double geluTanh(double x) {
  const double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2 / pi)
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

/// Applies the float test `test` to each element; the result is i1.
static FailureOr<HostTensor>
executePredicate(Operation *op, const HostTensor &input,
                 llvm::function_ref<bool(double)> test) {
  if (failed(checkFloat(op, input)))
    return failure();
  FailureOr<HostTensor> result = HostTensor::allocate(
      IntegerType::get(op->getContext(), 1), input.shape, op->getLoc());
  if (failed(result))
    return failure();
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i)
    result->setFromInt(i, test(input.getAsDouble(i)) ? 1 : 0);
  return result;
}

/// Compares the numpy-broadcast operands with `compare`, a generic callable
/// applied to two doubles (floats), two uint64_t (unsigned integers) or two
/// int64_t (other integers; i1 operands compare as 0 and 1); the result is
/// i1.
template <typename Compare>
static FailureOr<HostTensor>
executeCompare(Operation *op, const HostTensor &lhs, const HostTensor &rhs,
               Compare compare) {
  if (failed(checkOneElementType(op, lhs, rhs)))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(op->getLoc(), lhs.shape, rhs.shape);
  if (failed(shape))
    return failure();
  FailureOr<HostTensor> result = HostTensor::allocate(
      IntegerType::get(op->getContext(), 1), *shape, op->getLoc());
  if (failed(result))
    return failure();
  SmallVector<int64_t> lhsStrides = getBroadcastStrides(lhs.shape, *shape);
  SmallVector<int64_t> rhsStrides = getBroadcastStrides(rhs.shape, *shape);
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
static FailureOr<HostTensor> executeWhere(Operation *op,
                                          const HostTensor &condition,
                                          const HostTensor &lhs,
                                          const HostTensor &rhs) {
  if (!condition.elementType.isInteger(1))
    return op->emitOpError("expected an i1 condition, got ")
           << condition.elementType;
  if (failed(checkOneElementType(op, lhs, rhs)))
    return failure();
  FailureOr<SmallVector<int64_t>> values =
      broadcastShapes(op->getLoc(), lhs.shape, rhs.shape);
  if (failed(values))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(op->getLoc(), condition.shape, *values);
  if (failed(shape))
    return failure();
  FailureOr<HostTensor> result =
      HostTensor::allocate(lhs.elementType, *shape, op->getLoc());
  if (failed(result))
    return failure();
  size_t width = getHostElementByteWidth(lhs.elementType);
  SmallVector<int64_t> condStrides =
      getBroadcastStrides(condition.shape, *shape);
  SmallVector<int64_t> lhsStrides = getBroadcastStrides(lhs.shape, *shape);
  SmallVector<int64_t> rhsStrides = getBroadcastStrides(rhs.shape, *shape);
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i) {
    bool choose = condition.getAsInt(getOffset(i, *shape, condStrides)) != 0;
    const HostTensor &source = choose ? lhs : rhs;
    int64_t offset = getOffset(i, *shape, choose ? lhsStrides : rhsStrides);
    std::memcpy(result->bytes.data() + i * width,
                source.bytes.data() + offset * width, width);
  }
  return result;
}

/// Converts each element as `kiln.cast` specifies; HostTensor's setters hold
/// those rules, so a float source goes through double, a signed integer
/// source through int64_t and an unsigned one through uint64_t.
static FailureOr<HostTensor> executeCast(CastOp op, const HostTensor &input) {
  FailureOr<HostTensor> result = HostTensor::allocate(
      op.getType().getElementType(), input.shape, op.getLoc());
  if (failed(result))
    return failure();
  int64_t count = result->numElements();
  dispatchNumericDomain(input.elementType, [&](auto domain) {
    using Domain = decltype(domain);
    for (int64_t i = 0; i < count; ++i)
      Domain::set(*result, i, Domain::get(input, i));
  });
  return result;
}

/// Checks that a layer_norm parameter broadcasts to the normalized dims
/// without growing them.
static LogicalResult checkNormParam(LayerNormOp op, StringRef what,
                                    const HostTensor &param,
                                    const HostTensor &input,
                                    ArrayRef<int64_t> normShape) {
  if (param.elementType != input.elementType)
    return op.emitOpError("expected ")
           << what << " of element type " << input.elementType << ", got "
           << param.elementType;
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(op.getLoc(), normShape, param.shape);
  if (failed(shape))
    return failure();
  if (ArrayRef<int64_t>(*shape) != normShape)
    return op.emitOpError("expected ")
           << what << " of type " << param.getType()
           << " to broadcast to the normalized dims of " << input.getType();
  return success();
}

/// `(x - mean) / sqrt(var + epsilon) * scale + bias` over the dims from
/// `axis` on, with the statistics in double (two passes: the mean, then the
/// variance around it).
static FailureOr<HostTensor> executeLayerNorm(LayerNormOp op,
                                              const HostTensor &input,
                                              const HostTensor &scale,
                                              const HostTensor *bias) {
  if (failed(checkFloat(op, input)))
    return failure();
  int64_t rank = input.shape.size();
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= rank)
    return op.emitOpError("axis ") << axis << " out of range for rank " << rank;
  ArrayRef<int64_t> normShape = ArrayRef<int64_t>(input.shape).drop_front(axis);
  if (failed(checkNormParam(op, "scale", scale, input, normShape)) ||
      (bias && failed(checkNormParam(op, "bias", *bias, input, normShape))))
    return failure();
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, input.shape, op.getLoc());
  if (failed(result))
    return failure();
  double epsilon = op.getEpsilon().convertToDouble();
  SmallVector<int64_t> scaleStrides =
      getBroadcastStrides(scale.shape, normShape);
  SmallVector<int64_t> biasStrides;
  if (bias)
    biasStrides = getBroadcastStrides(bias->shape, normShape);
  int64_t outer = getProduct(ArrayRef<int64_t>(input.shape).take_front(axis));
  int64_t size = getProduct(normShape);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t base = o * size;
    double sum = 0.0;
    for (int64_t j = 0; j < size; ++j)
      sum += input.getAsDouble(base + j);
    double mean = sum / static_cast<double>(size);
    double squares = 0.0;
    for (int64_t j = 0; j < size; ++j) {
      double centered = input.getAsDouble(base + j) - mean;
      squares += centered * centered;
    }
    double variance = squares / static_cast<double>(size);
    double deviation = std::sqrt(variance + epsilon);
    for (int64_t j = 0; j < size; ++j) {
      double value = (input.getAsDouble(base + j) - mean) / deviation *
                     scale.getAsDouble(getOffset(j, normShape, scaleStrides));
      if (bias)
        value += bias->getAsDouble(getOffset(j, normShape, biasStrides));
      result->setFromDouble(base + j, value);
    }
  }
  return result;
}

/// Every element of `tensor` as a double.
static std::vector<double> decodeFloats(const HostTensor &tensor) {
  std::vector<double> values(tensor.numElements());
  for (auto [index, value] : llvm::enumerate(values))
    value = tensor.getAsDouble(index);
  return values;
}

/// Batched matrix product; batch dims broadcast, each transpose flag swaps
/// its operand's last two dims. Floats accumulate in double, integers in
/// wrapping int64_t.
static FailureOr<HostTensor> executeMatmul(MatmulOp op, const HostTensor &lhs,
                                           const HostTensor &rhs) {
  if (lhs.elementType != rhs.elementType)
    return op.emitOpError("expected operands of one element type, got ")
           << lhs.elementType << " and " << rhs.elementType;
  if (lhs.shape.size() < 2 || rhs.shape.size() < 2)
    return op.emitOpError("expected operands of rank >= 2, got ")
           << lhs.shape.size() << " and " << rhs.shape.size();
  bool transposeLhs = op.getTransposeLhs();
  bool transposeRhs = op.getTransposeRhs();
  ArrayRef<int64_t> l = lhs.shape, r = rhs.shape;
  int64_t m = l[l.size() - (transposeLhs ? 1 : 2)];
  int64_t k = l[l.size() - (transposeLhs ? 2 : 1)];
  int64_t rhsK = r[r.size() - (transposeRhs ? 1 : 2)];
  int64_t n = r[r.size() - (transposeRhs ? 2 : 1)];
  if (k != rhsK)
    return op.emitOpError("expected contracting dims to match, got ")
           << k << " vs " << rhsK;
  ArrayRef<int64_t> lhsBatch = l.drop_back(2), rhsBatch = r.drop_back(2);
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(op.getLoc(), lhsBatch, rhsBatch);
  if (failed(batch))
    return failure();
  SmallVector<int64_t> resultShape = *batch;
  resultShape.push_back(m);
  resultShape.push_back(n);
  FailureOr<HostTensor> result =
      HostTensor::allocate(lhs.elementType, resultShape, op.getLoc());
  if (failed(result))
    return failure();

  // Batch strides count whole matrices; scale them to elements.
  SmallVector<int64_t> lhsBatchStrides = getBroadcastStrides(lhsBatch, *batch);
  SmallVector<int64_t> rhsBatchStrides = getBroadcastStrides(rhsBatch, *batch);
  int64_t batchCount = getProduct(*batch);
  bool isFloat = isa<FloatType>(lhs.elementType);
  // Each element is read n or m times: decode floats once, since decoding
  // f16 and bf16 goes through APFloat.
  std::vector<double> lhsValues, rhsValues;
  if (isFloat) {
    lhsValues = decodeFloats(lhs);
    rhsValues = decodeFloats(rhs);
  }
  for (int64_t b = 0; b < batchCount; ++b) {
    int64_t lhsBase = getOffset(b, *batch, lhsBatchStrides) * m * k;
    int64_t rhsBase = getOffset(b, *batch, rhsBatchStrides) * k * n;
    int64_t resultBase = b * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double floatSum = 0.0;
        int64_t intSum = 0;
        for (int64_t p = 0; p < k; ++p) {
          int64_t lhsIndex = lhsBase + (transposeLhs ? p * m + i : i * k + p);
          int64_t rhsIndex = rhsBase + (transposeRhs ? j * k + p : p * n + j);
          if (isFloat)
            floatSum += lhsValues[lhsIndex] * rhsValues[rhsIndex];
          else
            intSum = wrappingAdd(intSum, wrappingMul(lhs.getAsInt(lhsIndex),
                                                     rhs.getAsInt(rhsIndex)));
        }
        if (isFloat)
          result->setFromDouble(resultBase + i * n + j, floatSum);
        else
          result->setFromInt(resultBase + i * n + j, intSum);
      }
    }
  }
  return result;
}

/// Result dim `i` is input dim `permutation[i]`; elements move as raw bytes.
static FailureOr<HostTensor> executeTranspose(TransposeOp op,
                                              const HostTensor &input) {
  int64_t rank = input.shape.size();
  ArrayRef<int64_t> permutation = op.getPermutation();
  if (static_cast<int64_t>(permutation.size()) != rank)
    return op.emitOpError("expected a permutation of ")
           << rank << " dims, got " << permutation.size();
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> inputStrides = getStrides(input.shape);
  SmallVector<int64_t> resultShape, readStrides;
  for (int64_t p : permutation) {
    if (p < 0 || p >= rank || seen[p])
      return op.emitOpError("invalid permutation entry ") << p;
    seen[p] = true;
    resultShape.push_back(input.shape[p]);
    readStrides.push_back(inputStrides[p]);
  }
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, resultShape, op.getLoc());
  if (failed(result))
    return failure();
  size_t width = getHostElementByteWidth(input.elementType);
  int64_t count = result->numElements();
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(result->bytes.data() + i * width,
                input.bytes.data() +
                    getOffset(i, resultShape, readStrides) * width,
                width);
  return result;
}

/// The result shape of a reshape: its type's, symbolic dims at their values
/// in this run (verified IR has a size for every dynamic dim).
static FailureOr<SmallVector<int64_t>> resolveReshapeShape(ReshapeOp op,
                                                           const HostTensor &) {
  FailureOr<RankedTensorType> type = concreteType(op, op.getType());
  if (failed(type))
    return failure();
  return SmallVector<int64_t>(type->getShape());
}

/// Same bytes under the result shape.
static FailureOr<HostTensor> executeReshape(ReshapeOp op,
                                            const HostTensor &input) {
  if (op.getType().getElementType() != input.elementType)
    return op.emitOpError("expected one element type, got ")
           << input.elementType << " and " << op.getType().getElementType();
  FailureOr<SmallVector<int64_t>> shape = resolveReshapeShape(op, input);
  if (failed(shape))
    return failure();
  FailureOr<int64_t> count = getCheckedNumElements(*shape, op.getLoc());
  if (failed(count))
    return failure();
  if (*count != input.numElements())
    return op.emitOpError("cannot reshape ")
           << input.getType() << " into "
           << RankedTensorType::get(*shape, input.elementType);
  HostTensor result = input;
  result.shape = std::move(*shape);
  return result;
}

/// The float-only unary ops, each a function of one double: a row each.
static FloatUnaryFn getFloatUnaryFn(Operation *op) {
  static const llvm::DenseMap<TypeID, FloatUnaryFn> table = {
      {TypeID::get<SqrtOp>(), [](double x) { return std::sqrt(x); }},
      {TypeID::get<ErfOp>(), [](double x) { return std::erf(x); }},
      {TypeID::get<TanhOp>(), [](double x) { return std::tanh(x); }},
      {TypeID::get<ExpOp>(), [](double x) { return std::exp(x); }},
      {TypeID::get<SigmoidOp>(),
       [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {TypeID::get<ReciprocalOp>(), [](double x) { return 1.0 / x; }},
      {TypeID::get<LogOp>(), [](double x) { return std::log(x); }},
      {TypeID::get<FloorOp>(), [](double x) { return std::floor(x); }},
      {TypeID::get<CeilOp>(), [](double x) { return std::ceil(x); }},
      {TypeID::get<RoundOp>(), roundHalfToEven},
      {TypeID::get<SinOp>(), [](double x) { return std::sin(x); }},
      {TypeID::get<CosOp>(), [](double x) { return std::cos(x); }},
      {TypeID::get<SoftsignOp>(),
       [](double x) { return x / (1.0 + std::fabs(x)); }},
  };
  return table.lookup(op->getName().getTypeID());
}

/// Whether `op` has N >= 2 operands, or N and more (optional or variadic
/// ones), by the operand-count trait ODS gives it.
template <unsigned N> static bool declaresOperands(Operation *op) {
  return op->hasTrait<mlir::OpTrait::NOperands<N>::template Impl>() ||
         op->hasTrait<mlir::OpTrait::AtLeastNOperands<N>::template Impl>();
}

/// The fewest operands `op` has when it verifies, as its ODS definition
/// declares them; 0 for ops of variadic operands only.
static unsigned fewestOperands(Operation *op) {
  if (op->hasTrait<mlir::OpTrait::OneOperand>() ||
      op->hasTrait<mlir::OpTrait::AtLeastNOperands<1>::Impl>())
    return 1;
  if (declaresOperands<2>(op))
    return 2;
  if (declaresOperands<3>(op))
    return 3;
  if (declaresOperands<4>(op))
    return 4;
  return 0;
}

/// Runs one op that has exactly one result and no region.
static FailureOr<HostTensor> executeOp(Operation *op,
                                       ArrayRef<const HostTensor *> operands) {
  // Verified IR has these counts; checking them keeps unverified IR from
  // reading past the operand list.
  unsigned needed = fewestOperands(op);
  if (operands.size() < needed)
    return op->emitOpError("expected at least ")
           << needed << " operands, got " << operands.size();
  auto operand = [&](unsigned i) -> const HostTensor & { return *operands[i]; };
  if (FloatUnaryFn fn = getFloatUnaryFn(op))
    return executeUnary(op, operand(0), fn, nullptr);
  return llvm::TypeSwitch<Operation *, FailureOr<HostTensor>>(op)
      .Case([&](ConstantOp constant) {
        return HostTensor::fromElementsAttr(constant.getValue(),
                                            constant.getLoc());
      })
      .Case([&](SizesOp sizes) -> FailureOr<HostTensor> {
        FailureOr<HostTensor> result =
            HostTensor::allocate(sizes.getType().getElementType(),
                                 sizes.getType().getShape(), sizes.getLoc());
        if (failed(result))
          return failure();
        for (auto [i, size] : llvm::enumerate(sizes.getSizes())) {
          FailureOr<int64_t> value =
              evaluateSize(sizes, cast<StringAttr>(size).getValue());
          if (failed(value))
            return failure();
          if (isa<FloatType>(result->elementType))
            result->setFromDouble(i, static_cast<double>(*value));
          else
            result->setFromInt(i, *value);
        }
        return result;
      })
      .Case([&](AddOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return a + b; }, wrappingAdd);
      })
      .Case([&](SubOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return a - b; }, wrappingSub);
      })
      .Case([&](MulOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return a * b; }, wrappingMul);
      })
      .Case([&](DivOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return a / b; }, truncatingDiv,
            unsignedDiv);
      })
      .Case([&](PowOp) {
        return executeBinary(
            op, operand(0), operand(1),
            [](double a, double b) { return std::pow(a, b); }, nullptr);
      })
      .Case([&](NegOp) {
        return executeUnary(
            op, operand(0), [](double x) { return -x; },
            [](int64_t x) { return wrappingSub(0, x); });
      })
      .Case([&](ReluOp) {
        // NaN propagates, as numpy's maximum does; an unsigned value is
        // never negative.
        return executeUnary(
            op, operand(0),
            [](double x) { return std::isnan(x) || x > 0.0 ? x : 0.0; },
            [](int64_t x) { return x > 0 ? x : int64_t(0); },
            [](uint64_t x) { return x; });
      })
      // Elementwise math and comparisons.
      .Case([&](AbsOp) {
        return executeUnary(
            op, operand(0), [](double x) { return std::fabs(x); }, wrappingAbs,
            [](uint64_t x) { return x; });
      })
      .Case([&](SignOp) {
        return executeUnary(
            op, operand(0), floatSign,
            [](int64_t x) { return static_cast<int64_t>((x > 0) - (x < 0)); },
            [](uint64_t x) { return static_cast<uint64_t>(x != 0); });
      })
      .Case([&](NotOp) {
        return executeUnary(op, operand(0), nullptr,
                            [](int64_t x) { return int64_t(x == 0); });
      })
      .Case([&](GeluOp gelu) {
        return executeUnary(op, operand(0),
                            gelu.getApproximate() == GeluApproximation::tanh
                                ? geluTanh
                                : geluErf,
                            nullptr);
      })
      .Case([&](IsNaNOp) {
        return executePredicate(op, operand(0),
                                [](double x) { return std::isnan(x); });
      })
      .Case([&](IsInfOp isInf) {
        bool positive = isInf.getDetectPositive();
        bool negative = isInf.getDetectNegative();
        return executePredicate(op, operand(0), [&](double x) {
          return std::isinf(x) && (x > 0 ? positive : negative);
        });
      })
      .Case([&](MaxOp) {
        return executeBinary(op, operand(0), operand(1), nanMax,
                             larger<int64_t>, larger<uint64_t>);
      })
      .Case([&](MinOp) {
        return executeBinary(op, operand(0), operand(1), nanMin,
                             smaller<int64_t>, smaller<uint64_t>);
      })
      .Case([&](ModOp mod) -> FailureOr<HostTensor> {
        if (mod.getFmod())
          return executeBinary(
              op, operand(0), operand(1),
              [](double a, double b) { return std::fmod(a, b); }, truncatingRem,
              unsignedRem);
        if (isa<FloatType>(operand(0).elementType))
          return op->emitOpError("expected fmod = true for float operands");
        return executeBinary(op, operand(0), operand(1), nullptr, flooringRem,
                             unsignedRem);
      })
      .Case([&](AndOp) {
        return executeBinary(
            op, operand(0), operand(1), nullptr,
            [](int64_t a, int64_t b) -> int64_t { return a != 0 && b != 0; });
      })
      .Case([&](OrOp) {
        return executeBinary(
            op, operand(0), operand(1), nullptr,
            [](int64_t a, int64_t b) -> int64_t { return a != 0 || b != 0; });
      })
      .Case([&](XorOp) {
        return executeBinary(op, operand(0), operand(1), nullptr,
                             [](int64_t a, int64_t b) -> int64_t {
                               return (a != 0) != (b != 0);
                             });
      })
      .Case([&](EqualOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a == b; });
      })
      .Case([&](LessOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a < b; });
      })
      .Case([&](LessEqualOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a <= b; });
      })
      .Case([&](GreaterOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a > b; });
      })
      .Case([&](GreaterEqualOp) {
        return executeCompare(op, operand(0), operand(1),
                              [](auto a, auto b) { return a >= b; });
      })
      .Case([&](WhereOp) {
        return executeWhere(op, operand(0), operand(1), operand(2));
      })
      .Case([&](CastOp cast) { return executeCast(cast, operand(0)); })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(
          [&](Operation *reduce) { return executeReduce(reduce, operand(0)); })
      .Case<ArgMaxOp, ArgMinOp>(
          [&](Operation *arg) { return executeArgReduce(arg, operand(0)); })
      .Case([&](CumSumOp cumsum) { return executeCumSum(cumsum, operand(0)); })
      .Case([&](TopKOp topK) { return executeTopK(topK, operand(0)); })
      .Case<SoftmaxOp, LogSoftmaxOp>([&](Operation *softmax) {
        return executeSoftmax(softmax, operand(0));
      })
      .Case([&](LayerNormOp norm) {
        return executeLayerNorm(norm, operand(0), operand(1),
                                operands.size() > 2 ? operands[2] : nullptr);
      })
      .Case([&](AttentionOp attention) {
        return executeAttention(attention, operand(0), operand(1), operand(2),
                                operands.size() > 3 ? operands[3] : nullptr);
      })
      .Case([&](MatmulOp matmul) {
        return executeMatmul(matmul, operand(0), operand(1));
      })
      .Case([&](TransposeOp transpose) {
        return executeTranspose(transpose, operand(0));
      })
      .Case([&](ReshapeOp reshape) {
        return executeReshape(reshape, operand(0));
      })
      .Case([&](ConcatOp concat) { return executeConcat(concat, operands); })
      .Case([&](SliceOp slice) { return executeSlice(slice, operand(0)); })
      .Case([&](UpdateSliceOp update) {
        return executeUpdateSlice(update, operand(0), operand(1),
                                  update.getStarts() ? &operand(2) : nullptr);
      })
      .Case([&](GatherOp gather) {
        return executeGather(gather, operand(0), operand(1));
      })
      .Case([&](ExpandOp expand) { return executeExpand(expand, operand(0)); })
      .Case([&](GatherElementsOp gather) {
        return executeGatherElements(gather, operand(0), operand(1));
      })
      .Default([&](Operation *unknown) -> FailureOr<HostTensor> {
        return unknown->emitOpError(
            "is not supported by the reference interpreter");
      });
}

FailureOr<HostTensor> kiln::evaluateOp(Operation *op,
                                       ArrayRef<const HostTensor *> operands) {
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return op->emitOpError("cannot be evaluated on its own");
  return executeOp(op, operands);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

namespace {
/// One block under execution: the function body or a kernel body.
struct Frame {
  /// The block being run.
  Block *block;
  /// The next op to run in `block`.
  Block::iterator next;
  /// The live values of the block; a value is erased after its last use.
  llvm::DenseMap<Value, HostTensor> values;
  /// Uses not yet executed, per value, counted once per operand slot.
  llvm::DenseMap<Value, unsigned> usesLeft;
  /// The kernel whose body this is; null for the function body.
  KernelOp kernel;
};
} // namespace

/// A frame about to run `block`, with its use counts.
static std::unique_ptr<Frame> createFrame(Block &block, KernelOp kernel) {
  auto frame = std::make_unique<Frame>();
  frame->block = &block;
  frame->next = block.begin();
  frame->kernel = kernel;
  for (Operation &op : block)
    for (Value operand : op.getOperands())
      ++frame->usesLeft[operand];
  return frame;
}

/// Stores `tensor` as the value of `value` unless nothing uses it.
static void bindValue(Frame &frame, Value value, HostTensor tensor) {
  if (frame.usesLeft.lookup(value) > 0)
    frame.values[value] = std::move(tensor);
}

/// Collects the tensors of `op`'s operands.
static LogicalResult lookupOperands(Frame &frame, Operation *op,
                                    SmallVectorImpl<const HostTensor *> &out) {
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    auto it = frame.values.find(operand);
    if (it == frame.values.end())
      return op->emitOpError("operand #")
             << index << " has no value in the interpreter (defined outside "
             << "the block or not yet computed)";
    out.push_back(&it->second);
  }
  return success();
}

/// Counts one executed use of each operand of `op` and frees the values that
/// have no use left.
static void releaseOperands(Frame &frame, Operation *op) {
  for (Value operand : op->getOperands()) {
    auto it = frame.usesLeft.find(operand);
    if (it != frame.usesLeft.end() && it->second > 0 && --it->second == 0)
      frame.values.erase(operand);
  }
}

/// Checks a computed tensor against the declared type `type`: element type,
/// rank, and each static dim. `what` names the value in the message.
static LogicalResult checkTensorType(function_ref<InFlightDiagnostic()> emit,
                                     StringRef what, Type type,
                                     const HostTensor &tensor) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return emit() << what << ": expected a ranked tensor type, got " << type;
  if (tensor.elementType != tensorType.getElementType())
    return emit() << what << ": expected element type "
                  << tensorType.getElementType() << ", got "
                  << tensor.elementType;
  bool matches =
      tensorType.getRank() == static_cast<int64_t>(tensor.shape.size());
  // Symbolic dims are checked at their values in this run.
  std::optional<SmallVector<int64_t>> shape = concreteShapeOnThread(tensorType);
  for (size_t d = 0; matches && d < tensor.shape.size(); ++d)
    matches = shape ? (*shape)[d] == tensor.shape[d]
                    : ShapedType::isDynamic(tensorType.getDimSize(d)) ||
                          tensorType.getDimSize(d) == tensor.shape[d];
  if (!matches)
    return emit() << what << ": expected shape compatible with " << tensorType
                  << ", got " << tensor.getType();
  return success();
}

/// Checks that a caller-built tensor is self-consistent (supported type,
/// valid shape, right byte count) before its bytes are read.
static LogicalResult checkWellFormed(function_ref<InFlightDiagnostic()> emit,
                                     StringRef what, const HostTensor &tensor,
                                     Location loc) {
  int64_t width = getHostElementByteWidth(tensor.elementType);
  if (width == 0)
    return emit() << what << ": unsupported element type "
                  << tensor.elementType;
  FailureOr<int64_t> count = getCheckedNumElements(tensor.shape, loc);
  if (failed(count))
    return failure();
  if (tensor.bytes.size() != static_cast<size_t>(*count * width))
    return emit() << what << ": expected " << *count * width
                  << " bytes of data, got " << tensor.bytes.size();
  return success();
}

/// Starts running the body of `kernel`, whose operands live in `frame`.
static FailureOr<std::unique_ptr<Frame>> enterKernel(Frame &frame,
                                                     KernelOp kernel) {
  if (kernel.getBody().empty())
    return kernel.emitOpError("expected a body");
  Block &body = kernel.getBody().front();
  if (body.getNumArguments() != kernel->getNumOperands())
    return kernel.emitOpError("expected ")
           << kernel->getNumOperands() << " block arguments, got "
           << body.getNumArguments();
  SmallVector<const HostTensor *> operands;
  if (failed(lookupOperands(frame, kernel, operands)))
    return failure();
  std::unique_ptr<Frame> child = createFrame(body, kernel);
  for (auto [argument, tensor] : llvm::zip(body.getArguments(), operands)) {
    if (failed(checkTensorType([&] { return kernel.emitOpError(); },
                               "block argument", argument.getType(), *tensor)))
      return failure();
    bindValue(*child, argument, *tensor);
  }
  releaseOperands(frame, kernel);
  return child;
}

/// Copies the tensors of `op`'s operands (yield or return values).
static FailureOr<SmallVector<HostTensor>> collectOperands(Frame &frame,
                                                          Operation *op) {
  SmallVector<const HostTensor *> operands;
  if (failed(lookupOperands(frame, op, operands)))
    return failure();
  SmallVector<HostTensor> values;
  for (const HostTensor *tensor : operands)
    values.push_back(*tensor);
  return values;
}

FailureOr<SmallVector<HostTensor>>
kiln::interpretFunction(func::FuncOp func, ArrayRef<HostTensor> inputs) {
  if (func.isExternal())
    return func.emitError("cannot interpret a function without a body");
  if (!func.getBody().hasOneBlock())
    return func.emitError("expected a body of one block, got ")
           << func.getBody().getBlocks().size() << " blocks";
  Block &entry = func.getBody().front();
  if (inputs.size() != entry.getNumArguments())
    return func.emitError("expected ")
           << entry.getNumArguments() << " inputs, got " << inputs.size();

  SmallVector<std::unique_ptr<Frame>> frames;
  frames.push_back(createFrame(entry, KernelOp()));
  for (auto [index, argument, input] :
       llvm::enumerate(entry.getArguments(), inputs)) {
    std::string what = "input #" + std::to_string(index);
    auto emit = [&] { return func.emitError(); };
    if (failed(checkWellFormed(emit, what, input, func.getLoc())) ||
        failed(checkTensorType(emit, what, argument.getType(), input)))
      return failure();
    bindValue(*frames.back(), argument, input);
  }
  llvm::StringMap<int64_t> dimValues;
  if (failed(learnDimValues(func, inputs, dimValues)))
    return failure();
  ScopedDimValues scopedDims(dimValues);

  while (true) {
    Frame &frame = *frames.back();
    if (frame.next == frame.block->end())
      return func.emitError("a block ended without a terminator");
    Operation *op = &*frame.next++;

    if (auto kernel = dyn_cast<KernelOp>(op)) {
      FailureOr<std::unique_ptr<Frame>> child = enterKernel(frame, kernel);
      if (failed(child))
        return failure();
      frames.push_back(std::move(*child));
      continue;
    }

    if (isa<YieldOp>(op)) {
      KernelOp kernel = frame.kernel;
      if (!kernel || frames.size() < 2)
        return op->emitOpError("outside of a kernel body");
      FailureOr<SmallVector<HostTensor>> values = collectOperands(frame, op);
      if (failed(values))
        return failure();
      if (values->size() != kernel->getNumResults())
        return op->emitOpError("yields ")
               << values->size() << " values for a kernel of "
               << kernel->getNumResults() << " results";
      frames.pop_back();
      Frame &parent = *frames.back();
      for (auto [result, tensor] : llvm::zip(kernel->getResults(), *values)) {
        if (failed(checkTensorType([&] { return kernel.emitOpError(); },
                                   "result", result.getType(), tensor)))
          return failure();
        bindValue(parent, result, std::move(tensor));
      }
      continue;
    }

    if (isa<func::ReturnOp>(op)) {
      if (frames.size() != 1)
        return op->emitOpError("inside a kernel body");
      FailureOr<SmallVector<HostTensor>> values = collectOperands(frame, op);
      if (failed(values))
        return failure();
      ArrayRef<Type> resultTypes = func.getFunctionType().getResults();
      if (values->size() != resultTypes.size())
        return op->emitOpError("returns ")
               << values->size() << " values from a function of "
               << resultTypes.size() << " results";
      for (auto [index, type, tensor] : llvm::enumerate(resultTypes, *values))
        if (failed(checkTensorType([&] { return op->emitOpError(); },
                                   "result #" + std::to_string(index), type,
                                   tensor)))
          return failure();
      return values;
    }

    if (op->getNumRegions() != 0 || op->getNumResults() != 1)
      return op->emitOpError("is not supported by the reference interpreter");
    SmallVector<const HostTensor *> operands;
    if (failed(lookupOperands(frame, op, operands)))
      return failure();
    FailureOr<HostTensor> result = executeOp(op, operands);
    if (failed(result))
      return failure();
    if (failed(checkTensorType([&] { return op->emitOpError(); }, "result",
                               op->getResult(0).getType(), *result)))
      return failure();
    bindValue(frame, op->getResult(0), std::move(*result));
    releaseOperands(frame, op);
  }
}
