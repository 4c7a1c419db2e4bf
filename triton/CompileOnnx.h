//===- CompileOnnx.h - A model.onnx compiled when Triton loads it -*- C++
//-*-===//
//
// A model repository may hold the ONNX file itself: the backend compiles it
// in-process when Triton loads the model, with the options the model
// configuration's `parameters` give (kilnc's, in its text forms), through
// the compiler the JIT API uses and so its NVRTC cache.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_COMPILEONNX_H
#define KILN_TRITON_COMPILEONNX_H

#include "kiln/runtime/ArtifactPlan.h"

#include <map>
#include <string>

namespace kiln {
namespace triton {

/// The parameter keys `compileOnnx` reads, in the order docs list them.
extern const char *const kCompileParameters[];

/// Compiles the ONNX model at `path` into `artifact` with the options of
/// `parameters`: `dims` (kilnc --dim's text, comma-separated),
/// `input_shapes` (--input-shape's, comma-separated), `precision`,
/// `kv_cache_in_place` and `allow_tf32` ("true" or "false"). Returns the
/// compiler's messages on failure, empty on success; an unknown parameter
/// is refused by name.
std::string compileOnnx(const std::string &path,
                        const std::map<std::string, std::string> &parameters,
                        rt::Artifact &artifact);

} // namespace triton
} // namespace kiln

#endif // KILN_TRITON_COMPILEONNX_H
