//===- FoldConstants.cpp - constants while importing ----------------------===//
//
// The GraphImporter's constants: folding the shape subgraphs of a model as
// their nodes are imported (to constants, or to `kiln.sizes` of symbolic
// dims), reading constant and symbolic integers back for the converters,
// and making constants of the model's tensors and of scalars.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "kiln/Importer/ONNX/TensorProto.h"
#include "kiln/Interpreter/Interpreter.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace kiln {

/// Shape subgraphs compute small integer tensors from constants; folding
/// them as they are imported lets later nodes (Reshape, Expand, Slice) read
/// their shapes and axes. Larger float computations are left to the
/// compiler, and the size caps bound the work a hostile model can ask for.
static constexpr int64_t kMaxFoldElements = int64_t(1) << 16;
/// Float results fold only this small: shape arithmetic that exporters route
/// through floats (Shape -> Cast -> Min -> Cast), not weights or activations.
static constexpr int64_t kMaxFoldFloatElements = 64;
/// Larger float results fold when they are tables computed from constants:
/// elementwise math or a concat, no larger than its operands (a broadcast
/// would grow the weights), up to this many elements each and this many
/// bytes over the model (the folded values live as long as the compile).
/// A rotary embedding's cos and sin of a folded angle table are the case:
/// two kernels on every forward otherwise, with libdevice's slow path for
/// angles past 10^5 rad.
static constexpr int64_t kMaxFoldTableElements = int64_t(1) << 20;
static constexpr int64_t kMaxFoldTableBytes = int64_t(64) << 20;

/// True when `op` computes a table that may fold past kMaxFoldFloatElements:
/// elementwise math whose result is no larger than its largest operand, or a
/// concat (its result is its operands).
static bool isTableOp(Operation *op, int64_t elements) {
  if (isa<ConcatOp>(op))
    return true;
  if (!isElementwise(op))
    return false;
  int64_t largest = 0;
  for (Value operand : op->getOperands())
    if (auto type = dyn_cast<RankedTensorType>(operand.getType());
        type && type.hasStaticShape())
      largest = std::max(largest, type.getNumElements());
  return elements <= largest;
}

Value GraphImporter::foldConstant(Value value, int depth) {
  Operation *op = value.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!op || isa<ConstantOp, SizesOp>(op) || depth > 8 ||
      op->getNumResults() != 1 || op->getNumRegions() != 0 || !type ||
      !type.hasStaticShape())
    return value;
  int64_t elements = type.getNumElements();
  bool isInteger = isa<IntegerType>(type.getElementType());
  int64_t tableBytes = 0;
  if (!isInteger && elements > kMaxFoldFloatElements) {
    tableBytes = elements * ((type.getElementTypeBitWidth() + 7) / 8);
    if (elements > kMaxFoldTableElements || !isTableOp(op, elements) ||
        foldedTableBytes + tableBytes > kMaxFoldTableBytes)
      return value;
  }
  if (isInteger && elements > kMaxFoldElements)
    return value;
  SmallVector<HostTensor> operands;
  SmallVector<Value> foldedOperands;
  for (Value operand : op->getOperands()) {
    Value folded = foldConstant(operand, depth + 1);
    if (!folded.getDefiningOp<ConstantOp>() && !folded.getDefiningOp<SizesOp>())
      return value;
    foldedOperands.push_back(folded);
  }
  if (llvm::any_of(foldedOperands,
                   [](Value v) { return v.getDefiningOp<SizesOp>(); }))
    return foldSymbolicSizes(value, foldedOperands);
  for (Value folded : foldedOperands) {
    auto constant = folded.getDefiningOp<ConstantOp>();
    if (!constant)
      return value;
    auto tensor = HostTensor::fromElementsAttr(constant.getValue());
    if (failed(tensor))
      return value;
    operands.push_back(std::move(*tensor));
  }
  SmallVector<const HostTensor *> pointers;
  for (const HostTensor &t : operands)
    pointers.push_back(&t);
  // A failure here (a constant index out of range, say) is an error of the
  // model, already reported at the op; the import fails.
  auto result = evaluateOp(op, pointers);
  if (failed(result)) {
    foldFailed = true;
    return value;
  }
  foldedTableBytes += tableBytes;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Value constant = ConstantOp::create(
      b, op->getLoc(), cast<ElementsAttr>(result->toDenseElementsAttr()));
  value.replaceAllUsesWith(constant);
  if (op->use_empty())
    op->erase();
  return constant;
}

