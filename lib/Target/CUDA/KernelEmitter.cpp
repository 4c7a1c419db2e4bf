//===- KernelEmitter.cpp - one kiln.kernel to one CUDA function -----------===//
//
// Three families:
// - elementwise: a grid-stride loop over the result; every body op computes at
//   the result's shape, kernel inputs broadcast into it;
// - reduction: one block per row of the reduced op; the elementwise prologue
//   is recomputed in each pass over the row (cheaper than a round trip through
//   memory), the epilogue runs on each result element;
// - copy: a transpose as a gather over the permuted strides.
// Values are computed in fp32 for every float type, and in their own type for
// integers; f16/bf16 round only where the IR stores or casts.
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

using namespace mlir;

namespace kiln {

namespace {

constexpr int64_t kBlockSize = 256;
constexpr int64_t kMaxGrid = 65535;

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The C type values of `t` are stored as.
std::string storageType(Type t) {
  if (t.isF32())
    return "float";
  if (t.isF16())
    return "__half";
  if (t.isBF16())
    return "__nv_bfloat16";
  if (t.isInteger(1))
    return "bool";
  if (t.isInteger(8))
    return "signed char";
  if (t.isInteger(32))
    return "int";
  return "long long";
}

/// The C type values of `t` are computed in.
std::string computeType(Type t) {
  return isa<FloatType>(t) ? "float" : storageType(t);
}

/// Converts a stored element to its compute type.
std::string loadExpr(Type t, const std::string &element) {
  if (t.isF16())
    return "__half2float(" + element + ")";
  if (t.isBF16())
    return "__bfloat162float(" + element + ")";
  return element;
}

/// Converts a computed value to its storage type.
std::string storeExpr(Type t, const std::string &value) {
  if (t.isF16())
    return "__float2half_rn(" + value + ")";
  if (t.isBF16())
    return "__float2bfloat16_rn(" + value + ")";
  return value;
}

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The offset into an input of shape `arg` that broadcasts into `shape`, at
/// flat index `idx` of `shape`.
std::string broadcastOffset(ArrayRef<int64_t> arg, ArrayRef<int64_t> shape,
                            const std::string &idx) {
  if (arg == shape)
    return idx;
  int64_t count = 1;
  for (int64_t d : arg)
    count *= d;
  if (count == 1)
    return "0";
  SmallVector<int64_t> argStrides = stridesOf(arg);
  SmallVector<int64_t> strides = stridesOf(shape);
  size_t lead = shape.size() - arg.size();
  std::string expr;
  for (size_t d = lead; d < shape.size(); ++d) {
    if (arg[d - lead] == 1)
      continue;
    std::string coord = llvm::formatv("(({0} / {1}LL) % {2}LL)", idx,
                                      strides[d], shape[d]);
    expr += (expr.empty() ? "" : " + ") + coord + " * " +
            std::to_string(argStrides[d - lead]) + "LL";
  }
  return expr.empty() ? "0" : expr;
}

/// Emits the statements of body ops, naming each value once per emission.
class BodyEmitter {
public:
  BodyEmitter(KernelOp kernel, llvm::raw_ostream &os) : kernel(kernel), os(os) {
    for (auto [i, arg] : llvm::enumerate(kernel.getBody().getArguments()))
      argIndex[arg] = i;
  }

  /// Starts a fresh scope: values computed by an earlier pass are forgotten.
  void reset() { names.clear(); }

  /// Binds `value` to the C expression `name`.
  void bind(Value value, const std::string &name) { names[value] = name; }

  /// The C name of `value` computed at flat index `idx` of `shape`; loads
  /// block arguments on first use.
  std::string get(Value value, const std::string &idx, ArrayRef<int64_t> shape,
                  const std::string &indent) {
    auto it = names.find(value);
    if (it != names.end())
      return it->second;
    auto arg = cast<BlockArgument>(value);
    Type et = tensorType(arg).getElementType();
    std::string name = fresh();
    os << indent << computeType(et) << " " << name << " = "
       << loadExpr(et, llvm::formatv("in{0}[{1}]", argIndex[arg],
                                     broadcastOffset(tensorType(arg).getShape(),
                                                     shape, idx)))
       << ";\n";
    names[value] = name;
    return name;
  }

