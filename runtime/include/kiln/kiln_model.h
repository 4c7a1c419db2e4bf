/*===- kiln_model.h - C ABI of a compiled Kiln model ---------------*- C -*-===*
 *
 * The one public header of a Kiln artifact. A `.so` written by `kilnc` embeds
 * a compiled model (plan, kernels, weights) and exports exactly the functions
 * declared here; link it or `dlopen` it from C or C++ with no Kiln build tree,
 * no MLIR and no Python at run time.
 *
 * Conventions:
 *  - Every function that can fail returns a `kiln_status`; on failure the
 *    message is available from `kiln_last_error()` on the same thread.
 *  - Nothing here aborts the process, and a failed call leaves the model
 *    usable (a later call may succeed, e.g. once a device is available).
 *  - Calls on one `kiln_model` are serialized internally; distinct models may
 *    be used from distinct threads concurrently, and so may the execution
 *    contexts of one model (`kiln_context_create`).
 *  - Environment: KILN_CUDA_GRAPHS=0 turns CUDA-graph replay off (each run
 *    then issues its steps one by one, as profilers show them plainly);
 *    KILN_CUDA_GRAPH_UPDATES=0 captures a run at new dims again instead of
 *    updating its graph in place.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_KILN_MODEL_H
#define KILN_KILN_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this C ABI. An artifact records the version it was compiled
 *  for and refuses to load when it differs from the runtime embedded in it. */
#define KILN_ABI_VERSION 1

/** Marks the functions that a Kiln artifact exports. */
#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/** Result of every fallible call; details come from `kiln_last_error()`. */
typedef enum kiln_status {
  KILN_OK = 0,                     /**< Success. */
  KILN_ERROR_INVALID_ARGUMENT = 1, /**< A null pointer, bad index or enum. */
  KILN_ERROR_CORRUPT_ARTIFACT = 2, /**< The embedded artifact is damaged. */
  KILN_ERROR_VERSION_MISMATCH = 3, /**< Artifact built for another ABI. */
  KILN_ERROR_NO_DEVICE = 4,        /**< No CUDA driver or no GPU found. */
  KILN_ERROR_CUDA = 5,        /**< A CUDA driver or cuBLASLt call failed. */
  KILN_ERROR_UNSUPPORTED = 6, /**< Feature or backend not available. */
  KILN_ERROR_INTERNAL = 7     /**< A bug or an allocation failure. */
} kiln_status;

/** Element type of a tensor; same order as `kiln::rt::DType`. */
typedef enum kiln_dtype {
  KILN_DTYPE_F32 = 0,       /**< IEEE float32. */
  KILN_DTYPE_F16 = 1,       /**< IEEE float16. */
  KILN_DTYPE_BF16 = 2,      /**< bfloat16. */
  KILN_DTYPE_I64 = 3,       /**< int64_t. */
  KILN_DTYPE_I32 = 4,       /**< int32_t. */
  KILN_DTYPE_I8 = 5,        /**< int8_t. */
  KILN_DTYPE_BOOL = 6,      /**< One byte per element, 0 or 1. */
  KILN_DTYPE_F64 = 7,       /**< IEEE float64 (double). */
  KILN_DTYPE_I16 = 8,       /**< int16_t. */
  KILN_DTYPE_U8 = 9,        /**< uint8_t. */
  KILN_DTYPE_U16 = 10,      /**< uint16_t. */
  KILN_DTYPE_U32 = 11,      /**< uint32_t. */
  KILN_DTYPE_U64 = 12,      /**< uint64_t. */
  KILN_DTYPE_I4 = 13,       /**< int4, one a byte: its low four bits
                                 (written sign-extended, -8 to 7). */
  KILN_DTYPE_U4 = 14,       /**< uint4, one a byte: its low four bits. */
  KILN_DTYPE_F8E4M3FN = 15, /**< float8 E4M3FN (OCP FP8 E4M3) bits. */
  KILN_DTYPE_F8E5M2 = 16    /**< float8 E5M2 bits. */
} kiln_dtype;

/** Where a model executes. */
typedef enum kiln_backend {
  KILN_BACKEND_AUTO = 0, /**< CUDA when a driver and a GPU are present,
                              else HOST (with a message on stderr). */
  KILN_BACKEND_CUDA = 1, /**< The CUDA driver API and cuBLASLt. */
  KILN_BACKEND_HOST = 2  /**< The generated kernels compiled with the system
                              C++ compiler and run on the CPU; environment:
                              KILN_HOST_SEED (thread-order seed),
                              KILN_HOST_CHECK=1 (AddressSanitizer checking
                              mode), KILN_HOST_CXX (the compiler). */
} kiln_backend;

