//===- OptionText.h - import options from their text forms ------*- C++ -*-===//
//
// The text forms in which tools and the Python package take import options
// (`--dim batch=1:8`, `--input-shape input_ids=1x128`): parsed here, in the
// compiler driver's library, so that the importer takes only typed options.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_OPTIONTEXT_H
#define KILN_COMPILER_OPTIONTEXT_H

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

} // namespace kiln

#endif // KILN_COMPILER_OPTIONTEXT_H
