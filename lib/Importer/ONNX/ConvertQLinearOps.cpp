//===- ConvertQLinearOps.cpp - onnxruntime's QOperator elementwise ops ----===//
//
// onnxruntime's quantize_static with QuantFormat.QOperator writes quantized
// operators of 8-bit tensors, each taking the scale and zero point (one
// value each) of its inputs and of its output: QLinearMatMul
// (ConvertQuantized.cpp) and, in the com.microsoft domain, QLinearAdd and
// QLinearMul (a BERT's bias and residual adds, its attention scale and
// GELU's products), QLinearSoftmax, QLinearSigmoid, QLinearLeakyRelu,
// QLinearConcat (a ViT's class token, a decoder's rotary halves),
// QLinearWhere, QLinearGlobalAveragePool and QLinearAveragePool (a
// convolutional head's pooling). QGemm is in ConvertQuantized.cpp,
// QLinearConv in ConvertConv.cpp. QLinearReduceMean has a schema but no
// kernel in onnxruntime and no writer in its quantizer: it stays refused.
//
// Each imports as its arithmetic in fp32: the inputs less their zero points,
// the float op, then the result rounded (halves to even), shifted by the
// output's zero point and saturated, as QuantizeLinear writes integers.
// QLinearAdd and QLinearMul scale as onnxruntime's CPU kernels do: by the
// ratios of the input scales to the output's (A_scale / C_scale and
// B_scale / C_scale; A_scale * B_scale / C_scale), computed once. The
// unary ops (and QLinearWhere's operands) dequantize, apply the float op
// and quantize, which is what the lookup tables onnxruntime builds for
// them hold. The average pools sum integers, exactly, as its MLAS kernel
// does.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"

#include "kiln/Dialect/Kiln/QuantizedActivations.h"

using namespace mlir;

namespace kiln {

namespace {

struct QLinearConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// An 8-bit tensor's quantization: its scale and, where given, its zero
  /// point (of its type), each one value, as fp32 scalars.
  struct Quantization {
    Value scale, zero;
  };

  /// Input `x`'s 8-bit integer type, or an error naming `what`.
  FailureOr<IntegerType> byteType(Value x, StringRef what) {
    if (!holdsBytes(x))
      return error() << what << " must be an 8-bit integer tensor, got "
                     << typeOf(x).getElementType();
    return cast<IntegerType>(typeOf(x).getElementType());
  }

  /// The scale (input `scale`, required) and zero point (input `zero`,
  /// optional) of a tensor of `type`, named `what` in errors.
  FailureOr<Quantization> quantizationOf(int scale, int zero, Type type,
                                         StringRef what) {
    auto s = required(scale);
    if (failed(s))
      return failure();
    if (!typeOf(*s).getElementType().isF32() || !holdsOneValue(*s))
      return error() << what << "'s scale must be one float, got "
                     << typeOf(*s);
    warnOnNonFiniteScale(*s, (what + "'s scale").str());
    Quantization q{reshape(*s, ArrayRef<int64_t>{}), Value()};
    if (Value z = importer.input(node, zero)) {
      if (typeOf(z).getElementType() != type || !holdsOneValue(z))
        return error() << what << "'s zero point must be one " << type
                       << ", got " << typeOf(z);
      q.zero = importer.foldConstant(
          castTo(reshape(z, ArrayRef<int64_t>{}), b.getF32Type()));
    }
    return q;
  }

  /// `x` less its zero point, in fp32.
  Value centred(Value x, const Quantization &q) {
    Value f = castTo(x, b.getF32Type());
    if (!q.zero)
      return f;
    return SubOp::create(b, loc, typeOf(f), f, q.zero);
  }

  /// QLinearAdd: `(A - A_zero) * (A_scale / C_scale) + (B - B_zero) *
  /// (B_scale / C_scale)`, quantized with C's zero point.
  LogicalResult convertQLinearAdd() {
    auto operands = binaryOperands();
    if (failed(operands))
      return failure();
    auto [a, qa, bIn, qb, qc, type] = *operands;
    auto ratioA = ratio(qa.scale, qc.scale);
    auto ratioB = ratio(qb.scale, qc.scale);
    // A constant operand (a bias) folds, not computed at every run.
    Value lhs = importer.foldConstant(MulOp::create(
        b, loc, typeOf(a).clone(b.getF32Type()), centred(a, qa), ratioA));
    Value rhs = importer.foldConstant(MulOp::create(
        b, loc, typeOf(bIn).clone(b.getF32Type()), centred(bIn, qb), ratioB));
    auto sum = broadcast<AddOp>(lhs, rhs);
    if (failed(sum))
      return failure();
    return quantized(*sum, qc.zero, type);
  }

