//===- Padding.cpp - Requests of different lengths in one run -------------===//

#include "Padding.h"

#include "kiln/runtime/ArtifactPlan.h"

#include <cstring>

using namespace kiln;
using namespace kiln::triton;

/// The axis of buffer `id` that is exactly dim `dim`, -1 when none; sets
/// `mixed` when an axis involves `dim` in a larger formula.
static int32_t axisOf(const rt::Artifact &plan, uint32_t id, int32_t dim,
                      bool &mixed) {
  int32_t axis = -1;
  for (uint32_t a = 0; a < plan.buffers[id].shape.size(); ++a) {
    const rt::SizeFormula *f = rt::dimFormula(plan, id, a);
    if (!f)
      continue;
    bool involves = false;
    for (const rt::SizeTerm &t : f->terms)
      for (uint32_t d : t.dims)
        involves = involves || int32_t(d) == dim;
    if (!involves)
      continue;
    bool exact = f->terms.size() == 1 && f->terms[0].coefficient == 1 &&
                 f->terms[0].dims.size() == 1;
    if (!exact || axis >= 0)
      mixed = true;
    axis = int32_t(a);
  }
  return axis;
}

std::string kiln::triton::planPadding(const rt::Artifact &plan,
                                      const ModelSignature &signature,
                                      const std::string &padDim,
                                      const std::string &padMask,
                                      Padding &out) {
  if (padDim.empty() != padMask.empty())
    return "parameters 'pad_dim' and 'pad_mask' come together";
  if (padDim.empty())
    return "";
  if (signature.maxBatchSize == 0)
    return "padding needs a model that batches: " + signature.whyNotBatched;
  int32_t dim = -1;
  for (size_t d = 0; d < plan.symbolic.dims.size(); ++d)
    if (plan.symbolic.dims[d].name == padDim)
      dim = int32_t(d);
  if (dim < 0)
    return "parameter 'pad_dim': the model has no dim '" + padDim + "'";
  if (dim == signature.batchDim)
    return "parameter 'pad_dim': '" + padDim + "' is the batch dim";
  Padding padding;
  padding.dim = dim;
  bool maskHasIt = false;
  auto place = [&](const std::vector<uint32_t> &ids, const char *kind,
                   std::vector<int32_t> &axes) -> std::string {
    for (uint32_t id : ids) {
      bool mixed = false;
      axes.push_back(axisOf(plan, id, dim, mixed));
      if (mixed)
        return std::string("parameter 'pad_dim': ") + kind + " '" +
               plan.buffers[id].name + "' has '" + padDim +
               "' in a dim that is not '" + padDim +
               "' alone, whose padded positions cannot be cut off";
      if (plan.buffers[id].name == padMask && axes.back() >= 0)
        maskHasIt = true;
    }
    return "";
  };
  if (std::string error = place(plan.inputs, "input", padding.inputAxis);
      !error.empty())
    return error;
  if (std::string error = place(plan.outputs, "output", padding.outputAxis);
      !error.empty())
    return error;
  if (!maskHasIt)
    return "parameter 'pad_mask': the model has no input '" + padMask +
           "' with dim '" + padDim + "'";
  out = std::move(padding);
  return "";
}

void kiln::triton::padRows(const char *src, char *dst, uint64_t outer,
                           uint64_t rows, uint64_t paddedRows,
                           uint64_t innerBytes) {
  for (uint64_t o = 0; o < outer; ++o) {
    char *to = dst + o * paddedRows * innerBytes;
    std::memcpy(to, src + o * rows * innerBytes, rows * innerBytes);
    std::memset(to + rows * innerBytes, 0, (paddedRows - rows) * innerBytes);
  }
}

void kiln::triton::unpadRows(const char *src, char *dst, uint64_t outer,
                             uint64_t rows, uint64_t paddedRows,
                             uint64_t innerBytes) {
  for (uint64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * rows * innerBytes, src + o * paddedRows * innerBytes,
                rows * innerBytes);
}
