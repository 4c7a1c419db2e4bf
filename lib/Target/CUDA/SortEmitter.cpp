//===- SortEmitter.cpp - top-k kernels ------------------------------------===//
//
// A top_k's positions (the importer gathers the values): each element's
// rank is the number of elements that come before it, by value and then
// position, and the first k ranks are the result; the same order as the
// reference interpreter's stable sort. A few long rows split over blocks
// (emitSplitTopK).
//
//===----------------------------------------------------------------------===//

#include "EmitterSupport.h"
#include "RowLayout.h"

using namespace mlir;

namespace kiln {

namespace {

/// Positions a rank loop reads at a time: its exit test (rank reached k)
/// waits for each load, so one position a step would wait a memory
/// latency a step; a group's loads are issued together.
constexpr int64_t kRankGroup = 8;

/// Appends, at `indent`, the rank of candidate (x, candidate): the number
/// of positions `other` in [first, end) whose element beats it (`load`
/// defines `y`, the element, and `position`, its place in the row), counted
/// until it reaches `k` (past which the candidate is not among the k best,
/// and the count may overshoot).
void emitRankLoop(llvm::raw_ostream &os, const std::string &indent,
                  const std::string &first, const std::string &end,
                  const std::string &k, const std::string &better,
                  const std::string &load) {
  os << indent << "long long rank = 0;\n"
     << indent << "for (long long group = " << first << "; group < " << end
     << " && rank < " << k << "; group += " << kRankGroup << ") {\n"
     << "#pragma unroll\n"
     << indent << "  for (int u = 0; u < " << kRankGroup << "; ++u) {\n"
     << indent << "    const long long other = group + u;\n"
     << indent << "    if (other >= " << end << ") break;\n"
     << load << indent << "    rank += " << better
     << "(y, position, x, candidate);\n"
     << indent << "  }\n"
     << indent << "}\n";
}

/// The blocks each row of a top_k of `k` over `in` splits into (splitRows),
/// or 0 where its rows are not split. The last block ranks c = parts x k
/// candidates, each of its kBlockSize threads c / kBlockSize of them over
/// up to c others, where the unsplit kernel's longest walk is the row: a
/// split pays while c^2 / kBlockSize stays within the row's length (a
/// next token's k of 50 over 32,000 logits: 400 candidates; over 16,385
/// elements, k up to 409).
int64_t splitTopKParts(const RowLayout &in, int64_t k) {
  int64_t parts = splitRows(in);
  if (!parts || k > in.length.upper() / parts)
    return 0;
  int64_t candidates = parts * k;
  return candidates * candidates <= in.length.upper() * kBlockSize ? parts : 0;
}

/// A top_k whose long rows split over `parts` blocks each: a candidate's
/// rank counts the elements before it, and a top element's thread walks
/// the whole row, so one block a row takes as long as one thread's walk of
/// a vocabulary (a decoder's next token, kilnc --next-token). Each block
/// ranks its share of the row within the share and writes the share's k
/// best (index and value, at their ranks; index -1 where the share has
/// fewer) to `partials`; the last block of the row to arrive at its
/// counter (as a split reduction's, splitRowParts) ranks those parts x k
/// candidates among themselves. The global k best are each among their
/// share's, and ranks order by value, then position: the result is the
/// unsplit kernel's.
FailureOr<LaunchGeometry> emitSplitTopK(KernelOp kernel, StringRef name,
                                        const RowLayout &in,
                                        const RowLayout &out, Type et,
                                        int64_t k, const std::string &better,
                                        int64_t parts, llvm::raw_ostream &os) {
  std::string type = accumulatorType(et);
  int64_t slots = in.rows.upper() * parts * k;
  std::string kk = std::to_string(k) + "LL";
  os << "// The arrivals at each row of " << name << " (a split top_k).\n"
     << "KILN_PER_CONTEXT unsigned int " << name << "_arrived["
     << in.rows.upper() << "];\n";
  emitSignature(kernel, name, os,
                "long long *__restrict__ out0, long long *__restrict__ "
                "partials");
  os << "  __shared__ bool last_block;\n"
     << "  // Indices, then values, a share's k at a time.\n"
     << "  " << type << " *const values = reinterpret_cast<" << type
     << " *>(partials + " << slots << "LL);\n"
     << "  const long long share = (" << in.length
     << " + gridDim.x - 1) / gridDim.x;\n"
     << "  const long long begin = (long long)blockIdx.x * share;\n"
     << "  const long long end = begin + share < " << in.length
     << " ? begin + share : " << in.length << ";\n"
     << "  for (long long row = blockIdx.y; row < " << in.rows
     << "; row += gridDim.y) {\n"
     << "    long long *const part_index = partials + (row * gridDim.x + "
        "blockIdx.x) * "
     << kk << ";\n"
     << "    " << type
     << " *const part_value = values + (row * gridDim.x + blockIdx.x) * " << kk
     << ";\n"
     << "    for (long long r = threadIdx.x; r < " << kk
     << "; r += blockDim.x) part_index[r] = -1;\n"
     << "    __syncthreads();\n"
     << "    // this share's k best, ranked within it\n"
     << "    for (long long candidate = begin + threadIdx.x; candidate < end; "
        "candidate += blockDim.x) {\n"
     << "      " << type << " x;\n"
     << "      { long long j = candidate; x = (" << type << ")"
     << loadExpr(et, "in0[" + in.inputIndex + "]") << "; }\n";
  std::string loadInput = "          long long j = other;\n"
                          "          const long long position = other;\n"
                          "          const " +
                          type + " y = (" + type + ")" +
                          loadExpr(et, "in0[" + in.inputIndex + "]") + ";\n";
  emitRankLoop(os, "      ", "begin", "end", kk, better, loadInput);
  os << "      if (rank < " << kk << ") {\n"
     << "        part_index[rank] = candidate;\n"
     << "        part_value[rank] = x;\n"
     << "      }\n"
     << "    }\n"
     << "    __threadfence();\n"
     << "    __syncthreads();\n"
     << "    if (threadIdx.x == 0) {\n"
     << "      __threadfence();\n"
     << "      last_block = atomicInc(&" << name
     << "_arrived[row], gridDim.x - 1) == gridDim.x - 1;\n"
     << "      __threadfence();\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "    if (last_block) {\n"
     << "      __threadfence();\n"
     << "      // the row's k best among the shares' (index -1: none)\n"
     << "      const long long count = (long long)gridDim.x * " << kk << ";\n"
     << "      const long long *const row_index = partials + row * count;\n"
     << "      const " << type << " *const row_value = values + row * count;\n"
     << "      for (long long c = threadIdx.x; c < count; c += blockDim.x) {\n"
     << "        const long long candidate = __ldcg(&row_index[c]);\n"
     << "        if (candidate < 0) continue;\n"
     << "        const " << type << " x = __ldcg(&row_value[c]);\n";
  emitRankLoop(os, "        ", "0", "count", kk, better,
               "            const long long position = "
               "__ldcg(&row_index[other]);\n"
               "            const " +
                   type + " y = __ldcg(&row_value[other]);\n");
  os << "        if (rank < " << kk << ") {\n"
     << "          long long j = rank;\n"
     << "          out0[" << out.inputIndex << "] = candidate;\n"
     << "        }\n"
     << "      }\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "  }\n}\n";
  LaunchGeometry geometry;
  geometry.grid[0] = static_cast<uint32_t>(parts);
  setGridDim(geometry, 1, in.rows, 1, kMaxGrid);
  geometry.block[0] = static_cast<uint32_t>(kBlockSize);
  geometry.splitPartials = 2 * slots;
  return geometry;
}

} // namespace

