//===- QuantizedOps.cpp - verifier of kiln.dequantize ---------------------===//
//
// The packed layout is fixed by the op's shapes, so every extent a kernel
// or the interpreter computes from them (blocks, bytes per block, bytes of
// zero points) is checked here once, and readers index without checks.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kiln/KilnOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kiln {

LogicalResult DequantizeOp::verify() {
  int64_t bits = getBits(), block = getBlockSize();
  if (bits != 2 && bits != 4 && bits != 8)
    return emitOpError("bits must be 2, 4 or 8, got ") << bits;
  if (isFloat8() && (bits != 8 || getZeroPoints()))
    return emitOpError("float8 weights take bits = 8 and no zero points");
  if (block < 1 || block > (int64_t(1) << 20) || (block * bits) % 8 != 0)
    return emitOpError("block_size must fill whole bytes and be at most "
                       "2^20, got ")
           << block << " of " << bits << " bits";
  RankedTensorType packed = getPacked().getType(), result = getType();
  Type et = result.getElementType();
  if (et.isF64())
    return emitOpError("result must be f32, f16 or bf16, got ") << et;
  if (packed.getRank() != 3 || !packed.hasStaticShape() ||
      result.getRank() != 2 || !result.hasStaticShape())
    return emitOpError("expects packed weights [rows, blocks, bytes] and a "
                       "result [rows, K] of static shapes, got ")
           << packed << " and " << result;
  int64_t rows = packed.getDimSize(0), blocks = packed.getDimSize(1);
  if (packed.getDimSize(2) != getBlockBytes())
    return emitOpError("packed blocks must be block_size * bits / 8 = ")
           << getBlockBytes() << " bytes, got " << packed.getDimSize(2);
  int64_t k = result.getDimSize(1);
  if (result.getDimSize(0) != rows || k <= (blocks - 1) * block ||
      k > blocks * block)
    return emitOpError("result ")
           << result << " must have the packed weights' " << rows
           << " rows and a K that leaves the last of its " << blocks
           << " blocks of " << block << " not empty";
  auto expect = [&](Value v, StringRef what, Type element,
                    ArrayRef<int64_t> shape) -> LogicalResult {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == element && type.getShape() == shape)
      return success();
    InFlightDiagnostic diag = emitOpError(what) << " must be ";
    llvm::interleave(shape, diag, "x");
    return diag << " of " << element << ", got " << type;
  };
  if (failed(expect(getScales(), "scales", et, {rows, blocks})))
    return failure();
  Value zero = getZeroPoints();
  if (!zero)
    return success();
  if (!hasIntegerZeroPoints())
    return expect(zero, "float zero points", et, {rows, blocks});
  int64_t bytes = llvm::divideCeil(blocks * bits, 8);
  return expect(zero, "packed zero points",
                IntegerType::get(getContext(), 8, IntegerType::Unsigned),
                {rows, bytes});
}

} // namespace kiln
