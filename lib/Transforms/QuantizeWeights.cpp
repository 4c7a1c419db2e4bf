//===- QuantizeWeights.cpp - block-quantize linear weights at compile time ===//
//
// kiln-quantize-weights: each product of activations by a constant matrix
// (a linear layer's weights) becomes a product by the kiln.dequantize of
// the weights quantized here, in MatMulNBits' layout: K-row-major packed
// values per output column, blocks of `block-size` along K, one scale a
// block and the middle of the range as the zero point (symmetric
// round-to-nearest, as onnxruntime's default MatMulNBits quantizer and
// onnxruntime-genai's builder write them). From there the weights run as an
// imported quantized model's do: a GEMV over the packed bytes for decoding's
// few rows, unpacked once a run for many (docs/quantization.md).
//
// Float8 (E4M3FN) weights have one scale a column (per-channel, as ModelOpt
// writes FP8 weights), its largest magnitude over 448, and one block of the
// whole row padded to whole 16-byte chunks, which the packed GEMV reads.
//
// Each block's scale is its largest magnitude over the largest positive
// value (7 for int4, 127 for int8), rounded to the type the products
// compute in (compute-type, which the pipeline gives it: it runs before
// kiln-mixed-precision, reading the weights as the model stores them),
// and the weights are divided by that rounded scale, so that the stored
// scale is the one the values were rounded against. The error is measured
// as the kernels will see it: one random row (a seeded normal vector)
// through the weights and through their dequantized values, the relative
// L2 distance recorded on the dequantize (kiln.quantization_error) for the
// report.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/ConstantData/FloatBits.h"
#include "kiln/ConstantData/HostTensor.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "kiln/runtime/Float8.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Threading.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

namespace kiln {
#define GEN_PASS_DEF_KILNQUANTIZEWEIGHTSPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The weights' float type, asked once: per weight, MLIR's type queries
/// were a tenth of a 1B model's quantization.
enum class FloatKind { F32, F16, BF16 };

FloatKind kindOf(Type et) {
  return et.isF16()    ? FloatKind::F16
         : et.isBF16() ? FloatKind::BF16
                       : FloatKind::F32;
}

/// The floats of a weight, read where they are stored (a mapped model file
/// or a spilled conversion, whose pages are dropped afterwards) or, for a
/// small or splat constant, decoded whole.
class WeightValues {
public:
  static FailureOr<WeightValues> of(ElementsAttr value) {
    WeightValues w;
    w.kind = kindOf(cast<RankedTensorType>(value.getType()).getElementType());
    w.raw = storedBytesInPlace(value);
    if (w.raw.empty()) {
      auto tensor = HostTensor::fromElementsAttr(value);
      if (failed(tensor))
        return failure();
      w.decoded.resize(tensor->numElements());
      for (size_t i = 0; i < w.decoded.size(); ++i)
        w.decoded[i] = float(tensor->getAsDouble(i));
    }
    return w;
  }

  float at(int64_t i) const {
    if (raw.empty())
      return decoded[i];
    if (kind == FloatKind::F32) {
      float v;
      std::memcpy(&v, raw.data() + 4 * i, 4);
      return v;
    }
    uint16_t bits;
    std::memcpy(&bits, raw.data() + 2 * i, 2);
    return kind == FloatKind::BF16 ? floatOfBfloat16Bits(bits)
                                   : floatOfHalfBits(bits);
  }

