//===- MixedPrecisionRules.cpp - which ops stay f32 and why ---------------===//
//
// kiln-mixed-precision's rules: the fp32 islands found before the walk
// (statistics, attention masks, rotary angles), the keep-op-types and
// keep-node-names overrides, and the decision of what each op computes in.
//
//===----------------------------------------------------------------------===//

#include "MixedPrecisionRules.h"
#include "RecomposePatterns.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/QuantizedActivations.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace kiln;

namespace kiln::mixed_precision {

/// `name` in lower case without underscores or a `kiln.` prefix, so that
/// `LayerNorm`, `layer_norm` and `kiln.layer_norm` are one op type; ONNX's
/// names of ops that import as another kiln op name that op.
std::string normalizeOpType(StringRef name) {
  name.consume_front("kiln.");
  std::string result;
  for (char c : name)
    if (c != '_')
      result.push_back(llvm::toLower(c));
  if (result == "layernormalization")
    return "layernorm";
  if (result == "rmsnormalization" || result == "simplifiedlayernormalization")
    return "rmsnorm";
  if (result == "gemm")
    return "matmul";
  return result;
}

/// True for ops whose result can leave the 16-bit range though their input
/// is in it: exponentials and squares.
static bool expandsRange(Operation *op) {
  return isa<ExpOp, PowOp>(op) ||
         (isa<MulOp>(op) && op->getOperand(0) == op->getOperand(1));
}

/// True for `x * x` and `x ^ 2`.
static bool isSquare(Operation *op) {
  if (isa<MulOp>(op))
    return op->getOperand(0) == op->getOperand(1);
  if (!isa<PowOp>(op))
    return false;
  auto exponent = op->getOperand(1).getDefiningOp<ConstantOp>();
  auto splat = exponent ? dyn_cast<SplatElementsAttr>(exponent.getValue())
                        : SplatElementsAttr();
  return splat && splat.getSplatValue<APFloat>().convertToDouble() == 2.0;
}

/// Reductions that lose range or precision in a 16-bit type, and softmax,
/// each with the elementwise ops that feed it alone (the square of a
/// variance, the scale and mask of attention scores), as kiln-fuse would
/// put them in its prologue, and the exponentials and squares that feed it
/// even when they have other users (an exp shared by a sum and a division).
void Assigner::collectStatistics() {
  for (Operation &op : block) {
    bool isSoftmax = isa<SoftmaxOp, LogSoftmaxOp>(op);
    if ((!isSoftmax &&
         !isa<ReduceSumOp, ReduceMeanOp, ReduceProdOp, CumSumOp>(op)) ||
        !wasF32.contains(op.getResult(0)))
      continue;
    llvm::SetVector<Operation *> island;
    island.insert(&op);
    bool square = false, exponential = false;
    SmallVector<Value> worklist{op.getOperand(0)};
    while (!worklist.empty()) {
      Operation *producer = worklist.pop_back_val().getDefiningOp();
      if (!producer || island.contains(producer) || !isElementwise(producer) ||
          isa<CastOp>(producer) || !wasF32.contains(producer->getResult(0)))
        continue;
      bool onlyFeedsIsland =
          llvm::all_of(producer->getUsers(),
                       [&](Operation *user) { return island.contains(user); });
      if (!onlyFeedsIsland && !expandsRange(producer))
        continue;
      island.insert(producer);
      square |= isSquare(producer);
      exponential |= isa<ExpOp>(producer);
      if (onlyFeedsIsland)
        worklist.append(producer->operand_begin(), producer->operand_end());
    }
    // A LayerNorm mean: x - mean(x), the mean possibly reshaped first.
    Value input = op.getOperand(0);
    bool centers = false;
    if (isa<ReduceMeanOp>(op)) {
      SmallVector<Value> means{op.getResult(0)};
      while (!means.empty() && !centers) {
        for (Operation *user : means.pop_back_val().getUsers()) {
          if (isa<ReshapeOp>(user))
            means.push_back(user->getResult(0));
          centers |= isa<SubOp>(user) && user->getOperand(0) == input;
        }
      }
    }
    StringRef rule = isSoftmax || exponential ? "softmax"
                     : (square || centers) && isa<ReduceMeanOp, ReduceSumOp>(op)
                         ? "norm-statistics"
                         : "reduction";
    for (Operation *member : island)
      islandRules.try_emplace(member, rule);
  }
}

/// The ops that compute attention masks: every use of their results is a
/// kiln.attention mask or another such op. Users come after producers, so a
/// walk from the end sees every user first.
void Assigner::collectMasks() {
  for (Operation &op : llvm::reverse(block)) {
    if ((!isElementwise(&op) && !movesOneTensor(&op)) || op.use_empty() ||
        !wasF32.contains(op.getResult(0)))
      continue;
    bool allMask = llvm::all_of(op.getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (isa<AttentionOp>(user))
        return use.getOperandNumber() == 3;
      auto it = islandRules.find(user);
      return it != islandRules.end() && it->second == "mask";
    });
    if (allMask)
      islandRules.try_emplace(&op, "mask");
  }
}

