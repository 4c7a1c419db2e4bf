//===- ConvertQuantized.cpp - quantized weights and Q/DQ pairs ------------===//
//
// com.microsoft MatMulNBits, what onnxruntime-genai's builder writes for
// int4 and int8 weights: B packed along K, low bits first, `[N, k_blocks,
// block_size * bits / 8]` bytes; per-block scales `[N, k_blocks]` (or
// flat); zero points packed like B (or of the scales' type, unpacked), by
// default the middle of the range (2^(bits - 1)).
//
// The weights stay packed in the artifact: MatMulNBits imports as a
// kiln.dequantize of B (which defines the unpacking and scaling) feeding
// `A . W^T` as a kiln.matmul. The kernels read through the dequantize; it
// is never folded to floats at compile time.
//
// QuantizeLinear and DequantizeLinear (8- and 16-bit integers, as
// onnxruntime's quantize_static writes them around every MatMul) are their
// float arithmetic, in fp32, with scales and zero points per tensor, per
// axis or repeated over blocks; except a DequantizeLinear of a constant
// 2-D weight of 4- or 8-bit integers (int4 as Olive and ModelOpt write
// them, int8 as quantize_static does), which becomes a kiln.dequantize of
// the weight packed again (PackedDequantize.cpp).
//
// DynamicQuantizeLinear and MatMulInteger (onnxruntime's quantize_dynamic,
// the int8 form it recommends for Transformers) are their arithmetic too;
// kiln-recompose turns the product and its scales back into a matmul of
// dequantized operands, the form the integer GEMM takes. QLinearMatMul is
// MatMulInteger's arithmetic requantized.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"
#include "PackedDequantize.h"

#include "kiln/Dialect/Kiln/QuantizedActivations.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"
#include "kiln/Importer/ONNX/TensorProto.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace kiln {

namespace {

struct QuantizedConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  LogicalResult convertMatMulNBits() {
    int64_t k = intAttr("K", 0), n = intAttr("N", 0);
    int64_t bits = intAttr("bits", 4), block = intAttr("block_size", 0);
    if (bits != 2 && bits != 4 && bits != 8)
      return error() << "bits must be 2, 4 or 8, got " << bits;
    if (block < 16 || !llvm::isPowerOf2_64(block))
      return error() << "block_size must be a power of two of at least 16, "
                        "got "
                     << block;
    if (k <= 0 || n <= 0 || k > (int64_t(1) << 31) || n > (int64_t(1) << 31))
      return error() << "K and N must be positive and below 2^31, got K = " << k
                     << ", N = " << n;
    if (importer.input(node, 4))
      return error() << "g_idx (act-order GPTQ) is not supported";
    auto a = required(0), packed = required(1), scales = required(2);
    if (failed(a) || failed(packed) || failed(scales))
      return failure();
    RankedTensorType aType = typeOf(*a);
    Type et = aType.getElementType();
    if (!isa<FloatType>(et) || et.isF64() || aType.getRank() < 1 ||
        aType.getDimSize(aType.getRank() - 1) != k)
      return error() << "A must be f32, f16 or bf16 with a last dim of K = "
                     << k << ", got " << shapeText(aType);
    int64_t blocks = (k + block - 1) / block;
    int64_t width = block * bits / 8;
    RankedTensorType bType = typeOf(*packed);
    if (!bType.getElementType().isUnsignedInteger(8) ||
        bType.getShape() != ArrayRef<int64_t>{n, blocks, width})
      return error() << "B must be uint8 [N, k_blocks, block_size * bits / "
                        "8] = ["
                     << n << ", " << blocks << ", " << width << "], got "
                     << shapeText(bType) << " of " << bType.getElementType();
    RankedTensorType sType = typeOf(*scales);
    if (sType.getElementType() != et || !sType.hasStaticShape() ||
        sType.getNumElements() != n * blocks)
      return error() << "scales must be " << n * blocks << " values ([N, "
                     << "k_blocks]) of A's type, got " << shapeText(sType)
                     << " of " << sType.getElementType();
    auto zero = zeroPoints(bits, n, blocks, et);
    if (failed(zero))
      return failure();
    Value w =
        DequantizeOp::create(b, loc, RankedTensorType::get({n, k}, et), *packed,
                             reshape(*scales, {n, blocks}), *zero, bits, block);
    auto type = inferMatmulType(loc, aType, typeOf(w), false, true);
    if (failed(type))
      return failure();
    Value y = MatmulOp::create(b, loc, *type, *a, w, false, true);
    if (Value bias = importer.input(node, 5)) {
      if (typeOf(bias).getElementType() != et ||
          typeOf(bias).getShape() != ArrayRef<int64_t>{n})
        return error() << "bias must be " << n << " values of A's type, got "
                       << shapeText(typeOf(bias));
      auto added = broadcast<AddOp>(y, bias);
      if (failed(added))
        return failure();
      y = *added;
    }
    return output(y);
  }

