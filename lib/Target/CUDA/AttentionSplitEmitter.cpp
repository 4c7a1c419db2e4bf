//===- AttentionSplitEmitter.cpp - attention with its keys split ----------===//
//
// Flash-decoding: with one or a few query rows, the whole attention kernel
// has a block per head (a query tile of each), 12 blocks for GPT-2 on a GPU
// of 132 SMs, each walking the whole cache. Here the keys are split too:
// the kernel of either generator takes a chunk of the keys per block
// (KeySplit) and stores each row's unnormalized output with its running
// maximum and sum, and the last split of a tile of query rows to arrive
// merges the splits of its rows as the online softmax merges tiles (each
// split's output and sum rescaled by exp(its maximum - the largest)): the
// combine, which was a kernel of its own until 2026-12-05. The sink logit,
// when there is one, enters the merge once.
//
// The choice is made per kernel here and, for a symbolic query length, at
// run time: the plan holds both forms, each step guarded by the query
// length (rt::SizeField::StepRuns), and the runtime keeps one of them.
//
//===----------------------------------------------------------------------===//

#include "AttentionParts.h"
#include "GemmParts.h"
#include "KernelSizes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace kiln {

namespace {
/// Query rows per head up to which the keys are split.
constexpr int64_t kMostSplitQueries = 16;
/// The fewest keys a split takes (two tensor-core tiles): fewer would
/// spend more on the partial results than they save.
constexpr int64_t kFewestSplitKeys = 128;
/// The most splits, and the most scratch memory their partial results may
/// take (at the top of the dims' ranges).
constexpr int64_t kMostSplits = 64;
constexpr int64_t kMostScratchBytes = 16 << 20;
} // namespace

std::string splitCountText(const KeySplit &split, const Size &keys) {
  return llvm::formatv("max(1LL, min({0}LL, ({1} + {2}LL) / {3}LL))",
                       split.maxSplits, keys, split.chunk - 1, split.chunk);
}

std::string keyRangeText(const KeySplit *split, const Size &keys,
                         StringRef axis) {
  if (!split)
    return llvm::formatv("  const long long key_begin = 0LL, key_end = {0};\n",
                         keys);
  return llvm::formatv(
      "  const long long splits = {0};\n"
      "  const long long key_begin = (long long)blockIdx.{1} * {2}LL;\n"
      "  const long long key_end = min({3}, key_begin + {2}LL);\n",
      splitCountText(*split, keys), axis, split->chunk, keys);
}

std::string normalizedOutput(AttentionOp attention, StringRef acc,
                             StringRef sum, StringRef inverse) {
  std::string value = inverse.empty()
                          ? llvm::formatv("{0} / {1}", acc, sum).str()
                          : llvm::formatv("{0} * {1}", acc, inverse).str();
  if (attention.getZeroNanProbs())
    value =
        llvm::formatv("(({0} == 0.0f || {0} != {0}) ? 0.0f : {1})", sum, value);
  return storeExpr(attention.getType().getElementType(), value);
}

int64_t leastOf(const AttentionParts &parts, const Size &size) {
  DimRanges ranges = dimRangesOf(
      parts.attention->getParentOfType<func::FuncOp>().getOperation());
  return lowerBound(size.getExpr(), ranges).value_or(0);
}

/// The split for `parts`, or nothing when its keys are too few to split or
/// its query rows always too many.
static std::optional<KeySplit> planKeySplit(const AttentionParts &parts) {
  if (leastOf(parts, parts.queries) > kMostSplitQueries)
    return std::nullopt;
  int64_t rows = parts.batch.upper() * parts.heads *
                 std::min(parts.queries.upper(), kMostSplitQueries);
  int64_t bytesPerSplit = rows * (parts.valueSize + 2) * 4;
  int64_t splits = std::min(kMostSplits, kMostScratchBytes / bytesPerSplit);
  if (splits < 2)
    return std::nullopt;
  int64_t keys = parts.keys.upper();
  int64_t chunk = (keys + splits - 1) / splits;
  chunk = std::max(kFewestSplitKeys, (chunk + 63) / 64 * 64);
  KeySplit split;
  split.chunk = chunk;
  split.maxSplits = (keys + chunk - 1) / chunk;
  if (split.maxSplits < 2)
    return std::nullopt;
  return split;
}