/// The arguments of sin and cos and the ops that compute them: every use of
/// their results is a sin, a cos or another such op (a rotary embedding's
/// angle table, concatenated once for both). Angles are positions times
/// frequencies, thousands of radians: fp16's spacing at 2048 is 1 (bf16's
/// 16), which turns the table into noise at late positions, while sin and
/// cos of an f32 angle lose nothing in 16 bits afterwards. A matmul that
/// computes angles (positions times frequencies as an outer product) joins
/// too. Users come after producers, so a walk from the end sees every user
/// first.
void Assigner::collectAngles() {
  for (Operation &op : llvm::reverse(block)) {
    if (op.use_empty() || op.getNumResults() != 1 ||
        !wasF32.contains(op.getResult(0)))
      continue;
    bool angle = isa<SinOp, CosOp>(op);
    if (!angle && (isElementwise(&op) || movesOneTensor(&op) ||
                   isa<ConcatOp, MatmulOp>(op)))
      angle = llvm::all_of(op.getUsers(), [&](Operation *user) {
        auto it = islandRules.find(user);
        return it != islandRules.end() && it->second == "angle";
      });
    if (angle)
      islandRules.try_emplace(&op, "angle");
  }
}

/// The elementwise ops that compute what a cast to an integer or float8
/// type reads (QuantizeLinear's x / scale, its rounding, zero point and
/// clamp), each feeding nothing else: a 16-bit x / scale moves values
/// across the quantized grid's rounding boundaries, which a quantized
/// step (8-bit integers' 1/127 of the range, float8's 1/8 of a value)
/// turns into errors the size of the step. In f32 the quantized values are
/// the fp32 model's wherever x itself is (a graph input's, or the
/// 16-bit rounding of the op before).
void Assigner::collectQuantizers() {
  // One island for all the casts (products quantizing one x / scale share
  // it, each adding its own zero point). An op joins when every user has:
  // a predicate (QuantizeLinear's isnan) may join after the value it
  // tests, so the walk repeats until nothing joins.
  llvm::SetVector<Operation *> island;
  for (Operation &op : block) {
    auto cast = dyn_cast<CastOp>(op);
    if (!cast || !wasF32.contains(cast.getInput()))
      continue;
    Type to = elementTypeOf(cast.getResult());
    auto integer = dyn_cast<IntegerType>(to);
    if ((integer && integer.getWidth() > 1) ||
        isa<Float8E4M3FNType, Float8E5M2Type>(to))
      island.insert(&op);
  }
  auto joins = [&](Operation *op) {
    if (!isElementwise(op) || isa<CastOp>(op) || op->getNumResults() != 1)
      return false;
    Value result = op->getResult(0);
    return (wasF32.contains(result) || elementTypeOf(result).isInteger(1)) &&
           llvm::all_of(op->getUsers(),
                        [&](Operation *user) { return island.contains(user); });
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < island.size(); ++i)
      for (Value operand : island[i]->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (producer && !island.contains(producer) && joins(producer)) {
          island.insert(producer);
          grew = true;
        }
      }
  }
  for (Operation *member : island)
    if (!isa<CastOp>(member) && wasF32.contains(member->getResult(0)))
      islandRules.try_emplace(member, "quantize");
}

