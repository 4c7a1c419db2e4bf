//===- HostBuild.h - Files, folders and compiler of host builds -*- C++ -*-===//
//
// What building a host kernel module (HostModule.cpp) and the emulation
// header's precompiled form (HostPrecompiledHeader.cpp) share: the system C++
// compiler and its flags, the embedded emulation headers, private build
// folders, atomic file writes and the cache keys' hash.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_HOSTBUILD_H
#define KILN_RUNTIME_LIB_HOSTBUILD_H

#include "kiln/runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {
namespace host {

bool readFile(const std::string &path, std::string &out);
bool writeFile(const std::string &path, const std::string &data);
/// Writes `data` to `path` through a temporary file in the same folder, so
/// that no reader ever sees a partial file.
bool writeFileAtomically(const std::string &path, const std::string &data);
/// Removes `dir` and the files in it (not folders below it).
void removeFolder(const std::string &dir);

/// `v` as 16 lowercase hex digits.
std::string hex64(uint64_t v);
/// FNV-1a 64 continued over `data` (its length first).
uint64_t hashMore(uint64_t hash, const std::string &data);
constexpr uint64_t kHashSeed = 0xcbf29ce484222325ull;

/// The cache folder, created if needed; empty when there is none usable.
std::string usableCacheDirectory();

/// A private folder, removed with what the build wrote into it.
class BuildFolder {
public:
  /// Creates the folder under `base` (default: $TMPDIR, else /tmp).
  Status create(const std::string &base = "");
  /// Returns the path of `file` in the folder and remembers to remove it.
  std::string file(const std::string &name);
  /// Forgets the folder: it has been moved or is to be kept.
  void release() { path.clear(); }
  ~BuildFolder();
  std::string path;

private:
  std::vector<std::string> files;
};

/// `path` with its links resolved (itself when it cannot be resolved).
std::string resolvedPath(const std::string &path);

/// The C++ compiler: KILN_HOST_CXX, $CXX, then c++, g++, clang++ on PATH.
Status findCompiler(std::string &out);
/// The compiler's flags for a module, `-shared` included; part of every
/// cache key.
std::vector<std::string> compileFlags(bool checking);
/// Runs `argv` with stdout and stderr into `logPath`; returns its status.
Status runCompiler(const std::vector<std::string> &argv,
                   const std::string &logPath);

/// Hashes what shapes every binary the compiler makes for the host backend:
/// the host ABI, the compiler (its resolved path, size and time), `flags`
/// and the emulation headers.
uint64_t toolchainKey(const std::string &compiler,
                      const std::vector<std::string> &flags);
/// Writes the emulation headers, and empty stand-ins for the CUDA headers a
/// generated source includes, into `folder`.
bool writeHostHeaders(BuildFolder &folder);
/// The emulation header a module includes first.
constexpr const char *kMainHostHeader = "kiln_cuda_host.h";

} // namespace host
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_HOSTBUILD_H
