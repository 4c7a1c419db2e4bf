//===- MixedPrecision.cpp - fp16/bf16 compute with fp32 islands -----------===//
//
// One walk in program order decides the type each op computes in and
// converts its operands to it; ops before it are decided already, so an op
// sees the types its inputs arrive in. Constants are converted at compile
// time. Patterns then cancel exact round trips and move casts through data
// movement. Passes.td lists the rules.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/ConstantData/HostTensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace kiln {
#define GEN_PASS_DEF_KILNMIXEDPRECISIONPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// How a value is brought to a narrower float type.
enum class Conversion {
  /// As kiln.cast does: round to nearest even, overflow to infinity.
  Round,
  /// Finite values beyond the range saturate to its ends (weights).
  Saturate,
  /// Every value, infinities included, is clamped to the finite range: an
  /// attention mask of -inf or f32's lowest becomes the low type's lowest,
  /// so that a fully masked row stays finite.
  Clamp,
};

/// Constants above this many elements become dense_resource blobs.
constexpr int64_t kInlineLimit = 16;

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

RankedTensorType withElementType(Type type, Type elementType) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), elementType,
                               tensor.getEncoding());
}

/// True when every value of `from` is exactly a value of `to`, so that a
/// cast through `to` changes nothing.
bool isExactConversion(Type from, Type to) {
  if (from == to || from.isInteger(1))
    return true;
  auto f = dyn_cast<FloatType>(from), t = dyn_cast<FloatType>(to);
  return f && t &&
         APFloat::isRepresentableBy(f.getFloatSemantics(),
                                    t.getFloatSemantics());
}

/// `value` brought into the range of a type whose largest finite value is
/// `largest`, as `how` says.
double limitToRange(double value, double largest, Conversion how) {
  if (std::isnan(value) || how == Conversion::Round ||
      (how == Conversion::Saturate && std::isinf(value)))
    return value;
  return std::clamp(value, -largest, largest);
}

/// The value of a float constant converted to element type `to`: splats stay
/// splats, small constants stay inline, larger ones become dense_resource
/// blobs named after the original.
FailureOr<ElementsAttr> convertElements(ElementsAttr value, FloatType to,
                                        Conversion how) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!isa<FloatType>(type.getElementType()))
    return failure();
  auto newType = withElementType(type, to);
  double largest =
      APFloat::getLargest(to.getFloatSemantics()).convertToDouble();
  if (auto splat = dyn_cast<SplatElementsAttr>(value)) {
    APFloat v(limitToRange(splat.getSplatValue<APFloat>().convertToDouble(),
                           largest, how));
    bool losesInfo = false;
    v.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
    return cast<ElementsAttr>(DenseElementsAttr::get(newType, v));
  }
  auto result = HostTensor::allocate(to, type.getShape());
  if (failed(result))
    return failure();
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  bool wide = type.getElementType().isF32() || type.getElementType().isF64();
  if (ArrayRef<char> raw = wide ? storedBytesInPlace(value) : ArrayRef<char>();
      !raw.empty()) {
    // A large weight is read where it is (for external data, the mapped
    // model file) and its pages dropped afterwards: converting gigabytes of
    // weights must not keep them all resident.
    bool isF32 = type.getElementType().isF32();
    for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
      double v;
      if (isF32) {
        float f;
        std::memcpy(&f, raw.data() + 4 * i, 4);
        v = f;
      } else {
        std::memcpy(&v, raw.data() + 8 * i, 8);
      }
      result->setFromDouble(i, limitToRange(v, largest, how));
    }
    releaseMappedWeightPages(raw);
  } else {
    auto source = HostTensor::fromElementsAttr(value);
    if (failed(source))
      return failure();
    for (int64_t i = 0, e = source->numElements(); i < e; ++i)
      result->setFromDouble(
          i, limitToRange(source->getAsDouble(i), largest, how));
  }
  if (!resource && type.getNumElements() <= kInlineLimit)
    return cast<ElementsAttr>(result->toDenseElementsAttr());
  std::string name = resource ? resource.getRawHandle().getKey().str()
                              : std::string("constant");
  name += to.isF16() ? "_fp16" : to.isBF16() ? "_bf16" : "_converted";
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(result->bytes), alignof(uint64_t));
  return cast<ElementsAttr>(
      DenseResourceElementsAttr::get(newType, name, std::move(blob)));
}

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
  if (result == "gemm")
    return "matmul";
  return result;
}

