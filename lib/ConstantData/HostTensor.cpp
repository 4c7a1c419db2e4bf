//===- HostTensor.cpp - constant data in host memory ---------------------===//
//
// Element access converts through double (floats) or 64-bit integers so
// that code over elements is written once per numeric domain, not per type.
// Rounding to f16 and bf16 goes through llvm::APFloat: slower than bit tricks,
// but round-to-nearest-even from double is then obviously right.
//
//===----------------------------------------------------------------------===//

#include "kiln/ConstantData/HostTensor.h"

#include "kiln/runtime/Float8.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace mlir;
using namespace kiln;

// Casting double to float is only defined for out-of-range values (giving
// infinity) on IEEE 754 hosts; every host Kiln supports is one.
static_assert(std::numeric_limits<float>::is_iec559 &&
                  std::numeric_limits<double>::is_iec559,
              "HostTensor needs IEEE 754 float and double");

namespace {
/// The element types a HostTensor stores, decoded once per access.
enum class ElementKind {
  F64,
  F32,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  I1,
  // Stored one a byte: 4-bit integers (int4 sign-extended) and float8.
  I4,
  U4,
  F8E4M3FN,
  F8E5M2,
  Unsupported
};
} // namespace

/// Classifies `type`: Kiln's signed integers are signless, its unsigned ones
/// MLIR's unsigned integer types.
static ElementKind getElementKind(Type type) {
  if (!type)
    return ElementKind::Unsupported;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (isa<Float8E4M3FNType>(type))
    return ElementKind::F8E4M3FN;
  if (isa<Float8E5M2Type>(type))
    return ElementKind::F8E5M2;
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer || integer.isSigned())
    return ElementKind::Unsupported;
  if (integer.getWidth() == 1)
    return integer.isSignless() ? ElementKind::I1 : ElementKind::Unsupported;
  if (integer.getWidth() == 4)
    return integer.isUnsigned() ? ElementKind::U4 : ElementKind::I4;
  // Widths 8, 16, 32 and 64, in that order.
  static constexpr ElementKind kSignless[] = {
      ElementKind::I8, ElementKind::I16, ElementKind::I32, ElementKind::I64};
  static constexpr ElementKind kUnsigned[] = {
      ElementKind::U8, ElementKind::U16, ElementKind::U32, ElementKind::U64};
  unsigned width = integer.getWidth();
  if (width < 8 || width > 64 || !llvm::isPowerOf2_32(width))
    return ElementKind::Unsupported;
  unsigned slot = llvm::Log2_32(width) - 3;
  return integer.isUnsigned() ? kUnsigned[slot] : kSignless[slot];
}

/// Whether `kind` is one of the float kinds.
static bool isFloatKind(ElementKind kind) {
  return kind == ElementKind::F64 || kind == ElementKind::F32 ||
         kind == ElementKind::F16 || kind == ElementKind::BF16 ||
         kind == ElementKind::F8E4M3FN || kind == ElementKind::F8E5M2;
}

/// Calls `fn(T())` with the C++ type that stores an integer kind (uint8_t for
/// i1) and returns what it returns. Precondition: `kind` is an integer kind.
template <typename Fn>
static decltype(auto) visitIntegerKind(ElementKind kind, Fn &&fn) {
  switch (kind) {
  case ElementKind::I64:
    return fn(int64_t());
  case ElementKind::I32:
    return fn(int32_t());
  case ElementKind::I16:
    return fn(int16_t());
  case ElementKind::I8:
  case ElementKind::I4:
    return fn(int8_t());
  case ElementKind::U64:
    return fn(uint64_t());
  case ElementKind::U32:
    return fn(uint32_t());
  case ElementKind::U16:
    return fn(uint16_t());
  case ElementKind::U8:
  case ElementKind::U4:
  case ElementKind::I1:
    return fn(uint8_t());
  default:
    llvm_unreachable("not an integer element kind");
  }
}

