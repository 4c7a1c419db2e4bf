//===- ConvertShapeOps.cpp - shapes, views and indexing -------------------===//
//
// The ops of shape subgraphs (Shape, Gather, Unsqueeze, Concat, Slice, ...)
// and of data movement. Shapes are static once inputs are bound, so Shape
// and Size become constants, and the importer folds every integer op whose
// operands are constants (GraphImporter::setOutput): a subgraph such as
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape leaves only the Reshape.
// Inputs that ONNX passes as tensors but that decide a result's shape (axes,
// starts, the shape of Expand) must therefore be constants after folding.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"

#include "kiln/Dialect/Kiln/ShapeInference.h"
#include "kiln/Importer/ONNX/TensorProto.h"
#include "kiln/ConstantData/HostTensor.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace kiln {

namespace {

/// The longest row or column Trilu takes (a million: sequence lengths).
constexpr int64_t kMaxTriluDim = int64_t(1) << 20;

struct ShapeOpConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// The integers of constant input `i` (`what` names it in the error).
  FailureOr<SmallVector<int64_t>> constantInput(int i, StringRef what) {
    Value value = importer.input(node, i);
    if (!value)
      return error() << "missing " << what;
    auto ints = importer.constantInts(value);
    if (failed(ints))
      return error() << what
                     << " must be a constant (or computed from shapes only)";
    return ints;
  }

  /// Axes from the `axes` attribute (before `inputOpset`) or from input
  /// `inputIndex` (from then on); empty when absent.
  FailureOr<SmallVector<int64_t>> axesOperand(int64_t inputOpset,
                                              int inputIndex) {
    if (importer.opset() < inputOpset)
      return intsAttr("axes").value_or(SmallVector<int64_t>());
    if (!importer.input(node, inputIndex))
      return SmallVector<int64_t>();
    return constantInput(inputIndex, "axes");
  }

  LogicalResult convertShape() {
    auto x = required(0);
    if (failed(x))
      return failure();
    auto sizes = sizesOfValue(*x);
    if (failed(sizes))
      return failure();
    int64_t rank = sizes->size();
    // Opset 15 start/end: clamped, negative counting from the end.
    auto clampDim = [&](int64_t d) {
      if (d < 0)
        d += rank;
      return std::clamp<int64_t>(d, 0, rank);
    };
    int64_t start = clampDim(intAttr("start", 0));
    int64_t end = std::max(start, clampDim(intAttr("end", rank)));
    SymbolicTensor dims;
    dims.shape = {end - start};
    dims.values.assign(sizes->begin() + start, sizes->begin() + end);
    auto type = RankedTensorType::get(dims.shape, b.getI64Type());
    return output(importer.materializeSizes(loc, type, dims));
  }

  LogicalResult convertSize() {
    auto x = required(0);
    if (failed(x))
      return failure();
    auto sizes = sizesOfValue(*x);
    if (failed(sizes))
      return failure();
    std::optional<DimExpr> count = productOf(*sizes);
    if (!count)
      return error() << "the element count overflows";
    SymbolicTensor value;
    value.values.push_back(std::move(*count));
    return output(importer.materializeSizes(
        loc, RankedTensorType::get({}, b.getI64Type()), value));
  }

  LogicalResult convertUnsqueeze() {
    auto x = required(0);
    auto axes = axesOperand(13, 1);
    if (failed(x) || failed(axes))
      return failure();
    auto in = sizesOfValue(*x);
    if (failed(in))
      return failure();
    int64_t rank = in->size() + axes->size();
    SmallVector<bool> inserted(rank, false);
    for (int64_t a : *axes) {
      auto resolved = axis(a, rank);
      if (failed(resolved))
        return failure();
      if (inserted[*resolved])
        return error() << "axis " << a << " given twice";
      inserted[*resolved] = true;
    }
    SymbolicShape shape;
    for (int64_t d = 0, next = 0; d < rank; ++d)
      shape.push_back(inserted[d] ? DimExpr::constant(1) : (*in)[next++]);
    return output(reshape(*x, shape));
  }

