//===- TensorMaps.cpp - Tensor maps of the GEMM kernels' operands ---------===//

#include "TensorMaps.h"

#include <cstring>

using namespace kiln::rt;

/// Columns of K (or of B stored k x n) a box spans: 128 bytes of 16-bit
/// elements, the 128-byte swizzle's span.
constexpr uint32_t kBoxColumns = 64;

std::string kiln::rt::tensorMapMisfit(const TensorMapSpec &s) {
  if (s.rank < 1 || s.rank > 5)
    return "a tensor map has 1 to 5 dims";
  if (s.dtype != DType::F16 && s.dtype != DType::BF16)
    return "tensor maps are of 16-bit elements";
  if (reinterpret_cast<uintptr_t>(s.global) % 16 != 0)
    return "a tensor map's address is not 16-byte aligned";
  if (s.swizzleBytes != 0 && s.swizzleBytes != 32 && s.swizzleBytes != 64 &&
      s.swizzleBytes != 128)
    return "a tensor map's swizzle is 32, 64 or 128 bytes";
  const uint64_t elementBytes = 2;
  if (s.strides[0] != elementBytes)
    return "a tensor map's innermost dim is contiguous";
  for (uint32_t d = 0; d < s.rank; ++d) {
    if (s.dims[d] < 1 || s.dims[d] >= (uint64_t(1) << 31))
      return "a tensor map's dims are 1 to 2^31 - 1 elements";
    if (s.box[d] < 1 || s.box[d] > 256)
      return "a tensor map's box is 1 to 256 elements along each dim";
    if (d > 0 &&
        (s.strides[d] % 16 != 0 || s.strides[d] >= (uint64_t(1) << 40)))
      return "a tensor map's strides are whole 16 bytes below 2^40";
  }
  uint64_t innerBytes = s.box[0] * elementBytes;
  if (innerBytes % 16 != 0)
    return "a tensor map's box rows are whole 16 bytes";
  if (s.swizzleBytes != 0 && innerBytes != s.swizzleBytes)
    return "a swizzled tensor map's box rows are its swizzle span";
  return "";
}

kiln_host_tensor_map kiln::rt::hostTensorMap(const TensorMapSpec &s) {
  kiln_host_tensor_map map;
  std::memset(&map, 0, sizeof map);
  map.global = static_cast<const unsigned char *>(s.global);
  map.rank = s.rank;
  map.elementBytes = 2;
  for (uint32_t d = 0; d < s.rank; ++d) {
    map.dims[d] = s.dims[d];
    map.strides[d] = s.strides[d];
    map.box[d] = s.box[d];
  }
  map.swizzleBytes = s.swizzleBytes;
  return map;
}

std::array<TensorMapSpec, 2> kiln::rt::gemmTensorMaps(const MatmulStep &step,
                                                      const GemmCandidate &g,
                                                      const void *a,
                                                      const void *b) {
  auto matrix = [&](const void *base, uint64_t columns, uint64_t rows,
                    uint32_t boxRows) {
    TensorMapSpec s;
    s.global = base;
    s.rank = 2;
    s.dtype = step.dtype;
    s.dims = {columns, rows};
    s.strides = {2, columns * 2};
    s.box = {kBoxColumns, boxRows};
    s.swizzleBytes = 128;
    return s;
  };
  uint64_t m = step.m, n = step.n, k = step.k;
  TensorMapSpec mapA = matrix(a, k, m, g.tileM);
  TensorMapSpec mapB =
      step.transB ? matrix(b, k, n, g.tileN) : matrix(b, n, k, kBoxColumns);
  return {mapA, mapB};
}
