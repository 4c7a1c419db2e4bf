//===- ConvertShapeOps.cpp - tensors computed from shapes -----------------===//
//
// Shape and Size, which read an input's dims, and ConstantOfShape and
// Range, which build a tensor whose shape a shape subgraph computes: each
// becomes a constant, or a `kiln.sizes` of symbolic dims (ShapeOpConverter.h
// says why such inputs must fold to constants).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"
#include "ShapeOpConverter.h"

#include "kiln/ConstantData/HostTensor.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace kiln {

namespace {

struct ShapeConverter : ShapeOpConverter {
  using ShapeOpConverter::ShapeOpConverter;

  LogicalResult convertShape() {
    auto x = required(0);
    if (failed(x))
      return failure();
    auto sizes = sizesOfValue(*x);
    if (failed(sizes))
      return failure();
    int64_t rank = sizes->size();
    // Opset 15 start/end: clamped, negative counting from the end.
    auto clampDim = [&](int64_t d) {
      if (d < 0)
        d += rank;
      return std::clamp<int64_t>(d, 0, rank);
    };
    int64_t start = clampDim(intAttr("start", 0));
    int64_t end = std::max(start, clampDim(intAttr("end", rank)));
    SymbolicTensor dims;
    dims.shape = {end - start};
    dims.values.assign(sizes->begin() + start, sizes->begin() + end);
    auto type = RankedTensorType::get(dims.shape, b.getI64Type());
    return output(importer.materializeSizes(loc, type, dims));
  }

  LogicalResult convertSize() {
    auto x = required(0);
    if (failed(x))
      return failure();
    auto sizes = sizesOfValue(*x);
    if (failed(sizes))
      return failure();
    std::optional<DimExpr> count = productOf(*sizes);
    if (!count)
      return error() << "the element count overflows";
    SymbolicTensor value;
    value.values.push_back(std::move(*count));
    return output(importer.materializeSizes(
        loc, RankedTensorType::get({}, b.getI64Type()), value));
  }

