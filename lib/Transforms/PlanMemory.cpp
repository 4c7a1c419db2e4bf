//===- PlanMemory.cpp - arena offsets for every materialized tensor -------===//
//
// Buffers are the results of ops that write memory (kernels and matmuls). A
// reshape is a view: it extends the life of the buffer it reads and gets no
// storage. Graph inputs and weights live outside the arena. A buffer that a
// graph output views is written straight into the caller's output. An
// elementwise kernel writes in place over an input of its own shape that dies
// at it and that it reads only at the written index (not through data
// movement fused into it): element i is read before element i is written, by
// the same thread. So does a GEMM kernel's residual sum over its dying
// residual.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/Analysis/ArenaPlanner.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/CheckedArithmetic.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPLANMEMORYPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Ops whose results occupy memory of their own.
bool materializes(Operation *op) { return isa<KernelOp, MatmulOp>(op); }

/// The value whose storage `value` shares, looking through reshapes.
Value storageRoot(Value value) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>())
    value = reshape.getInput();
  return value;
}

/// Whether `a` and `b` hold the same elements in the same flat order: one
/// element type and count (a reshape changes neither).
bool sameLayout(Value a, Value b) {
  auto x = cast<RankedTensorType>(a.getType());
  auto y = cast<RankedTensorType>(b.getType());
  std::optional<DimExpr> xCount = elementCount(x), yCount = elementCount(y);
  return x.getElementType() == y.getElementType() && xCount && yCount &&
         *xCount == *yCount;
}

/// Whether the body of elementwise `kernel` reads every input only at the
/// flat index of the element being written: elementwise ops and reshapes,
/// all with the result's element count. Data movement fused into the kernel
/// (a transpose, a slice) reads other elements.
bool readsAtWrittenIndex(KernelOp kernel) {
  std::optional<DimExpr> count =
      elementCount(cast<RankedTensorType>(kernel.getResult(0).getType()));
  return count &&
         llvm::all_of(kernel.getBody().front().without_terminator(),
                      [&](Operation &op) {
                        return (isElementwise(&op) || isa<ReshapeOp>(op)) &&
                               elementCount(cast<RankedTensorType>(
                                   op.getResult(0).getType())) == count;
                      });
}

/// The bytes live at the step where the most are live at the top of every
/// range (`buffers`' sizes are those), as a formula of the dims: the sum of
/// the live buffers' `formulas` there. Nothing on overflow.
std::optional<DimExpr> livePeakFormula(ArrayRef<BufferInterval> buffers,
                                       ArrayRef<DimExpr> formulas) {
  uint64_t peak = 0;
  std::optional<DimExpr> formula = DimExpr::constant(0);
  for (const BufferInterval &at : buffers) {
    // The live set only grows at a start: a peak is at some start.
    uint64_t live = 0;
    std::optional<DimExpr> sum = DimExpr::constant(0);
    for (auto [b, bytes] : llvm::zip(buffers, formulas))
      if (b.start <= at.start && at.start <= b.end) {
        live += b.bytes;
        sum = sum ? DimExpr::add(*sum, bytes) : std::nullopt;
      }
    if (live > peak) {
      peak = live;
      formula = sum;
    }
  }
  return formula;
}

