//===- AttentionEmitter.cpp - kiln.attention as one kernel ----------------===//
//
// Flash-attention style, in its simplest form: one block per query row walks
// the keys in tiles of blockDim.x with an online softmax (running maximum and
// sum, earlier partial results rescaled when the maximum grows), accumulating
// in fp32; the Sq x Sk scores never reach memory. Each thread scores one key
// of the tile, then owns a few output features. The operands' in-kernel
// producers (reshapes, transposes and slices of a packed projection, a bias
// add) are computed at each element read, so head splitting costs no copy;
// a transpose of the result (heads merged back) becomes the store index.
// 16-bit operands take the tensor-core generator instead
// (AttentionTensorCoreEmitter.cpp); with few query rows either one also
// splits the keys across blocks (AttentionSplitEmitter.cpp).
//
//===----------------------------------------------------------------------===//

#include "AttentionParts.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace kiln {

FailureOr<AttentionParts> readAttention(KernelOp kernel) {
  Block &body = kernel.getBody().front();
  AttentionParts parts;
  AttentionOp &attention = parts.attention;
  for (Operation &op : body.without_terminator())
    if (auto found = dyn_cast<AttentionOp>(op)) {
      if (attention)
        return kernel.emitOpError("holds more than one kiln.attention");
      attention = found;
    }
  if (!attention)
    return kernel.emitOpError("attention kernel without a kiln.attention");
  // The result is the attention's, or a transpose of it (heads merged back
  // in sequence-major order), written at the transposed index.
  Value yielded = kernel.getYield().getValues()[0];
  auto outTranspose = yielded.getDefiningOp<TransposeOp>();
  if (yielded != attention.getResult() &&
      (!outTranspose || outTranspose.getInput() != attention.getResult()))
    return kernel.emitOpError("must yield its attention or a transpose of it");

  // Batch and lengths may be symbolic; heads and head sizes size arrays and
  // divide, so they are static.
  Sizes q = sizesOf(attention.getQuery()), k = sizesOf(attention.getKey()),
        v = sizesOf(attention.getValue());
  if (!q[1].isConstant() || !q[3].isConstant() || !k[1].isConstant() ||
      !v[3].isConstant())
    return kernel.emitOpError("attention with a symbolic number of heads or "
                              "head size is not supported by the CUDA target");
  parts.heads = *q[1].getConstant();
  parts.size = *q[3].getConstant();
  parts.kvHeads = *k[1].getConstant();
  parts.valueSize = *v[3].getConstant();
  parts.batch = q[0];
  parts.queries = q[2];
  parts.keys = k[2];

  // Mask element (b, h, i, j) under broadcasting: stride 0 on size-1 dims.
  if (Value mask = attention.getMask()) {
    Sizes m = sizesOf(mask);
    Sizes strides(4, Size(0));
    int64_t lead = 4 - static_cast<int64_t>(m.size());
    Size stride = 1;
    for (int64_t d = 3; d >= lead; --d) {
      strides[d] = m[d - lead] == 1 ? Size(0) : stride;
      stride *= m[d - lead];
    }
    parts.maskIndex =
        llvm::formatv("b * {0} + h * {1} + i * {2} + j * {3}", strides[0],
                      strides[1], strides[2], strides[3]);
  }
  // Where output feature d of row (b, h, i) is stored.
  parts.outIndex = llvm::formatv("row * {0}LL + d", parts.valueSize);
  if (outTranspose) {
    Sizes outStrides = stridesOf(sizesOf(outTranspose.getResult()));
    const char *coords[] = {"b", "h", "i", "d"};
    parts.outIndex = "0";
    for (auto [r, p] : llvm::enumerate(outTranspose.getPermutation()))
      parts.outIndex += llvm::formatv(" + {0} * {1}", coords[p], outStrides[r]);
    parts.outFeaturesInnermost = outTranspose.getPermutation().back() == 3;
  }

  // The sink logit of head h: a literal, or a table with one per head.
  ArrayRef<float> sinks = attention.getSink().value_or(ArrayRef<float>());
  parts.hasSink = !sinks.empty();
  parts.sinkValue = "neg_inf";
  if (sinks.size() == 1) {
    parts.sinkValue = floatLiteral(sinks[0]);
  } else if (!sinks.empty()) {
    // Static: one table in global memory. A local array indexed by the
    // head would be copied into each thread's local memory.
    parts.sinkTable = "  static const float sink_logits[] = {";
    for (auto [n, v] : llvm::enumerate(sinks))
      parts.sinkTable += (n ? ", " : "") + floatLiteral(v);
    parts.sinkTable += "};\n";
    parts.sinkValue = "sink_logits[h]";
  }
  return parts;
}

