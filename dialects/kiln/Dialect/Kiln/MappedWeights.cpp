//===- MappedWeights.cpp - weights that live in mapped files --------------===//

#include "kiln/Dialect/Kiln/MappedWeights.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

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

llvm::ArrayRef<char> storedBytesInPlace(mlir::ElementsAttr value) {
  auto resource = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(value);
  if (!resource)
    return {};
  auto type = llvm::cast<mlir::ShapedType>(resource.getType());
  mlir::Type element = type.getElementType();
  if (!element.isIntOrFloat() || element.isInteger(1))
    return {};
  mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob || static_cast<int64_t>(blob->getData().size()) !=
                   type.getNumElements() *
                       static_cast<int64_t>(element.getIntOrFloatBitWidth() /
                                            8))
    return {};
  return blob->getData();
}

} // namespace kiln
