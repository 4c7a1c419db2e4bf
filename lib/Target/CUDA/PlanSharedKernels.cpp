//===- PlanSharedKernels.cpp - one kernel for ops of the same code --------===//
//
// A model repeats its layers, and the ops of each layer emit the same CUDA
// code but for their kernels' names (kiln_reduction_4, kiln_reduction_31):
// the shapes, the fusion and the configuration are the same, and the
// buffers are the launch's arguments. NVRTC would compile each copy again
// (a 16-layer LLaMA's 311 kernels were 23 texts), and the cubin would carry
// each. So the kernels of each top-level op are emitted into a text of
// their own, and a text equal to an earlier op's with the names numbered
// in order of creation is dropped: the op's launches run the earlier op's
// kernels, whose names its entries in artifact.kernelNames take.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <numeric>

using namespace mlir;

namespace kiln::detail {

namespace {

bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_'; }

/// `text` with each of `names` replaced by its position in `names` where
/// it starts an identifier and is not followed by a letter or digit (a
/// helper's name may go on with '_': kiln_gemvq_7_mma_pair); the longest
/// name first, so that kiln_gemvq_7 is not taken for kiln_gemvq_7_mma's
/// start. Two texts of the same code under other names are then equal.
std::string numberNames(llvm::StringRef text,
                        llvm::ArrayRef<std::string> names) {
  std::vector<size_t> longestFirst(names.size());
  std::iota(longestFirst.begin(), longestFirst.end(), 0);
  llvm::stable_sort(longestFirst, [&](size_t a, size_t b) {
    return names[a].size() > names[b].size();
  });
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    bool replaced = false;
    if (i == 0 || !isIdentifierChar(text[i - 1])) {
      llvm::StringRef rest = text.drop_front(i);
      for (size_t n : longestFirst) {
        const std::string &name = names[n];
        if (!rest.starts_with(name) ||
            (rest.size() > name.size() && llvm::isAlnum(rest[name.size()])))
          continue;
        // Bytes no CUDA source holds, so no text can forge a number.
        out += "\x01" + std::to_string(n) + "\x02";
        i += name.size();
        replaced = true;
        break;
      }
    }
    if (!replaced)
      out += text[i++];
  }
  return out;
}

} // namespace

void PlanBuilder::shareKernels(llvm::StringRef unit, size_t namesBefore,
                               size_t configsBefore,
                               llvm::raw_ostream &source) {
  // The op's own kernels: the GEMM family's, shared by name, went to the
  // module's source (gemmKernelIndex).
  std::vector<std::string> created;
  for (size_t i = namesBefore; i < artifact.kernelNames.size(); ++i)
    if (!gemmKernels.contains(artifact.kernelNames[i]))
      created.push_back(artifact.kernelNames[i]);
  // Each defined in the text once (a name launched twice, or one whose
  // code went elsewhere, none today, would number wrongly): else the text
  // is kept as it is.
  llvm::StringSet<> distinct;
  for (const std::string &name : created)
    distinct.insert(name);
  bool defined = llvm::all_of(
      created, [&](const std::string &name) { return unit.contains(name); });
  if (created.empty() || distinct.size() != created.size() || !defined) {
    source << unit;
    return;
  }
  auto [it, first] =
      kernelTexts.try_emplace(numberNames(unit, created), created);
  if (first) {
    source << unit;
    return;
  }
  const std::vector<std::string> &earlier = it->second;
  llvm::StringMap<std::string> renamed;
  for (auto [name, shared] : llvm::zip_equal(created, earlier))
    renamed[name] = shared;
  for (size_t i = namesBefore; i < artifact.kernelNames.size(); ++i)
    if (auto found = renamed.find(artifact.kernelNames[i]);
        found != renamed.end())
      artifact.kernelNames[i] = found->second;
  if (configs)
    for (size_t i = configsBefore; i < configs->size(); ++i)
      if (auto found = renamed.find((*configs)[i].kernel);
          found != renamed.end())
        (*configs)[i].kernel = found->second;
}

} // namespace kiln::detail
