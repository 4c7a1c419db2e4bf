//===- Progress.cpp - A compile's stages as they happen -------------------===//

#include "kiln/Compiler/Progress.h"

#include "mlir/Pass/Pass.h"
#include "llvm/Support/Format.h"

using namespace kiln;

void Progress::stage(const llvm::Twine &name) {
  end();
  os << prefix << name << " ...";
  os.flush();
  open = true;
  start = std::chrono::steady_clock::now();
}

void Progress::end() {
  if (!open)
    return;
  std::chrono::duration<double> seconds =
      std::chrono::steady_clock::now() - start;
  os << llvm::format(" %.2f s\n", seconds.count());
  os.flush();
  open = false;
}

namespace {
/// Starts a stage before each pass on the module or on a function in it
/// (a model is one function); the adaptors that nest pipelines have no
/// name and are not stages.
class PassStages : public mlir::PassInstrumentation {
public:
  explicit PassStages(Progress &progress) : progress(progress) {}

  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    mlir::Operation *parent = op->getParentOp();
    if (pass->getArgument().empty() || (parent && parent->getParentOp()))
      return;
    progress.stage("pass " + pass->getArgument());
  }

private:
  Progress &progress;
};
} // namespace

std::unique_ptr<mlir::PassInstrumentation> Progress::passStages() {
  return std::make_unique<PassStages>(*this);
}
