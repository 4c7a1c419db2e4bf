/*===- kiln_host_abi.h - Contract between host kernels and the launcher ---===*
 *
 * The host backend compiles generated CUDA C++ as a host shared library (a
 * *kernel module*) against kiln_cuda_host.h. The runtime's launcher runs each
 * CUDA thread of a block as a fiber and hands it a `kiln_host_thread`; the
 * emulated `threadIdx`, `__syncthreads` and warp shuffles read and call
 * through it. This header is the whole interface between the two sides, so it
 * is plain C and carries a version that both check.
 *
 * A kernel module exports, for each kernel NAME:
 *   unsigned kiln_host_arity_NAME(void);   -- number of parameters
 *   void kiln_host_entry_NAME(void *const *args, kiln_host_thread *self);
 * `args` holds one slot per parameter: a pointer parameter's slot is the
 * pointer, a `long long` parameter's (a symbolic dim) points to its value.
 * and `unsigned kiln_host_abi_version(void)`.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_HOST_ABI_H
#define KILN_HOST_ABI_H

/* Bumped on any change to the structures or entry points below. */
#define KILN_HOST_ABI_VERSION 3u

/* What a waiting thread waits for. */
#define KILN_HOST_WAIT_BLOCK 0 /* __syncthreads: every live thread of the block */
#define KILN_HOST_WAIT_WARP 1  /* warp collectives: every live lane of the warp */
/* A spin wait (mbarrier.try_wait): resumes once every other runnable thread
 * of the block has run until it waits. */
#define KILN_HOST_WAIT_YIELD 2

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA's uint3 / dim3 layout. */
typedef struct kiln_host_dim3 {
  unsigned x, y, z;
} kiln_host_dim3;

/* One emulated CUDA thread, owned by the launcher. */
typedef struct kiln_host_thread {
  kiln_host_dim3 threadIdx;
  kiln_host_dim3 blockIdx;
  kiln_host_dim3 blockDim;
  kiln_host_dim3 gridDim;
  /* Lane of this thread in its warp (linear thread index % 32). */
  unsigned lane;
  /* The 32 exchange slots of this thread's warp; shuffles write their value
   * to slot `lane`, wait for the warp, then read the source lane's slot. */
  unsigned long long *warpSlots;
  /* Opaque to kernels; passed back to `wait`. */
  void *scheduler;
  /* Suspends this thread until every live thread of the scope has called
   * `wait` with the same scope (KILN_HOST_WAIT_*). */
  void (*wait)(void *scheduler, int scope);
} kiln_host_thread;

/* A TMA tensor map as the host backend's cp.async.bulk.tensor reads it. On
 * the GPU a tensor map (CUtensorMap) is 128 opaque bytes that
 * cuTensorMapEncodeTiled writes; here it holds what that call is given, in
 * a struct of the same size and alignment (128 bytes each, as CUDA 13
 * declares it), which a kernel takes by value
 * (its argument slot points to it, as a `long long`'s does); the runtime
 * fills it (runtime/lib/TensorMaps.cpp). */
typedef struct kiln_host_tensor_map {
  /* The tensor's first element. */
  const unsigned char *global;
  /* Elements along each dim, innermost first. */
  unsigned long long dims[5];
  /* Bytes between consecutive indices of each dim (strides[0] is the
   * element size). */
  unsigned long long strides[5];
  /* The box a copy moves: elements along each dim. */
  unsigned box[5];
  unsigned rank;
  unsigned elementBytes;
  /* 0 (no swizzle), 32, 64 or 128: the swizzle span in bytes. */
  unsigned swizzleBytes;
} __attribute__((aligned(128))) kiln_host_tensor_map;

/* Entry points of a kernel module, as the launcher resolves them. */
typedef unsigned (*kiln_host_abi_version_fn)(void);
typedef unsigned (*kiln_host_arity_fn)(void);
typedef void (*kiln_host_entry_fn)(void *const *args, kiln_host_thread *self);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_HOST_ABI_H */