  /// QLinearMul: `(A - A_zero) * (B - B_zero) * (A_scale * B_scale /
  /// C_scale)`, quantized with C's zero point. The product of two 8-bit
  /// differences is exact in fp32.
  LogicalResult convertQLinearMul() {
    auto operands = binaryOperands();
    if (failed(operands))
      return failure();
    auto [a, qa, bIn, qb, qc, type] = *operands;
    Value scales = MulOp::create(b, loc, typeOf(qa.scale), qa.scale, qb.scale);
    Value multiplier = ratio(scales, qc.scale);
    auto product = broadcast<MulOp>(importer.foldConstant(centred(a, qa)),
                                    importer.foldConstant(centred(bIn, qb)));
    if (failed(product))
      return failure();
    Value scaled =
        MulOp::create(b, loc, typeOf(*product), *product, multiplier);
    return quantized(scaled, qc.zero, type);
  }

  /// QLinearSigmoid: the sigmoid of X dequantized, quantized as Y.
  LogicalResult convertQLinearSigmoid() {
    return convertUnary([&](Value x) -> FailureOr<Value> {
      return SigmoidOp::create(b, loc, x).getResult();
    });
  }

  /// QLinearLeakyRelu: `x` where X dequantized is at least 0, else `alpha *
  /// x`, quantized as Y.
  LogicalResult convertQLinearLeakyRelu() {
    float alpha = floatAttr("alpha", 0.01f);
    return convertUnary([&](Value x) -> FailureOr<Value> {
      Type f32 = b.getF32Type();
      Value below = LessOp::create(b, loc, typeOf(x).clone(b.getI1Type()), x,
                                   importer.scalar(loc, f32, 0.0));
      Value leaked =
          MulOp::create(b, loc, typeOf(x), x, importer.scalar(loc, f32, alpha));
      return WhereOp::create(b, loc, typeOf(x), below, leaked, x).getResult();
    });
  }

  /// QLinearSoftmax: Softmax of X dequantized at `axis`, with the
  /// semantics of Softmax at opset `opset` (before 13, of the input
  /// flattened to 2-D at `axis`, which defaults to 1), quantized as Y. A
  /// NaN probability is the integer 0, as onnxruntime's kernel writes it
  /// (where QuantizeLinear saturates NaN low): a BERT's scores quantized
  /// after a calibration that saw the -inf mask have an infinite X_scale,
  /// and every probability is NaN.
  LogicalResult convertQLinearSoftmax() {
    int64_t opset = intAttr("opset", 0);
    if (opset < 1)
      return error() << "needs its opset attribute (Softmax's opset)";
    bool legacy = opset < 13;
    return convertUnary(
        [&](Value x) -> FailureOr<Value> {
          auto ax = axis(intAttr("axis", legacy ? 1 : -1), typeOf(x).getRank());
          if (failed(ax))
            return failure();
          return softmaxAt<SoftmaxOp>(x, *ax, legacy);
        },
        /*nanIsZero=*/true);
  }

