//===- kiln_cuda_host.h - CUDA's execution model as host C++ ----*- C++ -*-===//
//
// Force-included before a generated CUDA source when the host backend
// compiles it with the system C++ compiler: with it, the source compiles as
// host C++ unchanged. The launcher (runtime/lib/HostLauncher.cpp) runs the
// blocks of a launch one after another and the threads of a block as fibers
// on one OS thread, switching only where a thread waits (`__syncthreads`,
// warp collectives). Hence:
// - `__shared__` variables are function statics: one instance per OS thread,
//   seen by every thread of the block that is running;
// - warp collectives exchange values through slots of the warp and wait for
//   the warp twice (written, then read);
// - atomics are plain read-modify-writes (kiln_cuda_host_math.h).
// `__CUDA_ARCH__` stays undefined, so code that writes inline PTX under
// `#ifdef __CUDA_ARCH__` takes its portable path here; KILN_HOST_EMULATION is
// defined instead.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_HOST_H
#define KILN_CUDA_HOST_H

#define KILN_HOST_EMULATION 1

#include "kiln_cuda_host_math.h"
#include "kiln_host_abi.h"

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

//===----------------------------------------------------------------------===//
// Qualifiers
//===----------------------------------------------------------------------===//

#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __constant__
#define __shared__ static thread_local
#define __managed__
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))

//===----------------------------------------------------------------------===//
// The running thread
//===----------------------------------------------------------------------===//

// The fiber that runs now on this OS thread. Set by the module's entry
// wrapper and restored by every wait, because another fiber ran meanwhile.
inline thread_local kiln_host_thread *kiln_host_self = nullptr;

#define threadIdx (kiln_host_self->threadIdx)
#define blockIdx (kiln_host_self->blockIdx)
#define blockDim (kiln_host_self->blockDim)
#define gridDim (kiln_host_self->gridDim)
#define warpSize 32

/// Suspends the running fiber until its block or warp has caught up.
inline void kiln_host_wait(int scope) {
  kiln_host_thread *self = kiln_host_self;
  self->wait(self->scheduler, scope);
  kiln_host_self = self;
}

inline void __syncthreads() { kiln_host_wait(KILN_HOST_WAIT_BLOCK); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  kiln_host_wait(KILN_HOST_WAIT_WARP);
}

/// Publishes `bits` in this lane's slot, waits for the warp, reads lane
/// `source`'s slot and waits again so no slot is overwritten while unread.
inline unsigned long long kiln_host_exchange(unsigned long long bits,
                                             unsigned source) {
  kiln_host_thread *self = kiln_host_self;
  self->warpSlots[self->lane] = bits;
  kiln_host_wait(KILN_HOST_WAIT_WARP);
  unsigned long long read = kiln_host_self->warpSlots[source & 31u];
  kiln_host_wait(KILN_HOST_WAIT_WARP);
  return read;
}

template <class T> inline T kiln_host_shuffle(T value, unsigned source) {
  static_assert(sizeof(T) <= sizeof(unsigned long long) &&
                    std::is_trivially_copyable<T>::value,
                "warp shuffles move values of at most 8 bytes");
  unsigned long long bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = kiln_host_exchange(bits, source);
  T result;
  std::memcpy(&result, &bits, sizeof(T));
  return result;
}

inline unsigned kiln_host_lane() { return kiln_host_self->lane; }

//===----------------------------------------------------------------------===//
// Warp collectives; the lane arithmetic follows the CUDA programming guide.
// Masks are not checked: every live lane of the warp takes part.
//===----------------------------------------------------------------------===//

template <class T>
inline T __shfl_sync(unsigned, T value, int srcLane, int width = warpSize) {
  unsigned lane = kiln_host_lane();
  unsigned base = lane & ~unsigned(width - 1);
  return kiln_host_shuffle(value, base + (unsigned(srcLane) & (width - 1)));
}

template <class T>
inline T __shfl_up_sync(unsigned, T value, unsigned delta,
                        int width = warpSize) {
  unsigned lane = kiln_host_lane();
  bool inside = (lane & unsigned(width - 1)) >= delta;
  return kiln_host_shuffle(value, inside ? lane - delta : lane);
}

