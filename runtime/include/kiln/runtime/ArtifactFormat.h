//===- ArtifactFormat.h - Kiln artifact plan and container ------*- C++ -*-===//
//
// The compiled form of a model (the Plan: buffers, steps, kernels, weights)
// and its binary encoding. Header-only: the compiler includes it to write
// artifacts without linking the runtime, and the runtime includes it to read
// them. Nothing here depends on MLIR, LLVM or CUDA.
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

#include "kiln/kiln_model.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace rt {

//===----------------------------------------------------------------------===//
// Element types and buffers
//===----------------------------------------------------------------------===//

/// Element type of a buffer; same order and values as `kiln_dtype`. New
/// types are appended, so the encoding of existing artifacts keeps its
/// meaning (an older reader rejects the new values as out of range).
enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  I64,
  I32,
  I8,
  Bool,
  F64,
  I16,
  U8,
  U16,
  U32,
  U64
};

/// The last valid `DType`, for range checks of decoded values.
constexpr DType kLastDType = DType::U64;

/// Whether `dtype` is a floating-point type (the types a matmul step takes).
inline bool isFloatDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::F64;
}

/// Returns the size in bytes of one element of `dtype`, or 0 if invalid.
inline size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::I64:
  case DType::U64:
  case DType::F64:
    return 8;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  }
  return 0;
}

/// Returns the NumPy-style name of `dtype` ("float32", ...), or "invalid".
inline const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16";
  case DType::I64:
    return "int64";
  case DType::I32:
    return "int32";
  case DType::I8:
    return "int8";
  case DType::Bool:
    return "bool";
  case DType::F64:
    return "float64";
  case DType::I16:
    return "int16";
  case DType::U8:
    return "uint8";
  case DType::U16:
    return "uint16";
  case DType::U32:
    return "uint32";
  case DType::U64:
    return "uint64";
  }
  return "invalid";
}

/// Where a buffer's storage lives.
enum class BufferKind : uint8_t {
  Arena,  ///< `offset` is a byte offset into the one device arena.
  Weight, ///< `offset` is a byte offset into `Artifact::weights`.
  Input,  ///< `offset` is the index of the graph input it views.
  Output, ///< `offset` is the index of the graph output it views.
  /// Every element holds one value, whose bytes are the low
  /// `dtypeSize(dtype)` bytes of `offset` (least significant first). The
  /// artifact stores no bytes for it: the runtime fills its storage at load,
  /// so that a constant of a huge shape (ConstantOfShape) costs nothing to
  /// compile and ship. Read-only, like weights.
  Splat,
};

/// The last valid `BufferKind`, for range checks of decoded values.
constexpr BufferKind kLastBufferKind = BufferKind::Splat;

/// Returns the lower-case name of `kind` ("arena", ...), or "invalid".
inline const char *bufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Arena:
    return "arena";
  case BufferKind::Weight:
    return "weight";
  case BufferKind::Input:
    return "input";
  case BufferKind::Output:
    return "output";
  case BufferKind::Splat:
    return "splat";
  }
  return "invalid";
}

/// A typed view of some storage. Several buffers may view the same storage
/// with different shapes (e.g. after a reshape): input/output views share the
/// input/output index, arena views may overlap when the memory planner reuses
/// or aliases storage.
struct Buffer {
  /// Where the storage lives; gives `offset` its meaning.
  BufferKind kind = BufferKind::Arena;
  /// Element type.
  DType dtype = DType::F32;
  /// Name for diagnostics; the ONNX name for graph inputs/outputs.
  std::string name;
  /// Row-major dimensions; empty for a scalar.
  std::vector<int64_t> shape;
  /// Byte offset (Arena, Weight), graph input/output index (Input, Output)
  /// or the element's bytes (Splat).
  uint64_t offset = 0;
  /// Size in bytes; always product(shape) * dtypeSize(dtype).
  uint64_t bytes = 0;
};

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

/// Launch of one generated kernel.
struct LaunchStep {
  /// Index into `Artifact::kernelNames`.
  uint32_t kernel = 0;
  /// Grid dimensions in blocks; each at least 1.
  uint32_t grid[3] = {1, 1, 1};
  /// Block dimensions in threads; each at least 1.
  uint32_t block[3] = {1, 1, 1};
  /// Dynamic shared memory in bytes.
  uint32_t sharedBytes = 0;
  /// Buffer ids, each passed to the kernel as a device pointer, in order.
  std::vector<uint32_t> args;
};

