//===- TextFormat.cpp - ONNX text format, parsed without throwing ---------===//
//
// Compiled with -fexceptions (lib/Importer/ONNX/CMakeLists.txt): the only
// place in Kiln that catches.
//
//===----------------------------------------------------------------------===//

#include "TextFormat.h"

#include <onnx/defs/parser.h>

#include <exception>
#include <stdexcept>

namespace kiln {

std::string parseONNXText(const std::string &text, onnx::ModelProto &model) {
  try {
    onnx::Common::Status status = onnx::OnnxParser::Parse(model, text.c_str());
    return status.IsOK() ? std::string() : status.ErrorMessage();
  } catch (const std::logic_error &e) {
    // std::stoll and friends: a number the parser could not read.
    return std::string("a malformed number (") + e.what() + ")";
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "the parser failed";
  }
}

} // namespace kiln
