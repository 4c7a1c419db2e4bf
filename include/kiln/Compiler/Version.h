//===- Version.h - What the tools' --version prints -------------*- C++ -*-===//

#ifndef KILN_COMPILER_VERSION_H
#define KILN_COMPILER_VERSION_H

#include "llvm/Support/raw_ostream.h"

namespace kiln {

/// Prints the Kiln version, the LLVM/MLIR it was built with, the NVRTC it
/// compiles kernels with (and the CUDA headers it was built against), and
/// the artifact format and C ABI versions it writes.
void printVersion(llvm::raw_ostream &os);

/// Makes the tool's --version print `printVersion`; call before parsing the
/// command line.
void registerVersionPrinter();

} // namespace kiln

#endif // KILN_COMPILER_VERSION_H