/// A (batched) GEMM run by cuBLASLt: for each batch i, row-major
/// C_i (m x n) = alpha * op(A_i) * op(B_i) + beta * C_i, where op transposes
/// when the flag is set. A_i is stored row-major as m x k (k x m when
/// `transA`), B_i as k x n (n x k when `transB`). Accumulation is in fp32,
/// or fp64 for F64 matrices.
/// The batch has two levels: `outerBatch` repetitions of a strided batch of
/// `batch` matrices, which expresses any broadcast of two batch patterns
/// (e.g. [2, 1] x [1, 3] batch dims); matrix (o, i) of X starts at element
/// o * outerStrideX + i * strideX.
struct MatmulStep {
  /// Element type of A, B and C; F32, F16, BF16 or F64.
  DType dtype = DType::F32;
  /// Whether A is stored transposed (k x m).
  bool transA = false;
  /// Whether B is stored transposed (n x k).
  bool transB = false;
  /// Number of matrices in the batch; at least 1.
  int64_t batch = 1;
  /// Rows of C; at least 1.
  int64_t m = 1;
  /// Columns of C; at least 1.
  int64_t n = 1;
  /// Contracted extent; at least 1.
  int64_t k = 1;
  /// Elements between consecutive A matrices; 0 broadcasts one matrix.
  int64_t strideA = 0;
  /// Elements between consecutive B matrices; 0 broadcasts one matrix.
  int64_t strideB = 0;
  /// Elements between consecutive C matrices; at least m * n if batch > 1.
  int64_t strideC = 0;
  /// Repetitions of the inner batch; at least 1.
  int64_t outerBatch = 1;
  /// Elements between consecutive inner batches of A; 0 broadcasts.
  int64_t outerStrideA = 0;
  /// Elements between consecutive inner batches of B; 0 broadcasts.
  int64_t outerStrideB = 0;
  /// Elements between consecutive inner batches of C; large enough that no
  /// two C matrices overlap.
  int64_t outerStrideC = 0;
  /// Buffer id of A.
  uint32_t a = 0;
  /// Buffer id of B.
  uint32_t b = 0;
  /// Buffer id of C, read (when beta != 0) and written.
  uint32_t c = 0;
  /// Scale of the product.
  float alpha = 1.0f;
  /// Scale of the previous contents of C (1 adds a residual).
  float beta = 0.0f;
};

/// A device-to-device copy of the first `bytes` bytes of `src` to `dst`.
struct CopyStep {
  /// Buffer id of the source.
  uint32_t src = 0;
  /// Buffer id of the destination; must not overlap the source.
  uint32_t dst = 0;
  /// Bytes to copy; at most the size of either buffer.
  uint64_t bytes = 0;
};

/// One step of the plan; `kind` says which member is meaningful.
struct Step {
  /// Which of the members below this step uses.
  enum class Kind : uint8_t { Launch, Matmul, Copy };
  /// The step kind.
  Kind kind = Kind::Launch;
  /// Meaningful when `kind == Kind::Launch`.
  LaunchStep launch;
  /// Meaningful when `kind == Kind::Matmul`.
  MatmulStep matmul;
  /// Meaningful when `kind == Kind::Copy`.
  CopyStep copy;

  /// Returns a launch step.
  static Step ofLaunch(LaunchStep s) {
    Step step;
    step.kind = Kind::Launch;
    step.launch = std::move(s);
    return step;
  }
  /// Returns a matmul step.
  static Step ofMatmul(const MatmulStep &s) {
    Step step;
    step.kind = Kind::Matmul;
    step.matmul = s;
    return step;
  }
  /// Returns a copy step.
  static Step ofCopy(const CopyStep &s) {
    Step step;
    step.kind = Kind::Copy;
    step.copy = s;
    return step;
  }
};

/// The last valid `Step::Kind`, for range checks of decoded values.
constexpr Step::Kind kLastStepKind = Step::Kind::Copy;

//===----------------------------------------------------------------------===//
// Artifact
//===----------------------------------------------------------------------===//

/// Weights kept in a file of their own beside the `.so` (`model.so` +
/// `model.kw`), for models whose weights are too large to embed.
struct WeightsFile {
  /// The file's name, in the folder of the `.so`; empty when the weights are
  /// embedded in `Artifact::weights`.
  std::string name;
  /// Its size in bytes; `Weight` buffers address [0, bytes).
  uint64_t bytes = 0;
  /// `weightsChecksum` of its bytes, checked when it is loaded.
  uint64_t checksum = 0;
};

/// A compiled model: everything the runtime needs to run it.
struct Artifact {
  /// The C ABI version the artifact was compiled for (`KILN_ABI_VERSION`).
  uint32_t abiVersion = KILN_ABI_VERSION;
  /// Version of the Kiln compiler that wrote it.
  std::string kilnVersion;
  /// Target GPU architecture of `cubin`, e.g. "sm_90a".
  std::string arch;
  /// Hash identifying the source model and compile options.
  std::string modelHash;
  /// Entry-point names of the kernels in `cubin` / `ptx`.
  std::vector<std::string> kernelNames;
  /// Compiled kernels for `arch`; may be empty.
  std::string cubin;
  /// The same kernels as PTX, loaded when the cubin does not fit the GPU.
  std::string ptx;
  /// The generated CUDA C++ source; the host backend compiles it.
  std::string cudaSource;
  /// Size in bytes of the device arena; also the peak activation memory.
  uint64_t arenaBytes = 0;
  /// Every buffer the steps refer to; a buffer id indexes this list.
  std::vector<Buffer> buffers;
  /// Buffer ids of the graph inputs in order, with their canonical shapes.
  std::vector<uint32_t> inputs;
  /// Buffer ids of the graph outputs in order, with their canonical shapes.
  std::vector<uint32_t> outputs;
  /// The steps, run in order on one stream.
  std::vector<Step> steps;
  /// The run-time index checks: site i + 1 of the kernels' `kiln_index_error`
  /// flag is the gather described here (its ONNX node). Empty when the
  /// kernels clamp without checking.
  std::vector<std::string> indexSites;
  /// All weights, addressed by `Weight` buffers, unless `weightsFile` names
  /// a sidecar file.
  std::string weights;
  /// The sidecar file holding the weights, when they are not embedded.
  WeightsFile weightsFile;
  /// Not serialized: the sidecar's bytes once the loader has mapped and
  /// checked them, and what keeps them mapped.
  const char *mappedWeights = nullptr;
  std::shared_ptr<const void> mappedWeightsOwner;

