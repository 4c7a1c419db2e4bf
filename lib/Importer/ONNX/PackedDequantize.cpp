//===- PackedDequantize.cpp - DequantizeLinear of weights, kept packed ----===//
//
// Olive's and ModelOpt's int4 exports, and onnxruntime's quantize_static,
// write a quantized weight as an integer initializer that a
// DequantizeLinear turns into the floats a MatMul reads. Imported as its
// arithmetic, the weight would be folded to floats or unpacked every run;
// here it becomes the kiln.dequantize that MatMulNBits imports to, so it
// stays packed in the artifact and runs the packed GEMV.
//
// kiln.dequantize holds unsigned values: a signed weight and its zero point
// are both offset by the middle of the range (q ^ 2^(bits - 1)), which keeps
// q - zero, and with it every result, exactly as ONNX defines it. E4M3FN
// float8 weights (ModelOpt's FP8) are kept as their bytes, when no zero
// point is other than 0 and no weight is NaN (which the packed GEMV does
// not decode).
//
//===----------------------------------------------------------------------===//

#include "PackedDequantize.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/MathExtras.h"

#include <optional>
#include <vector>

using namespace mlir;

namespace kiln {

namespace {

/// A constant's values as stored, `width` bytes each (one for 4-bit
/// integers); a splat stores one.
struct StoredValues {
  ArrayRef<char> bytes;
  int64_t width = 0;
  bool splat = false;

  const char *at(int64_t i) const {
    return bytes.data() + (splat ? 0 : i * width);
  }
};

std::optional<StoredValues> storedValues(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = cast<RankedTensorType>(constant.getType());
  Type et = type.getElementType();
  if (!et.isIntOrFloat() || et.isInteger(1))
    return std::nullopt;
  int64_t width = (et.getIntOrFloatBitWidth() + 7) / 8;
  int64_t count = type.getNumElements();
  Attribute value = constant.getValue();
  if (isa<DenseResourceElementsAttr>(value)) {
    ArrayRef<char> bytes = storedBytesInPlace(constant.getValue());
    if (bytes.empty() && count > 0)
      return std::nullopt;
    return StoredValues{bytes, width, false};
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    bool splat = dense.isSplat();
    ArrayRef<char> raw = dense.getRawData();
    if (static_cast<int64_t>(raw.size()) != (splat ? 1 : count) * width)
      return std::nullopt;
    return StoredValues{raw, width, splat};
  }
  return std::nullopt;
}

/// Whether E4M3FN weights `q` (`count` values) and zero points `z`
/// (`zeros` values) take kiln.dequantize's float8 form: every zero point 0
/// (either sign) and no weight NaN.
bool keepsFloat8Packed(const StoredValues &q, const StoredValues *z,
                       int64_t count, int64_t zeros) {
  for (int64_t i = 0; z && i < (z->splat ? 1 : zeros); ++i)
    if ((uint8_t(*z->at(i)) & 0x7f) != 0)
      return false;
  for (int64_t i = 0; i < (q.splat ? 1 : count); ++i)
    if ((uint8_t(*q.at(i)) & 0x7f) == 0x7f)
      return false;
  return true;
}

/// How the scales index the weight.
enum class ScaleForm { PerTensor, PerAxis, Blocked };

/// A constant of `shape` and byte-wide `element` type holding `rows` rows
/// of `count` `bits`-bit values each, packed low bits first into `rowBytes`
/// bytes a row (the last byte's unused bits zero); `valueAt(row, j)` is
/// value j of a row.
Value packedConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                     Type element, int64_t rows, int64_t rowBytes,
                     int64_t count, int64_t bits,
                     llvm::function_ref<uint8_t(int64_t, int64_t)> valueAt,
                     StringRef name) {
  int64_t perByte = 8 / bits;
  auto type = RankedTensorType::get(shape, element);
  return ConstantOp::create(
      b, loc,
      filledConstantValue(
          type, rows * rowBytes,
          [&](char *chunk, size_t offset, size_t size) {
            for (size_t i = 0; i < size; ++i) {
              int64_t row = (offset + i) / rowBytes;
              int64_t j = ((offset + i) % rowBytes) * perByte;
              uint8_t byte = 0;
              for (int64_t t = 0; t < perByte && j + t < count; ++t)
                byte |= valueAt(row, j + t) << (t * bits);
              chunk[i] = static_cast<char>(byte);
            }
          },
          name));
}

} // namespace