/// Whether `v` holds whole numbers of 8 bits or so, exactly: an 8-bit (or
/// narrower) integer cast to float, less a constant or another such value
/// (a zero point), through views; or weights dequantized with scales of 1
/// (MatMulInteger's and QLinearMatMul's packed B).
static bool holdsByteDifferences(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto view = dyn_cast_or_null<ReshapeOp>(def))
    return holdsByteDifferences(view.getInput());
  if (auto cast = dyn_cast_or_null<CastOp>(def)) {
    auto integer = dyn_cast<IntegerType>(elementTypeOf(cast.getInput()));
    return integer && integer.getWidth() > 1 && integer.getWidth() <= 8;
  }
  if (auto sub = dyn_cast_or_null<SubOp>(def))
    return holdsByteDifferences(sub.getLhs()) &&
           (sub.getRhs().getDefiningOp<ConstantOp>() ||
            holdsByteDifferences(sub.getRhs()));
  if (auto dequantize = dyn_cast_or_null<DequantizeOp>(def))
    return holdsOnlyOnes(dequantize.getScales());
  return false;
}

/// The `integer-product` island: a matmul of 8-bit differences
/// (holdsByteDifferences: MatMulInteger's, ConvInteger's and
/// QLinearMatMul's product), or one whose result goes only into casts to
/// integers, maybe through views: the fp32 sum of whole numbers, cast to
/// int32 or requantized. In 16 bits the sums lose whole numbers past 2048
/// and overflow past 65504 (an 8-bit patch embedding's sums reach hundreds
/// of thousands), so the product stays f32. Its 8-bit differences are
/// exact in any float type. Not a precision choice, so
/// --disable-fp32-islands has no name for it.
void Assigner::collectIntegerProducts() {
  std::function<bool(Value)> castToIntegers = [&](Value v) {
    return !v.use_empty() && llvm::all_of(v.getUsers(), [&](Operation *user) {
      if (auto view = dyn_cast<ReshapeOp>(user))
        return castToIntegers(view.getResult());
      auto cast = dyn_cast<CastOp>(user);
      auto integer =
          cast ? dyn_cast<IntegerType>(elementTypeOf(cast.getResult()))
               : IntegerType();
      return integer && integer.getWidth() > 1;
    });
  };
  // A product of 8-bit activations and weights, each dequantized, whose
  // result is only requantized (QLinearMatMul, which kiln-recompose gives
  // the integer GEMM's form): in f32 the integer GEMM scales its exact
  // sums by onnxruntime's multiplier, where a 16-bit multiplier and result
  // would move values across the requantized grid's rounding boundaries.
  // Through data movement (the slices of Q, K and V packed into one
  // product).
  std::function<bool(Value)> onlyRequantized = [&](Value v) {
    return !v.use_empty() && llvm::all_of(v.getUsers(), [&](Operation *user) {
      if (isDataMovement(user) && user->getNumResults() == 1)
        return onlyRequantized(user->getResult(0));
      return islandRules.lookup(user) == "quantize";
    });
  };
  auto requantizedBytes = [&](MatmulOp matmul) {
    auto weights = matmul.getRhs().getDefiningOp<DequantizeOp>();
    std::optional<DequantizedActivations> activations =
        dequantizedActivations(matmul.getLhs());
    return weights && activations && !weights.isFloat8() &&
           weights.getBits() == 8 &&
           isa<IntegerType>(elementTypeOf(activations->quantized)) &&
           onlyRequantized(matmul.getResult());
  };
  for (Operation &op : block) {
    auto matmul = dyn_cast<MatmulOp>(op);
    if (!matmul || !wasF32.contains(matmul.getResult()) ||
        !(castToIntegers(matmul.getResult()) ||
          (holdsByteDifferences(matmul.getLhs()) &&
           holdsByteDifferences(matmul.getRhs())) ||
          requantizedBytes(matmul)))
      continue;
    islandRules.try_emplace(matmul, "integer-product");
    // Its weights' scales (the multiplier, requantized) stay f32 too.
    if (requantizedBytes(matmul))
      islandRules.try_emplace(matmul.getRhs().getDefiningOp(),
                              "integer-product");
    SmallVector<Value> views{matmul.getResult()};
    while (!views.empty())
      for (Operation *user : views.pop_back_val().getUsers())
        if (auto view = dyn_cast<ReshapeOp>(user)) {
          islandRules.try_emplace(view, "integer-product");
          views.push_back(view.getResult());
        }
  }
}

