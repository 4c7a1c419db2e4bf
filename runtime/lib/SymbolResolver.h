//===- SymbolResolver.h - Entry points of a dlopen'ed library ---*- C++ -*-===//
//
// The CUDA driver and cuBLASLt are opened at run time, so that an artifact
// links neither; their entry points are looked up one by one.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_SYMBOLRESOLVER_H
#define KILN_RUNTIME_LIB_SYMBOLRESOLVER_H

#include <dlfcn.h>

#include <string>
#include <type_traits>

namespace kiln {
namespace rt {

/// Fills function pointers from a library handle and remembers the first
/// symbol that is missing.
class SymbolResolver {
public:
  explicit SymbolResolver(void *handle) : handle(handle) {}

  /// Sets `fn` to the symbol `name` (null when missing).
  template <typename Fn>
  void get(Fn &fn, const char *name) {
    void *symbol = dlsym(handle, name);
    if (!symbol && missing.empty())
      missing = name;
    // POSIX guarantees that data and function pointers convert.
    fn = reinterpret_cast<std::remove_reference_t<Fn>>(symbol);
  }

  /// Returns whether every symbol asked for was found.
  bool ok() const { return missing.empty(); }
  /// Returns the first symbol not found, or "".
  const std::string &firstMissing() const { return missing; }

private:
  void *handle;
  std::string missing;
};

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_SYMBOLRESOLVER_H
