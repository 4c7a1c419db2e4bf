//===- MixedPrecisionConstants.cpp - float constant conversion ------------===//
//
// kiln-mixed-precision's compile-time conversion of float constants to
// another element type, with the element-type helpers the pass shares.
//
//===----------------------------------------------------------------------===//

#include "MixedPrecisionRules.h"

#include "kiln/ConstantData/FloatBits.h"
#include "kiln/ConstantData/HostTensor.h"
#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

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
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  std::string name = resource ? resource.getRawHandle().getKey().str()
                              : std::string("constant");
  name += to.isF16() ? "_fp16" : to.isBF16() ? "_bf16" : "_converted";
  if (ArrayRef<char> raw = type.getElementType().isF32() &&
                                   (to.isF16() || to.isBF16()) &&
                                   how != Conversion::Clamp
                               ? storedBytesInPlace(value)
                               : ArrayRef<char>();
      !raw.empty()) {
    // An fp32 weight to fp16 or bf16, the bulk of a model: converted a chunk
    // at a time from where it is (for external data, the mapped model file,
    // whose pages are dropped behind), into a spilled blob, so that neither
    // copy of the weights is ever resident whole.
    float limit = how == Conversion::Round ? INFINITY : float(largest);
    AsmResourceBlob blob = spilledBlob(
        raw.size() / 2, [&](char *chunk, size_t offset, size_t bytes) {
          ArrayRef<char> from = raw.slice(2 * offset, 2 * bytes);
          std::vector<float> floats(bytes / 2);
          std::memcpy(floats.data(), from.data(), from.size());
          std::vector<uint16_t> halves(floats.size());
          convertToHalfBits(floats.data(), halves.data(), floats.size(),
                            to.isBF16(), limit);
          std::memcpy(chunk, halves.data(), bytes);
          releaseMappedWeightPages(from);
        });
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(newType, name, std::move(blob)));
  }
  auto result = HostTensor::allocate(to, type.getShape());
  if (failed(result))
    return failure();
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
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(result->bytes), alignof(uint64_t));
  return cast<ElementsAttr>(
      DenseResourceElementsAttr::get(newType, name, std::move(blob)));
}

} // namespace kiln::mixed_precision
