//===- ModelMutator.h - Structure-aware ONNX mutations ----------*- C++ -*-===//
//
// Random byte flips almost never survive protobuf parsing, so a fuzzer fed
// raw bytes spends its time in the wire-format reader. This mutator parses
// the model, changes one thing an exporter or an attacker could write
// differently (a dim, an attribute, an op type, an edge, an initializer's
// size, an opset) and serializes it again, so that the importer and the
// passes behind it see well-formed protobufs with hostile contents. No
// structure-aware mutator (libprotobuf-mutator) is packaged by Debian or
// PyPI; this one knows only the ONNX fields Kiln reads.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_FUZZ_MODELMUTATOR_H
#define KILN_TEST_FUZZ_MODELMUTATOR_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {
namespace fuzz {

/// Replaces the serialized ONNX model in `bytes` with a mutated one of at
/// most `maxSize` bytes, choosing with `seed`. Returns false when `bytes` is
/// not a model or no mutation fits, leaving `bytes` unchanged; the caller
/// then mutates the raw bytes instead.
bool mutateModel(std::string &bytes, size_t maxSize, uint32_t seed);

} // namespace fuzz
} // namespace kiln

#endif // KILN_TEST_FUZZ_MODELMUTATOR_H