/// Bit width of an integer kind (4 for the 4-bit ones stored a byte each).
static unsigned getIntegerWidth(ElementKind kind) {
  if (kind == ElementKind::I4 || kind == ElementKind::U4)
    return 4;
  return visitIntegerKind(kind, [](auto zero) -> unsigned {
    return sizeof(zero) * 8;
  });
}

/// Reads element `i` of `bytes` as a `T`; memcpy because the buffer of a
/// std::vector<char> carries no alignment for T.
template <typename T>
static T loadElement(const std::vector<char> &bytes, int64_t i) {
  assert(i >= 0 && static_cast<size_t>(i + 1) * sizeof(T) <= bytes.size() &&
         "element index out of range");
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

/// Writes `value` as element `i` of `bytes`.
template <typename T>
static void storeElement(std::vector<char> &bytes, int64_t i, T value) {
  assert(i >= 0 && static_cast<size_t>(i + 1) * sizeof(T) <= bytes.size() &&
         "element index out of range");
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}

/// Decodes 16 bits of a 16-bit float format into a double (exact).
static double decodeFloat16(const llvm::fltSemantics &semantics,
                            uint16_t bits) {
  return llvm::APFloat(semantics, llvm::APInt(16, bits)).convertToDouble();
}

/// Rounds `value` to nearest even in a 16-bit float format and returns the
/// bits; overflow gives infinity and NaN stays NaN.
static uint16_t encodeFloat16(const llvm::fltSemantics &semantics,
                              double value) {
  llvm::APFloat converted(value);
  bool losesInfo = false;
  (void)converted.convert(semantics, llvm::APFloat::rmNearestTiesToEven,
                          &losesInfo);
  return static_cast<uint16_t>(converted.bitcastToAPInt().getZExtValue());
}

/// Converts a float value to a signed integer of `width` bits as `kiln.cast`
/// does: truncation toward zero, saturation at the type's range, NaN to 0.
/// Every case is decided before the conversion, which is then always in range
/// (a plain cast of NaN or an out-of-range value is undefined behaviour).
static int64_t floatToInteger(double value, unsigned width) {
  if (std::isnan(value))
    return 0;
  double truncated = std::trunc(value);
  // 2^(width-1) is exact in double for every width up to 64.
  double limit = std::ldexp(1.0, static_cast<int>(width) - 1);
  int64_t maxValue = static_cast<int64_t>((uint64_t(1) << (width - 1)) - 1);
  if (truncated >= limit)
    return maxValue;
  if (truncated < -limit)
    return -maxValue - 1;
  return static_cast<int64_t>(truncated);
}

/// Converts a float value to an unsigned integer of `width` bits by the same
/// rules: truncation toward zero, saturation at 0 and 2^width - 1 (so a
/// negative value gives 0), NaN to 0.
static uint64_t floatToUnsigned(double value, unsigned width) {
  if (std::isnan(value))
    return 0;
  double truncated = std::trunc(value);
  // 2^width is exact in double for every width up to 64.
  double limit = std::ldexp(1.0, static_cast<int>(width));
  if (truncated >= limit)
    return width == 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
  if (truncated <= 0.0)
    return 0;
  return static_cast<uint64_t>(truncated);
}

/// Rounds an integer to nearest even in a float format; APFloat converts the
/// integer directly, so a large i64 or ui64 is rounded once, not through
/// double. `bits` holds the value, read as signed when `isSigned`.
static llvm::APFloat integerToFloat(const llvm::fltSemantics &semantics,
                                    uint64_t bits, bool isSigned) {
  llvm::APFloat converted(semantics);
  (void)converted.convertFromAPInt(llvm::APInt(64, bits, isSigned), isSigned,
                                   llvm::APFloat::rmNearestTiesToEven);
  return converted;
}

/// Prints `shape` as `2x3`, `?` for dynamic dims, `scalar` for rank 0.
static std::string formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os,
      [&](int64_t dim) {
        if (ShapedType::isDynamic(dim))
          os << '?';
        else
          os << dim;
      },
      "x");
  return text;
}

