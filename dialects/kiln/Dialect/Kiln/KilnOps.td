//===- KilnOps.td - kiln dialect ops -----------------------*- tablegen -*-===//
//
// Ops are grouped as ONNX groups them. Each op with inferable results declares
// InferTypeOpAdaptor; its inferReturnTypes calls the free shape function in
// ShapeInference.h, which the importer calls as well.
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
    Integer division truncates toward zero, as in ONNX.

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
// Reductions and normalizations
//===----------------------------------------------------------------------===//

def Kiln_ReduceMeanOp : Kiln_Op<"reduce_mean", [Pure, InferTypeOpAdaptor]> {
  let summary = "mean over axes (ONNX ReduceMean)";
  let description = [{
    `axes` are non-negative, sorted and unique; the importer resolves ONNX's
    "no axes means all axes" and the axes-as-input form of opset 18.

    ```mlir
    %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true}
        : tensor<2x8xf32> -> tensor<2x1xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                   BoolAttr:$keepdims);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_SoftmaxOp : Kiln_Op<"softmax", [Pure, SameOperandsAndResultType]> {
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

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [Pure, InferTypeOpAdaptor]> {
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

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Kiln_MatmulOp : Kiln_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "batched matrix product (ONNX MatMul and Gemm)";
  let description = [{
    Both operands have rank >= 2; the last two dims are the matrix, the leading
    dims broadcast. `transpose_lhs` / `transpose_rhs` swap an operand's last two
    dims before the product (Gemm's transA / transB). The importer lowers 1-D
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
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Kiln_TransposeOp : Kiln_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
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

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure]> {
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
// Fused groups
//===----------------------------------------------------------------------===//

def Kiln_KernelOp : Kiln_Op<"kernel", [IsolatedFromAbove, SingleBlock,
                                       RecursiveMemoryEffects]> {
  let summary = "one fused group of ops, emitted as one kernel launch";
  let description = [{
    The body computes the results from the block arguments, one per operand, and
    ends in `kiln.yield`. `kind` picks the CUDA code generator. Memory planning
    adds the results' arena placement as discardable attributes.

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
  let arguments = (ins Kiln_KernelKindAttr:$kind, Variadic<Kiln_Tensor>:$inputs);
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
