//===- NodeConverter.h - what every ONNX op converter needs -----*- C++ -*-===//

#ifndef KILN_LIB_IMPORTER_ONNX_NODECONVERTER_H
#define KILN_LIB_IMPORTER_ONNX_NODECONVERTER_H

#include "GraphImporter.h"

#include "kiln/Dialect/Kiln/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"

#include <optional>

namespace kiln {

/// The node being converted, its location and builder, and the attribute,
/// input and axis helpers the converters share.
struct NodeConverterBase {
  GraphImporter &importer;
  const onnx::NodeProto &node;
  mlir::Location loc;
  mlir::OpBuilder &b;

  NodeConverterBase(GraphImporter &importer, const onnx::NodeProto &node)
      : importer(importer), node(node), loc(importer.nodeLoc(node)),
        b(importer.builder()) {}

  mlir::InFlightDiagnostic error() {
    return mlir::emitError(loc) << node.op_type() << ": ";
  }

  int64_t intAttr(llvm::StringRef name, int64_t fallback) {
    const onnx::AttributeProto *attr = findAttribute(node, name);
    return attr ? attr->i() : fallback;
  }
  float floatAttr(llvm::StringRef name, float fallback) {
    const onnx::AttributeProto *attr = findAttribute(node, name);
    return attr ? attr->f() : fallback;
  }
  std::optional<llvm::SmallVector<int64_t>> intsAttr(llvm::StringRef name) {
    const onnx::AttributeProto *attr = findAttribute(node, name);
    if (!attr)
      return std::nullopt;
    return llvm::SmallVector<int64_t>(attr->ints().begin(),
                                      attr->ints().end());
  }

  /// Input `i`, which must be present.
  mlir::FailureOr<mlir::Value> required(int i) {
    mlir::Value value = importer.input(node, i);
    if (!value)
      return error() << "missing required input " << i;
    return value;
  }

  /// Inputs 0 to `count` - 1, each of which must be present.
  mlir::FailureOr<llvm::SmallVector<mlir::Value, 8>> requiredInputs(int count) {
    llvm::SmallVector<mlir::Value, 8> inputs;
    for (int i = 0; i < count; ++i) {
      auto value = required(i);
      if (mlir::failed(value))
        return mlir::failure();
      inputs.push_back(*value);
    }
    return inputs;
  }

  static mlir::RankedTensorType typeOf(mlir::Value v) {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  }

  /// Whether `v` holds 8-bit integers (signed or not): the operands of
  /// MatMulInteger, ConvInteger and QLinearMatMul.
  static bool holdsBytes(mlir::Value v) {
    auto integer =
        llvm::dyn_cast<mlir::IntegerType>(typeOf(v).getElementType());
    return integer && integer.getWidth() == 8;
  }

  /// `(a - aZero) . (b - bZero)` of 8-bit integers (each zero point
  /// optional, A's one value or one a row, B's one value or one a column)
  /// as the fp32 product of the differences: MatMulInteger's arithmetic,
  /// which QLinearMatMul, QGemm and QAttention share (IntegerProduct.cpp);
  /// errors name the zero points as the node does.
  mlir::FailureOr<mlir::Value>
  integerProduct(mlir::Value a, mlir::Value aZero, mlir::Value bIn,
                 mlir::Value bZero, llvm::StringRef aZeroName = "a_zero_point",
                 llvm::StringRef bZeroName = "b_zero_point");
  /// `param` (a zero point or scale of A) viewed to broadcast over A [...,
  /// M, K] per tensor or per row: one value, [M] for a 2-D A, or [..., M, 1]
  /// of A's rank; else an error naming `what`.
  mlir::FailureOr<mlir::Value>
  perRow(mlir::Value param, mlir::RankedTensorType aType, llvm::StringRef what);
  /// `param` (a zero point or scale of B) viewed to broadcast over B [...,
  /// K, N] per tensor or per column: one value, [N], or [..., 1, N] of B's
  /// rank (each broadcasts as it is); else an error naming `what`.
  mlir::FailureOr<mlir::Value> perColumn(mlir::Value param,
                                         mlir::RankedTensorType bType,
                                         llvm::StringRef what);
  /// MatMulInteger's B less its zero point, in fp32: packed where it is a
  /// constant 2-D weight with a constant zero point per tensor or per
  /// column (a kiln.dequantize with scales of 1), else the arithmetic;
  /// errors name the zero point `zeroName`.
  mlir::FailureOr<mlir::Value>
  matmulIntegerWeights(mlir::Value weights, mlir::Value zero,
                       llvm::StringRef zeroName = "b_zero_point");

