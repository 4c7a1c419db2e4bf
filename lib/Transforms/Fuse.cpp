//===- Fuse.cpp - group ops into kiln.kernel regions ----------------------===//
//
// Groups are grown without duplicating work: a producer joins a group only when
// every use of its result is inside the group, so each op lands in exactly one
// kernel (a row norm's kernel may also yield the norm's input to later readers:
// still computed once, in that kernel). Elementwise ops join only where their
// users in the group read them at their own shape (a broadcast would compute
// them again for every element that reads them); data movement (transposes,
// slices, expands, gathers, concats) joins elementwise and attention groups at
// any shape: the generated code reads through it at a remapped index instead of
// writing it to memory; so does a reduction's prologue. A matmul takes the
// bias, residual add and activation after it into a GEMM kernel (cuBLASLt's
// epilogue), and the dequantize of its block-quantized weights (with 8-bit
// weights, also the dequantization of 8-bit activations; with others, the
// elementwise ops that compute its left operand and nothing else reads). A
// cache update is a kernel that writes its new rows, computed through the ops
// that feed them alone; two that write alike (a layer's key and value caches)
// are one kernel.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/QuantizedActivations.h"
#include "kiln/Dialect/Kiln/RowBias.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "kiln/KernelConfig/KernelConfig.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace kiln {
#define GEN_PASS_DEF_KILNFUSEPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Whether `a` and `b` are of one shape: equal dims, symbolic ones of
/// equal size (the `#kiln.dims` encoding), whatever their element types.
bool sameShape(Value a, Value b) {
  auto x = cast<RankedTensorType>(a.getType());
  auto y = cast<RankedTensorType>(b.getType());
  return x.getShape() == y.getShape() && x.getEncoding() == y.getEncoding();
}

/// Whether ops `a` and `b` compute at one shape (sameShape).
bool sameResultShape(Operation *a, Operation *b) {
  return sameShape(a->getResult(0), b->getResult(0));
}

/// Ops a kernel reads through an index remap: data movement (the ODS
/// trait); kiln.sizes, which reads no tensor: each element is a size of
/// the symbolic dims, computed where it is read; and kiln.dequantize, each
/// weight computed where it is read from its packed bits, scale and zero
/// point (the floats are never written out unless nothing else reads them).
bool movesData(Operation *op) {
  return isDataMovement(op) || isa<SizesOp, DequantizeOp>(op);
}

/// Whether `op` computes one value, cheaply enough that each kernel that
/// reads it may compute it again where it reads it: an elementwise op or
/// data movement with one element (a dynamic quantization's scale and zero
/// point, a slice of its extremes). Not a gather: each copy would be an
/// index check of its own (a site the run reports).
bool isCheapScalar(Operation *op) {
  if (op->getNumResults() != 1 ||
      !(isElementwise(op) || (isDataMovement(op) && !isa<GatherOp>(op))))
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

/// One fused group being built.
struct Group {
  KernelKind kind;
  /// The op whose result the kernel yields; the kernel is placed at it.
  Operation *root;
  llvm::SetVector<Operation *> members;
  /// A GEMM group's epilogue, as buildGemmGroup matched it: the adds of its
  /// bias and residual (null where none) and the activation. The adds, not
  /// the values they add: a value may be the result of another group,
  /// replaced by its kernel's before this group is outlined.
  Operation *gemmBiasAdd = nullptr, *gemmResidualAdd = nullptr;
  GemmActivation gemmActivation = GemmActivation::none;
  /// The layer_norm or rms_norm of the product's rows that ends the
  /// epilogue, or null.
  Operation *gemmNorm = nullptr;
  /// Whether an 8-bit GEMM's epilogue ends in a tail of elementwise ops
  /// (growQdqTail).
  bool gemmTail = false;
  /// Whether a GEMM of block-quantized weights computes its left operand
  /// (absorbOperandPrologue).
  bool gemmPrologue = false;
  /// Whether the GEMM's residual add and norm are f32 (wideRowNormOf), and
  /// their ops, which the kernel orders after all others, in this order (a
  /// cast of the residual may come before the product in the function, the
  /// sum's cast before the norm).
  bool gemmWideNorm = false;
  SmallVector<Operation *> gemmWideOps;
  /// A member whose value the kernel also yields, after the root's: a row
  /// norm's input that later ops read too (buildReductionGroup, and a GEMM
  /// group's norm), the earlier of two cache updates (pairCacheUpdates), or
  /// null.
  Operation *alsoYielded = nullptr;
  /// One-element values the kernel also yields, after those: a one-element
  /// kernel's, merged into an elementwise kernel that reads all it reads
  /// (mergeScalarKernels), which its first thread writes.
  SmallVector<Operation *, 2> sideScalars;
  /// Roots of elementwise kernels of the root's shape that read a value
  /// this one reads, merged into it (mergeSiblingKernels) and yielded
  /// after the root and alsoYielded.
  SmallVector<Operation *, 2> siblings;
  /// A GEMM group's cache updates (mergeCacheUpdatesIntoGemms), yielded
  /// after the root, the later first; and where the kernel is then placed
  /// (the later update), else null: at the root.
  SmallVector<Operation *, 2> cacheUpdates;
  Operation *placeAt = nullptr;
  /// The cache update's ops, which the kernel's body orders after the
  /// GEMM's (an update's producer may come before the product).
  llvm::SmallPtrSet<Operation *, 16> cacheUpdateOps;

  bool allUsesInside(Operation *op) const {
    return llvm::all_of(op->getUsers(), [&](Operation *user) {
      return members.contains(user);
    });
  }

  /// Absorbs producers of `seeds`' operands, transitively, that feed only
  /// this group: data movement at any shape, and elementwise ops that their
  /// elementwise users in the group read at their own shape.
  void absorbProducersThroughMoves(ArrayRef<Value> seeds,
                                   const llvm::DenseSet<Operation *> &taken) {
    SmallVector<Value> worklist(seeds.begin(), seeds.end());
    while (!worklist.empty()) {
      Operation *producer = worklist.pop_back_val().getDefiningOp();
      if (!producer || members.contains(producer) || taken.contains(producer) ||
          !(isElementwise(producer) || movesData(producer)) ||
          !allUsesInside(producer))
        continue;
      // A cheap scalar is computed again at every element that reads it
      // (duplicateCheapScalars): a few flops, for a kernel of its own.
      if (isElementwise(producer) && !isCheapScalar(producer) &&
          llvm::any_of(producer->getUsers(), [&](Operation *user) {
            return isElementwise(user) && !sameResultShape(user, producer);
          }))
        continue;
      members.insert(producer);
      worklist.append(producer->operand_begin(), producer->operand_end());
    }
  }
};

/// Whether `op` comes after `anchor` in `anchor`'s block.
bool comesAfter(Operation *op, Operation *anchor) {
  return op->getBlock() == anchor->getBlock() && anchor->isBeforeInBlock(op);
}

/// What a row norm's kernel also writes for later readers, when the
/// elementwise op that computes the norm's input has readers past the norm:
/// that op, or, where its only other reader is a cast (onnxruntime's
/// SkipSimplifiedLayerNorm: an fp32 sum whose 16-bit copy is the next
/// layer's residual), that cast, so that the narrower copy is written. The
/// kernel computes the sum anyway, in its first pass over the row; written
/// there, it needs no kernel of its own, and the norm does not read it
/// back. What the kernel writes must be read only after `root`, where the
/// kernel is placed.
Operation *sharedNormInput(Operation *norm, Operation *root,
                           const llvm::DenseSet<Operation *> &taken) {
  Operation *input = norm->getOperand(0).getDefiningOp();
  if (!isRowNorm(norm) || !input || !isElementwise(input) ||
      taken.contains(input) || input->getBlock() != norm->getBlock() ||
      input->getResult(0).hasOneUse())
    return nullptr;
  auto afterRoot = [&](Operation *op) { return comesAfter(op, root); };
  SmallVector<Operation *> others;
  for (Operation *user : input->getUsers())
    if (user != norm)
      others.push_back(user);
  Operation *cast = others.size() == 1 ? others.front() : nullptr;
  if (isa_and_nonnull<CastOp>(cast) && !taken.contains(cast) &&
      cast->getBlock() == root->getBlock() &&
      llvm::all_of(cast->getUsers(), afterRoot))
    return cast;
  return llvm::all_of(others, afterRoot) ? input : nullptr;
}

/// Whether no op outside `ops` reads a value of `chain` other than `end`'s
/// result: where a kernel's epilogue or tail may end.
bool onlyReadWithin(const llvm::SmallPtrSetImpl<Value> &chain,
                    ArrayRef<Operation *> ops, Operation *end) {
  return llvm::all_of(chain, [&](Value v) {
    return v == end->getResult(0) ||
           llvm::all_of(v.getUsers(), [&](Operation *user) {
             return llvm::is_contained(ops, user);
           });
  });
}

/// How many ops past a reduction buildReductionGroup looks for the readers
/// of its epilogue: a QuantizeLinear after a LayerNorm is some 8.
constexpr unsigned kEpilogueWindow = 128;

/// Builds a reduction group: the reduction, its elementwise epilogue, then
/// its prologue: the elementwise ops and data movement (embedding gathers
/// before a LayerNorm) that feed its input alone, and the casts and data
/// movement that feed a norm's scale and shift alone (a 16-bit weight
/// widened for an fp32 norm). A norm's input that later ops read too, or
/// its cast, joins as a second result (sharedNormInput).
///
/// The epilogue is the elementwise ops at the reduction's result shape that
/// read it or each other, up to the last op whose earlier values nothing
/// outside reads: a chain, or ops that read one value twice, such as a
/// QuantizeLinear's NaN test and select (both read the rounded value), so
/// that a quantized LayerNorm writes its 8-bit bytes, not the rounded
/// floats for a kernel of its own to clamp and cast. The ops' other
/// operands are kernel inputs.
Group buildReductionGroup(Operation *reduction,
                          const llvm::DenseSet<Operation *> &taken) {
  Group group{KernelKind::reduction, reduction, {}};
  group.members.insert(reduction);
  SmallVector<Operation *> epilogue;
  llvm::SmallPtrSet<Value, 16> chain = {reduction->getResult(0)};
  // Whether no op outside the epilogue reads its values but `end`'s.
  auto closed = [&](Operation *end) {
    return onlyReadWithin(chain, epilogue, end);
  };
  size_t taking = 0;
  Operation *op = reduction->getNextNode();
  for (unsigned looked = 0; op && looked < kEpilogueWindow;
       op = op->getNextNode(), ++looked) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return chain.contains(v); }))
      continue;
    if (!isElementwise(op) || taken.contains(op) || op->getNumResults() != 1 ||
        !sameResultShape(op, reduction))
      break;
    epilogue.push_back(op);
    chain.insert(op->getResult(0));
    if (closed(op))
      taking = epilogue.size();
  }
  if (taking) {
    group.members.insert(epilogue.begin(), epilogue.begin() + taking);
    group.root = epilogue[taking - 1];
  }
  SmallVector<Value> inputs{reduction->getOperand(0)};
  if (Operation *shared = sharedNormInput(reduction, group.root, taken)) {
    group.members.insert(shared);
    group.alsoYielded = shared;
    // The norm's input (if it is not what is shared: the cast reads it)
    // is then read only inside, and joins as a prologue op.
    inputs.assign(shared->operand_begin(), shared->operand_end());
    inputs.push_back(reduction->getOperand(0));
  }
  group.absorbProducersThroughMoves(inputs, taken);
  // A norm reads its scale and shift at each row's broadcast index: only
  // what costs nothing to compute again per row joins (a widening cast, data
  // movement); other producers keep a kernel that computes them once.
  if (isRowNorm(reduction)) {
    SmallVector<Value> params(llvm::drop_begin(reduction->getOperands()));
    while (!params.empty()) {
      Operation *producer = params.pop_back_val().getDefiningOp();
      if (!producer || group.members.contains(producer) ||
          taken.contains(producer) || !group.allUsesInside(producer) ||
          !(isa<CastOp>(producer) || movesData(producer)))
        continue;
      group.members.insert(producer);
      params.append(producer->operand_begin(), producer->operand_end());
    }
  }
  return group;
}

