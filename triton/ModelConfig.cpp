//===- ModelConfig.cpp - Triton's model configuration for Kiln ------------===//

#include "ModelConfig.h"

#include "llvm/ADT/StringExtras.h"

using namespace kiln;
using namespace kiln::triton;
namespace json = llvm::json;

/// An int64 field of the configuration: Triton writes them as JSON strings
/// (protobuf's JSON mapping) and accepts numbers too.
static bool readInteger(const json::Value &value, int64_t &out) {
  if (std::optional<int64_t> n = value.getAsInteger()) {
    out = *n;
    return true;
  }
  if (std::optional<llvm::StringRef> text = value.getAsString())
    return !text->getAsInteger(10, out);
  return false;
}

std::string kiln::triton::readServingConfig(const json::Object &config,
                                            ServingConfig &out) {
  if (const json::Value *name = config.get("default_model_filename")) {
    std::optional<llvm::StringRef> text = name->getAsString();
    if (!text)
      return "default_model_filename is not a string";
    out.defaultModelFilename = text->str();
  }
  const json::Object *parameters = config.getObject("parameters");
  if (!parameters)
    return "";
  for (const auto &[key, value] : *parameters) {
    const json::Object *entry = value.getAsObject();
    std::optional<llvm::StringRef> text =
        entry ? entry->getString("string_value") : std::nullopt;
    if (!text)
      return "parameter '" + key.str() + "' has no string_value";
    if (key == "pad_dim")
      out.padDim = text->str();
    else if (key == "pad_mask")
      out.padMask = text->str();
    else
      out.parameters[key.str()] = text->str();
  }
  return "";
}

/// The configuration's dims of `t`: all of them, or those after the batch
/// dim when the configuration batches.
static json::Array configDims(const TensorSignature &t, bool batched) {
  json::Array dims;
  for (size_t i = batched ? 1 : 0; i < t.dims.size(); ++i)
    dims.push_back(t.dims[i]);
  return dims;
}

/// The configuration's entry of `t`.
static json::Object configTensor(const TensorSignature &t, bool batched) {
  json::Object entry{{"name", t.name},
                     {"data_type", configDataType(t.dtype)},
                     {"dims", configDims(t, batched)}};
  if (t.ragged)
    entry["allow_ragged_batch"] = true;
  return entry;
}

/// Whether the configuration lists tensors under `key`.
static bool lists(const json::Object &config, llvm::StringRef key) {
  const json::Array *entries = config.getArray(key);
  return entries && !entries->empty();
}

/// Checks one configuration entry (`kind` "input" or "output") against the
/// model's tensors; returns an error message, empty when it fits.
static std::string checkTensor(const json::Value &entry,
                               const std::vector<TensorSignature> &tensors,
                               const char *kind, bool batched) {
  const json::Object *object = entry.getAsObject();
  std::optional<llvm::StringRef> name =
      object ? object->getString("name") : std::nullopt;
  if (!name)
    return std::string("an ") + kind + " without a name";
  std::string what = std::string(kind) + " '" + name->str() + "'";
  const TensorSignature *t = nullptr;
  for (const TensorSignature &candidate : tensors)
    if (candidate.name == *name)
      t = &candidate;
  if (!t) {
    std::string names;
    for (const TensorSignature &candidate : tensors)
      names += (names.empty() ? "'" : ", '") + candidate.name + "'";
    return "the model has no " + what + " (its " + kind + "s: " + names + ")";
  }
  if (object->get("reshape"))
    return what + ": reshape is not supported";
  if (t->ragged && !object->getBoolean("allow_ragged_batch").value_or(false))
    return what + " is padded (pad_dim) and needs allow_ragged_batch: true, "
                  "without which Triton batches only requests of one shape";
  std::optional<llvm::StringRef> type = object->getString("data_type");
  if (!type || *type != configDataType(t->dtype))
    return what + " has data_type " +
           (type ? type->str() : std::string("(none)")) + ", the model's is " +
           configDataType(t->dtype);
  const json::Array *dims = object->getArray("dims");
  json::Array want = configDims(*t, batched);
  if (!dims || dims->size() != want.size())
    return what + " has " + std::to_string(dims ? dims->size() : 0) +
           " dims, the model's has " + std::to_string(want.size()) +
           (batched ? " after the batch dim" : "");
  size_t first = batched ? 1 : 0;
  for (size_t i = 0; i < dims->size(); ++i) {
    int64_t dim = 0;
    if (!readInteger((*dims)[i], dim))
      return what + ": dims[" + std::to_string(i) + "] is not an integer";
    size_t axis = first + i;
    bool varies = t->dims[axis] < 0;
    if (dim == -1 ? varies : dim >= t->minDims[axis] && dim <= t->maxDims[axis])
      continue;
    std::string model = varies ? "from " + std::to_string(t->minDims[axis]) +
                                     " to " + std::to_string(t->maxDims[axis])
                               : std::to_string(t->dims[axis]);
    return what + ": dims[" + std::to_string(i) + "] is " +
           std::to_string(dim) + ", the model's is " + model;
  }
  return "";
}

