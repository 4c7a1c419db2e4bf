//===- IndexGrid.cpp - integer tensors that count along one dim -----------===//

#include "IndexGrid.h"

#include "kiln/ConstantData/HostTensor.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln {

/// The most elements of a constant checked point by point (an index grid
/// of a real mask is far smaller).
static constexpr int64_t kMaxCheckedElements = int64_t(1) << 22;

static SymbolicShape dimsOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  std::optional<SymbolicShape> dims =
      type ? symbolicShapeOf(type) : std::nullopt;
  return dims ? *dims : SymbolicShape();
}

static bool isUnit(const DimExpr &dim) { return dim.getConstant() == 1; }

/// A coordinate counting along a dim of size 1 is a constant.
static GridCoordinate normalized(GridCoordinate c, ArrayRef<DimExpr> dims) {
  if (c.axis && (*c.axis >= int64_t(dims.size()) || isUnit(dims[*c.axis])))
    c.axis.reset();
  return c;
}

/// The coordinate `at(p)` holds over the points p of a static `shape`
/// (row-major), when it is one.
static std::optional<GridCoordinate>
coordinateOfInts(ArrayRef<int64_t> shape,
                 llvm::function_ref<int64_t(int64_t)> at) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (count == 0 || count > kMaxCheckedElements)
    return std::nullopt;
  GridCoordinate c{std::nullopt, at(0)};
  auto holds = [&](std::optional<int64_t> axis) {
    int64_t inner = 1;
    if (axis)
      for (int64_t d = *axis + 1; d < int64_t(shape.size()); ++d)
        inner *= shape[d];
    for (int64_t p = 0; p < count; ++p) {
      int64_t step = axis ? (p / inner) % shape[*axis] : 0;
      if (at(p) != c.offset + step)
        return false;
    }
    return true;
  };
  if (holds(std::nullopt))
    return c;
  for (int64_t a = 0; a < int64_t(shape.size()); ++a)
    if (shape[a] > 1 && holds(a)) {
      c.axis = a;
      return c;
    }
  return std::nullopt;
}

static std::optional<HostTensor> intsOf(ConstantOp constant) {
  if (!isa<IntegerType>(constant.getType().getElementType()))
    return std::nullopt;
  auto tensor = HostTensor::fromElementsAttr(constant.getValue());
  if (failed(tensor))
    return std::nullopt;
  return std::move(*tensor);
}

/// Where dim `axis` of `from` goes in `to` when a reshape only adds or
/// drops unit dims; nothing when it does more.
static std::optional<int64_t> reshapedAxis(ArrayRef<DimExpr> from,
                                           ArrayRef<DimExpr> to, int64_t axis) {
  SmallVector<int64_t> kept, placed;
  for (int64_t d = 0; d < int64_t(from.size()); ++d)
    if (!isUnit(from[d]))
      kept.push_back(d);
  for (int64_t d = 0; d < int64_t(to.size()); ++d)
    if (!isUnit(to[d]))
      placed.push_back(d);
  if (kept.size() != placed.size())
    return std::nullopt;
  std::optional<int64_t> mapped;
  for (auto [f, t] : llvm::zip(kept, placed)) {
    if (!(from[f] == to[t]))
      return std::nullopt;
    if (f == axis)
      mapped = t;
  }
  return mapped;
}

std::optional<GridCoordinate> gridCoordinateOf(Value value) {
  SymbolicShape dims = dimsOf(value);
  Operation *op = value.getDefiningOp();
  if (!op)
    return std::nullopt;
  auto shifted = [&](std::optional<GridCoordinate> c, Value from) {
    if (c && c->axis)
      *c->axis += int64_t(dims.size()) - int64_t(dimsOf(from).size());
    return c;
  };
  std::optional<GridCoordinate> c =
      llvm::TypeSwitch<Operation *, std::optional<GridCoordinate>>(op)
          .Case([&](ConstantOp constant) -> std::optional<GridCoordinate> {
            std::optional<HostTensor> ints = intsOf(constant);
            if (!ints)
              return std::nullopt;
            return coordinateOfInts(
                cast<ShapedType>(constant.getType()).getShape(),
                [&](int64_t p) { return ints->getAsInt(p); });
          })
          .Case([&](SliceOp slice) -> std::optional<GridCoordinate> {
            std::optional<GridCoordinate> c =
                gridCoordinateOf(slice.getInput());
            if (c && c->axis) {
              if (slice.getStrides()[*c->axis] != 1)
                return std::nullopt;
              c->offset += slice.getStarts()[*c->axis];
            }
            return c;
          })
          .Case([&](ReshapeOp reshape) -> std::optional<GridCoordinate> {
            std::optional<GridCoordinate> c =
                gridCoordinateOf(reshape.getInput());
            if (c && c->axis) {
              c->axis =
                  reshapedAxis(dimsOf(reshape.getInput()), dims, *c->axis);
              if (!c->axis)
                return std::nullopt;
            }
            return c;
          })
          .Case([&](ExpandOp expand) {
            return shifted(gridCoordinateOf(expand.getInput()),
                           expand.getInput());
          })
          .Case([&](CastOp cast) -> std::optional<GridCoordinate> {
            if (!isa<IntegerType>(getElementTypeOrSelf(cast.getInput())))
              return std::nullopt;
            return gridCoordinateOf(cast.getInput());
          })
          .Case([&](AddOp add) -> std::optional<GridCoordinate> {
            std::optional<GridCoordinate> lhs =
                shifted(gridCoordinateOf(add.getLhs()), add.getLhs());
            std::optional<GridCoordinate> rhs =
                shifted(gridCoordinateOf(add.getRhs()), add.getRhs());
            if (!lhs || !rhs || (lhs->axis && rhs->axis))
              return std::nullopt;
            return GridCoordinate{lhs->axis ? lhs->axis : rhs->axis,
                                  lhs->offset + rhs->offset};
          })
          .Default([](Operation *) { return std::nullopt; });
  return c ? std::optional(normalized(*c, dims)) : std::nullopt;
}

std::optional<GridCoordinate> pointCoordinateOf(Value indices, int64_t j) {
  SymbolicShape dims = dimsOf(indices);
  if (dims.empty())
    return std::nullopt;
  int64_t last = dims.size() - 1;
  if (auto concat = indices.getDefiningOp<ConcatOp>()) {
    if (concat.getAxis() != last)
      return std::nullopt;
    for (Value part : concat.getInputs()) {
      std::optional<int64_t> width = dimsOf(part).back().getConstant();
      if (!width)
        return std::nullopt;
      if (j < *width)
        return pointCoordinateOf(part, j);
      j -= *width;
    }
    return std::nullopt;
  }
  std::optional<int64_t> width = dims.back().getConstant();
  if (!width || j >= *width)
    return std::nullopt;
  if (auto constant = indices.getDefiningOp<ConstantOp>()) {
    std::optional<HostTensor> ints = intsOf(constant);
    if (!ints)
      return std::nullopt;
    ArrayRef<int64_t> shape = cast<ShapedType>(constant.getType()).getShape();
    return coordinateOfInts(shape.drop_back(), [&](int64_t p) {
      return ints->getAsInt(p * *width + j);
    });
  }
  // One coordinate a point: the last dim is a unit dim of the grid.
  if (*width != 1)
    return std::nullopt;
  std::optional<GridCoordinate> c = gridCoordinateOf(indices);
  if (c && c->axis == last)
    return std::nullopt;
  return c;
}

} // namespace kiln