/// Whether `matmul` can take an epilogue into a GEMM kernel: a float matmul
/// of matrices, not f64 (whose products stay plain matmul steps).
bool takesEpilogue(MatmulOp matmul) {
  Type element = matmul.getType().getElementType();
  return isa<FloatType>(element) && !element.isF64() &&
         matmul.getType().getRank() >= 2;
}

/// Whether `op` adds a bias row to a product that only it uses: a GEMM's
/// bias epilogue (buildGemmGroup), where cuBLASLt adds it for free.
bool isGemmBias(Operation *op) {
  auto add = dyn_cast<AddOp>(op);
  if (!add)
    return false;
  for (auto [product, bias] :
       {std::pair{add.getLhs(), add.getRhs()}, {add.getRhs(), add.getLhs()}}) {
    auto matmul = product.getDefiningOp<MatmulOp>();
    if (!matmul || !product.hasOneUse() || bias == product)
      continue;
    // What buildGemmGroup takes: the sum of the product's own type.
    if (takesEpilogue(matmul) && add.getType() == matmul.getType() &&
        isRowBias(bias, product))
      return true;
  }
  return false;
}

/// The fewest query rows `attention` runs with: its query length, or a
/// symbolic one's least over the function's dim ranges (0 where unknown).
int64_t leastQueryRows(AttentionOp attention) {
  auto query = cast<RankedTensorType>(attention.getQuery().getType());
  std::optional<SymbolicShape> shape = symbolicShapeOf(query);
  if (!shape)
    return 0;
  DimRanges ranges = dimRangesOf(attention->getParentOfType<func::FuncOp>());
  return lowerBound((*shape)[query.getRank() - 2], ranges).value_or(0);
}

/// Builds an attention group: the attention, the data movement and
/// elementwise ops that produce its operands for it alone (head splits,
/// slices of a packed projection, key/value heads repeated for grouped-query
/// attention, mask arithmetic, the query's rotary embedding), and a
/// transpose of its result (heads merged back). The keys' and values'
/// compute (a rotary embedding, a conversion) joins only where the queries
/// may fit one tile: where every run has more, every query tile would
/// compute it again, element by element, where a kernel of its own computes
/// it once and the attention copies whole rows (cp.async). A symbolic
/// length that may be short (a decoding step's one row, where the kernel
/// reads each key once) keeps it. Their data movement is read through
/// either way.
Group buildAttentionGroup(AttentionOp attention,
                          const llvm::DenseSet<Operation *> &taken) {
  Group group{KernelKind::attention, attention, {}};
  group.members.insert(attention);
  if (attention->hasOneUse())
    if (auto transpose = dyn_cast<TransposeOp>(*attention->getUsers().begin());
        transpose && !taken.contains(transpose)) {
      group.members.insert(transpose);
      group.root = transpose;
    }
  // The fewest query rows a block stages key and value tiles for, from the
  // attention emitter's own configuration.
  bool keysCompute = leastQueryRows(attention) <= fewestAttentionQueryRows();
  // Each operand's producers, and whether compute may join from there.
  SmallVector<std::pair<Value, bool>> worklist;
  for (OpOperand &operand : attention->getOpOperands()) {
    bool keysOrValues = &operand == &attention.getKeyMutable() ||
                        &operand == &attention.getValueMutable();
    worklist.push_back({operand.get(), !keysOrValues || keysCompute});
  }
  while (!worklist.empty()) {
    auto [value, compute] = worklist.pop_back_val();
    Operation *producer = value.getDefiningOp();
    if (!producer || group.members.contains(producer) ||
        taken.contains(producer) ||
        producer->getBlock() != attention->getBlock() ||
        !((compute && isElementwise(producer)) || movesData(producer)) ||
        !group.allUsesInside(producer) ||
        // Left to the GEMM's epilogue: the attention then reads the
        // biased projection itself, rows it can copy whole.
        isGemmBias(producer))
      continue;
    group.members.insert(producer);
    for (Value operand : producer->getOperands())
      worklist.push_back({operand, compute});
  }
  return group;
}

/// Whether a GEMM step's epilogue computes `op`, an activation of a product
/// of element type `element`: ReLU, and GELU. cuBLASLt's GELU is the tanh
/// approximation, which a 16-bit product takes for the erf form too: its
/// own rounding (2^-11 relative at fp16) is larger than the two forms'
/// difference (at most 4.7e-4, at |x| = 2.7: under 2e-4 relative). An fp32
/// product computes the erf form exactly: in Kiln's GEMM kernels' epilogue,
/// or after cuBLASLt in a kernel of its own (rt::MatmulActivation::GeluErf).
bool isEpilogueActivation(Operation *op, Type element) {
  if (isa<ReluOp>(op))
    return true;
  auto gelu = dyn_cast<GeluOp>(op);
  return gelu && (gelu.getApproximate() == GeluApproximation::tanh ||
                  element.isF16() || element.isBF16() || element.isF32());
}

/// Whether `op` adds to `product` a residual of its shape (neither
/// broadcast), which cuBLASLt reads as its C. A residual that an
/// elementwise op computes for this add alone (a model input's conversion
/// to fp16) is not taken: cuBLASLt reads memory, so it would need a kernel
/// of its own, where the add's own kernel computes it on the way.
bool isResidualAdd(Operation *op, Value product) {
  auto add = dyn_cast<AddOp>(op);
  if (!add || add.getLhs() == add.getRhs())
    return false;
  Value other = add.getLhs() == product ? add.getRhs() : add.getLhs();
  if (Operation *def = other.getDefiningOp();
      def && other.hasOneUse() && isElementwise(def))
    return false;
  return other.getType() == product.getType() &&
         add.getType() == product.getType();
}

/// The row norm that ends a GEMM group, and what else its kernel yields.
struct GemmRowNorm {
  /// The kiln.layer_norm or kiln.rms_norm; null where none ends the group.
  Operation *norm = nullptr;
  /// The reshapes between the group's end and the norm.
  SmallVector<Operation *> reshapes;
  /// The op whose result the norm reads where later ops read it too (a
  /// pre-norm block's residual sum, which the next block adds to), else
  /// null.
  Operation *shared = nullptr;
};

