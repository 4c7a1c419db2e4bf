//===- BodyEmitter.cpp - fused ops to C statements ------------------------===//
//
// Values are computed in fp64 for f64, in fp32 for the other float types and
// in their own type for integers; f16/bf16 round only where the IR stores or
// casts. Integer arithmetic wraps modulo 2^width through unsigned C types
// (signed overflow is undefined in C), and unsigned types divide, take
// remainders and order as unsigned values, as the reference interpreter
// defines them.
//
// Why one file of this length: one switch over every fusable op (the C
// expression of each), which every kernel family shares; splitting it by op
// family would put the scoping rules of get/getAt (above each) apart from
// the cases that depend on them.
//
//===----------------------------------------------------------------------===//

#include "EmitterSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/APInt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace kiln {

/// The C type values of `t` are stored as.
std::string storageType(Type t) {
  if (t.isF64())
    return "double";
  if (t.isF32())
    return "float";
  if (t.isF16())
    return "__half";
  if (t.isBF16())
    return "__nv_bfloat16";
  if (t.isInteger(1))
    return "bool";
  if (isa<Float8E4M3FNType, Float8E5M2Type>(t))
    return "unsigned char";
  if (auto integer = dyn_cast<IntegerType>(t)) {
    bool isUnsigned = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 4: // One a byte.
    case 8:
      return isUnsigned ? "unsigned char" : "signed char";
    case 16:
      return isUnsigned ? "unsigned short" : "short";
    case 32:
      return isUnsigned ? "unsigned int" : "int";
    case 64:
      return isUnsigned ? "unsigned long long" : "long long";
    }
  }
  llvm_unreachable("element type outside the kiln dialect's");
}

/// The C type values of `t` are computed in.
std::string computeType(Type t) {
  return isa<FloatType>(t) ? FloatSpelling(t).type() : storageType(t);
}

/// Converts a stored element to its compute type.
std::string loadExpr(Type t, const std::string &element) {
  if (t.isF16())
    return "__half2float(" + element + ")";
  if (t.isBF16())
    return "__bfloat162float(" + element + ")";
  if (isa<Float8E4M3FNType>(t))
    return "kiln_f8e4m3_to_float(" + element + ")";
  if (isa<Float8E5M2Type>(t))
    return "kiln_f8e5m2_to_float(" + element + ")";
  // A 4-bit value is its byte's low four bits: Kiln writes it
  // sign-extended, NumPy's ml_dtypes may not.
  if (t.isSignlessInteger(4))
    return "kiln_wrap_i4(" + element + ")";
  if (t.isUnsignedInteger(4))
    return "kiln_wrap_u4(" + element + ")";
  return element;
}

/// Converts a computed value to its storage type.
std::string storeExpr(Type t, const std::string &value) {
  if (t.isF16())
    return "__float2half_rn(" + value + ")";
  if (t.isBF16())
    return "__float2bfloat16_rn(" + value + ")";
  if (isa<Float8E4M3FNType>(t))
    return "kiln_float_to_f8e4m3(" + value + ")";
  if (isa<Float8E5M2Type>(t))
    return "kiln_float_to_f8e5m2(" + value + ")";
  if (t.isSignlessInteger(4))
    return "kiln_wrap_i4(" + value + ")";
  if (t.isUnsignedInteger(4))
    return "kiln_wrap_u4(" + value + ")";
  return value;
}

std::string gatherIndexExpr(Operation *op, const std::string &index,
                            const Size &extent) {
  if (auto site = op->getAttrOfType<IntegerAttr>(kIndexSiteAttr))
    return llvm::formatv("kiln_checked_index((long long){0}, {1}, {2}u)", index,
                         extent, site.getInt());
  return llvm::formatv("kiln_gather_index((long long){0}, {1})", index, extent);
}

