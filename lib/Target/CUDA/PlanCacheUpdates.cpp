//===- PlanCacheUpdates.cpp - a GEMM kernel's cache update ----------------===//
//
// A GEMM kernel over block-quantized weights may end in a decoder's cache
// update (#kiln.gemm_epilogue's cache_update: kiln-fuse merged the rotary
// embedding of the new keys and the writes of the keys and values into
// their caches into the QKV projection's kernel). The packed GEMV runs the
// update in its last block, once every block has stored its share of the
// product: a decoding step's update needs no launch of its own. The paths
// for more rows (the packed GEMM, the weights unpacked for a matmul step)
// run it as a kernel of its own after the product, emitted as the
// elementwise family emits a cache update.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "EmitterSupport.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"

using namespace mlir;

namespace kiln::detail {

namespace {

/// `kernel`'s cache update as an elementwise kernel of its own, created
/// before `kernel` (the caller erases it): its input 0 the product (the
/// kernel's result 0), then the kernel's inputs the update reads, which
/// `inputs` lists as values outside; its results the kernel's others.
KernelOp updateKernelOf(KernelOp kernel, SmallVectorImpl<Value> &inputs) {
  Block &body = kernel.getBody().front();
  ValueRange yielded = kernel.getYield().getValues();
  Value product = yielded.front();
  // The verifier holds the update's ops to those after the product's.
  SmallVector<Operation *> ops;
  for (Operation *op = product.getDefiningOp()->getNextNode();
       op != body.getTerminator(); op = op->getNextNode())
    ops.push_back(op);
  return kernelOfOps(kernel, ops, {{product, kernel.getResult(0)}},
                     blockArgumentsRead(ops), yielded.drop_front(),
                     KernelKind::elementwise, inputs);
}

} // namespace

FailureOr<CacheUpdateTail>
PlanBuilder::cacheUpdateTail(KernelOp kernel, const std::string &name,
                             llvm::raw_ostream &source) {
  SmallVector<Value> inputs;
  KernelOp own = updateKernelOf(kernel, inputs);
  std::string rows = name + "_update_rows";
  SmallVector<std::string> dims;
  LogicalResult emitted = emitCacheUpdateRows(own, rows, source, dims);
  own.erase();
  if (failed(emitted))
    return failure();
  // The GEMV passes its C for the product, then its own parameters for
  // the update's other inputs and its results.
  CacheUpdateTail tail;
  std::string arguments = "c";
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (i == 0)
      continue;
    std::string parameter = "update_in" + std::to_string(i);
    tail.parameters += ", const " +
                       storageType(tensorType(input).getElementType()) +
                       " *__restrict__ " + parameter;
    arguments += ", " + parameter;
    tail.buffers.push_back(bufferOf.at(input));
  }
  for (auto [i, result] : llvm::enumerate(kernel.getResults().drop_front())) {
    std::string parameter = "update_out" + std::to_string(i);
    tail.parameters += ", " + storageType(tensorType(result).getElementType()) +
                       " *__restrict__ " + parameter;
    arguments += ", " + parameter;
    tail.buffers.push_back(bufferOf.at(result));
  }
  for (const std::string &dim : dims)
    arguments += ", " + dim;
  tail.call = rows + "(" + arguments + ", threadIdx.x, blockDim.x);";
  return tail;
}

LogicalResult PlanBuilder::addCacheUpdateKernel(KernelOp kernel,
                                                const std::string &name,
                                                std::optional<DimExpr> when,
                                                llvm::raw_ostream &source) {
  SmallVector<Value> inputs;
  KernelOp own = updateKernelOf(kernel, inputs);
  FailureOr<LaunchGeometry> geometry = emitKernel(own, name, source, options);
  own.erase();
  if (failed(geometry))
    return failure();
  SmallVector<uint32_t> args;
  for (Value input : inputs)
    args.push_back(bufferOf.at(input));
  for (Value result : kernel.getResults().drop_front())
    args.push_back(bufferOf.at(result));
  pushLaunch(kernel, name, *geometry, args);
  if (when)
    guardStep(artifact.steps.size() - 1, *when);
  return success();
}

} // namespace kiln::detail