  /// Resolves a possibly negative axis against `rank`.
  mlir::FailureOr<int64_t> axis(int64_t axis, int64_t rank) {
    // A scalar has no axis: every caller indexes the shape with the result.
    if (axis < -rank || axis >= rank)
      return error() << "axis " << axis << " out of range for rank " << rank;
    return axis < 0 ? axis + rank : axis;
  }

  mlir::LogicalResult output(mlir::Value value, int i = 0) {
    importer.setOutput(node, i, value);
    return mlir::success();
  }

  /// A constant of integer `type` holding `values` (row-major).
  mlir::Value intConstant(mlir::RankedTensorType type,
                          llvm::ArrayRef<int64_t> values) {
    llvm::SmallVector<llvm::APInt> ints;
    unsigned width = type.getElementType().getIntOrFloatBitWidth();
    for (int64_t v : values)
      ints.push_back(llvm::APInt(width, v, /*isSigned=*/true));
    return ConstantOp::create(b, loc,
                              llvm::cast<mlir::ElementsAttr>(
                                  mlir::DenseElementsAttr::get(type, ints)));
  }

  /// The sizes of `v`'s dims (symbolic ones as their expressions).
  mlir::FailureOr<SymbolicShape> sizesOfValue(mlir::Value v) {
    return sizesOf(loc, typeOf(v));
  }

  /// The sizes of `v`'s dims, when every dynamic one has its size (every
  /// type the importer makes does; sizesOfValue checks a graph's input).
  SymbolicShape dimsOf(mlir::Value v) {
    std::optional<SymbolicShape> sizes = symbolicShapeOf(typeOf(v));
    assert(sizes && "an importer type without the sizes of its dims");
    return *sizes;
  }

  /// `count` elements of `x` from `start` along `axis`.
  mlir::Value slice(mlir::Value x, int64_t axis, int64_t start, int64_t count);
  mlir::Value slice(mlir::Value x, int64_t axis, int64_t start,
                    const DimExpr &count);

  /// `shape` (one non-unit dim at most) holding start, start + 1, ...: a
  /// constant, or a running sum when longer than `kMaxIotaConstant`.
  mlir::Value iota(llvm::ArrayRef<int64_t> shape, int64_t start,
                   mlir::Type elementType);
  /// The same over sizes: a named size is cut from the iota of the largest
  /// value its range allows (failing when it has no range).
  mlir::FailureOr<mlir::Value> iota(llvm::ArrayRef<DimExpr> shape,
                                    int64_t start, mlir::Type elementType);

  /// `x` converted to `elementType` (itself when it has that type already).
  mlir::Value castTo(mlir::Value x, mlir::Type elementType) {
    if (typeOf(x).getElementType() == elementType)
      return x;
    return CastOp::create(b, loc, typeOf(x).clone(elementType), x);
  }

  /// `x` cast to `to` as ONNX's Cast and CastLike define it: to float8
  /// through castToFloat8, and from a float to a 4-bit integer wrapping as
  /// ONNX's reference does (ml_dtypes: toward zero, then modulo 16) where
  /// kiln.cast saturates.
  mlir::Value castAsONNX(mlir::Value x, mlir::Type to, bool saturate);

