//===- KernelEmitter.cpp - one kiln.kernel to one CUDA function -----------===//
//
// The families:
// - elementwise: a grid-stride loop over the result; the body ops compute at
//   the result's shape, kernel inputs broadcast into it, or, when data
//   movement was fused in, each value at the index it is read at. At the
//   result's shape a thread takes several elements with one 128-bit (or
//   narrower) access per full-size input and output when the pointers are
//   aligned for it, then a scalar loop does the tail; indices are 32-bit
//   when they fit; a cache update (kiln.update_slice) loops over its new
//   rows only and stores each past the offset;
// - reduction (ReductionEmitter.cpp): one block per row of the reduced op;
// - sort (ReductionEmitter.cpp): top_k, one block per row;
// - attention (AttentionEmitter.cpp): kiln.attention, one block per query;
// - copy: one data-movement op (transpose, slice, concat, gather, expand) as
//   a gather of each result element from its source element, generated as
//   the elementwise family generates fused data movement (BodyEmitter::getAt).
//
//===----------------------------------------------------------------------===//

#include "EmitterSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace kiln {

/// Bytes of one stored element of `t`.
static int64_t storedBytes(Type t) {
  return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8;
}

/// The unsigned type of `bytes` bytes (a power of two up to 16) that one
/// vector load or store moves: uint4 is a 128-bit access.
static const char *vectorType(int64_t bytes) {
  switch (bytes) {
  case 16:
    return "uint4";
  case 8:
    return "uint2";
  case 4:
    return "unsigned int";
  case 2:
    return "unsigned short";
  default:
    return "unsigned char";
  }
}

/// How the elementwise family reads and writes several elements a thread:
/// each input of the result's shape and the output move `lanes` elements
/// with one access of at most 16 bytes.
struct VectorAccess {
  int64_t lanes = 1;
  /// Kernel inputs of the result's shape (read at the result's index).
  SmallVector<unsigned> fullInputs;
};

/// Picks the lanes: as many as make the widest access 16 bytes, when the
/// size is at least one vector a thread of a full block.
static VectorAccess planVectorAccess(KernelOp kernel) {
  VectorAccess access;
  RankedTensorType result = tensorType(kernel.getResult(0));
  Sizes shape = sizesOf(kernel.getResult(0));
  int64_t widest = storedBytes(result.getElementType());
  for (auto [i, input] : llvm::enumerate(kernel.getInputs()))
    if (sizesOf(input) == shape) {
      access.fullInputs.push_back(i);
      widest =
          std::max(widest, storedBytes(tensorType(input).getElementType()));
    }
  // A symbolic size may be small: its smallest value is not known here, and
  // the scalar loop does whatever the vector loop leaves.
  int64_t lanes = 16 / widest;
  if (lanes >= 2 && productOf(shape).upper() >= lanes * kBlockSize)
    access.lanes = lanes;
  return access;
}

/// The index type of a grid-stride loop over `n` elements (fitsIndex32).
static const char *indexType(const Size &n) {
  return fitsIndex32(n.upper()) ? "int" : "long long";
}

/// `n` in the loop's index type: a symbolic size is computed in 64 bits.
static std::string indexText(const Size &n) {
  if (n.isConstant())
    return n.str32();
  return fitsIndex32(n.upper()) ? "(int)" + n.str() : n.str();
}