/// The offset into an input of shape `arg` that broadcasts into `shape`, at
/// flat index `idx` of `shape`.
std::string broadcastOffset(ArrayRef<Size> arg, ArrayRef<Size> shape,
                            const std::string &idx) {
  if (arg == shape)
    return idx;
  if (productOf(arg) == 1)
    return "0";
  Sizes argStrides = stridesOf(arg);
  Sizes strides = stridesOf(shape);
  size_t lead = shape.size() - arg.size();
  // Constants of the index's own width where the shape's indices fit in
  // 32 bits (a 32-bit division is several times cheaper on the GPU than a
  // 64-bit one); a 64-bit index widens them anyway.
  bool narrow = fitsIndex32(productOf(shape).upper());
  auto text = [&](const Size &s) { return narrow ? s.str32() : s.str(); };
  std::string expr;
  for (size_t d = lead; d < shape.size(); ++d) {
    if (arg[d - lead] == 1)
      continue;
    std::string coord = llvm::formatv("(({0} / {1}) % {2})", idx,
                                      text(strides[d]), text(shape[d]));
    expr += (expr.empty() ? "" : " + ") + coord + " * " +
            text(argStrides[d - lead]);
  }
  return expr.empty() ? "0" : expr;
}

BodyEmitter::BodyEmitter(KernelOp kernel, llvm::raw_ostream &os)
    : kernel(kernel), os(os) {
  for (auto [i, arg] : llvm::enumerate(kernel.getBody().getArguments()))
    argIndex[arg] = i;
}

FailureOr<std::string> BodyEmitter::get(Value value, const std::string &idx,
                                        ArrayRef<Size> shape,
                                        const std::string &indent) {
  auto it = names.find(value);
  if (it != names.end())
    return it->second;
  std::string offset = broadcastOffset(sizesOf(value), shape, idx);
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg) {
    // Computed by an op of the body that this scope has not emitted (an
    // epilogue reading a prologue's value from another pass or loop):
    // computed again here, from the same expression.
    FailureOr<std::string> name = getAt(value, offset, indent);
    if (failed(name))
      return failure();
    return names[value] = *name;
  }
  Type et = tensorType(arg).getElementType();
  std::string name = fresh();
  os << indent << computeType(et) << " " << name << " = "
     << loadExpr(et, inputElement(argIndex.lookup(arg), offset)) << ";\n";
  names[value] = name;
  return name;
}

