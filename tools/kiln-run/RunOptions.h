//===- RunOptions.h - kiln-run's flags and what they set --------*- C++ -*-===//
//
// kiln-run's command-line options, shared by the files that carry out its
// modes, and the runtime options and tolerance they stand for.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_RUNOPTIONS_H
#define KILN_TOOLS_KILN_RUN_RUNOPTIONS_H

#include "kiln/ConstantData/TensorComparison.h"
#include "kiln/runtime/Model.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace kilnrun {

/// Where --backend runs the model.
enum class BackendKind { Reference, Cuda, Host, Auto };

/// The flags, defined in RunOptions.cpp with their help text.
/// @{
extern llvm::cl::opt<std::string> modelPath;
extern llvm::cl::opt<BackendKind> backend;
extern llvm::cl::list<std::string> inputFiles;
extern llvm::cl::list<std::string> constInputs;
extern llvm::cl::opt<std::string> outputDir;
extern llvm::cl::opt<bool> compareReference;
extern llvm::cl::opt<std::string> referenceModel;
extern llvm::cl::opt<bool> perLayer;
extern llvm::cl::opt<bool> comparePipeline;
extern llvm::cl::opt<unsigned> seed;
extern llvm::cl::list<std::string> runDims;
extern llvm::cl::opt<uint64_t> hostSeed;
extern llvm::cl::opt<std::string> gemmKernel;
extern llvm::cl::opt<bool> checkMode;
extern llvm::cl::opt<bool> cudaGraphs;
extern llvm::cl::opt<bool> pdl;
extern llvm::cl::opt<bool> tuneMatmuls;
extern llvm::cl::opt<bool> printInfo;
extern llvm::cl::opt<double> relTolerance;
extern llvm::cl::opt<double> absTolerance;
extern llvm::cl::opt<double> relL2Tolerance;
/// @}

/// Prints "kiln-run: MESSAGE" on stderr (after what stdout holds so far) and
/// returns the failing exit status.
int fail(const llvm::Twine &message);

/// The host backend's options: --host-seed, --check.
kiln::rt::HostOptions hostOptions();

/// The CUDA backend's options: the environment's (as for any artifact)
/// unless --cuda-graphs or --tune-matmuls say otherwise.
kiln::rt::CudaOptions cudaOptions();

/// The runtime backend --backend names (Auto for the reference, which runs
/// no compiled model).
kiln::rt::Backend runtimeBackend();

/// The tolerance --rtol, --atol and --rel-l2 set.
kiln::Tolerance tolerance();

/// The values --run-dim gives, by name, for an .onnx and a .so alike; fails
/// naming a malformed or negative one.
mlir::LogicalResult parseRunDims(llvm::StringMap<int64_t> &values);

} // namespace kilnrun

#endif // KILN_TOOLS_KILN_RUN_RUNOPTIONS_H