  LogicalResult convertConstantOfShape() {
    auto sizes = sizesInput(0, "shape");
    if (failed(sizes))
      return failure();
    // A symbolic shape: one element, expanded to it.
    SmallVector<int64_t> shape;
    for (const DimExpr &size : *sizes)
      shape.push_back(size.getConstant().value_or(1));
    if (failed(getCheckedShape(shape)))
      return failure();
    Attribute value;
    if (const onnx::AttributeProto *attr = findAttribute(node, "value")) {
      auto parsed = importer.convertTensor(loc, attr->t());
      if (failed(parsed))
        return failure();
      auto dense = dyn_cast<DenseElementsAttr>(*parsed);
      if (!dense || dense.getNumElements() != 1)
        return error() << "value must hold one element";
      value = dense.getSplatValue<Attribute>();
    } else {
      value = b.getF32FloatAttr(0.0f);
    }
    auto elementType = cast<TypedAttr>(value).getType();
    auto type = RankedTensorType::get(shape, elementType);
    Value constant = ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(type, value)));
    auto target = symbolicTensorType(*sizes, elementType);
    if (target == type)
      return output(constant);
    return output(ExpandOp::create(b, loc, target, constant));
  }

  LogicalResult convertRange() {
    auto start = required(0), limit = required(1), delta = required(2);
    if (failed(start) || failed(limit) || failed(delta))
      return failure();
    RankedTensorType scalarType = typeOf(*start);
    // The result's length depends on the values, so they must be constants;
    // the elements are computed as ONNX specifies, start + i * delta.
    auto s = scalarValue(*start), l = scalarValue(*limit),
         d = scalarValue(*delta);
    if (succeeded(d) && (failed(s) || failed(l)))
      return convertSymbolicRange(*start, *limit, *d);
    if (failed(s) || failed(l) || failed(d))
      return error() << "start, limit and delta must be constant scalars";
    if (*d == 0)
      return error() << "delta is 0";
    double n = std::max(std::ceil((*l - *s) / *d), 0.0);
    if (!(n <= (int64_t(1) << 20)))
      return error() << "range of more than 2^20 elements is larger than "
                        "Kiln folds";
    auto count = static_cast<int64_t>(n);
    auto result =
        HostTensor::allocate(scalarType.getElementType(), {count}, loc);
    if (failed(result))
      return failure();
    bool integral = isa<IntegerType>(scalarType.getElementType());
    for (int64_t i = 0; i < count; ++i) {
      if (integral)
        result->setFromInt(i, static_cast<int64_t>(*s) +
                                  i * static_cast<int64_t>(*d));
      else
        result->setFromDouble(i, *s + i * *d);
    }
    return output(ConstantOp::create(
        b, loc, cast<ElementsAttr>(result->toDenseElementsAttr())));
  }

  /// Range over symbolic sizes (`arange(sequence)`, or positions
  /// `arange(past, past + sequence)`): the elements 0, delta, 2 * delta, ...
  /// up to the longest the dims' ranges allow, as a constant, sliced to the
  /// symbolic length and shifted by a symbolic start. Steps of +1 and -1
  /// only, whose length is a polynomial.
  LogicalResult convertSymbolicRange(Value start, Value limit, double delta) {
    auto startSizes = importer.symbolicInts(start);
    auto limitSizes = importer.symbolicInts(limit);
    if (failed(startSizes) || failed(limitSizes) || startSizes->size() != 1 ||
        limitSizes->size() != 1)
      return error() << "start and limit must be scalars computed from "
                        "shapes (or constants)";
    RankedTensorType scalarType = typeOf(limit);
    if (delta != 1 && delta != -1)
      return error() << "a symbolic start or limit needs a delta of 1 or -1";
    const DimExpr &first = startSizes->front();
    std::optional<DimExpr> length =
        delta > 0 ? DimExpr::sub(limitSizes->front(), first)
                  : DimExpr::sub(first, limitSizes->front());
    DimRangeFn ranges = importer.dimRanges();
    auto bounds = length ? length->bounds(ranges) : std::nullopt;
    if (!bounds || bounds->first < 0)
      return error() << "the length " << (length ? length->str() : "?")
                     << " may be negative over the dims' ranges";
    if (bounds->second > (int64_t(1) << 20))
      return error() << "range of up to " << bounds->second
                     << " elements is larger than Kiln folds";
    std::optional<int64_t> fixedStart = first.getConstant();
    Type et = scalarType.getElementType();
    auto all = HostTensor::allocate(et, {bounds->second}, loc);
    if (failed(all))
      return failure();
    bool integral = isa<IntegerType>(et);
    int64_t from = fixedStart.value_or(0);
    for (int64_t i = 0; i < bounds->second; ++i) {
      if (integral)
        all->setFromInt(i, from + i * static_cast<int64_t>(delta));
      else
        all->setFromDouble(i, static_cast<double>(from) + i * delta);
    }
    Value values = ConstantOp::create(
        b, loc, cast<ElementsAttr>(all->toDenseElementsAttr()));
    Value steps = slice(values, {0}, {*length}, {1});
    if (fixedStart)
      return output(steps);
    // The start is known at run time only: a kiln.sizes, added to each.
    Type sizeType = et.isInteger(32) ? et : b.getI64Type();
    SymbolicTensor startTensor{{}, {first}};
    Value shift = importer.materializeSizes(
        loc, RankedTensorType::get({}, sizeType), startTensor);
    if (sizeType != et)
      shift = CastOp::create(b, loc, RankedTensorType::get({}, et), shift);
    return output(AddOp::create(b, loc, typeOf(steps), steps, shift));
  }

  /// The one element of a constant scalar, as a double.
  FailureOr<double> scalarValue(Value value) {
    auto constant = value.getDefiningOp<ConstantOp>();
    if (!constant)
      return failure();
    auto tensor = HostTensor::fromElementsAttr(constant.getValue());
    if (failed(tensor) || tensor->numElements() != 1)
      return failure();
    return tensor->getAsDouble(0);
  }
};

} // namespace

ArrayRef<OpConversion> getShapeConversions() {
  using C = ShapeConverter;
  static const OpConversion table[] = {
      {"", "Shape", convertWith<C, &C::convertShape>},
      {"", "Size", convertWith<C, &C::convertSize>},
      {"", "ConstantOfShape", convertWith<C, &C::convertConstantOfShape>},
      {"", "Range", convertWith<C, &C::convertRange>},
  };
  return table;
}

} // namespace kiln
