//===- ConvertIndexingOps.cpp - slices, gathers and triangles -------------===//
//
// The ops that pick elements of their input by position: windows (Slice,
// Split, with ONNX's clamping decided over symbolic dims' ranges), gathers
// (Gather, GatherElements) and triangles (Trilu).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"
#include "ShapeOpConverter.h"

#include "kiln/Dialect/Kiln/ShapeInference.h"

#include <algorithm>

using namespace mlir;

namespace kiln {

namespace {

/// The longest row or column Trilu takes (a million: sequence lengths).
constexpr int64_t kMaxTriluDim = int64_t(1) << 20;

struct IndexingConverter : ShapeOpConverter {
  using ShapeOpConverter::ShapeOpConverter;

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
    auto type =
        inferGatherElementsType(loc, typeOf(*data), typeOf(*indices), *ax);
    if (failed(type))
      return failure();
    return output(
        GatherElementsOp::create(b, loc, *type, *data, *indices, *ax));
  }

  /// Trilu keeps a triangle of the last two dims: a mask computed from the
  /// row and column indices chooses between the input and zero.
  LogicalResult convertTrilu() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType type = typeOf(*x);
    if (type.getRank() < 2)
      return error() << "expected an input of rank >= 2";
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
    SymbolicShape dims = dimsOf(*x);
    const DimExpr &rows = dims[type.getRank() - 2],
                  &cols = dims[type.getRank() - 1];
    auto rowBounds = rows.bounds(importer.dimRanges()),
         colBounds = cols.bounds(importer.dimRanges());
    if (!rowBounds || !colBounds)
      return error() << "a triangle of " << rows.str() << "x" << cols.str()
                     << ", sizes without a range";
    int64_t maxRows = rowBounds->second, maxCols = colBounds->second;
    if (failed(getCheckedShape({maxRows, maxCols})))
      return failure();
    // The index ranges are constants of the longest rows and cols.
    if (maxRows > kMaxTriluDim || maxCols > kMaxTriluDim)
      return error() << "a triangle of "
                     << (rows.isConstant() && cols.isConstant() ? "" : "up to ")
                     << maxRows << "x" << maxCols
                     << " is larger than Kiln supports (dims up to "
                     << kMaxTriluDim << ")";
    // Column j of row i is kept when j >= i + k (upper) or j <= i + k
    // (lower): two index ranges compared with broadcasting, not a [rows,
    // cols] constant (gigabytes for large dims). j - i lies in (-rows,
    // cols), so clamping k to [-rows, cols] at their largest changes no
    // comparison and keeps i + k from overflowing.
    k = std::clamp<int64_t>(k, -maxRows, maxCols);
    Type i64 = b.getI64Type();
    DimExpr one = DimExpr::constant(1);
    auto columns = iota({one, cols}, 0, i64);
    auto diagonal = iota({rows, one}, k, i64);
    if (failed(columns) || failed(diagonal))
      return failure();
    auto maskType = symbolicTensorType({rows, cols}, b.getI1Type());
    Value mask =
        upper ? GreaterEqualOp::create(b, loc, maskType, *columns, *diagonal)
                    .getResult()
              : LessEqualOp::create(b, loc, maskType, *columns, *diagonal)
                    .getResult();
    Value zero = importer.scalar(loc, type.getElementType(), 0.0);
    return output(WhereOp::create(b, loc, type, mask, *x, zero));
  }
};

} // namespace

ArrayRef<OpConversion> getIndexingConversions() {
  using C = IndexingConverter;
  static const OpConversion table[] = {
      {"", "Slice", convertWith<C, &C::convertSlice>},
      {"", "Split", convertWith<C, &C::convertSplit>},
      {"", "Gather", convertWith<C, &C::convertGather>},
      {"", "GatherElements", convertWith<C, &C::convertGatherElements>},
      {"", "Trilu", convertWith<C, &C::convertTrilu>},
  };
  return table;
}

} // namespace kiln
