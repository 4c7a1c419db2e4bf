//===- EmitPlan.cpp - planned kiln IR to CUDA C++ and a runtime Plan ------===//

#include "kiln/Target/CUDA/EmitPlan.h"

#include "EmitterSupport.h"
#include "KernelEmitter.h"
#include "kiln/ConstantData/HostTensor.h"
#include "kiln/ConstantData/RuntimeDType.h"
#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/RowBias.h"
#include "kiln/Dialect/Kiln/MappedWeights.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;

namespace kiln {

namespace {

/// Weights are aligned like arena buffers, for vector loads and cuBLASLt.
constexpr uint64_t kWeightAlign = 256;

/// Builds the artifact's buffers and steps while walking the function.
class PlanBuilder {
public:
  PlanBuilder(func::FuncOp func, rt::Artifact &artifact, StepOrigins *origins,
              WeightTable &weights, const CudaEmitOptions &options,
              KernelConfigs *configs)
      : func(func), artifact(artifact), origins(origins), weights(weights),
        options(options), checkIndices(options.checkIndices),
        allowTf32(options.allowTf32), configs(configs) {}

  LogicalResult build() {
    Block &body = func.getBody().front();
    auto arenaBytes = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
    if (!arenaBytes)
      return func.emitError("memory is not planned (run kiln-plan-memory)");
    artifact.arenaBytes = arenaBytes.getInt();
    scratchOffset =
        (artifact.arenaBytes + kWeightAlign - 1) / kWeightAlign * kWeightAlign;
    if (failed(addDims()))
      return failure();
    if (checkIndices)
      numberIndexSites();

    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      auto id = addBuffer(
          arg, rt::BufferKind::Input, i,
          argName(i, func.getArgAttrOfType<StringAttr>(i, kNameAttr)));
      if (failed(id))
        return failure();
      artifact.inputs.push_back(*id);
    }

    llvm::raw_string_ostream source(artifact.cudaSource);
    bool needsHalfTypes = false;
    func.walk([&](Operation *op) {
      for (Type t : op->getResultTypes())
        if (auto tensor = dyn_cast<RankedTensorType>(t))
          needsHalfTypes |= tensor.getElementType().isF16() ||
                            tensor.getElementType().isBF16();
    });
    for (Type t : func.getArgumentTypes())
      needsHalfTypes |= cast<RankedTensorType>(t).getElementType().isF16() ||
                        cast<RankedTensorType>(t).getElementType().isBF16();
    // 16-bit operands go to the tensor cores, and fp32 ones as TF32 where
    // allowed.
    source << cudaPrelude(needsHalfTypes, needsHalfTypes || allowTf32);
    for (Operation &op : body) {
      size_t stepsBefore = artifact.steps.size();
      if (failed(addOp(op, source)))
        return failure();
      if (origins)
        for (size_t i = stepsBefore; i < artifact.steps.size(); ++i)
          origins->push_back(onnxNodesOf(op));
    }
    if (scratchBytes)
      artifact.arenaBytes = scratchOffset + scratchBytes;
    return success();
  }

private:
  /// The function's symbolic dims, in the order the kernels take them.
  LogicalResult addDims() {
    DimRanges ranges = dimRangesOf(func);
    for (StringRef name : dimNamesOf(func)) {
      auto range = ranges.lookup(name);
      artifact.symbolic.dims.push_back({name.str(), range.first, range.second});
      dimIndex[name] = artifact.symbolic.dims.size() - 1;
    }
    return success();
  }

