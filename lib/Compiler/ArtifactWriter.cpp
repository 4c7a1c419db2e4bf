//===- ArtifactWriter.cpp - the self-contained .so ------------------------===//
//
// The runtime's template library is embedded in the compiler at build time
// (ArtifactTemplate.S), so kilnc needs no C++ toolchain and no runtime files
// next to it to write an artifact.
//
// Weights are streamed from the constants' own bytes (for external data, the
// mapped model files) through a small buffer into the output, and the pages
// of mapped files are dropped behind the writer: no stage holds a second copy
// of gigabytes of weights. Weights above the embedding limit go to a sidecar
// file beside the `.so` (`model.so` + `model.kw`), which the runtime maps.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"

#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>

using namespace mlir;

extern "C" const char kiln_model_template_start[];
extern "C" const char kiln_model_template_end[];

namespace kiln {

/// Bytes the weights image is streamed in (a multiple of 8, as
/// rt::weightsChecksum needs for all but the last block).
static constexpr size_t kStreamBlock = size_t(4) << 20;

/// Calls `sink` with the weights image of `table` in consecutive blocks:
/// each piece at its offset, zeros between. Mapped external data is released
/// behind the reader.
static LogicalResult
forEachImageBlock(const WeightTable &table,
                  llvm::function_ref<LogicalResult(ArrayRef<char>)> sink) {
  std::vector<char> block;
  block.reserve(kStreamBlock);
  uint64_t position = 0;
  auto append = [&](const char *data, uint64_t size) -> LogicalResult {
    while (size > 0) {
      size_t take = std::min<uint64_t>(size, kStreamBlock - block.size());
      if (data)
        block.insert(block.end(), data, data + take);
      else
        block.resize(block.size() + take, '\0');
      if (data)
        data += take;
      size -= take;
      position += take;
      if (block.size() == kStreamBlock) {
        if (failed(sink(block)))
          return failure();
        block.clear();
      }
    }
    return success();
  };
  for (const WeightTable::Piece &piece : table.pieces) {
    if (failed(append(nullptr, piece.offset - position)))
      return failure();
    // A block at a time, so that even one weight of gigabytes (an
    // embedding table) is never resident whole.
    for (ArrayRef<char> rest = piece.bytes; !rest.empty();) {
      ArrayRef<char> chunk = rest.take_front(kStreamBlock);
      if (failed(append(chunk.data(), chunk.size())))
        return failure();
      releaseMappedWeightPages(chunk);
      rest = rest.drop_front(chunk.size());
    }
  }
  if (failed(append(nullptr, table.size - position)))
    return failure();
  return block.empty() ? success() : sink(block);
}

/// rt::weightsChecksum of the weights image.
static uint64_t imageChecksum(const WeightTable &table) {
  uint64_t hash = rt::weightsChecksum(nullptr, 0);
  (void)forEachImageBlock(table, [&](ArrayRef<char> block) {
    hash = rt::weightsChecksum(block.data(), block.size(), hash);
    return success();
  });
  return hash;
}

/// A file written through a temporary beside it and renamed into place by
/// `keep`; discarded otherwise, so no partial file is ever left.
class AtomicFile {
public:
  AtomicFile(Location loc, StringRef path) : loc(loc), path(path.str()) {}
  ~AtomicFile() {
    if (temp)
      llvm::consumeError(temp->discard());
  }

  LogicalResult open() {
    auto created = llvm::sys::fs::TempFile::create(path + "-%%%%%%.tmp");
    if (!created)
      return emitError(loc, "cannot write '")
             << path << "': " << llvm::toString(created.takeError());
    temp.emplace(std::move(*created));
    os.emplace(temp->FD, /*shouldClose=*/false);
    return success();
  }
  llvm::raw_fd_ostream &stream() { return *os; }