/// The vectorized main loop: each iteration loads `lanes` elements of every
/// full input and stores `lanes` results with one access each. Runs only
/// when every such pointer is aligned to its access (the caller's device
/// pointers may not be); the scalar loop does the rest.
static LogicalResult emitVectorLoop(KernelOp kernel, const VectorAccess &access,
                                    llvm::raw_ostream &os) {
  RankedTensorType resultType = tensorType(kernel.getResult(0));
  Sizes shape = sizesOf(kernel.getResult(0));
  Size n = productOf(shape);
  int64_t lanes = access.lanes;
  const char *index = indexType(n);
  Block &block = kernel.getBody().front();
  auto accessBytes = [&](Type t) { return lanes * storedBytes(t); };
  os << "  if (";
  for (unsigned k : access.fullInputs)
    os << "(unsigned long long)in" << k << " % "
       << accessBytes(tensorType(block.getArgument(k)).getElementType())
       << " == 0 && ";
  os << "(unsigned long long)out0 % "
     << accessBytes(resultType.getElementType()) << " == 0) {\n";
  std::string vectors =
      n.isConstant() ? std::to_string(*n.getConstant() / lanes)
                     : "(" + indexText(n) + " / " + std::to_string(lanes) + ")";
  os << "    vectorEnd = "
     << (n.isConstant() ? std::to_string(*n.getConstant() / lanes * lanes)
                        : vectors + " * " + std::to_string(lanes))
     << ";\n";
  os << "    for (" << index << " v = first; v < " << vectors
     << "; v += stride) {\n";
  os << "      " << index << " base = v * " << lanes << ";\n";
  for (unsigned k : access.fullInputs) {
    Type et = tensorType(block.getArgument(k)).getElementType();
    // Aligned for the vector access into it.
    os << "      alignas(16) " << storageType(et) << " l" << k << "[" << lanes
       << "];\n"
       << "      *(" << vectorType(accessBytes(et)) << " *)l" << k
       << " = *(const " << vectorType(accessBytes(et)) << " *)(in" << k
       << " + base);\n";
  }
  os << "      alignas(16) " << storageType(resultType.getElementType())
     << " lo[" << lanes << "];\n";
  os << "#pragma unroll\n";
  os << "      for (int j = 0; j < " << lanes << "; ++j) {\n";
  os << "        " << index << " i = base + j;\n";
  BodyEmitter body(kernel, os);
  for (unsigned k : access.fullInputs) {
    BlockArgument arg = block.getArgument(k);
    Type et = tensorType(arg).getElementType();
    std::string name = body.fresh();
    os << "        " << computeType(et) << " " << name << " = "
       << loadExpr(et, "l" + std::to_string(k) + "[j]") << ";\n";
    body.bind(arg, name);
  }
  for (Operation &op : block.without_terminator())
    if (failed(body.emit(&op, "i", shape, "        ")))
      return failure();
  FailureOr<std::string> value =
      body.get(kernel.getYield().getValues()[0], "i", shape, "        ");
  if (failed(value))
    return failure();
  os << "        lo[j] = " << storeExpr(resultType.getElementType(), *value)
     << ";\n      }\n";
  os << "      *(" << vectorType(accessBytes(resultType.getElementType()))
     << " *)(out0 + base) = *(const "
     << vectorType(accessBytes(resultType.getElementType())) << " *)lo;\n";
  os << "    }\n  }\n";
  return success();
}

/// The signature of a cache update's loop as a device function
/// (emitUpdateSlice's `rowsDims`): emitSignature's parameters, input 0
/// not `__restrict__` (its caller writes it), with only the dims its loop
/// reads, then the first thread and the threads that share the loop.
static void emitRowsSignature(KernelOp kernel, StringRef name,
                              ArrayRef<std::string> dims,
                              llvm::raw_ostream &os) {
  os << "\n__device__ __forceinline__ void " << name << "("
     << inputParameters(kernel, /*firstWritten=*/true)
     << resultParameters(kernel);
  for (const std::string &dim : dims)
    os << ", long long " << dim;
  os << ", long long first_thread, long long threads) {\n";
}