Value GraphImporter::foldSymbolicSizes(Value value, ArrayRef<Value> operands) {
  Operation *op = value.getDefiningOp();
  SmallVector<SymbolicTensor> symbolic;
  for (Value operand : operands) {
    std::optional<SymbolicTensor> t = symbolicValueOf(operand);
    if (!t)
      return value;
    symbolic.push_back(std::move(*t));
  }
  std::optional<SymbolicTensor> result =
      foldSymbolic(op, symbolic, dimRanges());
  if (!result)
    return value;
  // kiln.sizes holds integers: symbolic floats or bools stay ops, computed
  // at run time.
  Type elementType = cast<RankedTensorType>(value.getType()).getElementType();
  bool allConstant = llvm::all_of(
      result->values, [](const DimExpr &v) { return v.isConstant(); });
  if (!allConstant && !elementType.isInteger(64) && !elementType.isInteger(32))
    return value;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Value folded = materializeSizes(op->getLoc(), value.getType(), *result);
  value.replaceAllUsesWith(folded);
  if (op->use_empty())
    op->erase();
  return folded;
}

Value GraphImporter::materializeSizes(Location loc, Type type,
                                      const SymbolicTensor &sizes) {
  auto tensorType = cast<RankedTensorType>(type);
  // All constant: a plain constant of the type (floats and bools too).
  if (llvm::all_of(sizes.values,
                   [](const DimExpr &v) { return v.isConstant(); })) {
    FailureOr<HostTensor> tensor = HostTensor::allocate(
        tensorType.getElementType(), tensorType.getShape(), loc);
    if (succeeded(tensor) &&
        tensor->numElements() == static_cast<int64_t>(sizes.values.size())) {
      bool isFloat = isa<FloatType>(tensorType.getElementType());
      for (auto [i, v] : llvm::enumerate(sizes.values)) {
        int64_t value = *v.getConstant();
        if (isFloat)
          tensor->setFromDouble(i, static_cast<double>(value));
        else
          tensor->setFromInt(i, value);
      }
      return ConstantOp::create(
          b, loc, cast<ElementsAttr>(tensor->toDenseElementsAttr()));
    }
  }
  SmallVector<Attribute> texts;
  for (const DimExpr &size : sizes.values)
    texts.push_back(b.getStringAttr(size.str()));
  return SizesOp::create(b, loc, tensorType, b.getArrayAttr(texts));
}

FailureOr<SymbolicShape> GraphImporter::symbolicInts(Value value) {
  std::optional<SymbolicTensor> t = symbolicValueOf(value);
  if (!t || t->shape.size() > 1)
    return failure();
  return SymbolicShape(t->values.begin(), t->values.end());
}

FailureOr<SmallVector<int64_t>> GraphImporter::constantInts(Value value) {
  auto constant = value ? value.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant ||
      !isa<IntegerType>(cast<ShapedType>(constant.getType()).getElementType()))
    return failure();
  // Initializers above a few elements are dense_resource blobs.
  auto tensor = HostTensor::fromElementsAttr(constant.getValue());
  if (failed(tensor))
    return failure();
  SmallVector<int64_t> result;
  for (int64_t i = 0, e = tensor->numElements(); i < e; ++i)
    result.push_back(tensor->getAsInt(i));
  return result;
}

FailureOr<ElementsAttr>
GraphImporter::convertTensor(Location loc, const onnx::TensorProto &tensor) {
  return convertTensorProto(loc, tensor, /*inlineLimit=*/16, &externalData);
}

Value GraphImporter::scalar(Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr;
  if (isa<FloatType>(elementType))
    attr = DenseElementsAttr::get(type, b.getFloatAttr(elementType, value));
  else
    // Wrapped to the type's width, so that a negative value (a pad value,
    // say) is well defined for an unsigned type too.
    attr = DenseElementsAttr::get(
        type, b.getIntegerAttr(
                  elementType,
                  APInt(elementType.getIntOrFloatBitWidth(),
                        static_cast<uint64_t>(static_cast<int64_t>(value)),
                        /*isSigned=*/false, /*implicitTrunc=*/true)));
  return ConstantOp::create(b, loc, cast<ElementsAttr>(attr));
}

} // namespace kiln
