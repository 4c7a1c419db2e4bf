//===- ConvertCoreOps.cpp - math, norms, matmul, reshape, constants -------===//
//
// Each converter normalizes ONNX semantics into kiln ops: defaults made
// explicit, negative axes resolved, opset differences removed. Shapes come from
// the dialect's shape functions, which report errors at the node's location.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "NormalizationBuilder.h"
#include "OpRegistry.h"

#include "kiln/Importer/ONNX/TensorProto.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace kiln {

const onnx::AttributeProto *findAttribute(const onnx::NodeProto &node,
                                          StringRef name) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

namespace {

/// Converts one node of the ops in this file (math, norms, matmul).
struct CoreOpConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  template <typename OpTy>
  LogicalResult binary() {
    auto lhs = required(0), rhs = required(1);
    if (failed(lhs) || failed(rhs))
      return failure();
    Value r = *rhs;
    if (std::is_same_v<OpTy, PowOp> &&
        !isa<FloatType>(typeOf(*lhs).getElementType()))
      return integerPow(*lhs, r);
    // ONNX Pow lets the exponent have its own type; kiln.pow does not.
    if (std::is_same_v<OpTy, PowOp> &&
        typeOf(r).getElementType() != typeOf(*lhs).getElementType())
      r = CastOp::create(b, loc,
                         typeOf(r).clone(typeOf(*lhs).getElementType()), r);
    auto type = inferBroadcastType(loc, typeOf(*lhs), typeOf(r));
    if (failed(type))
      return failure();
    return output(OpTy::create(b, loc, *type, *lhs, r));
  }

  /// Pow with an integer base: computed in f64, exact for results below
  /// 2^53, then converted back to the base's type (truncating, as a
  /// negative exponent's fraction goes to 0).
  LogicalResult integerPow(Value base, Value exponent) {
    Type f64 = b.getF64Type();
    Value wideBase = CastOp::create(b, loc, typeOf(base).clone(f64), base);
    Value wideExponent =
        CastOp::create(b, loc, typeOf(exponent).clone(f64), exponent);
    auto type = inferBroadcastType(loc, typeOf(wideBase), typeOf(wideExponent));
    if (failed(type))
      return failure();
    Value power = PowOp::create(b, loc, *type, wideBase, wideExponent);
    return output(CastOp::create(
        b, loc, type->clone(typeOf(base).getElementType()), power));
  }

  template <typename OpTy>
  LogicalResult unary() {
    auto x = required(0);
    if (failed(x))
      return failure();
    return output(OpTy::create(b, loc, *x));
  }

  LogicalResult convertCast() {
    auto x = required(0);
    if (failed(x))
      return failure();
    int64_t to = intAttr("to", 0);
    Type elementType = convertONNXElementType(b.getContext(), to);
    if (!elementType)
      return error() << "unsupported element type " << onnxElementTypeName(to);
    return output(castAsONNX(*x, elementType, intAttr("saturate", 1)));
  }

  FailureOr<Value> matmul(Value lhs, Value rhs, bool transLhs, bool transRhs) {
    auto type = inferMatmulType(loc, typeOf(lhs), typeOf(rhs), transLhs,
                                transRhs);
    if (failed(type))
      return failure();
    return MatmulOp::create(b, loc, *type, lhs, rhs, transLhs, transRhs)
        .getResult();
  }

  LogicalResult convertMatmul() {
    auto lhs = required(0), rhs = required(1);
    if (failed(lhs) || failed(rhs))
      return failure();
    // numpy.matmul: a 1-D operand gains a unit dim for the product, which is
    // removed from the result again.
    auto lSizes = sizesOfValue(*lhs), rSizes = sizesOfValue(*rhs);
    if (failed(lSizes) || failed(rSizes))
      return failure();
    const SymbolicShape &ls = *lSizes, &rs = *rSizes;
    if (ls.empty() || rs.empty())
      return error() << "expected operands of rank >= 1";
    DimExpr one = DimExpr::constant(1);
    Value l = ls.size() == 1 ? reshape(*lhs, SymbolicShape{one, ls[0]}) : *lhs;
    Value r = rs.size() == 1 ? reshape(*rhs, SymbolicShape{rs[0], one}) : *rhs;
    auto product = matmul(l, r, false, false);
    if (failed(product))
      return failure();
    auto productSizes = sizesOfValue(*product);
    if (failed(productSizes))
      return failure();
    SymbolicShape shape = *productSizes;
    if (rs.size() == 1)
      shape.erase(shape.end() - 1);
    if (ls.size() == 1)
      shape.erase(shape.end() - (rs.size() == 1 ? 1 : 2));
    return output(reshape(*product, shape));
  }

