//===- TritonErrors.cpp - Triton errors and log lines from Kiln's ---------===//

#include "TritonErrors.h"

using namespace kiln;
using namespace kiln::triton;

TRITONSERVER_Error *kiln::triton::tritonError(const rt::Status &status,
                                              const std::string &context) {
  if (status.isOk())
    return nullptr;
  TRITONSERVER_Error_Code code = TRITONSERVER_ERROR_INTERNAL;
  switch (status.code) {
  case rt::StatusCode::InvalidArgument:
  case rt::StatusCode::CorruptArtifact:
  case rt::StatusCode::VersionMismatch:
    code = TRITONSERVER_ERROR_INVALID_ARG;
    break;
  case rt::StatusCode::NoDevice:
    code = TRITONSERVER_ERROR_UNAVAILABLE;
    break;
  case rt::StatusCode::Unsupported:
    code = TRITONSERVER_ERROR_UNSUPPORTED;
    break;
  default:
    break;
  }
  return tritonError(code, context + status.message);
}

void kiln::triton::logMessage(TRITONSERVER_LogLevel level,
                              const std::string &message) {
  if (!TRITONSERVER_LogIsEnabled(level))
    return;
  // A log line that cannot be written is not worth failing a request for.
  if (TRITONSERVER_Error *error =
          TRITONSERVER_LogMessage(level, __FILE__, __LINE__, message.c_str()))
    TRITONSERVER_ErrorDelete(error);
}
