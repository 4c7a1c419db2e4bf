//===- RunPlanTest.cpp - Which requests the Triton backend runs together --===//

#include "RunPlan.h"
#include "Padding.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kiln::triton;

namespace {

/// A request of a BERT-style model: ids and mask, [batch, sequence] each.
RequestShapes bert(int64_t batch, int64_t sequence) {
  return {{batch, sequence}, {batch, sequence}};
}

TEST(RunPlan, JoinsRequestsThatAgreeAfterTheBatchDim) {
  std::vector<RequestShapes> requests = {bert(1, 8), bert(2, 8), bert(1, 16),
                                         bert(3, 8), bert(1, 16)};
  std::vector<std::vector<size_t>> runs = planRuns(requests, 8);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0], (std::vector<size_t>{0, 1, 3}));
  EXPECT_EQ(runs[1], (std::vector<size_t>{2, 4}));
  EXPECT_EQ(runShapes(requests, runs[0]), bert(6, 8));
  EXPECT_EQ(runShapes(requests, runs[1]), bert(2, 16));
}

TEST(RunPlan, KeepsEachRunWithinTheMaxBatch) {
  std::vector<RequestShapes> requests = {bert(3, 8), bert(3, 8), bert(2, 8),
                                         bert(1, 8)};
  std::vector<std::vector<size_t>> runs = planRuns(requests, 4);
  // The batch-2 request fits neither run of 3: a run of its own; the last
  // fills the first.
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0], (std::vector<size_t>{0, 3}));
  EXPECT_EQ(runs[1], (std::vector<size_t>{1}));
  EXPECT_EQ(runs[2], (std::vector<size_t>{2}));
}

TEST(RunPlan, WithoutBatchingEveryRequestRunsAlone) {
  std::vector<RequestShapes> requests = {bert(1, 8), bert(1, 8)};
  std::vector<std::vector<size_t>> runs = planRuns(requests, 0);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0], (std::vector<size_t>{0}));
  EXPECT_EQ(runs[1], (std::vector<size_t>{1}));
}

TEST(RunPlan, InputsOfAnotherRankNeverJoin) {
  std::vector<RequestShapes> requests = {{{1, 8}}, {{1, 8, 1}}};
  EXPECT_EQ(planRuns(requests, 8).size(), 2u);
}

} // namespace

namespace {

TEST(RunPlan, PaddingJoinsRequestsOfOtherLengths) {
  std::vector<RequestShapes> requests = {bert(1, 8), bert(2, 5), bert(1, 12)};
  // Both inputs padded along their sequence axis.
  std::vector<int32_t> padAxes = {1, 1};
  std::vector<std::vector<size_t>> runs = planRuns(requests, 8, padAxes);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runShapes(requests, runs[0], padAxes), bert(4, 12));
  // Unpadded axes must still agree.
  std::vector<RequestShapes> other = {{{1, 8}, {1, 3}}, {{1, 5}, {1, 4}}};
  EXPECT_EQ(planRuns(other, 8, {1, -1}).size(), 2u);
}

TEST(Padding, PadsEachSliceWithZerosAndCutsThemOffAgain) {
  // [outer 2, rows 2, inner 3 bytes] padded to 3 rows.
  const char src[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  char padded[18];
  std::memset(padded, 0x55, sizeof(padded));
  padRows(src, padded, 2, 2, 3, 3);
  const char want[] = {1, 2, 3, 4, 5, 6, 0, 0, 0, 7, 8, 9, 10, 11, 12, 0, 0, 0};
  EXPECT_EQ(std::memcmp(padded, want, sizeof(want)), 0);
  char back[12];
  unpadRows(padded, back, 2, 2, 3, 3);
  EXPECT_EQ(std::memcmp(back, src, sizeof(src)), 0);
}

} // namespace