bool isDataMovement(Operation *op) {
  return isa<ReshapeOp, TransposeOp, SliceOp, ExpandOp>(op);
}

/// True for ops whose result can leave the 16-bit range though their input
/// is in it: exponentials and squares.
bool expandsRange(Operation *op) {
  return isa<ExpOp, PowOp>(op) ||
         (isa<MulOp>(op) && op->getOperand(0) == op->getOperand(1));
}

/// True for `x * x` and `x ^ 2`.
bool isSquare(Operation *op) {
  if (isa<MulOp>(op))
    return op->getOperand(0) == op->getOperand(1);
  if (!isa<PowOp>(op))
    return false;
  auto exponent = op->getOperand(1).getDefiningOp<ConstantOp>();
  auto splat = exponent ? dyn_cast<SplatElementsAttr>(exponent.getValue())
                        : SplatElementsAttr();
  return splat && splat.getSplatValue<APFloat>().convertToDouble() == 2.0;
}

//===----------------------------------------------------------------------===//
// Cast cleanups
//===----------------------------------------------------------------------===//

/// cast(cast(x)) whose first step is exact is one cast from x, or x itself:
/// f16 -> f32 -> f16 is the identity.
struct CancelCasts : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<CastOp>();
    if (!inner || !isExactConversion(elementTypeOf(inner.getInput()),
                                     elementTypeOf(inner.getResult())))
      return rewriter.notifyMatchFailure(op, "no exact cast under it");
    Value source = inner.getInput();
    if (source.getType() == op.getType())
      rewriter.replaceOp(op, source);
    else
      rewriter.replaceOpWithNewOp<CastOp>(op, op.getType(), source);
    return success();
  }
};

/// A float cast of a float constant is the converted constant.
struct FoldCastOfConstant : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto constant = op.getInput().getDefiningOp<ConstantOp>();
    auto to = dyn_cast<FloatType>(op.getType().getElementType());
    if (!constant || !to)
      return rewriter.notifyMatchFailure(op, "not a float cast of a constant");
    auto value = convertElements(constant.getValue(), to, Conversion::Round);
    if (failed(value))
      return rewriter.notifyMatchFailure(op, "constant not convertible");
    rewriter.replaceOpWithNewOp<ConstantOp>(op, *value);
    return success();
  }
};

/// cast(move(x)) for a narrowing cast and a single-use reshape, transpose,
/// slice or expand: move(cast(x)). The data moves in the narrow type, and the
/// cast can join the kernel that produces x.
struct HoistNarrowingCast : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    Operation *move = op.getInput().getDefiningOp();
    auto from = dyn_cast<FloatType>(elementTypeOf(op.getInput()));
    auto to = dyn_cast<FloatType>(op.getType().getElementType());
    if (!move || !isDataMovement(move) || !move->hasOneUse() || !from || !to ||
        to.getWidth() >= from.getWidth())
      return rewriter.notifyMatchFailure(op, "not a narrowing cast of a move");
    Value source = move->getOperand(0);
    rewriter.setInsertionPoint(move);
    Value narrowed = CastOp::create(
        rewriter, op.getLoc(), withElementType(source.getType(), to), source);
    Operation *moved = rewriter.clone(*move);
    moved->setOperand(0, narrowed);
    moved->getResult(0).setType(
        withElementType(move->getResult(0).getType(), to));
    // It no longer computes in f32.
    moved->removeAttr(kFp32RuleAttr);
    rewriter.replaceOp(op, moved->getResults());
    rewriter.eraseOp(move);
    return success();
  }
};