/// The row norm that ends `matmul`'s GEMM group after `end` (through
/// reshapes, each the only user of the one before): of the last axis only,
/// whose length is the product's static columns;
/// a product of fp32 or a 16-bit type (Kiln's GEMM kernels'); scale and
/// shift one row each; not read by one
/// elementwise op alone. What it normalizes may have other readers, all
/// after the norm (where the kernel is placed): the kernel yields it too.
GemmRowNorm rowNormOf(Operation *end, MatmulOp matmul,
                      const llvm::DenseSet<Operation *> &taken) {
  auto product = cast<RankedTensorType>(matmul.getType());
  Type element = product.getElementType();
  int64_t columns = product.getShape().back();
  if (!(element.isF32() || element.isF16() || element.isBF16()) ||
      ShapedType::isDynamic(columns))
    return {};
  auto joins = [&](Operation *op) {
    return !taken.contains(op) && op->getBlock() == matmul->getBlock();
  };
  GemmRowNorm found;
  Operation *cursor = end;
  for (;;) {
    Value value = cursor->getResult(0);
    Operation *norm = nullptr;
    for (Operation *user : value.getUsers())
      if (isRowNorm(user) && user->getOperand(0) == value && joins(user))
        norm = user;
    if (!norm) {
      Operation *user = value.hasOneUse() ? *value.getUsers().begin() : nullptr;
      if (!user || !isa<ReshapeOp>(user) || !joins(user))
        return {};
      found.reshapes.push_back(user);
      cursor = user;
      continue;
    }
    if (!value.hasOneUse()) {
      if (!llvm::all_of(value.getUsers(), [&](Operation *user) {
            return user == norm || comesAfter(user, norm);
          }))
        return {};
      found.shared = cursor;
    }
    auto type = cast<RankedTensorType>(norm->getResult(0).getType());
    auto isRow = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      return t.getRank() == 1 && t.getShape()[0] == columns &&
             t.getElementType() == element;
    };
    Value shift = rowNormShift(norm);
    if (rowNormAxis(norm) != type.getRank() - 1 ||
        type.getShape().back() != columns || !isRow(rowNormScale(norm)) ||
        (shift && !isRow(shift)))
      return {};
    // A norm whose only reader is elementwise keeps its row kernel, which
    // takes that reader as its epilogue: joined to the GEMM, the reader
    // would need a kernel of its own, and after cuBLASLt the norm one too.
    // The cast to an fp32 output (a model's last norm) is the exception:
    // it joins the GEMM step after the norm (buildGemmGroup).
    Value normed = norm->getResult(0);
    if (normed.hasOneUse()) {
      Operation *reader = *normed.getUsers().begin();
      auto widen = dyn_cast<CastOp>(reader);
      if (isElementwise(reader) &&
          !(widen && widen.getType().getElementType().isF32() && joins(widen)))
        return {};
    }
    found.norm = norm;
    return found;
  }
}

/// The f32 residual add and row norm after a 16-bit GEMM group's end `end`
/// as the importer writes onnxruntime's SkipLayerNormalization and
/// SkipSimplifiedLayerNormalization (a pre-norm decoder's, from
/// onnxruntime-genai's builder): `end` cast to f32, the cast of a residual
/// of its type added, the norm of that sum by the casts of one row each of
/// scale and shift, over the last axis, cast back to `end`'s type, and
/// maybe the sum cast back too, read only after the norm's cast (where the
/// kernel is placed). Each op joins only the group. Empty where the ops
/// are otherwise.
struct WideRowNorm {
  SmallVector<Operation *> ops;
  Operation *add = nullptr, *norm = nullptr, *narrow = nullptr, *sum = nullptr;
};
std::optional<WideRowNorm>
wideRowNormOf(Operation *end, MatmulOp matmul,
              const llvm::DenseSet<Operation *> &taken) {
  auto narrowType = cast<RankedTensorType>(end->getResult(0).getType());
  int64_t columns = narrowType.getShape().back();
  if (!(narrowType.getElementType().isF16() ||
        narrowType.getElementType().isBF16()) ||
      ShapedType::isDynamic(columns))
    return std::nullopt;
  auto joins = [&](Operation *op) {
    return op && !taken.contains(op) && op->getBlock() == matmul->getBlock();
  };
  // The cast to f32 at its shape that computes `v`, where only `reader`
  // reads it.
  auto widenOf = [&](Value v, Operation *reader) -> CastOp {
    auto widen = v.getDefiningOp<CastOp>();
    if (!widen || !joins(widen) || !widen->hasOneUse() ||
        *widen->getUsers().begin() != reader)
      return CastOp();
    auto to = cast<RankedTensorType>(widen.getType());
    return to.getElementType().isF32() &&
                   to.getShape() ==
                       cast<RankedTensorType>(widen.getOperand().getType())
                           .getShape()
               ? widen
               : CastOp();
  };
  Value product = end->getResult(0);
  if (!product.hasOneUse())
    return std::nullopt;
  auto first = dyn_cast<CastOp>(*product.getUsers().begin());
  if (!first || !first->hasOneUse())
    return std::nullopt;
  auto add = dyn_cast<AddOp>(*first->getUsers().begin());
  if (!add || !joins(add) || widenOf(first.getResult(), add) != first)
    return std::nullopt;
  Value other = add.getLhs() == first.getResult() ? add.getRhs() : add.getLhs();
  CastOp residual = widenOf(other, add);
  if (!residual || residual.getOperand().getType() != narrowType)
    return std::nullopt;
  WideRowNorm found;
  found.add = add;
  for (Operation *user : add->getUsers()) {
    if (isRowNorm(user) && user->getOperand(0) == add.getResult() &&
        !found.norm && joins(user))
      found.norm = user;
    else if (auto back = dyn_cast<CastOp>(user);
             back && back.getType() == narrowType && !found.sum && joins(back))
      found.sum = back;
    else
      return std::nullopt;
  }
  Operation *norm = found.norm;
  if (!norm || rowNormAxis(norm) != narrowType.getRank() - 1 ||
      !norm->getResult(0).hasOneUse())
    return std::nullopt;
  auto back = dyn_cast<CastOp>(*norm->getResult(0).getUsers().begin());
  if (!back || back.getType() != narrowType || !joins(back))
    return std::nullopt;
  found.narrow = back;
  auto isRow = [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getRank() == 1 && t.getShape()[0] == columns &&
           t.getElementType() == narrowType.getElementType();
  };
  CastOp scale = widenOf(rowNormScale(norm), norm);
  Value shiftValue = rowNormShift(norm);
  CastOp shift = shiftValue ? widenOf(shiftValue, norm) : CastOp();
  if (!scale || !isRow(scale.getOperand()) ||
      (shiftValue && (!shift || !isRow(shift.getOperand()))))
    return std::nullopt;
  // The sum's cast is yielded too: every reader after the kernel's place.
  if (found.sum && !llvm::all_of(found.sum->getUsers(), [&](Operation *user) {
        return comesAfter(user, back);
      }))
    return std::nullopt;
  // In an order their operands allow, the sum's cast after the norm's (the
  // kernel's verifier reads them so).
  found.ops = {first, residual, add, scale};
  if (shift)
    found.ops.push_back(shift);
  found.ops.append({norm, back});
  if (found.sum)
    found.ops.push_back(found.sum);
  return found;
}

/// A Q/DQ product of 8-bit values: its weights' dequantize and its
/// activations' dequantization (QuantizedActivations.h).
struct QdqOperands {
  DequantizeOp weights;
  DequantizedActivations activations;
};

/// The one value of a constant splat `v` (maybe through a cast), as a
/// double; or none.
std::optional<double> splatValue(Value v) {
  if (auto widen = v.getDefiningOp<CastOp>())
    v = widen.getInput();
  DenseElementsAttr values;
  if (!matchPattern(v, m_Constant(&values)) || !values.isSplat() ||
      !isa<FloatType>(values.getElementType()))
    return std::nullopt;
  return values.getSplatValue<APFloat>().convertToDouble();
}

/// Whether `zero` is an 8-bit integer zero point of `quantized`'s type: a
/// cast of an 8-bit integer, or (the importer folds that cast when the
/// zero point is an initializer) a whole constant in the type's range.
bool isEightBitZeroPoint(Value zero, Value quantized) {
  if (auto widen = zero.getDefiningOp<CastOp>()) {
    auto integer =
        dyn_cast<IntegerType>(getElementTypeOrSelf(widen.getInput().getType()));
    if (integer && integer.getWidth() == 8)
      return true;
  }
  std::optional<double> value = splatValue(zero);
  bool isUnsigned = isUnsignedActivation(quantized);
  return value && *value == std::trunc(*value) &&
         *value >= (isUnsigned ? 0 : -128) &&
         *value <= (isUnsigned ? 255 : 127);
}

