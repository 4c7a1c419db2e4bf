//===- ReductionEmitter.cpp - reduction kernels ---------------------------===//
//
// One block per row: a row is one result element of a reduce or arg op, or one
// normalized slice of a softmax, layer_norm or rms_norm. Softmax and layer_norm
// take three passes over their row, rms_norm two; when the row fits in a few
// elements per thread (kMaxCachedSlots), the first pass reads it from global
// memory once, through the prologue, into registers, and the others read the
// registers: one trip through memory instead of three. Longer rows recompute
// the prologue in each pass. Softmax and norm rows up to 1024 elements take one
// warp each instead, in registers, reduced by shuffles with no block barrier
// (kMaxWarpSlots). The epilogue runs on each result element; where it reads a
// value of the prologue (softmax(-x) * -x, RoBERTa's position ids), it reads
// that value, from the last pass or the row cache, or computed again at its own
// index (BodyEmitter::get), never the kernel's raw input. Floats accumulate in
// their compute type (fp64 for f64, fp32 for the others), integers and booleans
// in 64 bits: unsigned long long for unsigned types, so that they order as
// unsigned values, long long for the others. A reduce or arg op of a few long
// rows splits each row over blocks, the last block of the row to arrive at
// its counter finishing it (splitRows, RowLayout.h).
//
// Why one file of this length: the passes over a row (cached, uncached,
// warp-per-row) share one prologue/epilogue scoping, the rule the paragraph
// above states; kept together so that the rule is kept in one place.
//
//===----------------------------------------------------------------------===//

#include "EmitterSupport.h"
#include "RowLayout.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace kiln {

RowLayout rowLayout(ArrayRef<Size> shape, ArrayRef<bool> reduced) {
  struct Run {
    bool reduced;
    Size size, stride;
  };
  SmallVector<Run> runs;
  Size stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) {
      if (!runs.empty() && runs.back().reduced == reduced[d])
        runs.back().size *= shape[d];
      else
        runs.push_back({reduced[d], shape[d], stride});
    }
    stride *= shape[d];
  }
  RowLayout layout;
  for (const Size &d : shape)
    if (d == 0) {
      // No rows, or empty rows: the loops never read the input.
      for (auto [d, size] : llvm::enumerate(shape))
        (reduced[d] ? layout.length : layout.rows) *= size;
      layout.inputIndex = "0";
      return layout;
    }
  // `runs` is innermost first: each run's coordinate divides by the product
  // of the same-kind runs inside it; the outermost run of each kind needs no
  // modulo.
  SmallVector<std::string> terms;
  for (auto [i, run] : llvm::enumerate(runs)) {
    Size &inner = run.reduced ? layout.length : layout.rows;
    bool outermost = llvm::none_of(ArrayRef(runs).drop_front(i + 1),
                                   [&](const Run &other) {
                                     return other.reduced == run.reduced;
                                   });
    std::string coord = run.reduced ? "j" : "row";
    if (inner != 1)
      coord = llvm::formatv("({0} / {1})", coord, inner);
    if (!outermost)
      coord = llvm::formatv("({0} % {1})", coord, run.size);
    terms.push_back(run.stride == 1
                        ? coord
                        : llvm::formatv("{0} * {1}", coord, run.stride).str());
    inner *= run.size;
  }
  layout.inputIndex =
      terms.empty() ? "0" : llvm::join(llvm::reverse(terms), " + ");
  return layout;
}

namespace {

/// The dims `reduction` reduces over its input.
SmallVector<bool> reducedDims(Operation *reduction) {
  int64_t rank = tensorType(reduction->getOperand(0)).getRank();
  SmallVector<bool> reduced(rank, false);
  if (auto axes = reduction->getAttrOfType<DenseI64ArrayAttr>("axes")) {
    for (int64_t axis : axes.asArrayRef())
      reduced[axis] = true;
  } else if (isRowNorm(reduction)) {
    for (int64_t d = rowNormAxis(reduction); d < rank; ++d)
      reduced[d] = true;
  } else {
    reduced[reduction->getAttrOfType<IntegerAttr>("axis").getInt()] = true;
  }
  return reduced;
}

/// The most row elements one thread keeps in registers for softmax and the
/// norms (rows up to 16 x 256 = 4096 elements: the hidden sizes of
/// today's Transformers).
constexpr int64_t kMaxCachedSlots = 16;

/// Rows of softmax and the norms up to 32 x kMaxWarpSlots elements (BERT's
/// 768 and GPT-2's 1024 hidden sizes) take a warp each, kWarpsPerBlock a
/// block: their reductions are shuffles, with no block barrier.
constexpr int64_t kMaxWarpSlots = 32;
constexpr int64_t kWarpsPerBlock = 4;

} // namespace