  void release() const {
    if (!raw.empty())
      releaseMappedWeightPages(raw);
  }

private:
  FloatKind kind = FloatKind::F32;
  ArrayRef<char> raw;
  std::vector<float> decoded;
};

/// `value` rounded to the type `kind`, as a float.
float roundTo(FloatKind kind, float value) {
  if (kind == FloatKind::F16)
    return floatOfHalfBits(halfBitsOf(value));
  if (kind == FloatKind::BF16)
    return floatOfBfloat16Bits(bfloat16BitsOf(value));
  return value;
}

/// A constant of `type` holding `bytes` (a spilled blob named `name` past a
/// few elements).
Value constantOf(OpBuilder &b, Location loc, RankedTensorType type,
                 const std::vector<char> &bytes, StringRef name) {
  return ConstantOp::create(b, loc,
                            filledConstantValue(
                                type, bytes.size(),
                                [&](char *chunk, size_t offset, size_t size) {
                                  std::memcpy(chunk, bytes.data() + offset,
                                              size);
                                },
                                name));
}

struct KilnQuantizeWeightsPass
    : public kiln::impl::KilnQuantizeWeightsPassBase<KilnQuantizeWeightsPass> {
  using KilnQuantizeWeightsPassBase::KilnQuantizeWeightsPassBase;

  void runOnOperation() override {
    if (float8)
      bits = 8;
    if (bits != 4 && bits != 8) {
      // At the function's location: the options are wrong, not the IR.
      mlir::emitError(getOperation().getLoc(),
                      "kiln-quantize-weights: bits must be 4 or 8, got ")
          << int64_t(bits);
      return signalPassFailure();
    }
    if (blockSize < 16 || (blockSize & (blockSize - 1)) != 0) {
      mlir::emitError(getOperation().getLoc(),
                      "kiln-quantize-weights: block-size must be a power of "
                      "two of at least 16, got ")
          << int64_t(blockSize);
      return signalPassFailure();
    }
    if (computeType == "f16")
      computeKind = FloatKind::F16;
    else if (computeType == "bf16")
      computeKind = FloatKind::BF16;
    else if (!computeType.empty()) {
      mlir::emitError(getOperation().getLoc(),
                      "kiln-quantize-weights: compute-type must be f16 or "
                      "bf16, got ")
          << computeType;
      return signalPassFailure();
    }
    if (bits == 4 && blockSize < 32 && !float8)
      mlir::emitWarning(getOperation().getLoc(),
                        "kiln-quantize-weights: int4 blocks of ")
          << int64_t(blockSize)
          << " are less than the packed GEMV's 16-byte chunk (32 weights): "
             "decoding's products run on the packed GEMM, built for more "
             "rows, or unpack their weights where its rows are not whole "
             "16-byte chunks (block-size 32 or more reads them with the "
             "GEMV)";
    SmallVector<MatmulOp> products;
    getOperation().walk([&](MatmulOp matmul) {
      if (isWeightProduct(matmul))
        products.push_back(matmul);
    });
    for (auto [i, matmul] : llvm::enumerate(products))
      if (failed(quantize(matmul, i)))
        return signalPassFailure();
  }

  /// A product of activations by a constant matrix of floats with at least
  /// one whole block along K.
  bool isWeightProduct(MatmulOp matmul) {
    auto weights = matmul.getRhs().getDefiningOp<ConstantOp>();
    if (!weights || matmul.getTransposeLhs() ||
        isa<KernelOp>(matmul->getParentOp()))
      return false;
    auto type = cast<RankedTensorType>(matmul.getRhs().getType());
    Type et = type.getElementType();
    int64_t k = type.getDimSize(matmul.getTransposeRhs() ? 1 : 0);
    return type.getRank() == 2 && type.hasStaticShape() &&
           (et.isF32() || et.isF16() || et.isBF16()) &&
           k >= (float8 ? 1 : blockSize);
  }

  LogicalResult quantize(MatmulOp matmul, size_t index) {
    auto constant = matmul.getRhs().getDefiningOp<ConstantOp>();
    auto type = cast<RankedTensorType>(constant.getType());
    Type et = type.getElementType();
    // The type the scales and the dequantized weights are rounded to.
    FloatKind kind = computeKind.value_or(kindOf(et));
    bool transposed = matmul.getTransposeRhs();
    int64_t k = type.getDimSize(transposed ? 1 : 0);
    int64_t n = type.getDimSize(transposed ? 0 : 1);
    // A float8 column is one block, whole 16-byte chunks.
    int64_t block = float8 ? (k + 15) / 16 * 16 : int64_t(blockSize);
    int64_t blocks = (k + block - 1) / block;
    int64_t blockBytes = block * bits / 8;
    auto weights = WeightValues::of(constant.getValue());
    if (failed(weights))
      return matmul.emitOpError("has weights that cannot be read");
    // Element (kk, col) of the weights as K x N.
    auto weightAt = [&](int64_t kk, int64_t col) {
      return weights->at(transposed ? col * k + kk : kk * n + col);
    };
    float largest = float8 ? 448.0f : float((int64_t(1) << (bits - 1)) - 1);
    int64_t middle = int64_t(1) << (bits - 1);
    int64_t top = (int64_t(1) << bits) - 1;
    // Padding past K holds weights of 0: the middle, or float8's +0.
    uint8_t padding = float8 ? 0x00 : bits == 4 ? 0x88 : 0x80;
    std::vector<char> packed(size_t(n * blocks * blockBytes), char(padding));
    std::vector<float> scales(size_t(n * blocks));
    std::mt19937_64 rng(0x9e3779b97f4a7c15ull + index);
    std::normal_distribution<double> normal;
    std::vector<double> x(k), exact(n, 0.0), approximate(n, 0.0);
    for (double &v : x)
      v = normal(rng);
    // Float8 values decoded once, not per weight.
    float float8Value[256];
    for (int bits = 0; bits < 256; ++bits)
      float8Value[bits] = rt::floatOfFloat8Bits(uint8_t(bits), /*e5m2=*/false);
    // One block of one column: `values` are its `count` weights.
    auto quantizeBlock = [&](int64_t col, int64_t b, int64_t count,
                             const float *values) {
      float amax = 0.0f;
      for (int64_t j = 0; j < count; ++j)
        amax = std::max(amax, std::fabs(values[j]));
      float scale = roundTo(kind, amax / largest);
      scales[col * blocks + b] = scale;
      auto *out =
          reinterpret_cast<uint8_t *>(&packed[(col * blocks + b) * blockBytes]);
      for (int64_t j = 0; j < count; ++j) {
        if (float8) {
          // A weight past the largest finite multiple of the rounded
          // scale saturates; a NaN or infinite weight reads as 0, as
          // the integer forms read it.
          uint8_t q = scale != 0.0f && std::isfinite(values[j])
                          ? rt::float8BitsOf(values[j] / scale, /*e5m2=*/false)
                          : 0x00;
          out[j] = q;
          float dequantized = roundTo(kind, float8Value[q] * scale);
          exact[col] += x[b * block + j] * double(values[j]);
          approximate[col] += x[b * block + j] * double(dequantized);
          continue;
        }
        int64_t q = middle;
        if (scale != 0.0f && std::isfinite(values[j]))
          q = std::clamp<int64_t>(
              int64_t(std::nearbyint(values[j] / scale)) + middle, 0, top);
        if (bits == 8)
          out[j] = uint8_t(q);
        else
          out[j / 2] = uint8_t((out[j / 2] & (j % 2 ? 0x0f : 0xf0)) |
                               (q << (4 * (j % 2))));
        // The value the kernels compute: (q - middle) * scale in fp32,
        // rounded once to the element type.
        float dequantized = roundTo(kind, float(q - middle) * scale);
        exact[col] += x[b * block + j] * double(values[j]);
        approximate[col] += x[b * block + j] * double(dequantized);
      }
    };
    // Tiles of 64 columns, spread over the context's threads (each writes
    // only its own bytes, scales and sums). A tile's block is read in
    // storage order, K-major weights row by row and N-major ones column by
    // column, so that the reads of a mapped weight run sequentially.
    constexpr int64_t kTile = 64;
    mlir::parallelFor(
        matmul.getContext(), 0, (n + kTile - 1) / kTile, [&](size_t tile) {
          int64_t col0 = int64_t(tile) * kTile;
          int64_t cols = std::min(kTile, n - col0);
          std::vector<float> values(cols * block); // [column][j]
          for (int64_t b = 0; b < blocks; ++b) {
            int64_t count = std::min(block, k - b * block);
            for (int64_t outer = 0; outer < (transposed ? cols : count);
                 ++outer)
              for (int64_t inner = 0; inner < (transposed ? count : cols);
                   ++inner) {
                int64_t c = transposed ? outer : inner;
                int64_t j = transposed ? inner : outer;
                values[c * block + j] = weightAt(b * block + j, col0 + c);
              }
            for (int64_t c = 0; c < cols; ++c)
              quantizeBlock(col0 + c, b, count, &values[c * block]);
          }
        });
    weights->release();
    double num = 0, den = 0;
    for (int64_t col = 0; col < n; ++col) {
      num += (approximate[col] - exact[col]) * (approximate[col] - exact[col]);
      den += exact[col] * exact[col];
    }
    double error = den > 0 ? std::sqrt(num / den) : std::sqrt(num);

    OpBuilder b(matmul);
    Location loc = matmul.getLoc();
    std::string name = "quantized" + std::to_string(index);
    Type stored = float8 ? Type(b.getType<Float8E4M3FNType>())
                         : Type(b.getIntegerType(8, /*isSigned=*/false));
    Value packedValue = constantOf(
        b, loc, RankedTensorType::get({n, blocks, blockBytes}, stored),
        std::move(packed), name);
    auto scalesType = RankedTensorType::get({n, blocks}, et);
    auto scalesTensor = HostTensor::allocate(et, {n, blocks});
    if (failed(scalesTensor))
      return failure();
    for (size_t i = 0; i < scales.size(); ++i)
      scalesTensor->setFromDouble(i, scales[i]);
    Value scalesValue = constantOf(
        b, loc, scalesType, std::move(scalesTensor->bytes), name + "_scales");
    auto dequantize =
        DequantizeOp::create(b, loc, RankedTensorType::get({n, k}, et),
                             packedValue, scalesValue, Value(), bits, block);
    dequantize->setAttr("kiln.quantization_error", b.getF64FloatAttr(error));
    auto product =
        MatmulOp::create(b, loc, matmul.getType(), matmul.getLhs(),
                         dequantize.getResult(), false, /*transposeRhs=*/true);
    matmul.getResult().replaceAllUsesWith(product.getResult());
    matmul.erase();
    if (constant->use_empty())
      constant.erase();
    return success();
  }

  /// compute-type's kind, where it is given.
  std::optional<FloatKind> computeKind;
};

} // namespace