int64_t kiln::getHostElementByteWidth(Type elementType) {
  ElementKind kind = getElementKind(elementType);
  switch (kind) {
  case ElementKind::Unsupported:
    return 0;
  case ElementKind::F64:
    return 8;
  case ElementKind::F32:
    return 4;
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  case ElementKind::I4:
  case ElementKind::U4:
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E5M2:
    return 1;
  default:
    return getIntegerWidth(kind) / 8;
  }
}

NumericDomain kiln::getNumericDomain(Type elementType) {
  if (isa<FloatType>(elementType))
    return NumericDomain::Float;
  if (elementType.isUnsignedInteger())
    return NumericDomain::Unsigned;
  return NumericDomain::Signed;
}

FailureOr<int64_t> kiln::getCheckedNumElements(ArrayRef<int64_t> shape,
                                               std::optional<Location> loc) {
  // The bound applies to the product with zero dims counted as one, so that
  // no stride or partial product of an empty tensor can overflow either.
  int64_t bound = 1;
  bool empty = false;
  for (auto [index, dim] : llvm::enumerate(shape)) {
    if (ShapedType::isDynamic(dim))
      return emitOptionalError(loc, "expected a static dim at index ", index,
                               " of a runtime shape");
    if (dim < 0)
      return emitOptionalError(loc, "invalid dim ", dim, " at index ", index);
    if (dim == 0) {
      empty = true;
      continue;
    }
    std::optional<int64_t> product = llvm::checkedMul(bound, dim);
    if (!product || *product > kMaxHostTensorElements)
      return emitOptionalError(loc, "tensor of shape ", formatShape(shape),
                               " exceeds the interpreter's limit of ",
                               kMaxHostTensorElements, " elements");
    bound = *product;
  }
  return empty ? 0 : bound;
}

FailureOr<HostTensor> HostTensor::allocate(Type elementType,
                                           ArrayRef<int64_t> shape,
                                           std::optional<Location> loc) {
  int64_t width = getHostElementByteWidth(elementType);
  if (width == 0)
    return emitOptionalError(loc, "unsupported element type ", elementType);
  FailureOr<int64_t> count = getCheckedNumElements(shape, loc);
  if (failed(count))
    return failure();
  HostTensor tensor;
  tensor.elementType = elementType;
  tensor.shape.assign(shape.begin(), shape.end());
  // At most 2^31 elements of 8 bytes: no overflow.
  tensor.bytes.assign(static_cast<size_t>(*count * width), 0);
  return tensor;
}

