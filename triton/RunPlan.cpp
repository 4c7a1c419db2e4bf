//===- RunPlan.cpp - Which requests run together --------------------------===//

#include "RunPlan.h"

#include <algorithm>

using namespace kiln::triton;

/// The padded axis of input `i`, or -1.
static int32_t padAxis(const std::vector<int32_t> &padAxes, size_t i) {
  return i < padAxes.size() ? padAxes[i] : -1;
}

/// Whether two requests' inputs agree on every dim after the first but the
/// padded ones.
static bool agreeAfterBatch(const RequestShapes &a, const RequestShapes &b,
                            const std::vector<int32_t> &padAxes) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || a[i].empty())
      return false;
    for (size_t axis = 1; axis < a[i].size(); ++axis)
      if (a[i][axis] != b[i][axis] && int32_t(axis) != padAxis(padAxes, i))
        return false;
  }
  return true;
}

/// The batch of a request: its first input's first dim (0 without inputs).
static int64_t batchOf(const RequestShapes &shapes) {
  return shapes.empty() || shapes.front().empty() ? 0 : shapes.front().front();
}

std::vector<std::vector<size_t>>
kiln::triton::planRuns(const std::vector<RequestShapes> &requests,
                       int64_t maxBatchSize,
                       const std::vector<int32_t> &padAxes) {
  std::vector<std::vector<size_t>> runs;
  std::vector<int64_t> batches;
  for (size_t r = 0; r < requests.size(); ++r) {
    bool joined = false;
    for (size_t run = 0; maxBatchSize > 0 && run < runs.size() && !joined;
         ++run) {
      const RequestShapes &first = requests[runs[run].front()];
      if (!agreeAfterBatch(first, requests[r], padAxes) ||
          batches[run] + batchOf(requests[r]) > maxBatchSize)
        continue;
      runs[run].push_back(r);
      batches[run] += batchOf(requests[r]);
      joined = true;
    }
    if (!joined) {
      runs.push_back({r});
      batches.push_back(batchOf(requests[r]));
    }
  }
  return runs;
}

RequestShapes
kiln::triton::runShapes(const std::vector<RequestShapes> &requests,
                        const std::vector<size_t> &members,
                        const std::vector<int32_t> &padAxes) {
  RequestShapes shapes = requests[members.front()];
  for (size_t m = 1; m < members.size(); ++m)
    for (size_t i = 0; i < shapes.size(); ++i) {
      const std::vector<int64_t> &shape = requests[members[m]][i];
      shapes[i][0] += shape[0];
      if (int32_t axis = padAxis(padAxes, i); axis > 0)
        shapes[i][axis] = std::max(shapes[i][axis], shape[axis]);
    }
  return shapes;
}
