//===- ConvertDataMovementOps.cpp - GatherND and Pad ----------------------===//
//
// Both are written with the indexing ops that exist: GatherND as a Gather
// from the data viewed with its indexed dims flattened, at indices combined
// by integer arithmetic; Pad as concatenations of the input with constant,
// edge, mirrored or wrapped blocks, one axis after another.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"
#include "NodeConverter.h"
#include "OpRegistry.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kiln {

namespace {

struct DataMovementConverter : NodeConverterBase {
  using NodeConverterBase::NodeConverterBase;

  /// `x` along `axis` from `start`, `count` elements `step` apart (the
  /// other dims whole, symbolic or not).
  Value sliceAxis(Value x, int64_t axis, int64_t start, int64_t count,
                  int64_t step = 1) {
    RankedTensorType type = typeOf(x);
    if (count == type.getDimSize(axis) && start == 0 && step == 1)
      return x;
    SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    SymbolicShape sizes = *symbolicShapeOf(type);
    starts[axis] = start;
    steps[axis] = step;
    sizes[axis] = DimExpr::constant(count);
    return SliceOp::create(b, loc,
                           symbolicTensorType(sizes, type.getElementType()), x,
                           starts, steps);
  }

  /// A scalar i64 holding `size`: a constant, or a `kiln.sizes` computed at
  /// run time.
  Value sizeScalar(const DimExpr &size) {
    SymbolicTensor value;
    value.values.push_back(size);
    return importer.materializeSizes(
        loc, RankedTensorType::get({}, b.getI64Type()), value);
  }

  //===--------------------------------------------------------------------===//
  // GatherND
  //===--------------------------------------------------------------------===//

  LogicalResult convertGatherND() {
    auto data = required(0), indices = required(1);
    if (failed(data) || failed(indices))
      return failure();
    auto dataSizes = sizesOfValue(*data), indexSizes = sizesOfValue(*indices);
    if (failed(dataSizes) || failed(indexSizes))
      return failure();
    const SymbolicShape &dataShape = *dataSizes, &indexShape = *indexSizes;
    int64_t r = dataShape.size(), q = indexShape.size();
    int64_t batch = intAttr("batch_dims", 0);
    if (q < 1 || batch < 0 || batch >= std::min(q, r))
      return error() << "batch_dims " << batch << " out of range for data rank "
                     << r << " and indices rank " << q;
    std::optional<int64_t> addressed = indexShape.back().getConstant();
    if (!addressed)
      return error() << "the last dim of the indices is symbolic ("
                     << indexShape.back().str() << ")";
    int64_t m = *addressed;
    if (m < 1 || batch + m > r)
      return error() << "indices address " << m << " dims of data of rank "
                     << r << " after " << batch << " batch dims";
    for (int64_t d = 0; d < batch; ++d)
      if (dataShape[d] != indexShape[d])
        return error() << "batch dim " << d << " is " << dataShape[d].str()
                       << " in data and " << indexShape[d].str()
                       << " in indices";

    auto i64 = b.getI64Type();
    Value index = *indices;
    if (typeOf(index).getElementType() != i64)
      index = CastOp::create(b, loc, typeOf(index).clone(i64), index);
    // The flat position in the indexed dims, each index wrapped once when
    // negative (ONNX counts those from the end).
    SymbolicShape pointShape(indexShape.begin(), indexShape.end() - 1);
    auto pointType = symbolicTensorType(pointShape, i64);
    Value zero = importer.scalar(loc, i64, 0);
    Value flat;
    DimExpr stride = DimExpr::constant(1);
    for (int64_t i = m - 1; i >= 0; --i) {
      const DimExpr &dim = dataShape[batch + i];
      Value column = reshape(sliceAxis(index, q - 1, i, 1), pointShape);
      Value negative = LessOp::create(b, loc, column, zero);
      Value wrapped = AddOp::create(b, loc, column, sizeScalar(dim));
      column = WhereOp::create(b, loc, pointType, negative, wrapped, column);
      if (stride != DimExpr::constant(1))
        column = MulOp::create(b, loc, column, sizeScalar(stride));
      flat = flat ? AddOp::create(b, loc, flat, column).getResult() : column;
      std::optional<DimExpr> next = DimExpr::mul(stride, dim);
      if (!next)
        return error() << "the indexed dims' size overflows";
      stride = std::move(*next);
    }
    if (batch > 0) {
      // Batch element k starts at k * stride in the flattened data.
      std::optional<int64_t> step = stride.getConstant();
      SmallVector<int64_t> offsetShape;
      int64_t batchCount = 1;
      for (int64_t d = 0; d < batch; ++d) {
        std::optional<int64_t> size = dataShape[d].getConstant();
        if (!size || !step)
          return error() << "batch_dims over symbolic dims";
        offsetShape.push_back(*size);
        batchCount *= *size;
      }
      offsetShape.append(q - 1 - batch, 1);
      SmallVector<int64_t> offsets;
      for (int64_t k = 0; k < batchCount; ++k)
        offsets.push_back(k * *step);
      flat = AddOp::create(
          b, loc, flat,
          intConstant(RankedTensorType::get(offsetShape, i64), offsets));
    }
    std::optional<DimExpr> rows =
        productOf(ArrayRef<DimExpr>(dataShape).take_front(batch + m));
    if (!rows)
      return error() << "the data's size overflows";
    SymbolicShape viewShape{*rows};
    viewShape.insert(viewShape.end(), dataShape.begin() + batch + m,
                     dataShape.end());
    Value view = reshape(*data, viewShape);
    auto type = inferGatherType(loc, typeOf(view), typeOf(flat), 0);
    if (failed(type))
      return failure();
    return output(GatherOp::create(b, loc, *type, view, flat, 0));
  }