/// A cache update (kiln.update_slice): a grid-stride loop over the new
/// rows, each element computed through the fused producers and stored at
/// its place past the offset (and its start). The destination's other rows
/// are not touched: its storage is the result's (the C ABI's output alias).
/// Two updates that write alike (kiln-fuse's pairCacheUpdates: a layer's
/// key and value caches, with one offset and one starts value) share the
/// loop and its row, each element of each stored in its own result.
/// As a device function (with `rowsDims`, which it fills with the dim
/// parameters its loop reads), the loop is a function of the kernel's
/// parameters (input 0 read through L2) and of its first thread and stride,
/// which a GEMM's last block calls (emitCacheUpdateRows).
static FailureOr<LaunchGeometry>
emitUpdateSlice(KernelOp kernel, UpdateSliceOp update, StringRef name,
                llvm::raw_ostream &os,
                SmallVectorImpl<std::string> *rowsDims = nullptr) {
  SmallVector<UpdateSliceOp> updates;
  for (Value yielded : kernel.getYield().getValues()) {
    auto other = yielded.getDefiningOp<UpdateSliceOp>();
    bool alike = other == update ||
                 (other && other.getAxis() == update.getAxis() &&
                  other.getOffset() == update.getOffset() &&
                  other.getStarts() == update.getStarts() &&
                  sizesOf(other.getUpdate()) == sizesOf(update.getUpdate()) &&
                  sizesOf(other.getDest()) == sizesOf(update.getDest()));
    if (!alike)
      return kernel.emitOpError("yields cache updates that do not write "
                                "alike (one shape, axis, offset and "
                                "starts)");
    updates.push_back(other);
  }
  Sizes rows = sizesOf(update.getUpdate()), dest = sizesOf(update.getDest());
  int64_t axis = update.getAxis();
  std::string error;
  std::optional<DimExpr> offsetExpr = DimExpr::parse(update.getOffset(), error);
  auto func = kernel->getParentOfType<func::FuncOp>();
  std::optional<int64_t> offsetUpper =
      offsetExpr
          ? upperBound(*offsetExpr, func ? dimRangesOf(func) : DimRanges())
          : std::nullopt;
  if (!offsetExpr || !offsetUpper)
    return update.emitOpError("offset '")
           << update.getOffset() << "' has no bounded value";
  Size offset(*offsetExpr, *offsetUpper);
  Size n = productOf(rows);
  Size inner = productOf(ArrayRef<Size>(rows).drop_front(axis + 1));
  // Every index is below the destination's size, the largest formed here.
  const char *index = indexType(productOf(dest));
  // The loop first: a device function takes the dims it reads alone.
  std::string loop;
  llvm::raw_string_ostream code(loop);
  BodyEmitter body(kernel, code);
  if (rowsDims) {
    body.loadThroughL2(0);
    code << "  const " << index << " first = (" << index << ")first_thread;\n"
         << "  const " << index << " stride = (" << index << ")threads;\n";
  } else {
    code << "  const " << index << " first = (" << index
         << ")blockIdx.x * blockDim.x + threadIdx.x;\n"
         << "  const " << index << " stride = (" << index
         << ")gridDim.x * blockDim.x;\n";
  }
  code << "  for (" << index << " i = first; i < " << indexText(n)
       << "; i += stride) {\n";
  // The row written: the offset plus, with starts, the element's start,
  // which comes from the data: a row outside dest is not written.
  std::string row;
  if (Value starts = update.getStarts()) {
    auto start =
        body.getAt(starts, broadcastOffset(sizesOf(starts), rows, "i"), "    ");
    if (failed(start))
      return failure();
    code << "    const long long row = (long long)" << offset
         << " + (long long)" << *start << " + (long long)((i / " << inner
         << ") % " << rows[axis] << ");\n";
    code << "    if (row < 0 || row >= (long long)" << dest[axis]
         << ") continue;\n";
    row = "(" + std::string(index) + ")row";
  } else {
    llvm::raw_string_ostream(row)
        << "(" << offset << " + (i / " << inner << ") % " << rows[axis] << ")";
  }
  SmallVector<std::string> values;
  for (UpdateSliceOp each : updates) {
    auto value = body.getAt(each.getUpdate(), "i", "    ");
    if (failed(value))
      return failure();
    values.push_back(*value);
  }
  code << "    const " << index << " at = (i / " << rows[axis] * inner << ") * "
       << dest[axis] * inner << " + " << row << " * " << inner << " + i % "
       << inner << ";\n";
  for (auto [n, each] : llvm::enumerate(updates))
    code << "    out" << n << "[at] = "
         << storeExpr(tensorType(each.getResult()).getElementType(), values[n])
         << ";\n";
  code << "  }\n}\n";
  if (rowsDims) {
    for (StringRef dim : dimNamesOf(func))
      if (namesIdentifier(loop, dimParameterName(dim)))
        rowsDims->push_back(dimParameterName(dim));
    emitRowsSignature(kernel, name, *rowsDims, os);
  } else {
    emitSignature(kernel, name, os);
  }
  os << loop;
  LaunchGeometry geometry;
  setGridDim(geometry, 0, n, kBlockSize, kMaxGrid);
  geometry.block[0] = kBlockSize;
  return geometry;
}

