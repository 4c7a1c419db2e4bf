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

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSwitch.h"

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

  /// `OpTy(lhs, rhs)` with numpy broadcasting; the shape function reports a
  /// mismatch at the node.
  template <typename OpTy>
  FailureOr<Value> broadcast(Value lhs, Value rhs) {
    auto type = inferBroadcastType(loc, typeOf(lhs), typeOf(rhs));
    if (failed(type))
      return failure();
    return OpTy::create(b, loc, *type, lhs, rhs).getResult();
  }

  /// A two-input op; with `variadic`, ONNX's N inputs (N >= 1) fold into a
  /// chain from the left.
  template <typename OpTy>
  LogicalResult binary(bool variadic = false) {
    int count = variadic ? node.input_size() : 2;
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
    return output(CastOp::create(
        b, loc, typeOf(*x).clone(typeOf(*like).getElementType()), *x));
  }

  LogicalResult convert() {
    StringRef op = node.op_type();
    if (op == "Reciprocal")
      return unary<ReciprocalOp>();
    if (op == "Log")
      return unary<LogOp>();
    if (op == "Abs")
      return unary<AbsOp>();
    if (op == "Floor")
      return unary<FloorOp>();
    if (op == "Ceil")
      return unary<CeilOp>();
    if (op == "Round")
      return unary<RoundOp>();
    if (op == "Sin")
      return unary<SinOp>();
    if (op == "Cos")
      return unary<CosOp>();
    if (op == "Softsign")
      return unary<SoftsignOp>();
    if (op == "Sign")
      return unary<SignOp>();
    if (op == "Not")
      return unary<NotOp>();
    if (op == "IsNaN")
      return unary<IsNaNOp>();
    if (op == "IsInf")
      return convertIsInf();
    if (op == "Gelu")
      return convertGelu();
    if (op == "Sum")
      return binary<AddOp>(/*variadic=*/true);
    if (op == "CastLike")
      return convertCastLike();
    if (op == "Max")
      return binary<MaxOp>(/*variadic=*/true);
    if (op == "Min")
      return binary<MinOp>(/*variadic=*/true);
    if (op == "Mod")
      return convertMod();
    if (op == "And")
      return binary<AndOp>();
    if (op == "Or")
      return binary<OrOp>();
    if (op == "Xor")
      return binary<XorOp>();
    if (op == "Equal")
      return compare<EqualOp>();
    if (op == "Less")
      return compare<LessOp>();
    if (op == "LessOrEqual")
      return compare<LessEqualOp>();
    if (op == "Greater")
      return compare<GreaterOp>();
    if (op == "GreaterOrEqual")
      return compare<GreaterEqualOp>();
    if (op == "Where")
      return convertWhere();
    if (op == "Clip")
      return convertClip();
    if (op == "Dropout")
      return convertDropout();
    return error() << "no converter";
  }
};

} // namespace

bool isSupportedElementwiseOp(StringRef opType) {
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Reciprocal", "Log", "Abs", "Floor", "Ceil", "Round", "Sin"},
             true)
      .Cases({"Cos", "Softsign", "Sign", "Not", "IsNaN", "IsInf", "Gelu"}, true)
      .Cases({"Max", "Min", "Mod", "And", "Or", "Xor", "Equal", "Less"}, true)
      .Cases({"LessOrEqual", "Greater", "GreaterOrEqual", "Where", "Clip"},
             true)
      .Cases({"Dropout", "Sum", "CastLike"}, true)
      .Default(false);
}

LogicalResult convertElementwiseNode(GraphImporter &importer,
                                     const onnx::NodeProto &node) {
  return ElementwiseConverter(importer, node).convert();
}

} // namespace kiln