Value packDequantizeLinear(OpBuilder &b, Location loc, Value x, Value scale,
                           Value zero, int64_t axis, int64_t block) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto sType = cast<RankedTensorType>(scale.getType());
  auto integer = dyn_cast<IntegerType>(xType.getElementType());
  bool float8 = isa<Float8E4M3FNType>(xType.getElementType());
  Type et = sType.getElementType();
  if ((!float8 &&
       (!integer || (integer.getWidth() != 4 && integer.getWidth() != 8))) ||
      xType.getRank() != 2 || !xType.hasStaticShape() ||
      !sType.hasStaticShape() || !(et.isF32() || et.isF16() || et.isBF16()))
    return {};
  std::optional<StoredValues> q = storedValues(x), s = storedValues(scale), z;
  if (zero && !(z = storedValues(zero)))
    return {};
  if (!q || !s)
    return {};
  ArrayRef<int64_t> dims = xType.getShape();
  if (axis < 0)
    axis += 2;

  // K: the dim the blocks run along, or the one a per-axis scale does not
  // index; a row of the packed weights is one index of the other dim.
  ScaleForm form;
  int64_t kAxis;
  if (block == 0 && sType.getNumElements() == 1) {
    // Read as a MatMul's B [K, N], the form quantize_static writes.
    form = ScaleForm::PerTensor;
    kAxis = 0;
  } else if ((axis != 0 && axis != 1) || block < 0) {
    return {};
  } else if (block == 0 && sType.getRank() == 1 &&
             sType.getDimSize(0) == dims[axis]) {
    form = ScaleForm::PerAxis;
    kAxis = 1 - axis;
  } else if (block > 0 && sType.getRank() == 2 &&
             sType.getDimSize(axis) ==
                 int64_t(llvm::divideCeil(dims[axis], block)) &&
             sType.getDimSize(1 - axis) == dims[1 - axis]) {
    form = ScaleForm::Blocked;
    kAxis = axis;
  } else {
    return {};
  }
  if (zero && cast<RankedTensorType>(zero.getType()).getNumElements() !=
                  sType.getNumElements())
    return {};

  if (float8 &&
      !keepsFloat8Packed(*q, z ? &*z : nullptr, xType.getNumElements(),
                         sType.getNumElements()))
    return {};

  int64_t bits = float8 ? 8 : integer.getWidth(), perByte = 8 / bits;
  int64_t k = dims[kAxis], rows = dims[1 - kAxis];
  // A per-tensor or per-axis scale is one block of the whole row, rounded
  // up to whole bytes.
  int64_t blockSize =
      form == ScaleForm::Blocked ? block : llvm::alignTo(k, perByte);
  if ((blockSize * bits) % 8 != 0 || blockSize > (int64_t(1) << 20) || k == 0 ||
      rows == 0)
    return {};
  int64_t blocks = llvm::divideCeil(k, blockSize);
  int64_t blockBytes = blockSize * bits / 8, rowBytes = blocks * blockBytes;
  uint8_t mid = uint8_t(1) << (bits - 1), mask = uint8_t((1u << bits) - 1);
  // Signed values are offset by the middle of the range (two's complement
  // with its sign bit flipped); 4-bit ones are stored sign-extended.
  uint8_t flip = integer && integer.isSignless() ? mid : 0;
  auto unsignedAt = [&](const StoredValues &values, int64_t i) -> uint8_t {
    return (uint8_t(*values.at(i)) ^ flip) & mask;
  };
  auto weightIndex = [&](int64_t row, int64_t col) {
    return kAxis == 1 ? row * dims[1] + col : col * dims[1] + row;
  };
  auto scaleIndex = [&](int64_t row, int64_t blk) -> int64_t {
    switch (form) {
    case ScaleForm::PerTensor:
      return 0;
    case ScaleForm::PerAxis:
      return row;
    case ScaleForm::Blocked:
      return kAxis == 1 ? row * blocks + blk : blk * rows + row;
    }
    llvm_unreachable("unknown scale form");
  };

  // The blobs are named after the weight (its initializer's name).
  std::string name = "weight";
  if (auto named = dyn_cast<NameLoc>(x.getLoc()))
    name = named.getName().str();
  Type stored =
      float8 ? xType.getElementType() : b.getIntegerType(8, /*isSigned=*/false);
  Value packed = packedConstant(
      b, loc, {rows, blocks, blockBytes}, stored, rows, rowBytes, k, bits,
      [&](int64_t row, int64_t col) {
        return unsignedAt(*q, weightIndex(row, col));
      },
      name + "_packed");
  releaseMappedWeightPages(q->bytes);

  auto scalesType = RankedTensorType::get({rows, blocks}, et);
  Value scales = ConstantOp::create(
      b, loc,
      filledConstantValue(
          scalesType, rows * blocks * s->width,
          [&](char *chunk, size_t offset, size_t size) {
            for (size_t i = 0; i < size; i += s->width) {
              int64_t at = (offset + i) / s->width;
              std::memcpy(chunk + i,
                          s->at(scaleIndex(at / blocks, at % blocks)),
                          s->width);
            }
          },
          name + "_scales"));

  // Zero points: absent in ONNX is 0, which for signed weights is
  // kiln.dequantize's default (the middle) and for unsigned ones is not.
  std::vector<uint8_t> zeros(rows * blocks, 0);
  bool middle = true;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      uint8_t value = z ? unsignedAt(*z, scaleIndex(row, blk)) : flip;
      zeros[row * blocks + blk] = value;
      middle &= value == mid;
    }
  Value zeroPoints;
  if (!middle && !float8) {
    int64_t zeroBytes = llvm::divideCeil(blocks * bits, 8);
    zeroPoints = packedConstant(
        b, loc, {rows, zeroBytes}, b.getIntegerType(8, /*isSigned=*/false),
        rows, zeroBytes, blocks, bits,
        [&](int64_t row, int64_t blk) { return zeros[row * blocks + blk]; },
        name + "_zero_points");
  }

  Value weights =
      DequantizeOp::create(b, loc, RankedTensorType::get({rows, k}, et), packed,
                           scales, zeroPoints, bits, blockSize);
  if (kAxis == 1)
    return weights;
  return TransposeOp::create(b, loc, xType.clone(et), weights,
                             ArrayRef<int64_t>{1, 0});
}

} // namespace kiln
