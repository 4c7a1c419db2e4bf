//===- MixedPrecisionAssign.cpp - kiln-mixed-precision type walk ----------===//
//
// The walk of kiln-mixed-precision: in program order, each op's decision is
// applied, its operands converted (constants at compile time) and its
// results retyped; graph inputs and outputs take the low type unless kept.
//
//===----------------------------------------------------------------------===//

#include "MixedPrecisionRules.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Transforms/Passes.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace kiln;

namespace kiln::mixed_precision {

Value Assigner::scalar(OpBuilder &b, Location loc, double value) {
  auto type = RankedTensorType::get({}, f32);
  return ConstantOp::create(b, loc,
                            cast<ElementsAttr>(DenseElementsAttr::get(
                                type, b.getFloatAttr(f32, value))));
}

Value Assigner::convertConstant(ConstantOp constant, FloatType type,
                                Conversion how) {
  auto key = std::make_tuple(constant.getOperation(), Type(type),
                             static_cast<int>(how));
  if (Value cached = convertedConstants.lookup(key))
    return cached;
  auto value = convertElements(constant.getValue(), type, how);
  if (failed(value))
    return {};
  OpBuilder b(constant->getBlock(), std::next(Block::iterator(constant)));
  Value converted = ConstantOp::create(b, constant.getLoc(), *value);
  convertedConstants[key] = converted;
  return converted;
}

Value Assigner::convert(Value value, Type type, Conversion how, Operation *user,
                        bool shared) {
  bool narrowing = type != f32;
  if (auto constant = value.getDefiningOp<ConstantOp>()) {
    Conversion constantHow =
        narrowing && how == Conversion::Round ? Conversion::Saturate : how;
    if (Value converted =
            convertConstant(constant, cast<FloatType>(type), constantHow))
      return converted;
  }
  auto key = std::make_tuple(value, type, static_cast<int>(how));
  if (shared)
    if (Value cached = sharedConversions.lookup(key))
      return cached;
  OpBuilder b(user);
  Location loc = user->getLoc();
  if (shared) {
    loc = value.getLoc();
    if (Operation *def = value.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&block);
  }
  Value x = value;
  if (how == Conversion::Clamp && narrowing) {
    double largest =
        APFloat::getLargest(cast<FloatType>(type).getFloatSemantics())
            .convertToDouble();
    x = MaxOp::create(b, loc, x.getType(), x, scalar(b, loc, -largest));
    x = MinOp::create(b, loc, x.getType(), x, scalar(b, loc, largest));
  }
  Value converted =
      CastOp::create(b, loc, withElementType(value.getType(), type), x);
  if (shared)
    sharedConversions[key] = converted;
  return converted;
}

void Assigner::apply(Operation *op, const Decision &decision) {
  if (!decision.type)
    return;
  // kiln-fuse cannot fuse a conversion into a matmul or an unknown op: one
  // conversion serves all of them. Other users get their own, which fuses
  // into their kernel.
  bool shared = decision.opaque || isa<MatmulOp>(op);
  Type type = decision.opaque ? f32 : decision.type;
  // An operand used twice (x * x) is converted once.
  llvm::DenseMap<std::pair<Value, int>, Value> converted;
  if (!isa<CastOp>(op))
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (!wasF32.contains(v) || elementTypeOf(v) == type)
        continue;
      Conversion how = Conversion::Round;
      if (isOn("mask") && isa<AttentionOp>(op) &&
          operand.getOperandNumber() == 3)
        how = Conversion::Clamp;
      Value &to = converted[{v, static_cast<int>(how)}];
      if (!to)
        to = convert(v, type, how, op, shared);
      operand.set(to);
    }
  bool retyped = false;
  if (!decision.opaque)
    for (OpResult result : op->getResults())
      if (wasF32.contains(result)) {
        result.setType(withElementType(result.getType(), type));
        retyped = true;
      }
  if (type == f32 && !decision.rule.empty() &&
      (retyped || llvm::any_of(op->getResults(),
                               [&](Value r) { return wasF32.contains(r); })))
    op->setAttr(kFp32RuleAttr,
                StringAttr::get(op->getContext(), decision.rule));
}

llvm::StringSet<> Assigner::run() {
  MLIRContext *context = func.getContext();
  for (BlockArgument arg : block.getArguments())
    if (elementTypeOf(arg) == f32)
      wasF32.insert(arg);
  for (Operation &op : block)
    for (Value result : op.getResults())
      if (isa<ShapedType>(result.getType()) && elementTypeOf(result) == f32)
        wasF32.insert(result);
  collectStatistics();
  collectMasks();
  collectAngles();
  collectQuantizers();
  collectIntegerProducts();

  auto keepIoRule = StringAttr::get(context, "keep-io-types");
  // A KV cache kept in place (kiln-cache-in-place) is one storage for its
  // input and its output: both keep the type its update writes.
  auto cacheRule = StringAttr::get(context, "kv-cache-in-place");
  auto isCache = [](BlockArgument arg) {
    return llvm::any_of(arg.getUsers(), [&](Operation *user) {
      auto update = dyn_cast<UpdateSliceOp>(user);
      return update && update.getDest() == arg;
    });
  };
  for (BlockArgument arg : block.getArguments()) {
    if (!wasF32.contains(arg))
      continue;
    if (keepIoTypes || isCache(arg))
      func.setArgAttr(arg.getArgNumber(), kFp32RuleAttr,
                      keepIoTypes ? keepIoRule : cacheRule);
    else
      arg.setType(withElementType(arg.getType(), low));
  }

  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (isa<ConstantOp>(op))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        if (!wasF32.contains(v))
          continue;
        bool cache = static_cast<bool>(v.getDefiningOp<UpdateSliceOp>());
        Type type = keepIoTypes || cache ? f32 : Type(low);
        if (elementTypeOf(v) != type)
          operand.set(convert(v, type, Conversion::Round, ret, true));
        if (keepIoTypes || cache)
          func.setResultAttr(operand.getOperandNumber(), kFp32RuleAttr,
                             keepIoTypes ? keepIoRule : cacheRule);
      }
      func.setType(FunctionType::get(context, block.getArgumentTypes(),
                                     ret->getOperandTypes()));
      continue;
    }
    apply(op, decide(op));
  }
  return matchedNodes;
}

} // namespace kiln::mixed_precision
