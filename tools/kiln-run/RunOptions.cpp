//===- RunOptions.cpp - kiln-run's flags and what they set ----------------===//

#include "RunOptions.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace kilnrun {

cl::opt<std::string> modelPath(cl::Positional,
                               cl::desc("<model.onnx|model.so>"), cl::Required);
cl::opt<BackendKind> backend(
    "backend", cl::desc("where to run"), cl::init(BackendKind::Reference),
    cl::values(clEnumValN(BackendKind::Reference, "reference",
                          "the reference interpreter (.onnx only)"),
               clEnumValN(BackendKind::Cuda, "cuda", "the GPU"),
               clEnumValN(BackendKind::Host, "host",
                          "the generated kernels emulated on the CPU"),
               clEnumValN(BackendKind::Auto, "auto",
                          "the GPU if there is one, else the host backend")));
cl::list<std::string> inputFiles("input", cl::desc("an input from a file"),
                                 cl::value_desc("NAME=FILE.npy|FILE.pb"));
cl::list<std::string> constInputs(
    "const-input",
    cl::desc("freeze a graph input to the value in a file at compile time"),
    cl::value_desc("NAME=FILE.npy|FILE.pb"));
cl::opt<std::string> outputDir(
    "output-dir",
    cl::desc("write the outputs here as NAME.npy, the inputs used under "
             "inputs/ and, with --per-layer, the tensors compared under "
             "layers/"),
    cl::value_desc("dir"));
cl::opt<bool> compareReference(
    "compare-reference",
    cl::desc("also run the reference interpreter and print the error"));
cl::opt<std::string> referenceModel(
    "reference-model",
    cl::desc("the .onnx model a .so came from, for --compare-reference"),
    cl::value_desc("model.onnx"));
cl::opt<bool> perLayer(
    "per-layer",
    cl::desc("with --compare-reference on an .onnx: compile a debugging build "
             "that keeps every tensor the kernels write, compare each with "
             "the fp32 reference's tensor of the same name in the order the "
             "model computes them, and name the first beyond the tolerance "
             "with its ONNX node (the exit status still follows the outputs)"));
cl::opt<bool> comparePipeline(
    "compare-pipeline",
    cl::desc("run the reference interpreter on each function's IR before "
             "and after the Kiln pipeline (the first function on the given "
             "inputs, the others on random ones) and fail when they differ "
             "beyond the fp32 contract (rtol 1e-4, atol 1e-5), or "
             "--rtol/--atol/--rel-l2"));
cl::opt<unsigned> seed("seed", cl::desc("seed of random inputs"), cl::init(0));
cl::list<std::string> runDims(
    "run-dim",
    cl::desc("a model with symbolic dims (--dim NAME=MIN:MAX): the value of "
             "a dim for random inputs (default: the dim's value in the "
             "inputs from files, else the top of its range)"),
    cl::CommaSeparated, cl::value_desc("NAME=N"));
cl::opt<uint64_t> hostSeed(
    "host-seed",
    cl::desc("host backend: seed of the order in which emulated threads run "
             "between barriers"),
    cl::init(0));
cl::opt<bool> checkMode(
    "check",
    cl::desc("host backend: checking mode (each buffer in its own poisoned "
             "allocation, kernels built with AddressSanitizer)"));
cl::opt<std::string> gemmKernel(
    "gemm",
    cl::desc("run every matmul on the Kiln GEMM kernel of this name (kilnc "
             "--report lists each matmul's) instead of cuBLASLt (on the host "
             "backend, the CPU GEMM that stands in for it); a matmul without "
             "it fails. 'timed' (CUDA backend): the fastest of cuBLASLt's "
             "choice and Kiln's kernels, timed at the first run"),
    cl::value_desc("NAME"));
cl::opt<bool> cudaGraphs(
    "cuda-graphs",
    cl::desc("CUDA backend: replay each run after the first as a CUDA graph "
             "(--cuda-graphs=false issues every step one by one, as "
             "KILN_CUDA_GRAPHS=0 does for any artifact; without the flag, "
             "that variable decides)"),
    cl::init(true));
cl::opt<bool> tuneMatmuls(
    "tune-matmuls",
    cl::desc("CUDA backend: time several cuBLASLt algorithms for each matmul "
             "at its first run and keep the fastest (--tune-matmuls=false "
             "runs the heuristic's first, as KILN_TUNE_MATMULS=0 does for "
             "any artifact; without the flag, that variable decides)"),
    cl::init(true));
cl::opt<bool> pdl(
    "pdl",
    cl::desc("CUDA backend: launch each kernel as a programmatic dependent "
             "launch, its launch overlapping the end of the kernel before it "
             "(as KILN_PDL=1 does for any artifact; without the flag, that "
             "variable decides)"),
    cl::init(false));
cl::opt<bool> printInfo(
    "info",
    cl::desc("print the model's summary before running it (kiln_model_info: "
             "Kiln version, arch, backend and the run-time options in "
             "effect), for an .onnx as for a .so"));
cl::opt<double> relTolerance("rtol",
                             cl::desc("relative tolerance of the comparison"),
                             cl::init(1e-4));
cl::opt<double> absTolerance("atol",
                             cl::desc("absolute tolerance of the comparison"),
                             cl::init(1e-5));
cl::opt<double> relL2Tolerance(
    "rel-l2",
    cl::desc("compare by the relative L2 error of each output instead (the "
             "fp16/bf16 contract: 1e-2); non-finite values where the "
             "reference is finite still fail"),
    cl::init(0.0));

int fail(const llvm::Twine &message) {
  // After what was printed so far, also where both streams meet.
  llvm::outs().flush();
  llvm::errs() << "kiln-run: " << message << "\n";
  return 1;
}

kiln::rt::HostOptions hostOptions() {
  kiln::rt::HostOptions options;
  options.seed = hostSeed;
  options.checking = checkMode;
  options.gemm = gemmKernel;
  return options;
}

kiln::rt::CudaOptions cudaOptions() {
  // The environment's settings (KILN_CUDA_GRAPHS, KILN_TUNE_MATMULS,
  // KILN_GEMM_KERNEL), as for any artifact, unless a flag says otherwise.
  kiln::rt::CudaOptions options = kiln::rt::CudaOptions::fromEnvironment();
  if (cudaGraphs.getNumOccurrences())
    options.graphs = cudaGraphs;
  if (tuneMatmuls.getNumOccurrences())
    options.tuneMatmuls = tuneMatmuls;
  if (gemmKernel.getNumOccurrences())
    options.gemm = gemmKernel;
  if (pdl.getNumOccurrences())
    options.pdl = pdl;
  return options;
}

kiln::rt::Backend runtimeBackend() {
  switch (backend) {
  case BackendKind::Cuda:
    return kiln::rt::Backend::Cuda;
  case BackendKind::Host:
    return kiln::rt::Backend::Host;
  default:
    return kiln::rt::Backend::Auto;
  }
}

kiln::Tolerance tolerance() {
  kiln::Tolerance t;
  t.rtol = relTolerance;
  t.atol = absTolerance;
  t.relL2 = relL2Tolerance;
  return t;
}

LogicalResult parseRunDims(llvm::StringMap<int64_t> &values) {
  for (const std::string &spec : runDims) {
    auto [name, text] = StringRef(spec).split('=');
    int64_t value;
    if (name.empty() || text.getAsInteger(10, value) || value < 0) {
      fail("--run-dim: expected NAME=N, got '" + spec + "'");
      return failure();
    }
    values[name] = value;
  }
  return success();
}

} // namespace kilnrun
