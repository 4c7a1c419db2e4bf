//===- ConvertScatterND.cpp - ScatterND as slices or selects --------------===//
//
// Kiln has no scatter op: every kernel computes each output element from its
// inputs. ScatterND is written in the two forms models use it in:
//
//  - a slice assignment (`x[:, :, :, :n] = y`, which torch.onnx.export writes
//    as a ScatterND at a grid of points, IndexGrid.h): the data outside the
//    box, sliced, concatenated with the updates (or with the updates combined
//    with the box's data under a reduction). Symbolic dims stay symbolic;
//  - constant indices (the points known at compile time): for each data row
//    the update row written there is a constant, so the result is a select
//    between the data and a gather of the updates, once for each update a
//    row receives.
//
// Points computed at run time from the data are refused by name.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "IndexGrid.h"
#include "OpRegistry.h"
#include "ShapeOpConverter.h"
#include "SymbolicFolding.h"

#include "kiln/Dialect/Kiln/ShapeInference.h"

using namespace mlir;

namespace kiln {

namespace {

/// The most updates one data row may receive from constant indices under a
/// reduction (each is a select over the whole data).
constexpr int64_t kMaxUpdatesPerRow = 16;
/// The most data rows constant indices address (each layer of writes is a
/// constant of one index and one flag a row).
constexpr int64_t kMaxScatteredRows = int64_t(1) << 20;

enum class Reduction { none, add, mul, max, min };

/// A box of the data: along each of its first dims, `count` rows from
/// `start`.
struct Window {
  int64_t start;
  DimExpr count;
};

struct ScatterConverter : ShapeOpConverter {
  using ShapeOpConverter::ShapeOpConverter;

  Reduction reduction = Reduction::none;

  LogicalResult convertScatterND() {
    auto data = required(0), indices = required(1), updates = required(2);
    if (failed(data) || failed(indices) || failed(updates) ||
        failed(readReduction()))
      return failure();
    SymbolicShape dataShape = dimsOf(*data), indexShape = dimsOf(*indices),
                  updateShape = dimsOf(*updates);
    int64_t r = dataShape.size(), q = indexShape.size();
    std::optional<int64_t> k =
        q > 0 ? indexShape.back().getConstant() : std::nullopt;
    if (!k || *k < 1 || *k > r)
      return error() << "indices of shape " << shapeText(typeOf(*indices))
                     << " do not address the dims of data of rank " << r;
    SymbolicShape expected(indexShape.begin(), indexShape.end() - 1);
    expected.insert(expected.end(), dataShape.begin() + *k, dataShape.end());
    if (updateShape != expected)
      return error() << "updates have shape " << shapeText(typeOf(*updates))
                     << "; the indices and data give "
                     << shapeText(symbolicTensorType(
                            expected, typeOf(*updates).getElementType()));
    if (typeOf(*updates).getElementType() != typeOf(*data).getElementType())
      return error() << "updates and data differ in element type";

    if (std::optional<SmallVector<Window>> box = boxOf(*indices, *k)) {
      FailureOr<Value> result = assignBox(*data, *updates, *box, 0);
      return failed(result) ? failure() : output(*result);
    }
    auto points = importer.constantInts(*indices);
    if (succeeded(points))
      return scatterConstant(*data, *updates, *points, *k);
    return error() << "its indices are neither a slice assignment's grid "
                      "(each coordinate an arange along its own dim, as "
                      "torch.onnx.export writes x[a:b] = y) nor constants; "
                      "a scatter to points computed at run time is not "
                      "supported";
  }

  LogicalResult readReduction() {
    const onnx::AttributeProto *attr = findAttribute(node, "reduction");
    std::string name = attr ? attr->s() : "none";
    std::optional<Reduction> parsed =
        llvm::StringSwitch<std::optional<Reduction>>(name)
            .Case("none", Reduction::none)
            .Case("add", Reduction::add)
            .Case("mul", Reduction::mul)
            .Case("max", Reduction::max)
            .Case("min", Reduction::min)
            .Default(std::nullopt);
    if (!parsed)
      return error() << "unknown reduction '" << name << "'";
    reduction = *parsed;
    return success();
  }

  /// The box the points of `indices` fill, when they are a grid whose dim j
  /// counts along data dim j (a point's j-th coordinate), every point in
  /// the data.
  std::optional<SmallVector<Window>> boxOf(Value indices, int64_t k) {
    SymbolicShape grid = dimsOf(indices);
    grid.pop_back();
    if (int64_t(grid.size()) != k)
      return std::nullopt;
    SmallVector<Window> box;
    for (int64_t j = 0; j < k; ++j) {
      std::optional<GridCoordinate> c = pointCoordinateOf(indices, j);
      bool along =
          c && (c->axis == j || (!c->axis && grid[j].getConstant() == 1));
      if (!along || c->offset < 0)
        return std::nullopt;
      box.push_back({c->offset, grid[j]});
    }
    return box;
  }

  /// `update` combined with `dest` (the box's data) under the reduction.
  Value combine(Value dest, Value update) {
    switch (reduction) {
    case Reduction::none:
      return update;
    case Reduction::add:
      return AddOp::create(b, loc, dest, update);
    case Reduction::mul:
      return MulOp::create(b, loc, dest, update);
    case Reduction::max:
      return MaxOp::create(b, loc, dest, update);
    case Reduction::min:
      return MinOp::create(b, loc, dest, update);
    }
    llvm_unreachable("a reduction without a combination");
  }