  LogicalResult keep() {
    os->flush();
    bool failedWrite = os->has_error();
    os->clear_error();
    os.reset();
    if (failedWrite)
      return emitError(loc, "cannot write '") << path << "'";
    llvm::Error err = temp->keep(path);
    temp.reset();
    if (err)
      return emitError(loc, "cannot write '")
             << path << "': " << llvm::toString(std::move(err));
    return success();
  }

private:
  Location loc;
  std::string path;
  std::optional<llvm::sys::fs::TempFile> temp;
  std::optional<llvm::raw_fd_ostream> os;
};

/// The sidecar of `soPath`: `model.so` -> `model.kw`.
static std::string sidecarPath(StringRef soPath) {
  SmallString<256> path(soPath);
  if (llvm::sys::path::extension(path) == ".so")
    llvm::sys::path::replace_extension(path, ".kw");
  else
    path += ".kw";
  return path.str().str();
}

LogicalResult writeArtifactLibrary(Location loc, const rt::Artifact &artifact,
                                   StringRef path, const WeightTable *weights,
                                   uint64_t maxEmbeddedWeightBytes) {
  rt::Artifact header = artifact;
  WeightTable materialized;
  if (!weights) {
    // An artifact whose weights are already in memory (the JIT path).
    materialized.size = artifact.weights.size();
    materialized.pieces.push_back(
        {0, ArrayRef<char>(artifact.weights.data(), artifact.weights.size())});
    weights = &materialized;
  }
  header.weights.clear();
  bool sidecar = weights->size > maxEmbeddedWeightBytes;
  std::string sidecarFile = sidecarPath(path);

  uint64_t checksum = 0;
  std::optional<AtomicFile> side;
  if (sidecar) {
    side.emplace(loc, sidecarFile);
    if (failed(side->open()))
      return failure();
    checksum = rt::weightsChecksum(nullptr, 0);
    if (failed(forEachImageBlock(*weights, [&](ArrayRef<char> block) {
          checksum = rt::weightsChecksum(block.data(), block.size(), checksum);
          side->stream().write(block.data(), block.size());
          return success(!side->stream().has_error());
        })))
      return emitError(loc, "cannot write '") << sidecarFile << "'";
    header.weightsFile.name = llvm::sys::path::filename(sidecarFile).str();
    header.weightsFile.bytes = weights->size;
    header.weightsFile.checksum = checksum;
  } else {
    checksum = imageChecksum(*weights);
  }
  header.modelHash = modelHashOf(artifact, checksum);

  std::string error;
  if (!rt::validateArtifact(header, error, weights->size))
    return emitError(loc, "internal error: invalid plan: ") << error;
  std::string prefix =
      rt::serializeArtifactPrefix(header, sidecar ? 0 : weights->size);

  AtomicFile so(loc, path);
  if (failed(so.open()))
    return failure();
  llvm::raw_fd_ostream &os = so.stream();
  size_t templateSize = kiln_model_template_end - kiln_model_template_start;
  os.write(kiln_model_template_start, templateSize);
  size_t pad = (rt::kArtifactPayloadAlign -
                templateSize % rt::kArtifactPayloadAlign) %
               rt::kArtifactPayloadAlign;
  os.write_zeros(pad);
  rt::ArtifactTrailer trailer;
  trailer.payloadOffset = templateSize + pad;
  trailer.payloadSize = prefix.size() + (sidecar ? 0 : weights->size);
  trailer.checksum = rt::artifactChecksum(prefix.data(), prefix.size());
  os << prefix;
  if (!sidecar &&
      failed(forEachImageBlock(*weights, [&](ArrayRef<char> block) {
        trailer.checksum =
            rt::artifactChecksum(block.data(), block.size(), trailer.checksum);
        os.write(block.data(), block.size());
        return success(!os.has_error());
      })))
    return emitError(loc, "cannot write '") << path << "'";
  std::memcpy(trailer.magic, rt::kArtifactTrailerMagic, sizeof(trailer.magic));
  os << rt::encodeArtifactTrailer(trailer);
  // The sidecar first: a .so never points at a sidecar that is not there.
  // If the .so cannot be kept, the sidecar goes too.
  if (side && failed(side->keep()))
    return failure();
  if (failed(so.keep())) {
    if (side)
      llvm::sys::fs::remove(sidecarFile);
    return failure();
  }
  return success();
}

} // namespace kiln
