//===- ComparePipeline.cpp - kiln-run --compare-pipeline ------------------===//

#include "ComparePipeline.h"
#include "RunOptions.h"
#include "RunResults.h"

#include "kiln/Interpreter/Interpreter.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using kiln::HostTensor;

namespace kilnrun {

int comparePipelineSemantics(ModuleOp module, const FunctionRun &first,
                             const kiln::CompileOptions &options,
                             std::mt19937 &rng) {
  // Every function of the module is checked (a lit file of many cases, one
  // function each); those after the first take random inputs.
  OwningOpRef<ModuleOp> after = module.clone();
  if (failed(kiln::runPipeline(*after, options)))
    return 1;
  auto functions = module.getOps<func::FuncOp>();
  func::FuncOp func = *functions.begin();
  bool many = llvm::range_size(functions) > 1;
  for (func::FuncOp original : functions) {
    FunctionRun checked = first;
    if (original != func) {
      llvm::StringMap<HostTensor> none;
      FailureOr<FunctionRun> own = prepareRun(original, none, rng);
      if (failed(own))
        return 1;
      checked = std::move(*own);
    }
    auto planned = after->lookupSymbol<func::FuncOp>(original.getName());
    if (!planned)
      return fail("the pipeline dropped @" + original.getName().str());
    if (many)
      llvm::outs() << "@" << original.getName() << ":\n";
    auto before = kiln::interpretFunction(original, checked.inputs);
    auto result = kiln::interpretFunction(planned, checked.inputs);
    if (failed(before) || failed(result))
      return 1;
    if (!printComparison(checked.signature.outputNames, *result, *before))
      return fail("the pipeline changed the result of @" +
                  original.getName().str());
  }
  llvm::outs() << "pipeline keeps semantics\n";
  return 0;
}

} // namespace kilnrun