std::string kiln::triton::checkConfig(json::Object &config,
                                      const ModelSignature &signature,
                                      bool autoComplete, bool &changed,
                                      int64_t &maxBatchSize) {
  changed = false;
  maxBatchSize = 0;
  if (const json::Value *value = config.get("max_batch_size"))
    if (!readInteger(*value, maxBatchSize) || maxBatchSize < 0)
      return "max_batch_size is not a count";

  bool listsInputs = lists(config, "input");
  if (autoComplete && !listsInputs && maxBatchSize == 0 &&
      signature.maxBatchSize > 0) {
    maxBatchSize = signature.maxBatchSize;
    config["max_batch_size"] = maxBatchSize;
    changed = true;
  }
  bool batched = maxBatchSize > 0;
  if (batched && signature.maxBatchSize == 0)
    return "max_batch_size is " + std::to_string(maxBatchSize) +
           " but the model does not batch: " + signature.whyNotBatched;
  if (maxBatchSize > signature.maxBatchSize && signature.maxBatchSize > 0)
    return "max_batch_size " + std::to_string(maxBatchSize) +
           " exceeds the top of the model's batch dim, " +
           std::to_string(signature.maxBatchSize);

  if (autoComplete) {
    auto fill = [&](llvm::StringRef key,
                    const std::vector<TensorSignature> &tensors) {
      if (lists(config, key))
        return;
      json::Array entries;
      for (const TensorSignature &t : tensors)
        entries.push_back(configTensor(t, batched));
      config[key] = std::move(entries);
      changed = true;
    };
    fill("input", signature.inputs);
    fill("output", signature.outputs);
    if (batched && !config.get("dynamic_batching") &&
        !config.get("sequence_batching")) {
      config["dynamic_batching"] = json::Object{};
      changed = true;
    }
  }

  const json::Array *inputs = config.getArray("input");
  for (const TensorSignature &t : signature.inputs) {
    bool listed = false;
    for (const json::Value &entry : inputs ? *inputs : json::Array()) {
      const json::Object *object = entry.getAsObject();
      if (object && object->getString("name") == llvm::StringRef(t.name))
        listed = true;
    }
    if (!listed)
      return "the configuration lacks input '" + t.name + "'";
  }
  for (const json::Value &entry : inputs ? *inputs : json::Array())
    if (std::string error =
            checkTensor(entry, signature.inputs, "input", batched);
        !error.empty())
      return error;
  if (const json::Array *outputs = config.getArray("output"))
    for (const json::Value &entry : *outputs)
      if (std::string error =
              checkTensor(entry, signature.outputs, "output", batched);
          !error.empty())
        return error;
  return "";
}
