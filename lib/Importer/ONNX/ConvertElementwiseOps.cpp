//===- ConvertElementwiseOps.cpp - elementwise math and comparisons -------===//
//
// Unary math, Max/Min/Mod/Sum, logic, comparisons, Where, Clip, Dropout and
// CastLike. ONNX's variadic Max, Min and Sum become chains of binary ops, Clip
// becomes a max then a min (so min > max gives max, as numpy.clip does), and
// Dropout in inference is its input plus, when asked for, an all-true mask.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <limits>

using namespace mlir;

namespace kiln {

namespace {

/// Converts one node of the ops in this file.
struct ElementwiseConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// An op whose result type is its operand's (or inferred from it).
  template <typename OpTy>
  LogicalResult unary() {
    auto x = required(0);
    if (failed(x))
      return failure();
    return output(OpTy::create(b, loc, *x));
  }

  /// A two-input op.
  template <typename OpTy>
  LogicalResult binary() {
    return chain<OpTy>(2);
  }

  /// ONNX's variadic form: N inputs (N >= 1) fold into a chain from the
  /// left.
  template <typename OpTy>
  LogicalResult variadic() {
    return chain<OpTy>(node.input_size());
  }

  /// The first `count` inputs combined by `OpTy` from the left.
  template <typename OpTy>
  LogicalResult chain(int count) {
    if (count < 1)
      return error() << "expected at least one input";
    auto result = required(0);
    if (failed(result))
      return failure();
    for (int i = 1; i < count; ++i) {
      auto next = required(i);
      if (failed(next))
        return failure();
      result = broadcast<OpTy>(*result, *next);
      if (failed(result))
        return failure();
    }
    return output(*result);
  }

  /// A comparison: an i1 result of the broadcast shape.
  template <typename OpTy>
  LogicalResult compare() {
    auto lhs = required(0), rhs = required(1);
    if (failed(lhs) || failed(rhs))
      return failure();
    auto type = inferCompareType(loc, typeOf(*lhs), typeOf(*rhs));
    if (failed(type))
      return failure();
    return output(OpTy::create(b, loc, *type, *lhs, *rhs));
  }

  LogicalResult convertMod() {
    auto lhs = required(0), rhs = required(1);
    if (failed(lhs) || failed(rhs))
      return failure();
    bool fmod = intAttr("fmod", 0) != 0;
    Type elementType = typeOf(*lhs).getElementType();
    if (!fmod && isa<FloatType>(elementType))
      return error() << "fmod = 0 is defined for integer inputs only, got "
                     << elementType;
    auto type = inferBroadcastType(loc, typeOf(*lhs), typeOf(*rhs));
    if (failed(type))
      return failure();
    return output(
        ModOp::create(b, loc, *type, *lhs, *rhs, b.getBoolAttr(fmod)));
  }

  LogicalResult convertWhere() {
    auto condition = required(0), lhs = required(1), rhs = required(2);
    if (failed(condition) || failed(lhs) || failed(rhs))
      return failure();
    auto type =
        inferWhereType(loc, typeOf(*condition), typeOf(*lhs), typeOf(*rhs));
    if (failed(type))
      return failure();
    return output(WhereOp::create(b, loc, *type, *condition, *lhs, *rhs));
  }

  LogicalResult convertGelu() {
    auto x = required(0);
    if (failed(x))
      return failure();
    const onnx::AttributeProto *attr = findAttribute(node, "approximate");
    std::string form = attr ? attr->s() : "none";
    std::optional<GeluApproximation> approximation =
        symbolizeGeluApproximation(form);
    if (!approximation)
      return error() << "unknown approximate '" << form
                     << "', expected 'none' or 'tanh'";
    return output(GeluOp::create(b, loc, typeOf(*x), *x, *approximation));
  }

  LogicalResult convertIsInf() {
    auto x = required(0);
    if (failed(x))
      return failure();
    return output(
        IsInfOp::create(b, loc, inferPredicateType(typeOf(*x)), *x,
                        b.getBoolAttr(intAttr("detect_positive", 1) != 0),
                        b.getBoolAttr(intAttr("detect_negative", 1) != 0)));
  }

  LogicalResult convertClip() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType xType = typeOf(*x);
    Type elementType = xType.getElementType();
    Value lower, upper;
    if (importer.opset() < 11) {
      // Clip-6: bounds are float attributes that default to the float range.
      if (!isa<FloatType>(elementType))
        return error() << "expected a float input before opset 11, got "
                       << elementType;
      lower = importer.scalar(
          loc, elementType,
          floatAttr("min", std::numeric_limits<float>::lowest()));
      upper =
          importer.scalar(loc, elementType,
                          floatAttr("max", std::numeric_limits<float>::max()));
    } else {
      // Optional inputs: constants, graph inputs or computed tensors alike
      // are operands of the max and min.
      lower = importer.input(node, 1);
      upper = importer.input(node, 2);
    }
    // Each bound must broadcast to the input without growing it.
    Value y = *x;
    if (lower) {
      auto bounded = broadcast<MaxOp>(y, lower);
      if (failed(bounded))
        return failure();
      if (typeOf(*bounded) != xType)
        return error() << "min of type " << lower.getType()
                       << " does not broadcast to the input type " << xType;
      y = *bounded;
    }
    if (upper) {
      auto bounded = broadcast<MinOp>(y, upper);
      if (failed(bounded))
        return failure();
      if (typeOf(*bounded) != xType)
        return error() << "max of type " << upper.getType()
                       << " does not broadcast to the input type " << xType;
      y = *bounded;
    }
    return output(y);
  }