LogicalResult emitCacheUpdateRows(KernelOp kernel, StringRef name,
                                  llvm::raw_ostream &os,
                                  SmallVectorImpl<std::string> &dims) {
  auto update = kernel.getYield().getValues()[0].getDefiningOp<UpdateSliceOp>();
  if (!update)
    return kernel.emitOpError("yields no cache update first");
  return emitUpdateSlice(kernel, update, name, os, &dims);
}

/// Whether `result` is a one-element result of an elementwise kernel that
/// loops over `shape`, more than one element: written once, apart from the
/// loop.
static bool isSideScalar(Value result, const Sizes &shape) {
  Sizes sizes = sizesOf(result);
  return sizes != shape && llvm::all_of(sizes, [](const Size &s) {
           return s.isConstant() && *s.getConstant() == 1;
         });
}

FailureOr<LaunchGeometry> emitElementwise(KernelOp kernel, StringRef name,
                                          llvm::raw_ostream &os) {
  if (auto update =
          kernel.getYield().getValues()[0].getDefiningOp<UpdateSliceOp>())
    return emitUpdateSlice(kernel, update, name, os);
  Sizes shape = sizesOf(kernel.getResult(0));
  Size n = productOf(shape);
  const char *index = indexType(n);
  emitSignature(kernel, name, os);
  auto ops = kernel.getBody().front().without_terminator();
  bool atResultIndex = llvm::all_of(ops, [&](Operation &op) {
    return isElementwise(&op) && sizesOf(op.getResult(0)) == shape;
  });
  os << "  const " << index << " first = (" << index
     << ")blockIdx.x * blockDim.x + threadIdx.x;\n"
     << "  const " << index << " stride = (" << index
     << ")gridDim.x * blockDim.x;\n"
     << "  " << index << " vectorEnd = 0;\n";
  // Every op at the result's index: vector accesses where they are aligned
  // (one result; a second is stored element by element).
  ValueRange yields = kernel.getYield().getValues();
  auto sideScalars =
      llvm::count_if(yields, [&](Value v) { return isSideScalar(v, shape); });
  VectorAccess access =
      atResultIndex && kernel.getNumResults() == 1 + sideScalars
          ? planVectorAccess(kernel)
          : VectorAccess();
  if (access.lanes > 1 && failed(emitVectorLoop(kernel, access, os)))
    return failure();
  os << "  for (" << index << " i = vectorEnd + first; i < " << indexText(n)
     << "; i += stride) {\n";
  // Stores the results `side` picks (the one-element ones, or the others)
  // at `index`, each computed by `body`; with data movement inside, each
  // value at the index it is read at, from the result back to the inputs.
  auto store = [&](BodyEmitter &body, bool side,
                   const std::string &index) -> LogicalResult {
    for (auto [number, yielded] : llvm::enumerate(yields)) {
      if (isSideScalar(yielded, shape) != side)
        continue;
      FailureOr<std::string> value =
          atResultIndex && !side ? body.get(yielded, index, shape, "    ")
                                 : body.getAt(yielded, index, "    ");
      if (failed(value))
        return failure();
      os << "    out" << number << "[" << index
         << "] = " << storeExpr(tensorType(yielded).getElementType(), *value)
         << ";\n";
    }
    return success();
  };
  BodyEmitter body(kernel, os);
  if (atResultIndex)
    // Every op at the result's index, in order.
    for (Operation &op : ops)
      if (failed(body.emit(&op, "i", shape, "    ")))
        return failure();
  if (failed(store(body, /*side=*/false, "i")))
    return failure();
  os << "  }\n";
  // One-element results (kiln-fuse's mergeScalarKernels): computed and
  // written once, by the grid's first thread, from the kernel's inputs.
  if (sideScalars) {
    os << "  if (first == 0) {\n";
    BodyEmitter scalars(kernel, os);
    if (failed(store(scalars, /*side=*/true, "0")))
      return failure();
    os << "  }\n";
  }
  os << "}\n";
  LaunchGeometry geometry;
  setGridDim(geometry, 0, n, access.lanes * kBlockSize, kMaxGrid);
  geometry.block[0] = kBlockSize;
  return geometry;
}

