//===- KernelResourcesTest.cpp - ptxas reports and sm_90 occupancy --------===//

#include "kiln/Compiler/KernelResources.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {

// A log NVRTC 13 wrote for two kernels with --ptxas-options=-v.
constexpr const char *kLog =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'big' for 'sm_90a'\n"
    "ptxas info    : Function properties for big\n"
    "ptxas         .     800 bytes stack frame, 24 bytes spill stores, 16 "
    "bytes spill loads\n"
    "ptxas info    : Used 40 registers, used 0 barriers, 800 bytes "
    "cumulative stack size\n"
    "ptxas info    : Compile time = 108.256 ms\n"
    "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
    "ptxas info    : Function properties for k\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes "
    "spill loads\n"
    "ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem\n"
    "ptxas info    : Compile time = 2.043 ms\n";

TEST(KernelResources, ParsesEachKernel) {
  std::vector<KernelResources> kernels = parsePtxasInfo(kLog);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "big");
  EXPECT_EQ(kernels[0].registers, 40);
  EXPECT_EQ(kernels[0].stackBytes, 800);
  EXPECT_EQ(kernels[0].spillStoreBytes, 24);
  EXPECT_EQ(kernels[0].spillLoadBytes, 16);
  EXPECT_EQ(kernels[0].sharedBytes, 0);
  EXPECT_EQ(kernels[1].name, "k");
  EXPECT_EQ(kernels[1].registers, 10);
  EXPECT_EQ(kernels[1].barriers, 1);
  EXPECT_EQ(kernels[1].sharedBytes, 256);
  EXPECT_EQ(kernels[1].spillStoreBytes, 0);
}

TEST(KernelResources, EmptyOrForeignLogGivesNoKernels) {
  EXPECT_TRUE(parsePtxasInfo("").empty());
  EXPECT_TRUE(parsePtxasInfo("warning: something else\n").empty());
}

// The numbers below follow the CUDA occupancy rules for compute capability
// 9.0, worked by hand.
TEST(KernelResources, OccupancyLimitedByThreads) {
  KernelResources k;
  k.registers = 24; // 768 registers a warp: 85 warps fit
  Occupancy o = occupancyOnSm90(k, 256);
  EXPECT_EQ(o.blocksPerSM, 8); // 2048 threads / 256
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limitedBy, "threads");
}

TEST(KernelResources, OccupancyLimitedByRegisters) {
  KernelResources k;
  k.registers = 128; // 4096 registers a warp: 16 warps fit
  Occupancy o = occupancyOnSm90(k, 256);
  EXPECT_EQ(o.blocksPerSM, 2); // 16 warps / 8 warps a block
  EXPECT_DOUBLE_EQ(o.fraction, 0.25);
  EXPECT_EQ(o.limitedBy, "registers");
}

TEST(KernelResources, OccupancyRoundsRegistersToTheUnit) {
  KernelResources k;
  k.registers = 33; // 1056 a warp, allocated as 1280: 51 warps fit
  Occupancy o = occupancyOnSm90(k, 128);
  EXPECT_EQ(o.blocksPerSM, 12); // 51 warps / 4 warps a block
  EXPECT_EQ(o.limitedBy, "registers");
}

TEST(KernelResources, OccupancyLimitedBySharedMemory) {
  KernelResources k;
  k.registers = 16;
  k.sharedBytes = 48 * 1024; // 49 KiB with the reserved 1 KiB: 4 fit
  Occupancy o = occupancyOnSm90(k, 128);
  EXPECT_EQ(o.blocksPerSM, 4);
  EXPECT_DOUBLE_EQ(o.fraction, 16.0 / 64.0);
  EXPECT_EQ(o.limitedBy, "shared memory");
}

TEST(KernelResources, DynamicSharedMemoryCountsWithTheStatic) {
  KernelResources k;
  k.registers = 16;
  k.sharedBytes = 4 * 1024;
  // 4 + 64 + 1 reserved = 69 KiB a block: 3 fit in 228 KiB (without the
  // dynamic part 45 would, and the threads limit them to 16).
  Occupancy o = occupancyOnSm90(k, 128, 64 * 1024);
  EXPECT_EQ(o.blocksPerSM, 3);
  EXPECT_EQ(o.limitedBy, "shared memory");
  EXPECT_EQ(occupancyOnSm90(k, 128).limitedBy, "threads");
}

TEST(KernelResources, OccupancyLimitedByBlocks) {
  KernelResources k;
  k.registers = 16;
  Occupancy o = occupancyOnSm90(k, 32); // 64 would fit by threads
  EXPECT_EQ(o.blocksPerSM, 32);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limitedBy, "blocks");
}

} // namespace