  LogicalResult convertGemm() {
    auto a = required(0), bMat = required(1);
    if (failed(a) || failed(bMat))
      return failure();
    if (typeOf(*a).getRank() != 2 || typeOf(*bMat).getRank() != 2)
      return error() << "expected 2-D A and B";
    auto product = matmul(*a, *bMat, intAttr("transA", 0), intAttr("transB", 0));
    if (failed(product))
      return failure();
    Type elementType = typeOf(*product).getElementType();
    Value y = *product;
    float alpha = floatAttr("alpha", 1.0f), beta = floatAttr("beta", 1.0f);
    if (alpha != 1.0f)
      y = MulOp::create(b, loc, typeOf(y), y,
                        importer.scalar(loc, elementType, alpha));
    if (Value c = importer.input(node, 2)) {
      if (beta != 1.0f) {
        auto scaled = inferBroadcastType(loc, typeOf(c),
                                         RankedTensorType::get({}, elementType));
        if (failed(scaled))
          return failure();
        c = MulOp::create(b, loc, *scaled, c,
                          importer.scalar(loc, elementType, beta));
      }
      auto type = inferBroadcastType(loc, typeOf(y), typeOf(c));
      if (failed(type))
        return failure();
      if (*type != typeOf(y))
        return error() << "C does not broadcast to the result shape";
      y = AddOp::create(b, loc, *type, y, c);
    }
    return output(y);
  }

  LogicalResult convertLayerNorm() {
    auto x = required(0), scale = required(1);
    if (failed(x) || failed(scale))
      return failure();
    RankedTensorType xType = typeOf(*x);
    auto ax = axis(intAttr("axis", -1), xType.getRank());
    if (failed(ax))
      return failure();
    Value bias = importer.input(node, 2);
    float epsilon = floatAttr("epsilon", 1e-5f);
    auto type = inferLayerNormType(loc, xType, typeOf(*scale),
                                   bias ? typeOf(bias) : RankedTensorType(), *ax);
    if (failed(type))
      return failure();
    Value y = LayerNormOp::create(b, loc, *type, *x, *scale, bias,
                                  b.getI64IntegerAttr(*ax),
                                  b.getF32FloatAttr(epsilon));
    if (failed(output(y)))
      return failure();
    bool wantsStats = (node.output_size() > 1 && !node.output(1).empty()) ||
                      (node.output_size() > 2 && !node.output(2).empty());
    if (!wantsStats)
      return success();
    // The optional Mean and InvStdDev outputs, spelled out with kiln ops.
    auto stats = buildLayerNormStatistics(importer, loc, *x, *ax, epsilon);
    if (failed(stats))
      return failure();
    (void)output(stats->mean, 1);
    return output(stats->invStdDev, 2);
  }

  /// RMSNormalization (opset 23) as its ONNX function body spells it:
  /// statistics in `stash_type` (fp32 by default), the normalized value cast
  /// back to the input's type, then scaled. kiln-fuse makes the mean a
  /// reduction kernel with the square as its prologue.
  LogicalResult convertRMSNorm() {
    auto x = required(0), scale = required(1);
    if (failed(x) || failed(scale))
      return failure();
    RankedTensorType xType = typeOf(*x);
    int64_t rank = xType.getRank();
    auto ax = axis(intAttr("axis", -1), rank);
    if (failed(ax))
      return failure();
    Type stash = convertONNXElementType(b.getContext(), intAttr("stash_type", 1));
    if (!stash || !isa<FloatType>(stash) || isStorageOnlyType(stash))
      return error() << "stash_type must be a float type Kiln supports";
    float epsilon = floatAttr("epsilon", 1e-5f);
    Type et = xType.getElementType();
    RankedTensorType wide = xType.clone(stash);
    Value xs = et == stash ? *x : CastOp::create(b, loc, wide, *x).getResult();
    SmallVector<int64_t> axes;
    for (int64_t d = *ax; d < rank; ++d)
      axes.push_back(d);
    auto statType = inferReduceType(loc, wide, axes, true);
    if (failed(statType))
      return failure();
    Value squared = MulOp::create(b, loc, wide, xs, xs);
    Value meanSquare = ReduceMeanOp::create(b, loc, *statType, squared, axes, true);
    Value shifted = AddOp::create(b, loc, *statType, meanSquare,
                                  importer.scalar(loc, stash, epsilon));
    Value rms = SqrtOp::create(b, loc, shifted);
    Value normalized = DivOp::create(b, loc, wide, xs, rms);
    if (et != stash)
      normalized = CastOp::create(b, loc, xType, normalized);
    auto type = inferBroadcastType(loc, xType, typeOf(*scale));
    if (failed(type))
      return failure();
    return output(MulOp::create(b, loc, *type, normalized, *scale));
  }

  LogicalResult convertTranspose() {
    auto x = required(0);
    if (failed(x))
      return failure();
    int64_t rank = typeOf(*x).getRank();
    SmallVector<int64_t> perm;
    if (auto given = intsAttr("perm"))
      perm = *given;
    else
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
    auto type = inferTransposeType(loc, typeOf(*x), perm);
    if (failed(type))
      return failure();
    return output(TransposeOp::create(b, loc, *type, *x, perm));
  }

