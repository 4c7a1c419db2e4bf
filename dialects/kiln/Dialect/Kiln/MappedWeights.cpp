//===- MappedWeights.cpp - weights that live in mapped files --------------===//

#include "kiln/Dialect/Kiln/MappedWeights.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace kiln {

namespace {
/// The registered mappings, begin -> end.
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, uintptr_t> endOf;
};
} // namespace

static Registry &registry() {
  static Registry r;
  return r;
}

void registerMappedWeights(const char *begin, size_t size) {
  auto start = reinterpret_cast<uintptr_t>(begin);
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().endOf[start] = start + size;
}

void unregisterMappedWeights(const char *begin) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().endOf.erase(reinterpret_cast<uintptr_t>(begin));
}

void releaseMappedWeightPages(llvm::ArrayRef<char> bytes) {
  if (bytes.empty())
    return;
  auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  uintptr_t end = begin + bytes.size();
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto &ranges = registry().endOf;
  auto it = ranges.upper_bound(begin);
  if (it == ranges.begin())
    return;
  --it;
  if (end > it->second)
    return;
  // Whole pages only: a page shared with bytes not yet read is read back
  // from the file if they are.
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t first = (begin + page - 1) / page * page;
  uintptr_t last = end / page * page;
  if (first < last)
    ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

/// Blobs below this size stay on the heap: a file each would cost more than
/// it saves.
constexpr size_t kSpillThreshold = size_t(1) << 20;
/// Bytes converted at a time on the way to a spill file.
constexpr size_t kSpillChunk = size_t(4) << 20;

/// The blob on the heap, filled in one piece.
static mlir::AsmResourceBlob heapBlob(
    size_t size,
    llvm::function_ref<void(char *chunk, size_t offset, size_t bytes)> fill) {
  mlir::AsmResourceBlob blob =
      mlir::HeapAsmResourceBlob::allocate(size, alignof(uint64_t));
  fill(blob.getMutableData().data(), 0, size);
  return blob;
}

mlir::AsmResourceBlob spilledBlob(
    size_t size,
    llvm::function_ref<void(char *chunk, size_t offset, size_t bytes)> fill) {
  if (size < kSpillThreshold)
    return heapBlob(size, fill);
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-weights-XXXXXX";
  int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    return heapBlob(size, fill);
  // Unlinked at once: the file lives as long as its mapping, and nothing is
  // left behind however the compiler ends.
  ::unlink(pattern.c_str());
  std::vector<char> chunk(std::min(size, kSpillChunk));
  bool written = true;
  for (size_t offset = 0; offset < size && written; offset += chunk.size()) {
    size_t bytes = std::min(chunk.size(), size - offset);
    fill(chunk.data(), offset, bytes);
    for (size_t done = 0; done < bytes && written;) {
      ssize_t n = ::write(fd, chunk.data() + done, bytes - done);
      written = n > 0;
      done += written ? size_t(n) : 0;
    }
  }
  void *data = written ? ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0)
                       : MAP_FAILED;
  ::close(fd);
  if (data == MAP_FAILED)
    return heapBlob(size, fill);
  registerMappedWeights(static_cast<const char *>(data), size);
  // The converted pages were written through the page cache, not this
  // process; reading them back maps them in, and readers drop them.
  return mlir::AsmResourceBlob(
      llvm::ArrayRef<char>(static_cast<const char *>(data), size),
      alignof(uint64_t),
      [](void *data, size_t size, size_t) {
        unregisterMappedWeights(static_cast<const char *>(data));
        ::munmap(data, size);
      },
      /*dataIsMutable=*/false);
}

mlir::ElementsAttr filledConstantValue(
    mlir::RankedTensorType type, size_t size,
    llvm::function_ref<void(char *chunk, size_t offset, size_t bytes)> fill,
    llvm::StringRef name) {
  if (type.getNumElements() <= 16) {
    std::vector<char> bytes(size);
    fill(bytes.data(), 0, size);
    return llvm::cast<mlir::ElementsAttr>(
        mlir::DenseElementsAttr::getFromRawBuffer(type, bytes));
  }
  return llvm::cast<mlir::ElementsAttr>(mlir::DenseResourceElementsAttr::get(
      type, name, spilledBlob(size, fill)));
}

llvm::ArrayRef<char> storedBytesInPlace(mlir::ElementsAttr value) {
  auto resource = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(value);
  if (!resource)
    return {};
  auto type = llvm::cast<mlir::ShapedType>(resource.getType());
  mlir::Type element = type.getElementType();
  if (!element.isIntOrFloat() || element.isInteger(1))
    return {};
  // One storage width each: 4-bit integers take a byte.
  int64_t width = (element.getIntOrFloatBitWidth() + 7) / 8;
  mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob || static_cast<int64_t>(blob->getData().size()) !=
                   type.getNumElements() * width)
    return {};
  return blob->getData();
}

} // namespace kiln
