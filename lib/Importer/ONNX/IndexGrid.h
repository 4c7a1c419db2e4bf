//===- IndexGrid.h - integer tensors that count along one dim ---*- C++ -*-===//
//
// torch.onnx.export writes a slice assignment (`mask[:, :, :, :n] = m`) as a
// ScatterND whose indices are a grid: coordinate j of each point is an
// arange along dim j of the grid, broadcast to the grid's shape (Range,
// Reshape, Expand, Unsqueeze, Concat). With symbolic dims those ops stay in
// the IR; this analysis follows them back to say which dim a coordinate
// counts along and from where, so that the ScatterND becomes slices and
// concatenations instead of a scatter.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_INDEXGRID_H
#define KILN_LIB_IMPORTER_ONNX_INDEXGRID_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"

#include <optional>

namespace kiln {

/// An integer tensor whose element at (i_0, ..., i_{r-1}) is
/// `offset + i_axis`, or `offset` everywhere when `axis` is nothing.
struct GridCoordinate {
  std::optional<int64_t> axis;
  int64_t offset = 0;
};

/// `value` as a GridCoordinate, followed through the ops shape subgraphs
/// make: constants, slices with step 1, reshapes that add or drop unit dims,
/// expands, integer casts and adds of a constant. Nothing for anything else.
std::optional<GridCoordinate> gridCoordinateOf(mlir::Value value);

/// Component `j` of the last dim of `indices` (a ScatterND's or GatherND's
/// points) as a GridCoordinate over the other dims: followed through a
/// concatenation along the last dim, or read from a constant.
std::optional<GridCoordinate> pointCoordinateOf(mlir::Value indices, int64_t j);

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_INDEXGRID_H