  /// The size of the weights the `Weight` buffers address.
  uint64_t weightBytes() const {
    return weightsFile.name.empty() ? weights.size() : weightsFile.bytes;
  }
  /// The weight bytes: embedded, or the mapped sidecar (null before the
  /// loader has mapped it).
  const char *weightData() const {
    return weightsFile.name.empty() ? weights.data() : mappedWeights;
  }
  /// Drops the host copy of the weights (after an upload to the GPU).
  void releaseWeights() {
    std::string().swap(weights);
    mappedWeights = nullptr;
    mappedWeightsOwner.reset();
  }
};

//===----------------------------------------------------------------------===//
// Constants of the encoding
//===----------------------------------------------------------------------===//

/// First bytes of a serialized artifact.
constexpr char kArtifactMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};

/// Version of the serialized layout; bumped on any change to the encoding.
constexpr uint32_t kArtifactFormatVersion = 5;

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
// Implementation details
//===----------------------------------------------------------------------===//

namespace detail {

/// Sets `out = a * b`; returns false on overflow.
inline bool checkedMul(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

/// Sets `out = a + b`; returns false on overflow.
inline bool checkedAdd(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_add_overflow(a, b, &out);
}

/// Appends little-endian integers, floats and length-prefixed strings.
class ByteWriter {
public:
  /// Appends the low `bytes` bytes of `v`, least significant first.
  void put(uint64_t v, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  /// Appends one byte.
  void u8(uint8_t v) { put(v, 1); }
  /// Appends a 32-bit unsigned integer.
  void u32(uint32_t v) { put(v, 4); }
  /// Appends a 64-bit unsigned integer.
  void u64(uint64_t v) { put(v, 8); }
  /// Appends a 64-bit signed integer (two's complement).
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  /// Appends a float by its IEEE bits.
  void f32(float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    u32(bits);
  }
  /// Appends a length-prefixed string or blob.
  void str(const std::string &s) {
    u64(s.size());
    out.append(s);
  }
  /// Appends raw bytes.
  void raw(const char *data, size_t size) { out.append(data, size); }

  /// The bytes written so far.
  std::string out;
};

/// Reads what `ByteWriter` writes, never past `end`. Every read returns false
/// and records an error once the input runs short.
class ByteReader {
public:
  /// Reads from [data, data + size).
  ByteReader(const char *data, size_t size)
      : begin(data), cur(data), end(data + size) {}

  /// Bytes not yet consumed.
  size_t remaining() const { return static_cast<size_t>(end - cur); }

  /// Reads `bytes` little-endian bytes into `v`.
  bool get(uint64_t &v, unsigned bytes, const char *what) {
    if (remaining() < bytes)
      return fail(std::string("truncated while reading ") + what);
    v = 0;
    for (unsigned i = 0; i < bytes; ++i)
      v |= static_cast<uint64_t>(static_cast<unsigned char>(cur[i])) << (8 * i);
    cur += bytes;
    return true;
  }
  /// Reads one byte.
  bool u8(uint8_t &v, const char *what) {
    uint64_t x = 0;
    if (!get(x, 1, what))
      return false;
    v = static_cast<uint8_t>(x);
    return true;
  }
  /// Reads a 32-bit unsigned integer.
  bool u32(uint32_t &v, const char *what) {
    uint64_t x = 0;
    if (!get(x, 4, what))
      return false;
    v = static_cast<uint32_t>(x);
    return true;
  }
  /// Reads a 64-bit unsigned integer.
  bool u64(uint64_t &v, const char *what) { return get(v, 8, what); }
  /// Reads a 64-bit signed integer.
  bool i64(int64_t &v, const char *what) {
    uint64_t x = 0;
    if (!get(x, 8, what))
      return false;
    v = static_cast<int64_t>(x);
    return true;
  }
  /// Reads a float from its IEEE bits.
  bool f32(float &v, const char *what) {
    uint32_t bits = 0;
    if (!u32(bits, what))
      return false;
    std::memcpy(&v, &bits, sizeof(v));
    return true;
  }
  /// Reads a length-prefixed string; the length must fit what remains.
  bool str(std::string &s, const char *what) {
    uint64_t size = 0;
    if (!u64(size, what))
      return false;
    if (size > remaining())
      return fail(std::string("length of ") + what + " (" +
                  std::to_string(size) + ") exceeds the " +
                  std::to_string(remaining()) + " bytes left");
    s.assign(cur, static_cast<size_t>(size));
    cur += size;
    return true;
  }
  /// Reads a list count; each element needs at least `minElementBytes`, so
  /// a count that cannot fit in what remains is rejected before any
  /// allocation.
  bool count(uint64_t &n, size_t minElementBytes, const char *what) {
    if (!u64(n, what))
      return false;
    if (minElementBytes && n > remaining() / minElementBytes)
      return fail(std::string("count of ") + what + " (" + std::to_string(n) +
                  ") cannot fit in the " + std::to_string(remaining()) +
                  " bytes left");
    return true;
  }
  /// Records `message` with the current offset; returns false.
  bool fail(const std::string &message) {
    if (error.empty())
      error = "at byte " + std::to_string(cur - begin) + ": " + message;
    return false;
  }

  /// The first error, empty if none.
  std::string error;

private:
  const char *begin;
  const char *cur;
  const char *end;
};

/// Encoded size of the smallest buffer (empty name, rank 0).
constexpr size_t kMinBufferBytes = 1 + 1 + 8 + 4 + 8 + 8;
/// Encoded size of the smallest step (a copy).
constexpr size_t kMinStepBytes = 1 + 4 + 4 + 8;

/// Identifies the storage a buffer lives in, for overlap checks: arena and
/// weights are one space each, every graph input and output its own (splats
/// of one value may share storage too).
inline bool sameStorageOverlap(const Buffer &x, const Buffer &y) {
  if (x.kind != y.kind || x.bytes == 0 || y.bytes == 0)
    return false;
  uint64_t xBegin = 0, yBegin = 0;
  if (x.kind == BufferKind::Arena || x.kind == BufferKind::Weight) {
    xBegin = x.offset;
    yBegin = y.offset;
  } else if (x.offset != y.offset) {
    return false;
  }
  // Both ranges were checked against their storage size, so no overflow.
  return xBegin < yBegin + y.bytes && yBegin < xBegin + x.bytes;
}

/// Checks that `elements` elements of `buf`'s dtype fit in `buf`.
inline bool matmulOperandFits(const Buffer &buf, int64_t outerBatch,
                              int64_t outerStride, int64_t batch,
                              int64_t stride, int64_t rows, int64_t cols) {
  uint64_t need = 0;
  if (!checkedMul(static_cast<uint64_t>(rows), static_cast<uint64_t>(cols),
                  need))
    return false;
  // The last matrix starts at (outerBatch - 1) * outerStride +
  // (batch - 1) * stride.
  for (auto [count, step] : {std::pair<int64_t, int64_t>{batch, stride},
                             std::pair<int64_t, int64_t>{outerBatch,
                                                         outerStride}}) {
    uint64_t tail = 0;
    if (count > 1 && step > 0 &&
        (!checkedMul(static_cast<uint64_t>(count - 1),
                     static_cast<uint64_t>(step), tail) ||
         !checkedAdd(need, tail, need)))
      return false;
  }
  uint64_t needBytes = 0;
  return checkedMul(need, dtypeSize(buf.dtype), needBytes) &&
         needBytes <= buf.bytes;
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// Checks the invariants the runtime relies on: ids and indices in range,
/// sizes consistent and inside their storage (with overflow-checked
/// arithmetic), graph inputs/outputs well formed, and every step's operands
/// large enough. Returns false with a message in `error` otherwise.
/// `streamedWeightBytes`, when given, is the size of weights that a writer
/// streams after the artifact's header instead of holding them in `a`.
inline bool validateArtifact(const Artifact &a, std::string &error,
                             std::optional<uint64_t> streamedWeightBytes =
                                 std::nullopt) {
  const uint64_t weightBytes = streamedWeightBytes.value_or(a.weightBytes());
  using detail::checkedAdd;
  using detail::checkedMul;
  auto fail = [&](const std::string &message) {
    error = "invalid artifact: " + message;
    return false;
  };
  auto bufName = [&](uint64_t id) {
    return "buffer " + std::to_string(id) + " ('" + a.buffers[id].name + "')";
  };
  const uint64_t numBuffers = a.buffers.size();

  // Graph inputs and outputs first: views are checked against them below.
  auto checkIo = [&](const std::vector<uint32_t> &ids, BufferKind kind,
                     const char *what) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] >= numBuffers)
        return fail(std::string(what) + " " + std::to_string(i) +
                    ": buffer id " + std::to_string(ids[i]) +
                    " out of range (" + std::to_string(numBuffers) +
                    " buffers)");
      const Buffer &b = a.buffers[ids[i]];
      if (b.kind != kind || b.offset != i)
        return fail(std::string(what) + " " + std::to_string(i) + ": " +
                    bufName(ids[i]) + " is not a view of " + what + " " +
                    std::to_string(i));
    }
    return true;
  };
  if (!checkIo(a.inputs, BufferKind::Input, "input") ||
      !checkIo(a.outputs, BufferKind::Output, "output"))
    return false;

