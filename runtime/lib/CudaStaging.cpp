//===- CudaStaging.cpp - Host staging of CUDA runs ------------------------===//
//
// Host-memory I/O of the CUDA backend: device buffers with page-locked host
// mirrors (Staging), the inputs' upload through them and the outputs' copies
// back.
//
//===----------------------------------------------------------------------===//

#include "CudaExecutorImpl.h"

#include <cstring>
#include <string>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::detail;

Status CudaExecutor::ensureStaging(Staging &staging,
                                   const std::vector<uint32_t> &ids) {
  if (staging.device.size() == ids.size())
    return Status::ok();
  staging.device.assign(ids.size(), 0);
  staging.pinned.assign(ids.size(), nullptr);
  for (size_t i = 0; i < ids.size(); ++i) {
    uint64_t bytes = artifact.buffers[ids[i]].bytes;
    if (bytes == 0)
      continue;
    std::string what = std::to_string(bytes) + " bytes of staging for '" +
                       artifact.buffers[ids[i]].name + "'";
    cu::Result r = api->memAlloc(&staging.device[i], bytes);
    if (r != cu::kSuccess) {
      staging.device[i] = 0;
      freeStaging(staging);
      return cu::cudaError(*api, r, "allocating " + what);
    }
    r = api->memAllocHost(&staging.pinned[i], bytes);
    if (r != cu::kSuccess) {
      staging.pinned[i] = nullptr;
      freeStaging(staging);
      return cu::cudaError(*api, r, "allocating page-locked " + what);
    }
  }
  return Status::ok();
}

void CudaExecutor::freeStaging(Staging &staging) {
  for (cu::DevicePtr p : staging.device)
    if (p)
      api->memFree(p);
  for (void *p : staging.pinned)
    if (p)
      api->memFreeHost(p);
  staging.device.clear();
  staging.pinned.clear();
}

Status CudaExecutor::stageInputs(const void *const *inputs) {
  for (size_t i = 0; i < artifact.inputs.size(); ++i) {
    uint64_t bytes = plan().buffers[plan().inputs[i]].bytes;
    if (!bytes)
      continue;
    // The page-locked copy lets the upload run asynchronously; the previous
    // run has finished with it, since `run` waits for its stream.
    std::memcpy(inputStaging.pinned[i], inputs[i], bytes);
    if (cu::Result r = api->memcpyHtoDAsync(
            inputStaging.device[i], inputStaging.pinned[i], bytes, stream);
        r != cu::kSuccess)
      return cu::cudaError(
          *api, r, "copying input " + std::to_string(i) + " to the device");
  }
  return Status::ok();
}

Status CudaExecutor::queueOutputCopies(const std::vector<cu::DevicePtr> &out) {
  for (size_t i = 0; i < artifact.outputs.size(); ++i) {
    uint64_t bytes = plan().buffers[plan().outputs[i]].bytes;
    if (!bytes)
      continue;
    if (cu::Result r = api->memcpyDtoHAsync(outputStaging.pinned[i], out[i],
                                            bytes, stream);
        r != cu::kSuccess)
      return cu::cudaError(
          *api, r, "copying output " + std::to_string(i) + " to the host");
  }
  return Status::ok();
}
