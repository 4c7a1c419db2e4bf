//===- AddressSanitizer.cpp - kiln-run --check under ASan -----------------===//

#include "AddressSanitizer.h"
#include "RunOptions.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

using namespace mlir;

namespace kilnrun {

int reexecWithAddressSanitizer(char **argv) {
  const char *named = getenv("KILN_HOST_CXX");
  auto compiler = llvm::sys::findProgramByName(named && *named ? named : "c++");
  if (!compiler)
    return fail("--check needs a C++ compiler to find AddressSanitizer's "
                "runtime (c++ on PATH, or KILN_HOST_CXX)");
  llvm::SmallString<128> outPath;
  if (llvm::sys::fs::createTemporaryFile("kiln-run-asan", "txt", outPath))
    return fail("--check: cannot create a temporary file");
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(outPath),
                                          std::nullopt};
  int rc = llvm::sys::ExecuteAndWait(*compiler,
                                     {*compiler, "-print-file-name=libasan.so"},
                                     std::nullopt, redirects);
  auto text = llvm::MemoryBuffer::getFile(outPath);
  llvm::sys::fs::remove(outPath);
  std::string runtime = text ? (*text)->getBuffer().trim().str() : "";
  if (rc != 0 || runtime.empty() || !llvm::sys::fs::exists(runtime))
    return fail("--check: " + *compiler +
                " does not know AddressSanitizer's runtime (libasan.so)");
  std::string preload = runtime;
  if (const char *old = getenv("LD_PRELOAD"); old && *old)
    preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  // kiln-run's own allocations are not what the check is about.
  std::string options = "detect_leaks=0";
  if (const char *old = getenv("ASAN_OPTIONS"); old && *old)
    options = std::string(old) + ":" + options;
  setenv("ASAN_OPTIONS", options.c_str(), 1);
  setenv("KILN_RUN_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  return fail("--check: cannot run kiln-run again under AddressSanitizer: " +
              llvm::Twine(strerror(errno)));
}

} // namespace kilnrun