  for (uint64_t id = 0; id < numBuffers; ++id) {
    const Buffer &b = a.buffers[id];
    if (b.kind > kLastBufferKind || b.dtype > kLastDType)
      return fail(bufName(id) + ": invalid kind or dtype");
    if (b.name.find('\0') != std::string::npos)
      return fail(bufName(id) + ": name contains a NUL byte");
    if (b.shape.size() > kMaxRank)
      return fail(bufName(id) + ": rank " + std::to_string(b.shape.size()) +
                  " exceeds " + std::to_string(kMaxRank));
    uint64_t elements = 1;
    for (int64_t dim : b.shape) {
      if (dim < 0)
        return fail(bufName(id) + ": negative dimension " +
                    std::to_string(dim));
      if (!checkedMul(elements, static_cast<uint64_t>(dim), elements))
        return fail(bufName(id) + ": element count overflows");
    }
    uint64_t bytes = 0;
    if (!checkedMul(elements, dtypeSize(b.dtype), bytes) || bytes != b.bytes)
      return fail(bufName(id) + ": size " + std::to_string(b.bytes) +
                  " does not match its shape and dtype (" + dtypeName(b.dtype) +
                  ")");
    uint64_t end = 0;
    switch (b.kind) {
    case BufferKind::Arena:
      if (!checkedAdd(b.offset, b.bytes, end) || end > a.arenaBytes)
        return fail(bufName(id) + ": [" + std::to_string(b.offset) + ", +" +
                    std::to_string(b.bytes) + ") exceeds the arena (" +
                    std::to_string(a.arenaBytes) + " bytes)");
      break;
    case BufferKind::Weight:
      if (!checkedAdd(b.offset, b.bytes, end) || end > weightBytes)
        return fail(bufName(id) + ": [" + std::to_string(b.offset) + ", +" +
                    std::to_string(b.bytes) + ") exceeds the weights (" +
                    std::to_string(weightBytes) + " bytes)");
      break;
    case BufferKind::Splat:
      if (dtypeSize(b.dtype) < 8 && b.offset >> (8 * dtypeSize(b.dtype)) != 0)
        return fail(bufName(id) + ": splat value " + std::to_string(b.offset) +
                    " is wider than its dtype (" + dtypeName(b.dtype) + ")");
      break;
    case BufferKind::Input:
    case BufferKind::Output: {
      bool isInput = b.kind == BufferKind::Input;
      const std::vector<uint32_t> &io = isInput ? a.inputs : a.outputs;
      const char *what = isInput ? "input" : "output";
      if (b.offset >= io.size())
        return fail(bufName(id) + ": " + what + " index " +
                    std::to_string(b.offset) + " out of range (" +
                    std::to_string(io.size()) + " " + what + "s)");
      const Buffer &canonical = a.buffers[io[b.offset]];
      if (b.bytes > canonical.bytes)
        return fail(bufName(id) + ": view of " + what + " " +
                    std::to_string(b.offset) + " is larger than it (" +
                    std::to_string(b.bytes) + " > " +
                    std::to_string(canonical.bytes) + " bytes)");
      break;
    }
    }
  }

