//===- ArenaPlannerTest.cpp - properties of the arena planner -------------===//

#include "kiln/Analysis/ArenaPlanner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

using namespace kiln;

namespace {

constexpr uint64_t kAlign = 256;

/// True when two placed buffers share a step and a byte.
bool conflict(const BufferInterval &a, uint64_t offsetA,
              const BufferInterval &b, uint64_t offsetB) {
  bool timeOverlap = a.start <= b.end && b.start <= a.end;
  bool spaceOverlap = offsetA < offsetB + alignTo(b.bytes, kAlign) &&
                      offsetB < offsetA + alignTo(a.bytes, kAlign);
  return timeOverlap && spaceOverlap;
}

TEST(ArenaPlanner, DisjointLifetimesShareMemory) {
  std::vector<BufferInterval> buffers = {{0, 1, 1000}, {2, 3, 1000}};
  ArenaPlan plan = planArena(buffers, kAlign);
  EXPECT_EQ(plan.offsets[0], 0u);
  EXPECT_EQ(plan.offsets[1], 0u);
  EXPECT_EQ(plan.arenaBytes, alignTo(1000, kAlign));
}

TEST(ArenaPlanner, OverlappingLifetimesDoNotShare) {
  std::vector<BufferInterval> buffers = {{0, 2, 100}, {1, 3, 300}};
  ArenaPlan plan = planArena(buffers, kAlign);
  EXPECT_FALSE(conflict(buffers[0], plan.offsets[0], buffers[1],
                        plan.offsets[1]));
  EXPECT_EQ(plan.arenaBytes, 3 * kAlign);
  EXPECT_EQ(plan.liveLowerBound, 3 * kAlign);
}

TEST(ArenaPlanner, FillsGapsLeftByLargerBuffers) {
  // A and C are live together at step 2 only through B's gap; the small
  // buffer fits below the large one once the medium one is gone.
  std::vector<BufferInterval> buffers = {
      {0, 1, 512}, {1, 4, 1024}, {2, 4, 256}};
  ArenaPlan plan = planArena(buffers, kAlign);
  EXPECT_EQ(plan.arenaBytes, plan.liveLowerBound);
}

TEST(ArenaPlanner, OffsetsAreAligned) {
  std::vector<BufferInterval> buffers = {{0, 5, 3}, {0, 5, 7}, {1, 2, 513}};
  ArenaPlan plan = planArena(buffers, kAlign);
  for (uint64_t offset : plan.offsets)
    EXPECT_EQ(offset % kAlign, 0u);
}

/// On random interval sets: no two simultaneously live buffers overlap, the
/// arena is at least the live lower bound and at most the sum of all sizes.
TEST(ArenaPlanner, RandomizedNoLiveOverlap) {
  unsigned seed = std::random_device{}();
  std::printf("ArenaPlanner randomized seed: %u\n", seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 500; ++trial) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " trial " +
                 std::to_string(trial));
    int count = std::uniform_int_distribution<int>(1, 60)(rng);
    int steps = std::uniform_int_distribution<int>(1, 80)(rng);
    std::vector<BufferInterval> buffers;
    uint64_t total = 0;
    for (int i = 0; i < count; ++i) {
      int64_t start = std::uniform_int_distribution<int>(0, steps - 1)(rng);
      int64_t end = std::uniform_int_distribution<int>(start, steps - 1)(rng);
      uint64_t bytes =
          std::uniform_int_distribution<uint64_t>(1, 1 << 20)(rng);
      buffers.push_back({start, end, bytes});
      total += alignTo(bytes, kAlign);
    }
    ArenaPlan plan = planArena(buffers, kAlign);
    ASSERT_EQ(plan.offsets.size(), buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      ASSERT_LE(plan.offsets[i] + alignTo(buffers[i].bytes, kAlign),
                plan.arenaBytes);
      for (size_t j = i + 1; j < buffers.size(); ++j)
        ASSERT_FALSE(conflict(buffers[i], plan.offsets[i], buffers[j],
                              plan.offsets[j]))
            << "buffers " << i << " and " << j << " overlap";
    }
    EXPECT_GE(plan.arenaBytes, plan.liveLowerBound);
    EXPECT_LE(plan.arenaBytes, total);
  }
}

} // namespace
