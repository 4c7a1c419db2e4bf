//===- RowLayout.h - how row kernels walk their input -----------*- C++ -*-===//
//
// What the reduction and sort emitters share (ReductionEmitter.cpp,
// SortEmitter.cpp): the rows a kernel walks, the type it accumulates in,
// and when a few long rows split over blocks, the last block of a row to
// arrive at its counter finishing it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_ROWLAYOUT_H
#define KILN_LIB_TARGET_CUDA_ROWLAYOUT_H

#include "EmitterSupport.h"

#include <cstdint>
#include <string>

namespace kiln {

/// How a reduction walks its input: row `row` (row-major over the kept dims)
/// and position `j` (row-major over the reduced dims) read the input element
/// at flat index `inputIndex`.
struct RowLayout {
  Size rows = 1, length = 1;
  std::string inputIndex;
};

/// The layout of an input of `shape` reduced over the dims marked in
/// `reduced`. Adjacent dims of the same kind merge, so a reduction over
/// trailing dims indexes as `row * length + j`.
RowLayout rowLayout(llvm::ArrayRef<Size> shape, llvm::ArrayRef<bool> reduced);

/// The block of a row kernel over `length` elements: short rows get a short
/// block; always whole warps (at least one) for the block reductions.
int64_t rowBlockSize(int64_t length);

/// The C type a reduction, scan or sort over elements of `et` accumulates
/// and compares in.
std::string accumulatorType(mlir::Type et);

/// Rows split over blocks where there are at most kSplitRowsMost of them,
/// each longer than kSplitLengthLeast (a dynamic quantization's extremes:
/// two rows of every value; a vocabulary's top-k): one block a row would
/// leave most SMs idle while it walks the row.
constexpr int64_t kSplitRowsMost = 16;
constexpr int64_t kSplitLengthLeast = 16384;
/// The elements one block of a split row takes (16 KiB of floats), and the
/// most blocks a row splits into.
constexpr int64_t kSplitShare = 4096;
constexpr int64_t kSplitPartsMost = 128;

/// The blocks each row of `layout` splits into, or 0 where its rows are not
/// split. Decided at the top of the dims' ranges; a run at smaller dims
/// gives each block a smaller share.
int64_t splitRows(const RowLayout &layout);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_ROWLAYOUT_H