/// The merge of the splits of partial rows [row_begin, row_end) into the
/// result (at the output's index, so a transpose merging heads back holds),
/// which the last split of a tile to arrive runs over the block's threads:
/// `__device__ void NAME(partials, out0, row_begin, row_end, dims...)`,
/// with `dims` the dim parameters it takes.
/// The other splits' partials are read through L2 (`__ldcg`). `log2Units`:
/// the partial maxima are in log2 units (the tensor-core kernel's), else
/// natural ones.
static void emitCombineRows(const AttentionParts &parts, const KeySplit &split,
                            bool log2Units, StringRef name,
                            ArrayRef<std::string> dims, llvm::raw_ostream &os) {
  AttentionOp attention = parts.attention;
  Type et = attention.getType().getElementType();
  int64_t dv = parts.valueSize, width = dv + 2;
  const char *exp = log2Units ? "exp2f" : "expf";
  std::string sink = parts.sinkValue + (log2Units ? " * log2e" : "");
  auto partialAt = [&](StringRef element) {
    return llvm::formatv("__ldcg(&partial[s * {0}LL + {1}])", width, element)
        .str();
  };
  std::string maximum = partialAt(std::to_string(dv));
  os << "\nstatic __device__ void " << name << "(const float *partials, "
     << storageType(et)
     << " *__restrict__ out0, long long row_begin, long long row_end";
  for (const std::string &dim : dims)
    os << ", long long " << dim;
  os << ") {\n"
     << parts.sinkTable
     << "  const float neg_inf = __int_as_float(0xff800000);\n"
     << "  const float log2e = 1.4426950408889634f;\n"
     << "  (void)log2e;\n"
     << "  const long long splits = " << splitCountText(split, parts.keys)
     << ";\n"
     << "  for (long long row = row_begin; row < row_end; ++row) {\n"
     << "    const long long i = row % " << parts.queries << ";\n"
     << "    const long long h = (row / " << parts.queries << ") % "
     << parts.heads << "LL;\n"
     << "    const long long b = row / " << parts.queries * parts.heads << ";\n"
     << "    const float *partial = partials + row * splits * " << width
     << "LL;\n"
     << "    // The largest maximum (a sink's logit is one more), then each\n"
     << "    // split's weight relative to it; splits masked to -inf weigh 0.\n"
     << "    float top = " << sink << ";\n"
     << "    for (long long s = 0; s < splits; ++s)\n"
     << "      top = fmaxf(top, " << maximum << ");\n"
     << "    auto weight = [&](float m) {\n"
     << "      return m == neg_inf ? 0.0f : " << exp << "(m - top);\n"
     << "    };\n"
     << "    float sum = " << (parts.hasSink ? "weight(" + sink + ")" : "0.0f")
     << ";\n"
     << "    for (long long s = 0; s < splits; ++s)\n"
     << "      sum += weight(" << maximum << ") * "
     << partialAt(std::to_string(dv + 1)) << ";\n"
     << "    for (long long d = threadIdx.x; d < " << dv
     << "LL; d += blockDim.x) {\n"
     << "      float acc = 0.0f;\n"
     << "      for (long long s = 0; s < splits; ++s)\n"
     << "        acc += weight(" << maximum << ") * " << partialAt("d") << ";\n"
     << "      out0[" << parts.outIndex
     << "] = " << normalizedOutput(attention, "acc", "sum") << ";\n"
     << "    }\n  }\n}\n";
}

std::string splitOutputParameters(KernelOp kernel) {
  return "float *__restrict__ partials, " + resultParameters(kernel);
}