  /// QLinearConcat: its inputs from 2 on, in threes (X, its scale, its
  /// zero point), each requantized to Y (inputs 0 and 1) as onnxruntime's
  /// kernel does (dequantized, then quantized: its lookup table, which is
  /// the identity for an input quantized as Y), joined along `axis`.
  LogicalResult convertQLinearConcat() {
    int given = node.input_size() - 2;
    if (given < 3 || given % 3 != 0)
      return error() << "expects Y_scale, Y_zero_point and then (X, "
                        "X_scale, X_zero_point) for each input, got "
                     << node.input_size() << " inputs";
    auto yZero = required(1);
    if (failed(yZero))
      return failure();
    auto type = byteType(*yZero, "Y_zero_point");
    if (failed(type))
      return failure();
    auto qy = quantizationOf(0, 1, *type, "Y");
    if (failed(qy))
      return failure();
    SmallVector<Value> parts;
    for (int first = 2; first < node.input_size(); first += 3) {
      auto x = required(first);
      if (failed(x))
        return failure();
      std::string name = "input " + std::to_string(first);
      if (typeOf(*x).getElementType() != *type)
        return error() << name << " must have Y's type " << *type << ", got "
                       << typeOf(*x).getElementType();
      auto qx = quantizationOf(first + 1, first + 2, *type, name);
      if (failed(qx))
        return failure();
      auto part = throughFloat(*x, *qx, *qy, *type,
                               [](Value v) -> FailureOr<Value> { return v; });
      if (failed(part))
        return failure();
      parts.push_back(*part);
    }
    if (!findAttribute(node, "axis"))
      return error() << "needs its axis attribute";
    auto ax = axis(intAttr("axis", 0), typeOf(parts.front()).getRank());
    if (failed(ax))
      return failure();
    auto y = concat(parts, *ax);
    if (failed(y))
      return failure();
    return output(*y);
  }

  /// QLinearGlobalAveragePool: the mean of X over its spatial dims
  /// (channels_last: X is [N, D1, ..., C]).
  LogicalResult convertQLinearGlobalAveragePool() {
    return convertAveragePool(/*wholeImageOnly=*/false);
  }

  /// QLinearAveragePool over a window that covers the whole image without
  /// padding, which onnxruntime's kernel computes as
  /// QLinearGlobalAveragePool. Kiln has no AveragePool: other windows are
  /// refused by name.
  LogicalResult convertQLinearAveragePool() {
    return convertAveragePool(/*wholeImageOnly=*/true);
  }

  /// QLinearWhere: X where the condition holds, else Y, each requantized to
  /// Z's scale and zero point as onnxruntime's lookup tables do
  /// (dequantized, then quantized as Z), broadcast together.
  LogicalResult convertQLinearWhere() {
    if (node.input_size() != 9)
      return error() << "expects 9 inputs (condition, X, x_scale, "
                        "x_zero_point, Y, y_scale, y_zero_point, z_scale, "
                        "z_zero_point), got "
                     << node.input_size();
    auto condition = required(0), x = required(1), y = required(4),
         zZero = required(8);
    if (failed(condition) || failed(x) || failed(y) || failed(zZero))
      return failure();
    if (!typeOf(*condition).getElementType().isInteger(1))
      return error() << "condition must be a bool tensor, got "
                     << typeOf(*condition).getElementType();
    auto type = byteType(*zZero, "z_zero_point");
    if (failed(type))
      return failure();
    for (auto [value, name] : {std::pair(*x, "X"), std::pair(*y, "Y")})
      if (typeOf(value).getElementType() != *type)
        return error() << name << " must have Z's type " << *type << ", got "
                       << typeOf(value).getElementType();
    auto qx = quantizationOf(2, 3, *type, "X");
    auto qy = quantizationOf(5, 6, *type, "Y");
    auto qz = quantizationOf(7, 8, *type, "Z");
    if (failed(qx) || failed(qy) || failed(qz))
      return failure();
    auto asIs = [](Value v) -> FailureOr<Value> { return v; };
    auto xz = throughFloat(*x, *qx, *qz, *type, asIs);
    auto yz = throughFloat(*y, *qy, *qz, *type, asIs);
    if (failed(xz) || failed(yz))
      return failure();
    auto resultType =
        inferWhereType(loc, typeOf(*condition), typeOf(*xz), typeOf(*yz));
    if (failed(resultType))
      return failure();
    return output(WhereOp::create(b, loc, *resultType, *condition, *xz, *yz));
  }

private:
  /// The operands of QLinearAdd and QLinearMul: A, its quantization, B,
  /// its quantization, C's quantization, and their 8-bit type.
  struct BinaryOperands {
    Value a;
    Quantization qa;
    Value bIn;
    Quantization qb, qc;
    IntegerType type;
  };

