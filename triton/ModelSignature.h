//===- ModelSignature.h - A Kiln model as Triton configures it --*- C++ -*-===//
//
// What Triton's model configuration says about a model's tensors (names,
// TYPE_* data types, dims with -1 for a size that varies, max_batch_size),
// derived from a compiled Kiln model. A model batches when one symbolic dim
// is the first dim of every input and output and appears nowhere else: then
// requests concatenated along it run as one, and max_batch_size is the top
// of its range.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_MODELSIGNATURE_H
#define KILN_TRITON_MODELSIGNATURE_H

#include "TritonApi.h"

#include "kiln/runtime/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {
struct Artifact;
} // namespace rt

namespace triton {

/// One input or output as the model configuration lists it.
struct TensorSignature {
  std::string name;
  rt::DType dtype = rt::DType::F32;
  /// All its dims, the batch dim first when the model batches (a
  /// configuration with max_batch_size > 0 lists the others); -1 for a dim
  /// that varies (symbolic), else its size.
  std::vector<int64_t> dims;
  /// For each of `dims`, the least and greatest size it takes (both the
  /// size itself for a static dim).
  std::vector<int64_t> minDims, maxDims;
  /// An input padded along the configuration's pad_dim (Padding.h): Triton's
  /// batcher must let its shapes differ within a batch (allow_ragged_batch).
  bool ragged = false;
};

/// A model's tensors and batching as Triton sees them.
struct ModelSignature {
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  /// The top of the batch dim's range; 0 when the model does not batch.
  int64_t maxBatchSize = 0;
  /// The index of the batch dim among the model's dims; -1 when none.
  int32_t batchDim = -1;
  /// Why the model does not batch; empty when it does.
  std::string whyNotBatched;
};

/// The signature of the compiled model `plan`.
ModelSignature signatureOf(const rt::Artifact &plan);

/// Triton's name of a data type ("TYPE_FP32").
const char *configDataType(rt::DType dtype);

/// Triton's data type of a Kiln element type, as requests carry it.
TRITONSERVER_DataType tritonDataType(rt::DType dtype);

} // namespace triton
} // namespace kiln

#endif // KILN_TRITON_MODELSIGNATURE_H
