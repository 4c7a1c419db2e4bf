//===- ArtifactFile.cpp - Read the artifact embedded in a .so -------------===//

#include "kiln/runtime/ArtifactFile.h"

#include "kiln/kiln_model.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln::rt;

Status kiln::rt::loadArtifactImage(const char *data, size_t size,
                                   Artifact &out) {
  const char *payload = nullptr;
  size_t payloadSize = 0;
  std::string error;
  if (!findArtifactPayload(data, size, payload, payloadSize, error))
    return Status::error(StatusCode::CorruptArtifact, error);
  // Peek at the format version so that a newer compiler's artifact gets a
  // version error rather than a parse error.
  constexpr size_t kMagicSize = sizeof(kArtifactMagic);
  if (payloadSize >= kMagicSize + 4 &&
      std::memcmp(payload, kArtifactMagic, kMagicSize) == 0) {
    uint32_t format = 0;
    for (int i = 0; i < 4; ++i)
      format |= static_cast<uint32_t>(
                    static_cast<unsigned char>(payload[kMagicSize + i]))
                << (8 * i);
    if (format != kArtifactFormatVersion)
      return Status::error(StatusCode::VersionMismatch,
                           "artifact format version " + std::to_string(format) +
                               " differs from this runtime's version " +
                               std::to_string(kArtifactFormatVersion) +
                               "; recompile the model with a matching kilnc");
  }
  if (!deserializeArtifact(payload, payloadSize, out, error))
    return Status::error(StatusCode::CorruptArtifact, error);
  if (out.abiVersion != KILN_ABI_VERSION)
    return Status::error(StatusCode::VersionMismatch,
                         "artifact was compiled for Kiln C ABI version " +
                             std::to_string(out.abiVersion) +
                             " but this runtime implements version " +
                             std::to_string(KILN_ABI_VERSION) +
                             "; recompile the model with a matching kilnc");
  return Status::ok();
}

namespace {
/// A read-only mapping of a whole file, unmapped on destruction.
class MappedFile {
public:
  /// Maps `path`; `status` says whether it worked.
  explicit MappedFile(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      status = fail(path, "cannot open");
      return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      status = fail(path, "cannot stat");
    } else if (st.st_size <= 0) {
      status =
          Status::error(StatusCode::CorruptArtifact, "'" + path + "' is empty");
    } else {
      size = static_cast<size_t>(st.st_size);
      void *p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED)
        status = fail(path, "cannot map");
      else
        data = static_cast<const char *>(p);
    }
    close(fd);
  }
  /// Unmaps the file.
  ~MappedFile() {
    if (data)
      munmap(const_cast<char *>(data), size);
  }
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  /// Whether the mapping worked.
  Status status;
  /// The file's bytes, or null.
  const char *data = nullptr;
  /// The file's size.
  size_t size = 0;

private:
  static Status fail(const std::string &path, const char *what) {
    return Status::error(StatusCode::InvalidArgument,
                         std::string(what) + " '" + path +
                             "': " + std::strerror(errno));
  }
};
} // namespace

/// Maps the sidecar weights file `artifact` names, beside the `.so` at
/// `soPath`, and checks its size and checksum before anything reads it.
static Status mapWeightsFile(const std::string &soPath, Artifact &artifact) {
  const WeightsFile &expected = artifact.weightsFile;
  size_t slash = soPath.rfind('/');
  std::string path = (slash == std::string::npos
                          ? std::string()
                          : soPath.substr(0, slash + 1)) +
                     expected.name;
  auto file = std::make_shared<MappedFile>(path);
  if (!file->status.isOk())
    return Status::error(StatusCode::CorruptArtifact,
                         "the weights file of this artifact: " +
                             file->status.message);
  if (file->size != expected.bytes)
    return Status::error(StatusCode::CorruptArtifact,
                         "weights file '" + path + "' has " +
                             std::to_string(file->size) + " bytes, expected " +
                             std::to_string(expected.bytes) +
                             " (truncated, or from another compile)");
  if (weightsChecksum(file->data, file->size) != expected.checksum)
    return Status::error(StatusCode::CorruptArtifact,
                         "weights file '" + path +
                             "' does not match this artifact (checksum "
                             "mismatch: damaged, or from another compile)");
  artifact.mappedWeights = file->data;
  artifact.mappedWeightsOwner = std::move(file);
  return Status::ok();
}

Status kiln::rt::loadArtifactFile(const std::string &path, Artifact &out) {
  Status s;
  {
    MappedFile file(path);
    if (!file.status.isOk())
      return file.status;
    s = loadArtifactImage(file.data, file.size, out);
  }
  if (s.isOk() && !out.weightsFile.name.empty())
    s = mapWeightsFile(path, out);
  if (!s.isOk())
    s.message = "'" + path + "': " + s.message;
  return s;
}

/// Returns the path of the file mapped at `address` from /proc/self/maps,
/// or "" when it cannot be found.
static std::string mappedPathOf(const void *address) {
  FILE *maps = std::fopen("/proc/self/maps", "re");
  if (!maps)
    return "";
  uintptr_t target = reinterpret_cast<uintptr_t>(address);
  std::string found;
  char line[4096 + 256];
  while (std::fgets(line, sizeof(line), maps)) {
    uintptr_t begin = 0, end = 0;
    int pathStart = 0;
    // begin-end perms offset dev inode path
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %*s %*s %*s %n",
                    &begin, &end, &pathStart) < 2 ||
        pathStart == 0)
      continue;
    if (target < begin || target >= end)
      continue;
    found = line + pathStart;
    while (!found.empty() && (found.back() == '\n' || found.back() == ' '))
      found.pop_back();
    break;
  }
  std::fclose(maps);
  return found;
}

/// A function of this object file; its address identifies the shared object
/// that contains the runtime.
static void anchor() {}

Status kiln::rt::loadEmbeddedArtifact(Artifact &out) {
  const void *self = reinterpret_cast<const void *>(&anchor);
  Dl_info info;
  std::string path;
  if (dladdr(self, &info) && info.dli_fname && *info.dli_fname)
    path = info.dli_fname;
  if (path.empty() || access(path.c_str(), R_OK) != 0)
    path = mappedPathOf(self);
  if (path.empty())
    return Status::error(StatusCode::Internal,
                         "cannot find the file of this shared object");
  return loadArtifactFile(path, out);
}