/** Where the tensors passed to `kiln_model_run` live. */
typedef enum kiln_memory {
  KILN_MEMORY_HOST = 0,  /**< Ordinary host memory. */
  KILN_MEMORY_DEVICE = 1 /**< CUDA device pointers (`CUdeviceptr` values). */
} kiln_memory;

/** Description of one graph input or output. All pointers are owned by the
 *  model and stay valid until `kiln_model_destroy`. */
typedef struct kiln_tensor_desc {
  const char *name;     /**< The ONNX name, NUL-terminated. */
  kiln_dtype dtype;     /**< Element type. */
  int32_t rank;         /**< Number of dimensions (0 for a scalar). */
  const int64_t *shape; /**< `rank` dimensions, row-major (C order). */
} kiln_tensor_desc;

/** An opaque loaded model. */
typedef struct kiln_model kiln_model;

/** An execution context of a model: its own arena and staging buffers (and,
 *  on CUDA, its own stream), sharing the model's kernels and weights. */
typedef struct kiln_context kiln_context;

/** Creates the model embedded in this shared object.
 *
 *  Reads and verifies the artifact appended to this `.so` (checksum, format
 *  and ABI version). The device (or, for the host backend, the host build
 *  of the kernels) is initialized lazily by the first `kiln_model_run`, so
 *  creation succeeds on a machine without a GPU. AUTO opens the CUDA driver
 *  here to choose the backend.
 *
 *  @param backend Which backend runs the model.
 *  @param out     Receives the new model; set to NULL on failure.
 *  @return KILN_OK, KILN_ERROR_CORRUPT_ARTIFACT, KILN_ERROR_VERSION_MISMATCH,
 *          KILN_ERROR_UNSUPPORTED (backend not available) or
 *          KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_create(kiln_backend backend, kiln_model **out);

/** Bits of kiln_model_options::set: which fields the caller gives. */
#define KILN_OPTION_HOST_SEED (1u << 0)
#define KILN_OPTION_HOST_CHECK (1u << 1)
#define KILN_OPTION_CUDA_GRAPHS (1u << 2)
#define KILN_OPTION_TUNE_MATMULS (1u << 3)
#define KILN_OPTION_GEMM_KERNEL (1u << 4)
#define KILN_OPTION_PDL (1u << 5)

/** Run-time options of a model. Zero it, set `size` to
 *  sizeof(kiln_model_options), then set the fields to give and their bits
 *  in `set`. A field not in `set` is read from the environment as
 *  kiln_model_create reads it (KILN_HOST_SEED, KILN_HOST_CHECK,
 *  KILN_CUDA_GRAPHS, KILN_TUNE_MATMULS, KILN_GEMM_KERNEL, KILN_PDL), else takes
 * its default. */
typedef struct kiln_model_options {
  /** sizeof(kiln_model_options) as the caller knows it: fields past it are
   *  left unset, so a caller built against an older header still works. */
  uint32_t size;
  /** KILN_OPTION_* bits of the fields given below. */
  uint32_t set;
  /** Host backend: the seed of the order in which emulated threads run
   *  between barriers (default 0). */
  uint64_t host_seed;
  /** Host backend: nonzero for the checking mode (each buffer its own
   *  allocation, kernels built with AddressSanitizer, which must be loaded
   *  in the process; default off). */
  int32_t host_check;
  /** CUDA backend: nonzero replays each run after the first as a CUDA graph
   *  (default on). */
  int32_t cuda_graphs;
  /** CUDA backend: nonzero times several cuBLASLt algorithms for each
   *  matmul at its first run and keeps the fastest; zero runs the
   *  heuristic's first, reproducible across processes (default on). */
  int32_t tune_matmuls;
  /** Both backends: the kernel every matmul step runs: NULL or "" for the
   *  backend's own (cuBLASLt's algorithms; on the host backend the CPU GEMM
   *  that stands in for them); "timed" for the fastest of cuBLASLt's choice
   *  and Kiln's GEMM kernels, timed at the first run (the host backend
   *  cannot time and runs its stand-in); else the name of one of Kiln's
   *  GEMM kernels that every matmul step offers (kilnc --report lists
   *  them); a step without it fails the run. A step whose kernel takes
   *  the launch after it too (an FP8 Q/DQ product's) is timed even when
   *  NULL. Copied by kiln_model_create_with_options. */
  const char *gemm_kernel;
  /** CUDA backend: nonzero launches each kernel as a programmatic dependent
   *  launch, overlapping its launch with the end of the kernel before it
   *  (default off). */
  int32_t pdl;
} kiln_model_options;

