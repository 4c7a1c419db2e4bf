//===- KilnToCuda.cpp - the compiler/runtime boundary as a pass -----------===//
//
// A pass around emitPlan, so that the boundary DESIGN.md draws is one step of
// a pass manager and testable with kiln-opt like every other stage.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/CUDA/Passes.h"

#include "kiln/Target/CUDA/PlanText.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

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
    if (lowering.artifact) {
      if (failed(emitPlan(func, *lowering.artifact, *lowering.weights,
                          lowering.origins, options, lowering.configs)))
        signalPassFailure();
      return;
    }
    // kiln-opt: the result goes into the module as text.
    rt::Artifact artifact;
    WeightTable weights;
    KernelConfigs configs;
    if (failed(emitPlan(func, artifact, weights, nullptr, options, &configs)))
      return signalPassFailure();
    std::string plan;
    llvm::raw_string_ostream os(plan);
    printPlan(artifact, weights.size, os, &configs);
    Builder b(module.getContext());
    module->setAttr(kCudaSourceAttr, b.getStringAttr(artifact.cudaSource));
    module->setAttr(kPlanAttr, b.getStringAttr(plan));
  }

  /// The emitters' options, from the pass's.
  CudaEmitOptions emitOptions() const {
    CudaEmitOptions options;
    options.checkIndices = checkIndices;
    options.allowTf32 = allowTf32;
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
