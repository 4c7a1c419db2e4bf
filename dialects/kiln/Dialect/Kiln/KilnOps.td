//===- KilnOps.td - kiln dialect ops -----------------------*- tablegen -*-===//
//
// Ops are grouped as ONNX groups them. Each op with inferable results declares
// InferTypeOpAdaptor; its inferReturnTypes calls the free shape function in
// ShapeInference.h, which the importer calls as well.
//
// Why one file of this length: ODS puts every op of the dialect in one
// tablegen unit (one KilnOps.h.inc, one generated op reference); each op is
// short, with its summary, description and example.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_KILNOPS_TD
#define KILN_DIALECT_KILN_KILNOPS_TD

include "kiln/Dialect/Kiln/KilnBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

/// Marks ops computed element by element with ONNX (numpy) broadcasting; the
/// fusion pass and the CUDA elementwise generator key on it.
def Kiln_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::kiln::OpTrait";
}

/// Marks ops that only move data: each result element is one element of an
/// operand, at an index computed from its own. Fusion reads them through
/// index remaps, and mixed precision moves casts across them.
def Kiln_DataMovement : NativeOpTrait<"DataMovement"> {
  let cppNamespace = "::kiln::OpTrait";
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant",
    [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "a constant tensor";
  let description = [{
    A tensor known at compile time. Weights are `dense_resource` blobs so that
    textual IR stays readable and passes never copy them.

    ```mlir
    %w = kiln.constant dense_resource<w0> : tensor<768x768xf32>
    %c = kiln.constant dense<1.0> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

def Kiln_SizesOp : Kiln_Op<"sizes", [Pure]> {
  let summary = "an integer tensor of symbolic sizes";
  let description = [{
    The value of a shape computation over a model's named dims (ONNX
    Shape, and integer arithmetic on it) when some of its elements are not
    constants: element `i` (in row-major order, of any static shape) is the
    size `sizes[i]`, a polynomial over the
    names in the canonical text of DimExpr.h, evaluated when the names'
    values are known (at run time). A shape subgraph whose result only
    shapes another op (Reshape, Expand) folds into that op's type and leaves
    no `kiln.sizes`; one whose values are data (a Range's limit, a mask
    compared against positions) keeps it.

    ```mlir
    %s = kiln.sizes ["batch", "sequence", "12"] : tensor<3xi64>
    ```
  }];
  let arguments = (ins StrArrayAttr:$sizes);
  let results = (outs RankedTensorOf<[I64, I32]>:$result);
  let assemblyFormat = "$sizes attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise math with broadcasting
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, Type operandType, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits,
        [Pure, Kiln_Elementwise, InferTypeOpAdaptor])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      auto type = inferBroadcastType(location,
          ::llvm::cast<::mlir::RankedTensorType>(adaptor.getLhs().getType()),
          ::llvm::cast<::mlir::RankedTensorType>(adaptor.getRhs().getType()));
      if (failed(type))
        return ::mlir::failure();
      types.push_back(*type);
      return ::mlir::success();
    }
  }];
}

def Kiln_AddOp : Kiln_BinaryOp<"add", Kiln_NumericTensor, [Commutative]> {
  let summary = "elementwise sum with broadcasting (ONNX Add)";
  let description = [{
    ```mlir
    %y = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let hasFolder = 1;
}
def Kiln_SubOp : Kiln_BinaryOp<"sub", Kiln_NumericTensor> {
  let summary = "elementwise difference with broadcasting (ONNX Sub)";
  let description = [{
    ```mlir
    %y = kiln.sub %a, %b : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
    ```
  }];
}
def Kiln_MulOp : Kiln_BinaryOp<"mul", Kiln_NumericTensor, [Commutative]> {
  let summary = "elementwise product with broadcasting (ONNX Mul)";
  let description = [{
    ```mlir
    %y = kiln.mul %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
  let hasFolder = 1;
}
def Kiln_DivOp : Kiln_BinaryOp<"div", Kiln_NumericTensor> {
  let summary = "elementwise quotient with broadcasting (ONNX Div)";
  let description = [{
    Integer division truncates toward zero, as in ONNX. Where ONNX (and C)
    leave it undefined, Kiln defines it, the same in the reference
    interpreter and every generated kernel: a quotient by zero is 0, and the
    most negative value divided by -1 wraps to itself (two's complement
    negation). Unsigned types divide as unsigned values.

    ```mlir
    %y = kiln.div %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
}
def Kiln_PowOp : Kiln_BinaryOp<"pow", Kiln_FloatTensor> {
  let summary = "elementwise power with broadcasting (ONNX Pow)";
  let description = [{
    Base and exponent share the element type; the importer casts an exponent of
    another type.

    ```mlir
    %y = kiln.pow %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
}

class Kiln_UnaryOp<string mnemonic, Type operandType, string onnxName>
    : Kiln_Op<mnemonic, [Pure, Kiln_Elementwise, SameOperandsAndResultType]> {
  let summary = "elementwise " # mnemonic # " (ONNX " # onnxName # ")";
  let description = [{
    ```mlir
    %y = kiln.}] # mnemonic # [{ %x : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_NegOp : Kiln_UnaryOp<"neg", Kiln_NumericTensor, "Neg">;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", Kiln_FloatTensor, "Sqrt">;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", Kiln_FloatTensor, "Erf">;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", Kiln_FloatTensor, "Tanh">;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", Kiln_FloatTensor, "Exp">;
def Kiln_ReluOp : Kiln_UnaryOp<"relu", Kiln_NumericTensor, "Relu">;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", Kiln_FloatTensor, "Sigmoid">;

def Kiln_CastOp : Kiln_Op<"cast", [Pure, Kiln_Elementwise]> {
  let summary = "element type conversion (ONNX Cast)";
  let description = [{
    Float to integer truncates toward zero; float to bool is `x != 0`; float to
    f16/bf16 rounds to nearest even.

    ```mlir
    %h = kiln.cast %x : tensor<2x3xf32> -> tensor<2x3xf16>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise math and comparisons
//===----------------------------------------------------------------------===//

def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", Kiln_FloatTensor, "Reciprocal">;
def Kiln_LogOp : Kiln_UnaryOp<"log", Kiln_FloatTensor, "Log">;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", Kiln_FloatTensor, "Floor">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", Kiln_FloatTensor, "Ceil">;
def Kiln_SinOp : Kiln_UnaryOp<"sin", Kiln_FloatTensor, "Sin">;
def Kiln_CosOp : Kiln_UnaryOp<"cos", Kiln_FloatTensor, "Cos">;
def Kiln_SoftsignOp : Kiln_UnaryOp<"softsign", Kiln_FloatTensor, "Softsign">;
def Kiln_AbsOp : Kiln_UnaryOp<"abs", Kiln_NumericTensor, "Abs">;
def Kiln_NotOp : Kiln_UnaryOp<"not", Kiln_BoolTensor, "Not">;

def Kiln_RoundOp : Kiln_UnaryOp<"round", Kiln_FloatTensor, "Round"> {
  let description = [{
    Rounds to the nearest integer, halves to even (`round(2.5) = 2`).

    ```mlir
    %y = kiln.round %x : tensor<2x3xf32>
    ```
  }];
}

def Kiln_SignOp : Kiln_UnaryOp<"sign", Kiln_NumericTensor, "Sign"> {
  let description = [{
    -1, 0 or 1 by the sign of each element; NaN stays NaN.

    ```mlir
    %y = kiln.sign %x : tensor<2x3xi64>
    ```
  }];
}

def Kiln_GeluOp : Kiln_Op<"gelu",
    [Pure, Kiln_Elementwise, SameOperandsAndResultType]> {
  let summary = "Gaussian error linear unit (ONNX Gelu-20)";
  let description = [{
    `x * Phi(x)`: with `approximate = none`, `0.5 * x * (1 + erf(x / sqrt(2)))`;
    with `approximate = tanh`,
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`.

    ```mlir
    %y = kiln.gelu %x : tensor<2x3xf32>
    %z = kiln.gelu %x approximate = tanh : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                   DefaultValuedAttr<Kiln_GeluApproximation,
                       "::kiln::GeluApproximation::none">:$approximate);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`approximate` `=` $approximate^)? attr-dict `:` type($input)
  }];
}

/// A test of each float element that gives an i1 tensor of the same shape.
class Kiln_PredicateOp<string mnemonic, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits,
        [Pure, Kiln_Elementwise, InferTypeOpAdaptor])> {
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      types.push_back(inferPredicateType(
          ::llvm::cast<::mlir::RankedTensorType>(adaptor.getInput().getType())));
      return ::mlir::success();
    }
  }];
}

def Kiln_IsNaNOp : Kiln_PredicateOp<"is_nan"> {
  let summary = "true where an element is NaN (ONNX IsNaN)";
  let description = [{
    ```mlir
    %m = kiln.is_nan %x : tensor<4xf32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
}

def Kiln_IsInfOp : Kiln_PredicateOp<"is_inf"> {
  let summary = "true where an element is infinite (ONNX IsInf)";
  let description = [{
    `detect_positive` and `detect_negative` choose which infinities count.

    ```mlir
    %m = kiln.is_inf %x {detect_negative = false} : tensor<4xf32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                   DefaultValuedAttr<BoolAttr, "true">:$detect_positive,
                   DefaultValuedAttr<BoolAttr, "true">:$detect_negative);
}

def Kiln_MaxOp : Kiln_BinaryOp<"max", Kiln_NumericTensor, [Commutative]> {
  let summary = "elementwise maximum with broadcasting (ONNX Max)";
  let description = [{
    A NaN operand gives NaN, as numpy.maximum does. The importer folds ONNX's
    N inputs into a chain.

    ```mlir
    %y = kiln.max %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
}
def Kiln_MinOp : Kiln_BinaryOp<"min", Kiln_NumericTensor, [Commutative]> {
  let summary = "elementwise minimum with broadcasting (ONNX Min)";
  let description = [{
    A NaN operand gives NaN, as numpy.minimum does.

    ```mlir
    %y = kiln.min %a, %b : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
    ```
  }];
}

def Kiln_ModOp : Kiln_BinaryOp<"mod", Kiln_NumericTensor> {
  let summary = "elementwise remainder with broadcasting (ONNX Mod)";
  let description = [{
    With `fmod = true` the remainder takes the sign of the dividend (C's
    `fmod` and `%`); with `fmod = false`, which ONNX allows for integers only,
    it takes the sign of the divisor (Python's `%`). An integer remainder by
    zero is 0, as Kiln defines integer division by zero.

    ```mlir
    %r = kiln.mod %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %f = kiln.mod %x, %y {fmod = true} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let hasVerifier = 1;
}

def Kiln_AndOp : Kiln_BinaryOp<"and", Kiln_BoolTensor, [Commutative]> {
  let summary = "elementwise logical and with broadcasting (ONNX And)";
  let description = [{
    ```mlir
    %y = kiln.and %a, %b : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
    ```
  }];
}
def Kiln_OrOp : Kiln_BinaryOp<"or", Kiln_BoolTensor, [Commutative]> {
  let summary = "elementwise logical or with broadcasting (ONNX Or)";
  let description = [{
    ```mlir
    %y = kiln.or %a, %b : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
    ```
  }];
}
def Kiln_XorOp : Kiln_BinaryOp<"xor", Kiln_BoolTensor, [Commutative]> {
  let summary = "elementwise exclusive or with broadcasting (ONNX Xor)";
  let description = [{
    ```mlir
    %y = kiln.xor %a, %b : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
    ```
  }];
}

/// A comparison of two operands of one element type with broadcasting; the
/// result is an i1 tensor. NaN compares false, as in IEEE 754.
class Kiln_CompareOp<string mnemonic, Type operandType, string onnxName,
                     list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits,
        [Pure, Kiln_Elementwise, InferTypeOpAdaptor])> {
  let summary = "elementwise comparison with broadcasting (ONNX " # onnxName # ")";
  let description = [{
    ```mlir
    %m = kiln.}] # mnemonic # [{ %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      auto type = inferCompareType(location,
          ::llvm::cast<::mlir::RankedTensorType>(adaptor.getLhs().getType()),
          ::llvm::cast<::mlir::RankedTensorType>(adaptor.getRhs().getType()));
      if (failed(type))
        return ::mlir::failure();
      types.push_back(*type);
      return ::mlir::success();
    }
  }];
}

def Kiln_EqualOp : Kiln_CompareOp<"equal", Kiln_Tensor, "Equal", [Commutative]>;
def Kiln_LessOp : Kiln_CompareOp<"less", Kiln_NumericTensor, "Less">;
def Kiln_LessEqualOp
    : Kiln_CompareOp<"less_equal", Kiln_NumericTensor, "LessOrEqual">;
def Kiln_GreaterOp : Kiln_CompareOp<"greater", Kiln_NumericTensor, "Greater">;
def Kiln_GreaterEqualOp
    : Kiln_CompareOp<"greater_equal", Kiln_NumericTensor, "GreaterOrEqual">;

def Kiln_WhereOp : Kiln_Op<"where",
    [Pure, Kiln_Elementwise, InferTypeOpAdaptor]> {
  let summary = "elementwise choice by a condition (ONNX Where)";
  let description = [{
    `condition ? lhs : rhs` per element; all three operands broadcast to the
    result, `lhs` and `rhs` share its element type.

    ```mlir
    %y = kiln.where %c, %a, %b
        : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$lhs,
                   Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Kiln_CheckRangeOp : Kiln_Op<"check_range",
    [Pure, Kiln_Elementwise, AllTypesMatch<["input", "result"]>]> {
  let summary = "integers from the data checked against bounds at run time";
  let description = [{
    The result is `input`, each of whose elements must lie in
    `[low, high)`; `low` and `high` have its element type and broadcast to
    its shape (a constant, or a `kiln.sizes` of the run's dims). It guards
    a length or position that the data supplies and that indexes a buffer
    (GroupQueryAttention's seqlens_k within the cache): an element outside
    fails the run as an out-of-range gather index does, naming `what` and
    the ONNX node; without index checks (`--unchecked-indices`) it is
    clamped into the range silently.

    ```mlir
    %k = kiln.check_range %seqlens, %zero, %total {what = "seqlens_k"}
        : (tensor<2x1x1x1xi64>, tensor<i64>, tensor<i64>)
        -> tensor<2x1x1x1xi64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[Kiln_IntegerType]>:$input,
                   RankedTensorOf<[Kiln_IntegerType]>:$low,
                   RankedTensorOf<[Kiln_IntegerType]>:$high, StrAttr:$what);
  let results = (outs RankedTensorOf<[Kiln_IntegerType]>:$result);
  let assemblyFormat = [{
    $input `,` $low `,` $high attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// Marks the ops a reduction kernel can be built around.
def Kiln_Reduction : NativeOpTrait<"Reduction"> {
  let cppNamespace = "::kiln::OpTrait";
}

/// A reduction over `axes` (ONNX Reduce*). `axes` are non-negative, sorted and
/// unique; the importer resolves ONNX's "no axes means all axes", the
/// axes-as-input forms and `noop_with_empty_axes`.
class Kiln_ReduceOp<string mnemonic, Type tensorType, string what>
    : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor, Kiln_Reduction]> {
  let summary = what # " over axes";
  let arguments = (ins tensorType:$input, DenseI64ArrayAttr:$axes,
                   BoolAttr:$keepdims);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      auto type = inferReduceType(location,
          ::llvm::cast<::mlir::RankedTensorType>(adaptor.getInput().getType()),
          adaptor.getAxes(), adaptor.getKeepdims());
      if (failed(type))
        return ::mlir::failure();
      types.push_back(*type);
      return ::mlir::success();
    }
  }];
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", Kiln_NumericTensor, "sum"> {
  let description = [{
    The sum of an empty set is 0.

    ```mlir
    %s = kiln.reduce_sum %x {axes = array<i64: 1>, keepdims = false}
        : tensor<2x8xf32> -> tensor<2xf32>
    ```
  }];
}
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", Kiln_FloatTensor, "mean"> {
  let description = [{
    The mean of an empty set is NaN (0/0), as in numpy.

    ```mlir
    %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true}
        : tensor<2x8xf32> -> tensor<2x1xf32>
    ```
  }];
}
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max", Kiln_Tensor, "maximum"> {
  let description = [{
    The maximum of an empty set is the element type's lowest value (-inf for
    floats, false for booleans), as ONNX ReduceMax-20 specifies.
  }];
}
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min", Kiln_Tensor, "minimum"> {
  let description = [{
    The minimum of an empty set is the element type's highest value (+inf for
    floats, true for booleans).
  }];
}
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", Kiln_NumericTensor,
                                      "product"> {
  let description = [{
    The product of an empty set is 1.
  }];
}

/// The index of the largest (arg_max) or smallest (arg_min) element along
/// `axis` (ONNX ArgMax/ArgMin); ties pick the first index, or the last with
/// `select_last_index`.
class Kiln_ArgReduceOp<string mnemonic, string what>
    : Kiln_Op<mnemonic, [Pure, Kiln_Reduction]> {
  let summary = "index of the " # what # " element along an axis";
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis,
                   BoolAttr:$keepdims, BoolAttr:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_ArgMaxOp : Kiln_ArgReduceOp<"arg_max", "largest"> {
  let description = [{
    A NaN counts as larger than every number, as in numpy.

    ```mlir
    %i = kiln.arg_max %x {axis = 1 : i64, keepdims = false,
                          select_last_index = false}
        : tensor<2x8xf32> -> tensor<2xi64>
    ```
  }];
}
def Kiln_ArgMinOp : Kiln_ArgReduceOp<"arg_min", "smallest"> {
  let description = [{
    A NaN counts as smaller than every number, as in numpy.
  }];
}

def Kiln_SoftmaxOp : Kiln_Op<"softmax",
    [Pure, SameOperandsAndResultType, Kiln_Reduction]> {
  let summary = "softmax along one axis (ONNX Softmax-13)";
  let description = [{
    `axis` is non-negative. The importer rewrites opset < 13's "flatten to 2-D"
    semantics into reshapes around this op.

    ```mlir
    %p = kiln.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_LogSoftmaxOp : Kiln_Op<"log_softmax",
    [Pure, SameOperandsAndResultType, Kiln_Reduction]> {
  let summary = "log of softmax along one axis (ONNX LogSoftmax-13)";
  let description = [{
    Computed as x - max - log(sum(exp(x - max))), which stays finite where
    log(softmax(x)) would underflow to -inf.

    ```mlir
    %p = kiln.log_softmax %x {axis = 1 : i64} : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_CumSumOp : Kiln_Op<"cumsum",
    [Pure, SameOperandsAndResultType, Kiln_Reduction]> {
  let summary = "running sum along one axis (ONNX CumSum)";
  let description = [{
    Element j is the sum of elements 0..j along `axis` (0..j-1 with
    `exclusive`); `reverse` sums from the end instead.

    ```mlir
    %c = kiln.cumsum %x {axis = 1 : i64, exclusive = false, reverse = false}
        : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis,
                   BoolAttr:$exclusive, BoolAttr:$reverse);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_TopKOp : Kiln_Op<"top_k", [Pure]> {
  let summary = "positions of the k largest or smallest elements along an axis";
  let description = [{
    The indices half of ONNX TopK (the importer gathers the values with
    kiln.gather_elements). Sorted best first; equal values keep their order
    (lower index first), and a NaN comes before every number.

    ```mlir
    %i = kiln.top_k %x {axis = 1 : i64, k = 3 : i64, largest = true}
        : tensor<2x8xf32> -> tensor<2x3xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis, I64Attr:$k,
                   BoolAttr:$largest);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm",
    [Pure, InferTypeOpAdaptor, Kiln_Reduction]> {
  let summary = "layer normalization (ONNX LayerNormalization-17)";
  let description = [{
    Normalizes over the dims from `axis` to the last; `scale` and the optional
    `bias` broadcast to those dims. Statistics are computed in at least fp32.

    ```mlir
    %y = kiln.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 1.0e-5 : f32}
        : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                   Optional<Kiln_FloatTensor>:$bias, I64Attr:$axis,
                   F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Kiln_RmsNormOp : Kiln_Op<"rms_norm",
    [Pure, InferTypeOpAdaptor, Kiln_Reduction]> {
  let summary = "root-mean-square normalization (ONNX RMSNormalization-23)";
  let description = [{
    Divides by the root of the mean square over the dims from `axis` to the
    last, plus `epsilon`, then multiplies by `scale`, which broadcasts to
    those dims: `x / sqrt(mean(x^2) + epsilon) * scale`. Statistics are
    computed in at least fp32 and the result is rounded once. kiln-recompose
    builds it from the forms exporters spell out (LLaMA's RMSNorm, ONNX's
    function body, onnxruntime's SimplifiedLayerNormalization).

    ```mlir
    %y = kiln.rms_norm %x, %gamma {axis = 2 : i64, epsilon = 1.0e-6 : f32}
        : (tensor<2x4x8xf16>, tensor<8xf16>) -> tensor<2x4x8xf16>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                   I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Kiln_MatmulOp : Kiln_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "batched matrix product (ONNX MatMul and Gemm)";
  let description = [{
    Both operands have rank >= 2; the last two dims are the matrix, the leading
    dims broadcast. `transpose_lhs` / `transpose_rhs` swap an operand's last two
    dims before the product (Gemm's transA / transB); a `kiln.transpose` of
    an operand's last two dims folds into them. The importer lowers 1-D
    MatMul operands and Gemm's alpha, beta and C to reshapes, mul and add.

    ```mlir
    %y = kiln.matmul %a, %b {transpose_rhs = true}
        : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Quantized weights
//===----------------------------------------------------------------------===//

def Kiln_DequantizeOp : Kiln_Op<"dequantize", [Pure]> {
  let summary = "block-quantized weights to floats (MatMulNBits' weights)";
  let description = [{
    `packed` holds `rows` rows of K `bits`-bit unsigned integers, packed
    along K low bits first, `[rows, blocks, block_size * bits / 8]` bytes
    (the last block padded past K). Each block of a row has one scale and
    one zero point:

    - `zero_points` absent: `2^(bits - 1)`, the middle of the range;
    - `ui8 [rows, ceil(blocks * bits / 8)]`: packed like `packed`;
    - of the scales' type, `[rows, blocks]`.

    Element `[r, k]` of the result is `(q - zero) * scale` for integer zero
    points (one fp32 product, rounded to the result type) and
    `q * scale - zero * scale` for float ones (each product and the
    difference rounded in fp32, then rounded to the result type):
    onnxruntime's definition of com.microsoft.MatMulNBits' weights. The packed bytes stay the
    artifact's weights: kernels read through this op where they use a
    weight, it is never folded to floats at compile time.

    `packed` of `f8E4M3FN` holds float8 weights instead, one a byte
    (`bits` 8, no zero points): element `[r, k]` is `q * scale`, one fp32
    product rounded to the result type, as ONNX's DequantizeLinear of
    float8 defines it.

    ```mlir
    %w = kiln.dequantize %q, %scales {bits = 4 : i64, block_size = 32 : i64}
        : (tensor<64x2x16xui8>, tensor<64x2xf16>) -> tensor<64x48xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[UI8, F8E4M3FN]>:$packed,
                   Kiln_FloatTensor:$scales,
                   Optional<Kiln_Tensor>:$zero_points, I64Attr:$bits,
                   I64Attr:$block_size);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $packed `,` $scales (`,` $zero_points^)? attr-dict `:`
    functional-type(operands, $result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Blocks of a row, and bytes of a block.
    int64_t getBlockCount() { return getPacked().getType().getDimSize(1); }
    int64_t getBlockBytes() { return getBlockSize() * getBits() / 8; }
    /// Columns of the result: the row length K.
    int64_t getColumns() { return getType().getDimSize(1); }
    /// Whether the weights are float8 (E4M3FN) values rather than integers.
    bool isFloat8() {
      return ::llvm::isa<::mlir::Float8E4M3FNType>(
          getPacked().getType().getElementType());
    }
    /// Whether the zero points are packed integers (absent counts).
    bool hasIntegerZeroPoints() {
      return !getZeroPoints() ||
             !::llvm::isa<::mlir::FloatType>(
                 getZeroPoints().getType().getElementType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Kiln_AttentionOp : Kiln_Op<"attention", [Pure, InferTypeOpAdaptor]> {
  let summary = "scaled dot-product attention, softmax(scale * q.k^T + mask).v";
  let description = [{
    `query` is [B, H, Sq, D], `key` [B, Hk, Sk, D] and `value` [B, Hk, Sk, Dv]
    with H a multiple of Hk (grouped-query attention: query head h reads key
    and value head h / (H / Hk)). The optional additive `mask` broadcasts to
    [B, H, Sq, Sk]. A positive `softcap` caps the scaled scores before the
    mask, s -> softcap * tanh(s / softcap) (Gemma 2; 0, the default, leaves
    them). `sink`, one logit per query head (or one for all), joins every
    row's softmax normalization without attending a value (an attention
    sink; zero is smooth softmax). With `zero_nan_probs`, probabilities
    that are NaN count as zero, as PyTorch's scaled_dot_product_attention
    export guards them (`where(isnan(p), 0, p)`): a row whose every key is
    masked with -inf gives zeros instead of NaN. The result is
    [B, H, Sq, Dv].
    kiln-recompose builds it from
    the matmul/softmax form exporters write; the CUDA target computes it in one
    kernel with an online softmax, never storing the Sq x Sk scores.

    ```mlir
    %o = kiln.attention %q, %k, %v, %m {scale = 1.250000e-01 : f32}
        : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>,
           tensor<2x1x1x8xf32>) -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$query, Kiln_FloatTensor:$key,
                   Kiln_FloatTensor:$value, Optional<Kiln_FloatTensor>:$mask,
                   F32Attr:$scale,
                   DefaultValuedAttr<F32Attr, "0.0f">:$softcap,
                   OptionalAttr<DenseF32ArrayAttr>:$sink,
                   UnitAttr:$zero_nan_probs);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $mask^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_TransposeOp
    : Kiln_Op<"transpose", [Pure, Kiln_DataMovement, InferTypeOpAdaptor]> {
  let summary = "permute dims (ONNX Transpose)";
  let description = [{
    Result dim `i` is input dim `permutation[i]`.

    ```mlir
    %t = kiln.transpose %x {permutation = array<i64: 1, 0>}
        : tensor<2x3xf32> -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure, Kiln_DataMovement]> {
  let summary = "reinterpret a tensor with another shape (ONNX Reshape)";
  let description = [{
    The result type carries the new shape; the importer resolves ONNX's `0` and
    `-1` entries. A view: memory planning aliases it without a copy.

    ```mlir
    %r = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Indexing: concat, slice, gather, expand. The importer folds them away when
// their operands are constants (shape subgraphs).
//===----------------------------------------------------------------------===//

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure, Kiln_DataMovement]> {
  let summary = "join tensors along one dim (ONNX Concat)";
  let description = [{
    All operands have the result's rank and element type and agree on every
    dim but `axis`, along which the result is their concatenation in order.

    ```mlir
    %c = kiln.concat %a, %b {axis = 0 : i64}
        : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [Pure, Kiln_DataMovement]> {
  let summary = "strided window of a tensor (ONNX Slice, Split)";
  let description = [{
    Result element `i` (per dim `d`) is input element
    `starts[d] + i * strides[d]`; strides are nonzero and may be negative.
    The importer resolves ONNX's clamping and negative indices, so every index
    read is in bounds.

    ```mlir
    %s = kiln.slice %x {starts = array<i64: 0, 1>, strides = array<i64: 1, 2>}
        : tensor<2x5xf32> -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$strides);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_UpdateSliceOp : Kiln_Op<"update_slice", [Pure,
    AllTypesMatch<["dest", "result"]>]> {
  let summary = "a tensor with rows along one dim replaced (a KV cache append)";
  let description = [{
    The result is `dest` with its elements at `offset <= i < offset + n`
    along `axis` (n = `update`'s size there) replaced by `update`'s, which
    agrees with `dest` on every other dim. `offset` is a size over the
    model's named dims in the canonical text of DimExpr.h (`past`, `7`),
    known at run time; a window outside `dest` is an error there.

    With `starts`, an integer tensor of `dest`'s rank that broadcasts to
    `update`'s shape and has size 1 along `axis`, each element's window
    starts `starts` (at the element's broadcast index) rows later: the rows
    of a batched cache whose batches hold different numbers of valid rows.
    kiln-cache-in-place makes it from a KV cache's concat of past and new
    rows, and the GroupQueryAttention importer from a cache shared by past
    and present (with `starts` from seqlens_k); the CUDA target writes only
    the new rows, into storage the graph output shares with the graph input
    `dest` (the C ABI's output aliases), and writes no row outside `dest`.

    ```mlir
    %c = kiln.update_slice %cache, %new {axis = 2 : i64, offset = "past"}
        : (tensor<1x4x64x8xf32>, tensor<1x4x?x8xf32, #kiln.dims<["sequence"]>>)
        -> tensor<1x4x64x8xf32>
    %d = kiln.update_slice %cache, %token, %rows {axis = 2 : i64, offset = "0"}
        : (tensor<2x4x64x8xf32>, tensor<2x4x1x8xf32>, tensor<2x1x1x1xi64>)
        -> tensor<2x4x64x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$dest, Kiln_Tensor:$update,
                   Optional<Kiln_Tensor>:$starts, I64Attr:$axis,
                   StrAttr:$offset);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $dest `,` $update (`,` $starts^)? attr-dict `:`
    functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [Pure, Kiln_DataMovement]> {
  let summary = "pick slices along one dim by index (ONNX Gather)";
  let description = [{
    The result's shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. Negative indices count from the end; an index out
    of range is an error at run time (the reference interpreter reports it;
    kernels clamp).

    ```mlir
    %e = kiln.gather %table, %ids {axis = 0 : i64}
        : (tensor<100x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, RankedTensorOf<[I64, I32]>:$indices,
                   I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Kiln_GatherElementsOp
    : Kiln_Op<"gather_elements", [Pure, Kiln_DataMovement]> {
  let summary = "pick elements along one dim by index (ONNX GatherElements)";
  let description = [{
    The result has the shape of `indices`: element `p` is `data[p']` where
    `p'` is `p` with its `axis` coordinate replaced by `indices[p]`.
    Negative indices count from the end; an index out of range is an error at
    run time (the reference interpreter reports it; kernels clamp).

    ```mlir
    %e = kiln.gather_elements %data, %ids {axis = 1 : i64}
        : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, RankedTensorOf<[I64, I32]>:$indices,
                   I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, $result)
  }];
  let hasVerifier = 1;
}

def Kiln_ExpandOp : Kiln_Op<"expand", [Pure, Kiln_DataMovement]> {
  let summary = "broadcast a tensor to a larger shape (ONNX Expand)";
  let description = [{
    The result shape is the numpy broadcast of the input's shape and the
    requested one, which the importer has resolved into the result type.

    ```mlir
    %e = kiln.expand %x : tensor<1x4xf32> -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused groups
//===----------------------------------------------------------------------===//

def Kiln_KernelOp : Kiln_Op<"kernel", [IsolatedFromAbove, SingleBlock,
                                       RecursiveMemoryEffects]> {
  let summary = "one fused group of ops, emitted as one kernel launch";
  let description = [{
    The body computes the results from the block arguments, one per operand, and
    ends in `kiln.yield`. `kind` picks the CUDA code generator. A kernel of kind
    `gemm` carries its `epilogue` (`#kiln.gemm_epilogue`), as kiln-fuse matched
    it; no other kind has one. Memory planning adds the results' arena
    placement as discardable attributes.

    ```mlir
    %y = kiln.kernel elementwise (%a, %b)
        : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%x: tensor<4xf32>, %z: tensor<4xf32>):
      %s = kiln.add %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %r = kiln.relu %s : tensor<4xf32>
      kiln.yield %r : tensor<4xf32>
    }
    ```
  }];
  let arguments = (ins Kiln_KernelKindAttr:$kind, Variadic<Kiln_Tensor>:$inputs,
                   OptionalAttr<Kiln_GemmEpilogueAttr>:$epilogue);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator of the body.
    YieldOp getYield();
  }];
}

def Kiln_YieldOp : Kiln_Op<"yield", [Pure, Terminator, ReturnLike,
                                     HasParent<"KernelOp">]> {
  let summary = "the results of a kernel body";
  let description = [{
    ```mlir
    kiln.yield %r : tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // KILN_DIALECT_KILN_KILNOPS_TD