  /// Emits `op` at flat index `idx` of `shape`.
  LogicalResult emit(Operation *op, const std::string &idx,
                     ArrayRef<int64_t> shape, const std::string &indent) {
    SmallVector<std::string> in;
    for (Value operand : op->getOperands())
      in.push_back(get(operand, idx, shape, indent));
    Type et = tensorType(op->getResult(0)).getElementType();
    bool isFloat = isa<FloatType>(et);
    std::string expr;
    if (isa<AddOp>(op))
      expr = in[0] + " + " + in[1];
    else if (isa<SubOp>(op))
      expr = in[0] + " - " + in[1];
    else if (isa<MulOp>(op))
      expr = in[0] + " * " + in[1];
    else if (isa<DivOp>(op))
      // Integer division by zero, and of the most negative value by -1, are
      // undefined in C++ (and trap on x86); Kiln defines them as the
      // reference interpreter does: 0, and wrapping negation.
      expr = isFloat ? in[0] + " / " + in[1]
                     : "(" + in[1] + " == 0 ? (" + computeType(et) + ")0 : " +
                           in[1] + " == -1 ? (" + computeType(et) +
                           ")(0ULL - (unsigned long long)" + in[0] + ") : " +
                           in[0] + " / " + in[1] + ")";
    else if (isa<PowOp>(op))
      expr = "powf(" + in[0] + ", " + in[1] + ")";
    else if (isa<NegOp>(op))
      // Integers negate through unsigned arithmetic: `-x` overflows on the
      // most negative value.
      expr = isFloat ? "-" + in[0]
                     : "(" + computeType(et) + ")(0ULL - (unsigned long long)" +
                           in[0] + ")";
    else if (isa<SqrtOp>(op))
      expr = "sqrtf(" + in[0] + ")";
    else if (isa<ErfOp>(op))
      expr = "erff(" + in[0] + ")";
    else if (isa<TanhOp>(op))
      expr = "tanhf(" + in[0] + ")";
    else if (isa<ExpOp>(op))
      expr = "expf(" + in[0] + ")";
    else if (isa<ReluOp>(op))
      expr = isFloat ? "fmaxf(" + in[0] + ", 0.0f)"
                     : "(" + in[0] + " > 0 ? " + in[0] + " : 0)";
    else if (isa<SigmoidOp>(op))
      expr = "1.0f / (1.0f + expf(-" + in[0] + "))";
    // Elementwise math and comparisons.
    else if (std::optional<std::string> math = mathExpr(op, in))
      expr = *math;
    else if (auto cast = dyn_cast<CastOp>(op))
      expr = castExpr(tensorType(cast.getInput()).getElementType(), et, in[0]);
    else
      return op->emitOpError("has no CUDA elementwise lowering");
    std::string name = fresh();
    os << indent << computeType(et) << " " << name << " = " << expr << ";\n";
    names[op->getResult(0)] = name;
    return success();
  }

