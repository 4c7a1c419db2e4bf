//===- Status.h - Result of a fallible runtime call -------------*- C++ -*-===//
//
// The runtime reports failures as a code plus a message instead of
// exceptions, so that they cross the C ABI unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_STATUS_H
#define KILN_RUNTIME_STATUS_H

#include <cstdint>
#include <string>
#include <utility>

namespace kiln {
namespace rt {

/// What went wrong; same values as `kiln_status`.
enum class StatusCode : uint8_t {
  Ok = 0,
  InvalidArgument,
  CorruptArtifact,
  VersionMismatch,
  NoDevice,
  Cuda,
  Unsupported,
  Internal,
};

/// A status code and, for failures, a message meant for the user.
struct Status {
  /// The code; `Ok` for success.
  StatusCode code = StatusCode::Ok;
  /// Why it failed; empty on success.
  std::string message;

  /// Returns a success.
  static Status ok() { return Status(); }
  /// Returns a failure with `code` and `message`.
  static Status error(StatusCode code, std::string message) {
    Status s;
    s.code = code;
    s.message = std::move(message);
    return s;
  }
  /// Returns true on success.
  bool isOk() const { return code == StatusCode::Ok; }
};

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_STATUS_H
