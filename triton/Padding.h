//===- Padding.h - Requests of different lengths in one run -----*- C++ -*-===//
//
// Opt-in (the configuration's `pad_dim` and `pad_mask` parameters): requests
// that differ only in one symbolic dim (the sequence length) run together,
// each padded with zeros to the longest along that dim. A model that takes a
// mask (named by `pad_mask`, whose zeros the padding writes) ignores the
// padded positions, and each request gets its own positions of each output
// back. Off by default: the padded run's sums may round differently.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_PADDING_H
#define KILN_TRITON_PADDING_H

#include "ModelSignature.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {
struct Artifact;
} // namespace rt

namespace triton {

/// Where a run pads: the dim, and the axis of it in each input and output.
struct Padding {
  /// The padded dim's index among the model's dims; -1 when off.
  int32_t dim = -1;
  /// For each input and output, the axis that is the padded dim, or -1.
  std::vector<int32_t> inputAxis, outputAxis;

  bool enabled() const { return dim >= 0; }
};

/// Plans padding along dim `padDim` for a model that batches, whose input
/// `padMask` holds the mask: the dim must be a symbolic dim other than the
/// batch dim, the mask an input with that dim, and every input and output
/// dim that involves it must be exactly it (so that padded positions can be
/// cut off again). Returns an error message, empty on success.
std::string planPadding(const rt::Artifact &plan,
                        const ModelSignature &signature,
                        const std::string &padDim, const std::string &padMask,
                        Padding &out);

/// Copies a dense [outer, rows, inner] tensor into a [outer, paddedRows,
/// inner] one, zero after each outer slice's rows (`inner` in bytes).
void padRows(const char *src, char *dst, uint64_t outer, uint64_t rows,
             uint64_t paddedRows, uint64_t innerBytes);

/// The reverse of padRows: the first `rows` of each of `outer` slices of a
/// [outer, paddedRows, inner] tensor, dense in `dst`.
void unpadRows(const char *src, char *dst, uint64_t outer, uint64_t rows,
               uint64_t paddedRows, uint64_t innerBytes);

} // namespace triton
} // namespace kiln

#endif // KILN_TRITON_PADDING_H
