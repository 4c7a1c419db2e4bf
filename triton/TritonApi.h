//===- TritonApi.h - The part of Triton's C API the backend uses -*- C++
//-*-===//
//
// Kiln's own declarations of the functions, types and enum values of
// Triton Inference Server's C API (tritonserver.h, server API 1.31, and
// tritonbackend.h, backend API 1.19) that the Kiln backend calls or
// implements, written from Triton's public headers as the runtime does for
// the CUDA driver. The server process defines the functions; the backend
// links against nothing of Triton's. Enum values are spelled out: they are
// the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TRITON_TRITONAPI_H
#define KILN_TRITON_TRITONAPI_H

#include <stddef.h>
#include <stdint.h>

extern "C" {

struct TRITONSERVER_Error;
struct TRITONSERVER_Message;
struct TRITONBACKEND_Backend;
struct TRITONBACKEND_Model;
struct TRITONBACKEND_ModelInstance;
struct TRITONBACKEND_Request;
struct TRITONBACKEND_Response;
struct TRITONBACKEND_Input;
struct TRITONBACKEND_Output;

/// The backend API version this backend is written against: a server
/// whose major differs, or whose minor is older, cannot run it.
#define KILN_TRITONBACKEND_API_VERSION_MAJOR 1
#define KILN_TRITONBACKEND_API_VERSION_MINOR 19

/// TRITONSERVER_DataType.
typedef enum TRITONSERVER_datatype_enum {
  TRITONSERVER_TYPE_INVALID = 0,
  TRITONSERVER_TYPE_BOOL = 1,
  TRITONSERVER_TYPE_UINT8 = 2,
  TRITONSERVER_TYPE_UINT16 = 3,
  TRITONSERVER_TYPE_UINT32 = 4,
  TRITONSERVER_TYPE_UINT64 = 5,
  TRITONSERVER_TYPE_INT8 = 6,
  TRITONSERVER_TYPE_INT16 = 7,
  TRITONSERVER_TYPE_INT32 = 8,
  TRITONSERVER_TYPE_INT64 = 9,
  TRITONSERVER_TYPE_FP16 = 10,
  TRITONSERVER_TYPE_FP32 = 11,
  TRITONSERVER_TYPE_FP64 = 12,
  TRITONSERVER_TYPE_BYTES = 13,
  TRITONSERVER_TYPE_BF16 = 14
} TRITONSERVER_DataType;

/// TRITONSERVER_MemoryType.
typedef enum TRITONSERVER_memorytype_enum {
  TRITONSERVER_MEMORY_CPU = 0,
  TRITONSERVER_MEMORY_CPU_PINNED = 1,
  TRITONSERVER_MEMORY_GPU = 2
} TRITONSERVER_MemoryType;

/// TRITONSERVER_InstanceGroupKind.
typedef enum TRITONSERVER_instancegroupkind_enum {
  TRITONSERVER_INSTANCEGROUPKIND_AUTO = 0,
  TRITONSERVER_INSTANCEGROUPKIND_CPU = 1,
  TRITONSERVER_INSTANCEGROUPKIND_GPU = 2,
  TRITONSERVER_INSTANCEGROUPKIND_MODEL = 3
} TRITONSERVER_InstanceGroupKind;

/// TRITONSERVER_LogLevel.
typedef enum TRITONSERVER_loglevel_enum {
  TRITONSERVER_LOG_INFO = 0,
  TRITONSERVER_LOG_WARN = 1,
  TRITONSERVER_LOG_ERROR = 2,
  TRITONSERVER_LOG_VERBOSE = 3
} TRITONSERVER_LogLevel;

/// TRITONSERVER_Error_Code.
typedef enum TRITONSERVER_errorcode_enum {
  TRITONSERVER_ERROR_UNKNOWN = 0,
  TRITONSERVER_ERROR_INTERNAL = 1,
  TRITONSERVER_ERROR_NOT_FOUND = 2,
  TRITONSERVER_ERROR_INVALID_ARG = 3,
  TRITONSERVER_ERROR_UNAVAILABLE = 4,
  TRITONSERVER_ERROR_UNSUPPORTED = 5,
  TRITONSERVER_ERROR_ALREADY_EXISTS = 6,
  TRITONSERVER_ERROR_CANCELLED = 7
} TRITONSERVER_Error_Code;

/// TRITONSERVER_RequestReleaseFlag.
enum { TRITONSERVER_REQUEST_RELEASE_ALL = 1 };
/// TRITONSERVER_ResponseCompleteFlag.
enum { TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1 };
/// TRITONBACKEND_ArtifactType.
typedef enum TRITONBACKEND_artifacttype_enum {
  TRITONBACKEND_ARTIFACT_FILESYSTEM = 0
} TRITONBACKEND_ArtifactType;

// tritonserver.h: errors, messages, logging.
TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code,
                                          const char *msg);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *error);
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *error);
const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *error);
TRITONSERVER_Error *
TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message **message,
                                          const char *base, size_t byte_size);
TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *message);
TRITONSERVER_Error *
TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *message,
                                    const char **base, size_t *byte_size);
const char *TRITONSERVER_DataTypeString(TRITONSERVER_DataType datatype);
bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level);
TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level,
                                            const char *filename,
                                            const int line, const char *msg);

// tritonbackend.h: the backend, models and instances.
TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor);
TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *model,
                                            const char **name);
TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *model,
                                               uint64_t *version);
TRITONSERVER_Error *
TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *model,
                              TRITONBACKEND_ArtifactType *artifact_type,
                              const char **location);
TRITONSERVER_Error *
TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *model,
                          const uint32_t config_version,
                          TRITONSERVER_Message **model_config);
TRITONSERVER_Error *
TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model *model,
                                      bool *auto_complete_config);
TRITONSERVER_Error *
TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model *model,
                             const uint32_t config_version,
                             TRITONSERVER_Message *model_config);
TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *model,
                                             void **state);
TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *model,
                                                void *state);
TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance *instance,
                                const char **name);
TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance *instance,
                                TRITONSERVER_InstanceGroupKind *kind);
TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance *instance,
                                    int32_t *device_id);
TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *instance,
                                 TRITONBACKEND_Model **model);
TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *instance,
                                 void **state);
TRITONSERVER_Error *
TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *instance,
                                    void *state);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance *instance, TRITONBACKEND_Request *request,
    const bool success, const uint64_t exec_start_ns,
    const uint64_t compute_start_ns, const uint64_t compute_end_ns,
    const uint64_t exec_end_ns);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance *instance, const uint64_t batch_size,
    const uint64_t exec_start_ns, const uint64_t compute_start_ns,
    const uint64_t compute_end_ns, const uint64_t exec_end_ns);

// tritonbackend.h: requests, inputs, responses, outputs.
TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *request,
                                               const char *name,
                                               TRITONBACKEND_Input **input);
TRITONSERVER_Error *
TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request *request,
                                 uint32_t *count);
TRITONSERVER_Error *
TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request *request,
                                const uint32_t index, const char **output_name);
TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *request,
                                                 uint32_t release_flags);
TRITONSERVER_Error *
TRITONBACKEND_InputProperties(TRITONBACKEND_Input *input, const char **name,
                              TRITONSERVER_DataType *datatype,
                              const int64_t **shape, uint32_t *dims_count,
                              uint64_t *byte_size, uint32_t *buffer_count);
TRITONSERVER_Error *
TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *input, const uint32_t index,
                          const void **buffer, uint64_t *buffer_byte_size,
                          TRITONSERVER_MemoryType *memory_type,
                          int64_t *memory_type_id);
TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **response,
                                              TRITONBACKEND_Request *request);
TRITONSERVER_Error *
TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *response,
                             TRITONBACKEND_Output **output, const char *name,
                             const TRITONSERVER_DataType datatype,
                             const int64_t *shape, const uint32_t dims_count);
TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *response,
                                               const uint32_t send_flags,
                                               TRITONSERVER_Error *error);
TRITONSERVER_Error *
TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *output, void **buffer,
                           const uint64_t buffer_byte_size,
                           TRITONSERVER_MemoryType *memory_type,
                           int64_t *memory_type_id);

} // extern "C"

#endif // KILN_TRITON_TRITONAPI_H