FailureOr<std::string> BodyEmitter::getAt(Value value, const std::string &idx,
                                          const std::string &indent) {
  if (auto bound = everywhere.find(value); bound != everywhere.end())
    return bound->second;
  // Keyed by index too: one value may be read at several indices (two
  // slices of one input, say) while computing one element.
  // An index alias (the names below) is keyed as the expression it stands
  // for, so that the readers of one value at one element share its
  // computation though each reaches it through an alias of its own. Else
  // each diamond of the body (a quantization's is_nan and where both read
  // its rounded value) doubles the kernel: 100,000 lines of source for an
  // int8 Q/DQ LLaMA's rotary halves (emit-shared-values.mlir).
  std::pair<void *, std::string> key{value.getAsOpaquePointer(),
                                     indexAliased(idx)};
  auto cached = computedAt.find(key);
  if (cached != computedAt.end())
    return cached->second;
  Sizes shape = sizesOf(value);
  Operation *op = value.getDefiningOp();
  if (!op) {
    auto arg = cast<BlockArgument>(value);
    Type et = tensorType(arg).getElementType();
    std::string name = fresh();
    os << indent << computeType(et) << " " << name << " = "
       << loadExpr(et, inputElement(argIndex[arg], idx)) << ";\n";
    return computedAt[key] = name;
  }
  // The index is named once: the remaps below use it several times. It is
  // unsigned 32-bit where this value's indices fit (a division by a
  // constant is then a multiply-high and a shift, against a longer 64-bit
  // sequence; signed would add a correction for negatives), with constants
  // of that width; an input's index that may not fit widens where it is
  // formed (its strides are printed as 64-bit).
  bool narrow = fitsIndex32(productOf(shape).upper());
  auto text = [](bool narrow, const Size &s) {
    return narrow ? s.str32() : s.str();
  };
  std::string index = "i" + fresh();
  os << indent << (narrow ? "unsigned " : "long long ") << index << " = "
     << (narrow ? "(unsigned)(" + idx + ")" : idx) << ";\n";
  aliases[index] = key.second;
  Sizes strides = stridesOf(shape);
  auto coordinate = [&](int64_t d) {
    return llvm::formatv("(({0} / {1}) % {2})", index, text(narrow, strides[d]),
                         text(narrow, shape[d]))
        .str();
  };
  // Whether the index of an operand, formed here, is 32-bit too; and that
  // operand's strides at its index's width.
  auto narrowInput = [&](Value input) {
    return narrow && fitsIndex32(productOf(sizesOf(input)).upper());
  };
  auto inputStrides = [&](Value input) {
    bool fits = narrowInput(input);
    SmallVector<std::string> result;
    for (const Size &stride : stridesOf(sizesOf(input)))
      result.push_back(text(fits, stride));
    return result;
  };
  FailureOr<std::string> name = failure();
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    name = getAt(reshape.getInput(), index, indent);
  } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
    // Result dim d is input dim perm[d].
    SmallVector<std::string> inStrides = inputStrides(transpose.getInput());
    std::string source = "0";
    for (auto [d, p] : llvm::enumerate(transpose.getPermutation()))
      source += llvm::formatv(" + {0} * {1}", coordinate(d), inStrides[p]);
    name = getAt(transpose.getInput(), source, indent);
  } else if (auto expand = dyn_cast<ExpandOp>(op)) {
    name = getAt(expand.getInput(),
                 broadcastOffset(sizesOf(expand.getInput()), shape, index),
                 indent);
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    // A negative step wraps in unsigned arithmetic and wraps back in the
    // sum: the index itself is in range.
    SmallVector<std::string> inStrides = inputStrides(slice.getInput());
    const char *suffix = narrowInput(slice.getInput()) ? "" : "LL";
    std::string source = "0";
    for (size_t d = 0; d < shape.size(); ++d)
      source += llvm::formatv(" + ({0}{4} + {1} * {2}{4}) * {3}",
                              slice.getStarts()[d], coordinate(d),
                              slice.getStrides()[d], inStrides[d], suffix);
    name = getAt(slice.getInput(), source, indent);
  } else if (auto gather = dyn_cast<GatherOp>(op)) {
    // Result coordinates: outer dims, the indices' dims, inner dims.
    Sizes data = sizesOf(gather.getData());
    int64_t axis = gather.getAxis();
    Size inner = productOf(ArrayRef<Size>(data).drop_front(axis + 1));
    Size count = productOf(sizesOf(gather.getIndices()));
    auto position =
        getAt(gather.getIndices(),
              llvm::formatv("({0} / {1}) % {2}", index, inner, count), indent);
    if (failed(position))
      return failure();
    name = getAt(gather.getData(),
                 llvm::formatv("(({0} / {1}) * {2} + {3}) * {4} + {0} % {4}",
                               index, count * inner, data[axis],
                               gatherIndexExpr(gather, *position, data[axis]),
                               inner),
                 indent);
  } else if (auto gather = dyn_cast<GatherElementsOp>(op)) {
    Sizes data = sizesOf(gather.getData());
    Sizes dataStrides = stridesOf(data);
    int64_t axis = gather.getAxis();
    auto position = getAt(gather.getIndices(), index, indent);
    if (failed(position))
      return failure();
    std::string source = "0";
    for (size_t d = 0; d < shape.size(); ++d) {
      std::string c = static_cast<int64_t>(d) == axis
                          ? gatherIndexExpr(gather, *position, data[d])
                          : coordinate(d);
      source += llvm::formatv(" + {0} * {1}", c, dataStrides[d]);
    }
    name = getAt(gather.getData(), source, indent);
  } else if (auto dequantize = dyn_cast<DequantizeOp>(op)) {
    name = getDequantizedAt(dequantize, index, narrow, indent);
  } else if (auto concat = dyn_cast<ConcatOp>(op)) {
    name = getConcatAt(concat, index, indent);
  } else if (auto sizes = dyn_cast<SizesOp>(op)) {
    // Element k is the k-th size, over the kernel's dim parameters.
    std::string select = "0LL";
    for (int64_t k = static_cast<int64_t>(sizes.getSizes().size()) - 1; k >= 0;
         --k) {
      std::string error;
      auto size = DimExpr::parse(
          cast<StringAttr>(sizes.getSizes()[k]).getValue(), error);
      if (!size)
        return op->emitOpError("has a malformed size: ") << error;
      select = llvm::formatv("({0} == {1}LL ? {2} : {3})", index, k,
                             Size(*size, 0).str(), select);
    }
    std::string type = computeType(sizes.getType().getElementType());
    std::string value = fresh();
    os << indent << type << " " << value << " = (" << type << ")" << select
       << ";\n";
    name = value;
  } else if (isElementwise(op)) {
    SmallVector<std::string> operands;
    for (Value operand : op->getOperands()) {
      auto operandName = getAt(
          operand, broadcastOffset(sizesOf(operand), shape, index), indent);
      if (failed(operandName))
        return failure();
      operands.push_back(*operandName);
    }
    // emit() reads its operands' names from `names`: bound for this use
    // only, since they hold the values at this index, not at the scope's.
    llvm::DenseMap<Value, std::string> scopeNames = names;
    for (auto [operand, operandName] : llvm::zip(op->getOperands(), operands))
      names[operand] = operandName;
    LogicalResult emitted = emit(op, index, shape, indent);
    std::string computed = emitted.succeeded() ? names.at(value) : "";
    names = std::move(scopeNames);
    if (failed(emitted))
      return failure();
    name = computed;
  } else {
    return op->emitOpError("cannot be computed inside this kernel");
  }
  if (failed(name))
    return failure();
  return computedAt[key] = *name;
}

