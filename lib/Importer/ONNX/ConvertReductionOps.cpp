//===- ConvertReductionOps.cpp - reductions, scans, top-k, (Log)Softmax ---===//
//
// The five primitive reductions map to kiln.reduce_*; ReduceL1, L2, LogSum,
// LogSumExp and SumSquare are written as their definitions around a
// reduce_sum (or reduce_max), which kiln-fuse folds back into one kernel as
// the reduction's prologue and epilogue. GlobalAveragePool and GlobalMaxPool
// are a reduce_mean and a reduce_max over the spatial dims.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"


using namespace mlir;

namespace kiln {

namespace {

struct ReductionConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// The opset from which the op takes `axes` as its second input instead
  /// of an attribute.
  int64_t axesInputOpset() const {
    return node.op_type() == "ReduceSum" ? 13 : 18;
  }

  /// The reduced axes, sorted and unique; an empty list when the node asks
  /// for no reduction at all (noop_with_empty_axes).
  FailureOr<SmallVector<int64_t>> reducedAxes(int64_t rank) {
    std::optional<SmallVector<int64_t>> axes;
    bool axesInput = importer.opset() >= axesInputOpset();
    if (axesInput) {
      if (Value given = importer.input(node, 1)) {
        auto ints = importer.constantInts(given);
        if (failed(ints))
          return error() << "axes must be a constant";
        axes = *ints;
      }
    } else {
      axes = intsAttr("axes");
    }
    if (!axes || axes->empty()) {
      if (axesInput && intAttr("noop_with_empty_axes", 0))
        return SmallVector<int64_t>();
      axes = SmallVector<int64_t>();
      for (int64_t d = 0; d < rank; ++d)
        axes->push_back(d);
    }
    for (int64_t &a : *axes) {
      auto resolved = axis(a, rank);
      if (failed(resolved))
        return failure();
      a = *resolved;
    }
    llvm::sort(*axes);
    axes->erase(std::unique(axes->begin(), axes->end()), axes->end());
    return *axes;
  }

  template <typename OpTy>
  FailureOr<Value> reduce(Value x, ArrayRef<int64_t> axes, bool keepdims) {
    auto type = inferReduceType(loc, typeOf(x), axes, keepdims);
    if (failed(type))
      return failure();
    return OpTy::create(b, loc, *type, x, axes, keepdims).getResult();
  }

  LogicalResult requireFloat(Value x) {
    if (!isa<FloatType>(typeOf(x).getElementType()))
      return error() << "integer inputs are not supported (got "
                     << typeOf(x).getElementType() << ")";
    return success();
  }