/// The operands of `matmul` where the CUDA target's 8-bit GEMM multiplies
/// them as the bytes they are: A's activations dequantized per tensor; B
/// the transposed dequantize of 8-bit weights of the same kind with one
/// scale a column of the product, K whole 16-byte chunks
/// (both operands' rows are copied 16 bytes at a time), neither operand's
/// bytes a graph input. Two kinds:
///
/// - integers: the activations' zero point an 8-bit integer
///   (isEightBitZeroPoint), the weights signed and symmetric (as TensorRT
///   and onnxruntime's quantize_static write them) or with an integer zero
///   point a column (uint8 weights, asymmetric);
/// - float8 E4M3FN both (NVIDIA ModelOpt's FP8): the activations' zero
///   point absent or a constant 0, as ModelOpt writes it.
///
/// Or none.
std::optional<QdqOperands> qdqOperands(MatmulOp matmul) {
  auto weights = matmul.getRhs().getDefiningOp<DequantizeOp>();
  Type element = matmul.getType().getElementType();
  if (!weights || !matmul.getTransposeRhs() || matmul.getTransposeLhs() ||
      !(element.isF32() || element.isF16() || element.isBF16()) ||
      weights.getBits() != 8 || weights.getBlockCount() != 1 ||
      !weights.hasIntegerZeroPoints() || weights.getBlockBytes() % 16 != 0 ||
      weights.getColumns() % 16 != 0)
    return std::nullopt;
  std::optional<DequantizedActivations> activations =
      dequantizedActivations(matmul.getLhs());
  if (!activations ||
      isFloat8Activation(activations->quantized) != weights.isFloat8())
    return std::nullopt;
  // Past K, A reads zeros; a float8 byte padding a row could be NaN, whose
  // product with zero is not.
  if (weights.isFloat8() && weights.getBlockBytes() != weights.getColumns())
    return std::nullopt;
  // The kernel copies both operands 16 bytes at a time (cp.async): a
  // caller's buffer (a graph input, seen through its views) need not be
  // aligned for it, as the arena's and the weights' are.
  auto isGraphInput = [](Value v) {
    while (auto view = v.getDefiningOp<ReshapeOp>())
      v = view.getInput();
    return isa<BlockArgument>(v);
  };
  if (isGraphInput(activations->quantized) || isGraphInput(weights.getPacked()))
    return std::nullopt;
  if (Value zero = activations->zero) {
    bool taken = weights.isFloat8()
                     ? splatValue(zero) == 0.0
                     : isEightBitZeroPoint(zero, activations->quantized);
    if (!taken)
      return std::nullopt;
  }
  return QdqOperands{weights, *activations};
}

/// How many ops past an 8-bit GEMM's product growQdqTail looks for its
/// readers: a requantization and a quantized residual add are some 30, and
/// BERT's GELU with its every step quantized some 70.
constexpr unsigned kTailWindow = 128;
/// The most ops growQdqTail computes again for one operand of a tail op.
constexpr size_t kRecomputedOps = 16;

/// Whether `v` is stored before `anchor`, in its block, where a kernel placed
/// after `anchor` may read it: a block argument, or the result of an op
/// before `anchor` that is a constant, that a group has taken, or that is
/// neither elementwise nor data movement (so no reader computes it again).
bool storedBefore(Value v, Operation *anchor,
                  const llvm::DenseSet<Operation *> &taken) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return true;
  return def->getBlock() == anchor->getBlock() &&
         def->isBeforeInBlock(anchor) &&
         (def->getNumOperands() == 0 || taken.contains(def) ||
          !(isElementwise(def) || isDataMovement(def)));
}

/// Grows an 8-bit GEMM's group (its product and bias, at `group.root`) by
/// the elementwise ops and reshapes that follow it and read it at their own
/// element (#kiln.gemm_epilogue's tail): the requantization of its sums to
/// 8 bits, and the dequantize and quantized add that may follow, which the
/// CUDA target computes where it stores each element, in place of a launch
/// that reads the product back. Each op's other operands are defined before
/// the product (a kernel input cannot depend on the kernel) and stored
/// anyway (fromOutside), or computed again in the tail from such operands
/// by elementwise ops and reshapes that nothing else reads (recomputable).
/// The tail ends at its last op whose earlier values no op outside reads;
/// there is none where no such op has an elementwise op in it. It takes
/// none of `reserved`: the dequantizations of another 8-bit product's
/// activations, which that product reads as bytes.
void growQdqTail(Group &group, const llvm::DenseSet<Operation *> &taken,
                 const llvm::DenseSet<Operation *> &reserved) {
  Operation *start = group.root;
  llvm::SmallVector<Operation *> tail;
  llvm::SmallPtrSet<Value, 16> chain = {start->getResult(0)};
  // An operand from outside: defined before the product, and stored
  // anyway (an input, a constant, another kernel's result, a value that
  // other ops read too, or one that only a kernel of its own computes: a
  // reduction, a product).
  auto fromOutside = [&](Value v, Operation *reader) {
    if (storedBefore(v, start, taken))
      return true;
    Operation *def = v.getDefiningOp();
    return def->getBlock() == start->getBlock() &&
           def->isBeforeInBlock(start) &&
           llvm::any_of(v.getUsers(), [&](Operation *user) {
             return user != reader && !llvm::is_contained(tail, user);
           });
  };
  // An operand that only its reader reads, computed by elementwise ops and
  // reshapes from operands from outside: the tail computes it again where
  // it reads it, as the elementwise kernel it replaces did (a QLinearAdd's
  // other operand less its zero point, times its ratio of scales). Its ops
  // (`ops`, each operand's producers first), at most kRecomputedOps.
  std::function<bool(Value, SmallVectorImpl<Operation *> &)> recomputable =
      [&](Value v, SmallVectorImpl<Operation *> &ops) {
        Operation *def = v.getDefiningOp();
        if (!def || chain.contains(v) || !v.hasOneUse() ||
            def->getBlock() != start->getBlock() || taken.contains(def) ||
            reserved.contains(def) ||
            !(isElementwise(def) || isa<ReshapeOp>(def)) ||
            def->getNumResults() != 1 || ops.size() >= kRecomputedOps)
          return false;
        for (Value operand : def->getOperands())
          if (!fromOutside(operand, def) && !recomputable(operand, ops))
            return false;
        ops.push_back(def);
        return true;
      };
  // Whether no op outside the tail reads its values but `end`'s.
  auto closed = [&](Operation *end) {
    return onlyReadWithin(chain, tail, end);
  };
  // Per tail op, the producers of its operands it computes again.
  SmallVector<std::pair<Operation *, SmallVector<Operation *>>> recomputed;
  size_t taking = 0;
  bool computes = false, computed = false;
  Operation *op = start->getNextNode();
  for (unsigned looked = 0; op && looked < kTailWindow;
       op = op->getNextNode(), ++looked) {
    bool readsChain = llvm::any_of(op->getOperands(),
                                   [&](Value v) { return chain.contains(v); });
    if (!readsChain)
      continue;
    bool reshape = isa<ReshapeOp>(op);
    if (taken.contains(op) || reserved.contains(op) ||
        !(reshape || isElementwise(op)) || op->getNumResults() != 1)
      break;
    SmallVector<Operation *> producers;
    bool fits = llvm::all_of(op->getOperands(), [&](Value v) {
      if (chain.contains(v))
        return reshape || sameShape(v, op->getResult(0));
      return fromOutside(v, op) || recomputable(v, producers);
    });
    if (!fits)
      break;
    recomputed.push_back({op, producers});
    tail.push_back(op);
    chain.insert(op->getResult(0));
    computes |= !reshape;
    if (computes && closed(op)) {
      taking = tail.size();
      computed = true;
    }
  }
  if (!computed)
    return;
  // The recomputed producers move to just before their reader, after the
  // product, where the kernel's body computes them (the verifier's side
  // values of the tail); nothing else read them.
  for (auto &[reader, producers] : ArrayRef(recomputed).take_front(taking))
    for (Operation *producer : producers) {
      producer->moveBefore(reader);
      group.members.insert(producer);
    }
  group.members.insert(tail.begin(), tail.begin() + taking);
  group.root = tail[taking - 1];
  group.gemmTail = true;
}

/// Grows an 8-bit GEMM's tail (growQdqTail) by the LayerNorm or RMSNorm of
/// each row that is its end's only reader, and by the elementwise ops after
/// the norm that read it at their own element, up to the last whose earlier
/// values nothing else reads: a Q/DQ BERT's post-norm residual blocks,
/// whose norm's output the next products read requantized. The CUDA
/// target's Q/DQ GEMM keeps the tail's values for the norm and normalizes
/// and requantizes in the last column tile of a row tile to arrive (the
/// packed kernels' norm finish), so the norm's row kernel, a launch a norm,
/// is saved. An fp32 tail's end (also an fp16 build's, whose Q/DQ
/// arithmetic stays fp32), of the product's rows and columns, only, by fp32
/// scale and shift (the Q/DQ GEMM normalizes fp32); the norm's scale and shift
/// and the later ops' other operands are values from before the product, as the
/// tail's are, and no later op is another product's (`reserved`).
void growQdqTailNorm(Group &group, MatmulOp matmul,
                     const llvm::DenseSet<Operation *> &taken,
                     const llvm::DenseSet<Operation *> &reserved) {
  Value end = group.root->getResult(0);
  auto type = cast<RankedTensorType>(end.getType());
  auto product = cast<RankedTensorType>(matmul.getType());
  int64_t columns = product.getShape().back();
  if (!end.hasOneUse() || !type.getElementType().isF32() ||
      !type.hasStaticShape() || !product.hasStaticShape() ||
      type.getNumElements() != product.getNumElements() ||
      type.getShape().back() != columns)
    return;
  Operation *norm = *end.getUsers().begin();
  Block *block = matmul->getBlock();
  auto before = [&](Value v) { return storedBefore(v, matmul, taken); };
  auto isRow = [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getRank() == 1 && t.getShape()[0] == columns &&
           t.getElementType().isF32() && before(v);
  };
  if (!isRowNorm(norm))
    return;
  Value shift = rowNormShift(norm);
  if (taken.contains(norm) || norm->getBlock() != block ||
      rowNormAxis(norm) != type.getRank() - 1 || !isRow(rowNormScale(norm)) ||
      (shift && !isRow(shift)))
    return;
  // The ops after the norm, each reading the chain at its own element.
  SmallVector<Operation *> after;
  llvm::SmallPtrSet<Value, 16> chain = {norm->getResult(0)};
  size_t taking = 0;
  Operation *op = norm->getNextNode();
  for (unsigned looked = 0; op && looked < kTailWindow;
       op = op->getNextNode(), ++looked) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return chain.contains(v); }))
      continue;
    if (taken.contains(op) || reserved.contains(op) || !isElementwise(op) ||
        op->getNumResults() != 1 ||
        !llvm::all_of(op->getOperands(), [&](Value v) {
          return chain.contains(v) ? sameShape(v, op->getResult(0)) : before(v);
        }))
      break;
    after.push_back(op);
    chain.insert(op->getResult(0));
    if (onlyReadWithin(chain, after, op))
      taking = after.size();
  }
  // (Without a closed chain after it, the kernel yields the norm's result.)
  group.members.insert(norm);
  group.members.insert(after.begin(), after.begin() + taking);
  group.root = taking ? after[taking - 1] : norm;
  group.gemmNorm = norm;
}