  /// MatMulNBits' zero points (input 3) in kiln.dequantize's form: none
  /// (the middle of the range), uint8 `[N, ceil(k_blocks * bits / 8)]`
  /// packed like B, or `[N, k_blocks]` of A's type.
  FailureOr<Value> zeroPoints(int64_t bits, int64_t n, int64_t blocks,
                              Type et) {
    Value given = importer.input(node, 3);
    if (!given)
      return Value();
    RankedTensorType type = typeOf(given);
    int64_t bytes = (blocks * bits + 7) / 8;
    if (type.hasStaticShape()) {
      if (type.getElementType() == et && type.getNumElements() == n * blocks)
        return reshape(given, {n, blocks});
      if (type.getElementType().isUnsignedInteger(8) &&
          type.getNumElements() == n * bytes)
        return reshape(given, {n, bytes});
    }
    return error() << "zero_points must be uint8 [N, ceil(k_blocks * bits "
                      "/ 8)] = ["
                   << n << ", " << bytes << "] or " << n * blocks
                   << " values of A's type, got " << shapeText(type) << " of "
                   << type.getElementType();
  }

  /// com.microsoft GatherBlockQuantized, a quantized embedding table
  /// (onnxruntime-genai's builder writes it for tied int4 embeddings over
  /// the LM head's packed weights): rows of a table quantized along K in
  /// blocks, gathered by index. The table is the kiln.dequantize
  /// MatMulNBits' weights import to (packed uint8, MatMulNBits' layout and
  /// default zero point) or a 4-bit table packed again (int4/uint4, zero
  /// point 0 by default), and the gather reads through it, so only the
  /// gathered rows are unpacked. An index out of range is an error, as in
  /// onnxruntime's CPU kernel (Kiln's gather: the reference reports it,
  /// kernels clamp).
  LogicalResult convertGatherBlockQuantized() {
    auto data = required(0), indices = required(1), scales = required(2);
    if (failed(data) || failed(indices) || failed(scales))
      return failure();
    int64_t bits = intAttr("bits", 4), block = intAttr("block_size", 128);
    if (bits != 4 && bits != 8)
      return error() << "bits must be 4 or 8, got " << bits;
    if (block < 16 || !llvm::isPowerOf2_64(block))
      return error() << "block_size must be a power of two of at least 16, "
                        "got "
                     << block;
    RankedTensorType dType = typeOf(*data), sType = typeOf(*scales);
    int64_t rank = dType.getRank();
    auto gatherAxis = axis(intAttr("gather_axis", 0), rank);
    if (failed(gatherAxis))
      return failure();
    auto quantizeAxis = axis(intAttr("quantize_axis", 1), rank);
    if (failed(quantizeAxis))
      return failure();
    if (rank != 2 || *gatherAxis != 0 || *quantizeAxis != 1 ||
        !dType.hasStaticShape())
      return error() << "only a table [rows, K] gathered by row "
                        "(gather_axis 0) and quantized along K "
                        "(quantize_axis 1) is supported, got "
                     << shapeText(dType) << " with gather_axis " << *gatherAxis
                     << " and quantize_axis " << *quantizeAxis;
    Type et = sType.getElementType();
    if (!isa<FloatType>(et) || et.isF64())
      return error() << "scales must be f32, f16 or bf16, got " << et;
    Value zero = importer.input(node, 3);
    int64_t rows = dType.getDimSize(0);
    Type dataType = dType.getElementType();
    Value table;
    if (dataType.isUnsignedInteger(8)) {
      int64_t k = dType.getDimSize(1) * 8 / bits;
      int64_t blocks = llvm::divideCeil(k, block);
      if (k % block != 0)
        return error() << "packed rows of " << dType.getDimSize(1)
                       << " bytes must hold whole blocks of " << block
                       << " values of " << bits << " bits";
      if (!sType.hasStaticShape() ||
          sType.getShape() != ArrayRef<int64_t>{rows, blocks})
        return error() << "scales must be [" << rows << ", " << blocks
                       << "], got " << shapeText(sType);
      int64_t zeroBytes = llvm::divideCeil(blocks * bits, 8);
      if (zero &&
          (!typeOf(zero).getElementType().isUnsignedInteger(8) ||
           typeOf(zero).getShape() != ArrayRef<int64_t>{rows, zeroBytes}))
        return error() << "zero_points must be uint8 [" << rows << ", "
                       << zeroBytes << "] packed like data, got "
                       << shapeText(typeOf(zero)) << " of "
                       << typeOf(zero).getElementType();
      table =
          DequantizeOp::create(b, loc, RankedTensorType::get({rows, k}, et),
                               reshape(*data, {rows, blocks, block * bits / 8}),
                               *scales, zero, bits, block);
    } else if (isFourBitType(dataType) && bits == 4) {
      int64_t blocks = llvm::divideCeil(dType.getDimSize(1), block);
      if (sType.getShape() != ArrayRef<int64_t>{rows, blocks})
        return error() << "scales must be [" << rows << ", " << blocks
                       << "], got " << shapeText(sType);
      if (zero && (typeOf(zero).getElementType() != dataType ||
                   typeOf(zero).getShape() != sType.getShape()))
        return error() << "zero_points must be " << shapeText(sType)
                       << " of the data's type " << dataType << ", got "
                       << shapeText(typeOf(zero)) << " of "
                       << typeOf(zero).getElementType();
      table = packDequantizeLinear(b, loc, *data, *scales, zero, 1, block);
      if (!table)
        return error() << "4-bit data needs constant scales and zero points";
    } else {
      return error() << "data must be uint8 (packed, with bits) or int4 or "
                        "uint4, got "
                     << dataType << " with bits " << bits;
    }
    auto type = inferGatherType(loc, typeOf(table), typeOf(*indices), 0);
    if (failed(type))
      return failure();
    return output(GatherOp::create(b, loc, *type, table, *indices, 0));
  }

