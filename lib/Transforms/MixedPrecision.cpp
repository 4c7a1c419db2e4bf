//===- MixedPrecision.cpp - fp16/bf16 compute with fp32 islands -----------===//
//
// One walk in program order decides the type each op computes in and
// converts its operands to it; ops before it are decided already, so an op
// sees the types its inputs arrive in. Constants are converted at compile
// time. Patterns then cancel exact round trips and move casts through data
// movement. Passes.td lists the rules.
//
//===----------------------------------------------------------------------===//

#include "kiln/Transforms/Passes.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

#include "MixedPrecisionRules.h"

namespace kiln {
#define GEN_PASS_DEF_KILNMIXEDPRECISIONPASS
#include "kiln/Transforms/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;
using namespace kiln::mixed_precision;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct KilnMixedPrecisionPass
    : public kiln::impl::KilnMixedPrecisionPassBase<KilnMixedPrecisionPass> {
  using Base::Base;

  LogicalResult initialize(MLIRContext *context) override {
    Location loc = UnknownLoc::get(context);
    if (precision == "fp16" || precision == "f16")
      low = Float16Type::get(context);
    else if (precision == "bf16")
      low = BFloat16Type::get(context);
    else
      return emitError(loc, "kiln-mixed-precision: unknown precision '")
             << precision << "'; expected fp16 or bf16";
    // Op types by their normalized names, checked against the kiln ops.
    llvm::StringSet<> known;
    for (RegisteredOperationName name : context->getRegisteredOperations())
      if (name.getDialectNamespace() == KilnDialect::getDialectNamespace())
        known.insert(normalizeOpType(name.getStringRef()));
    for (const std::string &type : keepOpTypes) {
      std::string normalized = normalizeOpType(type);
      if (!known.contains(normalized))
        return emitError(loc, "kiln-mixed-precision: unknown op type '")
               << type
               << "' in keep-op-types; expected a kiln "
                  "op name such "
                  "as matmul, attention, layer_norm, rms_norm or softmax";
      keepTypes.insert(normalized);
    }
    for (const std::string &name : keepNodeNames)
      keepNodes.insert(name);
    static constexpr llvm::StringLiteral rules[] = {
        "softmax",      "norm-statistics", "reduction", "mask",
        "from-integer", "angle",           "quantize"};
    for (const std::string &rule : disableIslands) {
      if (rule == "all") {
        for (StringRef each : rules)
          disabled.insert(each);
      } else if (llvm::is_contained(rules, rule)) {
        disabled.insert(rule);
      } else {
        return emitError(loc, "kiln-mixed-precision: unknown island '")
               << rule
               << "' in disable-islands; "
                  "expected "
                  "all, softmax, "
                  "norm-statistics, reduction, mask, from-integer, angle or "
                  "quantize";
      }
    }
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Assigner assigner(func, low, keepIoTypes, disabled, keepTypes, keepNodes);
    llvm::StringSet<> matched = assigner.run();

    RewritePatternSet patterns(&getContext());
    populateKilnMixedPrecisionPatterns(patterns);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();

    // Weights that stay f32 for f32 users are listed too (scalars are not).
    func.walk([&](ConstantOp constant) {
      auto type = cast<RankedTensorType>(constant.getType());
      if (type.getElementType().isF32() && type.getNumElements() > 1)
        constant->setAttr(kFp32RuleAttr,
                          StringAttr::get(&getContext(), "fp32-user"));
    });
    for (const auto &name : keepNodes)
      if (!matched.contains(name.getKey()))
        emitWarning(func.getLoc(),
                    "kiln-mixed-precision: no op comes from ONNX node '")
            << name.getKey() << "' (keep-node-names)";
  }

  FloatType low;
  llvm::StringSet<> keepTypes, keepNodes, disabled;
};

} // namespace