  //===--------------------------------------------------------------------===//
  // Pad
  //===--------------------------------------------------------------------===//

  /// The block that pads `x` by `count` elements before (or after) it along
  /// `axis` in `mode`; `value` is the constant mode's scalar.
  FailureOr<Value> padBlock(Value x, int64_t axis, int64_t count, bool before,
                            StringRef mode, Value value) {
    RankedTensorType type = typeOf(x);
    int64_t n = type.getDimSize(axis);
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = count;
    auto blockType = RankedTensorType::get(shape, type.getElementType());
    if (mode == "constant")
      return ExpandOp::create(b, loc, blockType,
                              reshape(value, SmallVector<int64_t>(shape.size(), 1)))
          .getResult();
    if (n == 0)
      return error() << "cannot pad an empty axis " << axis << " in " << mode
                     << " mode";
    if (mode == "edge") {
      Value edge = sliceAxis(x, axis, before ? 0 : n - 1, 1);
      return ExpandOp::create(b, loc, blockType, edge).getResult();
    }
    if (mode == "reflect") {
      if (count > n - 1)
        return error() << "reflect pads of " << count << " exceed axis " << axis
                       << " of size " << n << " minus one";
      // Mirrored without the edge: x[count], ..., x[1] before;
      // x[n-2], ..., x[n-1-count] after.
      return before ? sliceAxis(x, axis, count, count, -1)
                    : sliceAxis(x, axis, n - 2, count, -1);
    }
    if (mode == "wrap") {
      if (count > n)
        return error() << "wrap pads of " << count << " exceed axis " << axis
                       << " of size " << n;
      return before ? sliceAxis(x, axis, n - count, count)
                    : sliceAxis(x, axis, 0, count);
    }
    return error() << "unknown mode '" << mode << "'";
  }

  LogicalResult convertPad() {
    auto x = required(0);
    if (failed(x))
      return failure();
    RankedTensorType type = typeOf(*x);
    int64_t rank = type.getRank();
    const onnx::AttributeProto *modeAttr = findAttribute(node, "mode");
    std::string mode = modeAttr ? modeAttr->s() : "constant";

    SmallVector<int64_t> pads, axes;
    Value value;
    if (importer.opset() >= 11) {
      auto given = importer.constantInts(importer.input(node, 1));
      if (failed(given))
        return error() << "pads must be a constant";
      pads = *given;
      value = importer.input(node, 2);
      if (Value axesInput = importer.input(node, 3)) {
        auto ints = importer.constantInts(axesInput);
        if (failed(ints))
          return error() << "axes must be a constant";
        axes = *ints;
      }
    } else {
      pads = intsAttr("pads").value_or(SmallVector<int64_t>());
      value = importer.scalar(loc, type.getElementType(),
                              floatAttr("value", 0.0f));
    }
    if (!value)
      value = importer.scalar(loc, type.getElementType(), 0.0);
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    if (pads.size() != 2 * axes.size())
      return error() << "expected " << 2 * axes.size() << " pads, got "
                     << pads.size();
    if (typeOf(value).getNumElements() != 1)
      return error() << "constant_value must hold one element";
    if (typeOf(value).getElementType() != type.getElementType())
      return error() << "constant_value's type does not match the input's";

    Value y = *x;
    for (auto [i, a] : llvm::enumerate(axes)) {
      auto ax = axis(a, rank);
      if (failed(ax))
        return failure();
      int64_t before = pads[i], after = pads[i + axes.size()];
      // Negative pads crop.
      int64_t n = typeOf(y).getDimSize(*ax);
      int64_t cropBefore = std::max<int64_t>(-before, 0);
      int64_t cropAfter = std::max<int64_t>(-after, 0);
      if (cropBefore + cropAfter > n)
        return error() << "pads crop " << cropBefore + cropAfter
                       << " elements from axis " << *ax << " of size " << n;
      y = sliceAxis(y, *ax, cropBefore, n - cropBefore - cropAfter);
      SmallVector<Value> parts;
      if (before > 0) {
        auto block = padBlock(y, *ax, before, true, mode, value);
        if (failed(block))
          return failure();
        parts.push_back(*block);
      }
      parts.push_back(y);
      if (after > 0) {
        auto block = padBlock(y, *ax, after, false, mode, value);
        if (failed(block))
          return failure();
        parts.push_back(*block);
      }
      auto joined = concat(parts, *ax);
      if (failed(joined))
        return failure();
      y = *joined;
    }
    return output(y);
  }
};

} // namespace

ArrayRef<OpConversion> getDataMovementConversions() {
  using C = DataMovementConverter;
  static const OpConversion table[] = {
      {"", "GatherND", convertWith<C, &C::convertGatherND>},
      {"", "Pad", convertWith<C, &C::convertPad>},
  };
  return table;
}

} // namespace kiln