FailureOr<std::string>
BodyEmitter::getDequantizedAt(DequantizeOp op, const std::string &index,
                              bool narrow, const std::string &indent) {
  int64_t bits = op.getBits(), block = op.getBlockSize();
  int64_t blocks = op.getBlockCount(), perByte = 8 / bits;
  int64_t zeroBytes = (blocks * bits + 7) / 8;
  // The row, the block and the place in the block of the weight; an
  // operand's index widens where the operand may not fit 32 bits.
  std::string row = fresh(), blockOf = fresh(), place = fresh();
  const char *type = narrow ? "unsigned " : "long long ";
  os << indent << type << row << " = " << index << " / " << op.getColumns()
     << ";\n"
     << indent << type << blockOf << " = (" << index << " % " << op.getColumns()
     << ") / " << block << ";\n"
     << indent << type << place << " = (" << index << " % " << op.getColumns()
     << ") % " << block << ";\n";
  auto wide = [&](Value v) {
    return narrow && fitsIndex32(productOf(sizesOf(v)).upper())
               ? std::string()
               : std::string("(long long)");
  };
  // Value `j` of the bits packed in byte `byte`, low bits first.
  auto bitsOf = [&](const std::string &byte, const std::string &j) {
    if (perByte == 1)
      return "(float)" + byte;
    return llvm::formatv("(float)(((unsigned){0} >> (({1} % {2}) * {3})) & "
                         "{4}u)",
                         byte, j, perByte, bits, (1 << bits) - 1)
        .str();
  };
  auto byte =
      getAt(op.getPacked(),
            llvm::formatv("({0}{1} * {2} + {5}) * {3} + {6}{4}",
                          wide(op.getPacked()), row, blocks, op.getBlockBytes(),
                          perByte == 1 ? "" : " / " + std::to_string(perByte),
                          blockOf, place),
            indent);
  auto scale = getAt(op.getScales(),
                     llvm::formatv("{0}{1} * {2} + {3}", wide(op.getScales()),
                                   row, blocks, blockOf),
                     indent);
  if (failed(byte) || failed(scale))
    return failure();
  std::string q = fresh(), value = fresh();
  os << indent << "float " << q << " = " << bitsOf(*byte, place) << ";\n";
  // Products rounded on their own, as the op defines them: the GPU would
  // otherwise contract them into a fused multiply-add.
  if (op.isFloat8()) {
    // The load decoded the float8 value.
    os << indent << "float " << value << " = __fmul_rn(" << q << ", " << *scale
       << ");\n";
    return value;
  }
  Value zero = op.getZeroPoints();
  if (zero && !op.hasIntegerZeroPoints()) {
    auto offset = getAt(
        zero,
        llvm::formatv("{0}{1} * {2} + {3}", wide(zero), row, blocks, blockOf),
        indent);
    if (failed(offset))
      return failure();
    os << indent << "float " << value << " = __fsub_rn(__fmul_rn(" << q << ", "
       << *scale << "), __fmul_rn(" << *offset << ", " << *scale << "));\n";
    return value;
  }
  std::string middle = std::to_string(1 << (bits - 1)) + ".0f";
  if (zero) {
    auto packedZero =
        getAt(zero,
              llvm::formatv("{0}{1} * {2} + {3} / {4}", wide(zero), row,
                            zeroBytes, blockOf, perByte),
              indent);
    if (failed(packedZero))
      return failure();
    middle = bitsOf(*packedZero, blockOf);
  }
  os << indent << "float " << value << " = __fmul_rn(" << q << " - " << middle
     << ", " << *scale << ");\n";
  return value;
}