  /// `size` as the runtime evaluates it: each name as its dim's index.
  rt::SizeFormula formulaOf(const DimExpr &size) {
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

  /// Records that field `axis` of `target` follows `size`, when it is
  /// symbolic.
  void bind(rt::SizeField field, uint32_t target, uint32_t axis,
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

  /// Gives every gather inside a kernel a run-time index check: a site number
  /// (kIndexSiteAttr) that its kernel records when an index is out of range,
  /// and an entry in artifact.indexSites naming its ONNX node for the error.
  void numberIndexSites() {
    func.walk([&](Operation *op) {
      if (!isa<GatherOp, GatherElementsOp>(op) ||
          !op->getParentOfType<KernelOp>())
        return;
      int64_t axis = isa<GatherOp>(op) ? cast<GatherOp>(op).getAxis()
                                       : cast<GatherElementsOp>(op).getAxis();
      Size extent = sizesOf(op->getOperand(0))[axis];
      std::string site;
      llvm::raw_string_ostream os(site);
      SmallVector<StringRef> nodes = onnxNodeNames(op->getLoc());
      os << "ONNX node ";
      if (nodes.empty())
        os << "(unnamed)";
      else
        os << "'" << nodes.front() << "'";
      os << " (" << op->getName().stripDialect() << " over a dim of "
         << extent.getExpr().str() << ")";
      artifact.indexSites.push_back(site);
      op->setAttr(kIndexSiteAttr,
                  IntegerAttr::get(IntegerType::get(op->getContext(), 32),
                                   artifact.indexSites.size()));
    });
  }

  LogicalResult addOp(Operation &op, llvm::raw_ostream &source) {
    {
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        if (failed(addWeight(constant)))
          return failure();
      } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        if (failed(addView(reshape)))
          return failure();
      } else if (auto kernel = dyn_cast<KernelOp>(op)) {
        if (failed(kernel.getKind() == KernelKind::gemm
                       ? addGemm(kernel)
                       : addLaunch(kernel, source)))
          return failure();
      } else if (auto matmul = dyn_cast<MatmulOp>(op)) {
        if (failed(addMatmul(matmul)))
          return failure();
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        if (failed(addOutputs(ret)))
          return failure();
      } else {
        return op.emitOpError("is not lowered by the CUDA target; expected it "
                              "inside a kiln.kernel (run kiln-fuse)");
      }
    }
    return success();
  }

  /// The ONNX node names in the locations of `op` and the ops nested in it
  /// (the importer names each op after its node), first appearance first.
  static std::vector<std::string> onnxNodesOf(Operation &op) {
    std::vector<std::string> names;
    llvm::StringSet<> seen;
    op.walk([&](Operation *inner) {
      for (StringRef name : onnxNodeNames(inner->getLoc()))
        if (seen.insert(name).second)
          names.push_back(name.str());
    });
    return names;
  }

  std::string argName(size_t i, StringAttr name) {
    return name ? name.str() : "input" + std::to_string(i);
  }

