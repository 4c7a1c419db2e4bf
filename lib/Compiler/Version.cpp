//===- Version.cpp - What the tools' --version prints ---------------------===//

#include "kiln/Compiler/Version.h"

#include "kiln/Compiler/Compiler.h"
#include "kiln/kiln_model.h"
#include "kiln/runtime/ArtifactFormat.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"

#include <cuda.h>
#include <nvrtc.h>

void kiln::printVersion(llvm::raw_ostream &os) {
  int major = 0, minor = 0;
  os << "Kiln " << kKilnVersion << "\n";
  os << "  LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
    os << "  NVRTC " << major << "." << minor;
  else
    os << "  NVRTC unknown";
  os << " (built against CUDA " << CUDA_VERSION / 1000 << "."
     << CUDA_VERSION % 1000 / 10 << ")\n";
  os << "  artifact format " << rt::kArtifactFormatVersion << ", C ABI "
     << KILN_ABI_VERSION << "\n";
}

void kiln::registerVersionPrinter() {
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { kiln::printVersion(os); });
}
