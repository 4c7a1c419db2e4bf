//===- ExecuteReductions.cpp - reductions, scans and top-k on the host ----===//
//
// Floats accumulate in double and integers in 64 bits (wrapping, as the
// generated kernels do), so the reference is at least as accurate as any
// kernel; unsigned integers are ordered as uint64_t. NaN propagates through
// max and min, as in numpy.
//
//===----------------------------------------------------------------------===//

#include "ExecuteReductions.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <type_traits>

using namespace mlir;

namespace kiln {

namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// How an input of `shape` is walked by a reduction over the dims marked in
/// `reduced`: element i lands in result element resultIndex(i).
struct ReducedView {
  SmallVector<int64_t> shape;
  /// Row-major strides of the result with reduced dims kept as 1; 0 on
  /// reduced dims.
  SmallVector<int64_t> resultStrides;

  ReducedView(ArrayRef<int64_t> shape, ArrayRef<bool> reduced)
      : shape(shape), resultStrides(shape.size(), 0) {
    int64_t stride = 1;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (reduced[d])
        continue;
      resultStrides[d] = stride;
      stride *= shape[d];
    }
  }

  int64_t resultIndex(int64_t linear) const {
    int64_t offset = 0;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      offset += (linear % shape[d]) * resultStrides[d];
      linear /= shape[d];
    }
    return offset;
  }
};

/// Marks `axes` in a rank-`rank` mask; fails on unsorted or out-of-range
/// axes, which the verifier rejects in well-formed IR.
FailureOr<SmallVector<bool>> reducedDims(Operation *op, ArrayRef<int64_t> axes,
                                         int64_t rank) {
  SmallVector<bool> reduced(rank, false);
  for (auto [index, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return op->emitOpError("axis ") << axis << " out of range for rank "
                                      << rank;
    if (index > 0 && axes[index - 1] >= axis)
      return op->emitOpError("expected sorted unique axes");
    reduced[axis] = true;
  }
  return reduced;
}

/// The smallest and largest values of an integer element type, as `T`
/// (int64_t for signed types and i1, uint64_t for unsigned ones); i1 holds
/// false and true.
template <typename T> std::pair<T, T> intRange(Type elementType) {
  unsigned width = elementType.getIntOrFloatBitWidth();
  if (width == 1)
    return {0, 1};
  if constexpr (std::is_unsigned_v<T>)
    return {0, static_cast<T>(~uint64_t(0) >> (64 - width))};
  if (width >= 64)
    return {std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
  T high = (T{1} << (width - 1)) - 1;
  return {-high - 1, high};
}

/// Integer element `i` of `tensor` as `T`: uint64_t for unsigned types (so
/// that a ui64 value of 2^63 or more orders above the others), else int64_t.
template <typename T> T getInteger(const HostTensor &tensor, int64_t i) {
  return static_cast<T>(tensor.getAsInt(i));
}

/// Whether integer element `a` of `tensor` is below element `b`, in the
/// order of the tensor's signedness.
bool integerLess(const HostTensor &tensor, int64_t a, int64_t b) {
  return dispatchNumericDomain(tensor.elementType, [&](auto domain) {
    using Domain = decltype(domain);
    return Domain::get(tensor, a) < Domain::get(tensor, b);
  });
}

double combine(ReduceKind kind, double acc, double x) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    return acc + x;
  case ReduceKind::Prod:
    return acc * x;
  case ReduceKind::Max:
    return std::isnan(acc) || acc >= x ? acc : x;
  case ReduceKind::Min:
    return std::isnan(acc) || acc <= x ? acc : x;
  }
  llvm_unreachable("unknown reduce kind");
}

/// Combines integers as int64_t or uint64_t (see intRange).
template <typename T> T combine(ReduceKind kind, T acc, T x) {
  // Unsigned arithmetic wraps where signed overflow would be undefined.
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    return static_cast<T>(static_cast<uint64_t>(acc) +
                          static_cast<uint64_t>(x));
  case ReduceKind::Prod:
    return static_cast<T>(static_cast<uint64_t>(acc) *
                          static_cast<uint64_t>(x));
  case ReduceKind::Max:
    return std::max(acc, x);
  case ReduceKind::Min:
    return std::min(acc, x);
  }
  llvm_unreachable("unknown reduce kind");
}

/// Reduces the integers of `input` into `result` as `T` (see intRange).
template <typename T>
void reduceIntegers(ReduceKind kind, const HostTensor &input,
                    const ReducedView &view, HostTensor &result) {
  auto [lowest, highest] = intRange<T>(input.elementType);
  T init = kind == ReduceKind::Prod  ? T(1)
           : kind == ReduceKind::Max ? lowest
           : kind == ReduceKind::Min ? highest
                                     : T(0);
  std::vector<T> acc(result.numElements(), init);
  for (int64_t i = 0, e = input.numElements(); i < e; ++i) {
    T &slot = acc[view.resultIndex(i)];
    slot = combine<T>(kind, slot, getInteger<T>(input, i));
  }
  for (auto [index, value] : llvm::enumerate(acc))
    result.setFromInt(index, static_cast<int64_t>(value));
}

} // namespace