  LogicalResult convertReshape() {
    auto x = required(0), shapeInput = required(1);
    if (failed(x) || failed(shapeInput))
      return failure();
    auto requested = importer.symbolicInts(*shapeInput);
    if (failed(requested))
      return error() << "the shape input must be a constant (or computed "
                        "from shapes only)";
    RankedTensorType xType = typeOf(*x);
    auto in = sizesOfValue(*x);
    if (failed(in))
      return failure();
    bool allowZero = intAttr("allowzero", 0) != 0;
    SymbolicShape shape;
    int64_t inferred = -1;
    DimExpr known = DimExpr::constant(1);
    for (auto [i, dim] : llvm::enumerate(*requested)) {
      std::optional<int64_t> value = dim.getConstant();
      if (value == 0 && !allowZero) {
        if (static_cast<int64_t>(i) >= xType.getRank())
          return error() << "shape entry 0 at " << i << " has no input dim";
        dim = (*in)[i];
        value = dim.getConstant();
      }
      if (value == -1) {
        if (inferred >= 0)
          return error() << "more than one -1 in the shape";
        inferred = i;
        shape.push_back(DimExpr::constant(1));
        continue;
      }
      if (value && *value < 0)
        return error() << "invalid shape entry " << *value;
      auto next = DimExpr::mul(known, dim);
      if (!next)
        return error() << "shape too large";
      known = std::move(*next);
      shape.push_back(dim);
    }
    std::optional<DimExpr> total = productOf(*in);
    if (!total)
      return error() << "the element count overflows";
    if (inferred >= 0) {
      std::optional<DimExpr> rest = known.getConstant() == 0
                                        ? std::nullopt
                                        : DimExpr::divExact(*total, known);
      if (!rest)
        return error() << "cannot infer -1 for " << total->str()
                       << " elements from " << known.str();
      shape[inferred] = *rest;
    }
    auto type = symbolicTensorType(shape, xType.getElementType());
    if (failed(verifyReshapeTypes(loc, xType, type)))
      return failure();
    return output(reshape(*x, shape));
  }

  LogicalResult convertConstant() {
    if (const onnx::AttributeProto *value = findAttribute(node, "value")) {
      auto attr = importer.convertTensor(loc, value->t());
      if (failed(attr))
        return failure();
      return output(ConstantOp::create(b, loc, *attr));
    }
    Builder builder(b.getContext());
    Attribute attr;
    if (const onnx::AttributeProto *a = findAttribute(node, "value_float"))
      attr = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                    a->f());
    else if (const onnx::AttributeProto *a = findAttribute(node, "value_int"))
      attr = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                    static_cast<int64_t>(a->i()));
    else if (const onnx::AttributeProto *a = findAttribute(node, "value_floats"))
      attr = DenseElementsAttr::get(
          RankedTensorType::get({a->floats_size()}, b.getF32Type()),
          ArrayRef<float>(a->floats().data(), a->floats_size()));
    else if (const onnx::AttributeProto *a = findAttribute(node, "value_ints"))
      attr = DenseElementsAttr::get(
          RankedTensorType::get({a->ints_size()}, b.getI64Type()),
          ArrayRef<int64_t>(a->ints().data(), a->ints_size()));
    else
      return error() << "unsupported value attribute";
    return output(ConstantOp::create(b, loc, llvm::cast<ElementsAttr>(attr)));
  }

  LogicalResult convertIdentity() {
    auto x = required(0);
    if (failed(x))
      return failure();
    return output(*x);
  }
};

} // namespace

ArrayRef<OpConversion> getCoreConversions() {
  using C = CoreOpConverter;
  static const OpConversion table[] = {
      {"", "Add", convertWith<C, &C::binary<AddOp>>},
      {"", "Sub", convertWith<C, &C::binary<SubOp>>},
      {"", "Mul", convertWith<C, &C::binary<MulOp>>},
      {"", "Div", convertWith<C, &C::binary<DivOp>>},
      {"", "Pow", convertWith<C, &C::binary<PowOp>>},
      {"", "Neg", convertWith<C, &C::unary<NegOp>>},
      {"", "Sqrt", convertWith<C, &C::unary<SqrtOp>>},
      {"", "Erf", convertWith<C, &C::unary<ErfOp>>},
      {"", "Tanh", convertWith<C, &C::unary<TanhOp>>},
      {"", "Exp", convertWith<C, &C::unary<ExpOp>>},
      {"", "Relu", convertWith<C, &C::unary<ReluOp>>},
      {"", "Sigmoid", convertWith<C, &C::unary<SigmoidOp>>},
      {"", "Cast", convertWith<C, &C::convertCast>},
      {"", "MatMul", convertWith<C, &C::convertMatmul>},
      {"", "Gemm", convertWith<C, &C::convertGemm>},
      {"", "LayerNormalization", convertWith<C, &C::convertLayerNorm>},
      {"", "RMSNormalization", convertWith<C, &C::convertRMSNorm>},
      {"", "Transpose", convertWith<C, &C::convertTranspose>},
      {"", "Reshape", convertWith<C, &C::convertReshape>},
      {"", "Constant", convertWith<C, &C::convertConstant>},
      {"", "Identity", convertWith<C, &C::convertIdentity>},
  };
  return table;
}

} // namespace kiln
