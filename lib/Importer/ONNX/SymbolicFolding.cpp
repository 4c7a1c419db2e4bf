//===- SymbolicFolding.cpp - Shape arithmetic over named dims -------------===//

#include "SymbolicFolding.h"

#include "kiln/ConstantData/HostTensor.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace kiln {

namespace {

/// The most elements a symbolic tensor holds: shapes and the few index
/// vectors computed from them.
constexpr int64_t kMaxSymbolicElements = 1024;

std::optional<int64_t> countOf(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > kMaxSymbolicElements / d))
      return std::nullopt;
    count *= d;
  }
  return count;
}

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The element of `t` that element `index` of a `result`-shaped broadcast
/// reads.
const DimExpr &broadcastRead(const SymbolicTensor &t, ArrayRef<int64_t> result,
                             int64_t index) {
  SmallVector<int64_t> resultStrides = stridesOf(result);
  SmallVector<int64_t> strides = stridesOf(t.shape);
  size_t offset = result.size() - t.shape.size();
  int64_t at = 0;
  for (size_t d = 0; d < result.size(); ++d) {
    int64_t coordinate = (index / resultStrides[d]) % result[d];
    if (d >= offset && t.shape[d - offset] != 1)
      at += coordinate * strides[d - offset];
  }
  return t.values[at];
}

DimExpr boolean(bool value) { return DimExpr::constant(value ? 1 : 0); }

class Folder {
public:
  Folder(Operation *op, ArrayRef<SymbolicTensor> operands, DimRangeFn ranges)
      : op(op), operands(operands), ranges(ranges) {}

  std::optional<SymbolicTensor> fold() {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape() || !countOf(type.getShape()))
      return std::nullopt;
    result.shape.assign(type.getShape().begin(), type.getShape().end());
    elementType = type.getElementType();
    bool ok =
        TypeSwitch<Operation *, bool>(op)
            .Case([&](AddOp) { return binary(DimExpr::add); })
            .Case([&](SubOp) { return binary(DimExpr::sub); })
            .Case([&](MulOp) { return binary(DimExpr::mul); })
            .Case([&](DivOp) { return binary(divide); })
            .Case([&](MaxOp) { return extreme(/*greatest=*/true); })
            .Case([&](MinOp) { return extreme(/*greatest=*/false); })
            .Case(
                [&](EqualOp) { return compare([](int c) { return c == 0; }); })
            .Case([&](LessOp) { return compare([](int c) { return c < 0; }); })
            .Case([&](LessEqualOp) {
              return compare([](int c) { return c <= 0; });
            })
            .Case(
                [&](GreaterOp) { return compare([](int c) { return c > 0; }); })
            .Case([&](GreaterEqualOp) {
              return compare([](int c) { return c >= 0; });
            })
            .Case([&](WhereOp) { return where(); })
            .Case([&](NegOp) { return unary(negate); })
            .Case([&](CastOp) { return cast(); })
            .Case([&](ReshapeOp) { return same(); })
            .Case([&](ExpandOp) { return expand(); })
            .Case(
                [&](ConcatOp concat) { return this->concat(concat.getAxis()); })
            .Case(
                [&](GatherOp gather) { return this->gather(gather.getAxis()); })
            .Case([&](SliceOp slice) {
              return this->slice(slice.getStarts(), slice.getStrides());
            })
            .Case([&](ReduceProdOp reduce) {
              return this->reduce(reduce.getAxes(), DimExpr::mul, 1);
            })
            .Case([&](ReduceSumOp reduce) {
              return this->reduce(reduce.getAxes(), DimExpr::add, 0);
            })
            .Default([](Operation *) { return false; });
    if (!ok)
      return std::nullopt;
    return std::move(result);
  }

