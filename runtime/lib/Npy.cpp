//===- Npy.cpp - Read and write NumPy .npy files --------------------------===//
//
// Format reference: numpy/lib/format.py ("NEP 1"). A file is the magic
// "\x93NUMPY", a major and minor version byte, the header length (u16 in 1.0,
// u32 in 2.0), then an ASCII Python dict literal padded with spaces and
// ended by '\n', then the raw data.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/Npy.h"

#include "kiln/runtime/Float8.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace kiln::rt;

/// The 6 bytes every .npy file starts with.
static const char kNpyMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

namespace {

/// The fields of a .npy header dictionary.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// A strict parser for the dict literal NumPy writes, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
class HeaderParser {
public:
  /// Parses [begin, end).
  HeaderParser(const char *begin, const char *end) : p(begin), end(end) {}

  /// Parses the whole header into `out`; returns false with `error`.
  bool parse(NpyHeader &out, std::string &error) {
    bool seenDescr = false, seenFortran = false, seenShape = false;
    skipSpace();
    if (!expect('{'))
      return fail(error, "expected '{'");
    while (true) {
      skipSpace();
      if (peek('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail(error, "expected a quoted key");
      skipSpace();
      if (!expect(':'))
        return fail(error, "expected ':' after '" + key + "'");
      skipSpace();
      if (key == "descr") {
        if (seenDescr || !parseString(out.descr))
          return fail(error, "bad or repeated 'descr'");
        seenDescr = true;
      } else if (key == "fortran_order") {
        if (seenFortran || !parseBool(out.fortranOrder))
          return fail(error, "bad or repeated 'fortran_order'");
        seenFortran = true;
      } else if (key == "shape") {
        std::string why;
        if (seenShape || !parseShape(out.shape, why))
          return fail(error, why.empty() ? "bad or repeated 'shape'" : why);
        seenShape = true;
      } else {
        return fail(error, "unexpected key '" + key + "'");
      }
      skipSpace();
      if (expect(','))
        continue;
      if (peek('}'))
        break;
      return fail(error, "expected ',' or '}'");
    }
    expect('}');
    skipSpace();
    if (p != end)
      return fail(error, "unexpected text after the dictionary");
    if (!seenDescr || !seenFortran || !seenShape)
      return fail(error, "missing 'descr', 'fortran_order' or 'shape'");
    return true;
  }

private:
  bool fail(std::string &error, const std::string &message) {
    error = "malformed .npy header: " + message;
    return false;
  }
  void skipSpace() {
    while (p != end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
      ++p;
  }
  bool peek(char c) const { return p != end && *p == c; }
  bool expect(char c) {
    if (!peek(c))
      return false;
    ++p;
    return true;
  }
  bool parseString(std::string &out) {
    if (!peek('\'') && !peek('"'))
      return false;
    char quote = *p++;
    const char *start = p;
    while (p != end && *p != quote) {
      // Escapes never occur in what NumPy writes; refuse rather than guess.
      if (*p == '\\')
        return false;
      ++p;
    }
    if (p == end)
      return false;
    out.assign(start, p);
    ++p;
    return true;
  }
  bool parseWord(const char *word) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end - p) < n || std::memcmp(p, word, n) != 0)
      return false;
    p += n;
    return true;
  }
  bool parseBool(bool &out) {
    if (parseWord("True"))
      return out = true, true;
    if (parseWord("False"))
      return out = false, true;
    return false;
  }
  bool parseInt(int64_t &out) {
    if (p == end || *p < '0' || *p > '9')
      return false;
    uint64_t value = 0;
    while (p != end && *p >= '0' && *p <= '9') {
      if (value > (static_cast<uint64_t>(INT64_MAX) - (*p - '0')) / 10)
        return false;
      value = value * 10 + static_cast<uint64_t>(*p - '0');
      ++p;
    }
    // Python 2 wrote long integers with an 'L' suffix.
    if (peek('L'))
      ++p;
    out = static_cast<int64_t>(value);
    return true;
  }
  bool parseShape(std::vector<int64_t> &shape, std::string &why) {
    if (!expect('('))
      return false;
    while (true) {
      skipSpace();
      if (expect(')'))
        return true;
      if (shape.size() >= kMaxRank) {
        why = "rank exceeds " + std::to_string(kMaxRank);
        return false;
      }
      int64_t dim;
      if (!parseInt(dim))
        return false;
      shape.push_back(dim);
      skipSpace();
      if (expect(','))
        continue;
      skipSpace();
      if (expect(')'))
        return true;
      return false;
    }
  }

