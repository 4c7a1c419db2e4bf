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
//   a gather of each result element from its source element, generated as
//   the elementwise family generates fused data movement (BodyEmitter::getAt).
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