template <class T>
inline T __shfl_down_sync(unsigned, T value, unsigned delta,
                          int width = warpSize) {
  unsigned lane = kiln_host_lane();
  bool inside = (lane & unsigned(width - 1)) + delta < unsigned(width);
  return kiln_host_shuffle(value, inside ? lane + delta : lane);
}

template <class T>
inline T __shfl_xor_sync(unsigned, T value, int laneMask,
                         int width = warpSize) {
  unsigned lane = kiln_host_lane();
  unsigned source = lane ^ unsigned(laneMask);
  // Lanes beyond the caller's segment read their own value.
  if ((source & ~unsigned(width - 1)) != (lane & ~unsigned(width - 1)))
    source = lane;
  return kiln_host_shuffle(value, source);
}

/// Bit i set when lane i of the warp passed a nonzero predicate.
inline unsigned __ballot_sync(unsigned, int predicate) {
  kiln_host_thread *self = kiln_host_self;
  self->warpSlots[self->lane] = predicate ? 1u : 0u;
  kiln_host_wait(KILN_HOST_WAIT_WARP);
  unsigned ballot = 0;
  // The block's threads, and the first thread of this warp.
  unsigned first = (threadIdx.x + threadIdx.y * blockDim.x +
                    threadIdx.z * blockDim.x * blockDim.y) &
                   ~31u;
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  for (unsigned i = 0; i < 32 && first + i < threads; ++i)
    ballot |= unsigned(kiln_host_self->warpSlots[i] == 1u) << i;
  kiln_host_wait(KILN_HOST_WAIT_WARP);
  return ballot;
}
inline int __any_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) != 0;
}
inline int __all_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, !predicate) == 0;
}
inline unsigned __activemask() { return 0xffffffffu; }

// Tensor-core instructions (mma.sync, ldmatrix, cp.async; Hopper's wgmma,
// tensor copies and mbarriers), on these lanes.
#include "kiln_cuda_host_mma.h"
#include "kiln_cuda_host_tma.h"
#include "kiln_cuda_host_wgmma.h"

//===----------------------------------------------------------------------===//
// Module entry points (appended to the source by the host backend)
//===----------------------------------------------------------------------===//

/// Argument slot `arg` as a kernel parameter of type T: a pointer
/// parameter's slot holds the pointer, a `long long`'s (a symbolic dim) or
/// a tensor map's points to the value, as cuLaunchKernel's kernelParams do.
template <class T> inline T kiln_host_arg(void *arg) {
  if constexpr (std::is_pointer<T>::value)
    return static_cast<T>(arg);
  else
    return *static_cast<const T *>(arg);
}

template <class... Params, std::size_t... I>
inline void kiln_host_invoke(void (*kernel)(Params...), void *const *args,
                             std::index_sequence<I...>) {
  kernel(kiln_host_arg<Params>(args[I])...);
}

template <class... Params>
constexpr unsigned kiln_host_arity(void (*)(Params...)) {
  static_assert(((std::is_pointer<Params>::value ||
                  std::is_same<Params, long long>::value ||
                  std::is_same<Params, kiln_tensor_map>::value) &&
                 ...),
                "host kernels take device pointers, long long dims and "
                "tensor maps");
  return sizeof...(Params);
}

#define KILN_HOST_KERNEL(name)                                                 \
  extern "C" __attribute__((visibility("default"))) unsigned                   \
      kiln_host_arity_##name(void) {                                           \
    return kiln_host_arity(&name);                                             \
  }                                                                            \
  extern "C" __attribute__((visibility("default"))) void                       \
      kiln_host_entry_##name(void *const *args, kiln_host_thread *self) {      \
    kiln_host_self = self;                                                     \
    kiln_host_invoke(&name, args,                                              \
                     std::make_index_sequence<kiln_host_arity(&name)>());      \
  }

#define KILN_HOST_MODULE()                                                     \
  extern "C" __attribute__((visibility("default"))) unsigned                   \
      kiln_host_abi_version(void) {                                            \
    return KILN_HOST_ABI_VERSION;                                              \
  }

#endif // KILN_CUDA_HOST_H