  //===--------------------------------------------------------------------===//
  // QuantizeLinear and DequantizeLinear
  //===--------------------------------------------------------------------===//

  /// A scale or zero point of `x` viewed to broadcast to it: one value
  /// (per tensor), one per index of `axis` (per axis), or, with `block`,
  /// one per `block` consecutive indices of `axis`, each repeated over its
  /// block and cut to the axis's size.
  FailureOr<Value> perElement(Value param, RankedTensorType xType, int64_t axis,
                              int64_t block, StringRef what) {
    RankedTensorType type = typeOf(param);
    ArrayRef<int64_t> x = xType.getShape();
    int64_t rank = x.size();
    if (type.hasStaticShape() && type.getNumElements() == 1 && block == 0)
      return reshape(param, ArrayRef<int64_t>{});
    // Per axis and in blocks, the scales follow the input's dims.
    if (!xType.hasStaticShape())
      return error() << what << " per axis or in blocks needs an input of "
                     << "static shape, got " << shapeText(xType)
                     << "; pin its dims with " << importer.optionNames().dims
                     << " NAME=N";
    // Only per-axis and blocked forms read the axis.
    auto resolved = this->axis(axis, rank);
    if (failed(resolved))
      return failure();
    axis = *resolved;
    if (block == 0 && type.getRank() == 1 && type.getDimSize(0) == x[axis]) {
      SmallVector<int64_t> shape(rank, 1);
      shape[axis] = x[axis];
      return reshape(param, shape);
    }
    if (block > 0 && type.getRank() == rank) {
      int64_t blocks = (x[axis] + block - 1) / block;
      SmallVector<int64_t> expected(x);
      expected[axis] = blocks;
      if (type.getShape() == ArrayRef<int64_t>(expected)) {
        SmallVector<int64_t> split(expected), repeated(expected),
            joined(expected);
        split.insert(split.begin() + axis + 1, 1);
        repeated.insert(repeated.begin() + axis + 1, block);
        joined[axis] = blocks * block;
        Value each = ExpandOp::create(
            b, loc, RankedTensorType::get(repeated, type.getElementType()),
            reshape(param, split));
        return slice(reshape(each, joined), axis, 0, x[axis]);
      }
    }
    return error() << what << " of shape " << shapeText(type)
                   << " fits the input " << shapeText(xType)
                   << " neither per tensor, per axis " << axis
                   << (block > 0 ? " nor in blocks of " : "")
                   << (block > 0 ? std::to_string(block) : "");
  }

