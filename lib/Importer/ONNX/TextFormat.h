//===- TextFormat.h - ONNX text format, parsed without throwing -*- C++ -*-===//
//
// onnx::OnnxParser reports most errors as a Status but throws on some (an
// integer literal std::stol cannot read, e.g. `{-\x10}`). Kiln is built
// without exceptions, so a throw would end the process: this one function is
// compiled with them, and turns any throw into an error message.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_TEXTFORMAT_H
#define KILN_LIB_IMPORTER_ONNX_TEXTFORMAT_H

#include <string>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace kiln {

/// Parses ONNX text format `text` into `model`. Returns an error message,
/// empty on success.
std::string parseONNXText(const std::string &text, onnx::ModelProto &model);

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_TEXTFORMAT_H