  std::string fresh() { return "v" + std::to_string(counter++); }

private:
  /// The C expression of an elementwise math, logic, comparison or choice op
  /// on the operand names `in`; none for other ops. Floats are fp32 values;
  /// integers are their own C type, with wrapping negation and a remainder
  /// by zero of 0 (as the reference interpreter defines them).
  static std::optional<std::string> mathExpr(Operation *op,
                                             ArrayRef<std::string> in) {
    Type et = tensorType(op->getResult(0)).getElementType();
    bool isFloat =
        isa<FloatType>(tensorType(op->getOperand(0)).getElementType());
    std::string x = in[0];
    std::string y = in.size() > 1 ? in[1] : "";
    // `0 - x` through unsigned arithmetic: C's `-x` overflows on the most
    // negative value.
    std::string negated =
        "(" + computeType(et) + ")(0ULL - (unsigned long long)" + x + ")";
    if (isa<ReciprocalOp>(op))
      return "1.0f / " + x;
    if (isa<LogOp>(op))
      return "logf(" + x + ")";
    if (isa<FloorOp>(op))
      return "floorf(" + x + ")";
    if (isa<CeilOp>(op))
      return "ceilf(" + x + ")";
    if (isa<RoundOp>(op))
      // rintf rounds halves to even in the default rounding mode.
      return "rintf(" + x + ")";
    if (isa<SinOp>(op))
      return "sinf(" + x + ")";
    if (isa<CosOp>(op))
      return "cosf(" + x + ")";
    if (isa<SoftsignOp>(op))
      return x + " / (1.0f + fabsf(" + x + "))";
    if (isa<AbsOp>(op))
      return isFloat ? "fabsf(" + x + ")"
                     : "(" + x + " < 0 ? " + negated + " : " + x + ")";
    if (isa<SignOp>(op))
      return isFloat ? "(" + x + " > 0.0f ? 1.0f : " + x +
                           " < 0.0f ? -1.0f : " + x + ")"
                     : "(" + computeType(et) + ")((" + x + " > 0) - (" + x +
                           " < 0))";
    if (isa<NotOp>(op))
      return "!" + x;
    if (auto gelu = dyn_cast<GeluOp>(op)) {
      if (gelu.getApproximate() == GeluApproximation::tanh)
        return "0.5f * " + x + " * (1.0f + tanhf(0.7978845608028654f * (" + x +
               " + 0.044715f * " + x + " * " + x + " * " + x + ")))";
      return "0.5f * " + x + " * (1.0f + erff(" + x +
             " * 0.7071067811865476f))";
    }
    if (isa<IsNaNOp>(op))
      return "(" + x + " != " + x + ")";
    if (auto isInf = dyn_cast<IsInfOp>(op)) {
      std::string positive = "(" + x + " == __int_as_float(0x7f800000))";
      std::string negative = "(" + x + " == __int_as_float(0xff800000))";
      if (isInf.getDetectPositive() && isInf.getDetectNegative())
        return "(" + positive + " || " + negative + ")";
      if (isInf.getDetectPositive())
        return positive;
      if (isInf.getDetectNegative())
        return negative;
      return std::string("false");
    }
    // A NaN operand wins, as in numpy.maximum / numpy.minimum (fmaxf and
    // fminf would drop it).
    if (isa<MaxOp>(op))
      return isFloat ? "(" + x + " != " + x + " || " + x + " > " + y + " ? " +
                           x + " : " + y + ")"
                     : "(" + x + " > " + y + " ? " + x + " : " + y + ")";
    if (isa<MinOp>(op))
      return isFloat ? "(" + x + " != " + x + " || " + x + " < " + y + " ? " +
                           x + " : " + y + ")"
                     : "(" + x + " < " + y + " ? " + x + " : " + y + ")";
    if (auto mod = dyn_cast<ModOp>(op)) {
      if (isFloat)
        return "fmodf(" + x + ", " + y + ")";
      // A divisor of -1 always leaves 0 and would overflow on the most
      // negative dividend.
      std::string rem = "(" + x + " % " + y + ")";
      std::string truncated =
          "(" + y + " == 0 || " + y + " == -1 ? 0 : " + rem + ")";
      if (mod.getFmod())
        return truncated;
      // Python's sign rule: a nonzero remainder takes the divisor's sign.
      return "(" + y + " == 0 || " + y + " == -1 ? 0 : " + rem + " != 0 && (" +
             rem + " < 0) != (" + y + " < 0) ? " + rem + " + " + y + " : " +
             rem + ")";
    }
    if (isa<AndOp>(op))
      return "(" + x + " && " + y + ")";
    if (isa<OrOp>(op))
      return "(" + x + " || " + y + ")";
    if (isa<XorOp>(op))
      return "(" + x + " != " + y + ")";
    if (isa<EqualOp>(op))
      return "(" + x + " == " + y + ")";
    if (isa<LessOp>(op))
      return "(" + x + " < " + y + ")";
    if (isa<LessEqualOp>(op))
      return "(" + x + " <= " + y + ")";
    if (isa<GreaterOp>(op))
      return "(" + x + " > " + y + ")";
    if (isa<GreaterEqualOp>(op))
      return "(" + x + " >= " + y + ")";
    if (isa<WhereOp>(op))
      return "(" + x + " ? " + y + " : " + in[2] + ")";
    return std::nullopt;
  }

  /// A value of compute type `from` as compute type `to`, rounded to `to`'s
  /// storage precision.
  static std::string castExpr(Type from, Type to, const std::string &v) {
    if (to.isInteger(1))
      return "(" + v + " != 0)";
    if (to.isF16())
      return "__half2float(__float2half_rn((float)" + v + "))";
    if (to.isBF16())
      return "__bfloat162float(__float2bfloat16_rn((float)" + v + "))";
    return "(" + computeType(to) + ")" + v;
  }

