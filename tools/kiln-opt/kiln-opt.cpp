//===- kiln-opt.cpp - run Kiln passes on textual IR -----------------------===//

#include "kiln/Compiler/Pipeline.h"
#include "kiln/Compiler/Version.h"
#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "kiln/Target/CUDA/Passes.h"
#include "kiln/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<kiln::KilnDialect, mlir::func::FuncDialect>();
  kiln::registerKilnPasses();
  kiln::registerKilnCUDAPasses();
  kiln::registerKilnPipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  kiln::registerVersionPrinter();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
