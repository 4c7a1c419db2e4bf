//===- ArtifactPlan.cpp - The compiled form of a Kiln model ---------------===//

#include "kiln/runtime/ArtifactPlan.h"

using namespace kiln::rt;

const char *kiln::rt::bufferKindName(BufferKind kind) {
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

std::string kiln::rt::indexErrorMessage(const Artifact &a, uint64_t site) {
  std::string where = site >= 1 && site <= a.indexSites.size()
                          ? a.indexSites[site - 1]
                          : "an unknown gather (site " + std::to_string(site) +
                                ")";
  return "index out of range at " + where +
         ": the run's outputs are not valid (an index or length input, such as "
         "a token "
         "id or an attention mask, outside its table or cache)";
}