  LogicalResult convertDropout() {
    auto x = required(0);
    if (failed(x))
      return failure();
    if (importer.opset() >= 12) {
      if (Value training = importer.input(node, 2)) {
        auto values = importer.constantInts(training);
        if (failed(values))
          return error() << "training_mode must be a constant";
        if (llvm::any_of(*values, [](int64_t v) { return v != 0; }))
          return error() << "training mode is not supported (Kiln compiles "
                            "for inference)";
      }
    }
    // The ratio (attribute or input) does not matter in inference.
    if (failed(output(*x)))
      return failure();
    if (node.output_size() < 2 || node.output(1).empty())
      return success();
    RankedTensorType xType = typeOf(*x);
    if (!xType.hasStaticShape())
      return error() << "the mask of " << xType << " needs a static shape";
    // The mask is bool from opset 10 on, the input's type before.
    Type maskElement =
        importer.opset() >= 10 ? Type(b.getI1Type()) : xType.getElementType();
    auto maskType = xType.clone(maskElement);
    Attribute one = isa<FloatType>(maskElement)
                        ? Attribute(b.getFloatAttr(maskElement, 1.0))
                        : Attribute(b.getIntegerAttr(maskElement, 1));
    auto mask = DenseElementsAttr::get(maskType, one);
    return output(ConstantOp::create(b, loc, cast<ElementsAttr>(mask)), 1);
  }

  LogicalResult convertCastLike() {
    auto x = required(0), like = required(1);
    if (failed(x) || failed(like))
      return failure();
    return output(
        castAsONNX(*x, typeOf(*like).getElementType(), intAttr("saturate", 1)));
  }
};

} // namespace

ArrayRef<OpConversion> getElementwiseConversions() {
  using C = ElementwiseConverter;
  static const OpConversion table[] = {
      {"", "Reciprocal", convertWith<C, &C::unary<ReciprocalOp>>},
      {"", "Log", convertWith<C, &C::unary<LogOp>>},
      {"", "Abs", convertWith<C, &C::unary<AbsOp>>},
      {"", "Floor", convertWith<C, &C::unary<FloorOp>>},
      {"", "Ceil", convertWith<C, &C::unary<CeilOp>>},
      {"", "Round", convertWith<C, &C::unary<RoundOp>>},
      {"", "Sin", convertWith<C, &C::unary<SinOp>>},
      {"", "Cos", convertWith<C, &C::unary<CosOp>>},
      {"", "Softsign", convertWith<C, &C::unary<SoftsignOp>>},
      {"", "Sign", convertWith<C, &C::unary<SignOp>>},
      {"", "Not", convertWith<C, &C::unary<NotOp>>},
      {"", "IsNaN", convertWith<C, &C::unary<IsNaNOp>>},
      {"", "IsInf", convertWith<C, &C::convertIsInf>},
      {"", "Gelu", convertWith<C, &C::convertGelu>},
      {"", "Sum", convertWith<C, &C::variadic<AddOp>>},
      {"", "CastLike", convertWith<C, &C::convertCastLike>},
      {"", "Max", convertWith<C, &C::variadic<MaxOp>>},
      {"", "Min", convertWith<C, &C::variadic<MinOp>>},
      {"", "Mod", convertWith<C, &C::convertMod>},
      {"", "And", convertWith<C, &C::binary<AndOp>>},
      {"", "Or", convertWith<C, &C::binary<OrOp>>},
      {"", "Xor", convertWith<C, &C::binary<XorOp>>},
      {"", "Equal", convertWith<C, &C::compare<EqualOp>>},
      {"", "Less", convertWith<C, &C::compare<LessOp>>},
      {"", "LessOrEqual", convertWith<C, &C::compare<LessEqualOp>>},
      {"", "Greater", convertWith<C, &C::compare<GreaterOp>>},
      {"", "GreaterOrEqual", convertWith<C, &C::compare<GreaterEqualOp>>},
      {"", "Where", convertWith<C, &C::convertWhere>},
      {"", "Clip", convertWith<C, &C::convertClip>},
      {"", "Dropout", convertWith<C, &C::convertDropout>},
  };
  return table;
}

} // namespace kiln
