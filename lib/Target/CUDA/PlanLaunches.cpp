//===- PlanLaunches.cpp - the plan's kernel launches ----------------------===//
//
// PlanBuilder's launch steps: each kiln.kernel emitted as CUDA and launched
// over its buffers, with its symbolic grid; an attention kernel whose keys
// split is launched as its split kernel over scratch memory (whose last
// blocks merge the splits into the result), with the whole kernel beside it
// where the query length decides at run time.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "KernelEmitter.h"

using namespace mlir;

namespace kiln::detail {

LogicalResult PlanBuilder::addLaunch(KernelOp kernel,
                                     llvm::raw_ostream &source) {
  std::string name = "kiln_" +
                     std::string(stringifyKernelKind(kernel.getKind())) + "_" +
                     std::to_string(artifact.kernelNames.size());
  auto split = emitSplitAttention(kernel, name, source, options);
  if (split && failed(*split))
    return failure();
  // The whole kernel, unless the keys are always split.
  std::optional<LaunchGeometry> whole;
  if (!split || (*split)->queries) {
    auto geometry = emitKernel(kernel, name, source, options);
    if (failed(geometry))
      return failure();
    whole = *geometry;
  }
  if (failed(addResults(kernel)) || failed(addAlias(kernel)))
    return failure();
  SmallVector<uint32_t> args;
  for (Value input : kernel.getInputs())
    args.push_back(bufferOf.at(input));
  uint32_t result = bufferOf.at(kernel.getResult(0));
  if (whole) {
    SmallVector<uint32_t> withResults(args);
    for (Value v : kernel.getResults())
      withResults.push_back(bufferOf.at(v));
    if (whole->splitPartials)
      withResults.push_back(addScratch(whole->splitPartials, rt::DType::I64));
    pushLaunch(kernel, name, *whole, withResults);
  }
  if (!split)
    return success();
  // The split's steps, and which form runs at the run's query length:
  // the split while it is at most mostQueries (clamp(most + 1 - queries,
  // 0, 1)), the whole kernel past it.
  const SplitAttention &keys = **split;
  args.push_back(addScratch(keys.scratchElements));
  args.push_back(result);
  pushLaunch(kernel, keys.splitName, keys.split, args);
  if (keys.queries) {
    DimExpr most = DimExpr::constant(keys.mostQueries);
    DimExpr past = *DimExpr::sub(*keys.queries, most);
    DimExpr within =
        *DimExpr::sub(DimExpr::constant(keys.mostQueries + 1), *keys.queries);
    size_t last = artifact.steps.size() - 1;
    guardStep(last - 1, past);
    guardStep(last, within);
  }
  return success();
}

void PlanBuilder::guardStep(size_t step, const DimExpr &condition) {
  rt::SizeBinding binding;
  binding.field = rt::SizeField::StepRuns;
  binding.target = step;
  binding.formula = formulaOf(condition);
  binding.lowest = 0;
  binding.highest = 1;
  artifact.symbolic.bindings.push_back(std::move(binding));
}

void PlanBuilder::pushLaunch(KernelOp kernel, const std::string &name,
                             const LaunchGeometry &geometry,
                             ArrayRef<uint32_t> args) {
  rt::Step step;
  step.kind = rt::Step::Kind::Launch;
  step.launch.kernel = artifact.kernelNames.size();
  for (int i = 0; i < 3; ++i) {
    step.launch.grid[i] = geometry.grid[i];
    step.launch.block[i] = geometry.block[i];
  }
  step.launch.sharedBytes = geometry.sharedBytes;
  step.launch.args.assign(args.begin(), args.end());
  if (configs && geometry.attention)
    configs->push_back({name, kernel, *geometry.attention});
  artifact.kernelNames.push_back(name);
  artifact.steps.push_back(std::move(step));
  for (auto [axis, grid] : llvm::enumerate(geometry.symbolicGrid)) {
    if (!grid)
      continue;
    rt::SizeBinding binding;
    binding.field = rt::SizeField::LaunchGrid;
    binding.target = artifact.steps.size() - 1;
    binding.axis = axis;
    binding.formula = formulaOf(grid->elements);
    binding.divisor = grid->perBlock;
    binding.lowest = 1;
    binding.highest = grid->highest;
    artifact.symbolic.bindings.push_back(std::move(binding));
  }
}

} // namespace kiln::detail