FailureOr<HostTensor>
HostTensor::fromElementsAttr(ElementsAttr attr, std::optional<Location> loc) {
  auto type = dyn_cast<RankedTensorType>(attr.getShapedType());
  if (!type)
    return emitOptionalError(loc, "expected a ranked tensor constant, got ",
                             attr.getShapedType());
  FailureOr<HostTensor> tensor =
      allocate(type.getElementType(), type.getShape(), loc);
  if (failed(tensor))
    return failure();
  ElementKind kind = getElementKind(type.getElementType());
  size_t width =
      static_cast<size_t>(getHostElementByteWidth(tensor->elementType));
  int64_t count = tensor->numElements();

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    DenseResourceElementsHandle handle = resource.getRawHandle();
    AsmResourceBlob *blob = handle.getBlob();
    if (!blob)
      return emitOptionalError(loc, "dense_resource blob '", handle.getKey(),
                               "' has no data");
    ArrayRef<char> data = blob->getData();
    if (data.size() != tensor->bytes.size())
      return emitOptionalError(loc, "dense_resource blob '", handle.getKey(),
                               "' holds ", data.size(), " bytes, expected ",
                               tensor->bytes.size(), " for ", type);
    if (!data.empty())
      std::memcpy(tensor->bytes.data(), data.data(), data.size());
    // Resource blobs hold one byte per bool; any nonzero byte is true.
    if (kind == ElementKind::I1)
      for (char &byte : tensor->bytes)
        byte = byte != 0 ? 1 : 0;
    return tensor;
  }

  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    // MLIR bit-packs i1 in its raw storage; enumerate bools instead.
    if (kind == ElementKind::I1) {
      for (auto [index, value] : llvm::enumerate(dense.getValues<bool>()))
        tensor->bytes[index] = value ? 1 : 0;
      return tensor;
    }
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat()) {
      if (raw.size() < width)
        return emitOptionalError(loc, "malformed splat constant of ", type);
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(tensor->bytes.data() + i * width, raw.data(), width);
      return tensor;
    }
    if (raw.size() != tensor->bytes.size())
      return emitOptionalError(loc, "dense constant holds ", raw.size(),
                               " bytes, expected ", tensor->bytes.size(),
                               " for ", type);
    if (!raw.empty())
      std::memcpy(tensor->bytes.data(), raw.data(), raw.size());
    return tensor;
  }

  // Other ElementsAttr implementations: enumerate values generically.
  if (isa<FloatType>(type.getElementType())) {
    if (auto values = attr.tryGetValues<llvm::APFloat>()) {
      for (auto [index, value] : llvm::enumerate(*values)) {
        bool losesInfo = false;
        llvm::APFloat wide = value;
        (void)wide.convert(llvm::APFloat::IEEEdouble(),
                           llvm::APFloat::rmNearestTiesToEven, &losesInfo);
        tensor->setFromDouble(index, wide.convertToDouble());
      }
      return tensor;
    }
  } else if (auto values = attr.tryGetValues<llvm::APInt>()) {
    for (auto [index, value] : llvm::enumerate(*values))
      tensor->setFromInt(index, kind == ElementKind::I1
                                    ? static_cast<int64_t>(!value.isZero())
                                    : value.getSExtValue());
    return tensor;
  }
  return emitOptionalError(loc, "cannot read the elements of constant ", attr);
}

/// A tensor of `values` (row-major), each stored by `Domain::set`.
template <typename Domain>
static FailureOr<HostTensor>
fromValues(Type elementType, ArrayRef<int64_t> shape,
           ArrayRef<typename Domain::Value> values,
           std::optional<Location> loc) {
  FailureOr<HostTensor> tensor = HostTensor::allocate(elementType, shape, loc);
  if (failed(tensor))
    return failure();
  if (static_cast<int64_t>(values.size()) != tensor->numElements())
    return emitOptionalError(loc, "expected ", tensor->numElements(),
                             " values, got ", values.size());
  for (auto [index, value] : llvm::enumerate(values))
    Domain::set(*tensor, index, value);
  return tensor;
}

FailureOr<HostTensor> HostTensor::fromDoubles(Type elementType,
                                              ArrayRef<int64_t> shape,
                                              ArrayRef<double> values,
                                              std::optional<Location> loc) {
  return fromValues<FloatDomain>(elementType, shape, values, loc);
}

FailureOr<HostTensor> HostTensor::fromInts(Type elementType,
                                           ArrayRef<int64_t> shape,
                                           ArrayRef<int64_t> values,
                                           std::optional<Location> loc) {
  return fromValues<SignedDomain>(elementType, shape, values, loc);
}

int64_t HostTensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return -1;
    std::optional<int64_t> product = llvm::checkedMul(count, dim);
    if (!product)
      return -1;
    count = *product;
  }
  return count;
}

RankedTensorType HostTensor::getType() const {
  return RankedTensorType::get(shape, elementType);
}