  /// The axis (as given: a per-tensor scale ignores it) and block size of
  /// a Q/DQ node over `xType`.
  LogicalResult quantAxis(RankedTensorType xType, int64_t &ax, int64_t &block) {
    ax = intAttr("axis", 1);
    block = intAttr("block_size", 0);
    if (block < 0)
      return error() << "block_size must not be negative, got " << block;
    if (intAttr("precision", 0) != 0)
      return error() << "the precision attribute is not supported";
    return success();
  }

  static bool isQuantizedType(Type t) {
    auto integer = dyn_cast<IntegerType>(t);
    return (integer && integer.getWidth() != 1 && integer.getWidth() <= 32) ||
           isFloat8(t);
  }

  static bool isFloat8(Type t) {
    return isa<Float8E4M3FNType, Float8E5M2Type>(t);
  }

  LogicalResult convertDequantizeLinear() {
    auto x = required(0), scale = required(1);
    if (failed(x) || failed(scale))
      return failure();
    RankedTensorType xType = typeOf(*x);
    Type et = typeOf(*scale).getElementType();
    int64_t ax = 0, block = 0;
    if (failed(quantAxis(xType, ax, block)))
      return failure();
    if (!isQuantizedType(xType.getElementType()) || !isa<FloatType>(et))
      return error() << "expected integer or float8 input and float scales, "
                        "got "
                     << xType.getElementType() << " and " << et;
    if (int64_t given = intAttr("output_dtype", 0);
        given != 0 && convertONNXElementType(b.getContext(), given) != et)
      return error() << "output_dtype other than the scale's type is not "
                        "supported";
    Value zero = importer.input(node, 2);
    if (zero && typeOf(zero).getElementType() != xType.getElementType())
      return error() << "x_zero_point must have the input's type "
                     << xType.getElementType() << ", got "
                     << typeOf(zero).getElementType();
    // A quantized weight stays packed.
    if (Value packed =
            packDequantizeLinear(b, loc, *x, *scale, zero, ax, block))
      return output(packed);
    Type f32 = b.getF32Type();
    auto s = perElement(*scale, xType, ax, block, "x_scale");
    if (failed(s))
      return failure();
    Value centred = castTo(*x, f32);
    if (zero) {
      auto z = perElement(zero, xType, ax, block, "x_zero_point");
      if (failed(z))
        return failure();
      // A constant zero point's float is a constant, not a kernel a run.
      auto diff =
          broadcast<SubOp>(centred, importer.foldConstant(castTo(*z, f32)));
      if (failed(diff))
        return failure();
      centred = *diff;
    }
    auto y = broadcast<MulOp>(centred, castTo(*s, f32));
    if (failed(y))
      return failure();
    return output(castTo(*y, et));
  }

