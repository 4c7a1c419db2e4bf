//===- KernelEmitter.cpp - one kiln.kernel to one CUDA function -----------===//
//
// The families:
// - elementwise: a grid-stride loop over the result; the body ops compute at
//   the result's shape, kernel inputs broadcast into it, or, when data
//   movement was fused in, each value at the index it is read at;
// - reduction (ReductionEmitter.cpp): one block per row of the reduced op;
// - sort (ReductionEmitter.cpp): top_k, one block per row;
// - attention (AttentionEmitter.cpp): kiln.attention, one block per query;
// - copy: one data-movement op (transpose, slice, concat, gather, expand) as
//   a gather of each result element from its source element.
//
//===----------------------------------------------------------------------===//

#include "EmitterSupport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace kiln {

FailureOr<LaunchGeometry> emitElementwise(KernelOp kernel, StringRef name,
                                          llvm::raw_ostream &os) {
  RankedTensorType resultType = tensorType(kernel.getResult(0));
  ArrayRef<int64_t> shape = resultType.getShape();
  int64_t n = resultType.getNumElements();
  emitSignature(kernel, name, os);
  os << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
        "i < "
     << n << "LL; i += (long long)gridDim.x * blockDim.x) {\n";
  BodyEmitter body(kernel, os);
  Value yielded = kernel.getYield().getValues()[0];
  auto ops = kernel.getBody().front().without_terminator();
  std::string value;
  if (llvm::all_of(ops, [&](Operation &op) {
        return isElementwise(&op) &&
               tensorType(op.getResult(0)).getShape() == shape;
      })) {
    // Every op at the result's index, in order.
    for (Operation &op : ops)
      if (failed(body.emit(&op, "i", shape, "    ")))
        return failure();
    value = body.get(yielded, "i", shape, "    ");
  } else {
    // Data movement inside: each value at the index it is read at, from
    // the result back to the kernel's inputs.
    auto computed = body.getAt(yielded, "i", "    ");
    if (failed(computed))
      return failure();
    value = *computed;
  }
  os << "    out0[i] = " << storeExpr(resultType.getElementType(), value)
     << ";\n  }\n}\n";
  LaunchGeometry geometry;
  geometry.grid[0] = gridFor(n);
  geometry.block[0] = kBlockSize;
  return geometry;
}

