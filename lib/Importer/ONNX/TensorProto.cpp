//===- TensorProto.cpp - ONNX TensorProto to MLIR attributes --------------===//

#include "kiln/Importer/ONNX/TensorProto.h"

#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "kiln/Importer/ONNX/ExternalData.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace kiln {

/// Tensors bigger than this are refused before anything is allocated.
static constexpr int64_t kMaxTensorBytes = int64_t(1) << 34;

// onnx.proto's numbers for float8 and the 4-bit integers, newer than
// Debian's libonnx.
static constexpr int kONNXFloat8E4M3FN = 17, kONNXFloat8E5M2 = 19,
                     kONNXUint4 = 21, kONNXInt4 = 22;

Type convertONNXElementType(MLIRContext *context, int dataType) {
  Builder b(context);
  auto unsignedType = [&](unsigned width) {
    return IntegerType::get(context, width, IntegerType::Unsigned);
  };
  switch (dataType) {
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::INT16:
    return b.getI16Type();
  case onnx::TensorProto::INT8:
    return b.getI8Type();
  case onnx::TensorProto::UINT64:
    return unsignedType(64);
  case onnx::TensorProto::UINT32:
    return unsignedType(32);
  case onnx::TensorProto::UINT16:
    return unsignedType(16);
  case onnx::TensorProto::UINT8:
    return unsignedType(8);
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case kONNXFloat8E4M3FN:
    return b.getType<Float8E4M3FNType>();
  case kONNXFloat8E5M2:
    return b.getType<Float8E5M2Type>();
  case kONNXInt4:
    return b.getIntegerType(4);
  case kONNXUint4:
    return unsignedType(4);
  default:
    return {};
  }
}

StringRef onnxElementTypeName(int dataType) {
  // Numbers as in onnx.proto; newer ones than this libonnx knows included.
  static const char *const names[] = {
      "undefined", "float",      "uint8",      "int8",         "uint16",
      "int16",     "int32",      "int64",      "string",       "bool",
      "float16",   "double",     "uint32",     "uint64",       "complex64",
      "complex128", "bfloat16",  "float8e4m3fn", "float8e4m3fnuz",
      "float8e5m2", "float8e5m2fnuz", "uint4",  "int4",         "float4e2m1",
      "float8e8m0", "uint2",     "int2"};
  if (dataType >= 0 && dataType < static_cast<int>(std::size(names)))
    return names[dataType];
  return "unknown";
}

/// Bytes per element of a supported type in Kiln's storage (i1 is one byte).
static int64_t storageBytes(Type type) {
  if (type.isInteger(1))
    return 1;
  return type.getIntOrFloatBitWidth() / 8;
}

bool isFourBitType(Type type) {
  auto integer = dyn_cast_if_present<IntegerType>(type);
  return integer && integer.getWidth() == 4 && !integer.isSigned();
}

bool isStorageOnlyType(Type type) {
  return isFourBitType(type) ||
         isa_and_present<Float8E4M3FNType, Float8E5M2Type>(type);
}

/// memcpy for a count that may be zero, where a repeated field's data()
/// may be null (which memcpy must not be given).
static void copyBytes(char *dst, const void *src, int64_t bytes) {
  if (bytes > 0)
    std::memcpy(dst, src, bytes);
}

/// Checks that an inline tensor holds the `count` values (`bytes` bytes) its
/// dims say, before anything that size is allocated: dims are only numbers
/// in the file, the values are what the file actually holds.
static LogicalResult checkInlineValueCount(Location loc,
                                           const onnx::TensorProto &tensor,
                                           int64_t count, int64_t elemBytes,
                                           int64_t bytes) {
  int64_t got = 0;
  bool matches = false;
  if (tensor.has_raw_data()) {
    got = tensor.raw_data().size() / std::max<int64_t>(elemBytes, 1);
    matches = static_cast<int64_t>(tensor.raw_data().size()) == bytes;
  } else {
    switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      got = tensor.float_data_size();
      break;
    case onnx::TensorProto::DOUBLE:
      got = tensor.double_data_size();
      break;
    case onnx::TensorProto::INT64:
      got = tensor.int64_data_size();
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      got = tensor.uint64_data_size();
      break;
    default:
      got = tensor.int32_data_size();
      break;
    }
    matches = got == count;
  }
  if (matches)
    return success();
  return emitError(loc, "tensor '")
         << tensor.name() << "' holds " << got << " values, expected "
         << count;
}