/// move(cast(x)) for a single-use widening cast: cast(move(x)). The data
/// moves in the narrow type, and the cast meets its users (or a narrowing
/// cast it cancels with).
struct SinkWideningCast : RewritePattern {
  SinkWideningCast(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *move,
                                PatternRewriter &rewriter) const override {
    if (!isDataMovement(move))
      return failure();
    auto castOp = move->getOperand(0).getDefiningOp<CastOp>();
    if (!castOp || !castOp->hasOneUse())
      return rewriter.notifyMatchFailure(move, "no single-use cast under it");
    auto from = dyn_cast<FloatType>(elementTypeOf(castOp.getInput()));
    auto to = dyn_cast<FloatType>(castOp.getType().getElementType());
    if (!from || !to || to.getWidth() <= from.getWidth())
      return rewriter.notifyMatchFailure(move, "not a widening float cast");
    Operation *moved = rewriter.clone(*move);
    moved->setOperand(0, castOp.getInput());
    moved->getResult(0).setType(
        withElementType(move->getResult(0).getType(), from));
    if (!from.isF32())
      moved->removeAttr(kFp32RuleAttr);
    rewriter.replaceOpWithNewOp<CastOp>(move, move->getResult(0).getType(),
                                        moved->getResult(0));
    rewriter.eraseOp(castOp);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Type assignment
//===----------------------------------------------------------------------===//

/// What an op computes in.
struct Decision {
  /// The element type its f32 operands and results take; null leaves the op
  /// alone.
  Type type;
  /// Why it stays f32, when it does.
  std::string rule;
  /// The op is not one the pass knows: its operands are brought back to f32
  /// and its results stay as they are.
  bool opaque = false;
};

/// Assigns types over one function body.
class Assigner {
public:
  Assigner(func::FuncOp func, FloatType low, bool keepIoTypes,
           const llvm::StringSet<> &disabledIslands,
           const llvm::StringSet<> &keepOpTypes,
           const llvm::StringSet<> &keepNodeNames)
      : func(func), block(func.getBody().front()), low(low),
        f32(Float32Type::get(func.getContext())), keepIoTypes(keepIoTypes),
        disabledIslands(disabledIslands), keepOpTypes(keepOpTypes),
        keepNodeNames(keepNodeNames) {}

  /// Decides and converts every op; returns the node names that matched
  /// keep-node-names.
  llvm::StringSet<> run();

private:
  void collectStatistics();
  void collectMasks();
  void collectAngles();
  Decision decide(Operation *op);
  Type arrivalType(Operation *op);
  std::optional<std::string> overrideRule(Operation *op);
  void apply(Operation *op, const Decision &decision);
  Value convert(Value value, Type type, Conversion how, Operation *user,
                bool shared);
  Value convertConstant(ConstantOp constant, FloatType type, Conversion how);
  Value scalar(OpBuilder &b, Location loc, double value);
  /// Whether the island of `rule` is on.
  bool isOn(StringRef rule) const { return !disabledIslands.contains(rule); }

  func::FuncOp func;
  Block &block;
  FloatType low;
  Type f32;
  bool keepIoTypes;
  const llvm::StringSet<> &disabledIslands, &keepOpTypes, &keepNodeNames;
  llvm::StringSet<> matchedNodes;
  /// Values that were f32 before the pass: the ones it may retype.
  llvm::DenseSet<Value> wasF32;
  /// The islands and their rules, found before the walk.
  llvm::DenseMap<Operation *, StringRef> islandRules;
  /// Conversions shared by users that cannot fuse them.
  llvm::DenseMap<std::tuple<Value, Type, int>, Value> sharedConversions;
  llvm::DenseMap<std::tuple<Operation *, Type, int>, Value> convertedConstants;
};

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
    if ((!isElementwise(&op) && !isDataMovement(&op)) || op.use_empty() ||
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
    if (!angle && (isElementwise(&op) || isDataMovement(&op) ||
                   isa<ConcatOp, MatmulOp>(op)))
      angle = llvm::all_of(op.getUsers(), [&](Operation *user) {
        auto it = islandRules.find(user);
        return it != islandRules.end() && it->second == "angle";
      });
    if (angle)
      islandRules.try_emplace(&op, "angle");
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
  auto isOtherFloat = [&](Value v) {
    return isa<FloatType>(elementTypeOf(v)) && !wasF32.contains(v);
  };
  // A model's own 16-bit ops stay as they are; only a cast may take another
  // float type in.
  if (llvm::any_of(op->getResults(), isOtherFloat) ||
      (!isa<CastOp>(op) && llvm::any_of(op->getOperands(), isOtherFloat)))
    return {f32, "unconverted", /*opaque=*/true};
  if (std::optional<std::string> rule = overrideRule(op))
    return {f32, *rule};
  if (auto it = islandRules.find(op);
      isa<MatmulOp>(op) && it != islandRules.end() && isOn(it->second))
    return {f32, it->second.str()};
  if (isa<MatmulOp, AttentionOp>(op))
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
  if (auto norm = dyn_cast<LayerNormOp>(op)) {
    // Statistics are fp32 in the kernel whatever the input type.
    Value x = norm.getInput();
    if (!isa<BlockArgument>(x) && !x.getDefiningOp<ConstantOp>() &&
        elementTypeOf(x) == f32)
      return {f32, "propagated"};
    return {low, ""};
  }
  if (isElementwise(op) || isReduction(op) || isDataMovement(op) ||
      isa<ConcatOp, GatherOp, GatherElementsOp>(op)) {
    Type type = arrivalType(op);
    return {type, type == f32 ? "propagated" : ""};
  }
  return {f32, "unconverted", /*opaque=*/true};
}

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

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct KilnMixedPrecisionPass
    : public kiln::impl::KilnMixedPrecisionPassBase<KilnMixedPrecisionPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    Location loc = UnknownLoc::get(context);
    if (precision == "fp16" || precision == "f16")
      low = Float16Type::get(context);
    else if (precision == "bf16")
      low = BFloat16Type::get(context);
    else
      return emitError(loc, "kiln-mixed-precision: unknown precision '")
             << precision << "'; expected fp16 or bf16";
    // Op types by their normalized names, checked against the kiln ops.
    llvm::StringSet<> known;
    for (RegisteredOperationName name : context->getRegisteredOperations())
      if (name.getDialectNamespace() == KilnDialect::getDialectNamespace())
        known.insert(normalizeOpType(name.getStringRef()));
    for (const std::string &type : keepOpTypes) {
      std::string normalized = normalizeOpType(type);
      if (!known.contains(normalized))
        return emitError(loc, "kiln-mixed-precision: unknown op type '")
               << type
               << "' in keep-op-types (kilnc --keep-fp32-ops); expected a kiln "
                  "op name such "
                  "as matmul, attention, layer_norm or softmax";
      keepTypes.insert(normalized);
    }
    for (const std::string &name : keepNodeNames)
      keepNodes.insert(name);
    static constexpr llvm::StringLiteral rules[] = {
        "softmax", "norm-statistics", "reduction",
        "mask",    "from-integer",    "angle"};
    for (const std::string &rule : disableIslands) {
      if (rule == "all") {
        for (StringRef each : rules)
          disabled.insert(each);
      } else if (llvm::is_contained(rules, rule)) {
        disabled.insert(rule);
      } else {
        return emitError(loc, "kiln-mixed-precision: unknown island '")
               << rule
               << "' in disable-islands (kilnc --disable-fp32-islands); "
                  "expected "
                  "all, softmax, "
                  "norm-statistics, reduction, mask, from-integer or angle";
      }
    }
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Assigner assigner(func, low, keepIoTypes, disabled, keepTypes, keepNodes);
    llvm::StringSet<> matched = assigner.run();

    RewritePatternSet patterns(&getContext());
    populateKilnMixedPrecisionPatterns(patterns);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();

    // Weights that stay f32 for f32 users are listed too (scalars are not).
    func.walk([&](ConstantOp constant) {
      auto type = cast<RankedTensorType>(constant.getType());
      if (type.getElementType().isF32() && type.getNumElements() > 1)
        constant->setAttr(kFp32RuleAttr,
                          StringAttr::get(&getContext(), "fp32-user"));
    });
    for (const auto &name : keepNodes)
      if (!matched.contains(name.getKey()))
        emitWarning(func.getLoc(),
                    "kiln-mixed-precision: no op comes from ONNX node '")
            << name.getKey() << "' (keep-node-names, kilnc --keep-fp32-nodes)";
  }

  FloatType low;
  llvm::StringSet<> keepTypes, keepNodes, disabled;
};

} // namespace

void kiln::populateKilnMixedPrecisionPatterns(RewritePatternSet &patterns) {
  patterns.add<CancelCasts, FoldCastOfConstant, HoistNarrowingCast,
               SinkWideningCast>(patterns.getContext());
}