double HostTensor::getAsDouble(int64_t i) const {
  ElementKind kind = getElementKind(elementType);
  switch (kind) {
  case ElementKind::Unsupported:
    // Reached only for a tensor built by hand with an unsupported type.
    return std::numeric_limits<double>::quiet_NaN();
  case ElementKind::F64:
    return loadElement<double>(bytes, i);
  case ElementKind::F32:
    return loadElement<float>(bytes, i);
  case ElementKind::F16:
    return decodeFloat16(llvm::APFloat::IEEEhalf(),
                         loadElement<uint16_t>(bytes, i));
  case ElementKind::BF16:
    return decodeFloat16(llvm::APFloat::BFloat(),
                         loadElement<uint16_t>(bytes, i));
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E5M2:
    return rt::floatOfFloat8Bits(loadElement<uint8_t>(bytes, i),
                                 kind == ElementKind::F8E5M2);
  case ElementKind::I1:
    return loadElement<uint8_t>(bytes, i) != 0 ? 1.0 : 0.0;
  case ElementKind::I4:
  case ElementKind::U4:
    return static_cast<double>(getAsInt(i));
  default:
    return visitIntegerKind(kind, [&](auto zero) {
      return static_cast<double>(loadElement<decltype(zero)>(bytes, i));
    });
  }
}

void HostTensor::setFromDouble(int64_t i, double value) {
  ElementKind kind = getElementKind(elementType);
  switch (kind) {
  case ElementKind::Unsupported:
    return;
  case ElementKind::F64:
    storeElement<double>(bytes, i, value);
    return;
  case ElementKind::F32:
    storeElement<float>(bytes, i, static_cast<float>(value));
    return;
  case ElementKind::F16:
    storeElement<uint16_t>(bytes, i,
                           encodeFloat16(llvm::APFloat::IEEEhalf(), value));
    return;
  case ElementKind::BF16:
    storeElement<uint16_t>(bytes, i,
                           encodeFloat16(llvm::APFloat::BFloat(), value));
    return;
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E5M2:
    // Through float: a double rounds twice (the casts Kiln imports convert
    // from float).
    storeElement<uint8_t>(bytes, i,
                          rt::float8BitsOf(static_cast<float>(value),
                                           kind == ElementKind::F8E5M2));
    return;
  case ElementKind::I1:
    // `x != 0`, so NaN is true as in numpy's bool(nan).
    storeElement<uint8_t>(bytes, i, value != 0.0 ? 1 : 0);
    return;
  default:
    if (elementType.isUnsignedInteger())
      setFromUnsigned(i, floatToUnsigned(value, getIntegerWidth(kind)));
    else
      setFromInt(i, floatToInteger(value, getIntegerWidth(kind)));
    return;
  }
}

int64_t HostTensor::getAsInt(int64_t i) const {
  ElementKind kind = getElementKind(elementType);
  if (kind == ElementKind::Unsupported)
    return 0;
  if (isFloatKind(kind))
    return floatToInteger(getAsDouble(i), 64);
  if (kind == ElementKind::I1)
    return loadElement<uint8_t>(bytes, i) != 0 ? 1 : 0;
  // A 4-bit value is its byte's low four bits (Kiln stores int4
  // sign-extended; other writers, such as ml_dtypes, may not).
  if (kind == ElementKind::I4)
    return int8_t(uint8_t(loadElement<uint8_t>(bytes, i) << 4)) >> 4;
  if (kind == ElementKind::U4)
    return loadElement<uint8_t>(bytes, i) & 0xf;
  // Signed kinds sign-extend, unsigned ones zero-extend; ui64 keeps its bits.
  return visitIntegerKind(kind, [&](auto zero) {
    return static_cast<int64_t>(loadElement<decltype(zero)>(bytes, i));
  });
}