FailureOr<HostTensor> executeReduce(Operation *op, const HostTensor &input) {
  auto kind = llvm::TypeSwitch<Operation *, std::optional<ReduceKind>>(op)
                  .Case([](ReduceSumOp) { return ReduceKind::Sum; })
                  .Case([](ReduceMeanOp) { return ReduceKind::Mean; })
                  .Case([](ReduceMaxOp) { return ReduceKind::Max; })
                  .Case([](ReduceMinOp) { return ReduceKind::Min; })
                  .Case([](ReduceProdOp) { return ReduceKind::Prod; })
                  .Default([](Operation *) { return std::nullopt; });
  if (!kind)
    return op->emitOpError("is not a reduce op");
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
  bool keepdims = op->getAttrOfType<BoolAttr>("keepdims").getValue();
  int64_t rank = input.shape.size();
  auto reduced = reducedDims(op, axes, rank);
  if (failed(reduced))
    return failure();
  SmallVector<int64_t> resultShape;
  int64_t reducedCount = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if ((*reduced)[d])
      reducedCount *= input.shape[d];
    if (!(*reduced)[d] || keepdims)
      resultShape.push_back((*reduced)[d] ? 1 : input.shape[d]);
  }
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, resultShape, op->getLoc());
  if (failed(result))
    return failure();
  ReducedView view(input.shape, *reduced);
  int64_t count = input.numElements(), resultCount = result->numElements();

  if (isa<FloatType>(input.elementType)) {
    double init = 0.0;
    double inf = std::numeric_limits<double>::infinity();
    if (*kind == ReduceKind::Prod)
      init = 1.0;
    else if (*kind == ReduceKind::Max)
      init = -inf;
    else if (*kind == ReduceKind::Min)
      init = inf;
    std::vector<double> acc(resultCount, init);
    for (int64_t i = 0; i < count; ++i) {
      double &slot = acc[view.resultIndex(i)];
      slot = combine(*kind, slot, input.getAsDouble(i));
    }
    for (auto [index, value] : llvm::enumerate(acc))
      result->setFromDouble(index, *kind == ReduceKind::Mean
                                       ? value / static_cast<double>(reducedCount)
                                       : value);
    return result;
  }

  if (*kind == ReduceKind::Mean)
    return op->emitOpError("expected a float element type, got ")
           << input.elementType;
  if (input.elementType.isUnsignedInteger())
    reduceIntegers<uint64_t>(*kind, input, view, *result);
  else
    reduceIntegers<int64_t>(*kind, input, view, *result);
  return result;
}

FailureOr<HostTensor> executeArgReduce(Operation *op, const HostTensor &input) {
  bool isMax = isa<ArgMaxOp>(op);
  if (!isMax && !isa<ArgMinOp>(op))
    return op->emitOpError("is not an arg reduce op");
  int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  bool keepdims = op->getAttrOfType<BoolAttr>("keepdims").getValue();
  bool last = op->getAttrOfType<BoolAttr>("select_last_index").getValue();
  int64_t rank = input.shape.size();
  auto reduced = reducedDims(op, {axis}, rank);
  if (failed(reduced))
    return failure();
  if (input.shape[axis] == 0)
    return op->emitOpError("has no element to pick along axis ") << axis;
  SmallVector<int64_t> resultShape(input.shape);
  if (keepdims)
    resultShape[axis] = 1;
  else
    resultShape.erase(resultShape.begin() + axis);
  auto result = HostTensor::allocate(
      IntegerType::get(op->getContext(), 64), resultShape, op->getLoc());
  if (failed(result))
    return failure();
  ReducedView view(input.shape, *reduced);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= input.shape[d];
  int64_t length = input.shape[axis];
  bool isFloat = isa<FloatType>(input.elementType);
  std::vector<int64_t> best(result->numElements(), -1);
  // A candidate replaces the best so far when it is strictly better, or
  // equal and `last` asks for the last index (elements arrive in index
  // order). NaN beats every number, so the first NaN wins (numpy).
  auto better = [&](int64_t candidate, int64_t current) {
    if (isFloat) {
      double x = input.getAsDouble(candidate), y = input.getAsDouble(current);
      if (std::isnan(y))
        return last && std::isnan(x);
      if (std::isnan(x))
        return true;
      return isMax ? x > y || (last && x == y) : x < y || (last && x == y);
    }
    bool equal = input.getAsInt(candidate) == input.getAsInt(current);
    return isMax ? integerLess(input, current, candidate) || (last && equal)
                 : integerLess(input, candidate, current) || (last && equal);
  };
  int64_t count = input.numElements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t &slot = best[view.resultIndex(i)];
    if (slot < 0 || better(i, slot))
      slot = i;
  }
  for (auto [index, flat] : llvm::enumerate(best))
    result->setFromInt(index, (flat / inner) % length);
  return result;
}