  LogicalResult convertQuantizeLinear() {
    auto x = required(0), scale = required(1);
    if (failed(x) || failed(scale))
      return failure();
    RankedTensorType xType = typeOf(*x);
    int64_t ax = 0, block = 0;
    if (failed(quantAxis(xType, ax, block)))
      return failure();
    // The output type: the zero point's, else output_dtype's, else uint8.
    Value zero = importer.input(node, 2);
    Type out =
        zero ? typeOf(zero).getElementType() : b.getIntegerType(8, false);
    if (int64_t given = intAttr("output_dtype", 0)) {
      Type named = convertONNXElementType(b.getContext(), given);
      if (!named || (zero && named != out))
        return error() << "output_dtype " << onnxElementTypeName(given)
                       << " is unsupported or differs from the zero point's "
                          "type";
      out = named;
    }
    auto integer = dyn_cast<IntegerType>(out);
    if (!isa<FloatType>(xType.getElementType()) ||
        !((integer && isQuantizedType(out) && integer.getWidth() <= 16) ||
          isFloat8(out)))
      return error() << "expected float input and a 4-, 8- or 16-bit integer "
                        "or float8 output, got "
                     << xType.getElementType() << " and " << out;
    Type f32 = b.getF32Type();
    warnOnNonFiniteScale(*scale, "y_scale");
    auto s = perElement(*scale, xType, ax, block, "y_scale");
    if (failed(s))
      return failure();
    auto ratio = broadcast<DivOp>(castTo(*x, f32), castTo(*s, f32));
    if (failed(ratio))
      return failure();
    // float8: x / scale rounded to it (ties to even), saturated unless the
    // node says not; its zero point is 0 by definition and, as in
    // onnxruntime, not added.
    if (isFloat8(out))
      return output(castToFloat8(*ratio, out, intAttr("saturate", 1)));
    // Integers: round(x / scale) + zero, halves to even, saturated.
    Value z;
    if (zero) {
      auto perZero = perElement(zero, xType, ax, block, "y_zero_point");
      if (failed(perZero))
        return failure();
      z = importer.foldConstant(castTo(*perZero, f32));
    }
    auto q = roundToInteger(*ratio, z, integer);
    if (failed(q))
      return failure();
    return output(*q);
  }

  //===--------------------------------------------------------------------===//
  // Dynamic quantization: DynamicQuantizeLinear and MatMulInteger
  //===--------------------------------------------------------------------===//

