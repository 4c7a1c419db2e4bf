//===- HostPrecompiledHeader.h - The header, parsed once ---*- C++ -*-===//
//
// Most of the time a small module takes to build goes to parsing
// kiln_cuda_host.h and the standard headers under it (about 0.4 of 0.6 s
// with GCC), the same text for every module. GCC reads a header's
// precompiled form `NAME.gch` in place of `NAME` when it lies beside it and
// was made with the same flags, so the emulation headers are written once
// per toolchain into the cache with kiln_cuda_host.h.gch beside them, and a
// module is compiled against that folder. clang (which reads a .gch only
// for a header named by -include) gets no such folder, and a precompiled
// header GCC finds invalid is parsed from its text as before: the folder
// changes how fast a module builds, not what it is.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_HOSTPRECOMPILEDHEADER_H
#define KILN_RUNTIME_LIB_HOSTPRECOMPILEDHEADER_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {
namespace host {

/// The cache's folder of the emulation headers with kiln_cuda_host.h
/// precompiled by `compiler` with the module `flags`, made first if absent;
/// `toolchain` is toolchainKey(compiler, flags). Empty when there is no
/// cache or the compiler cannot precompile it: modules then carry their own
/// headers.
std::string precompiledHeaderFolder(const std::string &cache,
                                    const std::string &compiler,
                                    const std::vector<std::string> &flags,
                                    uint64_t toolchain);

/// Removes a folder precompiledHeaderFolder returned, after a module that
/// failed to build against it built without it; the next module makes it
/// again.
void discardPrecompiledHeaderFolder(const std::string &folder);

} // namespace host
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_HOSTPRECOMPILEDHEADER_H
