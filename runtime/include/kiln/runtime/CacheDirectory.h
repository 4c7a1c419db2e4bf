//===- CacheDirectory.h - Where Kiln caches compiled kernels ----*- C++ -*-===//
//
// One rule for the compiler (NVRTC's cubins and PTX) and the runtime (the
// host backend's shared objects), so that clearing one folder clears both.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CACHEDIRECTORY_H
#define KILN_RUNTIME_CACHEDIRECTORY_H

#include <string>

namespace kiln {
namespace rt {

/// Returns $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
/// $HOME/.cache/kiln; empty when none of them is set (no cache). The folder
/// is not created here.
std::string cacheDirectory();

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_CACHEDIRECTORY_H
