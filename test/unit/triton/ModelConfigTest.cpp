//===- ModelConfigTest.cpp - Triton configurations against Kiln models ----===//

#include "ModelConfig.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::triton;
namespace json = llvm::json;

namespace {

/// A BERT-style encoder compiled with batch=1:8, sequence=1:128.
ModelSignature encoder() {
  ModelSignature s;
  s.inputs = {{"input_ids", rt::DType::I64, {-1, -1}, {1, 1}, {8, 128}},
              {"attention_mask", rt::DType::I64, {-1, -1}, {1, 1}, {8, 128}}};
  s.outputs = {
      {"hidden", rt::DType::F32, {-1, -1, 32}, {1, 1, 32}, {8, 128, 32}}};
  s.maxBatchSize = 8;
  s.batchDim = 0;
  return s;
}

/// Parses a configuration written as JSON text.
json::Object parse(const char *text) {
  llvm::Expected<json::Value> value = json::parse(text);
  EXPECT_TRUE(bool(value));
  return std::move(*value->getAsObject());
}

TEST(ModelConfig, CompletesAConfigurationThatLeavesTheTensorsOut) {
  json::Object config =
      parse(R"({"name": "bert", "max_batch_size": 0, "input": [],
                "output": []})");
  bool changed = false;
  int64_t maxBatch = 0;
  EXPECT_EQ(checkConfig(config, encoder(), true, changed, maxBatch), "");
  EXPECT_TRUE(changed);
  EXPECT_EQ(maxBatch, 8);
  EXPECT_EQ(config.getInteger("max_batch_size"), 8);
  ASSERT_TRUE(config.getObject("dynamic_batching"));
  const json::Array *inputs = config.getArray("input");
  ASSERT_TRUE(inputs && inputs->size() == 2);
  const json::Object *ids = (*inputs)[0].getAsObject();
  EXPECT_EQ(ids->getString("name"), llvm::StringRef("input_ids"));
  EXPECT_EQ(ids->getString("data_type"), llvm::StringRef("TYPE_INT64"));
  // The batch dim is left out of a batching configuration's dims.
  EXPECT_EQ(*ids->getArray("dims"), json::Array({-1}));
  const json::Object *hidden = (*config.getArray("output"))[0].getAsObject();
  EXPECT_EQ(*hidden->getArray("dims"), json::Array({-1, 32}));
}

TEST(ModelConfig, AcceptsPinnedSizesInRangeAndDimsAsStrings) {
  json::Object config = parse(R"({"max_batch_size": 4,
      "input": [{"name": "input_ids", "data_type": "TYPE_INT64", "dims": ["64"]},
                {"name": "attention_mask", "data_type": "TYPE_INT64", "dims": [-1]}],
      "output": [{"name": "hidden", "data_type": "TYPE_FP32", "dims": [-1, 32]}]})");
  bool changed = true;
  int64_t maxBatch = 0;
  EXPECT_EQ(checkConfig(config, encoder(), false, changed, maxBatch), "");
  EXPECT_FALSE(changed);
  EXPECT_EQ(maxBatch, 4);
}

/// The error checkConfig gives for `text` without completing it.
std::string errorOf(const char *text, const ModelSignature &s = encoder()) {
  json::Object config = parse(text);
  bool changed = false;
  int64_t maxBatch = 0;
  return checkConfig(config, s, false, changed, maxBatch);
}