  FailureOr<BinaryOperands> binaryOperands() {
    auto a = required(0), bIn = required(3);
    if (failed(a) || failed(bIn))
      return failure();
    auto type = byteType(*a, "A");
    if (failed(type))
      return failure();
    if (typeOf(*bIn).getElementType() != *type)
      return error() << "B must have A's type " << *type << ", got "
                     << typeOf(*bIn).getElementType();
    auto qa = quantizationOf(1, 2, *type, "A");
    auto qb = quantizationOf(4, 5, *type, "B");
    auto qc = quantizationOf(6, 7, *type, "C");
    if (failed(qa) || failed(qb) || failed(qc))
      return failure();
    return BinaryOperands{*a, *qa, *bIn, *qb, *qc, *type};
  }

  /// `numerator / denominator` of two fp32 scalars.
  Value ratio(Value numerator, Value denominator) {
    return DivOp::create(b, loc, typeOf(numerator), numerator, denominator);
  }

  /// `value` rounded, shifted by `zero` and saturated to `type`; with
  /// `nanIsZero`, a NaN value is the integer 0.
  LogicalResult quantized(Value value, Value zero, IntegerType type,
                          bool nanIsZero = false) {
    auto q = quantizedValue(value, zero, type, nanIsZero);
    if (failed(q))
      return failure();
    return output(*q);
  }

  FailureOr<Value> quantizedValue(Value value, Value zero, IntegerType type,
                                  bool nanIsZero) {
    auto q = roundToInteger(value, zero, type);
    if (failed(q) || !nanIsZero)
      return q;
    Value nan =
        IsNaNOp::create(b, loc, typeOf(value).clone(b.getI1Type()), value);
    Value none = importer.scalar(loc, type, 0.0);
    return WhereOp::create(b, loc, typeOf(*q), nan, none, *q).getResult();
  }

  /// `x` (quantized by `qx`) dequantized, `op` applied, and quantized by
  /// `qy` as `type`: what the lookup tables onnxruntime builds for its
  /// unary QOperator ops hold.
  template <typename Op>
  FailureOr<Value> throughFloat(Value x, const Quantization &qx,
                                const Quantization &qy, IntegerType type, Op op,
                                bool nanIsZero = false) {
    Value dequantized = MulOp::create(b, loc, typeOf(x).clone(b.getF32Type()),
                                      centred(x, qx), qx.scale);
    auto y = op(dequantized);
    if (failed(y))
      return failure();
    return quantizedValue(ratio(*y, qy.scale), qy.zero, type, nanIsZero);
  }

  /// QLinearGlobalAveragePool, or QLinearAveragePool where its window is
  /// the whole image (`wholeImageOnly`): X (inputs 0 to 2) averaged over its
  /// spatial dims and quantized by inputs 3 and 4, as onnxruntime's kernel
  /// (MLAS) computes it: the sum of X less its zero point, an exact
  /// integer, times `x_scale / (y_scale * size)` (fp32, in that order),
  /// rounded and shifted by Y's zero point.
  LogicalResult convertAveragePool(bool wholeImageOnly) {
    auto operands = unaryOperands();
    if (failed(operands))
      return failure();
    auto [x, qx, qy, type] = *operands;
    RankedTensorType xType = typeOf(x);
    int64_t rank = xType.getRank();
    bool channelsLast = intAttr("channels_last", 0) != 0;
    if (rank < 3)
      return error() << "X must be "
                     << (channelsLast ? "[N, D1, ..., C]" : "[N, C, D1, ...]")
                     << ", got rank " << rank;
    SmallVector<int64_t> spatial, image;
    for (int64_t d = channelsLast ? 1 : 2; d < (channelsLast ? rank - 1 : rank);
         ++d) {
      if (xType.isDynamicDim(d))
        return error() << "needs X's spatial dims known at compile time, got "
                       << shapeText(xType);
      spatial.push_back(d);
      image.push_back(xType.getDimSize(d));
    }
    if (wholeImageOnly && failed(requireWholeImageWindow(image)))
      return failure();
    int64_t size = 1;
    for (int64_t extent : image)
      size *= extent;
    Value centredX = centred(x, qx);
    auto sumType = inferReduceType(loc, typeOf(centredX), spatial,
                                   /*keepdims=*/true);
    if (failed(sumType))
      return failure();
    Value sum = ReduceSumOp::create(b, loc, *sumType, centredX, spatial,
                                    /*keepdims=*/true);
    Type f32 = b.getF32Type();
    Value pixels = importer.scalar(loc, f32, static_cast<double>(size));
    Value scale = importer.foldConstant(ratio(
        qx.scale, MulOp::create(b, loc, typeOf(qy.scale), qy.scale, pixels)));
    return quantized(MulOp::create(b, loc, *sumType, sum, scale), qy.zero,
                     type);
  }