FailureOr<LaunchGeometry> emitCopy(KernelOp kernel, StringRef name,
                                   llvm::raw_ostream &os) {
  auto ops = kernel.getBody().front().without_terminator();
  Operation *op = &*ops.begin();
  if (std::next(ops.begin()) != ops.end() ||
      !llvm::all_of(op->getOperands(), llvm::IsaPred<BlockArgument>))
    return kernel.emitOpError("copy kernels hold exactly one data-movement op "
                              "of their inputs");
  // The element each result index reads is what the elementwise family
  // computes for fused data movement: one generator for both.
  return emitElementwise(kernel, name, os);
}

FailureOr<LaunchGeometry> emitKernel(KernelOp kernel, StringRef name,
                                     llvm::raw_ostream &os,
                                     const CudaEmitOptions &options) {
  // A row norm's kernel may also write its input (kiln-fuse's
  // sharedNormInput), a cache update's the other cache (pairCacheUpdates),
  // an elementwise kernel more results of its shape (pairScalarKernels,
  // mergeSiblingKernels) and one-element results (mergeScalarKernels);
  // every other kernel writes one result.
  bool elementwise = kernel.getKind() == KernelKind::elementwise;
  bool updates =
      elementwise &&
      kernel.getYield().getValues()[0].getDefiningOp<UpdateSliceOp>();
  // An elementwise kernel's one-element results after its first, where
  // that has more elements (mergeScalarKernels), are written apart.
  unsigned sideScalars =
      elementwise && !updates
          ? llvm::count_if(kernel.getYield().getValues(),
                           [&](Value v) {
                             return isSideScalar(v,
                                                 sizesOf(kernel.getResult(0)));
                           })
          : 0;
  unsigned loopResults = kernel.getNumResults() - sideScalars;
  bool alike =
      elementwise && !updates && loopResults >= 2 &&
      llvm::all_of(kernel.getResults().take_front(loopResults), [&](Value v) {
        return sizesOf(v) == sizesOf(kernel.getResult(0));
      });
  unsigned most = (alike ? loopResults
                   : kernel.getKind() == KernelKind::reduction || updates ? 2
                                                                          : 1) +
                  sideScalars;
  if (kernel.getNumResults() < 1 || kernel.getNumResults() > most)
    return kernel.emitOpError("has ")
           << kernel.getNumResults() << " results; the CUDA target needs "
           << (most == 1 ? "one" : "one or two");
  for (Value v : kernel.getInputs())
    if (!symbolicShapeOf(tensorType(v)))
      return kernel.emitOpError("has a dynamic shape without its sizes");
  switch (kernel.getKind()) {
  case KernelKind::elementwise:
    return emitElementwise(kernel, name, os);
  case KernelKind::reduction:
    return emitReduction(kernel, name, os);
  case KernelKind::copy:
    return emitCopy(kernel, name, os);
  case KernelKind::sort:
    return emitSort(kernel, name, os);
  case KernelKind::attention:
    return emitAttention(kernel, name, os, options);
  default:
    return kernel.emitOpError("kind ") << stringifyKernelKind(kernel.getKind())
                                       << " has no CUDA generator yet";
  }
}

} // namespace kiln