  KernelOp kernel;
  llvm::raw_ostream &os;
  llvm::DenseMap<Value, std::string> names;
  llvm::DenseMap<Value, unsigned> argIndex;
  int counter = 0;
};

/// `extern "C" __global__ void name(const T *in0, ..., T *out0)`.
void emitSignature(KernelOp kernel, StringRef name, llvm::raw_ostream &os) {
  os << "\nextern \"C\" __global__ void " << name << "(";
  for (auto [i, input] : llvm::enumerate(kernel.getInputs()))
    os << "const " << storageType(tensorType(input).getElementType())
       << " *__restrict__ in" << i << ", ";
  os << storageType(tensorType(kernel.getResult(0)).getElementType())
     << " *__restrict__ out0) {\n";
}

uint32_t gridFor(int64_t elements) {
  return static_cast<uint32_t>(
      std::clamp<int64_t>((elements + kBlockSize - 1) / kBlockSize, 1, kMaxGrid));
}

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
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (tensorType(op.getResult(0)).getShape() != shape)
      return op.emitOpError("computes at another shape than its elementwise "
                            "kernel, which the CUDA target cannot generate");
    if (failed(body.emit(&op, "i", shape, "    ")))
      return failure();
  }
  Value yielded = kernel.getYield().getValues()[0];
  os << "    out0[i] = "
     << storeExpr(resultType.getElementType(), body.get(yielded, "i", shape, "    "))
     << ";\n  }\n}\n";
  LaunchGeometry geometry;
  geometry.grid[0] = gridFor(n);
  geometry.block[0] = kBlockSize;
  return geometry;
}

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
    // Negative indices count from the end; out-of-range ones are clamped
    // (the reference interpreter reports them).
    std::string index = llvm::formatv(
        "kiln_gather_index((long long){0}[(i / {1}LL) % {2}LL], {3}LL)",
        arg(1), inner, count, extent);
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
              ? llvm::formatv("kiln_gather_index((long long){0}[i], {1}LL)",
                              arg(1), data[d])
                    .str()
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
struct RowLayout {
  int64_t rows, length, inner;
};

FailureOr<RowLayout> rowLayout(Operation *reduction) {
  ArrayRef<int64_t> shape =
      tensorType(reduction->getOperand(0)).getShape();
  int64_t first, last;
  if (auto softmax = dyn_cast<SoftmaxOp>(reduction)) {
    first = last = softmax.getAxis();
  } else if (auto norm = dyn_cast<LayerNormOp>(reduction)) {
    first = norm.getAxis();
    last = static_cast<int64_t>(shape.size()) - 1;
  } else {
    ArrayRef<int64_t> axes = cast<ReduceMeanOp>(reduction).getAxes();
    if (axes.empty())
      return reduction->emitOpError("reduces no axes");
    first = axes.front();
    last = axes.back();
    if (last - first + 1 != static_cast<int64_t>(axes.size()))
      return reduction->emitOpError(
          "reduces non-adjacent axes, which the CUDA target cannot generate yet");
  }
  RowLayout layout{1, 1, 1};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < first ? layout.rows : d <= last ? layout.length : layout.inner) *=
        shape[d];
  layout.rows *= layout.inner;
  return layout;
}

