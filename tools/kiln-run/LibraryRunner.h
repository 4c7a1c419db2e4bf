//===- LibraryRunner.h - a `.so` run through its C ABI ----------*- C++ -*-===//
//
// kiln-run on a `.so`: the artifact loaded with dlopen and run through its
// own C ABI, as a user's program would run it; run-time options go through
// kiln_model_create_with_options, symbolic dims through kiln_model_run_dims.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_LIBRARYRUNNER_H
#define KILN_TOOLS_KILN_RUN_LIBRARYRUNNER_H

#include "RunSignature.h"

namespace kilnrun {

/// Runs the `.so` --model names on the inputs in `given` (random where
/// absent, integers within `bounds` by input name) and returns its outputs.
/// Sets `signature` from the library's descriptions and `given` to the
/// inputs it ran on.
mlir::FailureOr<llvm::SmallVector<kiln::HostTensor>>
runLibrary(mlir::MLIRContext *ctx, Signature &signature,
           llvm::StringMap<kiln::HostTensor> &given, std::mt19937 &rng,
           const llvm::StringMap<int64_t> &bounds);

} // namespace kilnrun

#endif // KILN_TOOLS_KILN_RUN_LIBRARYRUNNER_H
