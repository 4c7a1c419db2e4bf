//===- ExecuteAttention.cpp - kiln.attention on the host ------------------===//
//
// The definition, row by row in double: the scores of one query, shifted by
// their maximum before exp, normalized, then the weighted sum of values.
//
//===----------------------------------------------------------------------===//

#include "ExecuteAttention.h"

#include "kiln/Dialect/Kiln/ShapeInference.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln {

FailureOr<HostTensor> executeAttention(AttentionOp op, const HostTensor &query,
                                       const HostTensor &key,
                                       const HostTensor &value,
                                       const HostTensor *mask) {
  auto resultType = inferAttentionType(
      op.getLoc(), query.getType(), key.getType(), value.getType(),
      mask ? mask->getType() : RankedTensorType());
  if (failed(resultType))
    return failure();
  FailureOr<HostTensor> result = HostTensor::allocate(
      query.elementType, resultType->getShape(), op.getLoc());
  if (failed(result))
    return failure();
  ArrayRef<int64_t> q = query.shape, k = key.shape;
  int64_t batch = q[0], heads = q[1], queries = q[2], size = q[3];
  int64_t kvHeads = k[1], keys = k[2], valueSize = value.shape[3];
  int64_t group = heads / kvHeads;
  double scale = op.getScale().convertToDouble();
  double softcap = op.getSoftcap().convertToDouble();
  ArrayRef<float> sinks = op.getSink().value_or(ArrayRef<float>());
  bool zeroNanProbs = op.getZeroNanProbs();
  // Mask element (b, h, i, j) under broadcasting: stride 0 on size-1 dims.
  SmallVector<int64_t> maskStrides(4, 0);
  if (mask) {
    int64_t lead = 4 - static_cast<int64_t>(mask->shape.size());
    int64_t stride = 1;
    for (int64_t d = 3; d >= lead; --d) {
      int64_t dim = mask->shape[d - lead];
      maskStrides[d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  std::vector<double> scores(keys);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t kvHead = h / group;
      for (int64_t i = 0; i < queries; ++i) {
        int64_t qBase = ((b * heads + h) * queries + i) * size;
        // A sink joins the normalization as one more logit.
        double sink = sinks.empty() ? -std::numeric_limits<double>::infinity()
                                    : sinks[sinks.size() == 1 ? 0 : h];
        double maxScore = sink;
        for (int64_t j = 0; j < keys; ++j) {
          int64_t kBase = ((b * kvHeads + kvHead) * keys + j) * size;
          double dot = 0.0;
          for (int64_t d = 0; d < size; ++d)
            dot += query.getAsDouble(qBase + d) * key.getAsDouble(kBase + d);
          scores[j] = scale * dot;
          if (softcap > 0.0)
            scores[j] = softcap * std::tanh(scores[j] / softcap);
          if (mask)
            scores[j] += mask->getAsDouble(b * maskStrides[0] + h * maskStrides[1] +
                                           i * maskStrides[2] + j * maskStrides[3]);
          maxScore = std::max(maxScore, scores[j]);
        }
        double sum = sinks.empty() ? 0.0 : std::exp(sink - maxScore);
        for (int64_t j = 0; j < keys; ++j) {
          scores[j] = std::exp(scores[j] - maxScore);
          sum += scores[j];
        }
        int64_t outBase = ((b * heads + h) * queries + i) * valueSize;
        // Every probability e_j / sum is NaN exactly when the sum is 0 (all
        // keys masked with -inf) or NaN; the guard makes them zero.
        if (zeroNanProbs && (sum == 0.0 || std::isnan(sum))) {
          for (int64_t d = 0; d < valueSize; ++d)
            result->setFromDouble(outBase + d, 0.0);
          continue;
        }
        for (int64_t d = 0; d < valueSize; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < keys; ++j)
            acc += scores[j] *
                   value.getAsDouble(((b * kvHeads + kvHead) * keys + j) *
                                         valueSize + d);
          result->setFromDouble(outBase + d, acc / sum);
        }
      }
    }
  return result;
}

} // namespace kiln
