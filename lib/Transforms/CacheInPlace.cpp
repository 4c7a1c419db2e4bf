//===- CacheInPlace.cpp - KV caches appended in place ---------------------===//
//
// `present = concat(past, new)` costs a copy of the whole cache per decode
// step. With the cache in one buffer of its largest length, `past` is a view
// of its first rows and `present` the same buffer with the new rows written
// after them, so a step writes only what is new. The rewrite is on types:
// the argument and the result take the buffer's static length, and every
// reader of `present` reads a slice of its valid rows, which kernels read
// through (kiln-fuse) at a capacity stride rather than copy.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCACHEINPLACEPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// What one cache's rewrite needs: the concat that makes the returned
/// `present`, the argument `past` it appends to, and the buffer's length.
struct CacheAppend {
  ConcatOp concat;
  BlockArgument past;
  int64_t capacity;
};

/// Whether returned value `present` is a cache append this pass rewrites.
std::optional<CacheAppend> matchCacheAppend(Value present, Block &entry,
                                            const DimRanges &ranges) {
  auto concat = present.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() < 2)
    return std::nullopt;
  auto past = dyn_cast<BlockArgument>(concat.getInputs().front());
  // The argument is overwritten past its valid rows: nothing else may read
  // it.
  if (!past || past.getOwner() != &entry || !past.hasOneUse())
    return std::nullopt;
  int64_t axis = concat.getAxis();
  auto pastType = cast<RankedTensorType>(past.getType());
  auto presentType = cast<RankedTensorType>(present.getType());
  // A past of fixed length is no cache that grows step by step.
  if (!pastType.isDynamicDim(axis) || !presentType.isDynamicDim(axis))
    return std::nullopt;
  std::optional<SymbolicShape> sizes = symbolicShapeOf(presentType);
  if (!sizes)
    return std::nullopt;
  std::optional<int64_t> capacity = upperBound((*sizes)[axis], ranges);
  if (!capacity)
    return std::nullopt;
  return CacheAppend{concat, past, *capacity};
}

/// Rewrites one append: `past` becomes the cache buffer, `present` its
/// update, readers read a slice of the valid rows. Returns the update.
FailureOr<Value> rewriteCacheAppend(CacheAppend &append) {
  ConcatOp concat = append.concat;
  int64_t axis = concat.getAxis();
  auto pastType = cast<RankedTensorType>(append.past.getType());
  SymbolicShape sizes = *symbolicShapeOf(pastType);
  DimExpr offset = sizes[axis];
  sizes[axis] = DimExpr::constant(append.capacity);
  RankedTensorType cacheType =
      symbolicTensorType(sizes, pastType.getElementType());
  append.past.setType(cacheType);

  OpBuilder b(concat);
  Location loc = concat.getLoc();
  Value rows = concat.getInputs()[1];
  if (concat.getInputs().size() > 2) {
    // Several new parts: they are one update, concatenated.
    SmallVector<RankedTensorType> types;
    for (Value v : concat.getInputs().drop_front())
      types.push_back(cast<RankedTensorType>(v.getType()));
    FailureOr<RankedTensorType> type = inferConcatType(loc, types, axis);
    if (failed(type))
      return failure();
    rows =
        ConcatOp::create(b, loc, *type, concat.getInputs().drop_front(), axis);
  }
  Value cache = UpdateSliceOp::create(b, loc, cacheType, append.past, rows,
                                      /*starts=*/Value(), axis, offset.str());
  int64_t rank = cacheType.getRank();
  Value valid = SliceOp::create(b, loc, concat.getType(), cache,
                                SmallVector<int64_t>(rank, 0),
                                SmallVector<int64_t>(rank, 1));
  concat.getResult().replaceAllUsesWith(valid);
  concat.erase();
  return cache;
}

struct KilnCacheInPlacePass
    : public kiln::impl::KilnCacheInPlacePassBase<KilnCacheInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &entry = func.getBody().front();
    auto ret = dyn_cast<func::ReturnOp>(entry.getTerminator());
    if (!ret)
      return;
    DimRanges ranges = dimRangesOf(func);
    bool changed = false;
    for (OpOperand &returned : ret->getOpOperands()) {
      Value present = returned.get();
      // A value returned twice would be two outputs sharing one buffer.
      if (llvm::count(ret.getOperands(), present) != 1)
        continue;
      std::optional<CacheAppend> append =
          matchCacheAppend(present, entry, ranges);
      if (!append)
        continue;
      FailureOr<Value> cache = rewriteCacheAppend(*append);
      if (failed(cache))
        return signalPassFailure();
      returned.set(*cache);
      changed = true;
    }
    if (changed)
      func.setFunctionType(FunctionType::get(
          func.getContext(), entry.getArgumentTypes(), ret.getOperandTypes()));
    // Asked for in-place caches and given none, a user would believe the
    // decode steps write only their new rows: say so, unless the graph's
    // caches are in place already (GroupQueryAttention's shared buffer).
    bool inPlace = llvm::any_of(ret.getOperands(), [](Value v) {
      return v.getDefiningOp<UpdateSliceOp>() != nullptr;
    });
    if (!changed && !inPlace)
      emitWarning(func.getLoc())
          << "no KV cache to append in place: no output is a concat of a "
             "past input of symbolic length (with a range) and new rows; a "
             "GroupQueryAttention cache is shared in place when its past "
             "dim is pinned to the cache's length (its buffer form, as "
             "onnxruntime-genai runs it)";
  }
};

} // namespace
