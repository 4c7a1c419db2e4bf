//===- EmitPlan.cpp - planned kiln IR to CUDA C++ and a runtime Plan ------===//
//
// The entry point of the CUDA target's plan emission, and PlanBuilder's walk
// of the function: the arena, the inputs and the prelude, then each top-level
// op dispatched to the step it becomes (PlanBuffers.cpp, PlanLaunches.cpp,
// PlanMatmuls.cpp); the model hash and the weights image.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CUDA/EmitPlan.h"

#include "IndexSites.h"
#include "KernelEmitter.h"
#include "PlanBuilder.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/xxhash.h"

#include <cstring>

using namespace mlir;

namespace kiln {

namespace detail {

/// The ONNX node names in the locations of `op` and the ops nested in it
/// (the importer names each op after its node), first appearance first.
static std::vector<std::string> onnxNodesOf(Operation &op) {
  std::vector<std::string> names;
  llvm::StringSet<> seen;
  op.walk([&](Operation *inner) {
    for (StringRef name : onnxNodeNames(inner->getLoc()))
      if (seen.insert(name).second)
        names.push_back(name.str());
  });
  return names;
}

LogicalResult PlanBuilder::build() {
  Block &body = func.getBody().front();
  auto arenaBytes = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
  if (!arenaBytes)
    return func.emitError("memory is not planned (run kiln-plan-memory)");
  artifact.arenaBytes = arenaBytes.getInt();
  scratchOffset =
      (artifact.arenaBytes + kWeightAlign - 1) / kWeightAlign * kWeightAlign;
  if (failed(addDims()))
    return failure();
  // The gathers' index sites, as kiln-to-cuda numbered them.
  if (checkIndices) {
    auto sites = describeIndexSites(func);
    if (failed(sites))
      return failure();
    artifact.indexSites = std::move(*sites);
  }

  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto id =
        addBuffer(arg, rt::BufferKind::Input, i,
                  argName(i, func.getArgAttrOfType<StringAttr>(i, kNameAttr)));
    if (failed(id))
      return failure();
    artifact.inputs.push_back(*id);
  }

  llvm::raw_string_ostream source(artifact.cudaSource);
  bool needsHalfTypes = false;
  func.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      if (auto tensor = dyn_cast<RankedTensorType>(t))
        needsHalfTypes |=
            tensor.getElementType().isF16() || tensor.getElementType().isBF16();
  });
  for (Type t : func.getArgumentTypes())
    needsHalfTypes |= cast<RankedTensorType>(t).getElementType().isF16() ||
                      cast<RankedTensorType>(t).getElementType().isBF16();
  // 16-bit operands go to the tensor cores, fp32 ones as TF32 where
  // allowed, and 8-bit activations times 8-bit weights (the integer GEMM)
  // in any precision. fp32 GEMMs on the CUDA cores stage their tiles with
  // the same cp.async helpers.
  bool needsTensorCores = needsHalfTypes || allowTf32;
  func.walk([&](MatmulOp matmul) {
    needsTensorCores |= matmul.getType().getElementType().isF32() ||
                        (isa<KernelOp>(matmul->getParentOp()) &&
                         dequantizedActivations(matmul.getLhs()).has_value());
  });
  source << cudaPrelude(needsHalfTypes, needsTensorCores);
  preludeEnd = artifact.cudaSource.size();
  familySource = &source;
  for (Operation &op : body) {
    size_t stepsBefore = artifact.steps.size();
    size_t namesBefore = artifact.kernelNames.size();
    size_t configsBefore = configs ? configs->size() : 0;
    std::string unit;
    llvm::raw_string_ostream unitSource(unit);
    if (failed(addOp(op, unitSource)))
      return failure();
    shareKernels(unit, namesBefore, configsBefore, source);
    if (origins)
      for (size_t i = stepsBefore; i < artifact.steps.size(); ++i)
        origins->push_back(onnxNodesOf(op));
  }
  if (scratchBytes)
    artifact.arenaBytes = scratchOffset + scratchBytes;
  // The GEMM kernels' counters, sized for every step that runs them (a
  // kernel's text is emitted at its first step), before any kernel.
  std::string counters;
  for (const auto &[name, arrivals] : familyArrivals)
    counters += familyArrivalCounters(name, arrivals.tiles, arrivals.norm);
  artifact.cudaSource.insert(preludeEnd, counters);
  recordDimsRead();
  return success();
}

LogicalResult PlanBuilder::addOp(Operation &op, llvm::raw_ostream &source) {
  {
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      if (failed(addWeight(constant)))
        return failure();
    } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      if (failed(addView(reshape)))
        return failure();
    } else if (auto kernel = dyn_cast<KernelOp>(op)) {
      if (failed(kernel.getKind() == KernelKind::gemm
                     ? addGemm(kernel, source)
                     : addLaunch(kernel, source)))
        return failure();
    } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
      if (failed(addMatmul(matmul, source)))
        return failure();
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (failed(addOutputs(ret)))
        return failure();
    } else {
      return op.emitOpError("is not lowered by the CUDA target; expected it "
                            "inside a kiln.kernel (run kiln-fuse)");
    }
  }
  return success();
}

} // namespace detail

std::string modelHashOf(const rt::Artifact &artifact,
                        uint64_t weightsChecksum) {
  // The splats' values are in neither the source nor the weights; a model
  // that differs only in one of them is another model.
  std::string splats;
  for (const rt::Buffer &b : artifact.buffers)
    if (b.kind == rt::BufferKind::Splat)
      splats += std::to_string(b.offset) + ":" + std::to_string(b.bytes) + ";";
  // Ops of the same code share a kernel (PlanSharedKernels.cpp): the source
  // no longer says how often each runs, the kernels' entries do.
  std::string entries;
  for (const std::string &name : artifact.kernelNames)
    entries += name + ";";
  uint64_t hash = llvm::xxh3_64bits(artifact.cudaSource) ^
                  llvm::xxh3_64bits(splats) * 17 ^ weightsChecksum * 31 ^
                  llvm::xxh3_64bits(entries) * 61;
  return llvm::utohexstr(hash, /*LowerCase=*/true);
}

void WeightTable::materialize(std::string &out) const {
  out.assign(size, '\0');
  for (const Piece &piece : pieces)
    if (!piece.bytes.empty()) // An empty weight's bytes may be null.
      std::memcpy(out.data() + piece.offset, piece.bytes.data(),
                  piece.bytes.size());
}

LogicalResult emitPlan(func::FuncOp func, rt::Artifact &artifact,
                       WeightTable &weights, StepOrigins *origins,
                       const CudaEmitOptions &options, KernelConfigs *configs) {
  return detail::PlanBuilder(func, artifact, origins, weights, options, configs)
      .build();
}

} // namespace kiln
