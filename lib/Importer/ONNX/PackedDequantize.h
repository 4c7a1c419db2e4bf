//===- PackedDequantize.h - DequantizeLinear of weights, kept packed -*- C++
//-*-===//

#ifndef KILN_IMPORTER_ONNX_PACKEDDEQUANTIZE_H
#define KILN_IMPORTER_ONNX_PACKEDDEQUANTIZE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace kiln {

/// DequantizeLinear of a constant 2-D weight of 4- or 8-bit integers
/// (`x`), with constant scales and zero points per tensor, per `axis` or in
/// blocks of `block` along it, as a kiln.dequantize of the weights packed
/// again in its layout (a row of K values per index of the other dim),
/// followed by a transpose when K runs down the columns (a MatMul's B
/// quantized along K; the transpose folds into the matmul). Null when the
/// node is not of that form; the caller then imports its arithmetic.
mlir::Value packDequantizeLinear(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value x, mlir::Value scale,
                                 mlir::Value zero, int64_t axis, int64_t block);

} // namespace kiln

#endif // KILN_IMPORTER_ONNX_PACKEDDEQUANTIZE_H