  FailureOr<uint32_t> addBuffer(Value value, rt::BufferKind kind,
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

  LogicalResult addWeight(ConstantOp constant) {
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

  /// A splat's element as a Splat buffer holds it: its bytes, least
  /// significant first, in a u64. The runtime fills the storage, so a
  /// constant of any shape costs nothing here (ConstantOfShape of a hostile
  /// shape must not cost gigabytes of memory or of artifact).
  FailureOr<uint64_t> splatValue(ConstantOp constant, DenseElementsAttr splat) {
    auto one = DenseElementsAttr::get(
        RankedTensorType::get({1}, splat.getElementType()),
        splat.getSplatValue<Attribute>());
    auto element = HostTensor::fromElementsAttr(one, constant.getLoc());
    if (failed(element))
      return failure();
    uint64_t value = 0;
    for (auto [i, byte] : llvm::enumerate(element->bytes))
      value |= uint64_t(static_cast<uint8_t>(byte)) << (8 * i);
    return value;
  }

  /// The bytes of a constant as the runtime stores them: a resource blob's
  /// own bytes when they are already in that form (no copy of a large
  /// weight), else converted into `weights.owned`.
  FailureOr<ArrayRef<char>> weightBytes(ConstantOp constant) {
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

  /// A reshape reads and writes nothing: a second buffer over the same bytes.
  LogicalResult addView(ReshapeOp reshape) {
    const rt::Buffer &source =
        artifact.buffers[bufferOf.at(reshape.getInput())];
    rt::BufferKind kind = source.kind;
    uint64_t offset = source.offset;
    std::string name = source.name + ".view";
    return addBuffer(reshape, kind, offset, name);
  }

  /// Buffers for the results of an op that memory planning placed.
  LogicalResult addResults(Operation *op) {
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

  std::string outputName(int64_t i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
    return name ? name.str() : "output" + std::to_string(i);
  }

  /// A cache update kernel writes only its new rows: the rest of its result
  /// is its destination's, which must be the same storage. So the update
  /// goes from a graph input into a graph output, which the artifact
  /// records as an alias (the caller's one buffer for both, or a copy).
  LogicalResult addAlias(KernelOp kernel) {
    auto update =
        kernel.getYield().getValues()[0].getDefiningOp<UpdateSliceOp>();
    if (!update)
      return success();
    auto inside = dyn_cast<BlockArgument>(update.getDest());
    auto dest =
        inside
            ? dyn_cast<BlockArgument>(kernel.getInputs()[inside.getArgNumber()])
            : BlockArgument();
    const rt::Buffer &result =
        artifact.buffers[bufferOf.at(kernel.getResult(0))];
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
    return success();
  }

  LogicalResult addLaunch(KernelOp kernel, llvm::raw_ostream &source) {
    std::string name = "kiln_" +
                       std::string(stringifyKernelKind(kernel.getKind())) +
                       "_" + std::to_string(artifact.kernelNames.size());
    auto split = emitSplitAttention(kernel, name, source, options);
    if (split && failed(*split))
      return failure();
    // The whole kernel, unless the keys are always split.
    std::optional<LaunchGeometry> whole;
    if (!split || (*split)->queries) {
      auto geometry = emitKernel(kernel, name, source, options);
      if (failed(geometry))
        return failure();
      whole = *geometry;
    }
    if (failed(addResults(kernel)) || failed(addAlias(kernel)))
      return failure();
    SmallVector<uint32_t> args;
    for (Value input : kernel.getInputs())
      args.push_back(bufferOf.at(input));
    uint32_t result = bufferOf.at(kernel.getResult(0));
    if (whole) {
      args.push_back(result);
      pushLaunch(name, *whole, args);
      args.pop_back();
    }
    if (!split)
      return success();
    // The split's steps, and which form runs at the run's query length:
    // the split while it is at most mostQueries (clamp(most + 1 - queries,
    // 0, 1)), the whole kernel past it.
    const SplitAttention &keys = **split;
    uint32_t scratch = addScratch(keys.scratchElements);
    args.push_back(scratch);
    pushLaunch(keys.splitName, keys.split, args);
    pushLaunch(keys.combineName, keys.combine, {scratch, result});
    if (keys.queries) {
      DimExpr most = DimExpr::constant(keys.mostQueries);
      DimExpr past = *DimExpr::sub(*keys.queries, most);
      DimExpr within =
          *DimExpr::sub(DimExpr::constant(keys.mostQueries + 1), *keys.queries);
      size_t last = artifact.steps.size() - 1;
      guardStep(last - 2, past);
      guardStep(last - 1, within);
      guardStep(last, within);
    }
    return success();
  }

  /// A buffer of `elements` floats of scratch memory, past the planned
  /// arena: the scratch of every kernel starts there (one kernel runs at a
  /// time), and the arena grows by the largest.
  uint32_t addScratch(int64_t elements) {
    rt::Buffer buffer;
    buffer.kind = rt::BufferKind::Arena;
    buffer.dtype = rt::DType::F32;
    buffer.name = "scratch" + std::to_string(artifact.buffers.size());
    buffer.shape = {elements};
    buffer.offset = scratchOffset;
    buffer.bytes = elements * sizeof(float);
    scratchBytes = std::max<uint64_t>(scratchBytes, buffer.bytes);
    artifact.buffers.push_back(std::move(buffer));
    return artifact.buffers.size() - 1;
  }

  /// Step `step` runs only where `condition` is at least 1.
  void guardStep(size_t step, const DimExpr &condition) {
    rt::SizeBinding binding;
    binding.field = rt::SizeField::StepRuns;
    binding.target = step;
    binding.formula = formulaOf(condition);
    binding.lowest = 0;
    binding.highest = 1;
    artifact.symbolic.bindings.push_back(std::move(binding));
  }

  /// Appends a launch of kernel `name` over `args`, with a binding for each
  /// symbolic grid dim.
  void pushLaunch(const std::string &name, const LaunchGeometry &geometry,
                  ArrayRef<uint32_t> args) {
    rt::Step step;
    step.kind = rt::Step::Kind::Launch;
    step.launch.kernel = artifact.kernelNames.size();
    for (int i = 0; i < 3; ++i) {
      step.launch.grid[i] = geometry.grid[i];
      step.launch.block[i] = geometry.block[i];
    }
    step.launch.sharedBytes = geometry.sharedBytes;
    step.launch.args.assign(args.begin(), args.end());
    if (configs && geometry.attention)
      configs->push_back({name, *geometry.attention});
    artifact.kernelNames.push_back(name);
    artifact.steps.push_back(std::move(step));
    for (auto [axis, grid] : llvm::enumerate(geometry.symbolicGrid)) {
      if (!grid)
        continue;
      rt::SizeBinding binding;
      binding.field = rt::SizeField::LaunchGrid;
      binding.target = artifact.steps.size() - 1;
      binding.axis = axis;
      binding.formula = formulaOf(grid->elements);
      binding.divisor = grid->perBlock;
      binding.lowest = 1;
      binding.highest = grid->highest;
      artifact.symbolic.bindings.push_back(std::move(binding));
    }
  }

  /// One loop over batch matrices: how many, and the elements between
  /// consecutive matrices of A, B and C (0 when the operand broadcasts).
  struct BatchLevel {
    Size count = 1;
    Size stride[3] = {0, 0, 0};
  };

  /// The batch dims of `op` as at most two levels (the plan's inner and
  /// outer batch). Adjacent dims merge into one level when every operand
  /// continues its stride across them (or broadcasts over both), so
  /// [2, 3] x [2, 3] is one level and [2, 1] x [1, 3] two.
  FailureOr<SmallVector<BatchLevel, 2>> batchLevels(MatmulOp op) {
    Sizes result = sizesOf(op.getResult());
    Sizes shapes[3] = {sizesOf(op.getLhs()), sizesOf(op.getRhs()), result};
    size_t batchRank = result.size() - 2;
    SmallVector<BatchLevel, 2> levels;
    Size contiguous[3];
    for (int x = 0; x < 3; ++x)
      contiguous[x] = shapes[x].back() * shapes[x][shapes[x].size() - 2];
    for (size_t j = batchRank; j-- > 0;) {
      if (result[j] == 1)
        continue;
      BatchLevel dim;
      dim.count = result[j];
      for (int x = 0; x < 3; ++x) {
        // Operands are aligned to the result from the right.
        size_t fromEnd = result.size() - j;
        bool present = shapes[x].size() >= fromEnd &&
                       shapes[x][shapes[x].size() - fromEnd] != 1;
        dim.stride[x] = present ? contiguous[x] : Size(0);
        if (present)
          contiguous[x] *= result[j];
      }
      if (!levels.empty()) {
        BatchLevel &inner = levels.back();
        bool continues = llvm::all_of(llvm::seq(0, 3), [&](int x) {
          return dim.stride[x] == inner.stride[x] * inner.count;
        });
        if (continues) {
          inner.count *= dim.count;
          continue;
        }
      }
      levels.push_back(dim);
    }
    if (levels.size() > 2)
      return op.emitOpError("batch dims broadcast in more than two patterns "
                            "are not supported by the CUDA target yet");
    return levels;
  }

  /// A cuBLASLt step and its extents and strides as sizes, in the order of
  /// rt::SizeField::MatmulField's fields.
  struct MatmulPlan {
    rt::MatmulStep step;
    Size sizes[rt::kMatmulFields] = {1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0};
  };

  /// Appends `plan`'s step, its fields at the top of the ranges, with a
  /// binding for each symbolic one.
  void pushMatmul(MatmulPlan &plan) {
    rt::MatmulStep &m = plan.step;
    std::array<int64_t *, rt::kMatmulFields> fields = rt::matmulFields(m);
    for (unsigned f = 0; f < rt::kMatmulFields; ++f)
      *fields[f] = plan.sizes[f].upper();
    artifact.steps.push_back(rt::Step::ofMatmul(m));
    for (unsigned f = 0; f < rt::kMatmulFields; ++f)
      bind(rt::SizeField::MatmulField, artifact.steps.size() - 1, f,
           plan.sizes[f]);
  }

  LogicalResult addMatmul(MatmulOp op) {
    if (failed(addResults(op)))
      return failure();
    auto plan = matmulPlan(op);
    if (failed(plan))
      return failure();
    plan->step.a = bufferOf.at(op.getLhs());
    plan->step.b = bufferOf.at(op.getRhs());
    plan->step.c = bufferOf.at(op.getResult());
    pushMatmul(*plan);
    return success();
  }

  /// A GEMM kernel (kiln-fuse) is one cuBLASLt call: its matmul, then the
  /// bias and the activation it applies in its epilogue (reshapes between
  /// them are views).
  LogicalResult addGemm(KernelOp kernel) {
    Block &body = kernel.getBody().front();
    auto ops = body.without_terminator();
    auto it = ops.begin();
    auto matmul = it == ops.end() ? MatmulOp() : dyn_cast<MatmulOp>(*it++);
    if (!matmul)
      return kernel.emitOpError("of kind gemm must start with kiln.matmul");
    if (kernel.getNumResults() != 1)
      return kernel.emitOpError("has ")
             << kernel.getNumResults() << " results; the CUDA target needs one";
    for (Value v : matmul->getOperands())
      if (!symbolicShapeOf(tensorType(v)))
        return kernel.emitOpError("has a dynamic shape without its sizes");
    // Block argument i is kernel input i.
    auto inputOf = [&](Value v) -> FailureOr<uint32_t> {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &body)
        return failure();
      return bufferOf.at(kernel.getInputs()[arg.getArgNumber()]);
    };
    auto plan = matmulPlan(matmul);
    auto a = inputOf(matmul.getLhs()), b = inputOf(matmul.getRhs());
    if (failed(plan) || failed(a) || failed(b))
      return kernel.emitOpError("of kind gemm needs a matmul of its inputs");
    rt::MatmulStep *step = &plan->step;
    step->a = *a;
    step->b = *b;
    Value last = matmul.getResult();
    // A bias is one row, added to every row (isRowBias, as kiln-fuse took
    // it).
    if (it != ops.end())
      if (auto add = dyn_cast<AddOp>(*it);
          add &&
          isRowBias(add.getLhs() == last ? add.getRhs() : add.getLhs(), last)) {
        Value biasValue = add.getLhs() == last ? add.getRhs() : add.getLhs();
        auto bias = inputOf(biasValue);
        if (failed(bias) || add.getType() != matmul.getType())
          return kernel.emitOpError("of kind gemm adds something other than "
                                    "a bias input");
        step->bias = *bias;
        last = add.getResult();
        ++it;
      }
    // Reshapes move no data: the step writes the kernel's (reshaped)
    // result in the product's element order.
    auto skipReshapes = [&]() {
      while (it != ops.end() && isa<ReshapeOp>(*it) &&
             it->getOperand(0) == last)
        last = (it++)->getResult(0);
    };
    skipReshapes();
    // A residual of the result's shape: beta = 1 over it, read in the
    // product's element order as the result is written.
    if (it != ops.end())
      if (auto add = dyn_cast<AddOp>(*it);
          add && add.getLhs().getType() == add.getRhs().getType() &&
          (add.getLhs() == last || add.getRhs() == last)) {
        auto residual =
            inputOf(add.getLhs() == last ? add.getRhs() : add.getLhs());
        if (failed(residual))
          return kernel.emitOpError("of kind gemm adds a residual that is not "
                                    "one of its inputs");
        step->residual = *residual;
        step->beta = 1.0f;
        last = add.getResult();
        ++it;
        skipReshapes();
      }
    if (it != ops.end()) {
      if (isa<ReluOp>(*it) && it->getOperand(0) == last) {
        step->activation = rt::MatmulActivation::Relu;
      } else if (auto gelu = dyn_cast<GeluOp>(*it);
                 gelu && gelu.getInput() == last) {
        step->activation = rt::MatmulActivation::Gelu;
      } else {
        return kernel.emitOpError("of kind gemm has an epilogue op cuBLASLt "
                                  "does not compute: ")
               << it->getName();
      }
      last = it->getResult(0);
      ++it;
    }
    if (it != ops.end() || kernel.getYield().getValues().front() != last)
      return kernel.emitOpError("of kind gemm must yield its last epilogue op");
    if (failed(addResults(kernel)))
      return failure();
    step->c = bufferOf.at(kernel.getResult(0));
    pushMatmul(*plan);
    return success();
  }

  /// The cuBLASLt step of `op`'s shapes (operand buffers left to the
  /// caller).
  FailureOr<MatmulPlan> matmulPlan(MatmulOp op) {
    auto resultType = op.getType();
    Sizes shape = sizesOf(op.getResult());
    MatmulPlan plan;
    rt::MatmulStep &step = plan.step;
    auto dtype = toRuntimeDType(resultType.getElementType(), op.getLoc());
    if (failed(dtype))
      return failure();
    // cuBLASLt (and the host backend's GEMM) multiply float matrices only.
    if (!rt::isFloatDType(*dtype)) {
      op.emitOpError("integer matmul is not supported by the CUDA target, "
                     "got element type ")
          << resultType.getElementType();
      return failure();
    }
    step.dtype = *dtype;
    step.tf32 = allowTf32 && *dtype == rt::DType::F32;
    step.transA = op.getTransposeLhs();
    step.transB = op.getTransposeRhs();
    auto &[batch, m, n, k, strideA, strideB, strideC, outerBatch, outerStrideA,
           outerStrideB, outerStrideC] = plan.sizes;
    m = shape[shape.size() - 2];
    n = shape[shape.size() - 1];
    Sizes lhs = sizesOf(op.getLhs());
    k = lhs[lhs.size() - (step.transA ? 2 : 1)];
    auto levels = batchLevels(op);
    if (failed(levels))
      return failure();
    BatchLevel inner = levels->empty() ? BatchLevel() : (*levels)[0];
    BatchLevel outer = levels->size() < 2 ? BatchLevel() : (*levels)[1];
    // A symbolic batch may be 1 at run time; its stride is m * n then too.
    bool batched = inner.count.upper() > 1;
    batch = inner.count;
    strideA = inner.stride[0];
    strideB = inner.stride[1];
    strideC = batched ? inner.stride[2] : m * n;
    outerBatch = outer.count;
    outerStrideA = outer.stride[0];
    outerStrideB = outer.stride[1];
    outerStrideC = outer.stride[2];
    // A batch of row-major A matrices, one after the other, times one B is
    // one GEMM of batch x m rows: what a linear layer over [b, s, h] is.
    // cuBLASLt tiles one tall matrix better than many short ones (decode
    // steps of a batch are m = 1 each).
    if (batched && outerBatch == 1 && strideB == 0 && !step.transA &&
        strideA == m * k && strideC == m * n) {
      m = m * batch;
      batch = 1;
      strideA = 0;
      strideC = m * n;
    }
    step.alpha = 1.0f;
    step.beta = 0.0f;
    return plan;
  }

  /// Outputs that memory planning could not write in place (graph inputs,
  /// weights, or a buffer returned twice) are copied at the end.
  LogicalResult addOutputs(func::ReturnOp ret) {
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

  func::FuncOp func;
  rt::Artifact &artifact;
  StepOrigins *origins;
  llvm::DenseMap<Value, uint32_t> bufferOf;
  /// Each symbolic dim's index in artifact.symbolic.dims.
  llvm::StringMap<uint32_t> dimIndex;
  WeightTable &weights;
  const CudaEmitOptions &options;
  bool checkIndices;
  bool allowTf32;
  KernelConfigs *configs;
  int weightCount = 0;
  /// Where kernels' scratch memory starts (past the planned arena), and the
  /// most any kernel takes.
  uint64_t scratchOffset = 0;
  uint64_t scratchBytes = 0;
};

} // namespace

std::string modelHashOf(const rt::Artifact &artifact,
                        uint64_t weightsChecksum) {
  // The splats' values are in neither the source nor the weights; a model
  // that differs only in one of them is another model.
  std::string splats;
  for (const rt::Buffer &b : artifact.buffers)
    if (b.kind == rt::BufferKind::Splat)
      splats += std::to_string(b.offset) + ":" + std::to_string(b.bytes) + ";";
  uint64_t hash = llvm::xxh3_64bits(artifact.cudaSource) ^
                  llvm::xxh3_64bits(splats) * 17 ^ weightsChecksum * 31;
  return llvm::utohexstr(hash, /*LowerCase=*/true);
}

void WeightTable::materialize(std::string &out) const {
  out.assign(size, '\0');
  for (const Piece &piece : pieces)
    if (!piece.bytes.empty()) // An empty weight's bytes may be null.
      std::memcpy(out.data() + piece.offset, piece.bytes.data(),
                  piece.bytes.size());
}

LogicalResult emitPlan(func::FuncOp func, rt::Artifact &artifact,
                       WeightTable &weights, StepOrigins *origins,
                       const CudaEmitOptions &options, KernelConfigs *configs) {
  return PlanBuilder(func, artifact, origins, weights, options, configs)
      .build();
}

} // namespace kiln