/// Copies the values of an inline tensor that `checkInlineValueCount`
/// accepted into `data`, from raw_data or from the typed field onnx.proto
/// puts them in.
static void copyInlineValues(const onnx::TensorProto &tensor, int64_t count,
                             int64_t elemBytes, MutableArrayRef<char> data) {
  int64_t bytes = data.size();
  if (tensor.has_raw_data()) {
    copyBytes(data.data(), tensor.raw_data().data(), bytes);
    return;
  }
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    copyBytes(data.data(), tensor.float_data().data(), bytes);
    return;
  case onnx::TensorProto::DOUBLE:
    copyBytes(data.data(), tensor.double_data().data(), bytes);
    return;
  case onnx::TensorProto::INT64:
    copyBytes(data.data(), tensor.int64_data().data(), bytes);
    return;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    // One value per uint64 entry; a uint32 keeps its low four bytes.
    for (int64_t i = 0; i < count; ++i) {
      uint64_t v = tensor.uint64_data(i);
      std::memcpy(data.data() + i * elemBytes, &v, elemBytes);
    }
    return;
  default:
    // int32, int16, uint16, int8, uint8, bool, float16 and bfloat16 all
    // travel in int32_data, one value (or one 16-bit pattern) per entry;
    // each keeps its low bytes (the host is little-endian).
    for (int64_t i = 0; i < count; ++i) {
      int32_t v = tensor.int32_data(i);
      std::memcpy(data.data() + i * elemBytes, &v, elemBytes);
    }
    return;
  }
}

/// A readable `dense` literal of `data`.
static ElementsAttr denseLiteral(RankedTensorType type, ArrayRef<char> data) {
  if (type.getElementType().isInteger(1)) {
    SmallVector<bool> values;
    for (char c : data)
      values.push_back(c != 0);
    return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
  }
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, data));
}

/// A 4-bit tensor of `count` values, stored two a byte, low bits first (in
/// raw_data, external data, or one byte per int32_data entry), widened to
/// one value a byte, sign-extended for int4: Kiln's storage of i4 and ui4
/// (a weight's DequantizeLinear packs them again into kiln.dequantize's
/// layout). A large tensor goes to a spilled blob, whose pages the reader
/// drops, so that the widened copy never sits whole in memory.
static FailureOr<ElementsAttr>
convertFourBitTensor(Location loc, const onnx::TensorProto &tensor,
                     RankedTensorType type, int64_t count, int64_t inlineLimit,
                     ExternalData *externalData) {
  int64_t packedBytes = (count + 1) / 2;
  std::string packedCopy;
  ArrayRef<char> packed;
  std::shared_ptr<const void> keepAlive;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    FailureOr<ExternalBytes> mapped =
        externalData->read(loc, tensor, packedBytes);
    if (failed(mapped))
      return failure();
    packed = mapped->bytes;
    keepAlive = std::move(mapped->keepAlive);
  } else if (tensor.has_raw_data()) {
    packed = ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size());
  } else {
    packedCopy.reserve(tensor.int32_data_size());
    for (int32_t v : tensor.int32_data())
      packedCopy.push_back(static_cast<char>(v));
    packed = ArrayRef<char>(packedCopy.data(), packedCopy.size());
  }
  if (static_cast<int64_t>(packed.size()) != packedBytes)
    return emitError(loc, "tensor '")
           << tensor.name() << "' holds " << packed.size()
           << " bytes of 4-bit values, expected " << packedBytes << " for "
           << count << " values";
  bool isSigned = type.getElementType().isSignlessInteger();
  auto widen = [&](char *out, size_t offset, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      size_t at = offset + i;
      uint8_t nibble = (uint8_t(packed[at / 2]) >> (4 * (at % 2))) & 0xf;
      out[i] = static_cast<char>(isSigned ? int8_t(nibble << 4) >> 4 : nibble);
    }
  };
  if (count <= inlineLimit) {
    SmallVector<char> data(count);
    widen(data.data(), 0, count);
    return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, data));
  }
  AsmResourceBlob blob = spilledBlob(count, widen);
  releaseMappedWeightPages(packed);
  std::string name = tensor.name().empty() ? "tensor" : tensor.name();
  return cast<ElementsAttr>(
      DenseResourceElementsAttr::get(type, name, std::move(blob)));
}