  LogicalResult convertSqueeze() {
    auto x = required(0);
    auto axes = axesOperand(13, 1);
    if (failed(x) || failed(axes))
      return failure();
    auto sizes = sizesOfValue(*x);
    if (failed(sizes))
      return failure();
    const SymbolicShape &in = *sizes;
    int64_t rank = in.size();
    DimExpr one = DimExpr::constant(1);
    SmallVector<bool> removed(rank, false);
    for (int64_t a : *axes) {
      auto resolved = axis(a, rank);
      if (failed(resolved))
        return failure();
      // A symbolic dim may be 1 at run time, but the result's rank may not
      // depend on it.
      if (in[*resolved] != one)
        return error() << "cannot squeeze dim " << a << " of size "
                       << in[*resolved].str();
      removed[*resolved] = true;
    }
    SymbolicShape shape;
    for (int64_t d = 0; d < rank; ++d)
      if (!(axes->empty() ? in[d] == one : removed[d]))
        shape.push_back(in[d]);
    return output(reshape(*x, shape));
  }

  LogicalResult convertFlatten() {
    auto x = required(0);
    if (failed(x))
      return failure();
    auto in = sizesOfValue(*x);
    if (failed(in))
      return failure();
    int64_t rank = in->size();
    // Flatten's axis may equal the rank.
    int64_t a = intAttr("axis", 1);
    if (a < -rank || a > rank)
      return error() << "axis " << a << " out of range for rank " << rank;
    if (a < 0)
      a += rank;
    std::optional<DimExpr> outer =
        productOf(ArrayRef<DimExpr>(*in).take_front(a));
    std::optional<DimExpr> inner =
        productOf(ArrayRef<DimExpr>(*in).drop_front(a));
    if (!outer || !inner)
      return error() << "the element count overflows";
    return output(reshape(*x, SymbolicShape{*outer, *inner}));
  }

  LogicalResult convertConcat() {
    SmallVector<Value> inputs;
    SmallVector<RankedTensorType> types;
    for (int i = 0; i < node.input_size(); ++i) {
      Value v = importer.input(node, i);
      if (!v)
        continue;
      // Empty inputs add nothing (exporters write them for empty shapes).
      if (typeOf(v).hasStaticShape() && typeOf(v).getNumElements() == 0 &&
          typeOf(v).getRank() == 1)
        continue;
      inputs.push_back(v);
      types.push_back(typeOf(v));
    }
    if (inputs.empty())
      return error() << "no non-empty inputs";
    auto ax = axis(intAttr("axis", 0), types.front().getRank());
    if (failed(ax))
      return failure();
    if (inputs.size() == 1)
      return output(inputs.front());
    auto type = inferConcatType(loc, types, *ax);
    if (failed(type))
      return failure();
    return output(ConcatOp::create(b, loc, *type, inputs, *ax));
  }

  /// The sizes of shape input `i` (constant or symbolic).
  FailureOr<SymbolicShape> sizesInput(int i, StringRef what) {
    Value value = importer.input(node, i);
    if (!value)
      return error() << "missing " << what;
    auto sizes = importer.symbolicInts(value);
    if (failed(sizes))
      return error() << what
                     << " must be a constant (or computed from shapes only)";
    return sizes;
  }

  /// A kiln.slice of `x`, or `x` itself when the window is everything.
  Value slice(Value x, ArrayRef<int64_t> starts, ArrayRef<DimExpr> counts,
              ArrayRef<int64_t> steps) {
    RankedTensorType type = typeOf(x);
    auto sizes = sizesOf(std::nullopt, type);
    bool whole = succeeded(sizes) && llvm::equal(counts, *sizes) &&
                 llvm::all_of(starts, [](int64_t s) { return s == 0; }) &&
                 llvm::all_of(steps, [](int64_t s) { return s == 1; });
    if (whole)
      return x;
    return SliceOp::create(b, loc,
                           symbolicTensorType(counts, type.getElementType()), x,
                           starts, steps);
  }

