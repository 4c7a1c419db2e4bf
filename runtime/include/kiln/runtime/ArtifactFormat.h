//===- ArtifactFormat.h - Kiln artifact encoding and container --*- C++ -*-===//
//
// The binary encoding of a compiled model (the Plan, ArtifactPlan.h) and the
// `.so` container that carries it. The compiler writes artifacts with these
// functions (it links `kiln_runtime`), and the runtime reads them. Nothing
// here depends on MLIR, LLVM or CUDA.
//
// Encoding: little-endian, starting with `kArtifactMagic` and
// `kArtifactFormatVersion`. Strings and blobs are a u64 length then bytes;
// lists are a u64 count then elements. The reader bounds-checks every length
// and count against the bytes that remain, so hostile input cannot cause an
// out-of-bounds read or an allocation larger than the input, and then
// validates the plan as a whole (`validateArtifact`).
//
// Container: an artifact `.so` is a prebuilt template shared library, then
// the serialized payload, then an `ArtifactTrailer` as its very last
// `kArtifactTrailerSize` bytes (see `appendArtifactPayload`). The dynamic
// loader ignores bytes past the ELF's own contents, so the result still loads
// with `dlopen`; `strip` would drop the payload.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACTFORMAT_H
#define KILN_RUNTIME_ARTIFACTFORMAT_H

#include "kiln/runtime/ArtifactPlan.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace kiln {
namespace rt {

//===----------------------------------------------------------------------===//
// Constants of the encoding
//===----------------------------------------------------------------------===//

/// First bytes of a serialized artifact.
constexpr char kArtifactMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};

/// Version of the serialized layout; bumped on any change to the encoding,
/// and to what the runtime may assume of the kernels: since 11 every kernel
/// waits for the kernel before it first (kiln_pdl_enter), so that
/// CudaOptions::pdl may launch it early; 12 added a matmul's LayerNorm; 13
/// a GEMM kernel's shared memory and tensor maps; 14 a matmul's RMSNorm and
/// the sum its norm also writes; 15 a matmul's exact GELU, its widening of
/// a 16-bit result into an fp32 C, and the kernel that finishes either
/// after cuBLASLt; 16 kernel names that repeat (ops of the same code share
/// one kernel, which a runtime before it would define twice); 17 the dims
/// each launch depends on (LaunchStep::dimsRead); 18 Kiln's GEMM kernels
/// finish a split and a step's norm themselves, counting arrivals
/// (GemmCandidate::arrivals) in place of a reduce kernel, a norm's kernels
/// taking its arguments, and the norm kernel after cuBLASLt reads C or the
/// sum alone (four pointers); 19 a matmul of float8 operands
/// (MatmulStep::float8) and GEMM kernels that take the launch after their
/// step (GemmCandidate::withNextLaunch).
constexpr uint32_t kArtifactFormatVersion = 19;

/// Most dimensions a buffer may have.
constexpr uint32_t kMaxRank = 32;

/// Last bytes of an artifact `.so`: the trailer's magic.
constexpr char kArtifactTrailerMagic[8] = {'K', 'I', 'L', 'N',
                                           'S', 'O', '0', '1'};

/// Size of the encoded `ArtifactTrailer` (4 x 8 bytes, little-endian).
constexpr size_t kArtifactTrailerSize = 32;

/// Alignment of the payload inside an artifact `.so`.
constexpr uint64_t kArtifactPayloadAlign = 64;

/// Locates the payload in an artifact `.so`; encoded little-endian as the
/// last `kArtifactTrailerSize` bytes of the file.
struct ArtifactTrailer {
  /// Byte offset of the payload from the start of the file.
  uint64_t payloadOffset = 0;
  /// Size of the payload in bytes; it ends where the trailer begins.
  uint64_t payloadSize = 0;
  /// `artifactChecksum` of the payload bytes.
  uint64_t checksum = 0;
  /// Always `kArtifactTrailerMagic`.
  char magic[8] = {};
};

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// Checks the invariants the runtime relies on: ids and indices in range,
/// sizes consistent and inside their storage (with overflow-checked
/// arithmetic), graph inputs/outputs well formed, and every step's operands
/// large enough. Returns false with a message in `error` otherwise.
/// `streamedWeightBytes`, when given, is the size of weights that a writer
/// streams after the artifact's header instead of holding them in `a`.
bool validateArtifact(
    const Artifact &a, std::string &error,
    std::optional<uint64_t> streamedWeightBytes = std::nullopt);

/// The part of `validateArtifact` that checks the buffers, the graph
/// inputs and outputs and the steps, with `weightBytes` of weights; what
/// `instantiatePlan` checks of each plan it writes.
bool validatePlan(const Artifact &a, std::string &error, uint64_t weightBytes);

/// Most named dims a plan may have, and most terms and factors in a size.
constexpr uint32_t kMaxDims = 64;
constexpr uint32_t kMaxSizeTerms = 64;

//===----------------------------------------------------------------------===//
// Serialization
//===----------------------------------------------------------------------===//

/// Encodes `a` in the artifact format (see the file comment) up to and
/// including the length of the weights, `weightBytes`, which follow it: a
/// writer can stream the weights after this prefix.
std::string serializeArtifactPrefix(const Artifact &a, uint64_t weightBytes);

/// Encodes `a` into the payload format: the prefix, then the weights.
std::string serializeArtifact(const Artifact &a);

/// Decodes an artifact from [data, data + size) into `out` and validates it
/// with `validateArtifact`. Returns false with a message in `error` on any
/// malformed, truncated, oversized or inconsistent input; never reads outside
/// the input and never allocates more than about ten times `size`. On
/// failure `out` holds whatever was decoded so far and must not be used.
bool deserializeArtifact(const char *data, size_t size, Artifact &out,
                         std::string &error);

//===----------------------------------------------------------------------===//
// The .so container
//===----------------------------------------------------------------------===//

/// FNV-1a 64-bit hash of [data, data + size); the payload checksum. Pass the
/// previous result as `hash` to hash in pieces.
uint64_t artifactChecksum(const char *data, size_t size,
                          uint64_t hash = 0xcbf29ce484222325ull);

/// The checksum of a weights file: FNV-1a over little-endian 64-bit words
/// (then the tail bytes), eight times faster than `artifactChecksum` on the
/// gigabytes a sidecar holds. Call with `hash` from the previous chunk to
/// hash in pieces whose sizes, all but the last, are multiples of 8.
uint64_t weightsChecksum(const char *data, size_t size,
                         uint64_t hash = 0xcbf29ce484222325ull);

/// Encodes `t` as the `kArtifactTrailerSize` bytes that end an artifact.
std::string encodeArtifactTrailer(const ArtifactTrailer &t);

/// Returns `templateSo` followed by zero padding to `kArtifactPayloadAlign`,
/// `payload` (a `serializeArtifact` result) and the trailer that locates it.
std::string appendArtifactPayload(const std::string &templateSo,
                                  const std::string &payload);

/// Finds the payload in a whole artifact file [file, file + fileSize): decodes
/// the trailer, checks its magic, that the payload ends exactly where the
/// trailer begins, and the checksum. On success `payload` / `payloadSize`
/// point into `file`.
bool findArtifactPayload(const char *file, size_t fileSize,
                         const char *&payload, size_t &payloadSize,
                         std::string &error);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_ARTIFACTFORMAT_H
