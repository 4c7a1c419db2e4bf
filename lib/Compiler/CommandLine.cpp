//===- CommandLine.cpp - the flags kilnc and kiln-run share ---------------===//
//
// The flags live here, as llvm::cl options created when a tool registers
// them; apply* reads them into CompileOptions, the one struct the compiler
// passes down to the importer and the passes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/CommandLine.h"

#include "kiln/Compiler/OptionText.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ManagedStatic.h"

#include <tuple>

namespace kiln {

namespace {
/// The precision flags, created when a tool registers them.
struct PrecisionCLOptions {
  enum class Precision { FP32, FP16, BF16 };
  llvm::cl::opt<Precision> precision{
      "precision", llvm::cl::desc("compute precision"),
      llvm::cl::init(Precision::FP32),
      llvm::cl::values(
          clEnumValN(Precision::FP32, "fp32", "fp32 throughout (the default)"),
          clEnumValN(Precision::FP16, "fp16",
                     "matmuls and attention in fp16 with fp32 accumulation; "
                     "fp32 islands (softmax, norm statistics, reductions, "
                     "masks)"),
          clEnumValN(Precision::BF16, "bf16", "as fp16, in bf16"))};
  llvm::cl::opt<bool> keepIoTypes{
      "keep-io-types",
      llvm::cl::desc("with --precision fp16|bf16: keep the model's input and "
                     "output types (default true; =false makes fp32 inputs "
                     "and outputs fp16/bf16)"),
      llvm::cl::init(true)};
  llvm::cl::list<std::string> keepFp32Ops{
      "keep-fp32-ops",
      llvm::cl::desc(
          "with --precision fp16|bf16: op types kept in fp32 "
          "(kiln op names: matmul, attention, layer_norm, rms_norm, softmax, "
          "...)"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("op,...")};
  llvm::cl::list<std::string> keepFp32Nodes{
      "keep-fp32-nodes",
      llvm::cl::desc("with --precision fp16|bf16: ONNX node names whose ops "
                     "are kept in fp32"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("name,...")};
  llvm::cl::list<std::string> disableFp32Islands{
      "disable-fp32-islands",
      llvm::cl::desc("with --precision fp16|bf16: fp32 islands to turn off, "
                     "to measure what they buy (results may overflow): all, "
                     "softmax, norm-statistics, reduction, mask, "
                     "from-integer, angle, quantize"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("island,...")};
  enum class Weights { Float, Int4, Int8, Fp8 };
  llvm::cl::opt<Weights> weights{
      "weights",
      llvm::cl::desc("quantize the linear layers' weights at compile time "
                     "(block-wise round-to-nearest, symmetric; "
                     "docs/quantization.md)"),
      llvm::cl::init(Weights::Float),
      llvm::cl::values(
          clEnumValN(Weights::Float, "float",
                     "as the model stores them (the default)"),
          clEnumValN(Weights::Int4, "int4", "4-bit weights, a scale a block"),
          clEnumValN(Weights::Int8, "int8", "8-bit weights, a scale a block"),
          clEnumValN(Weights::Fp8, "fp8",
                     "E4M3FN float8 weights, a scale an output column"))};
  llvm::cl::opt<int64_t> weightsBlockSize{
      "weights-block-size",
      llvm::cl::desc("with --weights int4|int8: weights along K that share a "
                     "scale (a power of two of at least 16)"),
      llvm::cl::init(32)};
  llvm::cl::opt<bool> allowTf32{
      "allow-tf32",
      llvm::cl::desc("fp32 matmuls and attention on the tensor cores with "
                     "TF32 inputs (10-bit mantissas): faster, but outside "
                     "the fp32 contract; see docs/precision.md"),
      llvm::cl::init(false)};
};
} // namespace

namespace {
/// The flags about what a model may do, created when a tool registers them.
struct InputCLOptions {
  llvm::cl::list<std::string> dims{
      "dim",
      llvm::cl::desc("value of a named dim of the model's inputs, for every "
                     "input that has it (e.g. batch=1,sequence=128), its "
                     "range MIN:MAX to keep it symbolic (batch=1:8), or an "
                     "expression of other dims it equals "
                     "(total=past+sequence)"),
      llvm::cl::CommaSeparated,
      llvm::cl::value_desc("NAME=N|NAME=MIN:MAX|NAME=EXPR")};
  llvm::cl::list<std::string> inputShapes{
      "input-shape",
      llvm::cl::desc("static shape of a graph input, e.g. ids=1x128; the "
                     "names of its dims get their values (see --dim)"),
      llvm::cl::value_desc("NAME=DIMxDIM")};
  llvm::cl::list<std::string> overrideInitializers{
      "override-initializer",
      llvm::cl::desc("keep an initializer that is also listed as a graph "
                     "input as a run-time input (by default it is a "
                     "constant)"),
      llvm::cl::value_desc("NAME")};
  llvm::cl::opt<bool> uncheckedIndices{
      "unchecked-indices",
      llvm::cl::desc("clamp out-of-range gather indices (token ids, "
                     "positions) and lengths (seqlens_k) silently instead of "
                     "failing the run with the ONNX node named (decided at "
                     "compile time: a .so keeps what kilnc gave it)"),
      llvm::cl::init(false)};
  llvm::cl::opt<uint64_t> maxArena{
      "max-arena",
      llvm::cl::desc("refuse plans whose arena, or any graph input or "
                     "output, needs more bytes than this (default 256 GiB)"),
      llvm::cl::init(CompileOptions().maxArenaBytes)};
  llvm::cl::opt<uint64_t> maxWeights{
      "max-weights",
      llvm::cl::desc("refuse plans with more bytes of weights than this "
                     "(default 256 GiB)"),
      llvm::cl::init(CompileOptions().maxWeightBytes)};
  llvm::cl::opt<bool> kvCacheInPlace{
      "kv-cache-in-place",
      llvm::cl::desc("keep a decoder's KV cache in one buffer of its largest "
                     "length: each past_* input is that buffer, its present "
                     "output the same storage with the new rows written in "
                     "place (kiln-cache-in-place; the C ABI names the "
                     "aliases)"),
      llvm::cl::init(false)};
  llvm::cl::opt<int64_t> nextToken{
      "next-token",
      llvm::cl::desc("append a decoder's choice of its next token to the "
                     "graph: an output next_token, greedy or sampled among "
                     "at most N of the most likely tokens, steered by the "
                     "inputs sampling_* (kiln-run --generate then reads one "
                     "token id a step; docs/generate.md)"),
      llvm::cl::value_desc("N"), llvm::cl::init(0)};
};
} // namespace

namespace {
/// The overrides of kernel configurations (kiln-to-cuda's options), for
/// benchmarks that time the forms side by side; created when a tool
/// registers them.
struct KernelCLOptions {
  llvm::cl::opt<bool> gemmKernels{
      "gemm-kernels",
      llvm::cl::desc("each float matmul also offers Kiln's GEMM kernels, for "
                     "kiln-run --gemm (off by default until a GPU validates "
                     "them: they are most of a small model's compile time)"),
      llvm::cl::init(false)};
  llvm::cl::opt<int64_t> qdqWgmmaRows{
      "qdq-wgmma-rows",
      llvm::cl::desc("an 8-bit Q/DQ GEMM (integer, or float8 of a 16-bit "
                     "product) runs on Hopper's wgmma from N rows (default "
                     "0: from where its 128x128 tiles fill the GPU; -1 "
                     "never)"),
      llvm::cl::value_desc("N"), llvm::cl::init(0)};
  llvm::cl::opt<int64_t> qdqCublasLtRows{
      "qdq-cublaslt-rows",
      llvm::cl::desc("an FP8 Q/DQ GEMM of a 16-bit product runs on "
                     "cuBLASLt's FP8 kernels, then a kernel of its "
                     "epilogue, from N rows (default 0: where the Hopper "
                     "form's default starts; -1 never)"),
      llvm::cl::value_desc("N"), llvm::cl::init(0)};
  llvm::cl::opt<int64_t> attentionWarps{
      "attention-warps",
      llvm::cl::desc("tensor-core attention: warps a block, 4 or 8 (default: "
                     "the compiler's choice)"),
      llvm::cl::init(0)};
  llvm::cl::opt<int64_t> attentionRowsPerWarp{
      "attention-rows-per-warp",
      llvm::cl::desc("tensor-core attention: query rows a warp, 16 or 32"),
      llvm::cl::init(0)};
  llvm::cl::opt<bool> attentionWgmma{
      "attention-wgmma",
      llvm::cl::desc("tensor-core attention on Hopper's wgmma (fp16/bf16, "
                     "head sizes 16, 32, 64 or 128; slower than mma.sync "
                     "today, docs/performance.md)"),
      llvm::cl::init(false)};
  llvm::cl::opt<int64_t> attentionTileKeys{
      "attention-tile-keys",
      llvm::cl::desc("tensor-core attention: keys a tile, 32 or 64 "
                     "(mma.sync), 64 or 128 (wgmma)"),
      llvm::cl::init(0)};
  llvm::cl::opt<int64_t> attentionKvStages{
      "attention-kv-stages",
      llvm::cl::desc("tensor-core attention: 1 keeps one buffer each for key "
                     "and value tiles"),
      llvm::cl::init(0)};
  llvm::cl::opt<int64_t> attentionBarriers{
      "attention-barriers",
      llvm::cl::desc("tensor-core attention with one buffer each: 2 takes "
                     "FlashAttention-2's two-barrier order"),
      llvm::cl::init(0)};
  llvm::cl::opt<bool> attentionLazyRescale{
      "attention-lazy-rescale",
      llvm::cl::desc("tensor-core attention: move the running maximum only "
                     "when a row passes it by 2^8 (default true)"),
      llvm::cl::init(true)};
  llvm::cl::opt<bool> gemmNormEpilogue{
      "gemm-norm-epilogue",
      llvm::cl::desc("a 16-bit GEMM ends its epilogue with the LayerNorm or "
                     "RMSNorm of each row after it (default true; false "
                     "keeps the norm's row kernel, to time the two)"),
      llvm::cl::init(true)};
  llvm::cl::opt<bool> gemmCacheUpdate{
      "gemm-cache-update",
      llvm::cl::desc("a decoder's QKV projection over block-quantized "
                     "weights writes its new keys and values into their "
                     "caches in its GEMV's last block (default true; false "
                     "keeps the update's own kernel, to time the two)"),
      llvm::cl::init(true)};
};
} // namespace

static llvm::ManagedStatic<PrecisionCLOptions> precisionCLOptions;
static llvm::ManagedStatic<InputCLOptions> inputCLOptions;
static llvm::ManagedStatic<KernelCLOptions> kernelCLOptions;

void registerKernelCLOptions() { *kernelCLOptions; }

std::string applyKernelCLOptions(CompileOptions &options) {
  if (!kernelCLOptions.isConstructed())
    return "";
  options.gemmKernels = kernelCLOptions->gemmKernels;
  // A path's fewest rows: a count, 0 for the compiler's choice, -1 never.
  for (auto [flag, value, into] :
       {std::make_tuple("--qdq-wgmma-rows",
                        int64_t(kernelCLOptions->qdqWgmmaRows),
                        &options.qdqWgmmaRows),
        std::make_tuple("--qdq-cublaslt-rows",
                        int64_t(kernelCLOptions->qdqCublasLtRows),
                        &options.qdqCublasLtRows)}) {
    if (value < -1)
      return std::string(flag) + ": " + std::to_string(value) +
             " is neither a count of rows, 0 (the compiler's choice) nor -1 "
             "(never)";
    *into = value;
  }
  AttentionOverrides &attention = options.attention;
  attention.warps = kernelCLOptions->attentionWarps;
  attention.rowsPerWarp = kernelCLOptions->attentionRowsPerWarp;
  attention.wgmma = kernelCLOptions->attentionWgmma;
  attention.tileKeys = kernelCLOptions->attentionTileKeys;
  attention.kvStages = kernelCLOptions->attentionKvStages;
  attention.barriers = kernelCLOptions->attentionBarriers;
  attention.lazyRescale = kernelCLOptions->attentionLazyRescale;
  options.pipeline.fuse.gemmNorm = kernelCLOptions->gemmNormEpilogue;
  options.pipeline.fuse.gemmCacheUpdate = kernelCLOptions->gemmCacheUpdate;
  if (std::string error = checkAttentionOverrides(attention); !error.empty())
    return "--" + error;
  return "";
}

void registerInputCLOptions() { *inputCLOptions; }

std::string applyInputCLOptions(CompileOptions &options) {
  if (!inputCLOptions.isConstructed())
    return "";
  for (const std::string &spec : inputCLOptions->dims)
    if (std::string error = parseDimValue(spec, options.import);
        !error.empty())
      return "--dim: " + error;
  for (const std::string &spec : inputCLOptions->inputShapes)
    if (std::string error = parseInputShape(spec, options.import);
        !error.empty())
      return "--input-shape: " + error;
  for (const std::string &name : inputCLOptions->overrideInitializers)
    options.import.overrideInitializers.insert(name);
  // The importer's messages name these flags.
  ImportOptionNames &names = options.import.names;
  names.dims = "--dim";
  names.inputShapes = "--input-shape";
  names.constantInputs = "--const-input";
  names.overrideInitializers = "--override-initializer";
  options.uncheckedIndices = inputCLOptions->uncheckedIndices;
  options.maxArenaBytes = inputCLOptions->maxArena;
  options.maxWeightBytes = inputCLOptions->maxWeights;
  options.pipeline.cacheInPlace = inputCLOptions->kvCacheInPlace;
  if (inputCLOptions->nextToken.getNumOccurrences() > 0) {
    if (inputCLOptions->nextToken < 1)
      return "--next-token: the bound on top-k must be at least 1";
    options.import.nextTokenTopK = inputCLOptions->nextToken;
  }
  return "";
}

void registerPrecisionCLOptions() { *precisionCLOptions; }

std::vector<std::string> givenCompileOnlyFlags() {
  std::vector<std::string> given;
  auto note = [&](const llvm::cl::Option &option) {
    if (option.getNumOccurrences() > 0)
      given.push_back(("--" + option.ArgStr).str());
  };
  if (precisionCLOptions.isConstructed()) {
    const PrecisionCLOptions &o = *precisionCLOptions;
    note(o.precision);
    note(o.keepIoTypes);
    note(o.keepFp32Ops);
    note(o.keepFp32Nodes);
    note(o.disableFp32Islands);
    note(o.allowTf32);
    note(o.weights);
    note(o.weightsBlockSize);
  }
  if (inputCLOptions.isConstructed()) {
    const InputCLOptions &o = *inputCLOptions;
    note(o.uncheckedIndices);
    note(o.maxArena);
    note(o.maxWeights);
    note(o.kvCacheInPlace);
    note(o.nextToken);
  }
  if (kernelCLOptions.isConstructed()) {
    const KernelCLOptions &o = *kernelCLOptions;
    note(o.gemmKernels);
    note(o.qdqWgmmaRows);
    note(o.qdqCublasLtRows);
    note(o.attentionWarps);
    note(o.attentionRowsPerWarp);
    note(o.attentionWgmma);
    note(o.attentionTileKeys);
    note(o.attentionKvStages);
    note(o.attentionBarriers);
    note(o.attentionLazyRescale);
    note(o.gemmNormEpilogue);
    note(o.gemmCacheUpdate);
  }
  return given;
}

std::vector<OptionFlag> precisionOptionFlags() {
  return {{"keep-op-types", "--keep-fp32-ops"},
          {"keep-node-names", "--keep-fp32-nodes"},
          {"disable-islands", "--disable-fp32-islands"},
          {"block-size", "--weights-block-size"}};
}

// Each handler registered after those it passes diagnostics on to.
ToolDiagnostics::ToolDiagnostics(mlir::MLIRContext *context, std::string tool)
    : lines(sourceMgr, context), model(context),
      flagNotes(context, std::move(tool), precisionOptionFlags()) {}

void applyPrecisionCLOptions(CompileOptions &options) {
  if (!precisionCLOptions.isConstructed())
    return;
  KilnMixedPrecisionPassOptions &precision = options.pipeline.mixedPrecision;
  switch (precisionCLOptions->precision) {
  case PrecisionCLOptions::Precision::FP32:
    precision.precision = "fp32";
    break;
  case PrecisionCLOptions::Precision::FP16:
    precision.precision = "fp16";
    break;
  case PrecisionCLOptions::Precision::BF16:
    precision.precision = "bf16";
    break;
  }
  precision.keepIoTypes = precisionCLOptions->keepIoTypes;
  precision.keepOpTypes.assign(precisionCLOptions->keepFp32Ops.begin(),
                               precisionCLOptions->keepFp32Ops.end());
  precision.keepNodeNames.assign(precisionCLOptions->keepFp32Nodes.begin(),
                                 precisionCLOptions->keepFp32Nodes.end());
  precision.disableIslands.assign(precisionCLOptions->disableFp32Islands.begin(),
                                  precisionCLOptions->disableFp32Islands.end());
  options.allowTf32 = precisionCLOptions->allowTf32;
  PipelineOptions &pipeline = options.pipeline;
  pipeline.quantizeWeights =
      precisionCLOptions->weights != PrecisionCLOptions::Weights::Float;
  pipeline.weights.bits =
      precisionCLOptions->weights == PrecisionCLOptions::Weights::Int4 ? 4 : 8;
  pipeline.weights.float8 =
      precisionCLOptions->weights == PrecisionCLOptions::Weights::Fp8;
  pipeline.weights.blockSize = precisionCLOptions->weightsBlockSize;
}


} // namespace kiln