/** kiln_model_create with run-time options; `options` may be NULL (then it
 *  is kiln_model_create). kiln_model_info names the options in effect.
 *  @return as kiln_model_create; KILN_ERROR_INVALID_ARGUMENT for a `size`
 *          smaller than the first two fields or bits outside KILN_OPTION_*. */
KILN_API kiln_status kiln_model_create_with_options(
    kiln_backend backend, const kiln_model_options *options, kiln_model **out);

/** Releases a model and all its host and device memory. NULL is a no-op. */
KILN_API void kiln_model_destroy(kiln_model *model);

/** Returns the number of graph inputs, or -1 when `model` is NULL. */
KILN_API int32_t kiln_model_num_inputs(const kiln_model *model);

/** Returns the number of graph outputs, or -1 when `model` is NULL. */
KILN_API int32_t kiln_model_num_outputs(const kiln_model *model);

/** Describes graph input `index` (0-based, graph order) into `*out`.
 *  @return KILN_OK or KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_input_desc(const kiln_model *model,
                                           int32_t index,
                                           kiln_tensor_desc *out);

/** Describes graph output `index` (0-based, graph order) into `*out`.
 *  @return KILN_OK or KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_output_desc(const kiln_model *model,
                                            int32_t index,
                                            kiln_tensor_desc *out);

/** Runs the model once and waits for it to finish.
 *
 *  Host-memory tensors are copied through page-locked staging; device-memory
 *  inputs are read after the work queued on the legacy default stream (use
 *  `kiln_context_enqueue` to order against another stream).
 *
 *  @param inputs  `kiln_model_num_inputs` pointers in graph order, each to a
 *                 dense row-major tensor of the described dtype and shape.
 *  @param outputs `kiln_model_num_outputs` pointers in graph order, each to
 *                 writable storage of the described size.
 *  @param memory  Whether all the pointers are host or device memory.
 *  @return KILN_OK, KILN_ERROR_INVALID_ARGUMENT, KILN_ERROR_NO_DEVICE,
 *          KILN_ERROR_CUDA, KILN_ERROR_UNSUPPORTED or KILN_ERROR_INTERNAL. */
KILN_API kiln_status kiln_model_run(kiln_model *model,
                                    const void *const *inputs,
                                    void *const *outputs, kiln_memory memory);

/** Returns the number of named symbolic dims of the model (0 for a model
 *  compiled with static shapes), or -1 when `model` is NULL.
 *
 *  A model compiled with symbolic dims (`kilnc --dim batch=1:8,...`) runs at
 *  any value of each dim in its range: its input and output descriptions
 *  give the shapes at the top of the ranges, `kiln_model_bind_dims` learns
 *  the dims' values from the shapes of a run's inputs, and
 *  `kiln_model_run_dims` runs at them (`kiln_context_run_dims` and
 *  `kiln_context_enqueue_dims` on a context). `kiln_model_run` and
 *  `kiln_context_run` refuse such a model. */
KILN_API int32_t kiln_model_num_dims(const kiln_model *model);

/** Names dim `index` (0-based) and its range: `*name` is owned by the
 *  model; `*min` and `*max` are the least and greatest value it takes.
 *  @return KILN_OK or KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_dim(const kiln_model *model, int32_t index,
                                    const char **name, int64_t *min,
                                    int64_t *max);

/** Learns the dims' values from the shapes of a run's inputs:
 *  `input_shapes[i]` points to the dims of input i (as many as its rank);
 *  `dims` receives `kiln_model_num_dims` values. Fails with a message that
 *  names the input, dim and size when the shapes disagree with each other
 *  or a dim is outside its range.
 *  @return KILN_OK or KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_bind_dims(const kiln_model *model,
                                          const int64_t *const *input_shapes,
                                          int64_t *dims);

/** Writes the shape of input `index` at the dims' values `dims` into
 *  `shape` (as many values as the input's rank).
 *  @return KILN_OK or KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_input_shape(const kiln_model *model,
                                            const int64_t *dims, int32_t index,
                                            int64_t *shape);

/** Writes the shape of output `index` at the dims' values `dims` into
 *  `shape` (as many values as the output's rank), to size its storage.
 *  @return KILN_OK or KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_output_shape(const kiln_model *model,
                                             const int64_t *dims, int32_t index,
                                             int64_t *shape);

/** Says whether output `index` is kept in an input's storage: a KV cache
 *  appended in place (`kilnc --kv-cache-in-place`). Such an input is the
 *  cache at its full length along `*axis`, its valid rows first; the run
 *  writes only the new rows after them into the output. Pass one buffer as
 *  both (the same pointer) and a decode step costs the new rows alone; two
 *  disjoint buffers work too, the input copied to the output first.
 *  `*input` receives the input's index and `*axis` the dim, or -1 each when
 *  the output has storage of its own.
 *  @return KILN_OK or KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_model_output_alias(const kiln_model *model,
                                             int32_t index, int32_t *input,
                                             int32_t *axis);

/** Runs the model once at the dims' values `dims` (`kiln_model_num_dims`
 *  values, each in its range) and waits for it; as `kiln_model_run`, with
 *  tensors of the shapes those values give. The plan for each set of values
 *  is written on first use and kept.
 *  @return as `kiln_model_run`. */