private:
  using Combine = std::optional<DimExpr> (*)(const DimExpr &, const DimExpr &);

  int64_t count() const { return *countOf(result.shape); }

  static std::optional<DimExpr> divide(const DimExpr &a, const DimExpr &b) {
    std::optional<int64_t> x = a.getConstant(), y = b.getConstant();
    // Both known: as the op computes it (sizes are >= 0, where truncating
    // and flooring agree).
    if (x && y) {
      if (*y == 0 || (*x == INT64_MIN && *y == -1))
        return std::nullopt;
      return DimExpr::constant(*x / *y);
    }
    return DimExpr::divExact(a, b);
  }

  static std::optional<DimExpr> negate(const DimExpr &a) {
    return DimExpr::mul(a, DimExpr::constant(-1));
  }

  bool binary(Combine combine) {
    if (operands.size() != 2)
      return false;
    for (int64_t i = 0, e = count(); i < e; ++i) {
      std::optional<DimExpr> value =
          combine(broadcastRead(operands[0], result.shape, i),
                  broadcastRead(operands[1], result.shape, i));
      if (!value)
        return false;
      result.values.push_back(std::move(*value));
    }
    return true;
  }

  /// The signs `a - b` may take over the ranges: bit 0 for negative, 1 for
  /// zero, 2 for positive; 0 when the ranges say nothing.
  unsigned possibleSigns(const DimExpr &a, const DimExpr &b) {
    if (a == b)
      return 2;
    std::optional<DimExpr> difference = DimExpr::sub(a, b);
    auto bounds = difference ? difference->bounds(ranges) : std::nullopt;
    if (!bounds)
      return 0;
    return (bounds->first < 0 ? 1u : 0u) |
           (bounds->first <= 0 && bounds->second >= 0 ? 2u : 0u) |
           (bounds->second > 0 ? 4u : 0u);
  }

  bool extreme(bool greatest) {
    if (operands.size() != 2)
      return false;
    for (int64_t i = 0, e = count(); i < e; ++i) {
      const DimExpr &a = broadcastRead(operands[0], result.shape, i);
      const DimExpr &b = broadcastRead(operands[1], result.shape, i);
      unsigned signs = possibleSigns(a, b);
      bool aAtLeastB = signs && !(signs & 1u);
      bool aAtMostB = signs && !(signs & 4u);
      if (!aAtLeastB && !aAtMostB)
        return false;
      result.values.push_back(greatest == aAtLeastB ? a : b);
    }
    return true;
  }

  bool compare(bool (*holds)(int)) {
    if (operands.size() != 2)
      return false;
    for (int64_t i = 0, e = count(); i < e; ++i) {
      unsigned signs =
          possibleSigns(broadcastRead(operands[0], result.shape, i),
                        broadcastRead(operands[1], result.shape, i));
      // Decided when every sign the difference may take gives one answer.
      std::optional<bool> answer;
      for (int sign : {-1, 0, 1}) {
        if (!(signs & (1u << (sign + 1))))
          continue;
        if (answer && *answer != holds(sign))
          return false;
        answer = holds(sign);
      }
      if (!answer)
        return false;
      result.values.push_back(boolean(*answer));
    }
    return true;
  }

  bool where() {
    if (operands.size() != 3)
      return false;
    for (int64_t i = 0, e = count(); i < e; ++i) {
      std::optional<int64_t> condition =
          broadcastRead(operands[0], result.shape, i).getConstant();
      if (!condition)
        return false;
      result.values.push_back(
          broadcastRead(operands[*condition ? 1 : 2], result.shape, i));
    }
    return true;
  }

  bool unary(std::optional<DimExpr> (*apply)(const DimExpr &)) {
    if (operands.size() != 1)
      return false;
    for (const DimExpr &value : operands[0].values) {
      std::optional<DimExpr> next = apply(value);
      if (!next)
        return false;
      result.values.push_back(std::move(*next));
    }
    return true;
  }

  bool cast() {
    if (operands.size() != 1)
      return false;
    // Sizes are integers: every cast keeps them but the one to bool, which
    // asks whether each is nonzero, and narrowing, which could wrap.
    for (const DimExpr &value : operands[0].values) {
      if (elementType.isInteger(1)) {
        std::optional<int> order =
            compareSizes(value, DimExpr::constant(0), ranges);
        if (!order)
          return false;
        result.values.push_back(boolean(*order != 0));
        continue;
      }
      unsigned width = elementType.getIntOrFloatBitWidth();
      if (isa<IntegerType>(elementType) && width < 64) {
        auto bounds = value.bounds(ranges);
        int64_t limit = int64_t(1) << (width - 1);
        if (!bounds || bounds->first < -limit || bounds->second >= limit)
          return false;
      }
      result.values.push_back(value);
    }
    return true;
  }

  bool same() {
    if (operands.size() != 1)
      return false;
    result.values = operands[0].values;
    return true;
  }

  bool expand() {
    if (operands.size() != 1)
      return false;
    for (int64_t i = 0, e = count(); i < e; ++i)
      result.values.push_back(broadcastRead(operands[0], result.shape, i));
    return true;
  }

  bool concat(int64_t axis) {
    SmallVector<int64_t> outer(result.shape.begin(),
                               result.shape.begin() + axis);
    int64_t rows = *countOf(outer);
    for (int64_t row = 0; row < rows; ++row)
      for (const SymbolicTensor &t : operands) {
        int64_t chunk = *countOf(ArrayRef<int64_t>(t.shape).drop_front(axis));
        result.values.insert(result.values.end(),
                             t.values.begin() + row * chunk,
                             t.values.begin() + (row + 1) * chunk);
      }
    return static_cast<int64_t>(result.values.size()) == count();
  }

  bool gather(int64_t axis) {
    if (operands.size() != 2)
      return false;
    const SymbolicTensor &data = operands[0], &indices = operands[1];
    int64_t outer = *countOf(ArrayRef<int64_t>(data.shape).take_front(axis));
    int64_t inner =
        *countOf(ArrayRef<int64_t>(data.shape).drop_front(axis + 1));
    int64_t size = data.shape[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (const DimExpr &index : indices.values) {
        std::optional<int64_t> at = index.getConstant();
        if (!at)
          return false;
        int64_t i = *at < 0 ? *at + size : *at;
        if (i < 0 || i >= size)
          return false;
        for (int64_t n = 0; n < inner; ++n)
          result.values.push_back(data.values[(o * size + i) * inner + n]);
      }
    return static_cast<int64_t>(result.values.size()) == count();
  }

  bool slice(ArrayRef<int64_t> starts, ArrayRef<int64_t> steps) {
    if (operands.size() != 1)
      return false;
    const SymbolicTensor &input = operands[0];
    SmallVector<int64_t> inStrides = stridesOf(input.shape);
    SmallVector<int64_t> outStrides = stridesOf(result.shape);
    for (int64_t i = 0, e = count(); i < e; ++i) {
      int64_t at = 0;
      for (size_t d = 0; d < result.shape.size(); ++d) {
        int64_t coordinate = (i / outStrides[d]) % result.shape[d];
        int64_t source = starts[d] + coordinate * steps[d];
        if (source < 0 || source >= input.shape[d])
          return false;
        at += source * inStrides[d];
      }
      result.values.push_back(input.values[at]);
    }
    return true;
  }

  bool reduce(ArrayRef<int64_t> axes, Combine combine, int64_t identity) {
    // Shape arithmetic reduces vectors whole (the element count).
    if (operands.size() != 1 || operands[0].shape.size() != 1 ||
        axes.size() != 1 || count() != 1)
      return false;
    DimExpr acc = DimExpr::constant(identity);
    for (const DimExpr &value : operands[0].values) {
      std::optional<DimExpr> next = combine(acc, value);
      if (!next)
        return false;
      acc = std::move(*next);
    }
    result.values.push_back(std::move(acc));
    return true;
  }

  Operation *op;
  ArrayRef<SymbolicTensor> operands;
  DimRangeFn ranges;
  SymbolicTensor result;
  Type elementType;
};

} // namespace