FailureOr<LaunchGeometry> emitReduction(KernelOp kernel, StringRef name,
                                        llvm::raw_ostream &os) {
  Block &block = kernel.getBody().front();
  Operation *reduction = nullptr;
  for (Operation &op : block.without_terminator())
    if (isa<SoftmaxOp, LayerNormOp, ReduceMeanOp>(op)) {
      if (reduction)
        return kernel.emitOpError("holds more than one reduction");
      reduction = &op;
    }
  if (!reduction)
    return kernel.emitOpError("reduction kernel without a reduction");
  auto layout = rowLayout(reduction);
  if (failed(layout))
    return failure();

  // Prologue ops come before the reduction, epilogue ops after it.
  Value input = reduction->getOperand(0);
  ArrayRef<int64_t> inShape = tensorType(input).getShape();
  ArrayRef<int64_t> outShape = tensorType(reduction->getResult(0)).getShape();
  SmallVector<Operation *> prologue, epilogue;
  bool after = false;
  for (Operation &op : block.without_terminator()) {
    if (&op == reduction) {
      after = true;
      continue;
    }
    ArrayRef<int64_t> shape = tensorType(op.getResult(0)).getShape();
    if (shape != (after ? outShape : inShape))
      return op.emitOpError("does not compute at its reduction's shape");
    (after ? epilogue : prologue).push_back(&op);
  }

  BodyEmitter body(kernel, os);
  auto emitPrologue = [&](const std::string &indent) -> FailureOr<std::string> {
    body.reset();
    for (Operation *op : prologue)
      if (failed(body.emit(op, "x_idx", inShape, indent)))
        return failure();
    return body.get(input, "x_idx", inShape, indent);
  };
  std::string rowIndex = llvm::formatv(
      "((row / {0}LL) * {1}LL + j) * {0}LL + row % {0}LL", layout->inner,
      layout->length);
  auto loopOpen = [&](const std::string &what) {
    os << "    // " << what << "\n"
       << "    for (long long j = threadIdx.x; j < " << layout->length
       << "LL; j += blockDim.x) {\n"
       << "      long long x_idx = " << rowIndex << ";\n";
  };

  emitSignature(kernel, name, os);
  os << "  __shared__ float scratch[32];\n"
     << "  for (long long row = blockIdx.x; row < " << layout->rows
     << "LL; row += gridDim.x) {\n";
  std::string valueName;
  if (isa<SoftmaxOp>(reduction)) {
    os << "    float row_max = __int_as_float(0xff800000);\n";
    loopOpen("pass 1: the row's maximum, for a stable exponent");
    auto x = emitPrologue("      ");
    if (failed(x))
      return failure();
    os << "      row_max = fmaxf(row_max, " << *x << ");\n    }\n"
       << "    row_max = kiln_block_max(row_max, scratch);\n"
       << "    float row_sum = 0.0f;\n";
    loopOpen("pass 2: the sum of exponents");
    x = emitPrologue("      ");
    if (failed(x))
      return failure();
    os << "      row_sum += expf(" << *x << " - row_max);\n    }\n"
       << "    row_sum = kiln_block_sum(row_sum, scratch);\n";
    loopOpen("pass 3: normalize");
    x = emitPrologue("      ");
    if (failed(x))
      return failure();
    valueName = body.fresh();
    os << "      float " << valueName << " = expf(" << *x
       << " - row_max) / row_sum;\n";
  } else if (auto norm = dyn_cast<LayerNormOp>(reduction)) {
    if (!isa<BlockArgument>(norm.getScale()) ||
        (norm.getBias() && !isa<BlockArgument>(norm.getBias())))
      return norm.emitOpError("needs scale and bias as kernel inputs");
    os << "    float row_sum = 0.0f;\n";
    loopOpen("pass 1: mean");
    auto x = emitPrologue("      ");
    if (failed(x))
      return failure();
    os << "      row_sum += " << *x << ";\n    }\n"
       << "    float mean = kiln_block_sum(row_sum, scratch) / "
       << layout->length << ".0f;\n"
       << "    float row_sq = 0.0f;\n";
    // Two passes over the row: the centered variance loses nothing to
    // cancellation when the mean is large.
    loopOpen("pass 2: variance");
    x = emitPrologue("      ");
    if (failed(x))
      return failure();
    os << "      float centered = " << *x << " - mean;\n"
       << "      row_sq += centered * centered;\n    }\n"
       << "    float inv_std = rsqrtf(kiln_block_sum(row_sq, scratch) / "
       << layout->length << ".0f + " << llvm::formatv("{0:e}", norm.getEpsilon().convertToFloat())
       << "f);\n";
    loopOpen("pass 3: normalize, scale and shift");
    x = emitPrologue("      ");
    if (failed(x))
      return failure();
    std::string scale = body.get(norm.getScale(), "x_idx", inShape, "      ");
    std::string shift =
        norm.getBias() ? body.get(norm.getBias(), "x_idx", inShape, "      ")
                       : "0.0f";
    valueName = body.fresh();
    os << "      float " << valueName << " = (" << *x << " - mean) * inv_std * "
       << scale << " + " << shift << ";\n";
  } else {
    os << "    float row_sum = 0.0f;\n";
    loopOpen("the row's sum");
    auto x = emitPrologue("      ");
    if (failed(x))
      return failure();
    os << "      row_sum += " << *x << ";\n    }\n"
       << "    row_sum = kiln_block_sum(row_sum, scratch);\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      long long out_idx = row;\n";
    valueName = body.fresh();
    os << "      float " << valueName << " = row_sum / " << layout->length
       << ".0f;\n";
  }

  // The epilogue computes at the reduction's result shape.
  std::string outIdx = isa<ReduceMeanOp>(reduction) ? "out_idx" : "x_idx";
  body.reset();
  body.bind(reduction->getResult(0), valueName);
  for (Operation *op : epilogue)
    if (failed(body.emit(op, outIdx, outShape, "      ")))
      return failure();
  Value yielded = kernel.getYield().getValues()[0];
  os << "      out0[" << outIdx << "] = "
     << storeExpr(tensorType(yielded).getElementType(),
                  body.get(yielded, outIdx, outShape, "      "))
     << ";\n    }\n  }\n}\n";

  LaunchGeometry geometry;
  geometry.grid[0] = static_cast<uint32_t>(std::min(layout->rows, kMaxGrid));
  // Short rows get a short block; always whole warps for the reductions.
  geometry.block[0] = static_cast<uint32_t>(
      std::min<int64_t>(kBlockSize, (layout->length + 31) / 32 * 32));
  return geometry;
}

} // namespace

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
  default:
    return kernel.emitOpError("kind ")
           << stringifyKernelKind(kernel.getKind())
           << " has no CUDA generator yet";
  }
}

} // namespace kiln