/// Grows the group of a product of block-quantized weights (its packed
/// GEMV's) by the ops that compute its left operand, where only the product
/// reads them: elementwise ops and data movement other than gathers (whose
/// index checks are sites of their own), not what a reduction's kernel would
/// take as its epilogue. A decoding step's GEMV reads every value of its
/// rows in each block anyway, so each block computes its rows over its
/// share of K, and the launch that wrote them is saved (a decoder's SwiGLU
/// before its down projection). Runs with more rows compute them once, in a
/// kernel of their own (PlanPackedMatmuls.cpp).
void absorbOperandPrologue(Group &group, MatmulOp matmul,
                           const llvm::DenseSet<Operation *> &taken) {
  Operation *producer = matmul.getLhs().getDefiningOp();
  if (!producer || !isElementwise(producer) || !producer->hasOneUse() ||
      producer->getBlock() != matmul->getBlock())
    return;
  // What the epilogue reads (a residual) stays outside, as an input.
  llvm::DenseSet<Operation *> outside(taken.begin(), taken.end());
  for (Operation *member : group.members)
    if (member != matmul.getOperation())
      for (Value operand : member->getOperands())
        if (Operation *def = operand.getDefiningOp())
          outside.insert(def);
  Group trial = group;
  trial.absorbProducersThroughMoves({matmul.getLhs()}, outside);
  // Not where a reduction's kernel would compute them as its epilogue
  // anyway (a norm's cast to the product's type): no launch to save, and
  // each block would read the wider values.
  auto readsReduction = [&](Operation *op) {
    return llvm::any_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && !trial.members.contains(def) && isReduction(def);
    });
  };
  // Each value the prologue computes is read by the prologue or the product
  // alone, not by the epilogue (a residual add that reads it too).
  auto readsOnlyPrologue = [&](Operation *op) {
    return llvm::all_of(op->getUsers(), [&](Operation *user) {
      return user == matmul.getOperation() ||
             (trial.members.contains(user) && !group.members.contains(user));
    });
  };
  bool computable = llvm::all_of(trial.members, [&](Operation *op) {
    return group.members.contains(op) ||
           ((isElementwise(op) ||
             (isDataMovement(op) && !isa<GatherOp, GatherElementsOp>(op))) &&
            !readsReduction(op) && readsOnlyPrologue(op));
  });
  if (!computable || !trial.members.contains(producer))
    return;
  group.members = std::move(trial.members);
  group.gemmPrologue = true;
}

/// Builds a GEMM group, what a cuBLASLt call computes with its epilogue: the
/// matmul, then a bias over its columns, a residual of its shape and a ReLU
/// or GELU (maybe after reshapes), each the only user of the one before;
/// and the dequantize of its quantized weights. Returns nothing when the
/// matmul has neither (it stays a plain matmul step).
std::optional<Group> buildGemmGroup(MatmulOp matmul,
                                    const llvm::DenseSet<Operation *> &taken,
                                    const llvm::DenseSet<Operation *> &reserved,
                                    bool takeNorm) {
  if (!takesEpilogue(matmul))
    return std::nullopt;
  Type element = matmul.getType().getElementType();
  Group group{KernelKind::gemm, matmul, {}};
  group.members.insert(matmul);
  auto next = [&]() -> Operation * {
    Value v = group.root->getResult(0);
    if (!v.hasOneUse())
      return nullptr;
    Operation *user = *v.getUsers().begin();
    // The user may be the function's return, which has no result.
    if (taken.contains(user) || user->getBlock() != matmul->getBlock() ||
        user->getNumResults() != 1 ||
        user->getResult(0).getType() != v.getType())
      return nullptr;
    return user;
  };
  if (auto add = dyn_cast_or_null<AddOp>(next())) {
    Value product = group.root->getResult(0);
    Value bias = add.getLhs() == product ? add.getRhs() : add.getLhs();
    if (bias != product && isRowBias(bias, product)) {
      group.members.insert(add);
      group.root = add;
      group.gemmBiasAdd = add;
    }
  }
  // Reshapes between the product and its residual or activation move no
  // data (both are elementwise): the GEMM writes the reshaped tensor.
  // GPT-2's Gemm nodes are 2-D, their GELU and residual adds 3-D.
  SmallVector<Operation *> reshapes;
  Operation *cursor = group.root;
  bool residual = false;
  while (cursor->getResult(0).hasOneUse()) {
    Operation *user = *cursor->getUsers().begin();
    if (taken.contains(user) || user->getBlock() != matmul->getBlock())
      break;
    if (isa<ReshapeOp>(user)) {
      reshapes.push_back(user);
      cursor = user;
      continue;
    }
    // A residual of the product's shape, before any activation (cuBLASLt
    // adds beta * C before it): read as C, the result written as D.
    if (!residual && isResidualAdd(user, cursor->getResult(0))) {
      group.gemmResidualAdd = user;
      group.members.insert(reshapes.begin(), reshapes.end());
      reshapes.clear();
      group.members.insert(user);
      group.root = cursor = user;
      residual = true;
      continue;
    }
    if (isEpilogueActivation(user, element) &&
        user->getResult(0).getType() == cursor->getResult(0).getType()) {
      group.members.insert(reshapes.begin(), reshapes.end());
      group.members.insert(user);
      group.root = user;
      group.gemmActivation =
          isa<ReluOp>(user) ? GemmActivation::relu : GemmActivation::gelu;
    }
    break;
  }
  // A LayerNorm or RMSNorm of each row last: BERT's post-norm blocks,
  // where it is the residual sum's only reader, and pre-norm decoders'
  // (GPT-2, LLaMA), where the next block adds to the sum too: the kernel
  // then yields both. It adds the epilogue and normalizes (the CUDA
  // target's norm kernel), saving the sum's round trip and a launch. Over
  // block-quantized weights, where the packed kernels finish it (a
  // quantized decoder's norms after its output and down projections); over
  // 8-bit activations only after the tail (growQdqTailNorm).
  auto dequantize = matmul.getRhs().getDefiningOp<DequantizeOp>();
  bool packs = dequantize && (element.isF16() || element.isBF16()) &&
               matmul.getTransposeRhs() && !matmul.getTransposeLhs() &&
               dequantize->hasOneUse() && !taken.contains(dequantize) &&
               dequantize->getBlock() == matmul->getBlock();
  bool normable = !dequantize || !dequantize->hasOneUse() ||
                  (packs && !qdqOperands(matmul));
  if (takeNorm && normable) {
    if (GemmRowNorm norm = rowNormOf(group.root, matmul, taken); norm.norm) {
      group.members.insert(norm.reshapes.begin(), norm.reshapes.end());
      group.members.insert(norm.norm);
      group.root = norm.norm;
      group.gemmNorm = norm.norm;
      group.alsoYielded = norm.shared;
    } else if (std::optional<WideRowNorm> wide;
               packs && !group.gemmResidualAdd &&
               group.gemmActivation == GemmActivation::none &&
               (wide = wideRowNormOf(group.root, matmul, taken))) {
      // onnxruntime's skip norms, f32 as the importer writes them (a
      // quantized genai decoder's): the packed kernels keep the sum a
      // float for the norm, as onnxruntime does.
      group.members.insert(wide->ops.begin(), wide->ops.end());
      group.root = wide->narrow;
      group.gemmNorm = wide->norm;
      group.gemmResidualAdd = wide->add;
      group.alsoYielded = wide->sum;
      group.gemmWideNorm = true;
      group.gemmWideOps = wide->ops;
    }
  }
  // Block-quantized weights join a 16-bit product (kiln.dequantize, which
  // only this product reads): the kernel reads the packed bytes itself
  // where the rows are few, and unpacks them once a run where they are
  // many (PlanMatmuls.cpp).
  if (packs) {
    group.members.insert(dequantize);
    if (!qdqOperands(matmul))
      absorbOperandPrologue(group, matmul, taken);
  }
  // 8-bit activations times 8-bit weights join at any product type, the
  // activations' integers read where the dequantization was: the CUDA
  // target multiplies the bytes on the tensor cores and scales the sums.
  if (std::optional<QdqOperands> operands = qdqOperands(matmul)) {
    ArrayRef<Operation *> ops = operands->activations.ops;
    auto joins = [&](Operation *op) {
      return op->hasOneUse() && !taken.contains(op) &&
             op->getBlock() == matmul->getBlock();
    };
    if (joins(operands->weights) && llvm::all_of(ops, joins)) {
      group.members.insert(operands->weights);
      group.members.insert(ops.begin(), ops.end());
      // Its tail after the product and bias alone, and a norm after it.
      if (!group.gemmResidualAdd &&
          group.gemmActivation == GemmActivation::none)
        growQdqTail(group, taken, reserved);
      if (group.gemmTail && takeNorm)
        growQdqTailNorm(group, matmul, taken, reserved);
    }
  }
  // Last, the cast of a 16-bit result to fp32 where it is the result's only
  // reader (a model's fp32 output: the logits of an LM head, an encoder's
  // last LayerNorm; an fp32 island's input): the step stores the 16-bit
  // value widened, which saves the cast's launch and the 16-bit round
  // trip. Not over quantized weights, whose kernels store their own
  // element type.
  bool quantized = group.members.size() > 1 &&
                   llvm::any_of(group.members, [](Operation *op) {
                     return isa<DequantizeOp>(op);
                   });
  if (Value result = group.root->getResult(0);
      !quantized && result.hasOneUse() &&
      (element.isF16() || element.isBF16()) &&
      cast<RankedTensorType>(result.getType()).getElementType() == element)
    if (auto widen = dyn_cast<CastOp>(*result.getUsers().begin());
        widen && !taken.contains(widen) &&
        widen->getBlock() == matmul->getBlock() &&
        widen.getType().getElementType().isF32()) {
      group.members.insert(widen);
      group.root = widen;
    }
  if (group.members.size() == 1)
    return std::nullopt;
  return group;
}

