//===- CudaConstants.cpp - The CUDA backend's shared constants ------------===//
//
// The weights and splat constants a model's CUDA execution contexts share
// (CudaConstants): uploaded once, by the first run of any of them, and freed
// with the last.
//
//===----------------------------------------------------------------------===//

#include "CudaExecutorImpl.h"
#include "CudaScopes.h"
#include "kiln/runtime/SplatStorage.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::detail;

/// Bytes of a splat's value uploaded before the device copies it onward.
constexpr size_t kSplatUploadBytes = 64u << 10;

Status CudaConstants::ensureUploaded() {
  std::lock_guard<std::mutex> lock(mutex);
  if (ready)
    return Status::ok();
  if (Status s = cu::loadCudaDriver(api); !s.isOk())
    return s;
  // The device CudaOptions::device names, of what CUDA_VISIBLE_DEVICES
  // exposes; the primary context is shared with the CUDA runtime API, so
  // applications interoperate.
  if (!hasContext) {
    if (cu::Result r = api->deviceGet(&device, ordinal); r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuDeviceGet");
    if (cu::Result r = api->primaryCtxRetain(&context, device);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuDevicePrimaryCtxRetain");
    hasContext = true;
  }
  Status s;
  {
    ContextScope scope(*api, context);
    if (scope.result != cu::kSuccess)
      return cu::cudaError(*api, scope.result, "cuCtxPushCurrent");
    cu::Stream stream = nullptr;
    if (cu::Result r = api->streamCreate(&stream, cu::kStreamNonBlocking);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuStreamCreate");
    s = upload(stream);
    api->streamDestroy(stream);
    if (!s.isOk())
      freeMemory();
  }
  if (!s.isOk())
    return s;
  ready = true;
  // The device holds the weights now; do not keep a second host copy.
  artifact.releaseWeights();
  return Status::ok();
}

Status CudaConstants::upload(cu::Stream stream) {
  if (artifact.weightBytes() != 0) {
    if (cu::Result r = api->memAlloc(&weights, artifact.weightBytes());
        r != cu::kSuccess)
      return cu::cudaError(*api, r,
                           "allocating the weights (" +
                               std::to_string(artifact.weightBytes()) +
                               " bytes)");
    if (cu::Result r = api->memcpyHtoDAsync(weights, artifact.weightData(),
                                            artifact.weightBytes(), stream);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "uploading the weights");
    if (cu::Result r = api->streamSynchronize(stream); r != cu::kSuccess)
      return cu::cudaError(*api, r, "uploading the weights");
  }
  return uploadSplats(stream);
}

void CudaConstants::freeMemory() {
  for (cu::DevicePtr p : splats)
    if (p)
      api->memFree(p);
  splats.clear();
  splatSlotOf.clear();
  if (weights)
    api->memFree(weights);
  weights = 0;
}

CudaConstants::~CudaConstants() {
  if (!api || !hasContext)
    return;
  {
    ContextScope scope(*api, context);
    freeMemory();
  }
  api->primaryCtxRelease(device);
}

/// Fills each splat slot on the device: one block of the value uploaded,
/// then the filled prefix copied onto the rest, doubling each time.
Status CudaConstants::uploadSplats(cu::Stream stream) {
  SplatSlots plan = planSplatSlots(artifact, /*slotPerSize=*/false);
  splatSlotOf = std::move(plan.slotOf);
  splats.assign(plan.slots.size(), 0);
  // One host block per slot, alive until the one synchronize at the end.
  std::vector<std::vector<char>> blocks(plan.slots.size());
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    std::vector<char> &block = blocks[i];
    const SplatSlots::Slot &slot = plan.slots[i];
    if (slot.bytes == 0)
      continue;
    std::string what =
        "a splat constant (" + std::to_string(slot.bytes) + " bytes)";
    if (cu::Result r = api->memAlloc(&splats[i], slot.bytes); r != cu::kSuccess)
      return cu::cudaError(*api, r, "allocating " + what);
    fillSplatBlock(slot, kSplatUploadBytes, block);
    if (cu::Result r =
            api->memcpyHtoDAsync(splats[i], block.data(), block.size(), stream);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "filling " + what);
    for (uint64_t filled = block.size(); filled < slot.bytes;) {
      uint64_t take = std::min(filled, slot.bytes - filled);
      if (cu::Result r =
              api->memcpyDtoDAsync(splats[i] + filled, splats[i], take, stream);
          r != cu::kSuccess)
        return cu::cudaError(*api, r, "filling " + what);
      filled += take;
    }
  }
  if (cu::Result r = api->streamSynchronize(stream); r != cu::kSuccess)
    return cu::cudaError(*api, r, "filling the splat constants");
  return Status::ok();
}