  /// The window [start, end) of a dim of size `dim` with step 1, when the
  /// dim, start or end is symbolic: ONNX's clamping decided over the dims'
  /// ranges. Sets `first` and `count` (`first` may be symbolic: a KV cache's
  /// causal mask starts at the past length).
  LogicalResult symbolicWindow(const DimExpr &dim, const DimExpr &startIn,
                               const DimExpr &endIn, int64_t d, DimExpr &first,
                               DimExpr &count) {
    DimRangeFn ranges = importer.dimRanges();
    // Negative constants count from the end; an end past any value of the
    // dim (INT64_MAX, say) is the end.
    auto fromEnd = [&](const DimExpr &index) -> std::optional<DimExpr> {
      std::optional<int64_t> c = index.getConstant();
      if (c && *c < 0)
        return DimExpr::add(dim, index);
      if (c && alwaysAtMost(dim, index, ranges) == true)
        return dim;
      return index;
    };
    std::optional<DimExpr> start = fromEnd(startIn), end = fromEnd(endIn);
    DimExpr zero = DimExpr::constant(0);
    if (start)
      start = clampSize(*start, zero, dim, ranges);
    if (end)
      end = clampSize(*end, zero, dim, ranges);
    std::optional<DimExpr> span =
        start && end ? DimExpr::sub(*end, *start) : std::nullopt;
    if (span)
      span = clampSize(*span, zero, dim, ranges);
    if (!span)
      return error() << "the window [" << startIn.str() << ", " << endIn.str()
                     << ") of dim " << d << " (" << dim.str()
                     << ") depends on the values of its symbolic dims "
                        "beyond what their ranges decide";
    first = span->getConstant() == 0 ? DimExpr::constant(0) : *start;
    count = *span;
    return success();
  }

  /// `x` at `count` consecutive indices of `axis` from the symbolic `start`:
  /// a gather at `start + iota`, the iota sliced from the longest one the
  /// ranges allow (kiln.slice starts are constants).
  FailureOr<Value> gatherWindow(Value x, int64_t axis, const DimExpr &start,
                                const DimExpr &count) {
    auto bounds = count.bounds(importer.dimRanges());
    if (!bounds || bounds->second > (int64_t(1) << 20))
      return error() << "the window of " << count.str() << " elements of dim "
                     << axis
                     << " has no bound below 2^20 over the dims' "
                        "ranges";
    auto i64 = b.getI64Type();
    SmallVector<int64_t> iota(bounds->second);
    for (int64_t i = 0; i < bounds->second; ++i)
      iota[i] = i;
    Value all = intConstant(RankedTensorType::get({bounds->second}, i64), iota);
    Value offsets = slice(all, {0}, {count}, {1});
    SymbolicTensor first;
    first.values.push_back(start);
    Value base =
        importer.materializeSizes(loc, RankedTensorType::get({}, i64), first);
    Value indices = AddOp::create(b, loc, offsets, base);
    auto type = inferGatherType(loc, typeOf(x), typeOf(indices), axis);
    if (failed(type))
      return failure();
    return GatherOp::create(b, loc, *type, x, indices, axis).getResult();
  }