/// Stores the integer whose 64 bits are `bits` (read as signed when
/// `isSigned`) at element `i` of `tensor`: integers wrap modulo 2^width, i1
/// is `value != 0`, floats round to nearest even.
static void storeInteger(HostTensor &tensor, int64_t i, uint64_t bits,
                         bool isSigned) {
  std::vector<char> &bytes = tensor.bytes;
  auto toFloat16 = [&](const llvm::fltSemantics &semantics) {
    return static_cast<uint16_t>(integerToFloat(semantics, bits, isSigned)
                                     .bitcastToAPInt()
                                     .getZExtValue());
  };
  ElementKind kind = getElementKind(tensor.elementType);
  switch (kind) {
  case ElementKind::Unsupported:
    return;
  case ElementKind::F64:
    storeElement<double>(
        bytes, i,
        integerToFloat(llvm::APFloat::IEEEdouble(), bits, isSigned)
            .convertToDouble());
    return;
  case ElementKind::F32:
    storeElement<float>(
        bytes, i,
        integerToFloat(llvm::APFloat::IEEEsingle(), bits, isSigned)
            .convertToFloat());
    return;
  case ElementKind::F16:
    storeElement<uint16_t>(bytes, i, toFloat16(llvm::APFloat::IEEEhalf()));
    return;
  case ElementKind::BF16:
    storeElement<uint16_t>(bytes, i, toFloat16(llvm::APFloat::BFloat()));
    return;
  case ElementKind::F8E4M3FN:
  case ElementKind::F8E5M2:
    storeElement<uint8_t>(
        bytes, i,
        rt::float8BitsOf(
            integerToFloat(llvm::APFloat::IEEEsingle(), bits, isSigned)
                .convertToFloat(),
            kind == ElementKind::F8E5M2));
    return;
  case ElementKind::I1:
    storeElement<uint8_t>(bytes, i, bits != 0 ? 1 : 0);
    return;
  case ElementKind::I4:
    // Wraps modulo 16, stored sign-extended.
    storeElement<int8_t>(bytes, i, int8_t(uint8_t(bits << 4)) >> 4);
    return;
  case ElementKind::U4:
    storeElement<uint8_t>(bytes, i, uint8_t(bits & 0xf));
    return;
  default:
    // Truncation to the width wraps modulo 2^width.
    visitIntegerKind(kind, [&](auto zero) {
      using Bits = std::make_unsigned_t<decltype(zero)>;
      storeElement<Bits>(bytes, i, static_cast<Bits>(bits));
    });
    return;
  }
}

void HostTensor::setFromInt(int64_t i, int64_t value) {
  storeInteger(*this, i, static_cast<uint64_t>(value), /*isSigned=*/true);
}

void HostTensor::setFromUnsigned(int64_t i, uint64_t value) {
  storeInteger(*this, i, value, /*isSigned=*/false);
}

DenseElementsAttr HostTensor::toDenseElementsAttr() const {
  RankedTensorType type = getType();
  if (getElementKind(elementType) == ElementKind::I1) {
    SmallVector<bool> values;
    values.reserve(bytes.size());
    for (char byte : bytes)
      values.push_back(byte != 0);
    return DenseElementsAttr::get(type, values);
  }
  // MLIR's raw-buffer check rejects the empty buffer of an empty tensor.
  if (bytes.empty())
    return DenseElementsAttr::get(type, ArrayRef<Attribute>());
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

void HostTensor::print(llvm::raw_ostream &os) const {
  os << getType() << " [";
  bool isFloat = isa<FloatType>(elementType);
  bool isUnsigned = elementType.isUnsignedInteger();
  int64_t count = numElements();
  for (int64_t i = 0; i < count; ++i) {
    if (i > 0)
      os << ", ";
    // Nine significant digits distinguish every f32 value, seventeen every
    // f64 value.
    if (elementType.isF64())
      os << llvm::format("%.17g", getAsDouble(i));
    else if (isFloat)
      os << llvm::format("%.9g", getAsDouble(i));
    else if (isUnsigned)
      os << static_cast<uint64_t>(getAsInt(i));
    else
      os << getAsInt(i);
  }
  os << "]";
}