std::string splitFinishText(const KeySplit &split, StringRef name,
                            StringRef tile, StringRef rowBegin,
                            StringRef rowEnd, StringRef indent) {
  std::string call =
      (name + "_combine_rows(partials, out0, " + rowBegin + ", " + rowEnd)
          .str();
  for (const std::string &dim : split.mergeDims)
    call += ", " + dim;
  call += ");";
  std::string text = R"cuda({
  // The last of the tile's splits to arrive merges them into the result:
  // no combine kernel of its own, one launch fewer.
  __shared__ bool last_split;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last_split = atomicInc(&$NAME_arrived[$TILE], (unsigned)splits - 1u) == (unsigned)splits - 1u;
  }
  __syncthreads();
  if (last_split) {
    __threadfence();
    $CALL
  }
  // Every thread has read last_split before the next tile's arrival.
  __syncthreads();
}
)cuda";
  text = gemm::substitute(
      text, {{"$NAME", name.str()}, {"$TILE", tile.str()}, {"$CALL", call}});
  std::string indented;
  for (StringRef line : llvm::split(StringRef(text), '\n'))
    if (!line.empty())
      indented += (indent + line + "\n").str();
  return indented;
}

std::optional<FailureOr<SplitAttention>>
emitSplitAttention(KernelOp kernel, StringRef name, llvm::raw_ostream &os,
                   const CudaEmitOptions &options) {
  if (kernel.getKind() != KernelKind::attention)
    return std::nullopt;
  FailureOr<AttentionParts> parts = readAttention(kernel);
  if (failed(parts))
    return FailureOr<SplitAttention>(failure());
  std::optional<KeySplit> split = planKeySplit(*parts);
  if (!split)
    return std::nullopt;
  SplitAttention result;
  result.splitName = (name + "_split").str();
  // The dims the merge reads, and only those, are its parameters: a
  // launch is marked as reading the dims its kernel passes on
  // (PlanDimsRead.cpp), and each one it reads is updated in a replayed
  // graph at new dims.
  {
    SmallVector<std::string> all;
    for (StringRef dim : dimNamesOf(kernel->getParentOfType<func::FuncOp>()))
      all.push_back(dimParameterName(dim));
    std::string text;
    llvm::raw_string_ostream merge(text);
    emitCombineRows(*parts, *split, true, "merge", all, merge);
    StringRef body = StringRef(text).split(") {").second;
    for (const std::string &dim : all)
      if (namesIdentifier(body, dim))
        split->mergeDims.push_back(dim);
  }
  // The split kernel first, into a buffer: which generator takes it says
  // the units of its partial maxima, which the merge its blocks call
  // (declared before it) reads.
  std::string kernelText;
  llvm::raw_string_ostream kernelSource(kernelText);
  bool log2Units = true;
  auto geometry = emitTensorCoreAttention(
      kernel, *parts, &*split, result.splitName, kernelSource, options);
  if (!geometry) {
    log2Units = false;
    geometry = emitScalarAttention(kernel, *parts, &*split, result.splitName,
                                   kernelSource);
  }
  if (failed(*geometry))
    return FailureOr<SplitAttention>(failure());
  result.split = **geometry;
  // A counter for each tile of query rows: at most one a row (at most
  // kMostSplitQueries a head, where the split runs).
  int64_t tiles = parts->batch.upper() * parts->heads *
                  std::min(parts->queries.upper(), kMostSplitQueries);
  os << "\n// The arrivals of " << result.splitName
     << "'s splits at each tile of query rows.\nKILN_PER_CONTEXT unsigned int "
     << result.splitName << "_arrived[" << std::max<int64_t>(tiles, 1)
     << "];\n";
  emitCombineRows(*parts, *split, log2Units, result.splitName + "_combine_rows",
                  split->mergeDims, os);
  os << kernelText;
  result.scratchElements = parts->batch.upper() * parts->heads *
                           std::min(parts->queries.upper(), kMostSplitQueries) *
                           split->maxSplits * (parts->valueSize + 2);
  if (parts->queries.upper() > kMostSplitQueries) {
    result.queries = parts->queries.getExpr();
    result.mostQueries = kMostSplitQueries;
  }
  return FailureOr<SplitAttention>(std::move(result));
}

} // namespace kiln