std::optional<SymbolicTensor> symbolicValueOf(Value value) {
  if (!value)
    return std::nullopt;
  if (auto sizes = value.getDefiningOp<SizesOp>()) {
    SymbolicTensor t;
    t.shape.assign(sizes.getType().getShape().begin(),
                   sizes.getType().getShape().end());
    for (Attribute size : sizes.getSizes()) {
      std::string error;
      std::optional<DimExpr> expr =
          DimExpr::parse(cast<StringAttr>(size).getValue(), error);
      if (!expr)
        return std::nullopt;
      t.values.push_back(std::move(*expr));
    }
    return t;
  }
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = cast<RankedTensorType>(constant.getType());
  std::optional<int64_t> count = countOf(type.getShape());
  if (!count)
    return std::nullopt;
  auto tensor = HostTensor::fromElementsAttr(constant.getValue());
  if (failed(tensor))
    return std::nullopt;
  SymbolicTensor t;
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  bool isFloat = isa<FloatType>(type.getElementType());
  // Unsigned values above INT64_MAX are no sizes.
  bool isUnsigned = type.getElementType().isUnsignedInteger();
  for (int64_t i = 0; i < *count; ++i) {
    if (isFloat) {
      double v = tensor->getAsDouble(i);
      if (!(std::fabs(v) < 0x1p53) || v != std::trunc(v))
        return std::nullopt;
      t.values.push_back(DimExpr::constant(static_cast<int64_t>(v)));
      continue;
    }
    int64_t v = tensor->getAsInt(i);
    if (isUnsigned && v < 0)
      return std::nullopt;
    t.values.push_back(DimExpr::constant(v));
  }
  return t;
}

std::optional<SymbolicTensor> foldSymbolic(Operation *op,
                                           ArrayRef<SymbolicTensor> operands,
                                           DimRangeFn ranges) {
  return Folder(op, operands, ranges).fold();
}

std::optional<int> compareSizes(const DimExpr &a, const DimExpr &b,
                                DimRangeFn ranges) {
  if (a == b)
    return 0;
  std::optional<DimExpr> difference = DimExpr::sub(a, b);
  if (!difference)
    return std::nullopt;
  auto bounds = difference->bounds(ranges);
  if (!bounds)
    return std::nullopt;
  if (bounds->first > 0)
    return 1;
  if (bounds->second < 0)
    return -1;
  return std::nullopt;
}

std::optional<bool> alwaysAtMost(const DimExpr &a, const DimExpr &b,
                                 DimRangeFn ranges) {
  if (a == b)
    return true;
  std::optional<DimExpr> difference = DimExpr::sub(a, b);
  auto bounds = difference ? difference->bounds(ranges) : std::nullopt;
  if (!bounds)
    return std::nullopt;
  if (bounds->second <= 0)
    return true;
  if (bounds->first > 0)
    return false;
  return std::nullopt;
}

std::optional<DimExpr> clampSize(const DimExpr &value, const DimExpr &low,
                                 const DimExpr &high, DimRangeFn ranges) {
  if (alwaysAtMost(value, low, ranges) == true)
    return low;
  if (alwaysAtMost(high, value, ranges) == true)
    return high;
  if (alwaysAtMost(low, value, ranges) == true &&
      alwaysAtMost(value, high, ranges) == true)
    return value;
  return std::nullopt;
}

} // namespace kiln