  LogicalResult convertSlice() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType type = typeOf(*x);
    auto sizes = sizesOfValue(*x);
    if (failed(sizes))
      return failure();
    int64_t rank = type.getRank();
    auto toSizes = [](ArrayRef<int64_t> ints) {
      SymbolicShape sizes;
      for (int64_t i : ints)
        sizes.push_back(DimExpr::constant(i));
      return sizes;
    };
    FailureOr<SymbolicShape> starts = failure(), ends = failure();
    FailureOr<SmallVector<int64_t>> axes = SmallVector<int64_t>(),
                                    steps = SmallVector<int64_t>();
    if (importer.opset() < 10) {
      starts = toSizes(intsAttr("starts").value_or(SmallVector<int64_t>()));
      ends = toSizes(intsAttr("ends").value_or(SmallVector<int64_t>()));
      axes = intsAttr("axes").value_or(SmallVector<int64_t>());
    } else {
      starts = sizesInput(1, "starts");
      ends = sizesInput(2, "ends");
      if (importer.input(node, 3))
        axes = constantInput(3, "axes");
      if (importer.input(node, 4))
        steps = constantInput(4, "steps");
    }
    if (failed(starts) || failed(ends) || failed(axes) || failed(steps))
      return failure();
    size_t n = starts->size();
    if (ends->size() != n || (!axes->empty() && axes->size() != n) ||
        (!steps->empty() && steps->size() != n))
      return error() << "starts, ends, axes and steps differ in length";
    SmallVector<int64_t> first(rank, 0), step(rank, 1);
    SymbolicShape count = *sizes;
    SmallVector<std::pair<int64_t, DimExpr>> symbolicStarts;
    SmallVector<bool> seen(rank, false);
    for (size_t i = 0; i < n; ++i) {
      auto d = axis(axes->empty() ? static_cast<int64_t>(i) : (*axes)[i], rank);
      if (failed(d))
        return failure();
      if (seen[*d])
        return error() << "axis " << *d << " given twice";
      seen[*d] = true;
      int64_t s = steps->empty() ? 1 : (*steps)[i];
      if (s == 0)
        return error() << "step 0 on axis " << *d;
      std::optional<int64_t> staticDim = (*sizes)[*d].getConstant();
      std::optional<int64_t> staticStart = (*starts)[i].getConstant();
      std::optional<int64_t> staticEnd = (*ends)[i].getConstant();
      if (!staticDim || !staticStart || !staticEnd) {
        if (s != 1)
          return error() << "step " << s << " on axis " << *d
                         << ", whose window depends on symbolic dims (Kiln "
                            "slices those with step 1 only)";
        DimExpr from;
        if (failed(symbolicWindow((*sizes)[*d], (*starts)[i], (*ends)[i], *d,
                                  from, count[*d])))
          return failure();
        if (std::optional<int64_t> c = from.getConstant())
          first[*d] = *c;
        else
          symbolicStarts.push_back({*d, from});
        continue;
      }
      int64_t dim = *staticDim;
      // ONNX's clamping: negative indices count from the end, then the
      // window is clipped to the dim (to [-1, dim - 1] when stepping back).
      // Starts and ends may be INT64_MIN/MAX, so add the dim only when
      // negative and clamp before any other arithmetic.
      int64_t start = *staticStart, end = *staticEnd;
      if (start < 0)
        start = start < -dim ? -1 - dim : start + dim;
      if (end < 0)
        end = end < -dim ? -1 - dim : end + dim;
      if (s > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
      } else {
        start = std::clamp<int64_t>(start, -1, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
      }
      int64_t span = s > 0 ? end - start : start - end;
      int64_t magnitude = s > 0 ? s : (s == INT64_MIN ? INT64_MAX : -s);
      int64_t c = span <= 0 ? 0 : (span - 1) / magnitude + 1;
      first[*d] = c ? start : 0;
      count[*d] = DimExpr::constant(c);
      step[*d] = s;
    }
    // Windows with symbolic starts: the slice keeps those dims whole, then
    // one gather per dim picks the window.
    SymbolicShape sliced = count;
    for (const auto &[d, from] : symbolicStarts)
      sliced[d] = (*sizes)[d];
    Value result = slice(*x, first, sliced, step);
    for (const auto &[d, from] : symbolicStarts) {
      auto window = gatherWindow(result, d, from, count[d]);
      if (failed(window))
        return failure();
      result = *window;
    }
    return output(result);
  }

