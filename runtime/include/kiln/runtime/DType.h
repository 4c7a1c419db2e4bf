//===- DType.h - Element types of Kiln buffers ------------------*- C++ -*-===//
//
// The element types of an artifact's buffers and matmul steps, with their
// sizes and names. Their values are part of the artifact encoding and of the
// C ABI (`kiln_dtype`).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_DTYPE_H
#define KILN_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>

namespace kiln {
namespace rt {

/// Element type of a buffer; same order and values as `kiln_dtype`. New
/// types are appended, so the encoding of existing artifacts keeps its
/// meaning (an older reader rejects the new values as out of range).
enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  I64,
  I32,
  I8,
  Bool,
  F64,
  I16,
  U8,
  U16,
  U32,
  U64,
  // One value a byte: 4-bit integers (int4 sign-extended, as ml_dtypes
  // holds them in NumPy) and float8.
  I4,
  U4,
  F8E4M3FN,
  F8E5M2
};

/// The last valid `DType`, for range checks of decoded values.
constexpr DType kLastDType = DType::F8E5M2;

/// Whether `dtype` is a floating-point type (the types a matmul step takes).
inline bool isFloatDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::F64;
}

/// Returns the size in bytes of one element of `dtype`, or 0 if invalid.
size_t dtypeSize(DType dtype);

/// Returns the NumPy-style name of `dtype` ("float32", ...), or "invalid".
const char *dtypeName(DType dtype);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_DTYPE_H