FailureOr<ElementsAttr> convertTensorProto(Location loc,
                                           const onnx::TensorProto &tensor,
                                           int64_t inlineLimit,
                                           ExternalData *externalData) {
  MLIRContext *context = loc.getContext();
  Type elementType = convertONNXElementType(context, tensor.data_type());
  if (!elementType)
    return emitError(loc, "unsupported element type ")
           << onnxElementTypeName(tensor.data_type()) << " of tensor '"
           << tensor.name() << "'";
  bool external = tensor.data_location() == onnx::TensorProto::EXTERNAL;
  if (external && !externalData)
    return emitError(loc, "tensor '")
           << tensor.name()
           << "' uses external data, which is read only for tensors of a "
              "model file";

  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) {
    std::optional<int64_t> next = llvm::checkedMul(count, dim);
    if (dim < 0 || !next)
      return emitError(loc, "tensor '") << tensor.name() << "' has invalid dims";
    count = *next;
    shape.push_back(dim);
  }
  int64_t elemBytes =
      isFourBitType(elementType) ? 1 : storageBytes(elementType);
  std::optional<int64_t> bytes = llvm::checkedMul(count, elemBytes);
  if (!bytes || *bytes > kMaxTensorBytes)
    return emitError(loc, "tensor '") << tensor.name() << "' is too large";
  auto type = RankedTensorType::get(shape, elementType);
  if (isFourBitType(elementType))
    return convertFourBitTensor(loc, tensor, type, count, inlineLimit,
                                externalData);
  std::string blobName = tensor.name().empty() ? "tensor" : tensor.name();

  if (external) {
    FailureOr<ExternalBytes> mapped = externalData->read(loc, tensor, *bytes);
    if (failed(mapped))
      return failure();
    if (count <= inlineLimit)
      return denseLiteral(type, mapped->bytes);
    // The blob points into the mapped file, which its deleter keeps mapped:
    // the weights are not copied. Data at an offset the element type cannot
    // be read from in place is copied once instead.
    constexpr size_t align = alignof(uint64_t);
    AsmResourceBlob blob =
        reinterpret_cast<uintptr_t>(mapped->bytes.data()) % align == 0
            ? UnmanagedAsmResourceBlob::allocateWithAlign(
                  mapped->bytes, align,
                  [keepAlive = std::move(mapped->keepAlive)](
                      void *, size_t, size_t) mutable { keepAlive.reset(); })
            : HeapAsmResourceBlob::allocateAndCopyWithAlign(mapped->bytes,
                                                            align);
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(type, blobName, std::move(blob)));
  }

  if (failed(checkInlineValueCount(loc, tensor, count, elemBytes, *bytes)))
    return failure();
  if (count <= inlineLimit) {
    SmallVector<char> data(*bytes);
    copyInlineValues(tensor, count, elemBytes, data);
    return denseLiteral(type, data);
  }
  // Filled in place: one copy of the values, not two.
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(
      *bytes, alignof(uint64_t), /*dataIsMutable=*/true);
  copyInlineValues(tensor, count, elemBytes, blob.getMutableData());
  return cast<ElementsAttr>(
      DenseResourceElementsAttr::get(type, blobName, std::move(blob)));
}

FailureOr<ElementsAttr> parseTensorProtoFile(Location loc, StringRef bytes,
                                             std::string &name) {
  onnx::TensorProto tensor;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !tensor.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return emitError(loc, "not a valid serialized ONNX TensorProto");
  name = tensor.name();
  return convertTensorProto(loc, tensor, /*inlineLimit=*/INT64_MAX);
}

} // namespace kiln