int64_t rowBlockSize(int64_t length) {
  return std::clamp<int64_t>((length + 31) / 32 * 32, 32, kBlockSize);
}

namespace {

/// `size` as a float of `f`'s compute type: a literal (`768.0f`) for a
/// static size.
std::string floatOf(const Size &size, const FloatSpelling &f) {
  if (auto value = size.getConstant())
    return f.literal(std::to_string(*value) + ".0");
  return "((" + f.type() + ")" + size.str() + ")";
}

} // namespace

std::string accumulatorType(Type et) {
  if (isa<FloatType>(et))
    return FloatSpelling(et).type();
  return et.isUnsignedInteger() ? "unsigned long long" : "long long";
}

namespace {

/// The C pieces of a reduce op: accumulator type, identity and combining
/// functor (see the prelude).
struct Accumulator {
  std::string type, identity, combine;
};

Accumulator accumulatorFor(Operation *reduction) {
  Type et = tensorType(reduction->getOperand(0)).getElementType();
  Accumulator acc;
  acc.type = accumulatorType(et);
  std::string lowest, highest, zero, one;
  if (isa<FloatType>(et)) {
    FloatSpelling f(et);
    lowest = f.infinity(/*negative=*/true);
    highest = f.infinity();
    zero = f.literal("0.0");
    one = f.literal("1.0");
  } else if (et.isInteger(1)) {
    lowest = zero = "0LL";
    highest = one = "1LL";
  } else if (et.isUnsignedInteger()) {
    unsigned width = et.getIntOrFloatBitWidth();
    lowest = zero = "0ULL";
    highest = llvm::formatv("{0}ULL", ~uint64_t{0} >> (64 - width)).str();
    one = "1ULL";
  } else {
    uint64_t max = (uint64_t{1} << (et.getIntOrFloatBitWidth() - 1)) - 1;
    lowest = llvm::formatv("(-{0}LL - 1)", max).str();
    highest = llvm::formatv("{0}LL", max).str();
    zero = "0LL";
    one = "1LL";
  }
  if (isa<ReduceMaxOp>(reduction))
    acc.identity = lowest, acc.combine = "kiln_max_op()";
  else if (isa<ReduceMinOp>(reduction))
    acc.identity = highest, acc.combine = "kiln_min_op()";
  else if (isa<ReduceProdOp>(reduction))
    acc.identity = one, acc.combine = "kiln_prod_op()";
  else
    acc.identity = zero, acc.combine = "kiln_sum_op()";
  return acc;
}

/// The blocks each row of `reduction` splits into (splitRows) where it is
/// a reduce or arg op; 0 for softmax, the norms and cumsum.
int64_t splitRowParts(Operation *reduction, const RowLayout &layout) {
  if (!isa<ReduceMaxOp, ReduceMinOp, ReduceSumOp, ReduceMeanOp, ReduceProdOp,
           ArgMaxOp, ArgMinOp>(reduction))
    return 0;
  return splitRows(layout);
}

} // namespace

int64_t splitRows(const RowLayout &layout) {
  int64_t rows = layout.rows.upper(), length = layout.length.upper();
  if (rows < 1 || rows > kSplitRowsMost || length <= kSplitLengthLeast)
    return 0;
  return std::min((length + kSplitShare - 1) / kSplitShare, kSplitPartsMost);
}

