//===- ExecuteQuantized.cpp - kiln.dequantize on the host -----------------===//
//
// The definition the kernels are checked against: each weight from its
// bits, its block's scale and zero point, in fp32 as onnxruntime computes
// MatMulNBits' weights (a float8 weight: its value times the scale, as
// ONNX's DequantizeLinear), rounded once to the result type.
//
//===----------------------------------------------------------------------===//

#include "ExecuteQuantized.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kiln {

/// Value `index` of `bits`-bit values packed in `bytes` low bits first.
static unsigned unpacked(const HostTensor &bytes, int64_t offset, int64_t index,
                         int64_t bits) {
  int64_t perByte = 8 / bits;
  auto byte =
      static_cast<unsigned>(bytes.getAsInt(offset + index / perByte) & 0xff);
  return (byte >> ((index % perByte) * bits)) & ((1u << bits) - 1);
}

FailureOr<HostTensor> executeDequantize(DequantizeOp op,
                                        const HostTensor &packed,
                                        const HostTensor &scales,
                                        const HostTensor *zeroPoints) {
  RankedTensorType type = op.getType();
  int64_t rows = type.getDimSize(0), k = type.getDimSize(1);
  int64_t bits = op.getBits(), block = op.getBlockSize();
  int64_t blocks = op.getBlockCount(), blockBytes = op.getBlockBytes();
  int64_t zeroBytes = llvm::divideCeil(blocks * bits, 8);
  // The verifier fixed these shapes; the tensors are checked against them
  // so that unverified IR cannot index past them.
  bool integerZero = op.hasIntegerZeroPoints();
  if (packed.numElements() != rows * blocks * blockBytes ||
      scales.numElements() != rows * blocks ||
      (zeroPoints &&
       zeroPoints->numElements() != rows * (integerZero ? zeroBytes : blocks)))
    return op.emitOpError("operands do not match the op's shapes");
  auto result =
      HostTensor::allocate(type.getElementType(), {rows, k}, op.getLoc());
  if (failed(result))
    return failure();
  auto middle = static_cast<float>(int64_t(1) << (bits - 1));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < k; ++c) {
      int64_t b = c / block, at = (r * blocks + b) * blockBytes;
      auto scale = static_cast<float>(scales.getAsDouble(r * blocks + b));
      float value;
      if (op.isFloat8()) {
        // A float8 value is exact in fp32.
        value = static_cast<float>(packed.getAsDouble(at + c % block)) * scale;
        result->setFromDouble(r * k + c, value);
        continue;
      }
      auto q = static_cast<float>(unpacked(packed, at, c % block, bits));
      if (!integerZero) {
        auto zero = static_cast<float>(zeroPoints->getAsDouble(r * blocks + b));
        value = q * scale - zero * scale;
      } else {
        float zero = zeroPoints ? static_cast<float>(unpacked(
                                      *zeroPoints, r * zeroBytes, b, bits))
                                : middle;
        value = (q - zero) * scale;
      }
      result->setFromDouble(r * k + c, value);
    }
  return result;
}

} // namespace kiln
