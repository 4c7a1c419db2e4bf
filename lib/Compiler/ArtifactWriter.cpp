//===- ArtifactWriter.cpp - the self-contained .so ------------------------===//
//
// The runtime's template library is embedded in the compiler at build time
// (ArtifactTemplate.S), so kilnc needs no C++ toolchain and no runtime files
// next to it to write an artifact.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

extern "C" const char kiln_model_template_start[];
extern "C" const char kiln_model_template_end[];

namespace kiln {

LogicalResult writeArtifactLibrary(Location loc, const rt::Artifact &artifact,
                                   StringRef path) {
  std::string error;
  if (!rt::validateArtifact(artifact, error))
    return emitError(loc, "internal error: invalid plan: ") << error;
  std::string templateSo(kiln_model_template_start,
                         kiln_model_template_end - kiln_model_template_start);
  std::string library =
      rt::appendArtifactPayload(templateSo, rt::serializeArtifact(artifact));
  return writeFileAtomically(loc, path, library);
}

} // namespace kiln
