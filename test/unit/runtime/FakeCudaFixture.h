//===- FakeCudaFixture.h - Tests on the stand-in CUDA ----------*- C++ -*-===//
//
// Points the runtime at FakeCudaDriver.cpp and FakeCublasLt.cpp for one test
// and checks afterwards that every model released what it took.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_RUNTIME_FAKECUDAFIXTURE_H
#define KILN_TEST_UNIT_RUNTIME_FAKECUDAFIXTURE_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>

namespace kiln {
namespace rt {
namespace test {

/// Points the runtime at the host stand-ins for the duration of a test.
class FakeCuda : public ::testing::Test {
protected:
  void SetUp() override {
    setenv("KILN_CUDA_DRIVER", KILN_FAKE_CUDA_PATH, 1);
    setenv("KILN_CUBLASLT", KILN_FAKE_CUBLASLT_PATH, 1);
    fake = dlopen(KILN_FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(fake, nullptr) << dlerror();
    liveAllocations =
        reinterpret_cast<int (*)()>(dlsym(fake, "fakeCudaLiveAllocations"));
    contextDepth =
        reinterpret_cast<int (*)()>(dlsym(fake, "fakeCudaContextDepth"));
    primaryReferences =
        reinterpret_cast<int (*)()>(dlsym(fake, "fakeCudaPrimaryReferences"));
    counterOf =
        reinterpret_cast<int (*)(const char *)>(dlsym(fake, "fakeCudaCounter"));
    lastStreamOf =
        reinterpret_cast<void *(*)()>(dlsym(fake, "fakeCudaLastStream"));
    auto reset =
        reinterpret_cast<void (*)()>(dlsym(fake, "fakeCudaResetCounters"));
    ASSERT_NE(liveAllocations, nullptr);
    ASSERT_NE(contextDepth, nullptr);
    ASSERT_NE(primaryReferences, nullptr);
    ASSERT_NE(counterOf, nullptr);
    ASSERT_NE(lastStreamOf, nullptr);
    ASSERT_NE(reset, nullptr);
    reset();
    ASSERT_EQ(liveAllocations(), 0);
  }
  void TearDown() override {
    // Every model of the test is gone: nothing may remain allocated,
    // captured or current.
    if (liveAllocations) {
      EXPECT_EQ(liveAllocations(), 0);
    }
    if (counterOf) {
      EXPECT_EQ(counterOf("pinned"), 0);
      EXPECT_EQ(counterOf("graphs"), 0);
    }
    if (contextDepth) {
      EXPECT_EQ(contextDepth(), 0);
    }
    // The driver resets the primary context when its last reference goes:
    // a reference left is a context kept for nothing.
    if (primaryReferences) {
      EXPECT_EQ(primaryReferences(), 0);
    }
    unsetenv("KILN_CUDA_DRIVER");
    unsetenv("KILN_CUBLASLT");
    if (fake)
      dlclose(fake);
  }

  /// Returns the stand-in driver's counter `name` (see FakeCudaDriver.cpp).
  int counter(const char *name) const { return counterOf(name); }
  /// Returns the stream of the last work the stand-in driver did.
  void *fakeLastStream() const { return lastStreamOf(); }
  /// Expects the stand-in cuBLASLt's algorithms 42, 43 and 44 to have run
  /// `calls42`, `calls43` and `calls44` matmuls.
  void expectMatmulAlgoCalls(int calls42, int calls43, int calls44) const {
    EXPECT_EQ(counter("matmulAlgo42"), calls42) << "algorithm 42";
    EXPECT_EQ(counter("matmulAlgo43"), calls43) << "algorithm 43";
    EXPECT_EQ(counter("matmulAlgo44"), calls44) << "algorithm 44";
  }

  void *fake = nullptr;
  int (*liveAllocations)() = nullptr;
  int (*contextDepth)() = nullptr;
  int (*primaryReferences)() = nullptr;
  int (*counterOf)(const char *) = nullptr;
  void *(*lastStreamOf)() = nullptr;
};

} // namespace test
} // namespace rt
} // namespace kiln

#endif // KILN_TEST_UNIT_RUNTIME_FAKECUDAFIXTURE_H
