//===- Npy.h - Read and write NumPy .npy files ------------------*- C++ -*-===//
//
// Test inputs and reference outputs travel as `.npy` files (format 1.0 and
// 2.0, little-endian, C order). Parsing is strict: bounded header size, the
// exact dictionary NumPy writes, and a data size that matches the shape.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_NPY_H
#define KILN_RUNTIME_NPY_H

#include "kiln/runtime/ArtifactFormat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

/// A dense row-major array as stored in a `.npy` file.
struct NpyArray {
  /// Element type. NumPy has no bfloat16: see `encodeNpy`.
  DType dtype = DType::F32;
  /// Dimensions; empty for a scalar.
  std::vector<int64_t> shape;
  /// product(shape) * dtypeSize(dtype) bytes, little-endian.
  std::string data;
};

/// Largest header `parseNpy` accepts, in bytes (NumPy itself caps at 10000
/// by default).
constexpr size_t kMaxNpyHeaderBytes = 65536;

/// Decodes a `.npy` image. Accepts descr '<f4', '<f2', '<f8', '<i8', '<i4',
/// '<i2', '|i1', '<u8', '<u4', '<u2', '|u1', '|b1' (and '<' / '=' spellings
/// of the one-byte types); rejects other dtypes, big-endian data, Fortran
/// order, malformed or oversized headers and data whose size does not match
/// the shape. Returns false with `error`.
bool parseNpy(const char *data, size_t size, NpyArray &out, std::string &error);

/// Reads and decodes the `.npy` file at `path`.
bool readNpy(const std::string &path, NpyArray &out, std::string &error);

/// Encodes `array` as a `.npy` image (format 1.0, or 2.0 when the header
/// needs it). `array.data` must hold exactly product(shape) elements.
/// bfloat16 is written as float32 ('<f4'): NumPy has no bfloat16 dtype, and
/// '<u2' or a custom descr would not be read back as numbers by NumPy or
/// onnxruntime. The conversion is exact.
bool encodeNpy(const NpyArray &array, std::string &out, std::string &error);

/// Encodes `array` and writes it to `path` (via a temporary file renamed
/// into place, so a failure leaves no partial file).
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_NPY_H
