//===- AttentionRowSources.cpp - where attention operands' rows come from -===//
//
// The tensor-core attention kernel reads a query, key or value row from a
// kernel input directly (cp.async, 16 bytes a thread) where its features
// are contiguous there (StridedView.h), and any other element (the mask,
// an operand with in-kernel producers) through those producers (getAt).
//
//===----------------------------------------------------------------------===//

#include "AttentionTensorCoreParts.h"
#include "StridedView.h"

#include "llvm/ADT/StringExtras.h"

#include <cstdint>
#include <cstdlib>

using namespace mlir;

namespace kiln {

namespace {
/// The keys a tile of the mma.sync forms takes at most, for the bound on a
/// tile's row offsets (32-bit where they fit).
constexpr int64_t kKeysPerTile = 64;
} // namespace

std::optional<RowSource> rowSourceOf(Value operand, const std::string &head,
                                     int64_t perChunk) {
  std::optional<StridedView> view = stridedViewOf(operand);
  if (!view || view->shape.size() < 2 || view->strides.back() != 1)
    return std::nullopt;
  RowSource source;
  source.pointer = "in" + std::to_string(view->input);
  source.aligned = "((unsigned long long)" + source.pointer + " & 15) == 0";
  // Each offset in elements: 16-byte aligned at multiples of perChunk.
  // Symbolic ones are checked at run time.
  auto requireAligned = [&](const Size &elements) {
    if (auto constant = elements.getConstant())
      return *constant % perChunk == 0;
    source.aligned += " && (" + elements.str() + " & " +
                      std::to_string(perChunk - 1) + "LL) == 0";
    return true;
  };
  size_t rank = view->shape.size();
  Size rowStride = view->strides[rank - 2];
  if (!requireAligned(view->offset) || !requireAligned(rowStride))
    return std::nullopt;
  source.rowStride = rowStride.str();
  std::optional<int64_t> constant = rowStride.getConstant();
  source.tileRowStride =
      constant && std::abs(*constant) * kKeysPerTile * 2 < INT32_MAX
          ? rowStride.str32()
          : source.rowStride;
  // The head dims (all but the last two), merged where one is contiguous
  // in the next: (size, stride), outermost first.
  SmallVector<std::pair<Size, Size>> heads;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (view->shape[d] == 1)
      continue;
    if (!requireAligned(view->strides[d]))
      return std::nullopt;
    if (!heads.empty() &&
        heads.back().second == view->shape[d] * view->strides[d])
      heads.back() = {heads.back().first * view->shape[d], view->strides[d]};
    else
      heads.push_back({view->shape[d], view->strides[d]});
  }
  SmallVector<std::string> terms;
  if (view->offset != 0)
    terms.push_back(view->offset.str());
  Size inner = 1;
  for (size_t k = heads.size(); k-- > 0;) {
    std::string coordinate =
        inner == 1 ? head : "(" + head + " / " + inner.str() + ")";
    if (k > 0)
      coordinate = "(" + coordinate + " % " + heads[k].first.str() + ")";
    terms.push_back(coordinate + " * " + heads[k].second.str());
    inner *= heads[k].first;
  }
  source.base = terms.empty() ? "0" : llvm::join(terms, " + ");
  return source;
}

FailureOr<std::string>
TensorCoreAttentionEmitter::load(Value operand, const std::string &index,
                                 const std::string &indent) {
  values.reset();
  return values.getAt(operand, index, indent);
}

} // namespace kiln
