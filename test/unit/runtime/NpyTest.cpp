//===- NpyTest.cpp - Reading and writing .npy files -----------------------===//

#include "kiln/runtime/Npy.h"

#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// Returns an array of `dtype` and `shape` filled with a byte pattern that
/// is valid for every dtype (bools are 0/1).
NpyArray makeArray(DType dtype, std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  size_t n = 1;
  for (int64_t d : a.shape)
    n *= static_cast<size_t>(d);
  a.data.resize(n * dtypeSize(dtype));
  for (size_t i = 0; i < a.data.size(); ++i)
    a.data[i] = static_cast<char>(dtype == DType::Bool ? i % 2 : i * 37 + 11);
  return a;
}

/// Parses a copy of `bytes` held in a heap block of exactly its size.
bool parseExact(const std::string &bytes, NpyArray &out, std::string &error) {
  std::unique_ptr<char[]> copy(new char[bytes.size() + 1]);
  std::memcpy(copy.get(), bytes.data(), bytes.size());
  return parseNpy(copy.get(), bytes.size(), out, error);
}

/// Returns a version 1.0 file with the given header dict text and data.
std::string npyWithHeader(const std::string &dict, const std::string &data) {
  std::string header = dict + "\n";
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + data;
}

/// Expects `bytes` to be rejected with an error containing `needle`.
void expectRejected(const std::string &bytes, const std::string &needle) {
  NpyArray out;
  std::string error;
  EXPECT_FALSE(parseExact(bytes, out, error));
  EXPECT_NE(error.find(needle), std::string::npos)
      << "error '" << error << "' lacks '" << needle << "'";
}

} // namespace

TEST(Npy, RoundTripEveryDType) {
  for (DType dtype : {DType::F32, DType::F16, DType::I64, DType::I32, DType::I8,
                      DType::Bool, DType::F64, DType::I16, DType::U8,
                      DType::U16, DType::U32, DType::U64}) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, {5}, {2, 3, 4}, {0, 7}, {1, 1, 1, 1, 3}}) {
      NpyArray a = makeArray(dtype, shape);
      std::string bytes, error;
      ASSERT_TRUE(encodeNpy(a, bytes, error)) << error;
      // NumPy's layout: data 64-byte aligned, header ends with '\n'.
      size_t prefix = 10;
      size_t headerLen = static_cast<unsigned char>(bytes[8]) |
                         static_cast<unsigned char>(bytes[9]) << 8;
      EXPECT_EQ((prefix + headerLen) % 64, 0u);
      EXPECT_EQ(bytes[prefix + headerLen - 1], '\n');
      NpyArray b;
      ASSERT_TRUE(parseExact(bytes, b, error)) << dtypeName(dtype) << error;
      EXPECT_EQ(b.dtype, a.dtype);
      EXPECT_EQ(b.shape, a.shape);
      EXPECT_EQ(b.data, a.data);
    }
  }
}

TEST(Npy, MatchesNumPyBytes) {
  // np.save of np.zeros((2, 3), np.float32) writes exactly this header.
  NpyArray a;
  a.dtype = DType::F32;
  a.shape = {2, 3};
  a.data.assign(24, '\0');
  std::string bytes, error;
  ASSERT_TRUE(encodeNpy(a, bytes, error)) << error;
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, "
                     "3), }";
  std::string expected("\x93NUMPY\x01\x00\x76\x00", 10);
  expected += dict + std::string(128 - 10 - dict.size() - 1, ' ') + "\n";
  EXPECT_EQ(bytes.substr(0, 128), expected);
  EXPECT_EQ(bytes.size(), 128u + 24u);

  // A 1-D shape keeps the tuple comma; a scalar is "()".
  a.shape = {6};
  ASSERT_TRUE(encodeNpy(a, bytes, error));
  EXPECT_NE(bytes.find("'shape': (6,), }"), std::string::npos);
  a.shape = {};
  a.data.assign(4, '\0');
  ASSERT_TRUE(encodeNpy(a, bytes, error));
  EXPECT_NE(bytes.find("'shape': (), }"), std::string::npos);
}