  /// `dest` with the box from dim `axis` on replaced by `update`: the rows
  /// before and after the window of the first dim the box does not fill,
  /// around the box's rows assigned one dim further in.
  FailureOr<Value> assignBox(Value dest, Value update, ArrayRef<Window> box,
                             int64_t axis) {
    SymbolicShape dims = dimsOf(dest);
    DimRangeFn ranges = importer.dimRanges();
    for (; axis < int64_t(box.size()); ++axis) {
      const Window &w = box[axis];
      if (!(w.start == 0 && w.count == dims[axis]))
        break;
    }
    if (axis == int64_t(box.size()))
      return combine(dest, update);
    const Window &w = box[axis];
    std::optional<DimExpr> end =
        DimExpr::add(DimExpr::constant(w.start), w.count);
    if (!end || alwaysAtMost(*end, dims[axis], ranges) != true)
      return error() << "the slice assigned along dim " << axis << ", ["
                     << w.start << ", " << w.start << " + " << w.count.str()
                     << "), is not always inside the data's "
                     << dims[axis].str() << " rows";
    SmallVector<Value> parts;
    if (w.start > 0)
      parts.push_back(slice(dest, axis, 0, DimExpr::constant(w.start)));
    auto middle =
        assignBox(slice(dest, axis, w.start, w.count), update, box, axis + 1);
    if (failed(middle))
      return failure();
    parts.push_back(*middle);
    if (!(*end == dims[axis])) {
      std::optional<int64_t> tailStart = end->getConstant();
      std::optional<DimExpr> tail = DimExpr::sub(dims[axis], *end);
      if (!tailStart || !tail)
        return error() << "the slice assigned along dim " << axis << " ends at "
                       << end->str()
                       << ", neither the data's end nor a constant";
      parts.push_back(slice(dest, axis, *tailStart, *tail));
    }
    return concat(parts, axis);
  }

  /// The scatter to constant points: for each data row (its first `k`
  /// coordinates), the update rows written there, in order; the result
  /// selects, for each layer of writes, between the rows so far and the
  /// gathered update rows (combined under the reduction).
  LogicalResult scatterConstant(Value data, Value updates,
                                ArrayRef<int64_t> points, int64_t k) {
    RankedTensorType dataType = typeOf(data);
    if (!dataType.hasStaticShape())
      return error() << "constant indices into data of symbolic shape "
                     << shapeText(dataType);
    ArrayRef<int64_t> shape = dataType.getShape();
    int64_t rows = 1;
    for (int64_t d = 0; d < k; ++d)
      rows *= shape[d];
    if (rows > kMaxScatteredRows)
      return error() << "constant indices into " << rows
                     << " data rows; at most " << kMaxScatteredRows
                     << " are taken";
    int64_t writes = int64_t(points.size()) / k;
    SmallVector<SmallVector<int64_t, 1>> writers(rows);
    for (int64_t u = 0; u < writes; ++u) {
      int64_t row = 0;
      for (int64_t d = 0; d < k; ++d) {
        int64_t i = points[u * k + d];
        if (i < -shape[d] || i >= shape[d])
          return error() << "index " << i << " of point " << u
                         << " is outside dim " << d << " of size " << shape[d];
        row = row * shape[d] + (i < 0 ? i + shape[d] : i);
      }
      // Without a reduction the last write to a row is the one kept.
      if (reduction == Reduction::none)
        writers[row].assign(1, u);
      else
        writers[row].push_back(u);
    }
    size_t layers = 0;
    for (const auto &w : writers)
      layers = std::max(layers, w.size());
    if (int64_t(layers) > kMaxUpdatesPerRow)
      return error() << "a data row receives " << layers << " updates; at most "
                     << kMaxUpdatesPerRow << " are taken";

    auto i64 = b.getI64Type();
    SmallVector<int64_t> tail(shape.begin() + k, shape.end());
    SmallVector<int64_t> flatShape{writes};
    flatShape.append(tail);
    Value flatUpdates = reshape(updates, flatShape);
    SmallVector<int64_t> maskShape(shape.begin(), shape.begin() + k);
    maskShape.append(shape.size() - k, 1);
    Value result = data;
    for (size_t layer = 0; layer < layers; ++layer) {
      SmallVector<int64_t> source(rows, 0);
      SmallVector<bool> written(rows, false);
      for (int64_t row = 0; row < rows; ++row)
        if (layer < writers[row].size()) {
          source[row] = writers[row][layer];
          written[row] = true;
        }
      Value picks = intConstant(RankedTensorType::get({rows}, i64), source);
      auto pickedType =
          inferGatherType(loc, typeOf(flatUpdates), typeOf(picks), 0);
      if (failed(pickedType))
        return failure();
      Value picked = reshape(
          GatherOp::create(b, loc, *pickedType, flatUpdates, picks, 0), shape);
      auto maskType = RankedTensorType::get(maskShape, b.getI1Type());
      Value mask = ConstantOp::create(
          b, loc,
          cast<ElementsAttr>(DenseElementsAttr::get(maskType, written)));
      result = WhereOp::create(b, loc, dataType, mask, combine(result, picked),
                               result);
    }
    return output(result);
  }
};

} // namespace

ArrayRef<OpConversion> getScatterConversions() {
  using C = ScatterConverter;
  static const OpConversion table[] = {
      {"", "ScatterND", convertWith<C, &C::convertScatterND>},
  };
  return table;
}

} // namespace kiln