FailureOr<LaunchGeometry> emitAttention(KernelOp kernel, StringRef name,
                                        llvm::raw_ostream &os,
                                        const CudaEmitOptions &options) {
  FailureOr<AttentionParts> parts = readAttention(kernel);
  if (failed(parts))
    return failure();
  if (auto tensorCores =
          emitTensorCoreAttention(kernel, *parts, nullptr, name, os, options))
    return *tensorCores;
  return emitScalarAttention(kernel, *parts, nullptr, name, os);
}

FailureOr<LaunchGeometry> emitScalarAttention(KernelOp kernel,
                                              const AttentionParts &parts,
                                              const KeySplit *split,
                                              StringRef name,
                                              llvm::raw_ostream &os) {
  AttentionOp attention = parts.attention;
  int64_t heads = parts.heads, size = parts.size, kvHeads = parts.kvHeads,
          valueSize = parts.valueSize;
  Size queries = parts.queries, keys = parts.keys;
  Size rows = parts.batch * heads * queries;
  int64_t block = std::clamp<int64_t>((keys.upper() + 31) / 32 * 32, 32, 128);
  int64_t perThread = (valueSize + block - 1) / block;
  BodyEmitter values(kernel, os);
  // Loads `operand` (computing its in-kernel producers) at a flat index of
  // its [B, H, S, D] shape.
  auto load = [&](Value operand, const std::string &index,
                  const std::string &indent) -> FailureOr<std::string> {
    values.reset();
    return values.getAt(operand, index, indent);
  };
  const std::string &maskIndex = parts.maskIndex, &outIndex = parts.outIndex,
                    &sinkTable = parts.sinkTable, &sinkValue = parts.sinkValue;
  bool hasSink = parts.hasSink;

  if (split)
    emitSignature(kernel, name, os, splitOutputParameters(kernel));
  else
    emitSignature(kernel, name, os);
  if (!split)
    os << sinkTable;
  os << "  __shared__ float q_row[" << std::max<int64_t>(size, 1) << "];\n"
     << "  __shared__ float weights[" << block << "];\n"
     << "  __shared__ float scratch[32];\n"
     << "  const float neg_inf = __int_as_float(0xff800000);\n";
  // This block's keys: all, or its split's.
  os << keyRangeText(split, keys, "y");
  os << "  for (long long row = blockIdx.x; row < " << rows
     << "; row += gridDim.x) {\n"
     << "    long long i = row % " << queries << ";\n"
     << "    long long h = (row / " << queries << ") % " << heads << "LL;\n"
     << "    long long b = row / " << queries * heads << ";\n"
     << "    // Grouped-query attention: query head h reads key/value head\n"
     << "    // h / (heads / kv heads).\n"
     << "    long long kv = b * " << kvHeads << "LL + h / " << heads / kvHeads
     << "LL;\n"
     << "    __syncthreads();\n"
     << "    for (long long d = threadIdx.x; d < " << size
     << "LL; d += blockDim.x) {\n";
  auto queryValue = load(attention.getQuery(),
                         "row * " + std::to_string(size) + "LL + d", "      ");
  if (failed(queryValue))
    return failure();
  os << "      q_row[d] = " << *queryValue << ";\n    }\n"
     << "    __syncthreads();\n"
     << "    // A sink starts the normalization as one more logit (a split\n"
     << "    // leaves it to the combine).\n"
     << "    float running_max = " << (split ? "neg_inf" : sinkValue)
     << ", running_sum = " << (hasSink && !split ? "1.0f" : "0.0f") << ";\n"
     << "    float acc[" << perThread << "];\n"
     << "    for (int r = 0; r < " << perThread << "; ++r) acc[r] = 0.0f;\n"
     << "    for (long long tile = key_begin; tile < key_end; tile += "
     << block << "LL) {\n"
     << "      long long j = tile + threadIdx.x;\n"
     << "      float score = neg_inf;\n"
     << "      if (j < key_end) {\n"
     << "        float dot = 0.0f;\n"
     << "        for (long long d = 0; d < " << size << "LL; ++d) {\n";
  auto keyValue = load(attention.getKey(),
                       llvm::formatv("(kv * {0} + j) * {1}LL + d", keys, size),
                       "          ");
  if (failed(keyValue))
    return failure();
  os << "          dot += q_row[d] * " << *keyValue << ";\n        }\n"
     << "        score = "
     << floatLiteral(attention.getScale().convertToFloat()) << " * dot;\n";
  if (float softcap = attention.getSoftcap().convertToFloat(); softcap > 0.0f) {
    std::string cap = floatLiteral(softcap);
    os << "        score = " << cap << " * tanhf(score / " << cap << ");\n";
  }
  if (Value mask = attention.getMask()) {
    auto maskValue = load(mask, maskIndex, "        ");
    if (failed(maskValue))
      return failure();
    os << "        score += " << *maskValue << ";\n";
  }
  os << "      }\n"
     << "      float tile_max = kiln_block_max(score, scratch);\n"
     << "      float new_max = fmaxf(running_max, tile_max);\n"
     << "      // Rows masked with -inf so far contribute nothing (and no NaN).\n"
     << "      float weight = new_max == neg_inf ? 0.0f : expf(score - new_max);\n"
     << "      float rescale = running_max == neg_inf ? 0.0f : expf(running_max - new_max);\n"
     << "      running_sum = running_sum * rescale + kiln_block_sum(weight, scratch);\n"
     << "      running_max = new_max;\n"
     << "      __syncthreads();\n"
     << "      weights[threadIdx.x] = weight;\n"
     << "      __syncthreads();\n"
     << "      long long count = key_end - tile < " << block
     << "LL ? key_end - tile : " << block << "LL;\n"
     << "      for (int r = 0; r < " << perThread << "; ++r) {\n"
     << "        long long d = threadIdx.x + r * " << block << "LL;\n"
     << "        if (d >= " << valueSize << "LL) break;\n"
     << "        float sum = 0.0f;\n"
     << "        for (long long t = 0; t < count; ++t) {\n";
  auto valueValue = load(attention.getValue(),
                         llvm::formatv("(kv * {0} + tile + t) * {1}LL + d",
                                       keys, valueSize),
                         "          ");
  if (failed(valueValue))
    return failure();
  os << "          sum += weights[t] * " << *valueValue << ";\n        }\n"
     << "        acc[r] = acc[r] * rescale + sum;\n"
     << "      }\n"
     << "    }\n";
  if (split) {
    os << "    float *partial = partials + (row * splits + blockIdx.y) * "
       << valueSize + 2 << "LL;\n"
       << "    for (int r = 0; r < " << perThread << "; ++r) {\n"
       << "      long long d = threadIdx.x + r * " << block << "LL;\n"
       << "      if (d < " << valueSize << "LL) partial[d] = acc[r];\n"
       << "    }\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      partial[" << valueSize << "] = running_max;\n"
       << "      partial[" << valueSize + 1 << "] = running_sum;\n"
       << "    }\n"
       << splitFinishText(*split, name, "row", "row", "row + 1", "    ")
       << "  }\n}\n";
    LaunchGeometry geometry;
    setGridDim(geometry, 0, rows, 1, kMaxGrid);
    setGridDim(geometry, 1, keys, split->chunk, split->maxSplits);
    geometry.block[0] = static_cast<uint32_t>(block);
    return geometry;
  }
  os << "    for (int r = 0; r < " << perThread << "; ++r) {\n"
     << "      long long d = threadIdx.x + r * " << block << "LL;\n"
     << "      if (d < " << valueSize << "LL)\n"
     << "        out0[" << outIndex
     << "] = " << normalizedOutput(attention, "acc[r]", "running_sum") << ";\n"
     << "    }\n  }\n}\n";
  LaunchGeometry geometry;
  setGridDim(geometry, 0, rows, 1, kMaxGrid);
  geometry.block[0] = static_cast<uint32_t>(block);
  return geometry;
}

} // namespace kiln
