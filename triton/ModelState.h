//===- ModelState.h - One model Triton serves with Kiln ---------*- C++ -*-===//
//
// What the backend keeps per Triton model: the compiled artifact (read from
// the version folder's model.so, or compiled from its model.onnx), the
// configuration checked against it, and one `rt::Model` per place its
// instances run (the host, or each GPU), shared by the instances there,
// each of which runs its own execution context.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_MODELSTATE_H
#define KILN_TRITON_MODELSTATE_H

#include "ModelSignature.h"
#include "Padding.h"
#include "TritonApi.h"

#include "kiln/runtime/ArtifactPlan.h"
#include "kiln/runtime/Model.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace kiln {
namespace triton {

/// A loaded model and the models its instances run.
class ModelState {
public:
  /// Loads the model Triton names: reads and checks (or completes) its
  /// configuration and reads or compiles its artifact.
  static TRITONSERVER_Error *create(TRITONBACKEND_Model *triton,
                                    std::unique_ptr<ModelState> &out);

  /// The model that runs on the host (`gpu` < 0) or on GPU `gpu`, created
  /// on first use and shared by the instances there.
  TRITONSERVER_Error *runner(int32_t gpu, rt::Model *&out);

  /// The model's name, for messages.
  const std::string &name() const { return modelName; }
  /// Its tensors as the configuration lists them.
  const ModelSignature &signature() const { return modelSignature; }
  /// The configuration's max_batch_size (0: no batching).
  int64_t maxBatchSize() const { return configMaxBatchSize; }
  /// Where runs pad requests of different lengths; off unless the
  /// configuration asks.
  const Padding &padding() const { return runPadding; }

private:
  ModelState() = default;
  /// Reads the artifact from the version folder; `parameters` are the
  /// configuration's.
  TRITONSERVER_Error *
  loadArtifact(const std::string &folder, const std::string &fileName,
               const std::map<std::string, std::string> &parameters);
  /// Checks `config`, Triton's configuration of the model as read when it
  /// loads, completing it when Triton allows.
  TRITONSERVER_Error *checkConfiguration(TRITONBACKEND_Model *triton,
                                         llvm::json::Object &config);

  std::string modelName;
  rt::Artifact artifact;
  ModelSignature modelSignature;
  int64_t configMaxBatchSize = 0;
  Padding runPadding;
  /// The models by place (-1 the host, else the GPU), and their lock.
  std::map<int32_t, std::unique_ptr<rt::Model>> runners;
  std::mutex runnersMutex;
};

} // namespace triton
} // namespace kiln

#endif // KILN_TRITON_MODELSTATE_H
