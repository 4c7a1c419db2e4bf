//===- RunResults.cpp - a run's tensors written and compared --------------===//

#include "RunResults.h"
#include "RunOptions.h"

#include "kiln/Compiler/TensorFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using kiln::HostTensor;

namespace kilnrun {

LogicalResult writeTensors(ArrayRef<std::string> names,
                           ArrayRef<HostTensor> tensors, StringRef folder) {
  if (outputDir.empty() || (tensors.empty() && !folder.empty()))
    return success();
  std::string dir = outputDir + (folder.empty() ? "" : "/" + folder.str());
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    fail("cannot create '" + dir + "': " + ec.message());
    return failure();
  }
  for (auto [name, tensor] : llvm::zip(names, tensors)) {
    // Tensor names may hold any character; they make no folders.
    std::string safe = name;
    for (char &c : safe)
      if (c == '/' || c == '\\')
        c = '_';
    std::string error = kiln::writeNpyFile(dir + "/" + safe + ".npy", tensor);
    if (!error.empty()) {
      fail(error);
      return failure();
    }
  }
  return success();
}

void printError(const llvm::Twine &label, const kiln::TensorError &e,
                const HostTensor &got, const HostTensor &want) {
  llvm::outs() << label << ": "
               << kiln::describeError(e, got, want, tolerance()) << "\n";
}

bool printComparison(ArrayRef<std::string> names, ArrayRef<HostTensor> got,
                     ArrayRef<HostTensor> want) {
  bool within = true;
  for (auto [name, g, w] : llvm::zip(names, got, want)) {
    kiln::TensorError e = kiln::compareTensors(g, w, tolerance());
    printError("compare " + name, e, g, w);
    within &= e.within;
  }
  return within;
}

} // namespace kilnrun