TEST(Npy, NewDTypesUseNumPysDescrs) {
  // The descr NumPy writes for each type, so that np.load reads the values
  // back as numbers of that type; '<u1' and '=u1' read like '|u1'.
  const std::pair<DType, const char *> descrs[] = {
      {DType::F64, "'<f8'"}, {DType::I16, "'<i2'"}, {DType::U8, "'|u1'"},
      {DType::U16, "'<u2'"}, {DType::U32, "'<u4'"}, {DType::U64, "'<u8'"}};
  for (auto [dtype, descr] : descrs) {
    NpyArray a = makeArray(dtype, {3});
    std::string bytes, error;
    ASSERT_TRUE(encodeNpy(a, bytes, error)) << error;
    EXPECT_NE(bytes.find(std::string("'descr': ") + descr), std::string::npos)
        << dtypeName(dtype);
  }
  for (const char *descr : {"<u1", "=u1"}) {
    NpyArray out;
    std::string error;
    ASSERT_TRUE(parseExact(npyWithHeader(std::string("{'descr': '") + descr +
                                             "', 'fortran_order': False, "
                                             "'shape': (2,)}",
                                         "ab"),
                           out, error))
        << error;
    EXPECT_EQ(out.dtype, DType::U8);
  }
}

TEST(Npy, BFloat16IsWrittenAsFloat32) {
  NpyArray a;
  a.dtype = DType::BF16;
  a.shape = {3};
  // 1.0, -2.0, 0.5 in bfloat16.
  uint16_t bits[3] = {0x3f80, 0xc000, 0x3f00};
  a.data.assign(reinterpret_cast<const char *>(bits), sizeof(bits));
  std::string bytes, error;
  ASSERT_TRUE(encodeNpy(a, bytes, error)) << error;
  NpyArray b;
  ASSERT_TRUE(parseExact(bytes, b, error)) << error;
  EXPECT_EQ(b.dtype, DType::F32);
  EXPECT_EQ(floatsOf(b.data), (std::vector<float>{1.0f, -2.0f, 0.5f}));
}

TEST(Npy, Float8IsWrittenAsFloat32And4BitAsBytes) {
  // float8 E4M3FN: 1.0, -448 (the largest), NaN, the least subnormal 2^-9;
  // E5M2: 1.0, -infinity, 57344 (the largest), 2^-16.
  for (auto [dtype, bits, values] :
       {std::tuple<DType, std::vector<uint8_t>, std::vector<float>>{
            DType::F8E4M3FN, {0x38, 0xfe, 0x7f, 0x01},
            {1.0f, -448.0f, NAN, 0x1p-9f}},
        {DType::F8E5M2, {0x3c, 0xfc, 0x7b, 0x01},
         {1.0f, -INFINITY, 57344.0f, 0x1p-16f}}}) {
    NpyArray a;
    a.dtype = dtype;
    a.shape = {4};
    a.data.assign(bits.begin(), bits.end());
    std::string bytes, error;
    ASSERT_TRUE(encodeNpy(a, bytes, error)) << error;
    NpyArray b;
    ASSERT_TRUE(parseExact(bytes, b, error)) << error;
    EXPECT_EQ(b.dtype, DType::F32);
    std::vector<float> got = floatsOf(b.data);
    ASSERT_EQ(got.size(), values.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(values[i]))
        EXPECT_TRUE(std::isnan(got[i])) << dtypeName(dtype);
      else
        EXPECT_EQ(got[i], values[i]) << dtypeName(dtype) << " " << i;
    }
  }
  for (auto [dtype, descr] :
       {std::pair<DType, const char *>{DType::I4, "'|i1'"},
        {DType::U4, "'|u1'"}}) {
    NpyArray a = makeArray(dtype, {3});
    std::string bytes, error;
    ASSERT_TRUE(encodeNpy(a, bytes, error)) << error;
    EXPECT_NE(bytes.find(std::string("'descr': ") + descr), std::string::npos)
        << dtypeName(dtype);
  }
}

TEST(Npy, ReadsVersion2AndPython2Longs) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': "
                       "(2L,), }\n";
  std::string bytes("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i)
    bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  bytes += header + std::string(8, '\1');
  NpyArray out;
  std::string error;
  ASSERT_TRUE(parseExact(bytes, out, error)) << error;
  EXPECT_EQ(out.dtype, DType::I32);
  EXPECT_EQ(out.shape, std::vector<int64_t>{2});
}

TEST(Npy, AcceptsKeysInAnyOrderAndDoubleQuotes) {
  NpyArray out;
  std::string error;
  EXPECT_TRUE(parseExact(npyWithHeader("{\"shape\": (1,), \"fortran_order\": "
                                       "False, \"descr\": \"|b1\"}",
                                       std::string(1, '\1')),
                         out, error))
      << error;
  EXPECT_EQ(out.dtype, DType::Bool);
}

