//===- CublasLt.cpp - Open cuBLASLt with dlopen ---------------------------===//

#include "CublasLt.h"
#include "SymbolResolver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

using namespace kiln::rt;
using namespace kiln::rt::lt;

/// Resolves every entry point of `api` in `handle`; on failure names the
/// first missing symbol in `missing`.
static bool resolveAll(void *handle, LtApi &api, std::string &missing) {
  SymbolResolver resolver(handle);
  auto get = [&](auto &fn, const char *name) { resolver.get(fn, name); };
  get(api.create, "cublasLtCreate");
  get(api.destroy, "cublasLtDestroy");
  get(api.getStatusString, "cublasLtGetStatusString");
  get(api.matmulDescCreate, "cublasLtMatmulDescCreate");
  get(api.matmulDescDestroy, "cublasLtMatmulDescDestroy");
  get(api.matmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  get(api.matrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  get(api.matrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  get(api.matrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  get(api.preferenceCreate, "cublasLtMatmulPreferenceCreate");
  get(api.preferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  get(api.preferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  get(api.algoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  get(api.matmul, "cublasLtMatmul");
  missing = resolver.firstMissing();
  return resolver.ok();
}

Status kiln::rt::lt::loadCublasLt(const LtApi *&out) {
  // Like the driver, cuBLASLt stays open for the life of the process.
  static std::mutex mutex;
  static LtApi api;
  static bool ready = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (ready) {
    out = &api;
    return Status::ok();
  }
  std::string tried;
  void *handle = nullptr;
  const char *env = std::getenv("KILN_CUBLASLT");
  const char *candidates[] = {env && *env ? env : nullptr, "libcublasLt.so.13",
                              "libcublasLt.so"};
  for (const char *path : candidates) {
    if (!path)
      continue;
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle)
      break;
    const char *why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : path);
  }
  if (!handle)
    return Status::error(StatusCode::Unsupported,
                         "cuBLASLt not found, needed for matmul steps: " +
                             tried);
  std::string missing;
  if (!resolveAll(handle, api, missing)) {
    dlclose(handle);
    return Status::error(StatusCode::Unsupported,
                         "cuBLASLt lacks " + missing +
                             "; cuBLAS 12 or newer is needed");
  }
  ready = true;
  out = &api;
  return Status::ok();
}

Status kiln::rt::lt::cublasError(const LtApi &api, LtStatus status,
                                 const std::string &what) {
  const char *text =
      api.getStatusString ? api.getStatusString(status) : nullptr;
  return Status::error(StatusCode::Cuda,
                       what + " failed: " +
                           (text ? std::string(text)
                                 : "cuBLAS status " + std::to_string(status)));
}