  /// QLinearAveragePool's window (kernel_shape, pads, auto_pad, dilations)
  /// must be the whole image without padding, the form onnxruntime's
  /// kernel computes as a global average.
  LogicalResult requireWholeImageWindow(ArrayRef<int64_t> image) {
    auto kernel = intsAttr("kernel_shape");
    if (!kernel)
      return error() << "needs its kernel_shape attribute";
    auto allAre = [](std::optional<SmallVector<int64_t>> values, int64_t v) {
      return !values ||
             llvm::all_of(*values, [&](int64_t x) { return x == v; });
    };
    const onnx::AttributeProto *autoPadAttr = findAttribute(node, "auto_pad");
    std::string autoPad = autoPadAttr ? autoPadAttr->s() : "NOTSET";
    if (ArrayRef<int64_t>(*kernel) != image || !allAre(intsAttr("pads"), 0) ||
        !allAre(intsAttr("dilations"), 1) ||
        (autoPad != "NOTSET" && autoPad != "VALID"))
      return error() << "only a window over the whole image without padding "
                        "(a global average) is supported, as Kiln has no "
                        "AveragePool; got kernel_shape ["
                     << ArrayRef<int64_t>(*kernel) << "] over an image of ["
                     << image << "]";
    return success();
  }

  /// The operands of a unary op: X (input 0), its quantization (inputs 1
  /// and 2), Y's (inputs 3 and 4), and their 8-bit type.
  struct UnaryOperands {
    Value x;
    Quantization qx, qy;
    IntegerType type;
  };

  FailureOr<UnaryOperands> unaryOperands() {
    auto x = required(0);
    if (failed(x))
      return failure();
    auto type = byteType(*x, "X");
    if (failed(type))
      return failure();
    auto qx = quantizationOf(1, 2, *type, "X");
    auto qy = quantizationOf(3, 4, *type, "Y");
    if (failed(qx) || failed(qy))
      return failure();
    return UnaryOperands{*x, *qx, *qy, *type};
  }

  /// X (input 0, quantized by inputs 1 and 2) dequantized, `op` applied,
  /// and quantized by inputs 3 and 4 (Y's scale and zero point).
  template <typename Op>
  LogicalResult convertUnary(Op op, bool nanIsZero = false) {
    auto operands = unaryOperands();
    if (failed(operands))
      return failure();
    auto [x, qx, qy, type] = *operands;
    auto y = throughFloat(x, qx, qy, type, op, nanIsZero);
    if (failed(y))
      return failure();
    return output(*y);
  }
};

} // namespace

ArrayRef<OpConversion> getQLinearConversions() {
  using C = QLinearConverter;
  static const OpConversion table[] = {
      {kMicrosoftDomain, "QLinearAdd", convertWith<C, &C::convertQLinearAdd>},
      {kMicrosoftDomain, "QLinearMul", convertWith<C, &C::convertQLinearMul>},
      {kMicrosoftDomain, "QLinearSigmoid",
       convertWith<C, &C::convertQLinearSigmoid>},
      {kMicrosoftDomain, "QLinearLeakyRelu",
       convertWith<C, &C::convertQLinearLeakyRelu>},
      {kMicrosoftDomain, "QLinearSoftmax",
       convertWith<C, &C::convertQLinearSoftmax>},
      {kMicrosoftDomain, "QLinearConcat",
       convertWith<C, &C::convertQLinearConcat>},
      {kMicrosoftDomain, "QLinearGlobalAveragePool",
       convertWith<C, &C::convertQLinearGlobalAveragePool>},
      {kMicrosoftDomain, "QLinearAveragePool",
       convertWith<C, &C::convertQLinearAveragePool>},
      {kMicrosoftDomain, "QLinearWhere",
       convertWith<C, &C::convertQLinearWhere>},
  };
  return table;
}

} // namespace kiln