  bool hasLaunch = false;
  for (size_t s = 0; s < a.steps.size(); ++s) {
    const Step &step = a.steps[s];
    std::string where = "step " + std::to_string(s) + ": ";
    auto checkId = [&](uint32_t id, const char *what) {
      if (id < numBuffers)
        return true;
      return fail(where + what + " buffer id " + std::to_string(id) +
                  " out of range (" + std::to_string(numBuffers) + " buffers)");
    };
    auto checkWritable = [&](uint32_t id, const char *what) {
      BufferKind kind = a.buffers[id].kind;
      if (kind == BufferKind::Arena || kind == BufferKind::Output)
        return true;
      return fail(where + what + " " + bufName(id) +
                  " is not writable (weights, splats and inputs are read-only)");
    };
    switch (step.kind) {
    case Step::Kind::Launch: {
      const LaunchStep &l = step.launch;
      hasLaunch = true;
      if (l.kernel >= a.kernelNames.size())
        return fail(where + "kernel index " + std::to_string(l.kernel) +
                    " out of range (" + std::to_string(a.kernelNames.size()) +
                    " kernels)");
      for (int d = 0; d < 3; ++d)
        if (l.grid[d] == 0 || l.block[d] == 0)
          return fail(where + "grid and block dimensions must be at least 1");
      for (uint32_t arg : l.args)
        if (!checkId(arg, "argument"))
          return false;
      break;
    }
    case Step::Kind::Matmul: {
      const MatmulStep &m = step.matmul;
      if (!isFloatDType(m.dtype))
        return fail(where +
                    "matmul dtype must be float32, float16, bfloat16 or "
                    "float64, got " +
                    dtypeName(m.dtype));
      if (m.batch < 1 || m.m < 1 || m.n < 1 || m.k < 1)
        return fail(where + "matmul extents must be at least 1 (batch " +
                    std::to_string(m.batch) + ", m " + std::to_string(m.m) +
                    ", n " + std::to_string(m.n) + ", k " +
                    std::to_string(m.k) + ")");
      if (m.strideA < 0 || m.strideB < 0 || m.strideC < 0 ||
          m.outerStrideA < 0 || m.outerStrideB < 0 || m.outerStrideC < 0)
        return fail(where + "matmul strides must not be negative");
      if (m.outerBatch < 1)
        return fail(where + "matmul outer batch must be at least 1");
      uint64_t mn = 0;
      if (!checkedMul(static_cast<uint64_t>(m.m), static_cast<uint64_t>(m.n),
                      mn) ||
          (m.batch > 1 && static_cast<uint64_t>(m.strideC) < mn))
        return fail(where + "matmul strideC " + std::to_string(m.strideC) +
                    " makes the batch outputs overlap");
      // One inner batch of C spans (batch - 1) * strideC + m * n elements.
      uint64_t innerSpan = 0;
      if (m.outerBatch > 1 &&
          (!checkedMul(static_cast<uint64_t>(m.batch - 1),
                       static_cast<uint64_t>(m.strideC), innerSpan) ||
           !checkedAdd(innerSpan, mn, innerSpan) ||
           static_cast<uint64_t>(m.outerStrideC) < innerSpan))
        return fail(where + "matmul outerStrideC " +
                    std::to_string(m.outerStrideC) +
                    " makes the batch outputs overlap");
      if (!checkId(m.a, "matmul a") || !checkId(m.b, "matmul b") ||
          !checkId(m.c, "matmul c") || !checkWritable(m.c, "matmul c"))
        return false;
      const Buffer &ba = a.buffers[m.a], &bb = a.buffers[m.b],
                   &bc = a.buffers[m.c];
      if (ba.dtype != m.dtype || bb.dtype != m.dtype || bc.dtype != m.dtype)
        return fail(where + "matmul operands must all be " +
                    dtypeName(m.dtype));
      if (!detail::matmulOperandFits(ba, m.outerBatch, m.outerStrideA,
                                     m.batch, m.strideA, m.m, m.k))
        return fail(where + "matmul a does not fit in " + bufName(m.a));
      if (!detail::matmulOperandFits(bb, m.outerBatch, m.outerStrideB,
                                     m.batch, m.strideB, m.k, m.n))
        return fail(where + "matmul b does not fit in " + bufName(m.b));
      if (!detail::matmulOperandFits(bc, m.outerBatch, m.outerStrideC,
                                     m.batch, m.strideC, m.m, m.n))
        return fail(where + "matmul c does not fit in " + bufName(m.c));
      if (detail::sameStorageOverlap(bc, ba) ||
          detail::sameStorageOverlap(bc, bb))
        return fail(where + "matmul output c overlaps an operand");
      break;
    }
    case Step::Kind::Copy: {
      const CopyStep &c = step.copy;
      if (!checkId(c.src, "copy source") ||
          !checkId(c.dst, "copy destination") ||
          !checkWritable(c.dst, "copy destination"))
        return false;
      const Buffer &src = a.buffers[c.src], &dst = a.buffers[c.dst];
      if (c.bytes > src.bytes || c.bytes > dst.bytes)
        return fail(where + "copy of " + std::to_string(c.bytes) +
                    " bytes exceeds " + bufName(c.src) + " (" +
                    std::to_string(src.bytes) + ") or " + bufName(c.dst) +
                    " (" + std::to_string(dst.bytes) + ")");
      if (c.bytes && detail::sameStorageOverlap(src, dst))
        return fail(where + "copy source and destination overlap");
      break;
    }
    default:
      return fail(where + "invalid step kind");
    }
  }
  if (hasLaunch && a.cubin.empty() && a.ptx.empty() && a.cudaSource.empty())
    return fail("launch steps but no cubin, PTX or CUDA source");
  for (size_t i = 0; i < a.kernelNames.size(); ++i)
    if (a.kernelNames[i].empty() ||
        a.kernelNames[i].find('\0') != std::string::npos)
      return fail("kernel name " + std::to_string(i) + " is empty or has NUL");
  return true;
}