  LogicalResult convertReduce() {
    auto x = required(0);
    if (failed(x))
      return failure();
    auto axes = reducedAxes(typeOf(*x).getRank());
    if (failed(axes))
      return failure();
    StringRef op = node.op_type();
    bool keepdims = intAttr("keepdims", 1) != 0;
    // noop_with_empty_axes: the primitive reductions pass the input through;
    // the composite ones still apply their element functions.
    bool noop = axes->empty();
    if (noop && (op == "ReduceSum" || op == "ReduceMean" ||
                 op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd"))
      return output(*x);

    if (op == "ReduceL1" || op == "ReduceSumSquare" || op == "ReduceL2") {
      if (op == "ReduceL2" && failed(requireFloat(*x)))
        return failure();
      Value term = op == "ReduceL1" ? AbsOp::create(b, loc, *x).getResult()
                                    : MulOp::create(b, loc, *x, *x).getResult();
      if (noop)
        return output(op == "ReduceL2" ? SqrtOp::create(b, loc, term) : term);
      auto sum = reduce<ReduceSumOp>(term, *axes, keepdims);
      if (failed(sum))
        return failure();
      return output(op == "ReduceL2" ? SqrtOp::create(b, loc, *sum) : *sum);
    }
    if (op == "ReduceLogSum") {
      if (failed(requireFloat(*x)))
        return failure();
      if (noop)
        return output(LogOp::create(b, loc, *x));
      auto sum = reduce<ReduceSumOp>(*x, *axes, keepdims);
      if (failed(sum))
        return failure();
      return output(LogOp::create(b, loc, *sum));
    }
    if (op == "ReduceLogSumExp")
      return convertLogSumExp(*x, *axes, keepdims);

    FailureOr<Value> result = failure();
    if (op == "ReduceSum")
      result = reduce<ReduceSumOp>(*x, *axes, keepdims);
    else if (op == "ReduceMean")
      result = reduce<ReduceMeanOp>(*x, *axes, keepdims);
    else if (op == "ReduceMax")
      result = reduce<ReduceMaxOp>(*x, *axes, keepdims);
    else if (op == "ReduceMin")
      result = reduce<ReduceMinOp>(*x, *axes, keepdims);
    else if (op == "ReduceProd")
      result = reduce<ReduceProdOp>(*x, *axes, keepdims);
    else
      return error() << "no converter";
    if (failed(result))
      return failure();
    return output(*result);
  }

  /// GlobalAveragePool and GlobalMaxPool: the mean or the maximum over every
  /// spatial dim of X [N, C, D1, ..., Dn], each kept as 1 (a CNN's or
  /// Swin's pooling head).
  template <typename OpTy> LogicalResult convertGlobalPool() {
    auto x = required(0);
    if (failed(x) || failed(requireFloat(*x)))
      return failure();
    int64_t rank = typeOf(*x).getRank();
    if (rank < 3)
      return error() << "X must be [N, C, D1, ...], got rank " << rank;
    SmallVector<int64_t> spatial;
    for (int64_t d = 2; d < rank; ++d)
      spatial.push_back(d);
    auto pooled = reduce<OpTy>(*x, spatial, /*keepdims=*/true);
    if (failed(pooled))
      return failure();
    return output(*pooled);
  }

  /// log(sum(exp(x))) shifted by the maximum, m + log(sum(exp(x - m))), so
  /// that exp cannot overflow.
  LogicalResult convertLogSumExp(Value x, ArrayRef<int64_t> axes,
                                 bool keepdims) {
    if (failed(requireFloat(x)))
      return failure();
    if (axes.empty())
      return output(x); // log(exp(x)) element by element
    auto max = reduce<ReduceMaxOp>(x, axes, /*keepdims=*/true);
    if (failed(max))
      return failure();
    Value shifted = ExpOp::create(b, loc, SubOp::create(b, loc, x, *max));
    auto sum = reduce<ReduceSumOp>(shifted, axes, keepdims);
    if (failed(sum))
      return failure();
    Value maxAtResult = reshape(*max, *symbolicShapeOf(typeOf(*sum)));
    return output(
        AddOp::create(b, loc, LogOp::create(b, loc, *sum), maxAtResult));
  }

  template <typename OpTy>
  LogicalResult convertArgReduce() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType type = typeOf(*x);
    auto ax = axis(intAttr("axis", 0), type.getRank());
    if (failed(ax))
      return failure();
    if (type.getDimSize(*ax) == 0)
      return error() << "axis " << *ax << " has no elements to pick from";
    bool keepdims = intAttr("keepdims", 1) != 0;
    bool last = intAttr("select_last_index", 0) != 0;
    auto shape = inferReduceType(loc, type, {*ax}, keepdims);
    if (failed(shape))
      return failure();
    auto resultType = shape->clone(b.getIntegerType(64));
    return output(OpTy::create(b, loc, resultType, *x, *ax, keepdims, last));
  }

  /// Softmax and LogSoftmax; before opset 13 they normalize the input
  /// flattened to 2-D at `axis`.
  template <typename OpTy>
  LogicalResult convertSoftmax() {
    auto x = required(0);
    if (failed(x))
      return failure();
    bool legacy = importer.opset() < 13;
    auto ax = axis(intAttr("axis", legacy ? 1 : -1), typeOf(*x).getRank());
    if (failed(ax))
      return failure();
    auto y = softmaxAt<OpTy>(*x, *ax, legacy);
    if (failed(y))
      return failure();
    return output(*y);
  }

  /// A constant integer input holding one value (CumSum's axis, TopK's K).
  FailureOr<int64_t> constantScalar(int i, StringRef what) {
    auto value = required(i);
    if (failed(value))
      return failure();
    auto ints = importer.constantInts(*value);
    if (failed(ints) || ints->size() != 1)
      return error() << what << " must be a constant holding one integer";
    return ints->front();
  }

  LogicalResult convertCumSum() {
    auto x = required(0);
    auto given = constantScalar(1, "axis");
    if (failed(x) || failed(given))
      return failure();
    auto ax = axis(*given, typeOf(*x).getRank());
    if (failed(ax))
      return failure();
    return output(CumSumOp::create(b, loc, *x, *ax, intAttr("exclusive", 0) != 0,
                                   intAttr("reverse", 0) != 0));
  }

  /// TopK as kiln.top_k (the positions), then the values gathered at them.
  LogicalResult convertTopK() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType type = typeOf(*x);
    auto ax = axis(intAttr("axis", -1), type.getRank());
    if (failed(ax))
      return failure();
    FailureOr<int64_t> k = importer.opset() >= 10 ? constantScalar(1, "K")
                                                  : intAttr("k", -1);
    if (failed(k))
      return failure();
    // The other dims may be symbolic (a decoder's batch); the sorted one
    // is not.
    if (type.isDynamicDim(*ax))
      return error() << "axis " << *ax << " has a symbolic size ("
                     << shapeText(type) << "); TopK sorts a static extent";
    int64_t extent = type.getDimSize(*ax);
    if (*k < 0 || *k > extent)
      return error() << "K = " << *k << " is outside 0.." << extent
                     << " (the size of axis " << *ax << ")";
    SymbolicShape shape = dimsOf(*x);
    shape[*ax] = DimExpr::constant(*k);
    auto indicesType = symbolicTensorType(shape, b.getIntegerType(64));
    Value indices = TopKOp::create(b, loc, indicesType, *x, *ax, *k,
                                   intAttr("largest", 1) != 0);
    Value values = GatherElementsOp::create(
        b, loc, symbolicTensorType(shape, type.getElementType()), *x, indices,
        *ax);
    // Indices first: binding them may fold top_k into a constant (constant
    // input), which rewrites the gather's operand before it is folded too.
    if (failed(output(indices, 1)))
      return failure();
    return output(values);
  }
};

} // namespace

