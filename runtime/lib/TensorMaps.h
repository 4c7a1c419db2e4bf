//===- TensorMaps.h - Tensor maps of the GEMM kernels' operands -*- C++ -*-===//
//
// The tiled tensor maps a wgmma-form GEMM kernel takes for A and B
// (rt::GemmCandidate::tensorMaps), described once and encoded for either
// backend: by the driver's cuTensorMapEncodeTiled on the GPU, as a
// kiln_host_tensor_map (kiln_host_abi.h) on the host. Both refuse the same
// maps, the driver's documented limits and the host emulation's.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_TENSORMAPS_H
#define KILN_RUNTIME_LIB_TENSORMAPS_H

#include "kiln/runtime/ArtifactSteps.h"

#include "kiln_host_abi.h"

#include <array>
#include <cstdint>
#include <string>

namespace kiln {
namespace rt {

/// A tiled tensor map: what cuTensorMapEncodeTiled takes (no interleave,
/// element strides of 1, zeros outside the tensor).
struct TensorMapSpec {
  const void *global = nullptr;
  uint32_t rank = 0;
  DType dtype = DType::F16;
  /// Elements along each dim, innermost first.
  std::array<uint64_t, 5> dims = {};
  /// Bytes between consecutive indices of each dim; strides[0] is the
  /// element size (the driver takes strides[1..rank)).
  std::array<uint64_t, 5> strides = {};
  /// The box a copy moves, in elements along each dim.
  std::array<uint32_t, 5> box = {};
  /// 0 (no swizzle), 32, 64 or 128 bytes.
  uint32_t swizzleBytes = 0;
};

/// Why `spec` is not a map both backends encode, or "": rank 1 to 5; a
/// 16-byte aligned address; 16-bit elements; dims of 1 to 2^31 - 1 (copy
/// coordinates are signed 32-bit); strides in whole 16 bytes below 2^40;
/// boxes of 1 to 256 with the innermost in whole 16 bytes; a swizzled
/// box's innermost exactly its span (the driver allows less; the host
/// emulation does not).
std::string tensorMapMisfit(const TensorMapSpec &spec);

/// The host backend's map of `spec` (which tensorMapMisfit accepts).
kiln_host_tensor_map hostTensorMap(const TensorMapSpec &spec);

/// The maps of A and B a tensor-map GEMM kernel `g` takes for `step` over
/// operands at `a` and `b` (ArtifactSteps.h says their boxes).
std::array<TensorMapSpec, 2> gemmTensorMaps(const MatmulStep &step,
                                            const GemmCandidate &g,
                                            const void *a, const void *b);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_TENSORMAPS_H