struct KilnPlanMemoryPass
    : public kiln::impl::KilnPlanMemoryPassBase<KilnPlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      func.emitError("alignment must be a positive power of two, got ")
          << alignment.getValue();
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    DimRanges ranges = dimRangesOf(func);

    llvm::DenseMap<Operation *, int64_t> index;
    for (Operation &op : body)
      index[&op] = index.size();

    // A graph output whose storage is a buffer of this function gets written
    // in place; a buffer returned twice is written into the first output only
    // (the runtime copies it into the second).
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    llvm::DenseMap<Value, int64_t> outputOf;
    for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
      Value root = storageRoot(operand);
      if (root.getDefiningOp() && materializes(root.getDefiningOp()))
        outputOf.try_emplace(root, i);
    }

    // Live intervals: from the defining op to the last use of the value or
    // of any view of it.
    SmallVector<Value> values;
    SmallVector<BufferInterval> intervals;
    SmallVector<DimExpr> symbolicBytes;
    llvm::DenseMap<Value, size_t> slot;
    for (Operation &op : body) {
      if (!materializes(&op))
        continue;
      for (Value result : op.getResults()) {
        if (outputOf.count(result))
          continue;
        // Symbolic shapes at their largest: one plan serves every shape.
        auto type = cast<RankedTensorType>(result.getType());
        std::optional<int64_t> count = maxElementCount(type, ranges);
        if (!count) {
          op.emitError("cannot plan memory for ")
              << type
              << ": a symbolic dim without a range, or more than 2^63 "
                 "elements at the top of the ranges";
          return signalPassFailure();
        }
        std::optional<uint64_t> bytes = llvm::checkedMulUnsigned<uint64_t>(
            *count, (type.getElementTypeBitWidth() + 7) / 8);
        if (!bytes) {
          op.emitError("cannot plan memory for ") << type << ": too large";
          return signalPassFailure();
        }
        slot[result] = values.size();
        values.push_back(result);
        intervals.push_back({index[&op], index[&op], *bytes});
        std::optional<DimExpr> elements = elementCount(type);
        std::optional<DimExpr> formula =
            elements
                ? DimExpr::mul(*elements,
                               DimExpr::constant(
                                   (type.getElementTypeBitWidth() + 7) / 8))
                : std::nullopt;
        symbolicBytes.push_back(formula.value_or(DimExpr::constant(*bytes)));
      }
    }
    for (Operation &op : body)
      for (Value operand : op.getOperands()) {
        auto it = slot.find(storageRoot(operand));
        if (it != slot.end())
          intervals[it->second].end =
              std::max(intervals[it->second].end, index[&op]);
      }

    // In place: the result takes over the storage of a dying input, whose
    // interval then lasts as long as the result's.
    SmallVector<size_t> storageOf(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      storageOf[i] = i;
    // Whether result `i` may take over the storage of `input`, which `kernel`
    // reads at the written index only: the storage dies at the kernel and
    // has the result's size.
    auto takeOver = [&](size_t i, KernelOp kernel, Value input) {
      auto it = slot.find(storageRoot(input));
      if (it == slot.end())
        return false;
      size_t donor = storageOf[it->second];
      if (intervals[donor].end != index[kernel] ||
          intervals[donor].bytes != intervals[i].bytes)
        return false;
      intervals[donor].end = intervals[i].end;
      storageOf[i] = donor;
      return true;
    };
    for (auto [i, result] : llvm::enumerate(values)) {
      auto kernel = result.getDefiningOp<KernelOp>();
      // A GEMM kernel's residual sum over its residual: every kernel of the
      // step reads element (row, col) of the residual before it writes
      // that element of the sum (cuBLASLt's C and D; the norm kernel reads
      // a row before it writes the row), and reads the residual nowhere
      // else. The sum is the kernel's second result where it yields one,
      // else its result (the epilogue's end, or the norm over the sum); a
      // cache update's kernel yields its caches after the sum.
      if (kernel && kernel.getKind() == KernelKind::gemm) {
        int64_t residual = kernel.getEpilogueAttr().getResidual();
        Value sum = kernel.getEpilogueAttr().getCacheUpdate()
                        ? kernel.getResult(0)
                        : kernel.getResult(kernel.getNumResults() - 1);
        if (residual < 0 || result != sum)
          continue;
        // Read by the residual add alone: not also as the product's operand
        // (one kernel input when it is the same value), nor through another
        // input viewing its storage.
        Value input = kernel.getInputs()[residual];
        Value root = storageRoot(input);
        bool readElsewhere =
            !kernel.getBody().front().getArgument(residual).hasOneUse() ||
            llvm::any_of(llvm::enumerate(kernel.getInputs()), [&](auto other) {
              return static_cast<int64_t>(other.index()) != residual &&
                     storageRoot(other.value()) == root;
            });
        if (!readElsewhere && sameLayout(input, result))
          takeOver(i, kernel, input);
        continue;
      }
      if (!kernel || kernel.getKind() != KernelKind::elementwise)
        continue;
      for (Value input : kernel.getInputs()) {
        Value root = storageRoot(input);
        auto it = slot.find(root);
        if (it == slot.end() || !sameLayout(input, result))
          continue;
        // Every read of that storage must be at the written index.
        if (!readsAtWrittenIndex(kernel) ||
            llvm::any_of(kernel.getInputs(), [&](Value other) {
              return storageRoot(other) == root && !sameLayout(other, result);
            }))
          continue;
        if (takeOver(i, kernel, input))
          break;
      }
    }
    SmallVector<BufferInterval> owned;
    SmallVector<DimExpr> ownedFormulas;
    SmallVector<size_t> ownedIndex(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      if (storageOf[i] == i) {
        ownedIndex[i] = owned.size();
        owned.push_back(intervals[i]);
        ownedFormulas.push_back(symbolicBytes[i]);
      }
    ArenaPlan plan = planArena(owned, alignment);
    auto offsetOf = [&](Value result) {
      return plan.offsets[ownedIndex[storageOf[slot[result]]]];
    };

    Builder builder(func.getContext());
    for (Operation &op : body) {
      if (!materializes(&op))
        continue;
      SmallVector<int64_t> offsets;
      for (Value result : op.getResults()) {
        auto out = outputOf.find(result);
        offsets.push_back(out != outputOf.end()
                              ? -1 - out->second
                              : static_cast<int64_t>(offsetOf(result)));
      }
      op.setAttr(kOffsetsAttr, builder.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr(kArenaBytesAttr,
                  builder.getI64IntegerAttr(plan.arenaBytes));
    func->setAttr(kLiveLowerBoundAttr,
                  builder.getI64IntegerAttr(plan.liveLowerBound));
    if (!ranges.empty())
      if (std::optional<DimExpr> peak = livePeakFormula(owned, ownedFormulas))
        func->setAttr(kLivePeakAttr, builder.getStringAttr(peak->str()));
  }
};

} // namespace