/// Calls `fn(base, inner)` for each row along `axis` of `shape`: the row's
/// elements are at base + k * inner for k in 0..shape[axis].
static void forEachRow(ArrayRef<int64_t> shape, int64_t axis,
                       function_ref<void(int64_t, int64_t)> fn) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      outer *= shape[d];
    else if (d > axis)
      inner *= shape[d];
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in)
      fn(o * shape[axis] * inner + in, inner);
}

FailureOr<HostTensor> executeCumSum(CumSumOp op, const HostTensor &input) {
  int64_t rank = input.shape.size();
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= rank)
    return op.emitOpError("axis ") << axis << " out of range for rank " << rank;
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, input.shape, op.getLoc());
  if (failed(result))
    return failure();
  bool isFloat = isa<FloatType>(input.elementType);
  int64_t length = input.shape[axis];
  forEachRow(input.shape, axis, [&](int64_t base, int64_t inner) {
    double sum = 0.0;
    int64_t intSum = 0;
    auto store = [&](int64_t at) {
      if (isFloat)
        result->setFromDouble(at, sum);
      else
        result->setFromInt(at, intSum);
    };
    for (int64_t step = 0; step < length; ++step) {
      int64_t k = op.getReverse() ? length - 1 - step : step;
      int64_t at = base + k * inner;
      // Exclusive: the sum so far is stored before this element joins it.
      if (op.getExclusive())
        store(at);
      if (isFloat)
        sum += input.getAsDouble(at);
      else
        intSum = static_cast<int64_t>(static_cast<uint64_t>(intSum) +
                                      static_cast<uint64_t>(input.getAsInt(at)));
      if (!op.getExclusive())
        store(at);
    }
  });
  return result;
}

FailureOr<HostTensor> executeTopK(TopKOp op, const HostTensor &input) {
  int64_t rank = input.shape.size();
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= rank)
    return op.emitOpError("axis ") << axis << " out of range for rank " << rank;
  int64_t k = op.getK(), length = input.shape[axis];
  if (k > length)
    return op.emitOpError("k = ") << k << " exceeds the axis' " << length
                                  << " elements";
  SmallVector<int64_t> resultShape(input.shape);
  resultShape[axis] = k;
  auto result = HostTensor::allocate(IntegerType::get(op.getContext(), 64),
                                     resultShape, op.getLoc());
  if (failed(result))
    return failure();
  bool isFloat = isa<FloatType>(input.elementType);
  bool largest = op.getLargest();
  int64_t outInner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    outInner *= input.shape[d];
  std::vector<int64_t> order(length);
  int64_t row = 0;
  forEachRow(input.shape, axis, [&](int64_t base, int64_t inner) {
    // Whether the element at position a comes before the one at b: NaN
    // first, then by value, equal values by position.
    auto before = [&](int64_t a, int64_t b) {
      if (isFloat) {
        double x = input.getAsDouble(base + a * inner);
        double y = input.getAsDouble(base + b * inner);
        if (std::isnan(x) != std::isnan(y))
          return std::isnan(x);
        if (x != y && !std::isnan(x))
          return largest ? x > y : x < y;
        return a < b;
      }
      int64_t x = base + a * inner, y = base + b * inner;
      if (input.getAsInt(x) != input.getAsInt(y))
        return largest ? integerLess(input, y, x) : integerLess(input, x, y);
      return a < b;
    };
    for (int64_t i = 0; i < length; ++i)
      order[i] = i;
    std::sort(order.begin(), order.end(), before);
    int64_t outBase = (row / outInner) * k * outInner + row % outInner;
    for (int64_t i = 0; i < k; ++i)
      result->setFromInt(outBase + i * outInner, order[i]);
    ++row;
  });
  return result;
}

FailureOr<HostTensor> executeSoftmax(Operation *op, const HostTensor &input) {
  bool isLog = isa<LogSoftmaxOp>(op);
  if (!isLog && !isa<SoftmaxOp>(op))
    return op->emitOpError("is not a softmax op");
  if (!isa<FloatType>(input.elementType))
    return op->emitOpError("expected a float element type, got ")
           << input.elementType;
  int64_t rank = input.shape.size();
  int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ") << axis << " out of range for rank " << rank;
  FailureOr<HostTensor> result =
      HostTensor::allocate(input.elementType, input.shape, op->getLoc());
  if (failed(result))
    return failure();
  ArrayRef<int64_t> shape = input.shape;
  int64_t outer = 1, inner = 1, length = shape[axis];
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis)
      outer *= shape[d];
    else if (d > axis)
      inner *= shape[d];
  }
  std::vector<double> row(length);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * length * inner + in;
      // Shifted by the row maximum so that exp cannot overflow.
      double maxValue = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < length; ++k) {
        row[k] = input.getAsDouble(base + k * inner);
        maxValue = std::max(maxValue, row[k]);
      }
      double sum = 0.0;
      for (int64_t k = 0; k < length; ++k)
        sum += std::exp(row[k] - maxValue);
      double logSum = std::log(sum);
      for (int64_t k = 0; k < length; ++k) {
        double shifted = row[k] - maxValue;
        result->setFromDouble(base + k * inner,
                              isLog ? shifted - logSum
                                    : std::exp(shifted) / sum);
      }
    }
  }
  return result;
}

} // namespace kiln
