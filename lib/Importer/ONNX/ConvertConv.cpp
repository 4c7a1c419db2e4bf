//===- ConvertConv.cpp - Conv as a gather of patches and one matmul -------===//
//
// im2col in kiln ops: the input, zero-padded, is viewed with its spatial dims
// flattened; one kiln.gather with a compile-time index table picks every
// kernel tap of every output position; the weights, viewed as a matrix,
// multiply the patches in one batched matmul; the bias is added. Groups are
// convolved one by one and concatenated. A later layout pass may replace the
// gather by a pure view where kernel and stride agree (ViT's patches).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"

#include "kiln/Dialect/Kiln/QuantizedActivations.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kiln {

namespace {

/// The largest spatial size, kernel size, stride, dilation or pad.
constexpr int64_t kMaxConvSize = (int64_t(1) << 31) - 1;

/// Index tables larger than this are refused rather than built.
constexpr int64_t kMaxTableEntries = int64_t{1} << 24;

struct ConvConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  SmallVector<int64_t> intsOr(StringRef name, int64_t count, int64_t fallback) {
    return intsAttr(name).value_or(SmallVector<int64_t>(count, fallback));
  }

  Value sliceChannels(Value x, int64_t axis, int64_t start, int64_t count) {
    RankedTensorType type = typeOf(x);
    if (start == 0 && count == type.getDimSize(axis))
      return x;
    SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    SmallVector<int64_t> shape(type.getShape());
    starts[axis] = start;
    shape[axis] = count;
    return SliceOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), x, starts,
        steps);
  }

  LogicalResult convert() {
    auto x = required(0), w = required(1);
    if (failed(x) || failed(w))
      return failure();
    auto y = convolve(*x, *w, importer.input(node, 2));
    if (failed(y))
      return failure();
    return output(*y);
  }

  /// ConvInteger (onnxruntime's quantize_dynamic writes it for a vision
  /// model's patch embedding): the convolution of `x - x_zero_point` by `w
  /// - w_zero_point` (8-bit integers; x's zero point one value, w's one
  /// value or one a filter), as int32. Computed as the fp32 convolution of
  /// the differences, padded with zeros as they are, exact while its sums
  /// stay within fp32's 24 bits, as MatMulInteger's product is.
  LogicalResult convertInteger() {
    auto x = required(0), w = required(1);
    if (failed(x) || failed(w))
      return failure();
    auto y = integerConvolution(*x, importer.input(node, 2), *w,
                                importer.input(node, 3));
    if (failed(y))
      return failure();
    return output(castTo(*y, b.getI32Type()));
  }

  /// QLinearConv (onnxruntime's QOperator format writes it for a vision
  /// model's patch embedding): ConvInteger's convolution plus the int32
  /// bias B (one value a filter), requantized as QLinearMatMul's product
  /// is: `saturate(round((P + B) * (x_scale * w_scale / y_scale)) +
  /// y_zero_point)`. P + B is summed in int32 and the multiplier (one value
  /// or one a filter) computed in fp32 in that order, as onnxruntime's
  /// kernel computes them.
  LogicalResult convertQLinear() {
    auto inputs = requiredInputs(8);
    if (failed(inputs))
      return failure();
    ArrayRef<Value> in = *inputs;
    Value x = in[0], xScale = in[1], w = in[3], wScale = in[4], yScale = in[6],
          yZero = in[7];
    auto product = integerConvolution(x, in[2], w, in[5]);
    if (failed(product))
      return failure();
    int64_t filters = typeOf(w).getDimSize(0);
    for (auto [scale, name] :
         {std::pair{xScale, "x_scale"}, std::pair{wScale, "w_scale"},
          std::pair{yScale, "y_scale"}}) {
      RankedTensorType type = typeOf(scale);
      bool perFilter = scale == wScale && type.getRank() == 1 &&
                       type.getDimSize(0) == filters;
      if (!type.getElementType().isF32() ||
          (!holdsOneValue(scale) && !perFilter))
        return error() << name << " must be one float"
                       << (scale == wScale ? " or one a filter" : "")
                       << ", got " << type;
      warnOnNonFiniteScale(scale, name);
    }
    // One value a filter, over [N, M, spatial...].
    SmallVector<int64_t> perFilter(typeOf(*product).getRank() - 1, 1);
    perFilter[0] = filters;
    auto viewed = [&](Value v) {
      return holdsOneValue(v) ? reshape(v, ArrayRef<int64_t>{})
                              : reshape(v, perFilter);
    };
    Value sum = castTo(*product, b.getI32Type());
    if (Value bias = importer.input(node, 8)) {
      RankedTensorType type = typeOf(bias);
      if (!type.getElementType().isInteger(32) || type.getRank() != 1 ||
          type.getDimSize(0) != filters)
        return error() << "B must be one int32 a filter (" << filters
                       << "), got " << type;
      sum = AddOp::create(b, loc, typeOf(sum), sum, viewed(bias));
    }
    Value scales =
        MulOp::create(b, loc, viewed(xScale), viewed(wScale)).getResult();
    Value multiplier = importer.foldConstant(
        DivOp::create(b, loc, scales, viewed(yScale)).getResult());
    auto requantized =
        broadcast<MulOp>(castTo(sum, b.getF32Type()), multiplier);
    if (failed(requantized))
      return failure();
    return outputRequantized(*requantized, yZero);
  }

  /// The convolution of `x - xZero` by `w - wZero` (8-bit integers; each
  /// zero point optional, x's one value, w's one value or one a filter) as
  /// the fp32 convolution of the differences, padded with zeros as they
  /// are: exact while its sums stay within fp32's 24 bits, as
  /// MatMulInteger's product is (ConvInteger's and QLinearConv's
  /// arithmetic).
  FailureOr<Value> integerConvolution(Value x, Value xZero, Value w,
                                      Value wZero) {
    if (!holdsBytes(x) || !holdsBytes(w))
      return error() << "expected 8-bit integer x and w, got "
                     << typeOf(x).getElementType() << " and "
                     << typeOf(w).getElementType();
    Type f32 = b.getF32Type();
    Value xd = castTo(x, f32), wd = castTo(w, f32);
    RankedTensorType wType = typeOf(w);
    for (auto [zero, input, name] : {std::tuple{xZero, x, "x_zero_point"},
                                     std::tuple{wZero, w, "w_zero_point"}}) {
      if (!zero)
        continue;
      RankedTensorType zType = typeOf(zero);
      if (zType.getElementType() != typeOf(input).getElementType())
        return error() << name << " must have its input's type "
                       << typeOf(input).getElementType() << ", got "
                       << zType.getElementType();
      bool one = holdsOneValue(zero);
      bool perFilter = input == w && zType.getRank() == 1 &&
                       wType.getRank() >= 1 &&
                       zType.getDimSize(0) == wType.getDimSize(0);
      if (!one && !perFilter)
        return error() << name << " of shape " << shapeText(zType)
                       << " must be one value"
                       << (input == w ? " or one per filter" : "");
      Value z = importer.foldConstant(castTo(zero, f32));
      if (one) {
        z = reshape(z, ArrayRef<int64_t>{});
      } else {
        SmallVector<int64_t> shape(wType.getRank(), 1);
        shape[0] = wType.getDimSize(0);
        z = reshape(z, shape);
      }
      Value &centred = input == w ? wd : xd;
      centred = SubOp::create(b, loc, typeOf(centred), centred, z);
    }
    return convolve(xd, wd, Value());
  }

  /// The convolution of `x` by `w` plus `bias` (null for none), or a
  /// failure reported at the node.
  FailureOr<Value> convolve(Value x, Value w, Value bias) {
    ArrayRef<int64_t> xShape = typeOf(x).getShape();
    ArrayRef<int64_t> wShape = typeOf(w).getShape();
    int64_t rank = xShape.size(), spatial = rank - 2;
    if (rank < 3 || static_cast<int64_t>(wShape.size()) != rank)
      return error() << "expected input and weights of the same rank >= 3";
    // The batch may be symbolic: the patch table depends on the other dims
    // only.
    if (!typeOf(w).hasStaticShape() ||
        llvm::any_of(xShape.drop_front(), ShapedType::isDynamic))
      return error() << "the input's channels and spatial dims and the "
                        "weights must be static, got "
                     << shapeText(typeOf(x)) << " and " << shapeText(typeOf(w));
    DimExpr batch = dimsOf(x)[0];
    Type elementType = typeOf(x).getElementType();
    if (typeOf(w).getElementType() != elementType ||
        (bias && typeOf(bias).getElementType() != elementType))
      return error() << "input, weights and bias must have one element type";
    int64_t channels = xShape[1], filters = wShape[0];
    int64_t group = intAttr("group", 1);
    if (group < 1 || channels % group || filters % group ||
        wShape[1] * group != channels)
      return error() << "group " << group << " does not divide " << channels
                     << " input channels into the weights' " << wShape[1];
    SmallVector<int64_t> kernel(wShape.drop_front(2));
    if (auto given = intsAttr("kernel_shape"); given && *given != kernel)
      return error() << "kernel_shape does not match the weights";
    SmallVector<int64_t> strides = intsOr("strides", spatial, 1);
    SmallVector<int64_t> dilations = intsOr("dilations", spatial, 1);
    SmallVector<int64_t> pads = intsOr("pads", 2 * spatial, 0);
    if (static_cast<int64_t>(strides.size()) != spatial ||
        static_cast<int64_t>(dilations.size()) != spatial ||
        static_cast<int64_t>(pads.size()) != 2 * spatial)
      return error() << "strides, dilations and pads must cover " << spatial
                     << " spatial dims";
    // Every size below 2^31 keeps the output-size arithmetic inside 64 bits
    // (products of two, sums of three).
    for (ArrayRef<int64_t> sizes :
         {ArrayRef<int64_t>(kernel), ArrayRef<int64_t>(strides),
          ArrayRef<int64_t>(dilations), ArrayRef<int64_t>(pads),
          xShape.drop_front(2)})
      for (int64_t size : sizes)
        if (size > kMaxConvSize)
          return error() << "sizes, strides, dilations and pads must be at "
                            "most "
                         << kMaxConvSize << ", got " << size;
    const onnx::AttributeProto *autoPad = findAttribute(node, "auto_pad");
    std::string padMode = autoPad ? autoPad->s() : "NOTSET";

    // Output size and padding per spatial dim.
    SmallVector<int64_t> outShape, padded;
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t in = xShape[2 + d], extent = (kernel[d] - 1) * dilations[d] + 1;
      if (strides[d] < 1 || dilations[d] < 1)
        return error() << "strides and dilations must be positive";
      if (padMode == "SAME_UPPER" || padMode == "SAME_LOWER") {
        int64_t out = (in + strides[d] - 1) / strides[d];
        int64_t total =
            std::max<int64_t>((out - 1) * strides[d] + extent - in, 0);
        int64_t small = total / 2;
        pads[d] = padMode == "SAME_UPPER" ? small : total - small;
        pads[d + spatial] = total - pads[d];
      } else if (padMode == "VALID") {
        pads[d] = pads[d + spatial] = 0;
      } else if (padMode != "NOTSET") {
        return error() << "unknown auto_pad '" << padMode << "'";
      }
      if (pads[d] < 0 || pads[d + spatial] < 0)
        return error() << "negative pads are not supported";
      int64_t size = in + pads[d] + pads[d + spatial];
      if (size < extent)
        return error() << "kernel extent " << extent
                       << " exceeds the padded input " << size;
      padded.push_back(size);
      outShape.push_back((size - extent) / strides[d] + 1);
    }

    // Zero padding as concatenations with zero blocks, dim by dim.
    Value input = x;
    Type et = typeOf(input).getElementType();
    auto zeros = [&](int64_t d, int64_t count) -> Value {
      SymbolicShape shape = dimsOf(input);
      shape[2 + d] = DimExpr::constant(count);
      return ExpandOp::create(b, loc, symbolicTensorType(shape, et),
                              reshape(importer.scalar(loc, et, 0.0),
                                      SmallVector<int64_t>(rank, 1)));
    };
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t before = pads[d], after = pads[d + spatial];
      if (before == 0 && after == 0)
        continue;
      SmallVector<Value> parts;
      if (before > 0)
        parts.push_back(zeros(d, before));
      parts.push_back(input);
      if (after > 0)
        parts.push_back(zeros(d, after));
      SmallVector<RankedTensorType> types;
      for (Value p : parts)
        types.push_back(typeOf(p));
      auto type = inferConcatType(loc, types, 2 + d);
      if (failed(type))
        return failure();
      input = ConcatOp::create(b, loc, *type, parts, 2 + d);
    }

    // The index table: entry (tap, position) is the flat padded-spatial
    // offset that kernel tap `tap` reads for output position `position`.
    int64_t taps = 1, positions = 1, area = 1;
    for (int64_t d = 0; d < spatial; ++d) {
      taps *= kernel[d];
      positions *= outShape[d];
      area *= padded[d];
    }
    if (taps * positions > kMaxTableEntries)
      return error() << "needs a patch table of " << taps * positions
                     << " entries, more than Kiln builds ("
                     << kMaxTableEntries << ")";
    SmallVector<APInt> table;
    table.reserve(taps * positions);
    for (int64_t tap = 0; tap < taps; ++tap)
      for (int64_t pos = 0; pos < positions; ++pos) {
        int64_t offset = 0, t = tap, p = pos;
        SmallVector<int64_t> tapIndex(spatial), posIndex(spatial);
        for (int64_t d = spatial - 1; d >= 0; --d) {
          tapIndex[d] = t % kernel[d];
          t /= kernel[d];
          posIndex[d] = p % outShape[d];
          p /= outShape[d];
        }
        for (int64_t d = 0; d < spatial; ++d)
          offset = offset * padded[d] + posIndex[d] * strides[d] +
                   tapIndex[d] * dilations[d];
        table.push_back(APInt(64, offset));
      }
    auto tableType = RankedTensorType::get({taps, positions}, b.getI64Type());
    Value indices = ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(tableType, table)));

    auto sizes = [&](std::initializer_list<int64_t> dims) {
      SymbolicShape shape{batch};
      for (int64_t d : dims)
        shape.push_back(DimExpr::constant(d));
      return shape;
    };
    Value flat = reshape(input, sizes({channels, area}));
    auto patchType = inferGatherType(loc, typeOf(flat), tableType, 2);
    if (failed(patchType))
      return failure();
    Value patches = GatherOp::create(b, loc, *patchType, flat, indices, 2);
    // [N, C, taps, positions] -> [N, C * taps, positions], channel-major as
    // the weights are.
    int64_t perGroup = channels / group, filtersPerGroup = filters / group;
    Value columns = reshape(patches, sizes({channels * taps, positions}));
    Value weights = reshape(w, {filters, perGroup * taps});
    SmallVector<Value> outputs;
    for (int64_t g = 0; g < group; ++g) {
      Value cols = sliceChannels(columns, 1, g * perGroup * taps, perGroup * taps);
      Value wg = sliceChannels(weights, 0, g * filtersPerGroup, filtersPerGroup);
      auto type = inferMatmulType(loc, typeOf(wg), typeOf(cols), false, false);
      if (failed(type))
        return failure();
      outputs.push_back(MatmulOp::create(b, loc, *type, wg, cols, false, false));
    }
    Value y = outputs.front();
    if (group > 1) {
      SmallVector<RankedTensorType> types;
      for (Value o : outputs)
        types.push_back(typeOf(o));
      auto type = inferConcatType(loc, types, 1);
      if (failed(type))
        return failure();
      y = ConcatOp::create(b, loc, *type, outputs, 1);
    }
    if (bias) {
      if (typeOf(bias).getRank() != 1 || typeOf(bias).getDimSize(0) != filters)
        return error() << "bias must have one value per filter (" << filters
                       << ")";
      y = AddOp::create(b, loc, y, reshape(bias, {filters, 1}));
    }
    SymbolicShape resultShape = sizes({filters});
    for (int64_t size : outShape)
      resultShape.push_back(DimExpr::constant(size));
    return reshape(y, resultShape);
  }
};

} // namespace

ArrayRef<OpConversion> getConvConversions() {
  static const OpConversion table[] = {
      {"", "Conv", convertWith<ConvConverter, &ConvConverter::convert>},
      {"", "ConvInteger",
       convertWith<ConvConverter, &ConvConverter::convertInteger>},
      {"", "QLinearConv",
       convertWith<ConvConverter, &ConvConverter::convertQLinear>},
  };
  return table;
}

} // namespace kiln