FailureOr<LaunchGeometry> emitReduction(KernelOp kernel, StringRef name,
                                        llvm::raw_ostream &os) {
  Block &block = kernel.getBody().front();
  Operation *reduction = nullptr;
  for (Operation &op : block.without_terminator())
    if (isReduction(&op)) {
      if (reduction)
        return kernel.emitOpError("holds more than one reduction");
      reduction = &op;
    }
  if (!reduction)
    return kernel.emitOpError("reduction kernel without a reduction");
  Value input = reduction->getOperand(0);
  Sizes inShape = sizesOf(input);
  Sizes outShape = sizesOf(reduction->getResult(0));
  RowLayout layout = rowLayout(inShape, reducedDims(reduction));
  // Softmax and the norms produce one result per input element; the others
  // one per row.
  bool perElement =
      isa<SoftmaxOp, LogSoftmaxOp>(reduction) || isRowNorm(reduction);

  // Prologue ops come before the reduction, epilogue ops after it.
  SmallVector<Operation *> prologue, epilogue;
  bool after = false;
  for (Operation &op : block.without_terminator()) {
    if (&op == reduction) {
      after = true;
      continue;
    }
    if (after && sizesOf(op.getResult(0)) != outShape)
      return op.emitOpError("does not compute at its reduction's shape");
    (after ? epilogue : prologue).push_back(&op);
  }
  // A prologue of elementwise ops at the input's shape is emitted op by op;
  // one with data movement (or ops at other shapes behind it) computes the
  // input element through it.
  bool prologueInOrder = llvm::all_of(prologue, [&](Operation *op) {
    return isElementwise(op) && sizesOf(op->getResult(0)) == inShape;
  });

  // Softmax, the norms and reduce_mean compute in their float compute type.
  FloatSpelling f(tensorType(input).getElementType());
  std::string ft = f.type();
  BodyEmitter body(kernel, os);
  // A row norm's kernel may also yield the norm's input, or a cast of it,
  // for later readers (kiln-fuse's sharedNormInput): written in the first
  // pass over the row, once an element, where that pass computes it.
  Value shared =
      kernel.getNumResults() > 1 ? kernel.getYield().getValues()[1] : Value();
  auto sharedCast = shared ? shared.getDefiningOp<CastOp>() : CastOp();
  if (shared &&
      (!isRowNorm(reduction) ||
       (shared != input && !(sharedCast && sharedCast.getInput() == input))))
    return kernel.emitOpError("yields a second value that is not its row "
                              "norm's input or a cast of it");
  auto writeShared = [&](const std::string &x) -> LogicalResult {
    if (!shared)
      return success();
    std::string value = x;
    if (sharedCast) {
      // Cast from the row element this pass holds.
      body.bind(input, x);
      if (failed(body.emit(sharedCast, "x_idx", inShape, "      ")))
        return failure();
      FailureOr<std::string> cast =
          body.get(shared, "x_idx", inShape, "      ");
      if (failed(cast))
        return failure();
      value = *cast;
    }
    os << "      out1[x_idx] = "
       << storeExpr(tensorType(shared).getElementType(), value) << ";\n";
    return success();
  };

  auto emitPrologue = [&](const std::string &indent) -> FailureOr<std::string> {
    body.reset();
    if (!prologueInOrder)
      return body.getAt(input, "x_idx", indent);
    for (Operation *op : prologue)
      if (failed(body.emit(op, "x_idx", inShape, indent)))
        return failure();
    return body.get(input, "x_idx", inShape, indent);
  };
  // Softmax and norm rows a warp keeps in registers take a warp each
  // (kWarpsPerBlock rows a block, reduced by shuffles without a barrier);
  // other rows a block each. `lane` and `lanes` are a thread's place in its
  // row's group and the group's size.
  int64_t rowLength = layout.length.upper();
  bool warpPerRow =
      perElement && rowLength > 0 && rowLength <= 32 * kMaxWarpSlots;
  std::string lane = warpPerRow ? "lane" : "threadIdx.x";
  std::string lanes = warpPerRow ? "32" : "blockDim.x";
  auto loopOpen = [&](const std::string &what) {
    os << "    // " << what << "\n"
       << "    for (long long j = " << lane << "; j < " << layout.length
       << "; j += " << lanes << ") {\n"
       << "      long long x_idx = " << layout.inputIndex << ";\n";
  };
  // Softmax and the norms keep the row in `row_cache` (slot t holds the
  // thread's element lane + t * lanes) when it fits (at the top of the
  // ranges, for a symbolic row).
  int64_t blockSize = warpPerRow ? 32 : rowBlockSize(rowLength);
  int64_t slots = (rowLength + blockSize - 1) / blockSize;
  bool cacheRow =
      slots > 0 && slots <= (warpPerRow ? kMaxWarpSlots : kMaxCachedSlots);
  auto cachedLoopOpen = [&](const std::string &what, bool needsIndex) {
    os << "    // " << what << "\n"
       << "#pragma unroll\n"
       << "    for (int t = 0; t < " << slots << "; ++t) {\n"
       << "      long long j = " << lane << " + (long long)t * " << lanes
       << ";\n"
       << "      if (j >= " << layout.length << ") break;\n";
    if (needsIndex)
      os << "      long long x_idx = " << layout.inputIndex << ";\n";
  };
  // The row element of the current pass: computed through the prologue (and
  // stored in the cache) in the first pass, read from the cache after.
  auto rowElement = [&](bool firstPass) -> FailureOr<std::string> {
    if (!cacheRow)
      return emitPrologue("      ");
    if (firstPass) {
      auto x = emitPrologue("      ");
      if (succeeded(x))
        os << "      row_cache[t] = " << *x << ";\n";
      return x;
    }
    body.reset();
    std::string name = body.fresh();
    os << "      " << f.type() << " " << name << " = row_cache[t];\n";
    // An epilogue that reads the row element itself reads the cache too.
    body.bind(input, name);
    return name;
  };
  // Opens a pass over the row; a cached pass that only reads the cache
  // (`needsIndex` false) has no use for the element's input index.
  auto passOpen = [&](const std::string &what, bool needsIndex = true) {
    if (cacheRow)
      cachedLoopOpen(what, needsIndex);
    else
      loopOpen(what);
  };
  auto declareCache = [&](const std::string &type) {
    if (cacheRow)
      os << "    " << type << " row_cache[" << slots << "];\n";
  };

  // The loop over this thread's rows, and the row's reductions.
  auto rowLoopOpen = [&]() {
    if (warpPerRow)
      os << "  const int lane = threadIdx.x & 31;\n"
         << "  for (long long row = (long long)blockIdx.x * " << kWarpsPerBlock
         << " + (threadIdx.x >> 5); row < " << layout.rows
         << "; row += (long long)gridDim.x * " << kWarpsPerBlock << ") {\n";
    else
      os << "  __shared__ " << ft << " scratch[32];\n"
         << "  for (long long row = blockIdx.x; row < " << layout.rows
         << "; row += gridDim.x) {\n";
  };
  auto rowReduce = [&](const char *op, const std::string &value) {
    return warpPerRow
               ? llvm::formatv("kiln_warp_{0}({1})", op, value).str()
               : llvm::formatv("kiln_block_{0}({1}, scratch)", op, value).str();
  };

  // A reduce or arg op of few long rows splits each row over blocks: the
  // blocks' partial results (an arg op's positions, then its values) go to
  // scratch.
  int64_t splitParts = splitRowParts(reduction, layout);
  if (splitParts) {
    std::string partialType = isa<ArgMaxOp, ArgMinOp>(reduction)
                                  ? "long long"
                                  : accumulatorFor(reduction).type;
    os << "// The arrivals at each row of " << name << " (a split reduction).\n"
       << "KILN_PER_CONTEXT unsigned int " << name << "_arrived["
       << layout.rows.upper() << "];\n";
    emitSignature(
        kernel, name, os,
        storageType(tensorType(kernel.getResult(0)).getElementType()) +
            " *__restrict__ out0, " + partialType + " *__restrict__ partials");
  } else {
    emitSignature(kernel, name, os);
  }
  std::string valueName;
  auto fail = [&]() -> FailureOr<LaunchGeometry> { return failure(); };
  if (isa<SoftmaxOp, LogSoftmaxOp>(reduction)) {
    rowLoopOpen();
    os << "    " << ft << " row_max = " << f.infinity(/*negative=*/true)
       << ";\n";
    declareCache(ft);
    passOpen("pass 1: the row's maximum, for a stable exponent");
    auto x = rowElement(/*firstPass=*/true);
    if (failed(x))
      return fail();
    os << "      row_max = kiln_fmax(row_max, " << *x << ");\n    }\n"
       << "    row_max = " << rowReduce("max", "row_max") << ";\n"
       << "    " << ft << " row_sum = " << f.literal("0.0") << ";\n";
    passOpen("pass 2: the sum of exponents", /*needsIndex=*/false);
    x = rowElement(/*firstPass=*/false);
    if (failed(x))
      return fail();
    os << "      row_sum += " << f.fn("exp") << "(" << *x
       << " - row_max);\n    }\n"
       << "    row_sum = " << rowReduce("sum", "row_sum") << ";\n";
    passOpen("pass 3: normalize");
    x = rowElement(/*firstPass=*/false);
    if (failed(x))
      return fail();
    valueName = body.fresh();
    if (isa<LogSoftmaxOp>(reduction))
      os << "      " << ft << " " << valueName << " = " << *x << " - row_max - "
         << f.fn("log") << "(row_sum);\n";
    else
      os << "      " << ft << " " << valueName << " = " << f.fn("exp") << "("
         << *x << " - row_max) / row_sum;\n";
  } else if (isRowNorm(reduction)) {
    // LayerNorm centers each element on the row's mean; RMSNorm does not,
    // and has no shift.
    auto layerNorm = dyn_cast<LayerNormOp>(reduction);
    std::string length = floatOf(layout.length, f);
    // Epsilon is an f32 attribute; a double kernel gets its exact value.
    APFloat epsilonValue = rowNormEpsilon(reduction);
    std::string epsilon =
        ft == "double"
            ? llvm::formatv("{0:e16}", epsilonValue.convertToDouble()).str()
            : floatLiteral(epsilonValue.convertToFloat());
    rowLoopOpen();
    declareCache(ft);
    if (layerNorm) {
      // The mean is the row's first element plus the mean of the others'
      // differences from it: every thread computes that element itself (no
      // barrier). A rounding of the sum then scales with the row's spread,
      // not its magnitude, and a constant row centers to exactly zero, as
      // the fp64 mean of the reference makes it; a rounded fp32 mean times
      // 1/sqrt(epsilon) was 3.7e-5 from it (the differential fuzz target).
      os << "    " << ft << " shift = " << f.literal("0.0") << ";\n";
      if (layout.length.isConstant() && *layout.length.getConstant() > 0)
        os << "    {\n";
      else
        os << "    if (" << layout.length << " > 0) {\n";
      os << "      long long j = 0;\n"
         << "      long long x_idx = " << layout.inputIndex << ";\n";
      auto first = emitPrologue("      ");
      if (failed(first))
        return fail();
      os << "      shift = " << *first << ";\n    }\n"
         << "    " << ft << " row_sum = " << f.literal("0.0") << ";\n";
      passOpen("pass 1: mean");
      auto x = rowElement(/*firstPass=*/true);
      if (failed(x))
        return fail();
      if (failed(writeShared(*x)))
        return fail();
      os << "      row_sum += " << *x << " - shift;\n    }\n"
         << "    " << ft << " mean = shift + " << rowReduce("sum", "row_sum")
         << " / " << length << ";\n";
    }
    // LayerNorm's second pass over the row: the centered variance loses
    // nothing to cancellation when the mean is large.
    os << "    " << ft << " row_sq = " << f.literal("0.0") << ";\n";
    passOpen(layerNorm ? "pass 2: variance" : "pass 1: mean square",
             /*needsIndex=*/!layerNorm);
    auto x = rowElement(/*firstPass=*/!layerNorm);
    if (failed(x))
      return fail();
    if (!layerNorm && failed(writeShared(*x)))
      return fail();
    if (layerNorm)
      os << "      " << ft << " centered = " << *x << " - mean;\n"
         << "      row_sq += centered * centered;\n    }\n";
    else
      os << "      row_sq += " << *x << " * " << *x << ";\n    }\n";
    os << "    " << ft << " inv_std = " << f.fn("rsqrt") << "("
       << rowReduce("sum", "row_sq") << " / " << length << " + " << epsilon
       << ");\n";
    passOpen(layerNorm ? "pass 3: normalize, scale and shift"
                       : "pass 2: normalize and scale");
    x = rowElement(/*firstPass=*/false);
    if (failed(x))
      return fail();
    // Scale and bias are inputs or computed in the kernel (a prologue that
    // also feeds the row), read at their broadcast index either way.
    FailureOr<std::string> scale =
        body.get(reduction->getOperand(1), "x_idx", inShape, "      ");
    if (failed(scale))
      return fail();
    if (!layerNorm) {
      valueName = body.fresh();
      os << "      " << ft << " " << valueName << " = " << *x << " * inv_std * "
         << *scale << ";\n";
    } else {
      FailureOr<std::string> shift =
          layerNorm.getBias()
              ? body.get(layerNorm.getBias(), "x_idx", inShape, "      ")
              : FailureOr<std::string>(f.literal("0.0"));
      if (failed(shift))
        return fail();
      valueName = body.fresh();
      os << "      " << ft << " " << valueName << " = (" << *x
         << " - mean) * inv_std * " << *scale << " + " << *shift << ";\n";
    }
  } else if (auto cumsum = dyn_cast<CumSumOp>(reduction)) {
    // The row in chunks of blockDim.x: a block-wide inclusive scan of each
    // chunk plus the carry of the chunks before it. Scan position p reads
    // row position p (p - 1 when exclusive), mirrored when reversed.
    // Floats sum in double: every prefix is an output, and a long row's
    // prefixes cancel (the sum of thousands of terms of either sign), so a
    // float carry's rounding would be most of a small prefix's value. The
    // kernel is bound by its memory traffic, and Hopper's double rate is
    // half its float rate.
    Type et = tensorType(input).getElementType();
    std::string type = isa<FloatType>(et) ? "double" : accumulatorType(et);
    Size length = layout.length;
    auto position = [&](const std::string &p) {
      return cumsum.getReverse()
                 ? llvm::formatv("({0} - 1 - {1})", length, p).str()
                 : p;
    };
    os << "  __shared__ " << type << " scratch[32];\n"
       << "  for (long long row = blockIdx.x; row < " << layout.rows
       << "; row += gridDim.x) {\n"
       << "    " << type << " carry = 0;\n"
       << "    for (long long chunk = 0; chunk < " << length
       << "; chunk += blockDim.x) {\n"
       << "      long long p = chunk + threadIdx.x;\n"
       << "      long long source = p" << (cumsum.getExclusive() ? " - 1" : "")
       << ";\n"
       << "      " << type << " term = 0;\n"
       << "      if (p < " << length << " && source >= 0) {\n"
       << "        long long j = " << position("source") << ";\n"
       << "        long long x_idx = " << layout.inputIndex << ";\n";
    auto x = emitPrologue("        ");
    if (failed(x))
      return fail();
    os << "        term = (" << type << ")" << *x << ";\n      }\n"
       << "      " << type << " total;\n"
       << "      " << type
       << " scanned = kiln_add(carry, kiln_block_inclusive_scan(term, "
          "scratch, &total));\n"
       << "      carry = kiln_add(carry, total);\n"
       << "      if (p < " << length << ") {\n"
       << "        long long j = " << position("p") << ";\n"
       << "        long long x_idx = " << layout.inputIndex << ";\n";
    valueName = body.fresh();
    os << "        " << computeType(et) << " " << valueName << " = ("
       << computeType(et) << ")scanned;\n";
    // Per element like softmax, one nesting level deeper. The prologue
    // above ran at the scan's source position, in another block: the
    // epilogue computes any prologue value it reads at its own.
    body.reset();
    body.bind(reduction->getResult(0), valueName);
    for (Operation *op : epilogue)
      if (failed(body.emit(op, "x_idx", outShape, "        ")))
        return fail();
    Value yielded = kernel.getYield().getValues()[0];
    FailureOr<std::string> result =
        body.get(yielded, "x_idx", outShape, "        ");
    if (failed(result))
      return fail();
    os << "        out0[x_idx] = "
       << storeExpr(tensorType(yielded).getElementType(), *result)
       << ";\n      }\n    }\n  }\n}\n";
    LaunchGeometry geometry;
    setGridDim(geometry, 0, layout.rows, 1, kMaxGrid);
    geometry.block[0] = static_cast<uint32_t>(rowBlockSize(length.upper()));
    return geometry;
  } else if (isa<ArgMaxOp, ArgMinOp>(reduction) && splitParts) {
    // As a split reduction (below), each block's best and its position:
    // positions first, then the values.
    std::string type = accumulatorType(tensorType(input).getElementType());
    std::string params = llvm::formatv(
        "<{0}, {1}>", isa<ArgMaxOp>(reduction) ? "true" : "false",
        reduction->getAttrOfType<BoolAttr>("select_last_index").getValue()
            ? "true"
            : "false");
    std::string slot = "row * gridDim.x + ";
    os << "  __shared__ " << type << " scratch_value[32];\n"
       << "  __shared__ long long scratch_index[32];\n"
       << "  __shared__ bool last_block;\n"
       << "  " << type << " *const values = reinterpret_cast<" << type
       << " *>(partials + " << layout.rows.upper() * splitParts << "LL);\n"
       << "  const long long share = (" << layout.length
       << " + gridDim.x - 1) / gridDim.x;\n"
       << "  const long long begin = (long long)blockIdx.x * share;\n"
       << "  const long long end = begin + share < " << layout.length
       << " ? begin + share : " << layout.length << ";\n"
       << "  for (long long row = blockIdx.y; row < " << layout.rows
       << "; row += gridDim.y) {\n"
       << "    " << type << " best = 0;\n"
       << "    long long best_j = -1;\n"
       << "    // the best element of this block's share and its position\n"
       << "    for (long long j = begin + threadIdx.x; j < end; j += "
          "blockDim.x) {\n"
       << "      long long x_idx = " << layout.inputIndex << ";\n";
    auto x = emitPrologue("      ");
    if (failed(x))
      return fail();
    os << "      if (kiln_arg_better" << params << "((" << type << ")" << *x
       << ", j, best, best_j)) {\n"
       << "        best = " << *x << ";\n        best_j = j;\n      }\n    }\n"
       << "    best_j = kiln_block_arg" << params
       << "(best, best_j, scratch_value, scratch_index);\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      partials[" << slot << "blockIdx.x] = best_j;\n"
       << "      values[" << slot << "blockIdx.x] = best;\n"
       << "      __threadfence();\n"
       << "      last_block = atomicInc(&" << name
       << "_arrived[row], gridDim.x - 1) == gridDim.x - 1;\n"
       << "      __threadfence();\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << "    if (last_block) {\n"
       << "    __threadfence();\n"
       << "    best = 0;\n"
       << "    best_j = -1;\n"
       << "    for (long long p = threadIdx.x; p < gridDim.x; p += blockDim.x) "
          "{\n"
       << "      const long long i = __ldcg(&partials[" << slot << "p]);\n"
       << "      const " << type << " v = __ldcg(&values[" << slot << "p]);\n"
       << "      if (kiln_arg_better" << params << "(v, i, best, best_j)) {\n"
       << "        best = v;\n        best_j = i;\n      }\n    }\n"
       << "    best_j = kiln_block_arg" << params
       << "(best, best_j, scratch_value, scratch_index);\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      long long out_idx = row;\n";
    valueName = body.fresh();
    os << "      long long " << valueName << " = best_j;\n";
  } else if (isa<ArgMaxOp, ArgMinOp>(reduction)) {
    std::string type = accumulatorType(tensorType(input).getElementType());
    std::string params = llvm::formatv(
        "<{0}, {1}>", isa<ArgMaxOp>(reduction) ? "true" : "false",
        reduction->getAttrOfType<BoolAttr>("select_last_index").getValue()
            ? "true"
            : "false");
    os << "  __shared__ " << type << " scratch_value[32];\n"
       << "  __shared__ long long scratch_index[32];\n"
       << "  for (long long row = blockIdx.x; row < " << layout.rows
       << "; row += gridDim.x) {\n"
       << "    " << type << " best = 0;\n"
       << "    long long best_j = -1;\n";
    loopOpen("the best element of the row and its position");
    auto x = emitPrologue("      ");
    if (failed(x))
      return fail();
    os << "      if (kiln_arg_better" << params << "((" << type << ")" << *x
       << ", j, best, best_j)) {\n"
       << "        best = " << *x << ";\n        best_j = j;\n      }\n    }\n"
       << "    best_j = kiln_block_arg" << params
       << "(best, best_j, scratch_value, scratch_index);\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      long long out_idx = row;\n";
    valueName = body.fresh();
    os << "      long long " << valueName << " = best_j;\n";
  } else if (splitParts) {
    // Few long rows: each row's blocks reduce a share of it each into
    // `partials`, and the block that arrives last at the row's counter
    // (a per-context global that the module's load zeroes, and atomicInc's
    // wrap leaves zero again for the next launch) reduces the partials and
    // runs the epilogue: one launch, where a kernel of the rows' results
    // would be a second. The fence orders each block's partial before its
    // arrival (CUDA's threadFenceReduction sample); the last block reads
    // them through L2 (__ldcg).
    Accumulator acc = accumulatorFor(reduction);
    std::string identity = "(" + acc.type + ")" + acc.identity;
    os << "  __shared__ " << acc.type << " scratch[32];\n"
       << "  __shared__ bool last_block;\n"
       << "  const long long share = (" << layout.length
       << " + gridDim.x - 1) / gridDim.x;\n"
       << "  const long long begin = (long long)blockIdx.x * share;\n"
       << "  const long long end = begin + share < " << layout.length
       << " ? begin + share : " << layout.length << ";\n"
       << "  for (long long row = blockIdx.y; row < " << layout.rows
       << "; row += gridDim.y) {\n"
       << "    " << acc.type << " acc = " << acc.identity << ";\n"
       << "    // this block's share of the row's reduction\n"
       << "    for (long long j = begin + threadIdx.x; j < end; j += "
          "blockDim.x) {\n"
       << "      long long x_idx = " << layout.inputIndex << ";\n";
    auto x = emitPrologue("      ");
    if (failed(x))
      return fail();
    os << "      acc = " << acc.combine << "(acc, (" << acc.type << ")" << *x
       << ");\n    }\n"
       << "    acc = kiln_block_reduce(acc, " << identity << ", scratch, "
       << acc.combine << ");\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      partials[row * gridDim.x + blockIdx.x] = acc;\n"
       << "      __threadfence();\n"
       << "      last_block = atomicInc(&" << name
       << "_arrived[row], gridDim.x - 1) == gridDim.x - 1;\n"
       << "      __threadfence();\n"
       << "    }\n"
       << "    __syncthreads();\n"
       << "    if (last_block) {\n"
       << "    __threadfence();\n"
       << "    acc = " << acc.identity << ";\n"
       << "    for (long long p = threadIdx.x; p < gridDim.x; p += "
          "blockDim.x)\n"
       << "      acc = " << acc.combine
       << "(acc, __ldcg(&partials[row * gridDim.x + p]));\n"
       << "    acc = kiln_block_reduce(acc, " << identity << ", scratch, "
       << acc.combine << ");\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      long long out_idx = row;\n";
    valueName = body.fresh();
    Type resultType = tensorType(reduction->getResult(0)).getElementType();
    std::string value = "acc";
    if (isa<ReduceMeanOp>(reduction))
      value = "acc / " + floatOf(layout.length, f);
    os << "      " << computeType(resultType) << " " << valueName << " = ("
       << computeType(resultType) << ")" << value << ";\n";
  } else {
    Accumulator acc = accumulatorFor(reduction);
    os << "  __shared__ " << acc.type << " scratch[32];\n"
       << "  for (long long row = blockIdx.x; row < " << layout.rows
       << "; row += gridDim.x) {\n"
       << "    " << acc.type << " acc = " << acc.identity << ";\n";
    loopOpen("the row's reduction");
    auto x = emitPrologue("      ");
    if (failed(x))
      return fail();
    os << "      acc = " << acc.combine << "(acc, (" << acc.type << ")" << *x
       << ");\n    }\n"
       << "    acc = kiln_block_reduce(acc, (" << acc.type << ")"
       << acc.identity << ", scratch, " << acc.combine << ");\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      long long out_idx = row;\n";
    valueName = body.fresh();
    Type resultType = tensorType(reduction->getResult(0)).getElementType();
    std::string value = "acc";
    if (isa<ReduceMeanOp>(reduction))
      value = "acc / " + floatOf(layout.length, f);
    os << "      " << computeType(resultType) << " " << valueName << " = ("
       << computeType(resultType) << ")" << value << ";\n";
  }

  // The epilogue computes at the reduction's result shape. A per-element
  // kernel's shares the last pass's block and index: the prologue values
  // that pass computed are the ones it reads. Another kernel's epilogue runs
  // once per row, after the row's loop: it computes any prologue value it
  // reads at its own index (BodyEmitter::get).
  std::string outIdx = perElement ? "x_idx" : "out_idx";
  if (!perElement)
    body.reset();
  body.bind(reduction->getResult(0), valueName);
  for (Operation *op : epilogue)
    if (op->getResult(0) != shared &&
        failed(body.emit(op, outIdx, outShape, "      ")))
      return fail();
  Value yielded = kernel.getYield().getValues()[0];
  FailureOr<std::string> result = body.get(yielded, outIdx, outShape, "      ");
  if (failed(result))
    return fail();
  os << "      out0[" << outIdx
     << "] = " << storeExpr(tensorType(yielded).getElementType(), *result)
     << ";\n    }\n"
     << (splitParts ? "    }\n" : "") << "  }\n}\n";

  LaunchGeometry geometry;
  if (splitParts) {
    geometry.grid[0] = static_cast<uint32_t>(splitParts);
    setGridDim(geometry, 1, layout.rows, 1, kMaxGrid);
    geometry.block[0] = static_cast<uint32_t>(kBlockSize);
    // Arg ops keep a position and a value a block.
    geometry.splitPartials = layout.rows.upper() * splitParts *
                             (isa<ArgMaxOp, ArgMinOp>(reduction) ? 2 : 1);
    return geometry;
  }
  if (warpPerRow) {
    setGridDim(geometry, 0, layout.rows, kWarpsPerBlock, kMaxGrid);
    geometry.block[0] = static_cast<uint32_t>(32 * kWarpsPerBlock);
    return geometry;
  }
  setGridDim(geometry, 0, layout.rows, 1, kMaxGrid);
  geometry.block[0] = static_cast<uint32_t>(blockSize);
  return geometry;
}

} // namespace kiln
