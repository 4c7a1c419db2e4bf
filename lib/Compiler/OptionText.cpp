//===- OptionText.cpp - import options from their text forms --------------===//

#include "kiln/Compiler/OptionText.h"

#include "kiln/Dialect/Kiln/DimExpr.h"

using namespace mlir;

namespace kiln {

std::string parseInputShape(StringRef spec, ImportOptions &options) {
  auto [name, dims] = spec.rsplit('=');
  if (name.empty() || name.size() == spec.size())
    return "expected NAME=DIMxDIM..., got '" + spec.str() + "'";
  SmallVector<int64_t> shape;
  if (!dims.empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef part : parts) {
      int64_t dim;
      if (part.getAsInteger(10, dim) || dim < 0)
        return "invalid dim '" + part.str() + "' in '" + spec.str() + "'";
      shape.push_back(dim);
    }
  }
  options.inputShapes[name] = shape;
  return "";
}

std::string parseDimValue(StringRef spec, ImportOptions &options) {
  auto [name, text] = spec.rsplit('=');
  if (name.empty() || name.size() == spec.size())
    return "expected NAME=N or NAME=MIN:MAX, got '" + spec.str() + "'";
  options.dimValues.erase(name);
  options.dimRanges.erase(name);
  options.dimExpressions.erase(name);
  if (text.contains(':')) {
    auto [minText, maxText] = text.split(':');
    int64_t min, max;
    if (minText.getAsInteger(10, min) || maxText.getAsInteger(10, max) ||
        min < 0 || max < min)
      return "invalid range '" + text.str() + "' in '" + spec.str() +
             "' (expected MIN:MAX with 0 <= MIN <= MAX)";
    // A range of one value is a pinned dim.
    if (min == max)
      options.dimValues[name] = min;
    else
      options.dimRanges[name] = {min, max};
    return "";
  }
  int64_t value;
  if (!text.getAsInteger(10, value)) {
    if (value < 0)
      return "invalid value '" + text.str() + "' in '" + spec.str() + "'";
    options.dimValues[name] = value;
    return "";
  }
  // An expression of other names: a relation the model does not state.
  std::string error;
  std::optional<DimExpr> expr = DimExpr::parse(text, error);
  if (!expr || expr->isConstant() ||
      llvm::is_contained(expr->symbols(), name.str()))
    return "invalid value '" + text.str() + "' in '" + spec.str() +
           "' (expected N, MIN:MAX, or an expression of other dims' names)";
  options.dimExpressions[name] = expr->str();
  return "";
}

std::string parseWeights(llvm::StringRef form, int64_t blockSize,
                         PipelineOptions &pipeline) {
  if (form != "float" && form != "int4" && form != "int8" && form != "fp8")
    return "'" + form.str() + "' is not float, int4, int8 or fp8";
  if (blockSize < 16 || (blockSize & (blockSize - 1)) != 0)
    return "the block size must be a power of two of at least 16, got " +
           std::to_string(blockSize);
  pipeline.quantizeWeights = form != "float";
  pipeline.weights.bits = form == "int4" ? 4 : 8;
  pipeline.weights.float8 = form == "fp8";
  pipeline.weights.blockSize = blockSize;
  return "";
}

} // namespace kiln