//===----------------------------------------------------------------------===//
// Serialization
//===----------------------------------------------------------------------===//

/// Encodes `a` in the artifact format (see the file comment) up to and
/// including the length of the weights, `weightBytes`, which follow it: a
/// writer can stream the weights after this prefix.
inline std::string serializeArtifactPrefix(const Artifact &a,
                                           uint64_t weightBytes) {
  detail::ByteWriter w;
  w.raw(kArtifactMagic, sizeof(kArtifactMagic));
  w.u32(kArtifactFormatVersion);
  w.u32(a.abiVersion);
  w.str(a.kilnVersion);
  w.str(a.arch);
  w.str(a.modelHash);
  w.u64(a.kernelNames.size());
  for (const std::string &name : a.kernelNames)
    w.str(name);
  w.str(a.cubin);
  w.str(a.ptx);
  w.str(a.cudaSource);
  w.u64(a.arenaBytes);
  w.u64(a.buffers.size());
  for (const Buffer &b : a.buffers) {
    w.u8(static_cast<uint8_t>(b.kind));
    w.u8(static_cast<uint8_t>(b.dtype));
    w.str(b.name);
    w.u32(static_cast<uint32_t>(b.shape.size()));
    for (int64_t dim : b.shape)
      w.i64(dim);
    w.u64(b.offset);
    w.u64(b.bytes);
  }
  for (const std::vector<uint32_t> *ids : {&a.inputs, &a.outputs}) {
    w.u64(ids->size());
    for (uint32_t id : *ids)
      w.u32(id);
  }
  w.u64(a.steps.size());
  for (const Step &s : a.steps) {
    w.u8(static_cast<uint8_t>(s.kind));
    switch (s.kind) {
    case Step::Kind::Launch:
      w.u32(s.launch.kernel);
      for (uint32_t v : s.launch.grid)
        w.u32(v);
      for (uint32_t v : s.launch.block)
        w.u32(v);
      w.u32(s.launch.sharedBytes);
      w.u64(s.launch.args.size());
      for (uint32_t id : s.launch.args)
        w.u32(id);
      break;
    case Step::Kind::Matmul: {
      const MatmulStep &m = s.matmul;
      w.u8(static_cast<uint8_t>(m.dtype));
      w.u8(m.transA);
      w.u8(m.transB);
      for (int64_t v :
           {m.batch, m.m, m.n, m.k, m.strideA, m.strideB, m.strideC,
            m.outerBatch, m.outerStrideA, m.outerStrideB, m.outerStrideC})
        w.i64(v);
      w.u32(m.a);
      w.u32(m.b);
      w.u32(m.c);
      w.f32(m.alpha);
      w.f32(m.beta);
      break;
    }
    case Step::Kind::Copy:
      w.u32(s.copy.src);
      w.u32(s.copy.dst);
      w.u64(s.copy.bytes);
      break;
    }
  }
  w.u64(a.indexSites.size());
  for (const std::string &site : a.indexSites)
    w.str(site);
  w.str(a.weightsFile.name);
  w.u64(a.weightsFile.bytes);
  w.u64(a.weightsFile.checksum);
  w.u64(weightBytes);
  return std::move(w.out);
}

/// Encodes `a` into the payload format: the prefix, then the weights.
inline std::string serializeArtifact(const Artifact &a) {
  return serializeArtifactPrefix(a, a.weights.size()) + a.weights;
}

