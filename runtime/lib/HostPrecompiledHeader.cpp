//===- HostPrecompiledHeader.cpp - The emulation header, parsed once ------===//
//
// The folder is built under a private name inside the cache and renamed into
// place whole, so a reader sees it complete or not at all; of two processes
// building it at once, the second rename fails and that process drops its
// copy and uses the first.
//
//===----------------------------------------------------------------------===//

#include "HostPrecompiledHeader.h"

#include "HostBuild.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

using namespace kiln::rt;
using namespace kiln::rt::host;

namespace {

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

/// Whether `compiler` resolves to clang, which reads a .gch only for a
/// header named by -include, so that precompiling would only cost time.
bool isClang(const std::string &compiler) {
  std::string real = resolvedPath(compiler);
  return real.substr(real.rfind('/') + 1).find("clang") != std::string::npos;
}

} // namespace

std::string kiln::rt::host::precompiledHeaderFolder(
    const std::string &cache, const std::string &compiler,
    const std::vector<std::string> &flags, uint64_t toolchain) {
  if (cache.empty() || isClang(compiler))
    return "";
  std::string folder = cache + "/host-pch-" + hex64(toolchain);
  std::string header = std::string(kMainHostHeader) + ".gch";
  if (exists(folder + "/" + header))
    return folder;

  BuildFolder build;
  if (!build.create(cache).isOk())
    return "";
  if (!writeHostHeaders(build))
    return "";
  std::vector<std::string> argv = {compiler};
  for (const std::string &f : flags)
    if (f != "-shared")
      argv.push_back(f);
  for (const std::string &a : {std::string("-x"), std::string("c++-header"),
                               build.path + "/" + kMainHostHeader,
                               std::string("-o"), build.file(header)})
    argv.push_back(a);
  // The log goes with the build folder; a compiler that cannot precompile
  // the header only leaves modules to parse it themselves.
  if (!runCompiler(argv, build.file("precompile.log")).isOk() ||
      !exists(build.path + "/" + header))
    return "";
  std::remove((build.path + "/precompile.log").c_str());
  if (std::rename(build.path.c_str(), folder.c_str()) == 0) {
    build.release();
    return folder;
  }
  // Another process put its folder there first.
  return exists(folder + "/" + header) ? folder : "";
}

void kiln::rt::host::discardPrecompiledHeaderFolder(const std::string &folder) {
  // Renamed away first so that no reader finds it half removed.
  std::string doomed = folder + ".discarded." + std::to_string(getpid());
  if (std::rename(folder.c_str(), doomed.c_str()) == 0)
    removeFolder(doomed);
}
