//===- RunPlan.h - Which requests run together ------------------*- C++ -*-===//
//
// Dynamic batching inside one call of TRITONBACKEND_ModelInstanceExecute:
// Triton's batcher hands the backend requests whose batch sizes add up to at
// most max_batch_size, but their other dims may differ (another sequence
// length). Requests that agree on every dim after the batch dim are
// concatenated along it into one run of the symbolic-batch model; the
// others run separately.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_RUNPLAN_H
#define KILN_TRITON_RUNPLAN_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {
namespace triton {

/// The shapes of one request's inputs, in the model's input order.
using RequestShapes = std::vector<std::vector<int64_t>>;

/// Groups requests into runs. With batching (`maxBatchSize` > 0) the
/// requests whose inputs agree on every dim after the first join one run,
/// in arrival order, while their first dims add up to at most
/// `maxBatchSize`; without, each request runs alone. `padAxes`, when not
/// empty, gives for each input the axis that is padded (Padding.h), or -1:
/// requests may differ there. Returns the indices into `requests` of each
/// run's members.
std::vector<std::vector<size_t>>
planRuns(const std::vector<RequestShapes> &requests, int64_t maxBatchSize,
         const std::vector<int32_t> &padAxes = {});

/// The input shapes of a run of `members` (indices into `requests`, which
/// agree after the first dim but on `padAxes`): each input's first dim is
/// the sum of theirs, each padded axis the longest of theirs.
RequestShapes runShapes(const std::vector<RequestShapes> &requests,
                        const std::vector<size_t> &members,
                        const std::vector<int32_t> &padAxes = {});

} // namespace triton
} // namespace kiln

#endif // KILN_TRITON_RUNPLAN_H