/// Whether cache updates `a` and `b` write rows of one shape at one place:
/// their updates' and destinations' shapes (symbolic sizes included), axis,
/// offset and per-batch starts (one value, or neither has them) equal. A
/// decoder's key and value caches, updated from one projection (at the
/// positions of onnxruntime-genai's seqlens_k, in its buffer form).
bool writeAlike(UpdateSliceOp a, UpdateSliceOp b) {
  auto shapeOf = [](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    return std::make_pair(type.getShape(), type.getEncoding());
  };
  return shapeOf(a.getUpdate()) == shapeOf(b.getUpdate()) &&
         shapeOf(a.getDest()) == shapeOf(b.getDest()) &&
         a.getAxis() == b.getAxis() && a.getOffset() == b.getOffset() &&
         a.getStarts() == b.getStarts();
}

/// Where each op will be: where the group that holds it places its kernel
/// (its root, or a cache update's GEMM its placeAt), or itself.
class Placement {
public:
  explicit Placement(ArrayRef<Group> groups) {
    for (const Group &g : groups)
      for (Operation *op : g.members)
        placeOf[op] = g.placeAt ? g.placeAt : g.root;
  }
  Operation *operator()(Operation *op) const {
    Operation *place = placeOf.lookup(op);
    return place ? place : op;
  }
  /// Whether every reader of `early`'s root outside `late` will be placed
  /// after `late`'s root, where the kernel of the two merged is.
  bool readAfter(const Group &early, const Group &late) const {
    return llvm::all_of(early.root->getUsers(), [&](Operation *user) {
      return late.members.contains(user) ||
             comesAfter((*this)(user), late.root);
    });
  }
  /// Whether every reader of `op` (none where it is null) will be placed
  /// after `late`'s root, and none inside it.
  bool readOnlyAfter(Operation *op, const Group &late) const {
    return !op || llvm::all_of(op->getUsers(), [&](Operation *user) {
      return comesAfter((*this)(user), late.root);
    });
  }
  /// Whether one kernel (or op) will read both groups' roots.
  bool readTogether(const Group &a, const Group &b) const {
    llvm::SmallPtrSet<Operation *, 4> places;
    for (Operation *user : a.root->getUsers())
      places.insert((*this)(user));
    return llvm::any_of(b.root->getUsers(), [&](Operation *user) {
      return places.contains((*this)(user));
    });
  }
  /// `early` merged into `late` (which yields its root too), and erased.
  void merge(Group &early, Group &late, SmallVectorImpl<Group> &groups) {
    late.alsoYielded = early.root;
    absorb(early, late, groups);
  }
  /// `early`'s ops joined to `late`, placed where its kernel is, and
  /// `early` erased.
  void absorb(Group &early, Group &late, SmallVectorImpl<Group> &groups) {
    late.members.insert(early.members.begin(), early.members.end());
    for (Operation *op : early.members)
      placeOf[op] = late.root;
    groups.erase(groups.begin() + (&early - groups.data()));
  }

private:
  llvm::DenseMap<Operation *, Operation *> placeOf;
};

/// Whether a member of `reader` reads `writer`'s root.
bool readsRootOf(const Group &reader, const Group &writer) {
  return llvm::any_of(reader.members, [&](Operation *op) {
    return llvm::is_contained(op->getOperands(), writer.root->getResult(0));
  });
}

/// Merges each pair of cache-update groups that write alike (writeAlike)
/// into one kernel with two results, placed at the later update: one
/// launch for a decoder layer's key and value caches. The earlier update
/// must be read only after the later one (where its readers' kernels will
/// be placed: a slice of the valid rows joins the attention that reads
/// it), and neither group may read the other's result.
void pairCacheUpdates(SmallVectorImpl<Group> &groups) {
  Placement placement(groups);
  auto updateOf = [](const Group &g) {
    return g.kind == KernelKind::elementwise && !g.alsoYielded
               ? dyn_cast<UpdateSliceOp>(g.root)
               : UpdateSliceOp();
  };
  for (size_t i = 0; i < groups.size(); ++i) {
    UpdateSliceOp first = updateOf(groups[i]);
    if (!first)
      continue;
    for (size_t j = i + 1; j < groups.size(); ++j) {
      UpdateSliceOp second = updateOf(groups[j]);
      if (!second || second->getBlock() != first->getBlock() ||
          !writeAlike(first, second))
        continue;
      Group &early = first->isBeforeInBlock(second) ? groups[i] : groups[j];
      Group &late = &early == &groups[i] ? groups[j] : groups[i];
      if (!placement.readAfter(early, late) || readsRootOf(late, early) ||
          readsRootOf(early, late))
        continue;
      placement.merge(early, late, groups);
      // The merged group sits at i or i - 1 now; look for no third.
      break;
    }
  }
}

/// For each group that `merges`, the first other group that `into` accepts
/// takes its ops, placed where its kernel is, and `yields` records what the
/// joined kernel then also yields.
void mergeEach(
    SmallVectorImpl<Group> &groups, Placement &placement,
    llvm::function_ref<bool(const Group &)> merges,
    llvm::function_ref<bool(const Group &early, const Group &late)> into,
    llvm::function_ref<void(const Group &early, Group &late)> yields) {
  for (size_t i = 0; i < groups.size();) {
    Group *late = nullptr;
    if (merges(groups[i]))
      for (size_t j = 0; j < groups.size() && !late; ++j)
        if (j != i && into(groups[i], groups[j]))
          late = &groups[j];
    if (!late) {
      ++i;
      continue;
    }
    yields(groups[i], *late);
    // Group i is gone: what moved into its place is next.
    placement.absorb(groups[i], *late, groups);
  }
}

/// Merges two one-element elementwise kernels whose results one kernel
/// reads into one kernel that yields both: a dynamic quantization's scale
/// and zero point, the integer GEMM's operands, in one launch instead of
/// two. The earlier result's readers must be placed after the later
/// kernel.
void pairScalarKernels(SmallVectorImpl<Group> &groups) {
  Placement placement(groups);
  auto scalar = [](const Group &g) {
    return g.kind == KernelKind::elementwise && !g.alsoYielded &&
           isCheapScalar(g.root) && isElementwise(g.root);
  };
  // One shape (the CUDA target's elementwise kernel stores each result at
  // one index): tensor<f32> and tensor<1xf32> are not paired.
  auto shapeOf = [](const Group &g) {
    return cast<RankedTensorType>(g.root->getResult(0).getType()).getShape();
  };
  mergeEach(
      groups, placement, scalar,
      [&](const Group &early, const Group &late) {
        return scalar(late) && shapeOf(late) == shapeOf(early) &&
               late.root->getBlock() == early.root->getBlock() &&
               placement.readTogether(early, late) &&
               early.root->isBeforeInBlock(late.root) &&
               placement.readAfter(early, late);
      },
      [](const Group &early, Group &late) { late.alsoYielded = early.root; });
}

/// The values from outside `group` that its ops read.
llvm::SetVector<Value> groupInputs(const Group &group) {
  llvm::SetVector<Value> inputs;
  for (Operation *op : group.members)
    for (Value operand : op->getOperands())
      if (!group.members.contains(operand.getDefiningOp()))
        inputs.insert(operand);
  return inputs;
}

