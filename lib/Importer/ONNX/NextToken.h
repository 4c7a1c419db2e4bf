//===- NextToken.h - choosing a decoder's next token in the graph -*- C++
//-*-===//
//
// Internal to the ONNX importer: the nodes `kilnc --next-token=K` appends
// to a decoder's graph (NextToken.cpp says what they compute).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_NEXTTOKEN_H
#define KILN_LIB_IMPORTER_ONNX_NEXTTOKEN_H

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <string>

namespace kiln {

/// Appends to `model`'s graph the outputs `next_token` [batch] (int64) and
/// `next_token_candidates` [batch, min(topK, vocab)], and
/// the inputs that steer it (`sampling_temperature`, `sampling_top_k`,
/// `sampling_top_p`, `sampling_uniform`), choosing among the `topK` most
/// likely tokens at the last position of the output `logits`. Returns why
/// the model cannot take them, or "".
std::string appendNextToken(onnx::ModelProto &model, int64_t topK);

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_NEXTTOKEN_H
