//===- ArtifactBytes.cpp - The artifact encoding's byte streams -----------===//

#include "ArtifactBytes.h"

using namespace kiln::rt::detail;

bool ByteReader::get(uint64_t &v, unsigned bytes, const char *what) {
  if (remaining() < bytes)
    return fail(std::string("truncated while reading ") + what);
  v = 0;
  for (unsigned i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(cur[i])) << (8 * i);
  cur += bytes;
  return true;
}

bool ByteReader::u8(uint8_t &v, const char *what) {
  uint64_t x = 0;
  if (!get(x, 1, what))
    return false;
  v = static_cast<uint8_t>(x);
  return true;
}

bool ByteReader::u32(uint32_t &v, const char *what) {
  uint64_t x = 0;
  if (!get(x, 4, what))
    return false;
  v = static_cast<uint32_t>(x);
  return true;
}

bool ByteReader::i64(int64_t &v, const char *what) {
  uint64_t x = 0;
  if (!get(x, 8, what))
    return false;
  v = static_cast<int64_t>(x);
  return true;
}

bool ByteReader::f32(float &v, const char *what) {
  uint32_t bits = 0;
  if (!u32(bits, what))
    return false;
  std::memcpy(&v, &bits, sizeof(v));
  return true;
}

bool ByteReader::str(std::string &s, const char *what) {
  uint64_t size = 0;
  if (!u64(size, what))
    return false;
  if (size > remaining())
    return fail(std::string("length of ") + what + " (" + std::to_string(size) +
                ") exceeds the " + std::to_string(remaining()) + " bytes left");
  s.assign(cur, static_cast<size_t>(size));
  cur += size;
  return true;
}

bool ByteReader::count(uint64_t &n, size_t minElementBytes, const char *what) {
  if (!u64(n, what))
    return false;
  if (minElementBytes && n > remaining() / minElementBytes)
    return fail(std::string("count of ") + what + " (" + std::to_string(n) +
                ") cannot fit in the " + std::to_string(remaining()) +
                " bytes left");
  return true;
}

bool ByteReader::fail(const std::string &message) {
  if (error.empty())
    error = "at byte " + std::to_string(cur - begin) + ": " + message;
  return false;
}