/// Merges each one-element kernel (after pairScalarKernels, maybe two
/// results) into an elementwise kernel of more elements that reads every
/// value it reads, whose first thread then writes its results: a dynamic
/// quantization's scale and zero point for its GEMM, computed from the
/// extremes that the kernel quantizing the activations reads too, cost that
/// kernel a few flops, not a launch. Its readers must come after the other
/// kernel, which cannot read them; reading nothing new, it can move there.
void mergeScalarKernels(SmallVectorImpl<Group> &groups) {
  Placement placement(groups);
  auto scalar = [](const Group &g) {
    return g.kind == KernelKind::elementwise && g.sideScalars.empty() &&
           isCheapScalar(g.root) && isElementwise(g.root);
  };
  // The CUDA target's elementwise kernel loops over its first result; a
  // cache update's kernel over the new rows.
  auto loops = [](const Group &g) {
    return g.kind == KernelKind::elementwise && !isCheapScalar(g.root) &&
           !isa<UpdateSliceOp>(g.root);
  };
  mergeEach(
      groups, placement, scalar,
      [&](const Group &early, const Group &late) {
        if (!loops(late) || late.root->getBlock() != early.root->getBlock() ||
            !placement.readOnlyAfter(early.root, late) ||
            !placement.readOnlyAfter(early.alsoYielded, late))
          return false;
        llvm::SetVector<Value> lateInputs = groupInputs(late);
        return llvm::all_of(groupInputs(early),
                            [&](Value v) { return lateInputs.contains(v); });
      },
      [](const Group &early, Group &late) {
        if (early.alsoYielded)
          late.sideScalars.push_back(early.alsoYielded);
        late.sideScalars.push_back(early.root);
      });
}

/// The most results a kernel of mergeSiblingKernels yields.
constexpr size_t kMostSiblings = 4;

/// Merges elementwise kernels of one shape that read a value in common,
/// each through data movement, into one kernel that yields each one's
/// result: a quantized attention's query, key and value heads, each
/// sliced from one packed projection, biased, quantized and transposed on
/// its own (a Q/DQ graph's head split, which attention does not take),
/// one launch where they were three. Only kernels that read through data
/// movement, which the CUDA target loops over element by element anyway
/// (a kernel of several results is not vectorized). Each merged kernel's
/// readers come after the kernel it joins, which cannot read it, and what
/// it reads is computed before that kernel.
void mergeSiblingKernels(SmallVectorImpl<Group> &groups) {
  Placement placement(groups);
  auto movesThrough = [](const Group &g) {
    return g.kind == KernelKind::elementwise && !g.alsoYielded &&
           g.sideScalars.empty() && !isCheapScalar(g.root) &&
           !isa<UpdateSliceOp>(g.root) &&
           llvm::any_of(g.members,
                        [](Operation *op) { return isDataMovement(op); });
  };
  mergeEach(
      groups, placement,
      [&](const Group &g) { return movesThrough(g) && g.siblings.empty(); },
      [&](const Group &early, const Group &late) {
        if (!movesThrough(late) || late.siblings.size() + 2 > kMostSiblings ||
            late.root->getBlock() != early.root->getBlock() ||
            !sameResultShape(late.root, early.root) ||
            !placement.readOnlyAfter(early.root, late))
          return false;
        llvm::SetVector<Value> inputs = groupInputs(early),
                               lateInputs = groupInputs(late);
        return llvm::any_of(inputs,
                            [&](Value v) { return lateInputs.contains(v); }) &&
               llvm::all_of(inputs, [&](Value v) {
                 Operation *def = v.getDefiningOp();
                 return !def || comesAfter(late.root, placement(def));
               });
      },
      [](const Group &early, Group &late) {
        late.siblings.push_back(early.root);
      });
}

/// Whether `group` is a GEMM over block-quantized weights of a 16-bit
/// product whose epilogue ends in neither norm nor tail: what the packed
/// GEMV finishes with a cache update.
bool isPackedGemmGroup(const Group &group) {
  if (group.kind != KernelKind::gemm || group.gemmNorm || group.gemmTail ||
      group.gemmWideNorm || group.alsoYielded || !group.cacheUpdates.empty())
    return false;
  auto matmul = llvm::find_if(group.members,
                              [](Operation *op) { return isa<MatmulOp>(op); });
  if (matmul == group.members.end())
    return false;
  auto product = cast<MatmulOp>(*matmul);
  Type element = getElementTypeOrSelf(product.getType());
  auto weights = product.getRhs().getDefiningOp<DequantizeOp>();
  return (element.isF16() || element.isBF16()) && weights &&
         group.members.contains(weights) && !qdqOperands(product);
}

/// Merges each cache update's kernel (a layer's key and value updates,
/// paired) that reads a packed GEMM group's result into that group, placed
/// at the update: a decoder's QKV projection then writes the new keys
/// (rotated) and values into their caches in its GEMV's last block, one
/// launch fewer at every decoding step. The update's other inputs (the
/// rotary tables, the positions) may be computed after the projection:
/// the kernel's place, the update's, comes after them. Every other reader
/// of the product must be placed after the update.
void mergeCacheUpdatesIntoGemms(SmallVectorImpl<Group> &groups) {
  auto isUpdate = [](const Group &g) {
    return g.kind == KernelKind::elementwise && isa<UpdateSliceOp>(g.root) &&
           g.siblings.empty() && g.sideScalars.empty() &&
           (!g.alsoYielded || isa<UpdateSliceOp>(g.alsoYielded));
  };
  for (size_t i = 0; i < groups.size();) {
    Placement placement(groups);
    Group *update = nullptr;
    if (isPackedGemmGroup(groups[i]))
      for (Group &g : groups)
        if (isUpdate(g) && g.root->getBlock() == groups[i].root->getBlock() &&
            readsRootOf(g, groups[i]) && placement.readAfter(groups[i], g)) {
          update = &g;
          break;
        }
    if (!update) {
      ++i;
      continue;
    }
    // The GEMM's group takes the update's ops and its place; the update's
    // group goes.
    Group &gemm = groups[i];
    gemm.placeAt = update->root;
    gemm.cacheUpdates.push_back(update->root);
    if (update->alsoYielded)
      gemm.cacheUpdates.push_back(update->alsoYielded);
    gemm.members.insert(update->members.begin(), update->members.end());
    gemm.cacheUpdateOps.insert(update->members.begin(), update->members.end());
    groups.erase(groups.begin() + (update - groups.data()));
    // Group i may have moved down by one; either way, it is done.
    if (update < &gemm)
      --i;
    ++i;
  }
}

/// Gives every elementwise or data-movement reader of a cheap scalar
/// (isCheapScalar) that no group has taken a copy of its own, consumers
/// first, so that the copy joins the reader's kernel (a producer joins only
/// a group that holds all its readers): a dynamic quantization's scale and zero
/// point are then computed inside the kernel that quantizes, not each by a
/// one-element kernel of its own. Readers in groups already built (a GEMM
/// that takes a scale or zero point as its operand) keep reading the
/// original.
void duplicateCheapScalars(func::FuncOp func,
                           const llvm::DenseSet<Operation *> &taken) {
  SmallVector<Operation *> scalars;
  func.walk([&](Operation *op) {
    if (op->getParentOp() == func && isCheapScalar(op) && !taken.contains(op))
      scalars.push_back(op);
  });
  for (Operation *op : llvm::reverse(scalars)) {
    SmallVector<OpOperand *> copied;
    for (OpOperand &use : op->getUses()) {
      Operation *user = use.getOwner();
      if ((isElementwise(user) || isDataMovement(user)) &&
          !taken.contains(user))
        copied.push_back(&use);
    }
    // The original stays with the last copying reader where no other
    // reads it.
    if (!copied.empty() &&
        copied.size() == static_cast<size_t>(llvm::range_size(op->getUses())))
      copied.pop_back();
    for (OpOperand *use : copied) {
      OpBuilder b(use->getOwner());
      use->set(b.clone(*op)->getResult(0));
    }
  }
}