TEST(Npy, RejectsMalformedFiles) {
  std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string data(8, '\0');
  expectRejected("", "bad magic");
  expectRejected(std::string("\x93NUMPX\x01\x00\x00\x00", 10), "bad magic");
  std::string v3 = npyWithHeader(ok, data);
  v3[6] = 3;
  expectRejected(v3, "version 3.0");
  std::string longHeader = npyWithHeader(ok, data);
  longHeader[8] = '\xff';
  longHeader[9] = '\xff';
  expectRejected(longHeader, "truncated");
  std::string v2Huge("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
  expectRejected(v2Huge + "{}", "exceeds the limit");
  std::string noNewline = npyWithHeader(ok, data);
  noNewline[9 + ok.size() + 1] = ' ';
  expectRejected(noNewline, "newline");
  expectRejected(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2,), 'extra': 1}",
                               data),
                 "unexpected key 'extra'");
  expectRejected(npyWithHeader("{'descr': '<f4', 'shape': (2,)}", data),
                 "missing");
  expectRejected(npyWithHeader("{'descr': '<f4', 'descr': '<f4', "
                               "'fortran_order': False, 'shape': (2,)}",
                               data),
                 "repeated 'descr'");
  expectRejected(npyWithHeader("{'descr': '<f4', 'fortran_order': True, "
                               "'shape': (2,)}",
                               data),
                 "Fortran order");
  expectRejected(npyWithHeader("{'descr': '>f4', 'fortran_order': False, "
                               "'shape': (2,)}",
                               data),
                 "unsupported .npy dtype '>f4'");
  expectRejected(npyWithHeader("{'descr': '>u2', 'fortran_order': False, "
                               "'shape': (4,)}",
                               data),
                 "unsupported .npy dtype '>u2'");
  expectRejected(npyWithHeader("{'descr': '<c8', 'fortran_order': False, "
                               "'shape': (1,)}",
                               data),
                 "unsupported .npy dtype");
  expectRejected(npyWithHeader("{'descr': '<U2', 'fortran_order': False, "
                               "'shape': (1,)}",
                               data),
                 "unsupported .npy dtype");
  expectRejected(npyWithHeader(ok, data + "x"), "data is 9 bytes");
  expectRejected(npyWithHeader(ok, data.substr(1)), "data is 7 bytes");
  expectRejected(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (-1,)}",
                               data),
                 "shape");
  expectRejected(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (99999999999999999999,)}",
                               data),
                 "shape");
  expectRejected(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (4294967296, 4294967296)}",
                               data),
                 "too large");
  std::string deep = "(";
  for (int i = 0; i < 40; ++i)
    deep += "1, ";
  expectRejected(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': " +
                                   deep + ")}",
                               data),
                 "rank exceeds");
  expectRejected(npyWithHeader("{'descr': '<f4\\x', 'fortran_order': False, "
                               "'shape': (2,)}",
                               data),
                 "malformed");
  expectRejected(npyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2,)} junk",
                               data),
                 "after the dictionary");
  expectRejected(npyWithHeader("{'descr': '<f4', 'fortran_order': Fals, "
                               "'shape': (2,)}",
                               data),
                 "fortran_order");
  expectRejected(npyWithHeader("{'descr': '\xc3\xa9', 'fortran_order': False, "
                               "'shape': (2,)}",
                               data),
                 "not ASCII");
}

TEST(Npy, TruncationAtEveryOffsetIsRejected) {
  std::string bytes, error;
  ASSERT_TRUE(encodeNpy(makeArray(DType::I64, {3, 2}), bytes, error));
  for (size_t size = 0; size < bytes.size(); ++size) {
    NpyArray out;
    EXPECT_FALSE(parseExact(bytes.substr(0, size), out, error)) << size;
  }
}

TEST(Npy, EncodeChecksSizes) {
  NpyArray a = makeArray(DType::F32, {2, 2});
  a.data.pop_back();
  std::string bytes, error;
  EXPECT_FALSE(encodeNpy(a, bytes, error));
  EXPECT_NE(error.find("15 bytes"), std::string::npos) << error;
}

TEST(Npy, FileRoundTrip) {
  std::string dir = makeTempDir();
  ASSERT_FALSE(dir.empty());
  NpyArray a = makeArray(DType::I8, {4, 4});
  std::string error;
  ASSERT_TRUE(writeNpy(dir + "/a.npy", a, error)) << error;
  NpyArray b;
  ASSERT_TRUE(readNpy(dir + "/a.npy", b, error)) << error;
  EXPECT_EQ(b.data, a.data);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_FALSE(readNpy(dir + "/missing.npy", b, error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  EXPECT_FALSE(writeNpy(dir + "/no/such/dir/a.npy", a, error));
}