TEST(ModelConfig, RefusesWhatDoesNotFitTheModel) {
  EXPECT_EQ(errorOf(R"({"max_batch_size": 16})"),
            "max_batch_size 16 exceeds the top of the model's batch dim, 8");
  EXPECT_EQ(errorOf(R"({"max_batch_size": 8, "input": []})"),
            "the configuration lacks input 'input_ids'");
  EXPECT_EQ(
      errorOf(R"({"max_batch_size": 8, "input": [
        {"name": "input_ids", "data_type": "TYPE_INT32", "dims": [-1]},
        {"name": "attention_mask", "data_type": "TYPE_INT64", "dims": [-1]}]})"),
      "input 'input_ids' has data_type TYPE_INT32, the model's is TYPE_INT64");
  EXPECT_EQ(errorOf(R"({"max_batch_size": 8, "input": [
        {"name": "input_ids", "data_type": "TYPE_INT64", "dims": [256]},
        {"name": "attention_mask", "data_type": "TYPE_INT64", "dims": [-1]}]})"),
            "input 'input_ids': dims[0] is 256, the model's is from 1 to 128");
  EXPECT_EQ(
      errorOf(R"({"max_batch_size": 8, "input": [
        {"name": "input_ids", "data_type": "TYPE_INT64", "dims": [-1, -1]},
        {"name": "attention_mask", "data_type": "TYPE_INT64", "dims": [-1]}]})"),
      "input 'input_ids' has 2 dims, the model's has 1 after the batch dim");
  EXPECT_EQ(errorOf(R"({"max_batch_size": 8, "input": [
        {"name": "input_ids", "data_type": "TYPE_INT64", "dims": [-1]},
        {"name": "attention_mask", "data_type": "TYPE_INT64", "dims": [-1]}],
        "output": [{"name": "logits", "data_type": "TYPE_FP32", "dims": [-1]}]})"),
            "the model has no output 'logits' (its outputs: 'hidden')");
  EXPECT_EQ(errorOf(R"({"max_batch_size": 8, "input": [
        {"name": "input_ids", "data_type": "TYPE_INT64", "dims": [-1]},
        {"name": "attention_mask", "data_type": "TYPE_INT64", "dims": [-1]}],
        "output": [{"name": "hidden", "data_type": "TYPE_FP32", "dims": [-1, 16]}]})"),
            "output 'hidden': dims[1] is 16, the model's is 32");
}

TEST(ModelConfig, RefusesBatchingAModelThatCannot) {
  ModelSignature s = encoder();
  s.maxBatchSize = 0;
  s.batchDim = -1;
  s.whyNotBatched = "the model was compiled with static shapes";
  EXPECT_EQ(errorOf(R"({"max_batch_size": 2})", s),
            "max_batch_size is 2 but the model does not batch: the model was "
            "compiled with static shapes");
  // Completing the configuration of such a model leaves batching off and
  // lists every dim.
  json::Object config = parse(R"({"max_batch_size": 0})");
  bool changed = false;
  int64_t maxBatch = 1;
  EXPECT_EQ(checkConfig(config, s, true, changed, maxBatch), "");
  EXPECT_EQ(maxBatch, 0);
  EXPECT_FALSE(config.get("dynamic_batching"));
  const json::Object *ids = (*config.getArray("input"))[0].getAsObject();
  EXPECT_EQ(*ids->getArray("dims"), json::Array({-1, -1}));
}

TEST(ModelConfig, PaddedInputsAreRaggedInTriton) {
  ModelSignature s = encoder();
  s.inputs[0].ragged = s.inputs[1].ragged = true;
  json::Object config = parse(R"({"max_batch_size": 8})");
  bool changed = false;
  int64_t maxBatch = 0;
  EXPECT_EQ(checkConfig(config, s, true, changed, maxBatch), "");
  const json::Object *ids = (*config.getArray("input"))[0].getAsObject();
  EXPECT_EQ(ids->getBoolean("allow_ragged_batch"), true);
  EXPECT_EQ(
      errorOf(R"({"max_batch_size": 8, "input": [
        {"name": "input_ids", "data_type": "TYPE_INT64", "dims": [-1],
         "allow_ragged_batch": true},
        {"name": "attention_mask", "data_type": "TYPE_INT64", "dims": [-1]}]})",
              s),
      "input 'attention_mask' is padded (pad_dim) and needs "
      "allow_ragged_batch: true, without which Triton batches only requests "
      "of one shape");
}

TEST(ModelConfig, ReadsParametersAndTheModelFile) {
  json::Object config = parse(R"({"default_model_filename": "bert.onnx",
      "parameters": {"dims": {"string_value": "batch=1:8,sequence=1:128"}}})");
  ServingConfig serving;
  EXPECT_EQ(readServingConfig(config, serving), "");
  EXPECT_EQ(serving.defaultModelFilename, "bert.onnx");
  EXPECT_EQ(serving.parameters["dims"], "batch=1:8,sequence=1:128");
  json::Object padded = parse(R"({"parameters": {
      "pad_dim": {"string_value": "sequence"},
      "pad_mask": {"string_value": "attention_mask"}}})");
  ServingConfig pads;
  EXPECT_EQ(readServingConfig(padded, pads), "");
  EXPECT_EQ(pads.padDim, "sequence");
  EXPECT_EQ(pads.padMask, "attention_mask");
  // The backend's own parameters are no options of the compiler.
  EXPECT_TRUE(pads.parameters.empty());
  json::Object bad = parse(R"({"parameters": {"dims": {"int_value": 3}}})");
  EXPECT_EQ(readServingConfig(bad, serving),
            "parameter 'dims' has no string_value");
}

} // namespace