/// Replaces the group's ops by one kiln.kernel placed at the root (or the
/// group's placeAt).
void outlineGroup(Group &group) {
  SmallVector<Operation *> ops = group.members.takeVector();
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  // A wide norm's ops last, in wideRowNormOf's order: they read the
  // product and the kernel's inputs, and only each other reads them.
  if (!group.gemmWideOps.empty()) {
    auto wide =
        std::stable_partition(ops.begin(), ops.end(), [&](Operation *op) {
          return !llvm::is_contained(group.gemmWideOps, op);
        });
    std::copy(group.gemmWideOps.begin(), group.gemmWideOps.end(), wide);
  }
  // A cache update's ops after the GEMM's, in their order: they read the
  // product, the kernel's inputs and each other.
  std::stable_partition(ops.begin(), ops.end(), [&](Operation *op) {
    return !group.cacheUpdateOps.contains(op);
  });
  llvm::DenseSet<Operation *> inside(ops.begin(), ops.end());

  llvm::SetVector<Value> inputs;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (!inside.contains(operand.getDefiningOp()))
        inputs.insert(operand);

  OpBuilder builder(group.placeAt ? group.placeAt : group.root);
  Value result = group.root->getResult(0);
  // A GEMM's epilogue as matched, by kernel input: what the CUDA target
  // reads.
  GemmEpilogueAttr epilogue;
  if (group.kind == KernelKind::gemm) {
    // The kernel input an add of the epilogue adds: its operand from
    // outside the group.
    auto inputNumber = [&](Operation *add) -> int64_t {
      if (add)
        for (Value operand : add->getOperands())
          if (!inside.contains(operand.getDefiningOp()))
            return llvm::find(inputs, operand) - inputs.begin();
      return -1;
    };
    // A wide norm's f32 operands are casts in the kernel of its inputs.
    auto outside = [&](Value v) {
      if (auto widen = v ? v.getDefiningOp<CastOp>() : CastOp();
          widen && group.gemmWideNorm && inside.contains(widen))
        return widen.getOperand();
      return v;
    };
    auto numberOf = [&](Value v) -> int64_t {
      v = outside(v);
      return v ? llvm::find(inputs, v) - inputs.begin() : -1;
    };
    Operation *norm = group.gemmNorm;
    int64_t residual = inputNumber(group.gemmResidualAdd);
    if (group.gemmWideNorm)
      for (Value operand : group.gemmResidualAdd->getOperands())
        if (Value input = outside(operand); llvm::is_contained(inputs, input))
          residual = numberOf(input);
    epilogue = GemmEpilogueAttr::get(
        builder.getContext(), inputNumber(group.gemmBiasAdd), residual,
        group.gemmActivation, norm ? numberOf(rowNormScale(norm)) : -1,
        norm ? numberOf(rowNormShift(norm)) : -1, group.gemmTail,
        group.gemmPrologue, group.gemmWideNorm, !group.cacheUpdates.empty());
  }
  SmallVector<Value> results{result};
  if (group.alsoYielded)
    results.push_back(group.alsoYielded->getResult(0));
  for (Operation *op : group.cacheUpdates)
    results.push_back(op->getResult(0));
  for (Operation *op : group.siblings)
    results.push_back(op->getResult(0));
  for (Operation *op : group.sideScalars)
    results.push_back(op->getResult(0));
  auto kernel = KernelOp::create(
      builder, group.root->getLoc(), ValueRange(results).getTypes(),
      KernelKindAttr::get(builder.getContext(), group.kind),
      inputs.getArrayRef(), epilogue);
  Block *body = builder.createBlock(&kernel.getBody());
  IRMapping mapping;
  for (Value input : inputs)
    mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  SmallVector<Value> yielded;
  for (Value v : results)
    yielded.push_back(mapping.lookup(v));
  YieldOp::create(builder, group.root->getLoc(), yielded);

  // Readers outside the group read the kernel's results; the members go.
  for (auto [value, kernelResult] : llvm::zip(results, kernel.getResults()))
    value.replaceUsesWithIf(kernelResult, [&](OpOperand &use) {
      return !inside.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

struct KilnFusePass : public kiln::impl::KilnFusePassBase<KilnFusePass> {
  using KilnFusePassBase::KilnFusePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    llvm::DenseSet<Operation *> taken;
    SmallVector<Group, 0> groups;

    // Weights two readers share (an LM head and the tied embedding's
    // gather, which CSE gave one dequantize): each reader that computes
    // them where it reads them (a 16-bit product's GEMM, a gather, an
    // elementwise op) gets a dequantize of its own, read from the packed
    // bytes, rather than one unpacking of the whole weight into memory.
    // fp32 and f64 products read unpacked floats: they keep sharing one.
    func.walk([](DequantizeOp dequantize) {
      if (isa<KernelOp>(dequantize->getParentOp()))
        return;
      SmallVector<OpOperand *> computing;
      bool unpacked = false;
      for (OpOperand &use : dequantize->getUses()) {
        auto matmul = dyn_cast<MatmulOp>(use.getOwner());
        Type et = getElementTypeOrSelf(dequantize.getType());
        if (matmul && !et.isF16() && !et.isBF16())
          unpacked = true;
        else
          computing.push_back(&use);
      }
      // The original stays with the unpacked readers, else the first one.
      for (OpOperand *use :
           unpacked ? ArrayRef<OpOperand *>(computing)
                    : ArrayRef<OpOperand *>(computing).drop_front()) {
        OpBuilder b(use->getOwner());
        use->set(b.clone(*dequantize)->getResult(0));
      }
    });

    // Activations that 8-bit products read as bytes (qdqOperands): each
    // product gets its own dequantization (a cast, a subtract, a multiply)
    // to take into its GEMM, so that all read the bytes (a layer's Q, K and
    // V projections read one); the original stays for other readers.
    func.walk([](MatmulOp matmul) {
      if (isa<KernelOp>(matmul->getParentOp()))
        return;
      std::optional<QdqOperands> operands = qdqOperands(matmul);
      if (!operands || !operands->weights->hasOneUse() ||
          llvm::all_of(operands->activations.ops,
                       [](Operation *op) { return op->hasOneUse(); }))
        return;
      OpBuilder b(matmul);
      IRMapping mapping;
      Operation *copy = nullptr;
      for (Operation *op : operands->activations.ops)
        copy = b.clone(*op, mapping);
      matmul.getLhsMutable().assign(copy->getResult(0));
      for (Operation *op : llvm::reverse(operands->activations.ops))
        if (op->use_empty())
          op->erase();
    });

    // Attention first: it claims the data movement around it, which would
    // otherwise become copy kernels.
    func.walk([&](AttentionOp attention) {
      if (isa<KernelOp>(attention->getParentOp()))
        return;
      groups.push_back(buildAttentionGroup(attention, taken));
      taken.insert(groups.back().members.begin(), groups.back().members.end());
    });

    // Matmuls with a bias or activation after them next: cuBLASLt applies
    // those in its epilogue, without a trip through memory. An 8-bit
    // product's tail leaves the 8-bit products' activations to them.
    llvm::DenseSet<Operation *> activations;
    func.walk([&](MatmulOp matmul) {
      if (std::optional<QdqOperands> operands = qdqOperands(matmul))
        activations.insert(operands->activations.ops.begin(),
                           operands->activations.ops.end());
    });
    // (Collected first: a tail moves the producers it computes again, which
    // a walk in progress would skip past.)
    SmallVector<MatmulOp> matmuls;
    func.walk([&](MatmulOp matmul) { matmuls.push_back(matmul); });
    for (MatmulOp matmul : matmuls) {
      if (isa<KernelOp>(matmul->getParentOp()) || taken.contains(matmul))
        continue;
      if (std::optional<Group> group =
              buildGemmGroup(matmul, taken, activations, gemmNorm)) {
        taken.insert(group->members.begin(), group->members.end());
        groups.push_back(std::move(*group));
      }
    }

    // The readers left make copies of the scalars they read.
    duplicateCheapScalars(func, taken);

    // Reductions next, so that they claim their epilogues before the
    // elementwise groups below see them.
    func.walk([&](Operation *op) {
      // A GEMM group may have taken a row norm as its epilogue.
      if (!isReduction(op) || isa<KernelOp>(op->getParentOp()) ||
          taken.contains(op))
        return;
      groups.push_back(buildReductionGroup(op, taken));
      taken.insert(groups.back().members.begin(), groups.back().members.end());
    });

    // Then elementwise chains, consumers first so that each chain is grown
    // from its last op.
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (!isa<KernelOp>(op->getParentOp()) && op->getParentOp() == func)
        ops.push_back(op);
    });
    for (Operation *op : llvm::reverse(ops)) {
      if (taken.contains(op))
        continue;
      if (isElementwise(op) || (movesData(op) && !isa<ReshapeOp>(op))) {
        // A lone data-movement op is a copy kernel; with producers fused in,
        // the elementwise generator reads through it.
        Group group{KernelKind::elementwise, op, {}};
        group.members.insert(op);
        group.absorbProducersThroughMoves(SmallVector<Value>(op->getOperands()),
                                          taken);
        if (!isElementwise(op) && group.members.size() == 1)
          group.kind = KernelKind::copy;
        taken.insert(group.members.begin(), group.members.end());
        groups.push_back(std::move(group));
      } else if (auto update = dyn_cast<UpdateSliceOp>(op)) {
        // Writes the rows its update computes, read through the producers
        // that feed it (and its starts) alone; the destination's other
        // rows stay as they are (its storage is the result's).
        Group group{KernelKind::elementwise, op, {}};
        group.members.insert(op);
        SmallVector<Value> seeds{update.getUpdate()};
        if (Value starts = update.getStarts())
          seeds.push_back(starts);
        group.absorbProducersThroughMoves(seeds, taken);
        taken.insert(group.members.begin(), group.members.end());
        groups.push_back(std::move(group));
      } else if (isa<TopKOp>(op)) {
        Group group{KernelKind::sort, op, {}};
        group.members.insert(op);
        taken.insert(op);
        groups.push_back(std::move(group));
      }
    }

    pairCacheUpdates(groups);
    pairScalarKernels(groups);
    mergeScalarKernels(groups);
    mergeSiblingKernels(groups);
    if (gemmCacheUpdate)
      mergeCacheUpdatesIntoGemms(groups);
    for (Group &group : groups)
      outlineGroup(group);
  }
};

} // namespace