  /// DynamicQuantizeLinear (what onnxruntime's quantize_dynamic writes
  /// before every quantized MatMul): x's range widened to hold 0, [low,
  /// high] = [min(min(x), 0), max(max(x), 0)], mapped onto uint8's: scale =
  /// (high - low) / 255, zero point = round(-low / scale) within [0, 255],
  /// and x quantized with them as QuantizeLinear does. An all-zero x has
  /// scale 1, as onnxruntime's CPU kernel gives (ONNX's reference divides
  /// by zero there). Both extremes come from one reduction (extremesOf).
  LogicalResult convertDynamicQuantizeLinear() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType xType = typeOf(*x);
    if (!xType.getElementType().isF32())
      return error() << "expected f32 input, got " << xType.getElementType();
    Type f32 = b.getF32Type();
    auto one = RankedTensorType::get({}, f32);
    Value zero = importer.scalar(loc, f32, 0.0);
    auto extremes = extremesOf(*x);
    if (failed(extremes))
      return failure();
    // high = max(max(x), 0) and -low = max(-min(x), 0), both at least 0:
    // the range is empty (high == low) exactly where their sum is 0.
    auto widened = broadcast<MaxOp>(*extremes, zero);
    if (failed(widened))
      return failure();
    Value high = reshape(slice(*widened, 0, 0, 1), ArrayRef<int64_t>{});
    Value negLow = reshape(slice(*widened, 0, 1, 1), ArrayRef<int64_t>{});
    Value range = AddOp::create(b, loc, high, negLow);
    Value empty =
        EqualOp::create(b, loc, one.clone(b.getI1Type()), range, zero);
    Value scale = WhereOp::create(
        b, loc, one, empty, importer.scalar(loc, f32, 1.0),
        DivOp::create(b, loc, range, importer.scalar(loc, f32, 255.0)));
    // -low / scale, rounded within [0, 255].
    Value lowest = DivOp::create(b, loc, negLow, scale);
    Value clamped = MinOp::create(b, loc, MaxOp::create(b, loc, lowest, zero),
                                  importer.scalar(loc, f32, 255.0));
    Value zeroPoint = RoundOp::create(b, loc, clamped);
    auto u8 = b.getIntegerType(8, /*isSigned=*/false);
    auto ratio = broadcast<DivOp>(*x, scale);
    if (failed(ratio))
      return failure();
    auto y = roundToInteger(*ratio, zeroPoint, u8);
    if (failed(y) || failed(output(*y, 0)) || failed(output(scale, 1)))
      return failure();
    return output(castTo(zeroPoint, u8), 2);
  }

  /// `[max(x), max(-x)]` over all of `x`: one reduction of x and -x
  /// stacked (its kernel reads x once a block for both). Two rows of every
  /// value: the CUDA target splits each over many blocks, the last of which
  /// finishes it (ReductionEmitter.cpp), so a large x is one launch too.
  /// Exact: the extremes and the negation do not round.
  FailureOr<Value> extremesOf(Value x) {
    RankedTensorType xType = typeOf(x);
    SmallVector<int64_t> unit{1};
    llvm::append_range(unit, xType.getShape());
    auto oneMore = xType.clone(unit);
    Value stacked[] = {
        ReshapeOp::create(b, loc, oneMore, x),
        ReshapeOp::create(b, loc, oneMore, NegOp::create(b, loc, x))};
    auto both = concat(stacked, 0);
    if (failed(both))
      return failure();
    Value v = *both;
    auto rest = llvm::to_vector(llvm::seq<int64_t>(1, typeOf(v).getRank()));
    if (rest.empty()) // x was one value
      return v;
    auto pair = RankedTensorType::get({2}, xType.getElementType());
    return ReduceMaxOp::create(b, loc, pair, v, rest, false).getResult();
  }

  /// MatMulInteger: `(A - a_zero_point) . (B - b_zero_point)` of 8-bit
  /// integers, as int32. Kiln computes it as the fp32 product of the
  /// differences, whose sums are exact while they stay within fp32's 24
  /// bits (K up to 258 always; past that, the value of an fp32 GEMM's sum)
  /// and whole numbers past it, so that the cast to int32 is exact.
  /// onnxruntime's quantize_dynamic casts the product back to float and
  /// scales it; kiln-recompose folds those scales into the operands, where
  /// the integer GEMM reads them. A constant 2-D B with a constant zero
  /// point per tensor or per column (quantize_dynamic's weights) stays
  /// packed: a kiln.dequantize with scales of 1.
  LogicalResult convertMatMulInteger() {
    auto a = required(0), bIn = required(1);
    if (failed(a) || failed(bIn))
      return failure();
    auto product = integerProduct(*a, importer.input(node, 2), *bIn,
                                  importer.input(node, 3));
    if (failed(product))
      return failure();
    return output(castTo(*product, b.getI32Type()));
  }

  /// QLinearMatMul (tf2onnx's quantized TFLite models, onnxruntime's
  /// QOperator format): MatMulInteger's product requantized,
  /// `saturate(round(P * (a_scale * b_scale / y_scale)) + y_zero_point)`,
  /// the multiplier computed in the scales' type as ONNX's reference
  /// computes it, the product in fp32. a's scale and zero point one value
  /// or one a row, b's one value or one a column, y's one value.
  LogicalResult convertQLinearMatMul() {
    auto inputs = requiredInputs(8);
    if (failed(inputs))
      return failure();
    ArrayRef<Value> in = *inputs;
    Value a = in[0], aScale = in[1], aZero = in[2], bIn = in[3], bScale = in[4],
          bZero = in[5], yScale = in[6], yZero = in[7];
    auto product = integerProduct(a, aZero, bIn, bZero);
    if (failed(product))
      return failure();
    Type st = typeOf(aScale).getElementType();
    if (!isa<FloatType>(st) || st.isF64() ||
        typeOf(bScale).getElementType() != st ||
        typeOf(yScale).getElementType() != st)
      return error() << "scales must be of one type, f32, f16 or bf16, got "
                     << st << ", " << typeOf(bScale).getElementType() << " and "
                     << typeOf(yScale).getElementType();
    auto out = dyn_cast<IntegerType>(typeOf(yZero).getElementType());
    // Checked here to keep QLinearMatMul's error, which names both.
    if (!out || out.getWidth() != 8 || !holdsOneValue(yZero) ||
        !holdsOneValue(yScale))
      return error() << "y_scale and y_zero_point must be one value each, "
                        "the zero point an 8-bit integer";
    auto sa = perRow(aScale, typeOf(a), "a_scale");
    auto sb = perColumn(bScale, typeOf(bIn), "b_scale");
    if (failed(sa) || failed(sb))
      return failure();
    auto scales = broadcast<MulOp>(*sa, *sb);
    if (failed(scales))
      return failure();
    Value multiplier =
        DivOp::create(b, loc, *scales, reshape(yScale, ArrayRef<int64_t>{}));
    // A constant (the QOperator format's scales are initializers), which
    // kiln-recompose folds into the weights' scales.
    auto requantized = broadcast<MulOp>(
        *product, importer.foldConstant(castTo(multiplier, b.getF32Type())));
    if (failed(requantized))
      return failure();
    return outputRequantized(*requantized, yZero);
  }

  /// QGemm (com.microsoft; onnxruntime's QOperator format for Gemm, a
  /// GPT-2's Conv1D layers): `(A - a_zero_point) . (B - b_zero_point)`
  /// (each transposed where transA, transB say) plus the int32 C, summed in
  /// int32, times `alpha * a_scale * b_scale`, then, where y_scale and
  /// y_zero_point are given, divided by y_scale and quantized with
  /// y_zero_point's type, else the float result. The multiplier (one value
  /// or one a column) is computed in fp32 in that order, as onnxruntime's
  /// kernel computes it. a's scale and zero point are one value each, b's
  /// one value or one a column.
  LogicalResult convertQGemm() {
    auto inputs = requiredInputs(6);
    if (failed(inputs))
      return failure();
    ArrayRef<Value> in = *inputs;
    Value a = in[0], aScale = in[1], aZero = in[2], bIn = in[3], bScale = in[4],
          bZero = in[5];
    Value c = importer.input(node, 6), yScale = importer.input(node, 7),
          yZero = importer.input(node, 8);
    if (typeOf(a).getRank() != 2 || typeOf(bIn).getRank() != 2)
      return error() << "expected 2-D A and B, got " << typeOf(a) << " and "
                     << typeOf(bIn);
    if (!yScale != !yZero)
      return error() << "y_scale and y_zero_point must be given together";
    for (Value scale : {aScale, bScale, yScale})
      if (scale && !typeOf(scale).getElementType().isF32())
        return error() << "scales must be f32, got " << typeOf(scale);
    if (!holdsOneValue(aScale) || !holdsOneValue(aZero))
      return error() << "a_scale and a_zero_point must be one value each";
    auto transposed = [&](Value x, StringRef attr) -> Value {
      if (!intAttr(attr, 0))
        return x;
      int64_t perm[] = {1, 0};
      auto type = inferTransposeType(loc, typeOf(x), perm);
      return importer.foldConstant(TransposeOp::create(b, loc, *type, x, perm));
    };
    a = transposed(a, "transA");
    bIn = transposed(bIn, "transB");
    int64_t n = typeOf(bIn).getDimSize(1);
    for (auto [param, name] :
         {std::pair{bScale, "b_scale"}, std::pair{bZero, "b_zero_point"}}) {
      RankedTensorType type = typeOf(param);
      if (!holdsOneValue(param) &&
          (type.getRank() != 1 || type.getDimSize(0) != n))
        return error() << name << " must be one value or one a column (" << n
                       << "), got " << type;
    }
    warnOnNonFiniteScale(aScale, "a_scale");
    warnOnNonFiniteScale(bScale, "b_scale");
    auto product = integerProduct(a, aZero, bIn, bZero);
    if (failed(product))
      return failure();
    Value sum = *product;
    if (c) {
      if (!typeOf(c).getElementType().isInteger(32))
        return error() << "C must be int32, got " << typeOf(c);
      auto total = broadcast<AddOp>(castTo(sum, b.getI32Type()), c);
      if (failed(total))
        return failure();
      if (typeOf(*total).getShape() != typeOf(sum).getShape())
        return error() << "C does not broadcast to the result shape";
      sum = castTo(*total, b.getF32Type());
    }
    Type f32 = b.getF32Type();
    Value multiplier = MulOp::create(
        b, loc, importer.scalar(loc, f32, floatAttr("alpha", 1.0f)),
        reshape(aScale, ArrayRef<int64_t>{}));
    Value viewedB =
        holdsOneValue(bScale) ? reshape(bScale, ArrayRef<int64_t>{}) : bScale;
    multiplier = MulOp::create(b, loc, typeOf(viewedB), multiplier, viewedB);
    if (yScale) {
      if (!holdsOneValue(yScale))
        return error() << "y_scale must be one value, got " << typeOf(yScale);
      warnOnNonFiniteScale(yScale, "y_scale");
      multiplier = DivOp::create(b, loc, multiplier,
                                 reshape(yScale, ArrayRef<int64_t>{}));
    }
    auto scaled = broadcast<MulOp>(sum, importer.foldConstant(multiplier));
    if (failed(scaled))
      return failure();
    if (!yZero)
      return output(*scaled);
    return outputRequantized(*scaled, yZero);
  }
};

} // namespace

ArrayRef<OpConversion> getQuantizedConversions() {
  using C = QuantizedConverter;
  static const OpConversion table[] = {
      {kMicrosoftDomain, "MatMulNBits", convertWith<C, &C::convertMatMulNBits>},
      {kMicrosoftDomain, "GatherBlockQuantized",
       convertWith<C, &C::convertGatherBlockQuantized>},
      {"", "DequantizeLinear", convertWith<C, &C::convertDequantizeLinear>},
      {"", "QuantizeLinear", convertWith<C, &C::convertQuantizeLinear>},
      {"", "DynamicQuantizeLinear",
       convertWith<C, &C::convertDynamicQuantizeLinear>},
      {"", "MatMulInteger", convertWith<C, &C::convertMatMulInteger>},
      {"", "QLinearMatMul", convertWith<C, &C::convertQLinearMatMul>},
      {kMicrosoftDomain, "QGemm", convertWith<C, &C::convertQGemm>},
  };
  return table;
}

} // namespace kiln
