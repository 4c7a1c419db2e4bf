//===- CacheDirectory.cpp - Where Kiln caches compiled kernels ------------===//

#include "kiln/runtime/CacheDirectory.h"

#include <cstdlib>

std::string kiln::rt::cacheDirectory() {
  auto env = [](const char *name) -> std::string {
    const char *value = std::getenv(name);
    return value ? value : "";
  };
  if (std::string dir = env("KILN_CACHE_DIR"); !dir.empty())
    return dir;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
    return xdg + "/kiln";
  if (std::string home = env("HOME"); !home.empty())
    return home + "/.cache/kiln";
  return "";
}
