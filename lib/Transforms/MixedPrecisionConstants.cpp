//===- MixedPrecisionConstants.cpp - float constant conversion ------------===//
//
// kiln-mixed-precision's compile-time conversion of float constants to
// another element type, with the element-type helpers the pass shares.
//
//===----------------------------------------------------------------------===//

#include "MixedPrecisionRules.h"

#include "kiln/ConstantData/HostTensor.h"
#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;
using namespace kiln;

namespace kiln::mixed_precision {

/// Constants above this many elements become dense_resource blobs.
constexpr int64_t kInlineLimit = 16;

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

RankedTensorType withElementType(Type type, Type elementType) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), elementType,
                               tensor.getEncoding());
}

/// `value` brought into the range of a type whose largest finite value is
/// `largest`, as `how` says.
static double limitToRange(double value, double largest, Conversion how) {
  if (std::isnan(value) || how == Conversion::Round ||
      (how == Conversion::Saturate && std::isinf(value)))
    return value;
  return std::clamp(value, -largest, largest);
}

/// The value of a float constant converted to element type `to`: splats stay
/// splats, small constants stay inline, larger ones become dense_resource
/// blobs named after the original.
FailureOr<ElementsAttr> convertElements(ElementsAttr value, FloatType to,
                                        Conversion how) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!isa<FloatType>(type.getElementType()))
    return failure();
  auto newType = withElementType(type, to);
  double largest =
      APFloat::getLargest(to.getFloatSemantics()).convertToDouble();
  if (auto splat = dyn_cast<SplatElementsAttr>(value)) {
    APFloat v(limitToRange(splat.getSplatValue<APFloat>().convertToDouble(),
                           largest, how));
    bool losesInfo = false;
    v.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
    return cast<ElementsAttr>(DenseElementsAttr::get(newType, v));
  }
  auto result = HostTensor::allocate(to, type.getShape());
  if (failed(result))
    return failure();
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  bool wide = type.getElementType().isF32() || type.getElementType().isF64();
  if (ArrayRef<char> raw = wide ? storedBytesInPlace(value) : ArrayRef<char>();
      !raw.empty()) {
    // A large weight is read where it is (for external data, the mapped
    // model file) and its pages dropped afterwards: converting gigabytes of
    // weights must not keep them all resident.
    bool isF32 = type.getElementType().isF32();
    for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
      double v;
      if (isF32) {
        float f;
        std::memcpy(&f, raw.data() + 4 * i, 4);
        v = f;
      } else {
        std::memcpy(&v, raw.data() + 8 * i, 8);
      }
      result->setFromDouble(i, limitToRange(v, largest, how));
    }
    releaseMappedWeightPages(raw);
  } else {
    auto source = HostTensor::fromElementsAttr(value);
    if (failed(source))
      return failure();
    for (int64_t i = 0, e = source->numElements(); i < e; ++i)
      result->setFromDouble(i,
                            limitToRange(source->getAsDouble(i), largest, how));
  }
  if (!resource && type.getNumElements() <= kInlineLimit)
    return cast<ElementsAttr>(result->toDenseElementsAttr());
  std::string name = resource ? resource.getRawHandle().getKey().str()
                              : std::string("constant");
  name += to.isF16() ? "_fp16" : to.isBF16() ? "_bf16" : "_converted";
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(result->bytes), alignof(uint64_t));
  return cast<ElementsAttr>(
      DenseResourceElementsAttr::get(newType, name, std::move(blob)));
}

} // namespace kiln::mixed_precision
