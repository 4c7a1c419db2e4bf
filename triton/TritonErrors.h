//===- TritonErrors.h - Triton errors and log lines from Kiln's -*- C++ -*-===//
//
// The backend answers Triton with TRITONSERVER_Error objects: made here from
// a message or from the runtime's Status, so that every failure names its
// cause in Triton's terms.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_TRITONERRORS_H
#define KILN_TRITON_TRITONERRORS_H

#include "TritonApi.h"

#include "kiln/runtime/Status.h"

#include <string>

namespace kiln {
namespace triton {

/// A new Triton error with `code` and `message` (Triton takes ownership).
inline TRITONSERVER_Error *tritonError(TRITONSERVER_Error_Code code,
                                       const std::string &message) {
  return TRITONSERVER_ErrorNew(code, message.c_str());
}

/// The Triton error of a failed runtime status, prefixed with `context`;
/// null for success.
TRITONSERVER_Error *tritonError(const rt::Status &status,
                                const std::string &context);

/// Writes `message` to Triton's log at `level`.
void logMessage(TRITONSERVER_LogLevel level, const std::string &message);

} // namespace triton
} // namespace kiln

#endif // KILN_TRITON_TRITONERRORS_H
