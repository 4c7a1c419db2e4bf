//===- ExecuteIndexing.cpp - concat, slice, update, gather, expand --------===//
//
// Each op maps every result element to one input element; elements move as
// raw bytes, so every element type is handled alike. Result shapes come from
// the op's (static) result type, checked against the operands at run time.
//
//===----------------------------------------------------------------------===//

#include "ExecuteIndexing.h"

#include "DimValues.h"
#include "IndexArithmetic.h"

#include "kiln/ConstantData/Concatenate.h"
#include "kiln/Dialect/Kiln/ShapeInference.h"

#include "llvm/Support/MathExtras.h"

#include <cstring>
#include <limits>
#include <optional>

using namespace mlir;

namespace kiln {

namespace {

/// The result tensor of `op`, allocated from its result type (symbolic dims
/// at their values in this run).
FailureOr<HostTensor> allocateResult(Operation *op) {
  FailureOr<RankedTensorType> type =
      concreteType(op, op->getResult(0).getType());
  if (failed(type))
    return failure();
  return HostTensor::allocate(type->getElementType(), type->getShape(),
                              op->getLoc());
}

/// Calls `fn(i, index)` for every element of `shape` in row-major order, with
/// `index` the element's coordinates.
void forEachIndex(ArrayRef<int64_t> shape,
                  function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    fn(i, index);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// Copies element `from` of `src` to element `to` of `dst`.
void copyElement(HostTensor &dst, int64_t to, const HostTensor &src,
                 int64_t from) {
  size_t width = getHostElementByteWidth(dst.elementType);
  std::memcpy(dst.bytes.data() + to * width, src.bytes.data() + from * width,
              width);
}

} // namespace

FailureOr<HostTensor> executeConcat(ConcatOp op,
                                    ArrayRef<const HostTensor *> inputs) {
  FailureOr<HostTensor> result = allocateResult(op);
  if (failed(result))
    return failure();
  if (failed(concatenateInto(*result, inputs, op.getAxis(), op.getLoc())))
    return failure();
  return result;
}

FailureOr<HostTensor> executeSlice(SliceOp op, const HostTensor &input) {
  FailureOr<HostTensor> result = allocateResult(op);
  if (failed(result))
    return failure();
  ArrayRef<int64_t> starts = op.getStarts(), steps = op.getStrides();
  RankedTensorType inputType =
      RankedTensorType::get(input.shape, input.elementType);
  if (failed(verifySliceTypes(
          op.getLoc(), inputType,
          RankedTensorType::get(result->shape, result->elementType), starts,
          steps)))
    return failure();
  SmallVector<int64_t> inStrides = getStrides(input.shape);
  forEachIndex(result->shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t from = 0;
    for (size_t d = 0; d < index.size(); ++d)
      from += (starts[d] + index[d] * steps[d]) * inStrides[d];
    copyElement(*result, i, input, from);
  });
  return result;
}

FailureOr<HostTensor> executeUpdateSlice(UpdateSliceOp op,
                                         const HostTensor &dest,
                                         const HostTensor &update,
                                         const HostTensor *starts) {
  FailureOr<int64_t> offset = evaluateSize(op, op.getOffset());
  if (failed(offset))
    return failure();
  int64_t axis = op.getAxis();
  size_t rank = dest.shape.size();
  if (update.shape.size() != rank || (starts && starts->shape.size() != rank))
    return op.emitOpError("update, starts and dest differ in rank at run time");
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int64_t>(d) != axis && update.shape[d] != dest.shape[d])
      return op.emitOpError("update and dest differ in dim ") << d;
    if (starts && starts->shape[d] != 1 &&
        (static_cast<int64_t>(d) == axis ||
         starts->shape[d] != update.shape[d]))
      return op.emitOpError("starts do not broadcast to the update in dim ")
             << d;
  }
  HostTensor result = dest;
  SmallVector<int64_t> strides = getStrides(dest.shape);
  SmallVector<int64_t> startStrides =
      starts ? getStrides(starts->shape) : SmallVector<int64_t>();
  // The first window found outside dest, for the error.
  std::optional<int64_t> outside;
  forEachIndex(update.shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t start = *offset;
    if (starts) {
      int64_t at = 0;
      for (size_t d = 0; d < rank; ++d)
        if (starts->shape[d] != 1)
          at += index[d] * startStrides[d];
      start += starts->getAsInt(at);
    }
    // Checked without overflow: the offset is a size and the update's rows
    // fit in an int64.
    int64_t row = index[axis];
    if (start < 0 || start > dest.shape[axis] ||
        row >= dest.shape[axis] - start) {
      if (!outside)
        outside = start;
      return;
    }
    int64_t to = (start + row) * strides[axis];
    for (size_t d = 0; d < index.size(); ++d)
      if (static_cast<int64_t>(d) != axis)
        to += index[d] * strides[d];
    copyElement(result, to, update, i);
  });
  if (outside) {
    // A start from the data may be anything: the end saturates.
    int64_t end;
    if (llvm::AddOverflow(*outside, update.shape[axis], end))
      end = std::numeric_limits<int64_t>::max();
    return op.emitOpError("writes rows [")
           << *outside << ", " << end << ") of a dim of " << dest.shape[axis];
  }
  return result;
}

