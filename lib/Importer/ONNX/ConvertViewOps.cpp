//===- ConvertViewOps.cpp - reshapes, concats and broadcasts --------------===//
//
// The ops that keep every element of their inputs, viewed with another
// shape (Unsqueeze, Squeeze, Flatten), joined (Concat) or repeated by
// broadcasting (Expand, Tile).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"
#include "ShapeOpConverter.h"

#include "kiln/Dialect/Kiln/ShapeInference.h"

using namespace mlir;

namespace kiln {

namespace {

struct ViewConverter : ShapeOpConverter {
  using ShapeOpConverter::ShapeOpConverter;

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

  /// Tile as a broadcast: x viewed as [1, d0, 1, d1, ...] expands to
  /// [r0, d0, r1, d1, ...], which is the tiled tensor once flattened pairwise.
  LogicalResult convertTile() {
    auto x = required(0);
    auto repeats = sizesInput(1, "repeats");
    if (failed(x) || failed(repeats))
      return failure();
    RankedTensorType type = typeOf(*x);
    if (static_cast<int64_t>(repeats->size()) != type.getRank())
      return error() << "expected one repeat per dim, got " << repeats->size();
    // Each dim d viewed as [1, d], broadcast to [repeat, d] and merged.
    SymbolicShape spread, expanded, tiled;
    DimExpr one = DimExpr::constant(1);
    for (auto [dim, repeat] : llvm::zip(dimsOf(*x), *repeats)) {
      std::optional<int64_t> fixed = repeat.getConstant();
      if (fixed && *fixed < 0)
        return error() << "negative repeat " << *fixed;
      std::optional<DimExpr> size = DimExpr::mul(repeat, dim);
      if (!size)
        return error() << "the tiled size overflows";
      spread.insert(spread.end(), {one, dim});
      expanded.insert(expanded.end(), {repeat, dim});
      tiled.push_back(std::move(*size));
    }
    // A symbolic tile is bounded by its dims' ranges (and the plan's
    // limits); a static one is checked here.
    SmallVector<int64_t> fixedShape;
    for (const DimExpr &size : expanded)
      if (std::optional<int64_t> fixed = size.getConstant())
        fixedShape.push_back(*fixed);
    if (fixedShape.size() == expanded.size() &&
        failed(getCheckedShape(fixedShape)))
      return failure();
    Value viewed = reshape(*x, spread);
    auto expandedType = symbolicTensorType(expanded, type.getElementType());
    Value broadcast =
        expandedType == typeOf(viewed)
            ? viewed
            : ExpandOp::create(b, loc, expandedType, viewed).getResult();
    return output(reshape(broadcast, tiled));
  }
};

} // namespace

ArrayRef<OpConversion> getViewConversions() {
  using C = ViewConverter;
  static const OpConversion table[] = {
      {"", "Unsqueeze", convertWith<C, &C::convertUnsqueeze>},
      {"", "Squeeze", convertWith<C, &C::convertSqueeze>},
      {"", "Flatten", convertWith<C, &C::convertFlatten>},
      {"", "Concat", convertWith<C, &C::convertConcat>},
      {"", "Expand", convertWith<C, &C::convertExpand>},
      {"", "Tile", convertWith<C, &C::convertTile>},
  };
  return table;
}

} // namespace kiln
