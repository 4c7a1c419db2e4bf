//===- PlanBuffers.cpp - the plan's dims, buffers and weights -------------===//
//
// PlanBuilder's storage: the symbolic dims and the bindings of sizes to
// them, a buffer for every value (inputs, weights and splats, arena
// results, reshape views, kernels' scratch), the output aliases of cache
// updates, and the outputs with the copies into those not written in place.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "kiln/ConstantData/HostTensor.h"
#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/Transforms/Passes.h"

using namespace mlir;

namespace kiln::detail {

LogicalResult PlanBuilder::addDims() {
  DimRanges ranges = dimRangesOf(func);
  for (StringRef name : dimNamesOf(func)) {
    auto range = ranges.lookup(name);
    artifact.symbolic.dims.push_back({name.str(), range.first, range.second});
    dimIndex[name] = artifact.symbolic.dims.size() - 1;
  }
  return success();
}

rt::SizeFormula PlanBuilder::formulaOf(const DimExpr &size) {
  rt::SizeFormula formula;
  for (const auto &[monomial, coefficient] : size.getTerms()) {
    rt::SizeTerm term;
    term.coefficient = coefficient;
    for (const std::string &name : monomial)
      term.dims.push_back(dimIndex.lookup(name));
    formula.terms.push_back(std::move(term));
  }
  return formula;
}

void PlanBuilder::bind(rt::SizeField field, uint32_t target, uint32_t axis,
                       const Size &size) {
  if (size.isConstant())
    return;
  rt::SizeBinding binding;
  binding.field = field;
  binding.target = target;
  binding.axis = axis;
  binding.formula = formulaOf(size.getExpr());
  artifact.symbolic.bindings.push_back(std::move(binding));
}

std::string PlanBuilder::argName(size_t i, StringAttr name) {
  return name ? name.str() : "input" + std::to_string(i);
}

FailureOr<uint32_t> PlanBuilder::addBuffer(Value value, rt::BufferKind kind,
                                           uint64_t offset, std::string name) {
  auto type = cast<RankedTensorType>(value.getType());
  Location loc = value.getLoc();
  if (!symbolicShapeOf(type))
    return emitError(loc, "dynamic shape ") << type << " cannot be lowered";
  auto dtype = toRuntimeDType(type.getElementType(), loc);
  if (failed(dtype))
    return failure();
  // A symbolic buffer is stored at the top of the ranges, where memory
  // planning sized it: every dim at its largest at once, which holds for
  // sizes without negative terms.
  Sizes sizes = sizesOf(value);
  std::optional<int64_t> planned = maxElementCount(type, dimRangesOf(func));
  if (isSymbolic(type) && productOf(sizes).upper() != planned)
    return emitError(loc, "cannot lower ")
           << shapeText(type)
           << ": its dims are not all at their largest at once (a size "
              "with a negative term)";
  rt::Buffer buffer;
  buffer.kind = kind;
  buffer.dtype = *dtype;
  buffer.name = std::move(name);
  for (const Size &size : sizes)
    buffer.shape.push_back(size.upper());
  buffer.offset = offset;
  buffer.bytes = productOf(sizes).upper() * rt::dtypeSize(*dtype);
  artifact.buffers.push_back(std::move(buffer));
  uint32_t id = artifact.buffers.size() - 1;
  bufferOf[value] = id;
  for (auto [axis, size] : llvm::enumerate(sizes))
    bind(rt::SizeField::BufferDim, id, axis, size);
  return id;
}

LogicalResult PlanBuilder::addWeight(ConstantOp constant) {
  std::string name = "weight" + std::to_string(weightCount++);
  auto splat = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (splat && splat.isSplat()) {
    auto value = splatValue(constant, splat);
    if (failed(value))
      return failure();
    return addBuffer(constant, rt::BufferKind::Splat, *value, name);
  }
  uint64_t offset =
      (weights.size + kWeightAlign - 1) / kWeightAlign * kWeightAlign;
  auto bytes = weightBytes(constant);
  if (failed(bytes))
    return failure();
  weights.pieces.push_back({offset, *bytes});
  weights.size = offset + bytes->size();
  return addBuffer(constant, rt::BufferKind::Weight, offset, name);
}

FailureOr<uint64_t> PlanBuilder::splatValue(ConstantOp constant,
                                            DenseElementsAttr splat) {
  auto one =
      DenseElementsAttr::get(RankedTensorType::get({1}, splat.getElementType()),
                             splat.getSplatValue<Attribute>());
  auto element = HostTensor::fromElementsAttr(one, constant.getLoc());
  if (failed(element))
    return failure();
  uint64_t value = 0;
  for (auto [i, byte] : llvm::enumerate(element->bytes))
    value |= uint64_t(static_cast<uint8_t>(byte)) << (8 * i);
  return value;
}

FailureOr<ArrayRef<char>> PlanBuilder::weightBytes(ConstantOp constant) {
  auto type = cast<RankedTensorType>(constant.getType());
  if (getHostElementByteWidth(type.getElementType()) > 0)
    if (ArrayRef<char> bytes = storedBytesInPlace(constant.getValue());
        !bytes.empty())
      return bytes;
  // Checked against the type (a resource blob of the wrong size is an
  // error); splats expanded, booleans one byte each.
  auto tensor =
      HostTensor::fromElementsAttr(constant.getValue(), constant.getLoc());
  if (failed(tensor))
    return failure();
  weights.owned.push_back(std::make_unique<std::vector<char>>(
      tensor->bytes.begin(), tensor->bytes.end()));
  return ArrayRef<char>(*weights.owned.back());
}

LogicalResult PlanBuilder::addView(ReshapeOp reshape) {
  const rt::Buffer &source = artifact.buffers[bufferOf.at(reshape.getInput())];
  rt::BufferKind kind = source.kind;
  uint64_t offset = source.offset;
  std::string name = source.name + ".view";
  return addBuffer(reshape, kind, offset, name);
}

LogicalResult PlanBuilder::addResults(Operation *op) {
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
  if (!offsets || offsets.size() != static_cast<int64_t>(op->getNumResults()))
    return op->emitOpError("has no memory plan (run kiln-plan-memory)");
  for (auto [result, offset] :
       llvm::zip(op->getResults(), offsets.asArrayRef())) {
    FailureOr<uint32_t> id =
        offset >= 0 ? addBuffer(result, rt::BufferKind::Arena, offset,
                                "t" + std::to_string(artifact.buffers.size()))
                    : addBuffer(result, rt::BufferKind::Output, -1 - offset,
                                outputName(-1 - offset));
    if (failed(id))
      return failure();
  }
  return success();
}

std::string PlanBuilder::outputName(int64_t i) {
  auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
  return name ? name.str() : "output" + std::to_string(i);
}

LogicalResult PlanBuilder::addAlias(KernelOp kernel) {
  for (auto [yielded, kernelResult] :
       llvm::zip(kernel.getYield().getValues(), kernel.getResults())) {
    auto update = yielded.getDefiningOp<UpdateSliceOp>();
    if (!update)
      continue;
    auto inside = dyn_cast<BlockArgument>(update.getDest());
    auto dest =
        inside
            ? dyn_cast<BlockArgument>(kernel.getInputs()[inside.getArgNumber()])
            : BlockArgument();
    const rt::Buffer &result = artifact.buffers[bufferOf.at(kernelResult)];
    if (!dest || dest.getOwner() != &func.getBody().front() ||
        result.kind != rt::BufferKind::Output)
      return update.emitOpError(
          "updates a graph input into a graph output only (the form "
          "kiln-cache-in-place makes): the CUDA target writes the new rows "
          "into storage they share");
    rt::OutputAlias alias;
    alias.output = result.offset;
    alias.input = dest.getArgNumber();
    alias.axis = update.getAxis();
    artifact.aliases.push_back(alias);
  }
  return success();
}

uint32_t PlanBuilder::addScratch(int64_t elements, rt::DType dtype,
                                 uint64_t after) {
  rt::Buffer buffer;
  buffer.kind = rt::BufferKind::Arena;
  buffer.dtype = dtype;
  buffer.name = "scratch" + std::to_string(artifact.buffers.size());
  buffer.shape = {elements};
  buffer.offset = scratchOffset + after;
  buffer.bytes = elements * rt::dtypeSize(dtype);
  scratchBytes = std::max<uint64_t>(scratchBytes, after + buffer.bytes);
  artifact.buffers.push_back(std::move(buffer));
  return artifact.buffers.size() - 1;
}

LogicalResult PlanBuilder::addOutputs(func::ReturnOp ret) {
  // The artifact lists aliases by output; kernels update the caches in the
  // order the graph computes them, which need not be the outputs' order.
  llvm::sort(artifact.aliases,
             [](const rt::OutputAlias &a, const rt::OutputAlias &b) {
               return a.output < b.output;
             });
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    uint32_t id = bufferOf.at(value);
    const rt::Buffer &buffer = artifact.buffers[id];
    if (buffer.kind == rt::BufferKind::Output && buffer.offset == i) {
      // Possibly a reshape view of the kernel's result: the buffer users
      // see carries the graph output's name and shape.
      artifact.buffers[id].name = outputName(i);
      artifact.outputs.push_back(id);
      continue;
    }
    auto out = addBuffer(value, rt::BufferKind::Output, i, outputName(i));
    if (failed(out))
      return failure();
    // addBuffer rebinds `value`; the copy reads the original buffer.
    bufferOf[value] = id;
    rt::Step step;
    step.kind = rt::Step::Kind::Copy;
    step.copy.src = id;
    step.copy.dst = *out;
    step.copy.bytes = artifact.buffers[*out].bytes;
    artifact.steps.push_back(std::move(step));
    artifact.outputs.push_back(*out);
    Size bytes = productOf(sizesOf(value)) *
                 Size(rt::dtypeSize(artifact.buffers[*out].dtype));
    bind(rt::SizeField::CopyBytes, artifact.steps.size() - 1, 0, bytes);
  }
  return success();
}

} // namespace kiln::detail
