//===- CudaModule.cpp - Load a CUDA context's kernels ---------------------===//
//
// Module loading of the CUDA backend: a context loads the model's kernels
// (cubin, else PTX), finds their functions, opts them in to their shared memory
// and finds the index check flag.
//
//===----------------------------------------------------------------------===//

#include "CudaExecutorImpl.h"

#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::detail;

Status CudaExecutor::loadKernels() {
  // Validation guarantees code whenever a step launches a kernel.
  if (artifact.kernelNames.empty() ||
      (artifact.cubin.empty() && artifact.ptx.empty()))
    return Status::ok();
  // The cubin is exact for `arch`; PTX lets a newer GPU JIT-compile the same
  // kernels when the cubin does not match it.
  std::string errors;
  if (!artifact.cubin.empty()) {
    cu::Result r = api->moduleLoadData(&module, artifact.cubin.data());
    if (r != cu::kSuccess) {
      module = nullptr;
      errors = "cubin for " + artifact.arch + ": " + cu::cudaErrorText(*api, r);
    }
  }
  if (!module && !artifact.ptx.empty()) {
    // cuModuleLoadData needs NUL-terminated PTX text.
    std::string ptx = artifact.ptx;
    ptx.push_back('\0');
    cu::Result r = api->moduleLoadData(&module, ptx.data());
    if (r != cu::kSuccess) {
      module = nullptr;
      errors += (errors.empty() ? "" : "; ") + std::string("PTX: ") +
                cu::cudaErrorText(*api, r);
    }
  }
  if (!module)
    return Status::error(StatusCode::Cuda,
                         "could not load the model's kernels on this GPU (" +
                             errors + ")");
  functions.resize(artifact.kernelNames.size());
  std::vector<uint32_t> sharedNeeded(functions.size(), 0);
  for (const Step &step : artifact.steps) {
    if (step.kind == Step::Kind::Launch)
      sharedNeeded[step.launch.kernel] =
          std::max(sharedNeeded[step.launch.kernel], step.launch.sharedBytes);
    if (step.kind == Step::Kind::Matmul)
      for (const GemmCandidate &g : step.matmul.kernels)
        sharedNeeded[g.kernel] =
            std::max(sharedNeeded[g.kernel], g.sharedBytes);
  }
  // Ops of the same code share a kernel and its name: the function's
  // opt-in is the most any of its entries' launches takes.
  std::map<std::string, uint32_t> mostByName;
  for (size_t i = 0; i < functions.size(); ++i) {
    uint32_t &most = mostByName[artifact.kernelNames[i]];
    most = std::max(most, sharedNeeded[i]);
  }
  for (size_t i = 0; i < functions.size(); ++i)
    sharedNeeded[i] = mostByName[artifact.kernelNames[i]];
  for (size_t i = 0; i < functions.size(); ++i) {
    const std::string &name = artifact.kernelNames[i];
    if (cu::Result r =
            api->moduleGetFunction(&functions[i], module, name.c_str());
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "finding kernel '" + name + "'");
    // Above 48 KiB a kernel must opt in to its dynamic shared memory.
    if (sharedNeeded[i] > cu::kDefaultMaxDynamicShared) {
      if (sharedNeeded[i] > static_cast<uint32_t>(INT_MAX))
        return Status::error(StatusCode::Unsupported,
                             "kernel '" + name + "' asks for " +
                                 std::to_string(sharedNeeded[i]) +
                                 " bytes of shared memory");
      if (cu::Result r = api->funcSetAttribute(
              functions[i], cu::kFuncAttributeMaxDynamicSharedSizeBytes,
              static_cast<int>(sharedNeeded[i]));
          r != cu::kSuccess)
        return cu::cudaError(*api, r,
                             "allowing " + std::to_string(sharedNeeded[i]) +
                                 " bytes of shared memory for kernel '" + name +
                                 "'");
    }
  }
  if (!artifact.indexSites.empty()) {
    size_t bytes = 0;
    if (cu::Result r = api->moduleGetGlobal(&indexError, &bytes, module,
                                            "kiln_index_error");
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "finding the index check flag");
    if (bytes != sizeof(unsigned))
      return Status::error(StatusCode::CorruptArtifact,
                           "the kernels' kiln_index_error flag has " +
                               std::to_string(bytes) + " bytes, expected 4");
    void *mirror = nullptr;
    if (cu::Result r = api->memAllocHost(&mirror, sizeof(unsigned));
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "allocating page-locked host memory");
    indexFlagMirror = static_cast<unsigned *>(mirror);
  }
  return Status::ok();
}
