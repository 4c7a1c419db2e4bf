//===- KilnToCuda.cpp - the compiler/runtime boundary as a pass -----------===//
//
// A pass around emitPlan, so that the boundary DESIGN.md draws is one step of
// a pass manager and testable with kiln-opt like every other stage.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CUDA/Passes.h"

#include "IndexSites.h"

#include "kiln/Target/CUDA/PlanText.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNTOCUDAPASS
#include "kiln/Target/CUDA/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct KilnToCudaPass
    : public kiln::impl::KilnToCudaPassBase<KilnToCudaPass> {
  using Base::Base;
  KilnToCudaPass(KilnToCudaPassOptions options, CudaLowering lowering)
      : Base(std::move(options)), lowering(lowering) {}

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto funcs = module.getOps<func::FuncOp>();
    if (std::distance(funcs.begin(), funcs.end()) != 1) {
      module.emitError("expected exactly one function");
      return signalPassFailure();
    }
    func::FuncOp func = *funcs.begin();
    CudaEmitOptions options = emitOptions();
    if (std::string error = checkAttentionOverrides(options.attention);
        !error.empty()) {
      module.emitError("kiln-to-cuda: ") << error;
      return signalPassFailure();
    }
    // Emission reads the IR and changes nothing: what it reads beyond the
    // planned IR (the gathers' index sites) is set here first.
    if (options.checkIndices)
      numberIndexSites(func);
    if (lowering.artifact) {
      if (failed(emitPlan(func, *lowering.artifact, *lowering.weights,
                          lowering.origins, options, lowering.configs)))
        return signalPassFailure();
      if (lowering.configs)
        markConfigs(*lowering.configs);
      return;
    }
    // kiln-opt: the result goes into the module as text.
    rt::Artifact artifact;
    WeightTable weights;
    KernelConfigs configs;
    if (failed(emitPlan(func, artifact, weights, nullptr, options, &configs)))
      return signalPassFailure();
    markConfigs(configs);
    std::string plan;
    llvm::raw_string_ostream os(plan);
    printPlan(artifact, weights.size, os, &configs);
    Builder b(module.getContext());
    module->setAttr(kCudaSourceAttr, b.getStringAttr(artifact.cudaSource));
    module->setAttr(kPlanAttr, b.getStringAttr(plan));
  }

  /// Records on each configured kernel the configuration it was emitted
  /// with, so that the IR says what the plan and the report say.
  /// A kernel launched twice (flash-decoding's split form beside the whole
  /// one) records both, in launch order.
  static void markConfigs(const KernelConfigs &configs) {
    llvm::MapVector<Operation *, std::string> texts;
    for (const KernelConfig &config : configs) {
      if (!config.op)
        continue;
      std::string &text = texts[config.op];
      text += (text.empty() ? "" : "; ") + config.text();
    }
    for (auto &[op, text] : texts)
      op->setAttr(kKernelConfigAttr, StringAttr::get(op->getContext(), text));
  }

  /// The emitters' options, from the pass's.
  CudaEmitOptions emitOptions() const {
    CudaEmitOptions options;
    options.checkIndices = checkIndices;
    options.allowTf32 = allowTf32;
    options.gemmKernels = gemmKernels;
    options.qdqWgmmaRows = qdqWgmmaRows;
    options.qdqCublasLtRows = qdqCublasLtRows;
    options.arch = arch;
    AttentionOverrides &attention = options.attention;
    attention.warps = attentionWarps;
    attention.rowsPerWarp = attentionRowsPerWarp;
    attention.wgmma = attentionWgmma;
    attention.tileKeys = attentionTileKeys;
    attention.kvStages = attentionKvStages;
    attention.barriers = attentionBarriers;
    attention.lazyRescale = attentionLazyRescale;
    return options;
  }

  CudaLowering lowering;
};

} // namespace

std::unique_ptr<Pass> kiln::createKilnToCudaPass(KilnToCudaPassOptions options,
                                                 CudaLowering lowering) {
  return std::make_unique<KilnToCudaPass>(std::move(options), lowering);
}