FailureOr<std::string> BodyEmitter::getConcatAt(ConcatOp concat,
                                                const std::string &index,
                                                const std::string &indent) {
  Sizes shape = sizesOf(concat.getResult());
  int64_t axis = concat.getAxis();
  Size inner = productOf(ArrayRef<Size>(shape).drop_front(axis + 1));
  std::string along =
      llvm::formatv("(({0} / {1}) % {2})", index, inner, shape[axis]);
  std::string outer = llvm::formatv("({0} / {1})", index, shape[axis] * inner);
  // Only the input that holds the element is read: each branch computes in
  // its own block (another input would be read out of bounds), so what it
  // computes is forgotten after it.
  std::string name = fresh();
  os << indent << computeType(concat.getType().getElementType()) << " " << name
     << ";\n";
  Size offset = 0;
  size_t count = concat.getInputs().size();
  for (auto [k, input] : llvm::enumerate(concat.getInputs())) {
    Size extent = sizesOf(input)[axis];
    Size start = offset;
    offset += extent;
    if (k == 0)
      os << indent << "if (" << along << " < " << offset << ") {\n";
    else if (k + 1 < count)
      os << indent << "} else if (" << along << " < " << offset << ") {\n";
    else
      os << indent << "} else {\n";
    auto saved = computedAt;
    auto value = getAt(input,
                       llvm::formatv("({0} * {1} + ({2} - {3})) * {4} + "
                                     "{5} % {4}",
                                     outer, extent, along, start, inner, index),
                       indent + "  ");
    computedAt = std::move(saved);
    if (failed(value))
      return failure();
    os << indent << "  " << name << " = " << *value << ";\n";
  }
  os << indent << "}\n";
  return name;
}

LogicalResult BodyEmitter::emit(Operation *op, const std::string &idx,
                                ArrayRef<Size> shape,
                                const std::string &indent) {
  SmallVector<std::string> in;
  for (Value operand : op->getOperands()) {
    FailureOr<std::string> name = get(operand, idx, shape, indent);
    if (failed(name))
      return failure();
    in.push_back(*name);
  }
  Type et = tensorType(op->getResult(0)).getElementType();
  bool isFloat = isa<FloatType>(et);
  FloatSpelling f(et);
  std::string t = computeType(et);
  std::string expr;
  if (isa<AddOp>(op))
    expr =
        isFloat ? in[0] + " + " + in[1] : wrappingExpr(et, in[0], "+", in[1]);
  else if (isa<SubOp>(op))
    expr =
        isFloat ? in[0] + " - " + in[1] : wrappingExpr(et, in[0], "-", in[1]);
  else if (isa<MulOp>(op))
    expr =
        isFloat ? in[0] + " * " + in[1] : wrappingExpr(et, in[0], "*", in[1]);
  else if (isa<DivOp>(op))
    // Integer division by zero, and of the most negative value by -1, are
    // undefined in C++ (and trap on x86); Kiln defines them as the
    // reference interpreter does: 0, and wrapping negation. An unsigned
    // divisor is never -1 (comparing it with -1 would convert the -1).
    expr = isFloat ? in[0] + " / " + in[1]
           : et.isUnsignedInteger()
               ? "(" + in[1] + " == 0 ? (" + t + ")0 : (" + t + ")(" + in[0] +
                     " / " + in[1] + "))"
               : "(" + in[1] + " == 0 ? (" + t + ")0 : " + in[1] +
                     " == -1 ? (" + t + ")(0ULL - (unsigned long long)" +
                     in[0] + ") : " + in[0] + " / " + in[1] + ")";
  else if (isa<PowOp>(op))
    expr = f.fn("pow") + "(" + in[0] + ", " + in[1] + ")";
  else if (isa<NegOp>(op))
    // Integers negate through unsigned arithmetic: `-x` overflows on the
    // most negative value.
    expr = isFloat ? "-" + in[0]
                   : "(" + t + ")(0ULL - (unsigned long long)" + in[0] + ")";
  else if (isa<SqrtOp>(op))
    expr = f.fn("sqrt") + "(" + in[0] + ")";
  else if (isa<ErfOp>(op))
    expr = f.fn("erf") + "(" + in[0] + ")";
  else if (isa<TanhOp>(op))
    expr = f.fn("tanh") + "(" + in[0] + ")";
  else if (isa<ExpOp>(op))
    expr = f.fn("exp") + "(" + in[0] + ")";
  else if (isa<ReluOp>(op))
    // NaN stays NaN, as in onnxruntime and the interpreter (fmaxf would
    // turn it into 0).
    expr = isFloat ? "(" + in[0] + " < " + f.literal("0.0") + " ? " +
                         f.literal("0.0") + " : " + in[0] + ")"
                   : "(" + in[0] + " > 0 ? " + in[0] + " : 0)";
  else if (isa<SigmoidOp>(op))
    expr = f.literal("1.0") + " / (" + f.literal("1.0") + " + " + f.fn("exp") +
           "(-" + in[0] + "))";
  // Elementwise math and comparisons.
  else if (std::optional<std::string> math = mathExpr(op, in))
    expr = *math;
  else if (auto cast = dyn_cast<CastOp>(op))
    expr = castExpr(tensorType(cast.getInput()).getElementType(), et, in[0]);
  else if (isa<CheckRangeOp>(op)) {
    // Site 0 (index checks off) clamps without recording.
    auto site = op->getAttrOfType<IntegerAttr>(kIndexSiteAttr);
    expr = llvm::formatv("({0})kiln_checked_range((long long){1}, (long long){2}, "
                         "(long long){3}, {4}u)",
                         t, in[0], in[1], in[2], site ? site.getInt() : 0);
  }
  else
    return op->emitOpError("has no CUDA elementwise lowering");
  std::string name = fresh();
  os << indent << t << " " << name << " = " << expr << ";\n";
  names[op->getResult(0)] = name;
  return success();
}