  const char *p;
  const char *end;
};

} // namespace

/// Maps a descr string to a dtype; false if unsupported.
static bool dtypeOfDescr(const std::string &descr, DType &out) {
  static const struct {
    const char *descr;
    DType dtype;
  } table[] = {
      {"<f4", DType::F32},  {"<f2", DType::F16},  {"<f8", DType::F64},
      {"<i8", DType::I64},  {"<i4", DType::I32},  {"<i2", DType::I16},
      {"|i1", DType::I8},   {"<i1", DType::I8},   {"=i1", DType::I8},
      {"<u8", DType::U64},  {"<u4", DType::U32},  {"<u2", DType::U16},
      {"|u1", DType::U8},   {"<u1", DType::U8},   {"=u1", DType::U8},
      {"|b1", DType::Bool}, {"<b1", DType::Bool}, {"=b1", DType::Bool},
  };
  for (const auto &entry : table)
    if (descr == entry.descr) {
      out = entry.dtype;
      return true;
    }
  return false;
}

/// Returns the descr NumPy writes for `dtype`: NumPy has no bfloat16,
/// float8 or 4-bit types, so bf16 and float8 are written as f4 (exactly)
/// and 4-bit integers as bytes.
static const char *descrOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    return "<f4";
  case DType::I4:
    return "|i1";
  case DType::U4:
    return "|u1";
  case DType::F16:
    return "<f2";
  case DType::I64:
    return "<i8";
  case DType::I32:
    return "<i4";
  case DType::I8:
    return "|i1";
  case DType::Bool:
    return "|b1";
  case DType::F64:
    return "<f8";
  case DType::I16:
    return "<i2";
  case DType::U8:
    return "|u1";
  case DType::U16:
    return "<u2";
  case DType::U32:
    return "<u4";
  case DType::U64:
    return "<u8";
  }
  return "";
}

/// Sets `bytes` to product(shape) * dtypeSize(dtype); false on overflow.
static bool byteSize(const std::vector<int64_t> &shape, DType dtype,
                     uint64_t &bytes) {
  uint64_t n = 1;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(dim), &n))
      return false;
  return !__builtin_mul_overflow(n, dtypeSize(dtype), &bytes);
}

bool kiln::rt::parseNpy(const char *data, size_t size, NpyArray &out,
                        std::string &error) {
  out = NpyArray();
  if (size < 10 || std::memcmp(data, kNpyMagic, sizeof(kNpyMagic)) != 0) {
    error = "not a .npy file (bad magic)";
    return false;
  }
  unsigned major = static_cast<unsigned char>(data[6]);
  unsigned minor = static_cast<unsigned char>(data[7]);
  if ((major != 1 && major != 2) || minor != 0) {
    error = "unsupported .npy format version " + std::to_string(major) + "." +
            std::to_string(minor) + " (1.0 and 2.0 are supported)";
    return false;
  }
  size_t prefix = major == 1 ? 10 : 12;
  if (size < prefix) {
    error = "truncated .npy file";
    return false;
  }
  uint64_t headerLen = 0;
  for (size_t i = 8; i < prefix; ++i)
    headerLen |= static_cast<uint64_t>(static_cast<unsigned char>(data[i]))
                 << (8 * (i - 8));
  if (headerLen > kMaxNpyHeaderBytes) {
    error = ".npy header of " + std::to_string(headerLen) +
            " bytes exceeds the limit of " + std::to_string(kMaxNpyHeaderBytes);
    return false;
  }
  if (headerLen > size - prefix) {
    error = "truncated .npy header";
    return false;
  }
  const char *header = data + prefix;
  if (headerLen == 0 || header[headerLen - 1] != '\n') {
    error = "malformed .npy header: must end with a newline";
    return false;
  }
  for (size_t i = 0; i < headerLen; ++i)
    if (static_cast<unsigned char>(header[i]) >= 0x80 || header[i] == '\0') {
      error = "malformed .npy header: not ASCII";
      return false;
    }
  NpyHeader parsed;
  if (!HeaderParser(header, header + headerLen).parse(parsed, error))
    return false;
  if (parsed.fortranOrder) {
    error = "unsupported .npy file: Fortran order (save with C order)";
    return false;
  }
  if (!dtypeOfDescr(parsed.descr, out.dtype)) {
    error = "unsupported .npy dtype '" + parsed.descr +
            "' (supported: <f4 <f2 <i8 <i4 |i1 |b1, little-endian)";
    return false;
  }
  uint64_t bytes = 0;
  if (!byteSize(parsed.shape, out.dtype, bytes)) {
    error = ".npy shape is too large";
    return false;
  }
  size_t dataSize = size - prefix - headerLen;
  if (bytes != dataSize) {
    error = ".npy data is " + std::to_string(dataSize) + " bytes but shape " +
            "and dtype need " + std::to_string(bytes);
    return false;
  }
  out.shape = std::move(parsed.shape);
  out.data.assign(header + headerLen, dataSize);
  return true;
}