/// Decodes an artifact from [data, data + size) into `out` and validates it
/// with `validateArtifact`. Returns false with a message in `error` on any
/// malformed, truncated, oversized or inconsistent input; never reads outside
/// the input and never allocates more than about ten times `size`. On
/// failure `out` holds whatever was decoded so far and must not be used.
inline bool deserializeArtifact(const char *data, size_t size, Artifact &out,
                                std::string &error) {
  out = Artifact();
  detail::ByteReader r(data, size);
  auto fail = [&]() {
    error = "corrupt artifact: " + r.error;
    return false;
  };
  if (size < sizeof(kArtifactMagic) ||
      std::memcmp(data, kArtifactMagic, sizeof(kArtifactMagic)) != 0) {
    error = "corrupt artifact: bad magic (not a Kiln artifact)";
    return false;
  }
  uint64_t skipped = 0;
  r.get(skipped, 8, "magic");
  uint32_t formatVersion = 0;
  if (!r.u32(formatVersion, "format version"))
    return fail();
  if (formatVersion != kArtifactFormatVersion) {
    error = "unsupported artifact format version " +
            std::to_string(formatVersion) + " (this runtime reads version " +
            std::to_string(kArtifactFormatVersion) + ")";
    return false;
  }
  uint64_t n = 0;
  if (!r.u32(out.abiVersion, "ABI version") ||
      !r.str(out.kilnVersion, "Kiln version") || !r.str(out.arch, "arch") ||
      !r.str(out.modelHash, "model hash") || !r.count(n, 8, "kernel names"))
    return fail();
  out.kernelNames.resize(n);
  for (std::string &name : out.kernelNames)
    if (!r.str(name, "kernel name"))
      return fail();
  if (!r.str(out.cubin, "cubin") || !r.str(out.ptx, "PTX") ||
      !r.str(out.cudaSource, "CUDA source") ||
      !r.u64(out.arenaBytes, "arena size") ||
      !r.count(n, detail::kMinBufferBytes, "buffers"))
    return fail();
  out.buffers.resize(n);
  for (Buffer &b : out.buffers) {
    uint8_t kind = 0, dtype = 0;
    uint32_t rank = 0;
    if (!r.u8(kind, "buffer kind") || !r.u8(dtype, "buffer dtype"))
      return fail();
    if (kind > static_cast<uint8_t>(kLastBufferKind))
      return r.fail("invalid buffer kind " + std::to_string(kind)), fail();
    if (dtype > static_cast<uint8_t>(kLastDType))
      return r.fail("invalid dtype " + std::to_string(dtype)), fail();
    b.kind = static_cast<BufferKind>(kind);
    b.dtype = static_cast<DType>(dtype);
    if (!r.str(b.name, "buffer name") || !r.u32(rank, "buffer rank"))
      return fail();
    if (rank > kMaxRank)
      return r.fail("buffer rank " + std::to_string(rank) + " exceeds " +
                    std::to_string(kMaxRank)),
             fail();
    b.shape.resize(rank);
    for (int64_t &dim : b.shape)
      if (!r.i64(dim, "dimension"))
        return fail();
    if (!r.u64(b.offset, "buffer offset") || !r.u64(b.bytes, "buffer size"))
      return fail();
  }
  for (std::vector<uint32_t> *ids : {&out.inputs, &out.outputs}) {
    if (!r.count(n, 4, "graph inputs/outputs"))
      return fail();
    ids->resize(n);
    for (uint32_t &id : *ids)
      if (!r.u32(id, "graph input/output id"))
        return fail();
  }
  if (!r.count(n, detail::kMinStepBytes, "steps"))
    return fail();
  out.steps.resize(n);
  for (Step &s : out.steps) {
    uint8_t kind = 0;
    if (!r.u8(kind, "step kind"))
      return fail();
    if (kind > static_cast<uint8_t>(kLastStepKind))
      return r.fail("invalid step kind " + std::to_string(kind)), fail();
    s.kind = static_cast<Step::Kind>(kind);
    switch (s.kind) {
    case Step::Kind::Launch: {
      LaunchStep &l = s.launch;
      if (!r.u32(l.kernel, "kernel index"))
        return fail();
      for (uint32_t &v : l.grid)
        if (!r.u32(v, "grid"))
          return fail();
      for (uint32_t &v : l.block)
        if (!r.u32(v, "block"))
          return fail();
      if (!r.u32(l.sharedBytes, "shared bytes") ||
          !r.count(n, 4, "kernel arguments"))
        return fail();
      l.args.resize(n);
      for (uint32_t &id : l.args)
        if (!r.u32(id, "kernel argument"))
          return fail();
      break;
    }
    case Step::Kind::Matmul: {
      MatmulStep &m = s.matmul;
      uint8_t dtype = 0, transA = 0, transB = 0;
      if (!r.u8(dtype, "matmul dtype") || !r.u8(transA, "transA") ||
          !r.u8(transB, "transB"))
        return fail();
      if (dtype > static_cast<uint8_t>(kLastDType) || transA > 1 || transB > 1)
        return r.fail("invalid matmul dtype or transpose flag"), fail();
      m.dtype = static_cast<DType>(dtype);
      m.transA = transA;
      m.transB = transB;
      for (int64_t *v :
           {&m.batch, &m.m, &m.n, &m.k, &m.strideA, &m.strideB, &m.strideC,
            &m.outerBatch, &m.outerStrideA, &m.outerStrideB, &m.outerStrideC})
        if (!r.i64(*v, "matmul extent"))
          return fail();
      if (!r.u32(m.a, "matmul a") || !r.u32(m.b, "matmul b") ||
          !r.u32(m.c, "matmul c") || !r.f32(m.alpha, "alpha") ||
          !r.f32(m.beta, "beta"))
        return fail();
      break;
    }
    case Step::Kind::Copy:
      if (!r.u32(s.copy.src, "copy source") ||
          !r.u32(s.copy.dst, "copy destination") ||
          !r.u64(s.copy.bytes, "copy size"))
        return fail();
      break;
    }
  }
  if (!r.count(n, 8, "index sites"))
    return fail();
  out.indexSites.resize(n);
  for (std::string &site : out.indexSites)
    if (!r.str(site, "index site"))
      return fail();
  if (!r.str(out.weightsFile.name, "weights file") ||
      !r.u64(out.weightsFile.bytes, "weights file size") ||
      !r.u64(out.weightsFile.checksum, "weights file checksum") ||
      !r.str(out.weights, "weights"))
    return fail();
  if (!out.weightsFile.name.empty() &&
      (!out.weights.empty() ||
       out.weightsFile.name.find('/') != std::string::npos ||
       out.weightsFile.name == "." || out.weightsFile.name == "..")) {
    error = "corrupt artifact: weights file '" + out.weightsFile.name +
            "' is not a plain file name, or the weights are also embedded";
    return false;
  }
  if (r.remaining() != 0) {
    error = "corrupt artifact: " + std::to_string(r.remaining()) +
            " trailing bytes after the weights";
    return false;
  }
  return validateArtifact(out, error);
}