  /// `x` cast to the float8 type `to` as ONNX's Cast and QuantizeLinear
  /// define it: saturating (beyond the largest value, infinity included,
  /// the largest of its sign), or without `saturate`, NaN (E4M3FN, which
  /// has no infinity) or an infinity (E5M2) where a value rounds beyond the
  /// largest.
  mlir::Value castToFloat8(mlir::Value x, mlir::Type to, bool saturate);

  /// `round(ratio) + zero` (halves to even; no zero where it is null),
  /// saturated to the integer type `out` and cast to it, as QuantizeLinear
  /// writes integers (NaN saturates low).
  mlir::FailureOr<mlir::Value>
  roundToInteger(mlir::Value ratio, mlir::Value zero, mlir::IntegerType out);

  /// The node's output: `value` requantized with `zero` (y_zero_point: one
  /// 8-bit integer, whose type the output takes, else an error naming it),
  /// as roundToInteger writes it (QLinearMatMul, QLinearConv, QGemm).
  mlir::LogicalResult outputRequantized(mlir::Value value, mlir::Value zero);

  /// Warns where `scale` (a quantization scale named `what`) is a
  /// constant holding an infinite or NaN value: onnxruntime's calibration
  /// writes one where it saw an infinite value (a BERT's -inf attention
  /// mask), and every value quantized or dequantized with it is NaN or
  /// infinite. The node is still computed as defined (and as onnxruntime
  /// computes it).
  void warnOnNonFiniteScale(mlir::Value scale, llvm::StringRef what);

  /// Softmax or LogSoftmax (`OpTy`) of `x` at `axis` (in range); `legacy`
  /// (before opset 13) normalizes `x` flattened to 2-D at `axis`.
  template <typename OpTy>
  mlir::FailureOr<mlir::Value> softmaxAt(mlir::Value x, int64_t axis,
                                         bool legacy) {
    int64_t rank = typeOf(x).getRank();
    if (!legacy || axis == rank - 1)
      return OpTy::create(b, loc, x, axis).getResult();
    auto shape = sizesOfValue(x);
    if (mlir::failed(shape))
      return mlir::failure();
    std::optional<DimExpr> outer =
        productOf(llvm::ArrayRef<DimExpr>(*shape).take_front(axis));
    std::optional<DimExpr> inner =
        productOf(llvm::ArrayRef<DimExpr>(*shape).drop_front(axis));
    if (!outer || !inner)
      return error() << "the element count overflows";
    mlir::Value flat = reshape(x, SymbolicShape{*outer, *inner});
    mlir::Value y = OpTy::create(b, loc, flat, 1);
    return reshape(y, *shape);
  }

  /// `OpTy(lhs, rhs)` with numpy broadcasting; the shape function reports a
  /// mismatch at the node.
  template <typename OpTy>
  mlir::FailureOr<mlir::Value> broadcast(mlir::Value lhs, mlir::Value rhs) {
    auto type = inferBroadcastType(loc, typeOf(lhs), typeOf(rhs));
    if (mlir::failed(type))
      return mlir::failure();
    return OpTy::create(b, loc, *type, lhs, rhs).getResult();
  }

  /// `parts` joined along `axis`, leaving out parts empty there (the only
  /// part left is returned as it is).
  mlir::FailureOr<mlir::Value> concat(llvm::ArrayRef<mlir::Value> parts,
                                      int64_t axis);

  /// `x` viewed with the symbolic shape `sizes` (no op when it has it).
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<DimExpr> sizes) {
    auto type = symbolicTensorType(sizes, typeOf(x).getElementType());
    if (type == x.getType())
      return x;
    return ReshapeOp::create(b, loc, type, x);
  }

  /// `x` viewed with `shape` (no op when it already has it).
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    auto type = mlir::RankedTensorType::get(shape, typeOf(x).getElementType());
    if (type == x.getType())
      return x;
    return ReshapeOp::create(b, loc, type, x);
  }
};

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_NODECONVERTER_H