KILN_API kiln_status kiln_model_run_dims(kiln_model *model, const int64_t *dims,
                                         const void *const *inputs,
                                         void *const *outputs,
                                         kiln_memory memory);

/** Creates an execution context for concurrent runs: runs of different
 *  contexts of one model may overlap (one thread per context, say); runs of
 *  one context are serialized. Its memory is allocated by its first run.
 *  The model must outlive its contexts.
 *  @return KILN_OK or KILN_ERROR_INVALID_ARGUMENT. */
KILN_API kiln_status kiln_context_create(kiln_model *model,
                                         kiln_context **out);

/** Releases a context and its memory. NULL is a no-op. */
KILN_API void kiln_context_destroy(kiln_context *context);

/** Runs the context's model once on the context and waits for it; as
 *  `kiln_model_run`, which runs on the model's own default context. */
KILN_API kiln_status kiln_context_run(kiln_context *context,
                                      const void *const *inputs,
                                      void *const *outputs,
                                      kiln_memory memory);

/** Queues one run of the context's model on the caller's CUDA stream and
 *  returns without waiting for it.
 *
 *  The tensors are device memory (`CUdeviceptr` values). The run reads the
 *  inputs after the work queued on `stream` before this call, and work
 *  queued on `stream` after it sees the outputs. Runs of one context are
 *  ordered among themselves whatever streams they use (they share its
 *  arena), and its synchronous runs too. On the CUDA backend a context
 *  replays its plan as a CUDA graph after its first run at each set of dims
 *  (KILN_CUDA_GRAPHS=0 turns that off).
 *
 *  On the host backend the tensors are host memory, `stream` is ignored and
 *  the run is over, with its status, when the call returns.
 *
 *  @param stream A `CUstream` (or `cudaStream_t`) of the current device's
 *                primary context; NULL is the default stream.
 *  @return KILN_OK once queued, or an error in queuing it; an out-of-range
 *          gather index is reported by `kiln_context_synchronize`. */
KILN_API kiln_status kiln_context_enqueue(kiln_context *context,
                                          const void *const *inputs,
                                          void *const *outputs, void *stream);

/** Runs the context's model once at the dims' values `dims` (a model with
 *  symbolic dims: `kiln_model_num_dims` values, each in its range) and
 *  waits for it; as `kiln_model_run_dims`, on the context. Runs of
 *  different contexts at different dims may overlap.
 *  @return as `kiln_model_run`. */
KILN_API kiln_status kiln_context_run_dims(kiln_context *context,
                                           const int64_t *dims,
                                           const void *const *inputs,
                                           void *const *outputs,
                                           kiln_memory memory);

/** Queues one run of the context's model at the dims' values `dims` on the
 *  caller's CUDA stream; as `kiln_context_enqueue`. */
KILN_API kiln_status kiln_context_enqueue_dims(kiln_context *context,
                                               const int64_t *dims,
                                               const void *const *inputs,
                                               void *const *outputs,
                                               void *stream);

/** Waits until the runs queued on the context by `kiln_context_enqueue`
 *  (or `kiln_context_enqueue_dims`) are done, and reports a failure any of them
 * had (an out-of-range gather index names its ONNX node, as `kiln_model_run`
 * does).
 *  @return KILN_OK, KILN_ERROR_INVALID_ARGUMENT or KILN_ERROR_CUDA. */
KILN_API kiln_status kiln_context_synchronize(kiln_context *context);

/** Returns the message of the last failed call on this thread ("" if none).
 *  Successful calls do not clear it. Valid until the next failing call on
 *  this thread. */
KILN_API const char *kiln_last_error(void);

/** Returns KILN_ABI_VERSION of the runtime inside this shared object. */
KILN_API uint32_t kiln_abi_version(void);

/** Returns a short human-readable summary of the model: Kiln version, target
 *  arch, model hash, peak arena bytes, backend and the run-time options in
 *  effect. Owned by the model; "" when `model` is NULL. */
KILN_API const char *kiln_model_info(const kiln_model *model);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_MODEL_H */