FailureOr<LaunchGeometry> emitSort(KernelOp kernel, StringRef name,
                                   llvm::raw_ostream &os) {
  auto ops = kernel.getBody().front().without_terminator();
  auto topK = dyn_cast<TopKOp>(*ops.begin());
  if (!topK || std::next(ops.begin()) != ops.end() ||
      !isa<BlockArgument>(topK.getInput()))
    return kernel.emitOpError(
        "sort kernels hold exactly one top_k of an input");
  Sizes inShape = sizesOf(topK.getInput());
  int64_t axis = topK.getAxis(), k = topK.getK();
  SmallVector<bool> reduced(inShape.size(), false);
  reduced[axis] = true;
  RowLayout in = rowLayout(inShape, reduced);
  RowLayout out = rowLayout(sizesOf(topK->getResult(0)), reduced);
  Type et = topK.getInput().getType().getElementType();
  std::string type = accumulatorType(et);
  std::string better = std::string("kiln_arg_better<") +
                       (topK.getLargest() ? "true" : "false") + ", false>";
  if (int64_t parts = splitTopKParts(in, k))
    return emitSplitTopK(kernel, name, in, out, et, k, better, parts, os);
  // Each element's rank is the number of elements that come before it; the
  // first k ranks are the result. Quadratic in the row, but with no
  // synchronization and the same order as the reference's stable sort.
  emitSignature(kernel, name, os);
  os << "  for (long long row = blockIdx.x; row < " << in.rows
     << "; row += gridDim.x) {\n"
     << "    for (long long candidate = threadIdx.x; candidate < " << in.length
     << "; candidate += blockDim.x) {\n"
     << "      " << type << " x;\n"
     << "      { long long j = candidate; x = (" << type << ")"
     << loadExpr(et, "in0[" + in.inputIndex + "]") << "; }\n";
  std::string length;
  llvm::raw_string_ostream(length) << in.length;
  emitRankLoop(os, "      ", "0", length, std::to_string(k) + "LL", better,
               "          long long j = other;\n"
               "          const long long position = other;\n"
               "          const " +
                   type + " y = (" + type + ")" +
                   loadExpr(et, "in0[" + in.inputIndex + "]") + ";\n");
  os << "      if (rank < " << k << "LL) {\n"
     << "        long long j = rank;\n"
     << "        out0[" << out.inputIndex << "] = candidate;\n"
     << "      }\n    }\n  }\n}\n";
  LaunchGeometry geometry;
  setGridDim(geometry, 0, in.rows, 1, kMaxGrid);
  geometry.block[0] = static_cast<uint32_t>(rowBlockSize(in.length.upper()));
  return geometry;
}

} // namespace kiln
