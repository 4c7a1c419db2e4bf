//===- ExternalData.cpp - ONNX external tensor data -----------------------===//
//
// The checks follow the class of ONNX CVE-2022-25882: a model must not make
// the compiler read files outside its own folder, or past a file's end.
//
//===----------------------------------------------------------------------===//

#include "kiln/Importer/ONNX/ExternalData.h"

#include "kiln/Dialect/Kiln/MappedWeights.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>


using namespace mlir;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace kiln {

/// A mapping of a whole file, registered as mapped weights while it lives.
static std::shared_ptr<const fs::mapped_file_region>
registeredRegion(fs::file_t file, uint64_t size, std::error_code &ec) {
  auto *region = new fs::mapped_file_region(
      file, fs::mapped_file_region::readonly, size, /*offset=*/0, ec);
  if (ec) {
    delete region;
    return nullptr;
  }
  registerMappedWeights(region->const_data(), size);
  return std::shared_ptr<const fs::mapped_file_region>(
      region, [](const fs::mapped_file_region *r) {
        unregisterMappedWeights(r->const_data());
        delete r;
      });
}

ExternalData::ExternalData(StringRef modelDir)
    : modelDir(modelDir.empty() ? "." : modelDir.str()) {}

/// An error at `loc` that names the tensor.
static InFlightDiagnostic tensorError(Location loc, StringRef tensorName) {
  return emitError(loc, "tensor '") << tensorName << "' ";
}

/// Reads a non-negative decimal `offset` or `length` entry.
static FailureOr<uint64_t> parseSize(Location loc, StringRef tensorName,
                                     StringRef key, StringRef value) {
  uint64_t result;
  if (value.getAsInteger(10, result) ||
      result > static_cast<uint64_t>(INT64_MAX)) {
    tensorError(loc, tensorName)
        << "has an invalid external data " << key << " '" << value << "'";
    return failure();
  }
  return result;
}

FailureOr<std::shared_ptr<const fs::mapped_file_region>>
ExternalData::map(Location loc, StringRef tensorName, StringRef location,
                  uint64_t &fileSize) {
  auto cached = files.find(location);
  if (cached != files.end()) {
    fileSize = cached->second.size;
    return cached->second.region;
  }
  auto refuse = [&](StringRef why) {
    tensorError(loc, tensorName)
        << "has external data at '" << location << "', " << why;
    return failure();
  };
  // The location is checked as written before anything touches the disk:
  // relative, no '..', no embedded NUL that would cut the path short.
  if (location.empty())
    return refuse("an empty location");
  if (location.contains('\0'))
    return refuse("a location with a NUL character");
  if (path::is_absolute(location) || location.starts_with("/") ||
      location.starts_with("\\"))
    return refuse("an absolute path (locations are relative to the model's "
                  "folder)");
  for (StringRef part : llvm::make_range(path::begin(location),
                                         path::end(location)))
    if (part == "..")
      return refuse("outside the model's folder ('..')");

  // No component may be a symlink: it could lead anywhere.
  SmallString<256> full(modelDir);
  for (StringRef part : llvm::make_range(path::begin(location),
                                         path::end(location))) {
    if (part == ".")
      continue;
    path::append(full, part);
    fs::file_status status;
    if (std::error_code ec = fs::status(full, status, /*Follow=*/false))
      return refuse("which cannot be opened: " + ec.message());
    if (status.type() == fs::file_type::symlink_file)
      return refuse("through a symlink ('" + full.str().str() +
                    "'), which is not followed");
  }
  if (!fs::is_regular_file(full))
    return refuse("which is not a regular file");
  // Belt and braces: the real path must still be inside the model's folder.
  if (realModelDir.empty()) {
    SmallString<256> real;
    if (fs::real_path(modelDir, real))
      return refuse("and the model's folder cannot be resolved");
    realModelDir = real.str().str();
  }
  SmallString<256> realFile;
  if (std::error_code ec = fs::real_path(full, realFile))
    return refuse("which cannot be resolved: " + ec.message());
  if (!StringRef(realFile).starts_with(realModelDir + "/"))
    return refuse("outside the model's folder");

  llvm::Expected<fs::file_t> opened = fs::openNativeFileForRead(full);
  if (!opened)
    return refuse("which cannot be opened: " +
                  llvm::toString(opened.takeError()));
  fs::file_t file = *opened;
  fs::file_status status;
  std::error_code ec = fs::status(file, status);
  MappedFile mapped;
  mapped.size = ec ? 0 : status.getSize();
  if (!ec && mapped.size > 0)
    mapped.region = registeredRegion(file, mapped.size, ec);
  fs::closeFile(file);
  if (ec)
    return refuse("which cannot be mapped: " + ec.message());
  fileSize = mapped.size;
  auto region = mapped.region;
  files[location] = std::move(mapped);
  return region;
}

FailureOr<ExternalBytes> ExternalData::read(Location loc,
                                            const onnx::TensorProto &tensor,
                                            int64_t expectedBytes) {
  StringRef name = tensor.name();
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      FailureOr<uint64_t> value =
          parseSize(loc, name, entry.key(), entry.value());
      if (failed(value))
        return failure();
      (entry.key() == "offset" ? offset : length.emplace()) = *value;
    }
    // `checksum` and unknown keys are not needed to read the data.
  }
  if (location.empty())
    return tensorError(loc, name)
           << "uses external data but names no location";

  uint64_t fileSize = 0;
  auto region = map(loc, name, location, fileSize);
  if (failed(region))
    return failure();
  if (offset > fileSize)
    return tensorError(loc, name)
           << "has external data offset " << offset << " past the end of '"
           << location << "' (" << fileSize << " bytes)";
  uint64_t size = length ? *length : fileSize - offset;
  std::optional<uint64_t> end = llvm::checkedAddUnsigned(offset, size);
  if (!end || *end > fileSize)
    return tensorError(loc, name)
           << "has external data of " << size << " bytes at offset " << offset
           << ", past the end of '" << location << "' (" << fileSize
           << " bytes)";
  if (size != static_cast<uint64_t>(expectedBytes))
    return tensorError(loc, name)
           << "has " << size << " bytes of external data, but its shape and "
           << "type need " << expectedBytes;
  ExternalBytes result;
  if (size > 0)
    result.bytes = ArrayRef<char>((*region)->const_data() + offset, size);
  result.keepAlive = *region;
  return result;
}

} // namespace kiln
