//===- PlanDimsRead.cpp - the dims each launch depends on -----------------===//
//
// PlanBuilder's record, on each launch step, of the symbolic dims its launch
// depends on: those its kernel's code reads and those its grid follows.
// Every kernel takes every dim (PlanLaunches.cpp's convention), but a CUDA
// graph updated in place for new dims (runtime/lib/CudaGraphs.h) need only
// update the launches that depend on a dim that changed: a decoding step's
// new length reaches the mask's and the attention's kernels, not the GEMVs
// or the norms.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "KernelSizes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln::detail {

namespace {

bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_'; }

/// The body of kernel `name` in `source`: from the end of its parameter
/// list up to the next kernel's or device function's definition (the
/// helpers in between read no dim: dims reach code only as parameters, and
/// a kernel passes a device function those it reads). Empty when there is
/// no definition of that name.
StringRef kernelBody(StringRef source, StringRef name) {
  std::string call = (name + "(").str();
  for (size_t at = source.find(call); at != StringRef::npos;
       at = source.find(call, at + 1)) {
    if (at == 0 || isIdentifierChar(source[at - 1]))
      continue;
    // A definition: `__global__` starts the declaration it ends.
    size_t global = source.take_front(at).rfind("__global__");
    if (global == StringRef::npos ||
        source.slice(global, at).find_first_of(";{}") != StringRef::npos)
      continue;
    // Kernel parameter lists hold no parentheses.
    size_t params = source.find(')', at);
    if (params == StringRef::npos)
      return {};
    return source.slice(params, std::min(source.find("__global__", params),
                                         source.find("__device__", params)));
  }
  return {};
}

} // namespace

void PlanBuilder::recordDimsRead() {
  const std::vector<rt::DimRange> &dims = artifact.symbolic.dims;
  if (dims.size() > 64)
    return; // every launch keeps all bits: each is updated
  std::vector<std::string> parameters;
  for (const rt::DimRange &dim : dims)
    parameters.push_back(dimParameterName(dim.name));
  for (rt::Step &step : artifact.steps) {
    if (step.kind != rt::Step::Kind::Launch)
      continue;
    StringRef body = kernelBody(artifact.cudaSource,
                                artifact.kernelNames[step.launch.kernel]);
    if (body.empty())
      continue; // not found: all bits
    uint64_t read = 0;
    for (auto [d, parameter] : llvm::enumerate(parameters))
      if (namesIdentifier(body, parameter))
        read |= uint64_t(1) << d;
    step.launch.dimsRead = read;
  }
  for (const rt::SizeBinding &binding : artifact.symbolic.bindings)
    if (binding.field == rt::SizeField::LaunchGrid)
      for (const rt::SizeTerm &term : binding.formula.terms)
        for (uint32_t d : term.dims)
          artifact.steps[binding.target].launch.dimsRead |= uint64_t(1) << d;
}

} // namespace kiln::detail
