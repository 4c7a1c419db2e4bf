//===- NodeConverter.cpp - what every ONNX op converter needs -------------===//
//
// The helpers of NodeConverterBase that build ops: windows and index ranges.
//
//===----------------------------------------------------------------------===//

#include "NodeConverter.h"

#include "kiln/Dialect/Kiln/QuantizedActivations.h"

#include "kiln/Importer/ONNX/TensorProto.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;

namespace kiln {

void NodeConverterBase::warnOnNonFiniteScale(Value scale, StringRef what) {
  DenseElementsAttr values;
  if (!matchPattern(scale, m_Constant(&values)) ||
      !isa<FloatType>(values.getElementType()))
    return;
  for (const APFloat &v : values.getValues<APFloat>())
    if (!v.isFinite()) {
      emitWarning(loc) << node.op_type() << ": " << what << " is "
                       << (v.isNaN() ? "NaN" : "infinite")
                       << " (a calibration that saw an infinite value, such "
                          "as an attention mask's -inf, writes that): every "
                          "value it quantizes or dequantizes is NaN or "
                          "infinite, here as in onnxruntime";
      return;
    }
}

LogicalResult NodeConverterBase::outputRequantized(Value value, Value zero) {
  auto out = dyn_cast<IntegerType>(typeOf(zero).getElementType());
  if (!out || out.getWidth() != 8 || !holdsOneValue(zero))
    return error() << "y_zero_point must be one 8-bit integer, got "
                   << typeOf(zero);
  Value shift = importer.foldConstant(
      castTo(reshape(zero, ArrayRef<int64_t>{}), b.getF32Type()));
  auto y = roundToInteger(value, shift, out);
  if (failed(y))
    return failure();
  return output(*y);
}

FailureOr<Value> NodeConverterBase::roundToInteger(Value ratio, Value zero,
                                                   IntegerType out) {
  Type f32 = b.getF32Type();
  Value q = RoundOp::create(b, loc, ratio);
  if (zero) {
    auto shifted = broadcast<AddOp>(q, zero);
    if (failed(shifted))
      return failure();
    q = *shifted;
  }
  unsigned width = out.getWidth();
  bool isSigned = !out.isUnsigned();
  double low = isSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  double high =
      isSigned ? std::ldexp(1.0, width - 1) - 1 : std::ldexp(1.0, width) - 1;
  // NaN (an infinite input over an infinite scale, as a calibration that
  // saw a -inf mask writes) saturates low, as onnxruntime's CPU kernel
  // does (its vector max returns the bound).
  Value floor = importer.scalar(loc, f32, low);
  Value nan = IsNaNOp::create(b, loc, typeOf(q).clone(b.getI1Type()), q);
  q = WhereOp::create(b, loc, typeOf(q), nan, floor, q);
  auto above = broadcast<MaxOp>(q, floor);
  if (failed(above))
    return failure();
  auto within = broadcast<MinOp>(*above, importer.scalar(loc, f32, high));
  if (failed(within))
    return failure();
  return castTo(*within, out);
}

FailureOr<Value> NodeConverterBase::concat(ArrayRef<Value> parts,
                                           int64_t axis) {
  SmallVector<Value> present;
  SmallVector<RankedTensorType> types;
  for (Value part : parts)
    if (typeOf(part).getDimSize(axis) != 0) {
      present.push_back(part);
      types.push_back(typeOf(part));
    }
  if (present.size() == 1)
    return present.front();
  if (present.empty())
    return parts.front();
  auto type = inferConcatType(loc, types, axis);
  if (failed(type))
    return failure();
  return ConcatOp::create(b, loc, *type, present, axis).getResult();
}

Value NodeConverterBase::castAsONNX(Value x, Type to, bool saturate) {
  if (isa<Float8E4M3FNType, Float8E5M2Type>(to))
    return castToFloat8(x, to, saturate);
  if (isFourBitType(to) && isa<FloatType>(typeOf(x).getElementType()))
    return castTo(castTo(x, b.getI64Type()), to);
  return castTo(x, to);
}

Value NodeConverterBase::castToFloat8(Value x, Type to, bool saturate) {
  // kiln.cast to float8 saturates finite values and keeps E5M2's
  // infinities (E4M3FN has none: they saturate). The rest is decided in
  // fp32 before it.
  bool e5m2 = isa<Float8E5M2Type>(to);
  Type f32 = b.getF32Type();
  if (saturate && !e5m2)
    return castTo(x, to);
  Value v = castTo(x, f32);
  if (saturate) {
    // E5M2's infinities saturate too: to the largest value of their sign.
    Value infinite =
        IsInfOp::create(b, loc, typeOf(v).clone(b.getI1Type()), v, true, true);
    Value largest = MulOp::create(b, loc, SignOp::create(b, loc, v),
                                  importer.scalar(loc, f32, 57344.0));
    v = WhereOp::create(b, loc, typeOf(v), infinite, largest, v);
    return castTo(v, to);
  }
  // Not saturating: the values that round past the largest become NaN or
  // an infinity. E4M3FN's largest is 448, and 464, halfway to the next
  // step (480, NaN), rounds to it (448 is even); E5M2's largest is 57344,
  // and 61440, halfway to infinity, rounds up to infinity.
  float bound = e5m2 ? std::nextafter(61440.0f, 0.0f) : 464.0f;
  Value beyond = GreaterOp::create(b, loc, AbsOp::create(b, loc, v),
                                   importer.scalar(loc, f32, bound));
  Value special =
      e5m2
          ? Value(MulOp::create(b, loc, v, importer.scalar(loc, f32, INFINITY)))
          : importer.scalar(loc, f32, NAN);
  v = WhereOp::create(b, loc, typeOf(v), beyond, special, v);
  return castTo(v, to);
}

Value NodeConverterBase::slice(Value x, int64_t axis, int64_t start,
                               int64_t count) {
  return slice(x, axis, start, DimExpr::constant(count));
}

Value NodeConverterBase::slice(Value x, int64_t axis, int64_t start,
                               const DimExpr &count) {
  SymbolicShape shape = dimsOf(x);
  if (start == 0 && shape[axis] == count)
    return x;
  RankedTensorType type = typeOf(x);
  SmallVector<int64_t> starts(type.getRank(), 0), strides(type.getRank(), 1);
  starts[axis] = start;
  shape[axis] = count;
  return SliceOp::create(b, loc,
                         symbolicTensorType(shape, type.getElementType()), x,
                         starts, strides);
}

/// The longest index range stored as one constant (8 MB of i64): the
/// positions of any real sequence.
static constexpr int64_t kMaxIotaConstant = int64_t(1) << 20;

Value NodeConverterBase::iota(ArrayRef<int64_t> shape, int64_t start,
                              Type elementType) {
  auto type = RankedTensorType::get(shape, elementType);
  unsigned width = elementType.getIntOrFloatBitWidth();
  auto constant = [&](RankedTensorType t, int64_t first, int64_t step) {
    SmallVector<APInt> values;
    for (int64_t i = 0, e = t.getNumElements(); i < e; ++i)
      values.push_back(APInt(width, first + i * step, /*isSigned=*/true));
    return ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(t, values)));
  };
  int64_t n = type.getNumElements();
  if (n <= kMaxIotaConstant)
    return constant(type, start, 1);
  // A hostile sequence length must not become gigabytes of weights: longer
  // ranges are digits in base kMaxIotaConstant, one short constant per
  // digit (its values times the digit's weight), added with broadcasting
  // over [d0, d1, ...] and cut to n.
  SmallVector<int64_t> digits;
  for (int64_t rest = n; rest > 1;
       rest = (rest + kMaxIotaConstant - 1) / kMaxIotaConstant)
    digits.insert(digits.begin(), std::min(rest, kMaxIotaConstant));
  Value sum;
  int64_t weight = 1;
  for (int64_t k = digits.size() - 1; k >= 0; --k) {
    SmallVector<int64_t> digitShape(digits.size(), 1);
    digitShape[k] = digits[k];
    Value digit = constant(RankedTensorType::get(digitShape, elementType),
                           sum ? 0 : start, weight);
    if (sum) {
      SmallVector<int64_t> sumShape(typeOf(sum).getShape());
      sumShape[k] = digits[k];
      sum = AddOp::create(b, loc, type.clone(sumShape), sum, digit);
    } else {
      sum = digit;
    }
    weight *= digits[k];
  }
  Value flat = reshape(sum, {typeOf(sum).getNumElements()});
  return reshape(slice(flat, 0, 0, n), shape);
}

FailureOr<Value> NodeConverterBase::iota(ArrayRef<DimExpr> shape, int64_t start,
                                         Type elementType) {
  SmallVector<int64_t> longest;
  int64_t axis = -1;
  for (auto [d, size] : llvm::enumerate(shape)) {
    std::optional<int64_t> fixed = size.getConstant();
    if (fixed) {
      longest.push_back(*fixed);
      continue;
    }
    auto bounds = size.bounds(importer.dimRanges());
    if (!bounds)
      return error() << "positions up to " << size.str()
                     << ", a size without a range";
    longest.push_back(bounds->second);
    axis = d;
  }
  Value all = iota(longest, start, elementType);
  return axis < 0 ? all : slice(all, axis, 0, shape[axis]);
}

} // namespace kiln
