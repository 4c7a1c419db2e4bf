//===- SymbolicShapes.cpp - Tensor types with named dynamic dims ----------===//

#include "kiln/Dialect/Kiln/SymbolicShapes.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace kiln {

LogicalResult
DimsAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                         function_ref<InFlightDiagnostic()> emitError) const {
  int64_t dynamic = llvm::count_if(shape, ShapedType::isDynamic);
  if (static_cast<int64_t>(getSizes().size()) != dynamic)
    return emitError() << "#kiln.dims has " << getSizes().size()
                       << " sizes for " << dynamic << " dynamic dims";
  for (Attribute size : getSizes()) {
    auto text = dyn_cast<StringAttr>(size);
    if (!text)
      return emitError() << "#kiln.dims sizes must be strings, got " << size;
    std::string error;
    std::optional<DimExpr> expr = DimExpr::parse(text.getValue(), error);
    if (!expr)
      return emitError() << "#kiln.dims size '" << text.getValue()
                         << "': " << error;
    // Equal sizes must make equal types: only the canonical text is kept,
    // and a constant size is a static dim.
    if (expr->isConstant())
      return emitError() << "#kiln.dims size '" << text.getValue()
                         << "' is a constant; make the dim static";
    if (expr->str() != text.getValue())
      return emitError() << "#kiln.dims size '" << text.getValue()
                         << "' is not in canonical form ('" << expr->str()
                         << "')";
  }
  return success();
}

std::optional<SymbolicShape> symbolicShapeOf(RankedTensorType type) {
  auto dims = dyn_cast_or_null<DimsAttr>(type.getEncoding());
  SymbolicShape shape;
  size_t next = 0;
  for (int64_t dim : type.getShape()) {
    if (!ShapedType::isDynamic(dim)) {
      shape.push_back(DimExpr::constant(dim));
      continue;
    }
    if (!dims || next >= dims.getSizes().size())
      return std::nullopt;
    auto text = dyn_cast<StringAttr>(dims.getSizes()[next++]);
    std::string error;
    std::optional<DimExpr> size =
        text ? DimExpr::parse(text.getValue(), error) : std::nullopt;
    if (!size)
      return std::nullopt;
    shape.push_back(std::move(*size));
  }
  return shape;
}

RankedTensorType symbolicTensorType(ArrayRef<DimExpr> sizes, Type elementType) {
  MLIRContext *context = elementType.getContext();
  SmallVector<int64_t> shape;
  SmallVector<Attribute> symbolic;
  for (const DimExpr &size : sizes) {
    if (std::optional<int64_t> value = size.getConstant()) {
      shape.push_back(*value);
      continue;
    }
    shape.push_back(ShapedType::kDynamic);
    symbolic.push_back(StringAttr::get(context, size.str()));
  }
  Attribute encoding;
  if (!symbolic.empty())
    encoding = DimsAttr::get(context, ArrayAttr::get(context, symbolic));
  return RankedTensorType::get(shape, elementType, encoding);
}

bool isSymbolic(RankedTensorType type) { return !type.hasStaticShape(); }

std::optional<SmallVector<int64_t>>
concreteShape(RankedTensorType type,
              function_ref<std::optional<int64_t>(StringRef)> lookup) {
  if (type.hasStaticShape())
    return SmallVector<int64_t>(type.getShape());
  std::optional<SymbolicShape> sizes = symbolicShapeOf(type);
  if (!sizes)
    return std::nullopt;
  SmallVector<int64_t> shape;
  for (const DimExpr &size : *sizes) {
    std::optional<int64_t> value = size.evaluate(lookup);
    if (!value || *value < 0)
      return std::nullopt;
    shape.push_back(*value);
  }
  return shape;
}

DimRanges dimRangesOf(Operation *func) {
  DimRanges ranges;
  if (auto dict = func->getAttrOfType<DictionaryAttr>(kDimRangesAttr))
    for (NamedAttribute range : dict)
      if (auto bounds = dyn_cast<DenseI64ArrayAttr>(range.getValue());
          bounds && bounds.size() == 2)
        ranges[range.getName().getValue()] = {bounds[0], bounds[1]};
  return ranges;
}

std::optional<DimExpr> elementCount(RankedTensorType type) {
  std::optional<SymbolicShape> sizes = symbolicShapeOf(type);
  return sizes ? productOf(*sizes) : std::nullopt;
}

/// The least and largest values of `size` over `ranges`.
static std::optional<std::pair<int64_t, int64_t>>
boundsOf(const DimExpr &size, const DimRanges &ranges) {
  return size.bounds(
      [&](StringRef name) -> std::optional<std::pair<int64_t, int64_t>> {
        auto it = ranges.find(name);
        if (it == ranges.end())
          return std::nullopt;
        return it->second;
      });
}

std::optional<int64_t> upperBound(const DimExpr &size,
                                  const DimRanges &ranges) {
  auto bounds = boundsOf(size, ranges);
  if (!bounds)
    return std::nullopt;
  return bounds->second;
}

std::optional<int64_t> lowerBound(const DimExpr &size,
                                  const DimRanges &ranges) {
  auto bounds = boundsOf(size, ranges);
  if (!bounds)
    return std::nullopt;
  return bounds->first;
}

std::optional<int64_t> maxElementCount(RankedTensorType type,
                                       const DimRanges &ranges) {
  if (type.hasStaticShape())
    return type.getNumElements();
  std::optional<DimExpr> count = elementCount(type);
  return count ? upperBound(*count, ranges) : std::nullopt;
}

std::string shapeText(RankedTensorType type) {
  std::optional<SymbolicShape> sizes = symbolicShapeOf(type);
  if (type.getRank() == 0)
    return "scalar";
  std::string text;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d)
      text += "x";
    if (!type.isDynamicDim(d))
      text += std::to_string(type.getDimSize(d));
    else if (!sizes)
      text += "?";
    else if (std::optional<std::string> name = (*sizes)[d].getSymbol())
      text += *name;
    else
      text += "(" + (*sizes)[d].str() + ")";
  }
  return text;
}

} // namespace kiln

namespace kiln {

LogicalResult SizesOp::verify() {
  RankedTensorType type = getType();
  // Any static shape: a size folded through Unsqueeze or a broadcast keeps
  // the shape it has in the model (its elements in row-major order).
  if (!type.hasStaticShape())
    return emitOpError("expected a static shape, got ") << type;
  if (type.getNumElements() != static_cast<int64_t>(getSizes().size()))
    return emitOpError("has ") << getSizes().size() << " sizes for "
                               << type.getNumElements() << " elements";
  for (Attribute size : getSizes()) {
    StringRef text = cast<StringAttr>(size).getValue();
    std::string error;
    std::optional<DimExpr> expr = DimExpr::parse(text, error);
    if (!expr)
      return emitOpError("size '") << text << "': " << error;
    if (expr->str() != text)
      return emitOpError("size '")
             << text << "' is not in canonical form ('" << expr->str() << "')";
  }
  return success();
}

OpFoldResult SizesOp::fold(FoldAdaptor) {
  // All constant: a plain constant.
  SmallVector<APInt> values;
  unsigned width = getType().getElementType().getIntOrFloatBitWidth();
  for (Attribute size : getSizes()) {
    std::string error;
    std::optional<DimExpr> expr =
        DimExpr::parse(cast<StringAttr>(size).getValue(), error);
    std::optional<int64_t> value = expr ? expr->getConstant() : std::nullopt;
    if (!value)
      return {};
    values.push_back(APInt(width, *value, /*isSigned=*/true));
  }
  return DenseElementsAttr::get(getType(), values);
}

} // namespace kiln