/// The C expression of an elementwise math, logic, comparison or choice op
/// on the operand names `in`; none for other ops. Floats are values of their
/// compute type; integers are their own C type, with wrapping negation and
/// a remainder by zero of 0 (as the reference interpreter defines them).
std::optional<std::string> BodyEmitter::mathExpr(Operation *op,
                                                 ArrayRef<std::string> in) {
  Type et = tensorType(op->getResult(0)).getElementType();
  Type operandType = tensorType(op->getOperand(0)).getElementType();
  bool isFloat = isa<FloatType>(operandType);
  bool isUnsigned = operandType.isUnsignedInteger();
  FloatSpelling f(operandType);
  std::string x = in[0];
  std::string y = in.size() > 1 ? in[1] : "";
  // `0 - x` through unsigned arithmetic: C's `-x` overflows on the most
  // negative value.
  std::string negated =
      "(" + computeType(et) + ")(0ULL - (unsigned long long)" + x + ")";
  auto call = [&](StringRef name) { return f.fn(name) + "(" + x + ")"; };
  if (isa<ReciprocalOp>(op))
    return f.literal("1.0") + " / " + x;
  if (isa<LogOp>(op))
    return call("log");
  if (isa<FloorOp>(op))
    return call("floor");
  if (isa<CeilOp>(op))
    return call("ceil");
  if (isa<RoundOp>(op))
    // rint rounds halves to even in the default rounding mode.
    return call("rint");
  if (isa<SinOp>(op))
    return call("sin");
  if (isa<CosOp>(op))
    return call("cos");
  if (isa<SoftsignOp>(op))
    return x + " / (" + f.literal("1.0") + " + " + call("fabs") + ")";
  if (isa<AbsOp>(op))
    return isFloat      ? call("fabs")
           : isUnsigned ? x
                        : "(" + x + " < 0 ? " + negated + " : " + x + ")";
  if (isa<SignOp>(op)) {
    if (isFloat)
      return "(" + x + " > " + f.literal("0.0") + " ? " + f.literal("1.0") +
             " : " + x + " < " + f.literal("0.0") + " ? " + f.literal("-1.0") +
             " : " + x + ")";
    if (isUnsigned)
      return "(" + computeType(et) + ")(" + x + " != 0)";
    return "(" + computeType(et) + ")((" + x + " > 0) - (" + x + " < 0))";
  }
  if (isa<NotOp>(op))
    return "!" + x;
  if (auto gelu = dyn_cast<GeluOp>(op)) {
    std::string half =
        f.literal("0.5") + " * " + x + " * (" + f.literal("1.0") + " + ";
    if (gelu.getApproximate() == GeluApproximation::tanh)
      return half + f.fn("tanh") + "(" + f.literal("0.7978845608028654") +
             " * (" + x + " + " + f.literal("0.044715") + " * " + x + " * " +
             x + " * " + x + ")))";
    return half + f.fn("erf") + "(" + x + " * " +
           f.literal("0.7071067811865476") + "))";
  }
  if (isa<IsNaNOp>(op))
    return "(" + x + " != " + x + ")";
  if (auto isInf = dyn_cast<IsInfOp>(op)) {
    std::string positive = "(" + x + " == " + f.infinity() + ")";
    std::string negative = "(" + x + " == " + f.infinity(true) + ")";
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
    return isFloat ? "(" + x + " != " + x + " || " + x + " > " + y + " ? " + x +
                         " : " + y + ")"
                   : "(" + x + " > " + y + " ? " + x + " : " + y + ")";
  if (isa<MinOp>(op))
    return isFloat ? "(" + x + " != " + x + " || " + x + " < " + y + " ? " + x +
                         " : " + y + ")"
                   : "(" + x + " < " + y + " ? " + x + " : " + y + ")";
  if (auto mod = dyn_cast<ModOp>(op)) {
    if (isFloat)
      return f.fn("fmod") + "(" + x + ", " + y + ")";
    std::string rem = "(" + x + " % " + y + ")";
    // Without signs both remainders agree.
    if (isUnsigned)
      return "(" + y + " == 0 ? 0 : " + rem + ")";
    // A divisor of -1 always leaves 0 and would overflow on the most
    // negative dividend.
    std::string truncated =
        "(" + y + " == 0 || " + y + " == -1 ? 0 : " + rem + ")";
    if (mod.getFmod())
      return truncated;
    // Python's sign rule: a nonzero remainder takes the divisor's sign.
    return "(" + y + " == 0 || " + y + " == -1 ? 0 : " + rem + " != 0 && (" +
           rem + " < 0) != (" + y + " < 0) ? " + rem + " + " + y + " : " + rem +
           ")";
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

/// `x op y` for integers of type `t`, wrapping modulo 2^width: computed in
/// an unsigned C type at least as wide as int, since signed overflow is
/// undefined in C and narrow operands would promote to (signed) int.
std::string wrappingExpr(Type t, const std::string &x, StringRef op,
                         const std::string &y) {
  std::string wide =
      t.getIntOrFloatBitWidth() > 32 ? "unsigned long long" : "unsigned int";
  return "(" + computeType(t) + ")((" + wide + ")" + x + " " + op.str() + " (" +
         wide + ")" + y + ")";
}

/// 2^n as a decimal integer, for n up to 64.
static std::string powerOfTwo(unsigned n) {
  return llvm::toString(llvm::APInt::getOneBitSet(65, n), 10,
                        /*Signed=*/false);
}

/// A float compute value `v` of element type `from` as the integer type
/// `to`, as kiln.cast defines it (see kiln_float_to_int in the prelude): the
/// bounds are powers of two, exact in float and double.
static std::string floatToIntExpr(Type from, Type to, const std::string &v) {
  FloatSpelling f(from);
  unsigned width = to.getIntOrFloatBitWidth();
  std::string t = computeType(to);
  std::string low, high, lowest, highest;
  if (to.isUnsignedInteger()) {
    low = "0.0";
    high = powerOfTwo(width) + ".0";
    lowest = "0";
    highest =
        llvm::toString(llvm::APInt::getMaxValue(width), 10, false) + "ULL";
  } else {
    low = "-" + powerOfTwo(width - 1) + ".0";
    high = powerOfTwo(width - 1) + ".0";
    std::string max =
        llvm::toString(llvm::APInt::getSignedMaxValue(width), 10, true);
    lowest = "(-" + max + "LL - 1)";
    highest = max + "LL";
  }
  return "kiln_float_to_int<" + t + ">(" + v + ", " + f.literal(low) + ", " +
         f.literal(high) + ", (" + t + ")" + lowest + ", (" + t + ")" +
         highest + ")";
}

/// A value of compute type `from` as compute type `to`, rounded to `to`'s
/// storage precision: once, from any type (a 16-bit float gets a double or a
/// 64-bit integer directly, not through float).
std::string BodyEmitter::castExpr(Type from, Type to, const std::string &v) {
  if (to.isInteger(1))
    return "(" + v + " != 0)";
  bool fromFloat = isa<FloatType>(from);
  if (to.isF16() || to.isBF16()) {
    std::string name = to.isF16() ? "half" : "bfloat16";
    std::string widen = to.isF16() ? "__half2float" : "__bfloat162float";
    std::string narrowed;
    if (from.isF64())
      narrowed = "__double2" + name + "(" + v + ")";
    else if (fromFloat || from.isInteger(1))
      narrowed = "__float2" + name + "_rn((float)" + v + ")";
    else if (from.isUnsignedInteger())
      narrowed = "__ull2" + name + "_rn((unsigned long long)" + v + ")";
    else
      narrowed = "__ll2" + name + "_rn((long long)" + v + ")";
    return widen + "(" + narrowed + ")";
  }
  if (isa<Float8E4M3FNType, Float8E5M2Type>(to)) {
    // Rounded through float (a double rounds twice, as ONNX casts to float8
    // from float) and kept as the float it rounds to.
    std::string format = isa<Float8E5M2Type>(to) ? "f8e5m2" : "f8e4m3";
    return "kiln_" + format + "_to_float(kiln_float_to_" + format + "((float)" +
           v + "))";
  }
  if (fromFloat && !isa<FloatType>(to))
    return floatToIntExpr(from, to, v);
  if (to.isSignlessInteger(4))
    return "kiln_wrap_i4((long long)" + v + ")";
  if (to.isUnsignedInteger(4))
    return "kiln_wrap_u4((long long)" + v + ")";
  return "(" + computeType(to) + ")" + v;
}

/// `extern "C" __global__ void name(const T *in0, ..., T *out0) {` and the
/// wait for the kernel before (kPdlEnter).
std::string inputParameters(KernelOp kernel, bool firstWritten) {
  std::string text;
  for (auto [i, input] : llvm::enumerate(kernel.getInputs()))
    text += "const " + storageType(tensorType(input).getElementType()) +
            (i == 0 && firstWritten ? " *in" : " *__restrict__ in") +
            std::to_string(i) + ", ";
  return text;
}

std::string resultParameters(KernelOp kernel) {
  std::string text;
  for (auto [i, result] : llvm::enumerate(kernel.getResults()))
    text += (i ? ", " : "") + storageType(tensorType(result).getElementType()) +
            " *__restrict__ out" + std::to_string(i);
  return text;
}

void emitSignature(KernelOp kernel, StringRef name, llvm::raw_ostream &os,
                   StringRef output) {
  os << "\nextern \"C\" __global__ void " << name << "("
     << inputParameters(kernel)
     << (output.empty() ? resultParameters(kernel) : output.str());
  for (StringRef dim : dimNamesOf(kernel->getParentOfType<func::FuncOp>()))
    os << ", long long " << dimParameterName(dim);
  os << ") {\n" << kPdlEnter;
}

std::string floatLiteral(float value) {
  return llvm::formatv("{0:e8}f", value).str();
}

bool fitsIndex32(int64_t elements) {
  return elements <= INT32_MAX - kMaxGrid * kBlockSize;
}

uint32_t gridFor(int64_t elements) {
  return static_cast<uint32_t>(std::clamp<int64_t>(
      (elements + kBlockSize - 1) / kBlockSize, 1, kMaxGrid));
}

void setGridDim(LaunchGeometry &geometry, int axis, const Size &elements,
                int64_t perBlock, int64_t highest) {
  int64_t blocks =
      elements.upper() / perBlock + (elements.upper() % perBlock != 0 ? 1 : 0);
  geometry.grid[axis] =
      static_cast<uint32_t>(std::clamp<int64_t>(blocks, 1, highest));
  if (!elements.isConstant())
    geometry.symbolicGrid[axis] =
        SymbolicGridDim{elements.getExpr(), perBlock, highest};
}

} // namespace kiln
