//===- ArtifactFile.h - Read the artifact embedded in a .so -----*- C++ -*-===//
//
// Finds, verifies and decodes the payload that `appendArtifactPayload`
// appended to a shared object: trailer magic, checksum, format version, plan
// validity and C ABI version, each with its own status code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACTFILE_H
#define KILN_RUNTIME_ARTIFACTFILE_H

#include "kiln/runtime/ArtifactFormat.h"
#include "kiln/runtime/Status.h"

#include <cstddef>
#include <string>

namespace kiln {
namespace rt {

/// Decodes the artifact of a whole artifact `.so` image held in memory.
/// Fails with `CorruptArtifact` (no trailer, bad checksum, malformed or
/// invalid plan) or `VersionMismatch` (format or C ABI version differs).
Status loadArtifactImage(const char *data, size_t size, Artifact &out);

/// Decodes the artifact embedded in the `.so` at `path` (mapped, not copied).
/// Fails as `loadArtifactImage` does, and with `InvalidArgument` when the
/// file cannot be read.
Status loadArtifactFile(const std::string &path, Artifact &out);

/// Decodes the artifact embedded in the shared object that contains this
/// runtime, found with `dladdr` (or /proc/self/maps when the name `dladdr`
/// gives no longer opens, e.g. a relative path after a `chdir`).
Status loadEmbeddedArtifact(Artifact &out);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_ARTIFACTFILE_H
