//===- DeviceCopy.h - Copies between host and device memory -----*- C++ -*-===//
//
// For programs that serve Kiln models and receive tensors in either kind of
// memory (a Triton backend gathering requests into one batch): one copy,
// through the CUDA driver the runtime already opens, without the program
// linking CUDA itself.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_DEVICECOPY_H
#define KILN_RUNTIME_DEVICECOPY_H

#include "kiln/runtime/Model.h"
#include "kiln/runtime/Status.h"

#include <cstddef>

namespace kiln {
namespace rt {

/// Copies `bytes` from `src` to `dst` and waits for the copy. Each is host
/// memory or memory of device `ordinal` (a `CUdeviceptr` cast to a pointer),
/// as `srcMemory` and `dstMemory` say; a copy between host buffers needs no
/// driver. Fails with the driver's message (`NoDevice` without one).
Status copyMemory(void *dst, Memory dstMemory, const void *src,
                  Memory srcMemory, size_t bytes, int ordinal);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_DEVICECOPY_H
