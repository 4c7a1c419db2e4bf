//===- ModelConfig.h - Triton's model configuration for Kiln ----*- C++ -*-===//
//
// Reads the fields of a Triton model configuration (its JSON form, as
// TRITONBACKEND_ModelConfig gives it) that the Kiln backend uses, checks the
// configuration against a compiled model, and completes one that leaves the
// tensors or the batch size out. Pure logic over JSON, tested without a
// server.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_MODELCONFIG_H
#define KILN_TRITON_MODELCONFIG_H

#include "ModelSignature.h"

#include "llvm/Support/JSON.h"

#include <map>
#include <string>

namespace kiln {
namespace triton {

/// The settings the backend reads from a model configuration before it has
/// a model.
struct ServingConfig {
  /// `parameters { key: "dims" value: { string_value: "..." } }`, by key:
  /// the options of compiling a model.onnx (CompileOnnx.h).
  std::map<std::string, std::string> parameters;
  /// The parameters `pad_dim` and `pad_mask` (Padding.h), which are the
  /// backend's own; empty when not given.
  std::string padDim, padMask;
  /// `default_model_filename`: the file in the version folder to load
  /// (empty: model.so, else model.onnx).
  std::string defaultModelFilename;
};

/// Reads `config`'s parameters and default_model_filename; returns an error
/// message, empty on success.
std::string readServingConfig(const llvm::json::Object &config,
                              ServingConfig &out);

/// Checks `config` against `signature`: every model input listed with its
/// data type and dims (-1 where the model's size varies, or a size in its
/// range), listed outputs that exist, and max_batch_size within the batch
/// dim's range (0 where the model does not batch). With `autoComplete`,
/// first fills in what the configuration leaves out: the inputs and outputs,
/// max_batch_size (the top of the batch dim's range, when the inputs were
/// left out too) and dynamic batching for a model that batches; `changed`
/// says whether it did. Returns an error message naming the field, empty on
/// success; `maxBatchSize` receives the configuration's.
std::string checkConfig(llvm::json::Object &config,
                        const ModelSignature &signature, bool autoComplete,
                        bool &changed, int64_t &maxBatchSize);

} // namespace triton
} // namespace kiln

#endif // KILN_TRITON_MODELCONFIG_H