//===----------------------------------------------------------------------===//
// The .so container
//===----------------------------------------------------------------------===//

/// The error of a run whose kernels recorded index check `site` (1-based):
/// names the gather's ONNX node.
inline std::string indexErrorMessage(const Artifact &a, uint64_t site) {
  std::string where = site >= 1 && site <= a.indexSites.size()
                          ? a.indexSites[site - 1]
                          : "an unknown gather (site " + std::to_string(site) +
                                ")";
  return "index out of range at " + where +
         ": the run's outputs are not valid (an index input, such as a token "
         "id, outside its table)";
}

/// FNV-1a 64-bit hash of [data, data + size); the payload checksum. Pass the
/// previous result as `hash` to hash in pieces.
inline uint64_t artifactChecksum(const char *data, size_t size,
                                 uint64_t hash = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// The checksum of a weights file: FNV-1a over little-endian 64-bit words
/// (then the tail bytes), eight times faster than `artifactChecksum` on the
/// gigabytes a sidecar holds. Call with `hash` from the previous chunk to
/// hash in pieces whose sizes, all but the last, are multiples of 8.
inline uint64_t weightsChecksum(const char *data, size_t size,
                                uint64_t hash = 0xcbf29ce484222325ull) {
  size_t words = size / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, data + 8 * i, 8);
    hash ^= word;
    hash *= 0x100000001b3ull;
  }
  for (size_t i = words * 8; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// Encodes `t` as the `kArtifactTrailerSize` bytes that end an artifact.
inline std::string encodeArtifactTrailer(const ArtifactTrailer &t) {
  detail::ByteWriter w;
  w.u64(t.payloadOffset);
  w.u64(t.payloadSize);
  w.u64(t.checksum);
  w.raw(t.magic, sizeof(t.magic));
  return std::move(w.out);
}

/// Returns `templateSo` followed by zero padding to `kArtifactPayloadAlign`,
/// `payload` (a `serializeArtifact` result) and the trailer that locates it.
inline std::string appendArtifactPayload(const std::string &templateSo,
                                         const std::string &payload) {
  std::string out = templateSo;
  size_t pad = (kArtifactPayloadAlign - out.size() % kArtifactPayloadAlign) %
               kArtifactPayloadAlign;
  out.append(pad, '\0');
  ArtifactTrailer t;
  t.payloadOffset = out.size();
  t.payloadSize = payload.size();
  t.checksum = artifactChecksum(payload.data(), payload.size());
  std::memcpy(t.magic, kArtifactTrailerMagic, sizeof(t.magic));
  out.append(payload);
  out.append(encodeArtifactTrailer(t));
  return out;
}

/// Finds the payload in a whole artifact file [file, file + fileSize): decodes
/// the trailer, checks its magic, that the payload ends exactly where the
/// trailer begins, and the checksum. On success `payload` / `payloadSize`
/// point into `file`.
inline bool findArtifactPayload(const char *file, size_t fileSize,
                                const char *&payload, size_t &payloadSize,
                                std::string &error) {
  if (fileSize < kArtifactTrailerSize) {
    error = "corrupt artifact: file too small for a Kiln trailer";
    return false;
  }
  const char *tail = file + fileSize - kArtifactTrailerSize;
  detail::ByteReader r(tail, kArtifactTrailerSize);
  ArtifactTrailer t;
  r.u64(t.payloadOffset, "payload offset");
  r.u64(t.payloadSize, "payload size");
  r.u64(t.checksum, "checksum");
  std::memcpy(t.magic, tail + 24, sizeof(t.magic));
  if (std::memcmp(t.magic, kArtifactTrailerMagic, sizeof(t.magic)) != 0) {
    error = "corrupt artifact: no Kiln trailer at the end of the file (a bare "
            "template, a stripped file, or not a Kiln artifact)";
    return false;
  }
  uint64_t end = 0;
  if (!detail::checkedAdd(t.payloadOffset, t.payloadSize, end) ||
      end != fileSize - kArtifactTrailerSize) {
    error = "corrupt artifact: trailer payload range [" +
            std::to_string(t.payloadOffset) + ", +" +
            std::to_string(t.payloadSize) + ") does not end at the trailer";
    return false;
  }
  payload = file + t.payloadOffset;
  payloadSize = static_cast<size_t>(t.payloadSize);
  uint64_t actual = artifactChecksum(payload, payloadSize);
  if (actual != t.checksum) {
    error = "corrupt artifact: payload checksum mismatch (file damaged or "
            "truncated)";
    return false;
  }
  return true;
}

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_ARTIFACTFORMAT_H
