//===- OptionText.h - import options from their text forms ------*- C++ -*-===//
//
// The text forms in which tools and the Python package take import options
// (`--dim batch=1:8`, `--input-shape input_ids=1x128`) and the weights'
// form (`--weights int4`): parsed here, in the compiler driver's library,
// so that the importer and the passes take only typed options.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_OPTIONTEXT_H
#define KILN_COMPILER_OPTIONTEXT_H

#include "kiln/Compiler/Pipeline.h"
#include "kiln/Importer/ONNX/Importer.h"

#include <string>

namespace kiln {

/// Parses `NAME=2x128` (or `NAME=` for a scalar) into `options`; returns an
/// error message, empty on success.
std::string parseInputShape(llvm::StringRef spec, ImportOptions &options);

/// Parses `NAME=N` into `options.dimValues`, `NAME=MIN:MAX` into
/// `options.dimRanges`, or `NAME=EXPRESSION` (of other names) into
/// `options.dimExpressions`; returns an error message, empty on success.
std::string parseDimValue(llvm::StringRef spec, ImportOptions &options);

/// Sets `pipeline`'s weight quantization from `form` ("float", "int4",
/// "int8" or "fp8") and `blockSize`, as kilnc's --weights and
/// --weights-block-size; returns an error message, empty on success.
std::string parseWeights(llvm::StringRef form, int64_t blockSize,
                         PipelineOptions &pipeline);

} // namespace kiln

#endif // KILN_COMPILER_OPTIONTEXT_H
