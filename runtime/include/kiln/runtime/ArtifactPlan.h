//===- ArtifactPlan.h - The compiled form of a Kiln model -------*- C++ -*-===//
//
// The Plan of a compiled model: its buffers (typed views of the arena, the
// weights, the graph inputs and outputs, or splat constants), its steps
// (ArtifactSteps.h), kernels and weights. The compiler builds an `Artifact`;
// ArtifactFormat.h encodes it and the runtime runs it. Nothing here depends
// on MLIR, LLVM or CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACTPLAN_H
#define KILN_RUNTIME_ARTIFACTPLAN_H

#include "kiln/kiln_model.h"
#include "kiln/runtime/ArtifactDims.h"
#include "kiln/runtime/ArtifactSteps.h"
#include "kiln/runtime/DType.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

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
const char *bufferKindName(BufferKind kind);

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

/// A graph output that is stored in a graph input's storage: a KV cache
/// appended in place (kilnc --kv-cache-in-place). The input is the cache at
/// its full length along `axis`, its valid rows first; the plan writes only
/// the new rows, so the output holds the input's rows plus those. When the
/// caller passes one pointer for both, nothing else is copied; otherwise
/// the run first copies the input to the output.
struct OutputAlias {
  /// Index of the graph output.
  uint32_t output = 0;
  /// Index of the graph input whose storage it shares.
  uint32_t input = 0;
  /// The dim along which rows are appended.
  uint32_t axis = 0;
};

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
  /// The named dims and the sizes that follow from them; empty for a static
  /// model. The buffers and steps above are the plan at the top of the
  /// dims' ranges (ArtifactDims.h).
  SymbolicPlan symbolic;
  /// Outputs stored in an input's storage, in output order.
  std::vector<OutputAlias> aliases;
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
  /// Not serialized: the size of the embedded weights once releaseWeights
  /// has dropped them.
  uint64_t releasedWeightBytes = 0;

  /// The size of the weights the `Weight` buffers address, also after
  /// releaseWeights: the plan of each new set of dims is checked against it.
  uint64_t weightBytes() const {
    return weightsFile.name.empty() ? weights.size() + releasedWeightBytes
                                    : weightsFile.bytes;
  }
  /// The weight bytes: embedded, or the mapped sidecar (null before the
  /// loader has mapped it, and after releaseWeights).
  const char *weightData() const {
    if (!weightsFile.name.empty())
      return mappedWeights;
    return releasedWeightBytes ? nullptr : weights.data();
  }
  /// Drops the host copy of the weights (after an upload to the GPU).
  void releaseWeights() {
    releasedWeightBytes += weights.size();
    std::string().swap(weights);
    mappedWeights = nullptr;
    mappedWeightsOwner.reset();
  }
};

/// The error of a run whose kernels recorded index check `site` (1-based):
/// names the gather's ONNX node.
std::string indexErrorMessage(const Artifact &a, uint64_t site);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_ARTIFACTPLAN_H
