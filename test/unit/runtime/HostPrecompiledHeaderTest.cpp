//===- HostPrecompiledHeaderTest.cpp - The shared emulation header --------===//
//
// The host backend precompiles kiln_cuda_host.h once per toolchain into the
// cache (HostPrecompiledHeader.h). These tests check that modules are built
// against it, and that a damaged folder neither breaks a build nor stays:
// a .gch GCC cannot read is parsed from its text, and a folder whose text
// does not compile is removed after the module built without it, and made
// again by the next module.
//
//===----------------------------------------------------------------------===//

#include "TestArtifacts.h"

#include <gtest/gtest.h>

#include <dirent.h>

#include <cstdlib>

using namespace kiln::rt;
using namespace kiln::rt::test;

namespace {

/// Each test starts from an empty cache of its own.
class HostPrecompiledHeader : public ::testing::Test {
protected:
  void SetUp() override {
    usePrivateCache();
    const char *compiler = std::getenv("KILN_HOST_CXX");
    if (compiler && std::string(compiler).find("clang") != std::string::npos)
      GTEST_SKIP() << "clang builds modules without a precompiled header";
  }

  /// The cache's precompiled-header folders.
  static std::vector<std::string> folders() {
    std::string cache = std::getenv("KILN_CACHE_DIR");
    std::vector<std::string> found;
    if (DIR *d = opendir(cache.c_str())) {
      while (dirent *entry = readdir(d))
        if (std::string(entry->d_name).rfind("host-pch-", 0) == 0)
          found.push_back(cache + "/" + entry->d_name);
      closedir(d);
    }
    return found;
  }
};

/// Doubles x; `offset` makes kernels of different sources.
Artifact doubling(float offset) {
  return kernelArtifact("extern \"C\" __global__ void twice(const float *x, "
                        "float *y) { unsigned i = threadIdx.x; y[i] = 2.0f * "
                        "x[i] + " +
                            std::to_string(offset) + "f; }",
                        "twice", 8, 1, 8);
}

std::vector<float> expected(float offset) {
  std::vector<float> y;
  for (int i = 0; i < 8; ++i)
    y.push_back(2.0f * static_cast<float>(i) + offset);
  return y;
}

const std::vector<float> kInput = {0, 1, 2, 3, 4, 5, 6, 7};

TEST_F(HostPrecompiledHeader, OneFolderServesEveryModule) {
  EXPECT_EQ(runOnHost(doubling(1), kInput, HostOptions()), expected(1));
  std::vector<std::string> made = folders();
  ASSERT_EQ(made.size(), 1u);
  EXPECT_FALSE(readFile(made[0] + "/kiln_cuda_host.h.gch").empty());
  EXPECT_EQ(runOnHost(doubling(2), kInput, HostOptions()), expected(2));
  EXPECT_EQ(folders(), made);
}

TEST_F(HostPrecompiledHeader, AnUnreadableGchIsParsedFromItsText) {
  EXPECT_EQ(runOnHost(doubling(1), kInput, HostOptions()), expected(1));
  ASSERT_EQ(folders().size(), 1u);
  std::string folder = folders()[0];
  ASSERT_TRUE(writeFile(folder + "/kiln_cuda_host.h.gch", "not a header"));
  EXPECT_EQ(runOnHost(doubling(3), kInput, HostOptions()), expected(3));
}

TEST_F(HostPrecompiledHeader, AFolderThatFailsIsRemovedAndMadeAgain) {
  EXPECT_EQ(runOnHost(doubling(1), kInput, HostOptions()), expected(1));
  ASSERT_EQ(folders().size(), 1u);
  std::string folder = folders()[0];
  const std::string broken = "this is not C++\n";
  ASSERT_TRUE(writeFile(folder + "/kiln_cuda_host.h.gch", broken));
  ASSERT_TRUE(writeFile(folder + "/kiln_cuda_host.h", broken));
  // The module builds with its own headers; the folder goes.
  EXPECT_EQ(runOnHost(doubling(4), kInput, HostOptions()), expected(4));
  EXPECT_TRUE(folders().empty());
  // The next module makes it again, whole.
  EXPECT_EQ(runOnHost(doubling(5), kInput, HostOptions()), expected(5));
  ASSERT_EQ(folders(), std::vector<std::string>{folder});
  EXPECT_NE(readFile(folder + "/kiln_cuda_host.h"), broken);
  EXPECT_NE(readFile(folder + "/kiln_cuda_host.h.gch"), broken);
}

} // namespace