bool kiln::rt::readNpy(const std::string &path, NpyArray &out,
                       std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (in.bad()) {
    error = "cannot read '" + path + "'";
    return false;
  }
  if (!parseNpy(bytes.data(), bytes.size(), out, error)) {
    error = "'" + path + "': " + error;
    return false;
  }
  return true;
}

/// Returns the float32 bytes of the bfloat16 elements in `data` (exact).
static std::string bf16ToF32(const std::string &data) {
  std::string out(data.size() * 2, '\0');
  for (size_t i = 0; i + 1 < data.size(); i += 2) {
    // bfloat16 is the upper half of a float32.
    out[2 * i + 2] = data[i];
    out[2 * i + 3] = data[i + 1];
  }
  return out;
}

/// Returns the float32 bytes of the float8 elements in `data` (exact).
static std::string float8ToF32(const std::string &data, bool e5m2) {
  std::string out(data.size() * 4, '\0');
  for (size_t i = 0; i < data.size(); ++i) {
    float value = floatOfFloat8Bits(uint8_t(data[i]), e5m2);
    std::memcpy(&out[4 * i], &value, 4);
  }
  return out;
}

bool kiln::rt::encodeNpy(const NpyArray &array, std::string &out,
                         std::string &error) {
  uint64_t bytes = 0;
  if (array.dtype > kLastDType || array.shape.size() > kMaxRank ||
      !byteSize(array.shape, array.dtype, bytes)) {
    error = "cannot encode .npy: invalid dtype or shape";
    return false;
  }
  if (bytes != array.data.size()) {
    error = "cannot encode .npy: data is " + std::to_string(array.data.size()) +
            " bytes but shape and dtype need " + std::to_string(bytes);
    return false;
  }
  std::string dict = "{'descr': '";
  dict += descrOf(array.dtype);
  dict += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < array.shape.size(); ++i)
    dict += (i ? ", " : "") + std::to_string(array.shape[i]);
  // A Python 1-tuple needs its trailing comma.
  if (array.shape.size() == 1)
    dict += ",";
  dict += "), }";
  // Pad with spaces so that the data starts 64-byte aligned, as NumPy does.
  size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  if ((total + 63) / 64 * 64 - prefix > 0xffff) {
    prefix = 12;
    total = prefix + dict.size() + 1;
  }
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  uint64_t headerLen = dict.size();

  out.clear();
  out.append(kNpyMagic, sizeof(kNpyMagic));
  out.push_back(prefix == 10 ? 1 : 2);
  out.push_back(0);
  for (size_t i = 0; i < prefix - 8; ++i)
    out.push_back(static_cast<char>((headerLen >> (8 * i)) & 0xff));
  out += dict;
  if (array.dtype == DType::BF16)
    out += bf16ToF32(array.data);
  else if (array.dtype == DType::F8E4M3FN || array.dtype == DType::F8E5M2)
    out += float8ToF32(array.data, array.dtype == DType::F8E5M2);
  else
    out += array.data;
  return true;
}

bool kiln::rt::writeNpy(const std::string &path, const NpyArray &array,
                        std::string &error) {
  std::string bytes;
  if (!encodeNpy(array, bytes, error))
    return false;
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file) {
      error = "cannot create '" + tmp + "': " + std::strerror(errno);
      return false;
    }
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    if (!file) {
      std::remove(tmp.c_str());
      error = "cannot write '" + tmp + "'";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename '" + tmp + "' to '" + path +
            "': " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}