namespace {

/// `(i / stride) % size`: the coordinate of flat result index `i` along a
/// dim with that row-major stride and size.
std::string coordinate(int64_t stride, int64_t size) {
  return llvm::formatv("((i / {0}LL) % {1}LL)", stride, size);
}

/// The C expression reading the element of the copy `op` that lands at flat
/// result index `i`; `arg(k)` names the kernel parameter of operand k.
FailureOr<std::string>
copySource(Operation *op, function_ref<std::string(unsigned)> arg) {
  ArrayRef<int64_t> shape = tensorType(op->getResult(0)).getShape();
  SmallVector<int64_t> outStrides = stridesOf(shape);
  auto sum = [](SmallVector<std::string> terms) {
    std::string text;
    for (const std::string &t : terms)
      text += (text.empty() ? "" : " + ") + t;
    return text.empty() ? std::string("0") : text;
  };
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    SmallVector<int64_t> inStrides =
        stridesOf(transpose.getInput().getType().getShape());
    SmallVector<std::string> terms;
    for (auto [d, p] : llvm::enumerate(transpose.getPermutation()))
      terms.push_back(llvm::formatv("{0} * {1}LL",
                                    coordinate(outStrides[d], shape[d]),
                                    inStrides[p]));
    return arg(0) + "[" + sum(terms) + "]";
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    SmallVector<int64_t> inStrides =
        stridesOf(slice.getInput().getType().getShape());
    SmallVector<std::string> terms;
    for (size_t d = 0; d < shape.size(); ++d)
      terms.push_back(llvm::formatv(
          "({0}LL + {1} * {2}LL) * {3}LL", slice.getStarts()[d],
          coordinate(outStrides[d], shape[d]), slice.getStrides()[d],
          inStrides[d]));
    return arg(0) + "[" + sum(terms) + "]";
  }
  if (auto expand = dyn_cast<ExpandOp>(op)) {
    ArrayRef<int64_t> in = expand.getInput().getType().getShape();
    SmallVector<int64_t> inStrides = stridesOf(in);
    size_t lead = shape.size() - in.size();
    SmallVector<std::string> terms;
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] != 1)
        terms.push_back(llvm::formatv("{0} * {1}LL",
                                      coordinate(outStrides[lead + d],
                                                 shape[lead + d]),
                                      inStrides[d]));
    return arg(0) + "[" + sum(terms) + "]";
  }
  if (auto gather = dyn_cast<GatherOp>(op)) {
    ArrayRef<int64_t> data = gather.getData().getType().getShape();
    int64_t axis = gather.getAxis(), extent = data[axis], inner = 1;
    for (size_t d = axis + 1; d < data.size(); ++d)
      inner *= data[d];
    int64_t count = gather.getIndices().getType().getNumElements();
    std::string index = gatherIndexExpr(
        gather, llvm::formatv("{0}[(i / {1}LL) % {2}LL]", arg(1), inner, count),
        extent);
    return llvm::formatv("{0}[((i / {1}LL) * {2}LL + {3}) * {4}LL + i % {4}LL]",
                         arg(0), count * inner, extent, index, inner)
        .str();
  }
  if (auto gather = dyn_cast<GatherElementsOp>(op)) {
    ArrayRef<int64_t> data = gather.getData().getType().getShape();
    SmallVector<int64_t> dataStrides = stridesOf(data);
    int64_t axis = gather.getAxis();
    SmallVector<std::string> terms;
    for (size_t d = 0; d < shape.size(); ++d) {
      std::string coord =
          static_cast<int64_t>(d) == axis
              ? gatherIndexExpr(gather, arg(1) + "[i]", data[d])
              : coordinate(outStrides[d], shape[d]);
      terms.push_back(llvm::formatv("{0} * {1}LL", coord, dataStrides[d]));
    }
    return arg(0) + "[" + sum(terms) + "]";
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    int64_t axis = concat.getAxis(), inner = 1;
    for (size_t d = axis + 1; d < shape.size(); ++d)
      inner *= shape[d];
    std::string a = coordinate(inner, shape[axis]);
    std::string outer = llvm::formatv("(i / {0}LL)", shape[axis] * inner);
    // A chain of conditionals, one per input, by the coordinate on the axis.
    std::string text;
    int64_t offset = 0;
    for (auto [k, input] : llvm::enumerate(concat.getInputs())) {
      int64_t extent = tensorType(input).getDimSize(axis);
      std::string read = llvm::formatv(
          "{0}[({1} * {2}LL + ({3} - {4}LL)) * {5}LL + i % {5}LL]", arg(k),
          outer, extent, a, offset, inner);
      offset += extent;
      bool last = k + 1 == concat.getInputs().size();
      text += last ? read
                   : llvm::formatv("{0} < {1}LL ? {2} : ", a, offset, read)
                         .str();
    }
    return "(" + text + ")";
  }
  return op->emitOpError("is not a copy the CUDA target can generate");
}

} // namespace

FailureOr<LaunchGeometry> emitCopy(KernelOp kernel, StringRef name,
                                   llvm::raw_ostream &os) {
  auto ops = kernel.getBody().front().without_terminator();
  Operation *op = &*ops.begin();
  if (std::next(ops.begin()) != ops.end() ||
      !llvm::all_of(op->getOperands(), llvm::IsaPred<BlockArgument>))
    return kernel.emitOpError("copy kernels hold exactly one data-movement op "
                              "of their inputs");
  auto source = copySource(op, [&](unsigned k) {
    return "in" + std::to_string(
                      cast<BlockArgument>(op->getOperand(k)).getArgNumber());
  });
  if (failed(source))
    return failure();
  RankedTensorType resultType = tensorType(op->getResult(0));
  int64_t n = resultType.getNumElements();
  emitSignature(kernel, name, os);
  os << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
        "i < "
     << n << "LL; i += (long long)gridDim.x * blockDim.x)\n"
     << "    out0[i] = " << *source << ";\n}\n";
  LaunchGeometry geometry;
  geometry.grid[0] = gridFor(n);
  geometry.block[0] = kBlockSize;
  return geometry;
}

/// How a reduction walks its input: `rows` rows of `length` elements, element
/// j of row r at flat index ((r / inner) * length + j) * inner + r % inner.

FailureOr<LaunchGeometry> emitKernel(KernelOp kernel, StringRef name,
                                     llvm::raw_ostream &os) {
  if (kernel.getNumResults() != 1)
    return kernel.emitOpError("has ") << kernel.getNumResults()
                                      << " results; the CUDA target needs one";
  for (Value v : kernel.getInputs())
    if (!tensorType(v).hasStaticShape())
      return kernel.emitOpError("has a dynamic shape");
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
    return emitAttention(kernel, name, os);
  default:
    return kernel.emitOpError("kind ")
           << stringifyKernelKind(kernel.getKind())
           << " has no CUDA generator yet";
  }
}

} // namespace kiln