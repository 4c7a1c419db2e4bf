//===- ArtifactBytes.h - The artifact encoding's byte streams ---*- C++ -*-===//
//
// The primitives of the artifact encoding (ArtifactFormat.h): `ByteWriter`
// appends little-endian integers, floats and length-prefixed strings,
// `ByteReader` reads them back without ever reading past its input, and
// overflow-checked arithmetic for the sizes they carry. Private to the
// runtime; the unit tests use `ByteWriter` to build hostile payloads.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_ARTIFACTBYTES_H
#define KILN_RUNTIME_LIB_ARTIFACTBYTES_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace kiln {
namespace rt {
namespace detail {

/// Sets `out = a * b`; returns false on overflow.
inline bool checkedMul(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

/// Sets `out = a + b`; returns false on overflow.
inline bool checkedAdd(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_add_overflow(a, b, &out);
}

/// Appends little-endian integers, floats and length-prefixed strings.
class ByteWriter {
public:
  /// Appends the low `bytes` bytes of `v`, least significant first.
  void put(uint64_t v, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  /// Appends one byte.
  void u8(uint8_t v) { put(v, 1); }
  /// Appends a 32-bit unsigned integer.
  void u32(uint32_t v) { put(v, 4); }
  /// Appends a 64-bit unsigned integer.
  void u64(uint64_t v) { put(v, 8); }
  /// Appends a 64-bit signed integer (two's complement).
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  /// Appends a float by its IEEE bits.
  void f32(float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    u32(bits);
  }
  /// Appends a length-prefixed string or blob.
  void str(const std::string &s) {
    u64(s.size());
    out.append(s);
  }
  /// Appends raw bytes.
  void raw(const char *data, size_t size) { out.append(data, size); }

  /// The bytes written so far.
  std::string out;
};

/// Reads what `ByteWriter` writes, never past `end`. Every read returns false
/// and records an error once the input runs short.
class ByteReader {
public:
  /// Reads from [data, data + size).
  ByteReader(const char *data, size_t size)
      : begin(data), cur(data), end(data + size) {}

  /// Bytes not yet consumed.
  size_t remaining() const { return static_cast<size_t>(end - cur); }

  /// Reads `bytes` little-endian bytes into `v`.
  bool get(uint64_t &v, unsigned bytes, const char *what);
  /// Reads one byte.
  bool u8(uint8_t &v, const char *what);
  /// Reads a 32-bit unsigned integer.
  bool u32(uint32_t &v, const char *what);
  /// Reads a 64-bit unsigned integer.
  bool u64(uint64_t &v, const char *what) { return get(v, 8, what); }
  /// Reads a 64-bit signed integer.
  bool i64(int64_t &v, const char *what);
  /// Reads a float from its IEEE bits.
  bool f32(float &v, const char *what);
  /// Reads a length-prefixed string; the length must fit what remains.
  bool str(std::string &s, const char *what);
  /// Reads a list count; each element needs at least `minElementBytes`, so
  /// a count that cannot fit in what remains is rejected before any
  /// allocation.
  bool count(uint64_t &n, size_t minElementBytes, const char *what);
  /// Records `message` with the current offset; returns false.
  bool fail(const std::string &message);

  /// The first error, empty if none.
  std::string error;

private:
  const char *begin;
  const char *cur;
  const char *end;
};

} // namespace detail
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_ARTIFACTBYTES_H
