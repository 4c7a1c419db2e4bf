//===- Concatenate.cpp - joining host tensors along an axis ---------------===//

#include "kiln/ConstantData/Concatenate.h"

#include "mlir/IR/Diagnostics.h"

#include <cstring>

using namespace mlir;
using namespace kiln;

LogicalResult kiln::concatenateInto(HostTensor &result,
                                    ArrayRef<const HostTensor *> inputs,
                                    int64_t axis, std::optional<Location> loc) {
  ArrayRef<int64_t> shape = result.shape;
  int64_t rank = shape.size();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "concatenation axis ", axis,
                             " out of range for rank ", rank);
  // outer x (axis dim) x inner: each input is a contiguous run of
  // extent * inner elements in every outer row.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= shape[d];
  size_t width = getHostElementByteWidth(result.elementType);
  int64_t offset = 0;
  for (const HostTensor *input : inputs) {
    if (input->elementType != result.elementType)
      return emitOptionalError(loc, "concatenation input of element type ",
                               input->elementType, ", expected ",
                               result.elementType);
    if (static_cast<int64_t>(input->shape.size()) != rank)
      return emitOptionalError(loc, "input rank differs from the result's");
    int64_t extent = input->shape[axis];
    if (offset + extent > shape[axis])
      return emitOptionalError(loc,
                               "inputs overflow the result along the axis");
    size_t run = static_cast<size_t>(extent * inner) * width;
    for (int64_t o = 0; o < outer && run > 0; ++o)
      std::memcpy(result.bytes.data() +
                      ((o * shape[axis] + offset) * inner) * width,
                  input->bytes.data() + o * run, run);
    offset += extent;
  }
  if (offset != shape[axis])
    return emitOptionalError(loc, "inputs do not fill the result along the axis");
  return success();
}