/// f32 when an operand computed by an op before this one arrives in f32;
/// constants and graph inputs take the type their user computes in.
Type Assigner::arrivalType(Operation *op) {
  for (Value v : op->getOperands())
    if (wasF32.contains(v) && !isa<BlockArgument>(v) &&
        !v.getDefiningOp<ConstantOp>() && elementTypeOf(v) == f32)
      return f32;
  return low;
}

std::optional<std::string> Assigner::overrideRule(Operation *op) {
  std::string type = normalizeOpType(op->getName().getStringRef());
  if (keepOpTypes.contains(type))
    return ("keep-op-types=" + op->getName().stripDialect()).str();
  for (StringRef name : onnxNodeNames(op->getLoc()))
    if (keepNodeNames.contains(name)) {
      matchedNodes.insert(name);
      return ("keep-node-names=" + name).str();
    }
  return std::nullopt;
}

Decision Assigner::decide(Operation *op) {
  auto isMine = [&](Value v) { return wasF32.contains(v); };
  if (!llvm::any_of(op->getOperands(), isMine) &&
      !llvm::any_of(op->getResults(), isMine))
    return {};
  if (!isa_and_present<KilnDialect>(op->getDialect()) ||
      op->getNumRegions() != 0)
    return {f32, "unconverted", /*opaque=*/true};
  // float8 values are stored bytes, not a type the model computes in: a
  // dequantize of float8 weights converts as one of integers does.
  auto isOtherFloat = [&](Value v) {
    auto type = dyn_cast<FloatType>(elementTypeOf(v));
    return type && type.getWidth() > 8 && !wasF32.contains(v);
  };
  // A model's own 16-bit ops stay as they are; only a cast may take another
  // float type in.
  if (llvm::any_of(op->getResults(), isOtherFloat) ||
      (!isa<CastOp>(op) && llvm::any_of(op->getOperands(), isOtherFloat)))
    return {f32, "unconverted", /*opaque=*/true};
  if (std::optional<std::string> rule = overrideRule(op))
    return {f32, *rule};
  if (auto it = islandRules.find(op); isa<MatmulOp, DequantizeOp>(op) &&
                                      it != islandRules.end() &&
                                      isOn(it->second))
    return {f32, it->second.str()};
  // A dequantize computes in fp32 whatever its types: its scales (and float
  // zero points) convert with it, so that a 16-bit product reads its
  // weights straight from it (the packed GEMV, kiln-fuse).
  if (isa<MatmulOp, AttentionOp, DequantizeOp>(op))
    return {low, ""};
  if (auto cast = dyn_cast<CastOp>(op)) {
    // A cast reads what arrives; only its result type is decided.
    if (!wasF32.contains(cast.getResult()))
      return {};
    Type from = elementTypeOf(cast.getInput());
    if (isa<FloatType>(from) && !wasF32.contains(cast.getInput()))
      // The model's own widening of 16-bit values: its choice.
      return {f32, "explicit-cast"};
    if (isa<IntegerType>(from)) {
      if (auto it = islandRules.find(op);
          it != islandRules.end() && isOn(it->second))
        return {f32, it->second.str()};
      if (isOn("from-integer"))
        return {f32, "from-integer"};
    }
    return {low, ""};
  }
  if (auto it = islandRules.find(op);
      it != islandRules.end() && isOn(it->second))
    return {f32, it->second.str()};
  if (isRowNorm(op)) {
    // Statistics are fp32 in the kernel whatever the input type.
    Value x = op->getOperand(0);
    if (!isa<BlockArgument>(x) && !x.getDefiningOp<ConstantOp>() &&
        elementTypeOf(x) == f32)
      return {f32, "propagated"};
    return {low, ""};
  }
  if (isElementwise(op) || isReduction(op) || isDataMovement(op)) {
    Type type = arrivalType(op);
    return {type, type == f32 ? "propagated" : ""};
  }
  return {f32, "unconverted", /*opaque=*/true};
}

} // namespace kiln::mixed_precision