FailureOr<HostTensor> executeGather(GatherOp op, const HostTensor &data,
                                    const HostTensor &indices) {
  FailureOr<HostTensor> result = allocateResult(op);
  if (failed(result))
    return failure();
  int64_t axis = op.getAxis();
  int64_t outer = 1, inner = 1, extent = data.shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.shape[d];
  for (size_t d = axis + 1; d < data.shape.size(); ++d)
    inner *= data.shape[d];
  int64_t count = indices.numElements();
  if (outer * count * inner != result->numElements())
    return op.emitOpError("result size does not match the gather");
  for (int64_t n = 0; n < count; ++n) {
    int64_t index = indices.getAsInt(n);
    if (index < -extent || index >= extent)
      return op.emitOpError("index ")
             << index << " out of range for a dim of " << extent;
    if (index < 0)
      index += extent;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        copyElement(*result, (o * count + n) * inner + i, data,
                    (o * extent + index) * inner + i);
  }
  return result;
}

FailureOr<HostTensor> executeGatherElements(GatherElementsOp op,
                                            const HostTensor &data,
                                            const HostTensor &indices) {
  FailureOr<HostTensor> result = allocateResult(op);
  if (failed(result))
    return failure();
  int64_t axis = op.getAxis(), extent = data.shape[axis];
  SmallVector<int64_t> dataStrides = getStrides(data.shape);
  LogicalResult status = success();
  forEachIndex(result->shape, [&](int64_t i, ArrayRef<int64_t> index) {
    if (failed(status))
      return;
    int64_t picked = indices.getAsInt(i);
    if (picked < -extent || picked >= extent) {
      status = op.emitOpError("index ")
               << picked << " out of range for a dim of " << extent;
      return;
    }
    int64_t from = 0;
    for (size_t d = 0; d < index.size(); ++d)
      from += (static_cast<int64_t>(d) == axis
                   ? (picked < 0 ? picked + extent : picked)
                   : index[d]) *
              dataStrides[d];
    copyElement(*result, i, data, from);
  });
  if (failed(status))
    return failure();
  return result;
}

FailureOr<HostTensor> executeExpand(ExpandOp op, const HostTensor &input) {
  FailureOr<HostTensor> result = allocateResult(op);
  if (failed(result))
    return failure();
  ArrayRef<int64_t> shape = result->shape;
  size_t lead = shape.size() - input.shape.size();
  // Broadcast dims read with stride 0.
  SmallVector<int64_t> inStrides = getStrides(input.shape);
  SmallVector<int64_t> readStrides(shape.size(), 0);
  for (size_t d = 0; d < input.shape.size(); ++d)
    if (input.shape[d] != 1)
      readStrides[lead + d] = inStrides[d];
  forEachIndex(shape, [&](int64_t i, ArrayRef<int64_t> index) {
    int64_t from = 0;
    for (size_t d = 0; d < index.size(); ++d)
      from += index[d] * readStrides[d];
    copyElement(*result, i, input, from);
  });
  return result;
}

} // namespace kiln