  LogicalResult convertSplit() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType type = typeOf(*x);
    auto ax = axis(intAttr("axis", 0), type.getRank());
    if (failed(ax))
      return failure();
    int64_t dim = type.getDimSize(*ax);
    if (ShapedType::isDynamic(dim))
      return error() << "the split dim is symbolic (Kiln splits static dims)";
    auto allSizes = sizesOfValue(*x);
    if (failed(allSizes))
      return failure();
    SmallVector<int64_t> sizes;
    if (importer.opset() < 13) {
      sizes = intsAttr("split").value_or(SmallVector<int64_t>());
    } else if (importer.input(node, 1)) {
      auto given = constantInput(1, "split");
      if (failed(given))
        return failure();
      sizes = *given;
    }
    int64_t outputs = node.output_size();
    if (sizes.empty()) {
      // Equal parts; from opset 18 num_outputs allows a smaller last part.
      int64_t parts = intAttr("num_outputs", outputs);
      if (parts < 1 || parts != outputs)
        return error() << "num_outputs " << parts << " but " << outputs
                       << " outputs";
      int64_t part = (dim + parts - 1) / parts;
      if (importer.opset() < 18 && dim % parts != 0)
        return error() << "dim " << dim << " does not split into " << parts
                       << " equal parts";
      for (int64_t i = 0; i < parts; ++i)
        sizes.push_back(std::clamp<int64_t>(dim - i * part, 0, part));
    }
    if (static_cast<int64_t>(sizes.size()) != outputs)
      return error() << sizes.size() << " split sizes for " << outputs
                     << " outputs";
    int64_t offset = 0;
    for (auto [i, size] : llvm::enumerate(sizes)) {
      if (size < 0 || offset + size > dim)
        return error() << "split sizes exceed the dim of " << dim;
      SmallVector<int64_t> first(type.getRank(), 0), step(type.getRank(), 1);
      SymbolicShape count = *allSizes;
      first[*ax] = size ? offset : 0;
      count[*ax] = DimExpr::constant(size);
      (void)output(slice(*x, first, count, step), i);
      offset += size;
    }
    if (offset != dim)
      return error() << "split sizes add up to " << offset << ", not " << dim;
    return success();
  }

  LogicalResult convertGather() {
    auto data = required(0), indices = required(1);
    if (failed(data) || failed(indices))
      return failure();
    auto ax = axis(intAttr("axis", 0), typeOf(*data).getRank());
    if (failed(ax))
      return failure();
    auto type = inferGatherType(loc, typeOf(*data), typeOf(*indices), *ax);
    if (failed(type))
      return failure();
    return output(GatherOp::create(b, loc, *type, *data, *indices, *ax));
  }

  LogicalResult convertGatherElements() {
    auto data = required(0), indices = required(1);
    if (failed(data) || failed(indices))
      return failure();
    auto ax = axis(intAttr("axis", 0), typeOf(*data).getRank());
    if (failed(ax))
      return failure();
    auto type = inferGatherElementsType(loc, typeOf(*data), typeOf(*indices),
                                        *ax);
    if (failed(type))
      return failure();
    return output(
        GatherElementsOp::create(b, loc, *type, *data, *indices, *ax));
  }

  LogicalResult convertExpand() {
    auto x = required(0);
    auto shape = sizesInput(1, "shape");
    if (failed(x) || failed(shape))
      return failure();
    auto in = sizesOfValue(*x);
    if (failed(in))
      return failure();
    auto target = broadcastSizes(loc, *in, *shape);
    if (failed(target))
      return failure();
    auto type = symbolicTensorType(*target, typeOf(*x).getElementType());
    if (type == typeOf(*x))
      return output(*x);
    return output(ExpandOp::create(b, loc, type, *x));
  }

  LogicalResult convertConstantOfShape() {
    auto sizes = sizesInput(0, "shape");
    if (failed(sizes))
      return failure();
    // A symbolic shape: one element, expanded to it.
    SmallVector<int64_t> shape;
    for (const DimExpr &size : *sizes)
      shape.push_back(size.getConstant().value_or(1));
    if (failed(getCheckedShape(shape)))
      return failure();
    Attribute value;
    if (const onnx::AttributeProto *attr = findAttribute(node, "value")) {
      auto parsed = importer.convertTensor(loc, attr->t());
      if (failed(parsed))
        return failure();
      auto dense = dyn_cast<DenseElementsAttr>(*parsed);
      if (!dense || dense.getNumElements() != 1)
        return error() << "value must hold one element";
      value = dense.getSplatValue<Attribute>();
    } else {
      value = b.getF32FloatAttr(0.0f);
    }
    auto elementType = cast<TypedAttr>(value).getType();
    auto type = RankedTensorType::get(shape, elementType);
    Value constant = ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(type, value)));
    auto target = symbolicTensorType(*sizes, elementType);
    if (target == type)
      return output(constant);
    return output(ExpandOp::create(b, loc, target, constant));
  }

  /// Dims must be non-negative and the tensor of bounded size.
  LogicalResult getCheckedShape(ArrayRef<int64_t> shape) {
    int64_t count = 1;
    for (int64_t d : shape)
      if (d < 0 || llvm::MulOverflow(count, d, count) ||
          count > (int64_t(1) << 31))
        return error() << "shape is negative or too large";
    return success();
  }

  LogicalResult convertRange() {
    auto start = required(0), limit = required(1), delta = required(2);
    if (failed(start) || failed(limit) || failed(delta))
      return failure();
    RankedTensorType scalarType = typeOf(*start);
    // The result's length depends on the values, so they must be constants;
    // the elements are computed as ONNX specifies, start + i * delta.
    auto s = scalarValue(*start), l = scalarValue(*limit),
         d = scalarValue(*delta);
    if (succeeded(s) && succeeded(d) && failed(l))
      return convertSymbolicRange(*s, *limit, *d);
    if (failed(s) || failed(l) || failed(d))
      return error() << "start, limit and delta must be constant scalars";
    if (*d == 0)
      return error() << "delta is 0";
    double n = std::max(std::ceil((*l - *s) / *d), 0.0);
    if (!(n <= (int64_t(1) << 20)))
      return error() << "range of more than 2^20 elements is larger than "
                        "Kiln folds";
    auto count = static_cast<int64_t>(n);
    auto result = HostTensor::allocate(scalarType.getElementType(), {count},
                                       loc);
    if (failed(result))
      return failure();
    bool integral = isa<IntegerType>(scalarType.getElementType());
    for (int64_t i = 0; i < count; ++i) {
      if (integral)
        result->setFromInt(i, static_cast<int64_t>(*s) +
                                  i * static_cast<int64_t>(*d));
      else
        result->setFromDouble(i, *s + i * *d);
    }
    return output(ConstantOp::create(
        b, loc, cast<ElementsAttr>(result->toDenseElementsAttr())));
  }

  /// Range up to a symbolic limit (`arange(sequence)`): the elements up to
  /// the longest the limit's range allows, as a constant, sliced to the
  /// symbolic length. Steps of +1 and -1 only, whose length is a polynomial.
  LogicalResult convertSymbolicRange(double start, Value limit, double delta) {
    auto limitSizes = importer.symbolicInts(limit);
    if (failed(limitSizes) || limitSizes->size() != 1)
      return error() << "limit must be a scalar computed from shapes";
    RankedTensorType scalarType = typeOf(limit);
    if (start != std::trunc(start) || std::fabs(start) > 0x1p52 ||
        (delta != 1 && delta != -1))
      return error() << "a symbolic limit needs an integral start and a "
                        "delta of 1 or -1";
    DimExpr first = DimExpr::constant(static_cast<int64_t>(start));
    std::optional<DimExpr> length =
        delta > 0 ? DimExpr::sub(limitSizes->front(), first)
                  : DimExpr::sub(first, limitSizes->front());
    DimRangeFn ranges = importer.dimRanges();
    auto bounds = length ? length->bounds(ranges) : std::nullopt;
    if (!bounds || bounds->first < 0)
      return error() << "the length " << (length ? length->str() : "?")
                     << " may be negative over the dims' ranges";
    if (bounds->second > (int64_t(1) << 20))
      return error() << "range of up to " << bounds->second
                     << " elements is larger than Kiln folds";
    auto all = HostTensor::allocate(scalarType.getElementType(),
                                    {bounds->second}, loc);
    if (failed(all))
      return failure();
    bool integral = isa<IntegerType>(scalarType.getElementType());
    for (int64_t i = 0; i < bounds->second; ++i) {
      if (integral)
        all->setFromInt(i, static_cast<int64_t>(start) +
                               i * static_cast<int64_t>(delta));
      else
        all->setFromDouble(i, start + i * delta);
    }
    Value values = ConstantOp::create(
        b, loc, cast<ElementsAttr>(all->toDenseElementsAttr()));
    return output(slice(values, {0}, {*length}, {1}));
  }

  /// The one element of a constant scalar, as a double.
  FailureOr<double> scalarValue(Value value) {
    auto constant = value.getDefiningOp<ConstantOp>();
    if (!constant)
      return failure();
    auto tensor = HostTensor::fromElementsAttr(constant.getValue());
    if (failed(tensor) || tensor->numElements() != 1)
      return failure();
    return tensor->getAsDouble(0);
  }

  /// Trilu keeps a triangle of the last two dims: a mask computed from the
  /// row and column indices chooses between the input and zero.
  LogicalResult convertTrilu() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType type = typeOf(*x);
    if (type.getRank() < 2 || !type.hasStaticShape())
      return error() << "expected a static input of rank >= 2";
    int64_t k = 0;
    if (importer.input(node, 1)) {
      auto given = constantInput(1, "k");
      if (failed(given))
        return failure();
      if (given->size() != 1)
        return error() << "k must be a scalar";
      k = (*given)[0];
    }
    bool upper = intAttr("upper", 1) != 0;
    int64_t rows = type.getDimSize(type.getRank() - 2);
    int64_t cols = type.getDimSize(type.getRank() - 1);
    if (failed(getCheckedShape({rows, cols})))
      return failure();
    // The index ranges are constants of rows + cols elements.
    if (rows > kMaxTriluDim || cols > kMaxTriluDim)
      return error() << "a triangle of " << rows << "x" << cols
                     << " is larger than Kiln supports (dims up to "
                     << kMaxTriluDim << ")";
    // Column j of row i is kept when j >= i + k (upper) or j <= i + k
    // (lower): two index ranges compared with broadcasting, not a [rows,
    // cols] constant (gigabytes for large dims). j - i lies in (-rows,
    // cols), so clamping k to [-rows, cols] changes no comparison and keeps
    // i + k from overflowing.
    k = std::clamp<int64_t>(k, -rows, cols);
    Type i64 = b.getI64Type();
    auto range = [&](ArrayRef<int64_t> shape, int64_t start, int64_t n) {
      SmallVector<int64_t> values(n);
      for (int64_t i = 0; i < n; ++i)
        values[i] = start + i;
      return intConstant(RankedTensorType::get(shape, i64), values);
    };
    Value columns = range({1, cols}, 0, cols);
    Value diagonal = range({rows, 1}, k, rows);
    auto maskType = RankedTensorType::get({rows, cols}, b.getI1Type());
    Value mask =
        upper ? GreaterEqualOp::create(b, loc, maskType, columns, diagonal)
                    .getResult()
              : LessEqualOp::create(b, loc, maskType, columns, diagonal)
                    .getResult();
    Value zero = importer.scalar(loc, type.getElementType(), 0.0);
    return output(WhereOp::create(b, loc, type, mask, *x, zero));
  }

  /// Tile as a broadcast: x viewed as [1, d0, 1, d1, ...] expands to
  /// [r0, d0, r1, d1, ...], which is the tiled tensor once flattened pairwise.
  LogicalResult convertTile() {
    auto x = required(0);
    auto repeats = constantInput(1, "repeats");
    if (failed(x) || failed(repeats))
      return failure();
    RankedTensorType type = typeOf(*x);
    if (!type.hasStaticShape())
      return error() << "the input has unbound dims";
    if (static_cast<int64_t>(repeats->size()) != type.getRank())
      return error() << "expected one repeat per dim, got " << repeats->size();
    SmallVector<int64_t> spread, expanded, tiled;
    for (auto [dim, repeat] : llvm::zip(type.getShape(), *repeats)) {
      if (repeat < 0)
        return error() << "negative repeat " << repeat;
      spread.append({1, dim});
      expanded.append({repeat, dim});
      tiled.push_back(repeat * dim);
    }
    if (failed(getCheckedShape(expanded)))
      return failure();
    Value viewed = reshape(*x, spread);
    auto expandedType = RankedTensorType::get(expanded, type.getElementType());
    Value broadcast = expandedType == typeOf(viewed)
                          ? viewed
                          : ExpandOp::create(b, loc, expandedType, viewed)
                                .getResult();
    return output(reshape(broadcast, tiled));
  }
};

} // namespace

ArrayRef<OpConversion> getShapeConversions() {
  using C = ShapeOpConverter;
  static const OpConversion table[] = {
      {"", "Shape", convertWith<C, &C::convertShape>},
      {"", "Size", convertWith<C, &C::convertSize>},
      {"", "Unsqueeze", convertWith<C, &C::convertUnsqueeze>},
      {"", "Squeeze", convertWith<C, &C::convertSqueeze>},
      {"", "Flatten", convertWith<C, &C::convertFlatten>},
      {"", "Concat", convertWith<C, &C::convertConcat>},
      {"", "Slice", convertWith<C, &C::convertSlice>},
      {"", "Split", convertWith<C, &C::convertSplit>},
      {"", "Gather", convertWith<C, &C::convertGather>},
      {"", "GatherElements", convertWith<C, &C::convertGatherElements>},
      {"", "Expand", convertWith<C, &C::convertExpand>},
      {"", "ConstantOfShape", convertWith<C, &C::convertConstantOfShape>},
      {"", "Range", convertWith<C, &C::convertRange>},
      {"", "Trilu", convertWith<C, &C::convertTrilu>},
      {"", "Tile", convertWith<C, &C::convertTile>},
  };
  return table;
}

} // namespace kiln
