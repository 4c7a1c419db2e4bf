//===- RunPlanTest.cpp - Which requests the Triton backend runs together --===//

#include "RunPlan.h"

#include <gtest/gtest.h>

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