ArrayRef<OpConversion> getReductionConversions() {
  using C = ReductionConverter;
  static const OpConversion table[] = {
      {"", "ReduceSum", convertWith<C, &C::convertReduce>},
      {"", "ReduceMean", convertWith<C, &C::convertReduce>},
      {"", "ReduceMax", convertWith<C, &C::convertReduce>},
      {"", "ReduceMin", convertWith<C, &C::convertReduce>},
      {"", "ReduceProd", convertWith<C, &C::convertReduce>},
      {"", "ReduceL1", convertWith<C, &C::convertReduce>},
      {"", "ReduceL2", convertWith<C, &C::convertReduce>},
      {"", "ReduceLogSum", convertWith<C, &C::convertReduce>},
      {"", "ReduceLogSumExp", convertWith<C, &C::convertReduce>},
      {"", "ReduceSumSquare", convertWith<C, &C::convertReduce>},
      {"", "GlobalAveragePool",
       convertWith<C, &C::convertGlobalPool<ReduceMeanOp>>},
      {"", "GlobalMaxPool", convertWith<C, &C::convertGlobalPool<ReduceMaxOp>>},
      {"", "ArgMax", convertWith<C, &C::convertArgReduce<ArgMaxOp>>},
      {"", "ArgMin", convertWith<C, &C::convertArgReduce<ArgMinOp>>},
      {"", "Softmax", convertWith<C, &C::convertSoftmax<SoftmaxOp>>},
      {"", "LogSoftmax", convertWith<C, &C::convertSoftmax<LogSoftmaxOp>>},
      {"", "CumSum", convertWith<C, &C::convertCumSum>},
      {"", "TopK", convertWith<C, &C::convertTopK>},
  };
  return table;
}

} // namespace kiln
