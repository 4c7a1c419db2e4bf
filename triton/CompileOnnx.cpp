//===- CompileOnnx.cpp - A model.onnx compiled when Triton loads it -------===//

#include "CompileOnnx.h"

#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/Diagnostics.h"
#include "kiln/Compiler/OptionText.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"

using namespace kiln;
using namespace kiln::triton;

const char *const kiln::triton::kCompileParameters[] = {
    "dims",       "input_shapes", "precision",          "kv_cache_in_place",
    "allow_tf32", "weights",      "weights_block_size", nullptr};

/// Reads a "true"/"false" parameter into `out`; returns an error message.
static std::string readFlag(const std::string &key, const std::string &value,
                            bool &out) {
  if (value == "true" || value == "false") {
    out = value == "true";
    return "";
  }
  return "parameter '" + key + "' is '" + value + "', not true or false";
}

/// Applies `parameters` to `options`; returns an error message.
static std::string
applyParameters(const std::map<std::string, std::string> &parameters,
                CompileOptions &options) {
  for (const auto &[key, value] : parameters) {
    std::string error;
    llvm::SmallVector<llvm::StringRef> specs;
    llvm::StringRef(value).split(specs, ',', -1, /*KeepEmpty=*/false);
    if (key == "dims") {
      for (llvm::StringRef spec : specs)
        if (error.empty())
          error = parseDimValue(spec.trim(), options.import);
    } else if (key == "input_shapes") {
      for (llvm::StringRef spec : specs)
        if (error.empty())
          error = parseInputShape(spec.trim(), options.import);
    } else if (key == "precision") {
      if (value != "fp32" && value != "fp16" && value != "bf16")
        error = "'" + value + "' is not fp32, fp16 or bf16";
      options.pipeline.mixedPrecision.precision = value;
    } else if (key == "kv_cache_in_place") {
      error = readFlag(key, value, options.pipeline.cacheInPlace);
    } else if (key == "allow_tf32") {
      error = readFlag(key, value, options.allowTf32);
    } else if (key == "weights" || key == "weights_block_size") {
      // Both read together below, once every parameter is known.
      continue;
    } else {
      std::string known;
      for (const char *const *k = kCompileParameters; *k; ++k)
        known += std::string(known.empty() ? "" : ", ") + *k;
      return "unknown parameter '" + key + "' (the Kiln backend reads " +
             known + ", and pad_dim and pad_mask)";
    }
    if (!error.empty())
      return "parameter '" + key + "': " + error;
  }
  auto weights = parameters.find("weights");
  auto blockSize = parameters.find("weights_block_size");
  int64_t block = 32;
  if (blockSize != parameters.end() &&
      llvm::StringRef(blockSize->second).getAsInteger(10, block))
    return "parameter 'weights_block_size': '" + blockSize->second +
           "' is not an integer";
  if (std::string error =
          parseWeights(weights == parameters.end() ? "float" : weights->second,
                       block, options.pipeline);
      !error.empty())
    return std::string("parameter '") +
           (weights == parameters.end() ? "weights_block_size" : "weights") +
           "': " + error;
  return "";
}

std::string
kiln::triton::compileOnnx(const std::string &path,
                          const std::map<std::string, std::string> &parameters,
                          rt::Artifact &artifact) {
  CompileOptions options;
  // The importer's messages name the configuration's parameters.
  options.import.names.dims = "parameter 'dims'";
  options.import.names.inputShapes = "parameter 'input_shapes'";
  if (std::string error = applyParameters(parameters, options); !error.empty())
    return error;

  mlir::MLIRContext context;
  context.loadDialect<KilnDialect, mlir::func::FuncDialect>();
  CollectedDiagnostics diagnostics(&context);
  if (mlir::succeeded(compileModel(&context, path, options, artifact)))
    return "";
  std::string text = diagnostics.text();
  return text.empty() ? "compiling " + path + " failed" : text;
}
